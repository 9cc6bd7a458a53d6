//! Reading a plain object the page handed over (the constructor's options, a declaration) key by
//! key, each error naming the key at fault and what it held.
//!
//! Hand-written rather than `#[derive(Deserialize)]`: a derived reader is a few KB of wasm per
//! struct, and it names the wrong type but not the key (the old way found the key by reading the
//! object again without each key in turn).

use serde_json::{Map, Value};

use crate::validate::json_type_name;

/// A plain object's members, read by key.
pub struct PlainObject(Map<String, Value>);

impl PlainObject {
    /// Parses `text`, which must hold one JSON object whose keys are all in `known`.
    pub fn parse(text: &str, known: &[&str]) -> Result<Self, String> {
        let value = serde_json::from_str(text).map_err(|error| format!("not JSON: {error}"))?;
        Self::from_value(value, known)
    }

    /// `value`, which must be an object whose keys are all in `known`.
    pub fn from_value(value: Value, known: &[&str]) -> Result<Self, String> {
        let Value::Object(object) = value else {
            return Err(format!(
                "expected an object, got {}",
                json_type_name(&value)
            ));
        };
        reject_unknown_keys(object.keys().map(String::as_str), known)?;
        Ok(Self(object))
    }

    /// The member `key` as it is, if present and not `null`.
    pub fn value(&mut self, key: &str) -> Option<Value> {
        self.0.remove(key).filter(|value| !value.is_null())
    }

    pub fn string(&mut self, key: &str) -> Result<Option<String>, String> {
        self.typed(key, "a string", |value| match value {
            Value::String(text) => Ok(text),
            other => Err(other),
        })
    }

    pub fn boolean(&mut self, key: &str) -> Result<Option<bool>, String> {
        self.typed(key, "a boolean", |value| value.as_bool().ok_or(value))
    }

    pub fn number(&mut self, key: &str) -> Result<Option<f64>, String> {
        self.typed(key, "a number", |value| value.as_f64().ok_or(value))
    }

    pub fn strings(&mut self, key: &str) -> Result<Option<Vec<String>>, String> {
        self.typed(key, "an array of strings", |value| match value {
            Value::Array(items) if items.iter().all(Value::is_string) => Ok(items
                .into_iter()
                .filter_map(|item| match item {
                    Value::String(text) => Some(text),
                    _ => None,
                })
                .collect()),
            other => Err(other),
        })
    }

    /// The member `key` read by `read`, which hands back the value it refused.
    fn typed<T>(
        &mut self,
        key: &str,
        expected: &str,
        read: impl FnOnce(Value) -> Result<T, Value>,
    ) -> Result<Option<T>, String> {
        let Some(value) = self.value(key) else {
            return Ok(None);
        };
        read(value).map(Some).map_err(|refused| {
            format!(
                "'{key}': expected {expected}, got {}",
                json_type_name(&refused)
            )
        })
    }
}

/// Fails with the first of `keys` that is not in `known` (typos are errors, not defaults).
pub fn reject_unknown_keys<'a>(
    keys: impl IntoIterator<Item = &'a str>,
    known: &[&str],
) -> Result<(), String> {
    match keys.into_iter().find(|key| !known.contains(key)) {
        Some(key) => Err(format!(
            "unknown field `{key}`, expected one of {}",
            known.join(", ")
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_error_names_the_key_and_what_it_held() {
        let mut object = PlainObject::parse(
            r#"{"a":"x","b":true,"c":2.5,"d":["p","q"],"e":null,"f":[1]}"#,
            &["a", "b", "c", "d", "e", "f", "g"],
        )
        .unwrap();
        assert_eq!(object.string("a").unwrap().as_deref(), Some("x"));
        assert_eq!(object.boolean("b").unwrap(), Some(true));
        assert_eq!(object.number("c").unwrap(), Some(2.5));
        assert_eq!(object.strings("d").unwrap().unwrap(), ["p", "q"]);
        assert_eq!(object.string("e").unwrap(), None, "null is absent");
        assert_eq!(object.string("g").unwrap(), None);
        assert_eq!(
            object.strings("f").unwrap_err(),
            "'f': expected an array of strings, got array"
        );
        let mut wrong = PlainObject::parse(r#"{"a":1}"#, &["a"]).unwrap();
        assert_eq!(
            wrong.boolean("a").unwrap_err(),
            "'a': expected a boolean, got number"
        );
        assert!(PlainObject::parse(r#"{"z":1}"#, &["a"])
            .err()
            .unwrap()
            .starts_with("unknown field `z`"));
        assert!(PlainObject::parse("[]", &[])
            .err()
            .unwrap()
            .contains("object"));
    }
}
