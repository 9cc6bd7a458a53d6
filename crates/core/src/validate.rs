//! JSON Schema validation with `jsonschema`, compiled once per tool (SPEC §3).
//!
//! JSON Schema 2020-12 is the default; a `$schema` keyword picks another draft. Errors read
//! `instancePath: message` (the path is a JSON Pointer, `/` for the root) so an agent can fix its input.
//!
//! Instances are validated as JSON text, read in place ([`crate::tape`]): no `Value` tree is built
//! for them. Schemas are checked against their meta-schema the same way, by us rather than inside
//! `jsonschema` (which on wasm would otherwise also carry a whole second, serde_json-shaped copy of
//! every keyword: vendor/README.md).

use std::cell::RefCell;
use std::sync::Arc;

use jsonschema::{Draft, Validator};
use serde_json::Value;

use crate::tape::{DetachedTokens, Tape, TapeError, TapeJson};

/// How many schemas brought by calls (agent-defined tools, SPEC §6 `_meta`) stay compiled.
const CALL_SCHEMA_CACHE_LIMIT: usize = 64;

thread_local! {
    /// Agent-defined tools send the same schemas with every call; compiling one takes milliseconds
    /// (BENCHMARKS.md), looking it up by its JSON text microseconds.
    /// Scanned, not hashed: at most [`CALL_SCHEMA_CACHE_LIMIT`] entries.
    static CALL_SCHEMAS: RefCell<Vec<(String, Arc<CompiledSchema>)>> = const { RefCell::new(Vec::new()) };

    /// The meta-schema validators, one per draft, built on first use and kept for the program.
    static META_SCHEMAS: RefCell<Vec<(Draft, &'static Validator<TapeJson>)>> = const { RefCell::new(Vec::new()) };
}

/// The schema a tool without (usable) `parameters` is exposed with: an object with no properties.
pub fn empty_object_schema() -> Value {
    serde_json::json!({ "type": "object", "properties": {} })
}

/// Whether `schema` describes an object (what MCP requires of a tool's input schema).
pub fn is_object_schema(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("object")
}

/// A compiled schema, ready to validate many instances.
pub struct CompiledSchema {
    schema: Value,
    validator: Validator<TapeJson>,
}

impl std::fmt::Debug for CompiledSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledSchema")
            .field("schema", &self.schema)
            .finish_non_exhaustive()
    }
}

impl CompiledSchema {
    /// Compiles `schema`; the error is the schema problem in words.
    pub fn compile(schema: &Value) -> Result<Self, String> {
        if !(schema.is_object() || schema.is_boolean()) {
            return Err(format!(
                "a schema must be an object or a boolean, got {}",
                json_type_name(schema)
            ));
        }
        let draft = match schema.get("$schema") {
            None => Draft::Draft202012,
            Some(_) => match Draft::default().detect(schema) {
                Draft::Unknown => {
                    return Err(format!(
                        "$schema {} is not a draft this SDK knows (4, 6, 7, 2019-09, 2020-12)",
                        schema["$schema"]
                    ))
                }
                draft => draft,
            },
        };
        let text = schema.to_string();
        let tape = Tape::parse_normalized(&text).map_err(|error| error.message())?;
        if let Some(error) = meta_schema(draft).iter_errors(tape.root()).next() {
            return Err(error_line(&error));
        }
        // `format` is asserted, as ajv-formats does for the MCP SDKs: an agent that sends
        // "tomorrow" for a `date-time` learns it at once, not from a failing handler.
        let validator = jsonschema::options_for::<TapeJson>()
            .should_validate_formats(true)
            .with_draft(draft)
            .without_schema_validation()
            .build(schema)
            .map_err(|error| error_line(&error))?;
        Ok(Self {
            schema: schema.clone(),
            validator,
        })
    }

