//! Constructor options of `ClientTools` (SPEC §4), parsed strictly: an unknown option or a value of
//! the wrong type is an error naming it, never silently a default (STYLE #3). The keys and checks
//! are the core's (`client_tools_core::page_api`); here the functions and the `strings` are taken
//! out of the JavaScript object, which serde cannot read.

use std::ops::Deref;
use std::rc::Rc;

use client_tools_core::page_api::{self, PageOptions, KNOWN_OPTIONS};
use client_tools_core::CoreError;
use wasm_bindgen::{JsCast, JsValue};

use crate::js;
use crate::ui::strings::Strings;

#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Everything but the functions and the words (read by the core).
    pub page: PageOptions,
    /// A custom confirmation instead of the built-in dialog.
    pub confirm: Option<js_sys::Function>,
    /// `token` as a function: it gives the signed page token before each connect and before the
    /// token expires (SPEC §13; a string `token` is in [`PageOptions`]).
    pub token_function: Option<js_sys::Function>,
    pub strings: Rc<Strings>,
}

/// The options read as plain values (`options.allow`, `options.endpoint`…).
impl Deref for Options {
    type Target = PageOptions;

    fn deref(&self) -> &PageOptions {
        &self.page
    }
}

impl Options {
    pub fn parse(value: &JsValue) -> Result<Self, CoreError> {
        if value.is_undefined() || value.is_null() {
            return Ok(Self::default());
        }
        if !value.is_object() {
            return Err(CoreError::InvalidOptions(format!(
                "options must be an object, got {}",
                js::js_type_name(value)
            )));
        }
        let keys = js::keys(value);
        page_api::reject_unknown_keys(keys.iter().map(String::as_str), KNOWN_OPTIONS)
            .map_err(CoreError::InvalidOptions)?;
        // The functions and the words are taken out: the core reads the rest as JSON.
        let copy = js_sys::Object::assign(&js_sys::Object::new(), value.unchecked_ref());
        let take = |key: &str| {
            let field = js::get_named(&copy, key);
            let _ = js_sys::Reflect::delete_property(&copy, &JsValue::from_str(key));
            field
        };
        let strings = Strings::parse(&take("strings")).map_err(CoreError::InvalidOptions)?;
        let confirm = match take("confirm") {
            field if field.is_undefined() || field.is_null() => None,
            field => Some(field.dyn_into::<js_sys::Function>().map_err(|other| {
                let got = js::js_type_name(&other);
                CoreError::InvalidOptions(format!("'confirm' must be a function, got {got}"))
            })?),
        };
        let token = js::get(&copy, "token");
        let token_function = match token.dyn_into::<js_sys::Function>() {
            Ok(function) => {
                let _ = js_sys::Reflect::delete_property(&copy, &JsValue::from_str("token"));
                Some(function)
            }
            Err(_) => None, // a string (or a wrong type) is the core's to read and name
        };
        let text = js::plain_json_text(&copy).map_err(CoreError::InvalidOptions)?;
        Ok(Self {
            page: PageOptions::read(&text)?,
            confirm,
            token_function,
            strings: Rc::new(strings),
        })
    }
}
