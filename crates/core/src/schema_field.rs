//! Which form field a JSON Schema becomes (SPEC §7: one schema-form renderer for the confirmation
//! dialog, the result form and the declarative-form preview). Pure: the browser layer
//! (`src/ui/ui.js`, loaded on first use) builds the DOM from a [`plan`] and reads values back.
//!
//! A schema is rendered as a field only when every keyword in it is one the field understands;
//! anything else (`$ref`, `allOf`, a list of types, `if`, …) degrades to [`Field::Json`], a JSON text
//! area for that value — never an error. Validation is always the full schema's, by `jsonschema`.

use serde_json::{Map, Value};

/// The kind of field a schema is shown as.
#[derive(Debug, PartialEq)]
pub enum Field<'a> {
    /// A string: the `<input type>` its `format` maps to (`email`, `url`, `date`, `datetime-local`,
    /// `time`, else `text`).
    Text(&'static str),
    Number {
        integer: bool,
    },
    Boolean,
    /// One of a fixed set of values (`enum`, `const`, or `oneOf`/`anyOf` of `const`s): each value
    /// with its label (its `title`, else its JSON text, strings without quotes).
    Choice(Vec<(&'a Value, String)>),
    /// An array whose rows follow the `items` schema.
    Array(&'a Value),
    /// An object's properties, in the schema's order (its map's: on wasm serde_json keeps the order
    /// they are written in; native builds sort them by name), each with whether it is `required`.
    Object(Vec<(&'a str, &'a Value, bool)>),
    /// Anything else: the value as JSON text.
    Json,
}

/// Keywords that only annotate: allowed on every field.
const ANNOTATIONS: &[&str] = &[
    "title",
    "description",
    "default",
    "examples",
    "$comment",
    "$schema",
    "$id",
    "$defs",
    "definitions",
    "deprecated",
    "readOnly",
    "writeOnly",
];

/// Decides the field of `schema` (an object schema; a boolean schema is [`Field::Json`]).
pub fn classify(schema: &Value) -> Field<'_> {
    let Some(map) = schema.as_object() else {
        return Field::Json;
    };
    let only = |known: &[&str]| {
        map.keys().all(|k| {
            k == "type" || known.contains(&k.as_str()) || ANNOTATIONS.contains(&k.as_str())
        })
    };
    if let Some(choices) = choices(map) {
        return if only(&["enum", "const", "oneOf", "anyOf"]) {
            Field::Choice(choices)
        } else {
            Field::Json
        };
    }
    let field = match map.get("type").and_then(Value::as_str) {
        Some("string") if only(&["minLength", "maxLength", "pattern", "format"]) => {
            Field::Text(match map.get("format").and_then(Value::as_str) {
                Some("email") => "email",
                Some("uri") => "url",
                Some("date") => "date",
                Some("date-time") => "datetime-local",
                Some("time") => "time",
                _ => "text",
            })
        }
        Some(kind @ ("number" | "integer"))
            if only(&[
                "minimum",
                "maximum",
                "exclusiveMinimum",
                "exclusiveMaximum",
                "multipleOf",
            ]) =>
        {
            Field::Number {
                integer: kind == "integer",
            }
        }
        Some("boolean") if only(&[]) => Field::Boolean,
        Some("array") if only(&["items", "minItems", "maxItems", "uniqueItems"]) => {
            match map.get("items") {
                Some(items) if items.is_object() => Field::Array(items),
                _ => Field::Json,
            }
        }
        Some("object") if only(&["properties", "required", "additionalProperties"]) => {
            let required = |name: &str| {
                map.get("required")
                    .and_then(Value::as_array)
                    .is_some_and(|r| r.iter().any(|n| n == name))
            };
            match map.get("properties") {
                Some(Value::Object(properties)) => Field::Object(
                    properties
                        .iter()
                        .map(|(name, schema)| (name.as_str(), schema, required(name)))
                        .collect(),
                ),
                None => Field::Object(Vec::new()),
                Some(_) => Field::Json,
            }
        }
        _ => Field::Json,
    };
    // An object with no properties but room for any is free-form: JSON text.
    match field {
        Field::Object(ref p)
            if p.is_empty() && map.get("additionalProperties") != Some(&false.into()) =>
        {
            Field::Json
        }
        field => field,
    }
}

/// The choices of an `enum`, a `const`, or a `oneOf`/`anyOf` whose every branch is a `const`.
fn choices(map: &Map<String, Value>) -> Option<Vec<(&Value, String)>> {
    if let Some(Value::Array(values)) = map.get("enum") {
        return Some(values.iter().map(|v| (v, label(v, None))).collect());
    }
    if let Some(value) = map.get("const") {
        return Some(vec![(value, label(value, None))]);
    }
    let branches = map.get("oneOf").or_else(|| map.get("anyOf"))?.as_array()?;
    branches
        .iter()
        .map(|branch| {
            let value = branch.get("const")?;
            Some((value, label(value, branch.get("title"))))
        })
        .collect()
}

fn label(value: &Value, title: Option<&Value>) -> String {
    match (title.and_then(Value::as_str), value) {
        (Some(title), _) => title.to_owned(),
        (None, Value::String(text)) => text.clone(),
        (None, other) => other.to_string(),
    }
}

/// The value a fresh field starts with (the result form, a new array row): the schema's `default`,
/// else an empty value of its kind (`null` where there is nothing to show); an object gets the
/// initial values of its properties that have one.
pub fn initial_value(schema: &Value) -> Value {
    if let Some(default) = schema.get("default") {
        return default.clone();
    }
    match classify(schema) {
        Field::Boolean => false.into(),
        Field::Array(_) => Value::Array(Vec::new()),
        Field::Object(properties) => {
            // Inserted one by one: collecting into a map would sort (code size on wasm).
            let mut object = Map::new();
            for (name, schema, _) in properties {
                let value = initial_value(schema);
                if !value.is_null() {
                    object.insert(name.to_owned(), value);
                }
            }
            Value::Object(object)
        }
        _ => Value::Null,
    }
}

/// One step of a JSON Pointer (`~` → `~0`, `/` → `~1`, RFC 6901).
pub fn pointer_step(path: &str, step: &str) -> String {
    format!("{path}/{}", step.replace('~', "~0").replace('/', "~1"))
}

/// The form plan the browser's renderer (`src/ui/ui.js`) builds fields from: each schema's
/// [`Field`] as JSON, so the rule of which field a schema becomes stays here, in one place.
/// `{"t": "text", "input": "email"}`, `{"t": "number", "step", "min"?, "max"?}`, `{"t": "boolean"}`,
/// `{"t": "choice", "choices": [[value, label], …]}`, `{"t": "array", "items": plan, "initial": a
/// new row's value}`, `{"t": "object", "properties": [[name, plan, required], …]}`, `{"t": "json"}`;
/// each with `title` and `help` (the schema's `description`) when they are strings.
pub fn plan(schema: &Value) -> Value {
    let mut plan = Map::new();
    let t = match classify(schema) {
        Field::Text(input) => {
            plan.insert("input".into(), input.into());
            "text"
        }
        Field::Number { integer } => {
            let step = schema.get("multipleOf").map(Value::to_string);
            let step = step.unwrap_or_else(|| (if integer { "1" } else { "any" }).into());
            plan.insert("step".into(), step.into());
            for (keyword, name) in [("minimum", "min"), ("maximum", "max")] {
                if let Some(bound) = schema.get(keyword) {
                    plan.insert(name.into(), bound.to_string().into());
                }
            }
            "number"
        }
        Field::Boolean => "boolean",
        Field::Choice(choices) => {
            let choices = choices
                .into_iter()
                .map(|(value, label)| Value::Array(vec![value.clone(), label.into()]));
            plan.insert("choices".into(), Value::Array(choices.collect()));
            "choice"
        }
        Field::Array(items) => {
            plan.insert("items".into(), self::plan(items));
            plan.insert("initial".into(), initial_value(items));
            "array"
        }
        Field::Object(properties) => {
            let properties = properties.into_iter().map(|(name, schema, required)| {
                Value::Array(vec![name.into(), self::plan(schema), required.into()])
            });
            plan.insert("properties".into(), Value::Array(properties.collect()));
            "object"
        }
        Field::Json => "json",
    };
    plan.insert("t".into(), t.into());
    for (keyword, name) in [("title", "title"), ("description", "help")] {
        if let Some(text) = schema.get(keyword).filter(|v| v.is_string()) {
            plan.insert(name.into(), text.clone());
        }
    }
    Value::Object(plan)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strings_numbers_booleans_by_type_and_format() {
        assert_eq!(
            classify(&json!({"type": "string", "minLength": 1})),
            Field::Text("text")
        );
        for (format, input) in [
            ("email", "email"),
            ("uri", "url"),
            ("date", "date"),
            ("date-time", "datetime-local"),
            ("time", "time"),
            ("uuid", "text"),
        ] {
            assert_eq!(
                classify(&json!({"type": "string", "format": format, "title": "x"})),
                Field::Text(input)
            );
        }
        assert_eq!(
            classify(&json!({"type": "integer", "minimum": 1, "multipleOf": 2})),
            Field::Number { integer: true }
        );
        assert_eq!(
            classify(&json!({"type": "boolean", "default": true})),
            Field::Boolean
        );
    }

    #[test]
    fn choices_from_enum_const_and_titled_one_of() {
        let schema = json!({"enum": ["todo", 2, null]});
        let Field::Choice(choices) = classify(&schema) else {
            panic!()
        };
        let labels: Vec<_> = choices.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(labels, ["todo", "2", "null"]);
        let schema = json!({"oneOf": [{"const": "a", "title": "Apple"}, {"const": "b"}]});
        let Field::Choice(choices) = classify(&schema) else {
            panic!()
        };
        assert_eq!(choices[0], (&json!("a"), "Apple".to_owned()));
        assert_eq!(choices[1].1, "b");
        // A branch that is not a const: not a choice.
        assert_eq!(
            classify(&json!({"anyOf": [{"const": 1}, {"type": "string"}]})),
            Field::Json
        );
    }

    #[test]
    fn objects_and_arrays_nest() {
        let schema = json!({"type": "object", "required": ["b"],
            "properties": {"a": {"type": "string"}, "b": {"type": "array", "items": {"type": "number"}}}});
        let Field::Object(properties) = classify(&schema) else {
            panic!()
        };
        assert_eq!(properties[0].0, "a");
        assert!(!properties[0].2 && properties[1].2);
        assert_eq!(
            classify(properties[1].1),
            Field::Array(&json!({"type": "number"}))
        );
    }

    #[test]
    fn anything_else_is_json_text() {
        for schema in [
            json!({"$ref": "#/$defs/x"}),
            json!({"type": ["string", "null"]}),
            json!({"type": "string", "contentMediaType": "text/html"}),
            json!({"allOf": [{"type": "string"}]}),
            json!({"type": "array", "prefixItems": [{"type": "string"}]}),
            json!({"type": "array"}),
            json!({"type": "object"}),
            json!({}),
            json!(true),
        ] {
            assert_eq!(classify(&schema), Field::Json, "{schema}");
        }
        assert_eq!(
            classify(&json!({"type": "object", "additionalProperties": false})),
            Field::Object(vec![])
        );
    }

    #[test]
    fn initial_values_take_defaults() {
        let schema = json!({"type": "object", "properties": {
            "n": {"type": "integer", "default": 3}, "s": {"type": "string"},
            "b": {"type": "boolean"}, "o": {"type": "object", "properties": {"x": {"enum": [1], "default": 1}}}}});
        assert_eq!(
            initial_value(&schema),
            json!({"n": 3, "b": false, "o": {"x": 1}})
        );
    }

    #[test]
    fn pointers_escape_their_steps() {
        assert_eq!(pointer_step("", "a/b~c"), "/a~1b~0c");
        assert_eq!(pointer_step("/items", "0"), "/items/0");
    }

    #[test]
    fn plans_carry_each_fields_kind() {
        let schema = json!({"type": "object", "required": ["n"], "properties": {
            "n": {"type": "integer", "minimum": 1, "title": "N"},
            "tags": {"type": "array", "items": {"type": "string", "default": "x"}},
            "s": {"enum": ["a"], "description": "pick"}, "j": {"$ref": "#/x"}}});
        assert_eq!(
            plan(&schema),
            // (Native builds keep a schema's properties sorted; wasm ones in their order.)
            json!({"t": "object", "properties": [
                ["j", {"t": "json"}, false],
                ["n", {"t": "number", "step": "1", "min": "1", "title": "N"}, true],
                ["s", {"t": "choice", "choices": [["a", "a"]], "help": "pick"}, false],
                ["tags", {"t": "array", "items": {"t": "text", "input": "text"}, "initial": "x"}, false]]})
        );
    }
}