    /// [`Self::compile`] once per distinct schema (by its JSON text), for schemas that arrive with
    /// every call. Errors are not cached: a bad schema is reported each time.
    pub fn compile_cached(schema: &Value) -> Result<Arc<Self>, String> {
        let key = schema.to_string();
        let cached = CALL_SCHEMAS.with(|cache| {
            let cache = cache.borrow();
            cache
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, c)| c.clone())
        });
        if let Some(compiled) = cached {
            return Ok(compiled);
        }
        let compiled = Arc::new(Self::compile(schema)?);
        CALL_SCHEMAS.with(|cache| {
            let mut cache = cache.borrow_mut();
            if cache.len() >= CALL_SCHEMA_CACHE_LIMIT {
                cache.clear();
            }
            cache.push((key, compiled.clone()));
        });
        Ok(compiled)
    }

    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// The errors of `instance` for a form: each with the JSON Pointer of the field it belongs to
    /// (a missing required property is its own field's error, not its parent's) and its message.
    pub fn field_errors(&self, instance: &Value) -> Vec<(String, String)> {
        let text = instance.to_string();
        let Ok(tape) = Tape::parse_normalized(&text) else {
            return vec![(String::new(), "not JSON".into())];
        };
        self.validator
            .iter_errors(tape.root())
            .map(|error| {
                let path = error.instance_path().as_str();
                let path = match error.kind() {
                    jsonschema::error::ValidationErrorKind::Required {
                        property: Value::String(name),
                    } => crate::schema_field::pointer_step(path, name),
                    _ => path.to_owned(),
                };
                (path, error.to_string())
            })
            .collect()
    }

    /// `Ok` when valid, else every error as `instancePath: message`.
    pub fn validate(&self, instance: &Value) -> Result<(), Vec<String>> {
        self.validate_text(&instance.to_string())
    }

    /// [`Self::validate`] for JSON text, read in place; text that is not JSON is one error.
    pub fn validate_text(&self, instance: &str) -> Result<(), Vec<String>> {
        self.validate_read(instance, None)
    }

    /// [`Self::validate_text`] of text already read, with its `tokens` (then it is not read again).
    /// Crate-internal: the tokens must be the ones cut for exactly this text.
    pub(crate) fn validate_read(
        &self,
        instance: &str,
        tokens: Option<&DetachedTokens>,
    ) -> Result<(), Vec<String>> {
        let not_json = |error: TapeError| vec![format!("/: not JSON: {}", error.message())];
        let normalized;
        let read = tokens.and_then(|tokens| Tape::with_tokens(instance, tokens));
        let tape = match read.map_or_else(|| Tape::parse(instance), Ok) {
            Ok(tape) => tape,
            // A member named twice: validate what `JSON.parse` gives the handler, the last one.
            Err(TapeError::RepeatedNames) => {
                let value: Value = serde_json::from_str(instance)
                    .map_err(|error| vec![format!("/: not JSON: {error}")])?;
                normalized = value.to_string();
                Tape::parse_normalized(&normalized).map_err(not_json)?
            }
            Err(error) => return Err(not_json(error)),
        };
        if self.validator.is_valid(tape.root()) {
            return Ok(());
        }
        Err(self
            .validator
            .iter_errors(tape.root())
            .map(|error| {
                let path = error.instance_path().as_str();
                let path = if path.is_empty() { "/" } else { path };
                format!("{path}: {error}")
            })
            .collect())
    }
}

/// A schema problem as one line: where in the schema (when not the root), and what.
fn error_line(error: &jsonschema::ValidationError<'_>) -> String {
    let path = error.instance_path().as_str();
    if path.is_empty() {
        error.to_string()
    } else {
        format!("{path}: {error}")
    }
}

/// The validator of `draft`'s meta-schema, over JSON text.
fn meta_schema(draft: Draft) -> &'static Validator<TapeJson> {
    if let Some(found) =
        META_SCHEMAS.with_borrow(|built| built.iter().find(|(d, _)| *d == draft).map(|(_, v)| *v))
    {
        return found;
    }
    let meta: &Value = match draft {
        Draft::Draft4 => &referencing::meta::DRAFT4,
        Draft::Draft6 => &referencing::meta::DRAFT6,
        Draft::Draft7 => &referencing::meta::DRAFT7,
        Draft::Draft201909 => &referencing::meta::DRAFT201909,
        _ => &referencing::meta::DRAFT202012,
    };
    let validator = jsonschema::options_for::<TapeJson>()
        .with_draft(draft)
        .without_schema_validation()
        .build(meta)
        .expect("the meta-schemas are valid");
    // Built once per draft for the life of the program, like `jsonschema`'s own.
    let validator: &'static Validator<TapeJson> = Box::leak(Box::new(validator));
    META_SCHEMAS.with_borrow_mut(|built| built.push((draft, validator)));
    validator
}

