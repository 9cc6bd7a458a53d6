//! Reading a `defineFunction({...})` argument (SPEC §3) into the core's [`Declaration`].
//!
//! The handler is taken out by hand (serde cannot hold a function); everything else is parsed
//! strictly, so a misspelt key (`parameter`, `timeout`) is an error naming it.

use client_tools_core::registry::Declaration;
use client_tools_core::CoreError;
use serde::Deserialize;
use serde_json::Value;
use wasm_bindgen::{JsCast, JsValue};

use crate::js;
use crate::typescript::typescript_interface;

typescript_interface! {
    /// Every declaration key (checked by hand, so that the error names the key as the page wrote it).
    KNOWN_KEYS, DECLARATION_TS = "FunctionDeclaration" {
        "name" "": "string", "The tool's name as the page knows it; agents see it normalized (`defineFunction` returns that name).";
        "description" "?": "string", "What the tool does: agents choose tools by it (a warning when missing).";
        "parameters" "?": "JsonSchema", "The input's JSON Schema (an object schema; compiled once, an invalid one throws).";
        "outputSchema" "?": "JsonSchema", "The result's JSON Schema, checked before it is sent.";
        "annotations" "?": "{ readOnlyHint?: boolean; destructiveHint?: boolean; consequentialHint?: boolean; idempotentHint?: boolean; openWorldHint?: boolean; untrustedContentHint?: boolean; title?: string }", "`destructiveHint` / `consequentialHint: true` ask the user first; `title` heads the dialog.";
        "requireConfirmation" "?": "boolean", "`true`: always ask the user first; `false`: never, whatever the annotations say (a call's `_meta` may still ask).";
        "timeoutMs" "?": "number", "The handler's timeout (default: the `defaultTimeoutMs` option; max 300000).";
        "handler" "": "ToolHandler", "Runs the tool: returns a JSON value or a Promise of one.";
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PlainDeclaration {
    #[allow(dead_code)]
    name: Value,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    parameters: Option<Value>,
    #[serde(default)]
    output_schema: Option<Value>,
    #[serde(default)]
    annotations: Option<Value>,
    #[serde(default)]
    require_confirmation: Option<bool>,
    #[serde(default)]
    timeout_ms: Option<f64>,
}

/// Checks the name and handler (a `TypeError` each), then reads the rest.
pub fn parse(value: &JsValue) -> Result<(Declaration, js_sys::Function), CoreError> {
    if !value.is_object() {
        return Err(CoreError::InvalidOptions(format!(
            "defineFunction expects a declaration object, got {}",
            js::js_type_name(value)
        )));
    }
    let name = js::get(value, "name").as_string().unwrap_or_default();
    if name.is_empty() {
        return Err(CoreError::EmptyName);
    }
    let handler = js::get(value, "handler")
        .dyn_into::<js_sys::Function>()
        .map_err(|_| CoreError::HandlerNotFunction(name.clone()))?;

    js::reject_unknown_keys(value, KNOWN_KEYS)
        .map_err(|e| CoreError::InvalidOptions(format!("declaration of tool '{name}': {e}")))?;
    let rest = js_sys::Object::assign(&js_sys::Object::new(), value.unchecked_ref());
    let _ = js_sys::Reflect::delete_property(&rest, &"handler".into());
    let plain: PlainDeclaration = js::read_plain(&rest)
        .map_err(|e| CoreError::InvalidOptions(format!("declaration of tool '{name}': {e}")))?;
    let declaration = Declaration {
        original_name: name,
        description: plain.description,
        parameters: plain.parameters,
        output_schema: plain.output_schema,
        annotations: plain.annotations,
        require_confirmation: plain.require_confirmation,
        timeout_ms: plain.timeout_ms,
    };
    Ok((declaration, handler))
}
