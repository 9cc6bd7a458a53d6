//! What a page may hand the SDK (SPEC §3, §4): the constructor's options and `defineFunction`'s
//! declarations — their keys, their TypeScript and their checks, from one list each, so that the
//! keys checked at run time and those the `.d.ts` offers cannot drift apart. The SDK takes the
//! functions out (serde cannot hold one) and hands the rest here as JSON text.

use serde::Serialize;
use serde_json::Value;

use crate::limits::{DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS};
use crate::page_engine::EngineConfig;
use crate::plain_object::PlainObject;
use crate::registry::{Declaration, Registry, TaskSupport};
use crate::CoreError;

/// Declares the keys a plain object of the page may have and its TypeScript interface, from one
/// list. Each entry: `"key" "?" : "TypeScript type", "doc";` (`""` when required).
#[macro_export]
macro_rules! typescript_interface {
    (
        $(#[$meta:meta])*
        $keys:ident, $ts:ident = $name:literal {
            $($key:literal $optional:literal : $ty:literal, $doc:literal;)*
        }
    ) => {
        $(#[$meta])*
        pub const $keys: &[&str] = &[$($key,)*];

        /// The TypeScript interface of these keys (emitted into the package's `.d.ts`).
        pub const $ts: &str = concat!(
            "export interface ", $name, " {\n",
            $("  /** ", $doc, " */\n  ", $key, $optional, ": ", $ty, ";\n",)*
            "}\n"
        );
    };
}

crate::typescript_interface! {
    /// Every option key (checked by hand, so that the error names the key as the page wrote it).
    KNOWN_OPTIONS, OPTIONS_TS = "ClientToolsOptions" {
        "endpoint" "?": "string", "Agent runtime WebSocket URL (ws:// or wss://); omit for page-only use.";
        "token" "?": "string | (() => string | Promise<string>)", "The page token: the bridge's `--page-token`, or a function giving the signed token the site's backend minted for its user (called before each connect and before the token expires, SPEC §13). Sent in the first frame on the socket, never in the URL.";
        "allow" "?": "string[]", "Allow-list of ORIGINAL tool names agents may call; empty = all.";
        "defaultTimeoutMs" "?": "number", "Handler timeout when a tool sets none (default 30000, max 300000).";
        "confirm" "?": "(call: ConfirmRequest) => Promise<ConfirmDecision> | ConfirmDecision", "Custom confirmation instead of the built-in dialog (the result form stays built in).";
        "forms" "?": "boolean", "Expose `<form toolname>` declarative tools (default true).";
        "exposeToBrowser" "?": "boolean", "Also register with `document/navigator.modelContext` when present (default true).";
        "adoptBrowserTools" "?": "boolean", "Offer the runtime's agents the tools other code registers with `document.modelContext`, run through their own `execute` (default false).";
        "autoConnect" "?": "boolean", "Connect as soon as the instance exists (default false).";
        "allowForSession" "?": "boolean", "The built-in dialog offers \"Allow <tool> for the rest of this session\" (default false).";
        "allowAlways" "?": "boolean", "The built-in dialog offers \"Always allow <tool> on this site\", kept per origin in `localStorage` for this declaration and user (default false; `tools.approvals` lists and revokes).";
        "strings" "?": "Partial<Record<UiStringKey, string>>", "Words of the built-in dialog and result form, for localization (unknown keys throw).";
    }
}

/// The constructor's options, checked (the functions and the `strings` apart: the SDK reads those).
#[derive(Debug, Clone, PartialEq)]
pub struct PageOptions {
    pub endpoint: Option<String>,
    pub token: Option<String>,
    pub allow: Vec<String>,
    /// `defaultTimeoutMs`, checked: a whole, clamped count.
    pub default_timeout_ms: u64,
    pub forms: bool,
    pub expose_to_browser: bool,
    pub adopt_browser_tools: bool,
    pub auto_connect: bool,
    pub allow_for_session: bool,
    pub allow_always: bool,
}

impl Default for PageOptions {
    fn default() -> Self {
        Self {
            endpoint: None,
            token: None,
            allow: Vec::new(),
            default_timeout_ms: DEFAULT_TIMEOUT_MS,
            forms: true,
            expose_to_browser: true,
            adopt_browser_tools: false,
            auto_connect: false,
            allow_for_session: false,
            allow_always: false,
        }
    }
}

impl PageOptions {
    /// The rules of these options the page engine applies.
    pub fn engine_config(&self) -> EngineConfig {
        EngineConfig {
            allow: self.allow.clone(),
            offer_allow_for_session: self.allow_for_session,
            offer_allow_always: self.allow_always,
        }
    }

    /// Reads the options from their JSON text; the error names the option at fault.
    pub fn read(text: &str) -> Result<Self, CoreError> {
        let invalid = CoreError::InvalidOptions;
        let mut plain = PlainObject::parse(text, KNOWN_OPTIONS).map_err(invalid)?;
        let defaults = Self::default();
        let flag = |plain: &mut PlainObject, key, default| {
            plain.boolean(key).map(|given| given.unwrap_or(default))
        };
        let mut options = Self {
            endpoint: plain.string("endpoint").map_err(invalid)?,
            token: plain.string("token").map_err(invalid)?,
            allow: plain.strings("allow").map_err(invalid)?.unwrap_or_default(),
            default_timeout_ms: defaults.default_timeout_ms,
            forms: flag(&mut plain, "forms", defaults.forms).map_err(invalid)?,
            expose_to_browser: flag(&mut plain, "exposeToBrowser", defaults.expose_to_browser)
                .map_err(invalid)?,
            adopt_browser_tools: flag(
                &mut plain,
                "adoptBrowserTools",
                defaults.adopt_browser_tools,
            )
            .map_err(invalid)?,
            auto_connect: flag(&mut plain, "autoConnect", defaults.auto_connect)
                .map_err(invalid)?,
            allow_for_session: flag(&mut plain, "allowForSession", defaults.allow_for_session)
                .map_err(invalid)?,
            allow_always: flag(&mut plain, "allowAlways", defaults.allow_always)
                .map_err(invalid)?,
        };
        options.default_timeout_ms = match plain.number("defaultTimeoutMs").map_err(invalid)? {
            None => DEFAULT_TIMEOUT_MS,
            Some(ms) if ms.is_nan() || ms <= 0.0 => {
                return Err(CoreError::InvalidOptions(format!(
                    "'defaultTimeoutMs' must be a positive number of milliseconds, got {ms}"
                )))
            }
            Some(ms) => (ms.ceil() as u64).min(MAX_TIMEOUT_MS),
        };
        if let Some(endpoint) = &options.endpoint {
            if !(endpoint.starts_with("ws://") || endpoint.starts_with("wss://")) {
                return Err(CoreError::InvalidOptions(format!(
                    "'endpoint' must be a ws:// or wss:// URL, got '{endpoint}'"
                )));
            }
        }
        Ok(options)
    }
}

crate::typescript_interface! {
    /// Every declaration key (checked by hand, so that the error names the key as the page wrote it).
    DECLARATION_KEYS, DECLARATION_TS = "FunctionDeclaration" {
        "name" "": "string", "The tool's name as the page knows it; agents see it normalized (`defineFunction` returns that name).";
        "description" "?": "string", "What the tool does: agents choose tools by it (a warning when missing).";
        "parameters" "?": "JsonSchema", "The input's JSON Schema (an object schema; compiled once, an invalid one throws).";
        "outputSchema" "?": "JsonSchema", "The result's JSON Schema, checked before it is sent.";
        "annotations" "?": "{ readOnlyHint?: boolean; destructiveHint?: boolean; consequentialHint?: boolean; idempotentHint?: boolean; openWorldHint?: boolean; untrustedContentHint?: boolean; title?: string }", "`destructiveHint` / `consequentialHint: true` ask the user first; `untrustedContentHint: true` marks each of its results `_meta[\"clienttools/untrusted\"]: true`; `idempotentHint: true` lets a call a page reload interrupted run once more; `title` heads the dialog.";
        "requireConfirmation" "?": "boolean", "`true`: always ask the user first; `false`: never, whatever the annotations say (a call's `_meta` may still ask).";
        "timeoutMs" "?": "number", "The handler's timeout (default: the `defaultTimeoutMs` option; max 300000).";
        "concurrency" "?": "number", "At most this many calls run, or wait for the user's confirmation, at once (a whole number, 1 to 4096; default: no bound); more wait in arrival order (`toolqueued`), each timeout starting when its handler starts.";
        "taskSupport" "?": "\"forbidden\" | \"optional\" | \"required\"", "Whether agents speaking the MCP tasks extension run calls as tasks (default: `optional` when the call asks the user first, else `forbidden`).";
        "handler" "": "ToolHandler", "Runs the tool: returns a JSON value or a Promise of one.";
    }
}

/// Reads a declaration of tool `name` from its JSON text (the handler taken out).
pub fn read_declaration(name: String, text: &str) -> Result<Declaration, CoreError> {
    let invalid =
        |e: String| CoreError::InvalidOptions(format!("declaration of tool '{name}': {e}"));
    // The handler is taken out by the SDK; its key may still be listed.
    let mut plain = PlainObject::parse(text, DECLARATION_KEYS).map_err(invalid)?;
    let task_support = match plain
        .string("taskSupport")
        .map_err(invalid)?
        .as_deref()
        .map(TaskSupport::parse)
    {
        Some(None) => {
            return Err(invalid(
                "taskSupport must be \"forbidden\", \"optional\" or \"required\"".into(),
            ))
        }
        given => given.flatten(),
    };
    Ok(Declaration {
        description: plain.string("description").map_err(invalid)?,
        parameters: plain.value("parameters"),
        output_schema: plain.value("outputSchema"),
        annotations: plain.value("annotations"),
        require_confirmation: plain.boolean("requireConfirmation").map_err(invalid)?,
        timeout_ms: plain.number("timeoutMs").map_err(invalid)?,
        concurrency: plain.number("concurrency").map_err(invalid)?,
        task_support,
        original_name: name,
    })
}

/// One entry of `list()`: a tool as the page sees it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListedTool {
    pub name: String,
    pub original_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub input_schema: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    pub kind: &'static str,
}

/// Every tool of `registry`, for `list()`.
pub fn listing<H>(registry: &Registry<H>) -> Vec<ListedTool> {
    registry
        .tools()
        .map(|tool| ListedTool {
            name: tool.name.clone(),
            original_name: tool.original_name.clone(),
            description: tool.description.clone(),
            input_schema: tool.input_schema(),
            output_schema: tool.output_schema(),
            kind: tool.kind.as_str(),
        })
        .collect()
}

/// The names of the events a page can subscribe to (`on(type, fn)`, SPEC §4), each written once.
pub mod event {
    /// A call of one of the page's tools started.
    pub const TOOL_ACTIVATED: &str = "toolactivated";
    /// A call was cancelled (by the agent, a timeout, the page).
    pub const TOOL_CANCEL: &str = "toolcancel";
    /// A call ended.
    pub const TOOL_RESULT: &str = "toolresult";
    /// A call waits for its turn (its tool's `concurrency` is taken).
    pub const TOOL_QUEUED: &str = "toolqueued";
    /// The page's tool list changed.
    pub const TOOLS_CHANGED: &str = "toolschanged";
    /// The connection to the runtime changed state.
    pub const CONNECTION_CHANGE: &str = "connectionchange";
    /// Something the page should know went wrong (its detail has a warning code).
    pub const WARNING: &str = "warning";
}

/// Event types a page can subscribe to (`on(type, fn)`, SPEC §4).
pub const EVENT_TYPES: &[&str] = &[
    event::TOOL_ACTIVATED,
    event::TOOL_CANCEL,
    event::TOOL_RESULT,
    event::TOOL_QUEUED,
    event::TOOLS_CHANGED,
    event::CONNECTION_CHANGE,
    event::WARNING,
];

/// Events that are also dispatched as DOM `CustomEvent`s (what WebMCP pages listen to).
pub const DOM_EVENTS: &[&str] = &[event::TOOL_ACTIVATED, event::TOOL_CANCEL];

/// The page's event listeners by type, each with the id that removes it. `F` is the listener (a
/// JavaScript function in the browser).
#[derive(Debug)]
pub struct Listeners<F> {
    entries: Vec<(u32, String, F)>,
    next_id: u32,
}

impl<F> Default for Listeners<F> {
    fn default() -> Self {
        Self {
            entries: Vec::new(),
            next_id: 0,
        }
    }
}

impl<F: Clone> Listeners<F> {
    /// Adds a listener of a known type (the error names the types there are); the id removes it.
    pub fn subscribe(&mut self, event_type: &str, listener: F) -> Result<u32, String> {
        if !EVENT_TYPES.contains(&event_type) {
            return Err(format!(
                "unknown event type '{event_type}'; expected one of {}",
                EVENT_TYPES.join(", ")
            ));
        }
        let id = self.next_id;
        self.next_id += 1;
        self.entries.push((id, event_type.to_owned(), listener));
        Ok(id)
    }

    pub fn unsubscribe(&mut self, id: u32) {
        self.entries.retain(|(i, _, _)| *i != id);
    }

    /// Whether emitting `event_type` would reach anyone (a listener, or the DOM for DOM events),
    /// so hot paths can skip building the detail.
    pub fn wants(&self, event_type: &str) -> bool {
        DOM_EVENTS.contains(&event_type) || self.entries.iter().any(|(_, t, _)| t == event_type)
    }

    /// The listeners of `event_type`, copied out: a listener may subscribe or unsubscribe while
    /// the event is delivered.
    pub fn of(&self, event_type: &str) -> Vec<F> {
        self.entries
            .iter()
            .filter(|(_, t, _)| t == event_type)
            .map(|(_, _, f)| f.clone())
            .collect()
    }
}

pub use crate::plain_object::reject_unknown_keys;

#[cfg(test)]
mod tests {
    use super::*;

    /// The `.d.ts` docs write the timeout and concurrency bounds as literals (`concat!` takes no consts): they
    /// must say the core's.
    #[test]
    fn the_typescript_docs_name_the_timeout_bounds_of_the_core() {
        let options = format!("(default {DEFAULT_TIMEOUT_MS}, max {MAX_TIMEOUT_MS})");
        assert!(OPTIONS_TS.contains(&options), "{OPTIONS_TS}");
        let declaration = format!("max {MAX_TIMEOUT_MS})");
        assert!(DECLARATION_TS.contains(&declaration), "{DECLARATION_TS}");
        let concurrency = format!("1 to {}", crate::limits::MAX_CONCURRENCY);
        assert!(DECLARATION_TS.contains(&concurrency), "{DECLARATION_TS}");
    }

    #[test]
    fn options_are_read_strictly_with_the_key_at_fault_named() {
        let options =
            PageOptions::read(r#"{"endpoint":"ws://h/ws","defaultTimeoutMs":999999.5}"#).unwrap();
        assert_eq!(options.default_timeout_ms, MAX_TIMEOUT_MS);
        assert!(options.forms && options.expose_to_browser && !options.auto_connect);
        assert!(
            !options.adopt_browser_tools,
            "adopting is asked for, never a default"
        );
        let adopting = PageOptions::read(r#"{"adoptBrowserTools":true}"#).unwrap();
        assert!(adopting.adopt_browser_tools);
        assert!(
            !PageOptions::read("{}").unwrap().allow_always,
            "off by default"
        );
        let always = PageOptions::read(r#"{"allowAlways":true}"#).unwrap();
        assert!(always.allow_always && always.engine_config().offer_allow_always);
        let always = PageOptions::read(r#"{"allowAlways":"yes"}"#)
            .unwrap_err()
            .to_string();
        assert!(always.contains("'allowAlways'"), "{always}");
        assert_eq!(
            PageOptions::read("{}").unwrap().default_timeout_ms,
            DEFAULT_TIMEOUT_MS
        );
        let wrong = PageOptions::read(r#"{"allow":"x"}"#)
            .unwrap_err()
            .to_string();
        assert!(wrong.contains("'allow'"), "{wrong}");
        let zero = PageOptions::read(r#"{"defaultTimeoutMs":0}"#)
            .unwrap_err()
            .to_string();
        assert!(zero.contains("positive"), "{zero}");
        let http = PageOptions::read(r#"{"endpoint":"http://h"}"#)
            .unwrap_err()
            .to_string();
        assert!(http.contains("ws://"), "{http}");
        let typo = reject_unknown_keys(["endpoint", "endpont"], KNOWN_OPTIONS).unwrap_err();
        assert!(typo.starts_with("unknown field `endpont`"), "{typo}");
        assert!(OPTIONS_TS.starts_with("export interface ClientToolsOptions {"));
    }

    #[test]
    fn listeners_by_type_and_id() {
        let mut listeners = Listeners::default();
        let a = listeners.subscribe("warning", 'a').unwrap();
        listeners.subscribe("warning", 'b').unwrap();
        assert!(listeners.wants("warning") && listeners.wants("toolcancel"));
        assert!(!listeners.wants("toolresult"));
        listeners.unsubscribe(a);
        assert_eq!(listeners.of("warning"), ['b']);
        let unknown = listeners.subscribe("toolresults", 'c').unwrap_err();
        assert!(
            unknown.contains("expected one of toolactivated"),
            "{unknown}"
        );
    }

    #[test]
    fn declarations_name_the_tool_and_the_key() {
        let read = read_declaration("t".into(), r#"{"name":"t","timeoutMs":5}"#).unwrap();
        assert_eq!(read.timeout_ms, Some(5.0));
        let bad = read_declaration("t".into(), r#"{"name":"t","description":1}"#).unwrap_err();
        assert!(
            bad.to_string()
                .contains("declaration of tool 't': 'description'"),
            "{bad}"
        );
    }

    #[test]
    fn task_support_is_one_of_three_values_and_defaults_by_whether_a_person_waits() {
        use crate::registry::{Registry, ToolKind};
        let read = |text: &str| read_declaration("t".into(), text);
        let given = read(r#"{"name":"t","taskSupport":"required"}"#).unwrap();
        assert_eq!(given.task_support, Some(TaskSupport::Required));
        let bad = read(r#"{"name":"t","taskSupport":"maybe"}"#).unwrap_err();
        assert!(
            bad.to_string().contains("'t': taskSupport must be"),
            "{bad}"
        );
        let mut registry = Registry::default();
        let listed = |registry: &mut Registry<u8>, text: &str, kind| {
            let (name, _) = registry.define(read(text).unwrap(), kind, 0).unwrap();
            registry.get(&name).unwrap().to_mcp_tool().execution
        };
        let optional = Some(serde_json::json!({"taskSupport": "optional"}));
        assert_eq!(
            listed(&mut registry, r#"{"name":"a"}"#, ToolKind::Function),
            None
        );
        let asks = r#"{"name":"b","annotations":{"destructiveHint":true}}"#;
        assert_eq!(listed(&mut registry, asks, ToolKind::Function), optional);
        assert_eq!(
            listed(&mut registry, r#"{"name":"c"}"#, ToolKind::Form),
            optional
        );
        let quiet = r#"{"name":"d","requireConfirmation":true,"taskSupport":"forbidden"}"#;
        assert_eq!(listed(&mut registry, quiet, ToolKind::Function), None);
    }
}
