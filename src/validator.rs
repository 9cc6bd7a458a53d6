//! `SchemaValidator`: the SDK's JSON Schema validator for the page's own use — a form checked the
//! same way an agent's input is (SPEC §3), compiled once and reused.

use client_tools_core::validate::CompiledSchema;
use client_tools_core::CoreError;
use wasm_bindgen::prelude::*;

use crate::errors;
use crate::js;
use crate::typescript::{JsonSchemaArg, ValidationErrors};

/// A compiled JSON Schema (2020-12 unless `$schema` says otherwise; formats asserted).
#[wasm_bindgen]
pub struct SchemaValidator {
    compiled: CompiledSchema,
}

#[wasm_bindgen]
impl SchemaValidator {
    /// Compiles `schema`; throws `INVALID_SCHEMA` naming the problem.
    #[wasm_bindgen(constructor)]
    pub fn new(schema: JsonSchemaArg) -> Result<SchemaValidator, JsValue> {
        let schema = js::to_json(&schema.into())
            .and_then(|schema| CompiledSchema::compile(&schema))
            .map_err(|message| errors::to_js(CoreError::InvalidStandaloneSchema(message)))?;
        Ok(SchemaValidator { compiled: schema })
    }

    /// `undefined` when `value` is valid, else every error as `instancePath: message` (a value
    /// with no JSON form — a cycle, a BigInt, a function — is invalid, and says why).
    pub fn validate(&self, value: JsValue) -> ValidationErrors {
        // Validated as text, read in place: no `Value` tree is built (client_tools_core::tape).
        let errors = match js::to_json_text(&value) {
            Ok(text) => match self.compiled.validate_text(&text) {
                Ok(()) => return JsValue::UNDEFINED.unchecked_into(),
                Err(errors) => errors,
            },
            Err(message) => vec![format!("/: the value is not JSON: {message}")],
        };
        js::to_plain(&errors).unchecked_into()
    }
}
