//! JSON Schema validation with `jsonschema`, compiled once per tool (SPEC §3).
//!
//! JSON Schema 2020-12 is the default; a `$schema` keyword picks another draft. Errors read
//! `instancePath: message` (the path is a JSON Pointer, `/` for the root) so an agent can fix its input.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use jsonschema::{Draft, Validator};
use serde_json::Value;

/// How many schemas brought by calls (agent-defined tools, SPEC §6 `_meta`) stay compiled.
const CALL_SCHEMA_CACHE_LIMIT: usize = 64;

thread_local! {
    /// Agent-defined tools send the same schemas with every call; compiling one takes milliseconds
    /// (BENCHMARKS.md), looking it up by its JSON text microseconds.
    static CALL_SCHEMAS: RefCell<HashMap<String, Arc<CompiledSchema>>> = RefCell::new(HashMap::new());
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
    validator: Validator,
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
        // `format` is asserted, as ajv-formats does for the MCP SDKs: an agent that sends
        // "tomorrow" for a `date-time` learns it at once, not from a failing handler.
        let mut options = jsonschema::options().should_validate_formats(true);
        if schema.get("$schema").is_none() {
            options = options.with_draft(Draft::Draft202012);
        }
        let validator = options.build(schema).map_err(|error| {
            let path = error.instance_path().as_str();
            if path.is_empty() {
                error.to_string()
            } else {
                format!("{path}: {error}")
            }
        })?;
        Ok(Self {
            schema: schema.clone(),
            validator,
        })
    }

    /// [`Self::compile`] once per distinct schema (by its JSON text), for schemas that arrive with
    /// every call. Errors are not cached: a bad schema is reported each time.
    pub fn compile_cached(schema: &Value) -> Result<Arc<Self>, String> {
        let key = schema.to_string();
        if let Some(compiled) = CALL_SCHEMAS.with(|cache| cache.borrow().get(&key).cloned()) {
            return Ok(compiled);
        }
        let compiled = Arc::new(Self::compile(schema)?);
        CALL_SCHEMAS.with(|cache| {
            let mut cache = cache.borrow_mut();
            if cache.len() >= CALL_SCHEMA_CACHE_LIMIT {
                cache.clear();
            }
            cache.insert(key, compiled.clone());
        });
        Ok(compiled)
    }

    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// `Ok` when valid, else every error as `instancePath: message`.
    pub fn validate(&self, instance: &Value) -> Result<(), Vec<String>> {
        if self.validator.is_valid(instance) {
            return Ok(());
        }
        Err(self
            .validator
            .iter_errors(instance)
            .map(|error| {
                let path = error.instance_path().as_str();
                let path = if path.is_empty() { "/" } else { path };
                format!("{path}: {error}")
            })
            .collect())
    }
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