/// The JSON type of a value, in JSON Schema's words.
pub fn json_type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_member_named_twice_is_validated_as_json_parse_reads_it() {
        let schema = CompiledSchema::compile(&json!({
            "type": "object", "minProperties": 2, "properties": {"a": {"type": "integer"}}
        }))
        .unwrap();
        // One member after `JSON.parse`: fewer than two.
        assert!(schema.validate_text(r#"{"a": 1, "a": 2}"#).is_err());
        // The last `a` counts: a string there is wrong, an integer right.
        let one_of_each =
            CompiledSchema::compile(&json!({"properties": {"a": {"type": "integer"}}})).unwrap();
        assert!(one_of_each.validate_text(r#"{"a": 1, "a": "x"}"#).is_err());
        assert!(one_of_each.validate_text(r#"{"a": "x", "a": 1}"#).is_ok());
        assert!(one_of_each
            .validate_text(r#"{"a": 1, "\u0061": 2}"#)
            .is_ok());
    }

    fn board_schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "boardId": { "type": "string" },
                "status": { "enum": ["todo", "in-progress", "done"] }
            },
            "required": ["boardId"]
        })
    }

    #[test]
    fn valid_input_passes() {
        let schema = CompiledSchema::compile(&board_schema()).unwrap();
        assert!(schema
            .validate(&json!({"boardId": "b1", "status": "done"}))
            .is_ok());
    }

    #[test]
    fn call_schemas_compile_once_and_errors_are_not_kept() {
        let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
        let first = CompiledSchema::compile_cached(&schema).unwrap();
        let again = CompiledSchema::compile_cached(&schema).unwrap();
        assert!(Arc::ptr_eq(&first, &again));
        let bad = json!({"type": 12});
        assert!(CompiledSchema::compile_cached(&bad).is_err());
        assert!(CompiledSchema::compile_cached(&bad).is_err());
    }

    #[test]
    fn formats_are_asserted() {
        let schema =
            CompiledSchema::compile(&json!({"type": "string", "format": "date-time"})).unwrap();
        assert!(schema.validate(&json!("2026-11-30T05:00:00Z")).is_ok());
        let errors = schema.validate(&json!("tomorrow")).unwrap_err();
        assert!(errors[0].contains("date-time"), "{errors:?}");
    }

    #[test]
    fn errors_name_the_field() {
        let schema = CompiledSchema::compile(&board_schema()).unwrap();
        let errors = schema.validate(&json!({"status": "later"})).unwrap_err();
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(
            errors
                .iter()
                .any(|e| e.starts_with("/: ") && e.contains("boardId")),
            "{errors:?}"
        );
        assert!(
            errors
                .iter()
                .any(|e| e.starts_with("/status: ") && e.contains("later")),
            "{errors:?}"
        );
    }

    #[test]
    fn field_errors_point_at_the_field() {
        let schema = CompiledSchema::compile(&board_schema()).unwrap();
        let errors = schema.field_errors(&json!({"status": "later"}));
        let paths: Vec<_> = errors.iter().map(|(p, _)| p.as_str()).collect();
        assert!(
            paths.contains(&"/boardId") && paths.contains(&"/status"),
            "{errors:?}"
        );
        assert!(schema.field_errors(&json!({"boardId": "b"})).is_empty());
    }

    #[test]
    fn invalid_schema_is_rejected_with_the_reason() {
        let error = CompiledSchema::compile(&json!({"type": "strin"})).unwrap_err();
        assert!(error.contains("strin"), "{error}");
        let error = CompiledSchema::compile(&json!(42)).unwrap_err();
        assert!(error.contains("number"), "{error}");
    }

    #[test]
    fn default_draft_is_2020_12_and_schema_keyword_is_honoured() {
        // `prefixItems` exists in 2020-12 only; in draft 7 it is an unknown (ignored) keyword.
        let modern = json!({"prefixItems": [{"type": "string"}]});
        assert!(CompiledSchema::compile(&modern)
            .unwrap()
            .validate(&json!([1]))
            .is_err());
        let mut draft7 = modern.clone();
        draft7["$schema"] = json!("http://json-schema.org/draft-07/schema#");
        assert!(CompiledSchema::compile(&draft7)
            .unwrap()
            .validate(&json!([1]))
            .is_ok());
    }

    #[test]
    fn object_schema_detection() {
        assert!(is_object_schema(&board_schema()));
        assert!(!is_object_schema(&json!({"type": "string"})));
        assert!(!is_object_schema(&json!({})));
    }
}
