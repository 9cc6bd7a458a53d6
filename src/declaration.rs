//! Reading a `defineFunction({...})` argument (SPEC §3) into the core's [`Declaration`].
//!
//! The handler is taken out by hand (serde cannot hold a function); everything else is parsed
//! strictly, so a misspelt key (`parameter`, `timeout`) is an error naming it.

use client_tools_core::page_api::{self, DECLARATION_KEYS};
use client_tools_core::registry::Declaration;
use client_tools_core::CoreError;
use wasm_bindgen::{JsCast, JsValue};

use crate::js;

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

    let invalid = |e| CoreError::InvalidOptions(format!("declaration of tool '{name}': {e}"));
    let keys = js::keys(value);
    page_api::reject_unknown_keys(keys.iter().map(String::as_str), DECLARATION_KEYS)
        .map_err(invalid)?;
    let rest = js_sys::Object::assign(&js_sys::Object::new(), value.unchecked_ref());
    let _ = js_sys::Reflect::delete_property(&rest, &"handler".into());
    let text = js::plain_json_text(&rest).map_err(invalid)?;
    let declaration = page_api::read_declaration(name, &text)?;
    Ok((declaration, handler))
}
