//! The words of the dialog and the result form, overridable for localization (the `strings` option):
//! read here, when the page makes its `ClientTools`, and handed whole to the dialog (`src/ui/ui.js`)
//! with each request.

use wasm_bindgen::{JsCast, JsValue};

use crate::js;

/// Declares [`DEFAULTS`] and the TypeScript union of its keys (`UiStringKey`), from one list.
macro_rules! ui_strings {
    ($($key:literal => $default:literal,)*) => {
        /// Every string key with its English default. `{tool}` and `{n}` are filled in.
        const DEFAULTS: &[(&str, &str)] = &[$(($key, $default),)*];

        /// The keys of the `strings` option as a TypeScript union (emitted by `src/typescript.rs`).
        pub const UI_STRING_KEY_TS: &str = concat!(
            "/** Keys of the `strings` option; `{tool}` and `{n}` are filled in. */\n",
            "export type UiStringKey =",
            $(" | \"", $key, "\"",)*
            ";\n"
        );
    };
}

ui_strings! {
    "approve" => "Approve",
    "reject" => "Reject",
    "edit" => "Edit",
    "submit" => "Submit",
    "cancel" => "Cancel",
    "add" => "Add",
    "remove" => "Remove",
    "reason" => "Reason (optional)",
    "allowSession" => "Allow {tool} for the rest of this session",
    "allowAlways" => "Always allow {tool} on this site",
    "queue" => "{n} more waiting",
    "tool" => "Tool:",
    "confirmIntro" => "An AI agent wants to use this tool with the input below.",
    "resultIntro" => "An AI agent asks you for the result of this tool.",
    "input" => "Input:",
    "invalid" => "Please correct the highlighted fields.",
    "invalidJson" => "Not valid JSON",
    "item" => "Item {n}",
    "none" => "—",
}

/// The strings of one `ClientTools`: defaults, with the page's overrides.
#[derive(Debug, Clone)]
pub struct Strings(Vec<String>);

impl Default for Strings {
    fn default() -> Self {
        Self(
            DEFAULTS
                .iter()
                .map(|(_, text)| (*text).to_owned())
                .collect(),
        )
    }
}

impl Strings {
    /// Every key with its text, as the dialog reads them (`{"approve": "Approve", …}`).
    pub fn table(&self) -> serde_json::Map<String, serde_json::Value> {
        let texts = self.0.iter().map(|text| text.as_str().into());
        DEFAULTS
            .iter()
            .map(|(key, _)| (*key).to_owned())
            .zip(texts)
            .collect()
    }

    /// Reads the `strings` option: an object of known keys to strings; anything else is an error
    /// naming it (and, for an unknown key, listing the known ones).
    pub fn parse(value: &JsValue) -> Result<Self, String> {
        let mut strings = Self::default();
        if value.is_undefined() || value.is_null() {
            return Ok(strings);
        }
        if !value.is_object() {
            return Err(format!(
                "'strings' must be an object, got {}",
                js::js_type_name(value)
            ));
        }
        let keys = js_sys::Object::keys(value.unchecked_ref::<js_sys::Object>());
        for key in keys.iter().filter_map(|k| k.as_string()) {
            let Some(index) = DEFAULTS.iter().position(|(k, _)| *k == key) else {
                let known: Vec<&str> = DEFAULTS.iter().map(|(k, _)| *k).collect();
                return Err(format!(
                    "unknown string `{key}` in 'strings', expected one of {}",
                    known.join(", ")
                ));
            };
            let text = js::get_named(value, &key);
            let Some(text) = text.as_string() else {
                return Err(format!(
                    "'strings.{key}' must be a string, got {}",
                    js::js_type_name(&text)
                ));
            };
            strings.0[index] = text;
        }
        Ok(strings)
    }
}
