//! The one conversion from [`CoreError`] to a JavaScript exception: a real `Error` (or `TypeError`
//! for misuse) with a stable `code` property (STYLE #5).

use client_tools_core::CoreError;
use wasm_bindgen::JsValue;

pub fn to_js(error: CoreError) -> JsValue {
    let message = error.to_string();
    let js_error: js_sys::Error = if error.is_type_error() {
        js_sys::TypeError::new(&message).into()
    } else {
        js_sys::Error::new(&message)
    };
    // Setting a property on a fresh Error object cannot fail.
    let _ = js_sys::Reflect::set(&js_error, &"code".into(), &error.code().as_str().into());
    js_error.into()
}
