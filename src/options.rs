//! Constructor options of `ClientTools` (SPEC §4), parsed strictly: an unknown option or a value of
//! the wrong type is an error naming it, never silently a default (STYLE #3).

use client_tools_core::registry::{DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS};
use client_tools_core::CoreError;
use serde::Deserialize;
use wasm_bindgen::{JsCast, JsValue};

use std::rc::Rc;

use crate::js;
use crate::typescript::typescript_interface;
use crate::ui::strings::Strings;

/// The JSON-like part of the options; function-valued options are taken out first.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
struct PlainOptions {
    endpoint: Option<String>,
    token: Option<String>,
    allow: Vec<String>,
    default_timeout_ms: Option<f64>,
    forms: bool,
    expose_to_browser: bool,
    /// Connect as soon as the instance is created (when `endpoint` is set).
    auto_connect: bool,
    allow_for_session: bool,
}

impl Default for PlainOptions {
    fn default() -> Self {
        Self {
            endpoint: None,
            token: None,
            allow: Vec::new(),
            default_timeout_ms: None,
            forms: true,
            expose_to_browser: true,
            auto_connect: false,
            allow_for_session: false,
        }
    }
}

/// Options after checks.
#[derive(Debug, Clone)]
pub struct Options {
    pub endpoint: Option<String>,
    pub token: Option<String>,
    pub allow: Vec<String>,
    pub default_timeout_ms: u64,
    pub confirm: Option<js_sys::Function>,
    pub forms: bool,
    pub expose_to_browser: bool,
    pub auto_connect: bool,
    /// The built-in dialog offers "allow this tool for the rest of this session".
    pub allow_for_session: bool,
    /// The words of the built-in dialog and result form.
    pub strings: Rc<Strings>,
}

typescript_interface! {
    /// Every option key (checked by hand, so that the error names the key as the page wrote it).
    KNOWN_OPTIONS, OPTIONS_TS = "ClientToolsOptions" {
        "endpoint" "?": "string", "Agent runtime WebSocket URL (ws:// or wss://); omit for page-only use.";
        "token" "?": "string", "The page token (the bridge's `--page-token`): sent in the first frame on the socket, never in the URL.";
        "allow" "?": "string[]", "Allow-list of ORIGINAL tool names agents may call; empty = all.";
        "defaultTimeoutMs" "?": "number", "Handler timeout when a tool sets none (default 30000, max 300000).";
        "confirm" "?": "(call: ConfirmRequest) => Promise<ConfirmDecision> | ConfirmDecision", "Custom confirmation instead of the built-in dialog (the result form stays built in).";
        "forms" "?": "boolean", "Expose `<form toolname>` declarative tools (default true).";
        "exposeToBrowser" "?": "boolean", "Also register with `document/navigator.modelContext` when present (default true).";
        "autoConnect" "?": "boolean", "Connect as soon as the instance exists (default false).";
        "allowForSession" "?": "boolean", "The built-in dialog offers \"Allow <tool> for the rest of this session\" (default false).";
        "strings" "?": "Partial<Record<UiStringKey, string>>", "Words of the built-in dialog and result form, for localization (unknown keys throw).";
    }
}

/// The keys holding functions: serde cannot read those, so they are read by hand.
const FUNCTION_OPTIONS: &[&str] = &["confirm"];

impl Options {
    pub fn parse(value: &JsValue) -> Result<Self, CoreError> {
        if value.is_undefined() || value.is_null() {
            return Self::from_plain(PlainOptions::default(), None, Strings::default());
        }
        if !value.is_object() {
            return Err(CoreError::InvalidOptions(format!(
                "options must be an object, got {}",
                js::js_type_name(value)
            )));
        }
        js::reject_unknown_keys(value, KNOWN_OPTIONS).map_err(CoreError::InvalidOptions)?;
        let copy = js_sys::Object::assign(&js_sys::Object::new(), value.unchecked_ref());
        let strings =
            Strings::parse(&js::get(&copy, "strings")).map_err(CoreError::InvalidOptions)?;
        let _ = js_sys::Reflect::delete_property(&copy, &JsValue::from_str("strings"));
        let mut confirm = None;
        for key in FUNCTION_OPTIONS {
            let field = js::get(&copy, key);
            let _ = js_sys::Reflect::delete_property(&copy, &JsValue::from_str(key));
            if field.is_undefined() || field.is_null() {
                continue;
            }
            match field.dyn_into::<js_sys::Function>() {
                Ok(function) => confirm = Some(function),
                Err(other) => {
                    return Err(CoreError::InvalidOptions(format!(
                        "'{key}' must be a function, got {}",
                        js::js_type_name(&other)
                    )))
                }
            }
        }
        let plain: PlainOptions = js::read_plain(&copy).map_err(CoreError::InvalidOptions)?;
        Self::from_plain(plain, confirm, strings)
    }

    fn from_plain(
        plain: PlainOptions,
        confirm: Option<js_sys::Function>,
        strings: Strings,
    ) -> Result<Self, CoreError> {
        let default_timeout_ms = match plain.default_timeout_ms {
            None => DEFAULT_TIMEOUT_MS,
            Some(ms) if ms.is_nan() || ms <= 0.0 => {
                return Err(CoreError::InvalidOptions(format!(
                    "'defaultTimeoutMs' must be a positive number of milliseconds, got {ms}"
                )))
            }
            Some(ms) => (ms.ceil() as u64).min(MAX_TIMEOUT_MS),
        };
        if let Some(endpoint) = &plain.endpoint {
            if !(endpoint.starts_with("ws://") || endpoint.starts_with("wss://")) {
                return Err(CoreError::InvalidOptions(format!(
                    "'endpoint' must be a ws:// or wss:// URL, got '{endpoint}'"
                )));
            }
        }
        Ok(Self {
            endpoint: plain.endpoint,
            token: plain.token,
            allow: plain.allow,
            default_timeout_ms,
            confirm,
            forms: plain.forms,
            expose_to_browser: plain.expose_to_browser,
            auto_connect: plain.auto_connect,
            allow_for_session: plain.allow_for_session,
            strings: Rc::new(strings),
        })
    }
}
