//! What a call carries to the page besides its arguments (SPEC §6 `_meta`), decided in one place
//! for every route (`/mcp`, `/api`, the Rust API): the agent's own `clienttools/` keys, checked;
//! the schemas and policy of a `--tools FILE` tool, which no call may override; the timeout; and
//! whether the call needs a person's confirmation.
//!
//! `clienttools/confirmedBy` is never taken from a caller: only the bridge sets it, after the
//! person at the agent approved the call (crate::confirm).

use std::sync::Arc;
use std::time::Duration;

use client_tools_core::call::outcome;
use client_tools_core::protocol::{meta, CallToolResult, Tool};
use client_tools_core::validate::{self, CompiledSchema};
use serde_json::{Map, Value};

use crate::agent_tools::{annotations_ask, AgentTool, AgentTools, FALLBACK_FORM};
use crate::config::clamp_timeout;

/// The `_meta` keys a caller may set on a call (for tools it defines itself, SPEC §3).
const CALLER_KEYS: [&str; 5] = [
    meta::INPUT_SCHEMA,
    meta::OUTPUT_SCHEMA,
    meta::REQUIRE_CONFIRMATION,
    meta::TIMEOUT_MS,
    meta::FALLBACK,
];

/// A call ready to go to the page: everything checked.
#[derive(Debug, Clone)]
pub struct PreparedCall {
    pub name: String,
    pub arguments: Value,
    /// The `clienttools/` keys sent to the page (the timeout and progress token are added when the
    /// frame is written).
    pub meta: Map<String, Value>,
    pub timeout: Duration,
    /// Whether a person must approve the call (SPEC §7): the page's entry asks for it
    /// (`_meta.clienttools/requireConfirmation`, `destructiveHint`, `consequentialHint`), the
    /// `--tools` tool does, or the caller did.
    pub needs_confirmation: bool,
    /// The tool's title and description, for a confirmation asked at the agent's side.
    pub title: Option<String>,
    pub description: Option<String>,
}

impl PreparedCall {
    /// The person at the agent approved: the page skips its own dialog (SPEC §7).
    pub(crate) fn confirmed_by_agent(&mut self) {
        self.meta
            .insert(meta::CONFIRMED_BY.into(), CONFIRMED_BY_AGENT.into());
    }
}

/// The value of `clienttools/confirmedBy` the bridge sets.
pub const CONFIRMED_BY_AGENT: &str = "agent";

/// Checks a call and decides what it carries. `caller_meta` is the `_meta` the agent sent (keys
/// outside `clienttools/` are the transport's and are not forwarded); `requested` a timeout the
/// caller asked for outside `_meta` (`/api`'s `timeoutMs`).
pub fn prepare(
    name: &str,
    arguments: Value,
    caller_meta: Option<&Map<String, Value>>,
    requested: Option<Duration>,
    default_timeout: Duration,
    agent_tools: &AgentTools,
    page_tools: &[Tool],
) -> Result<PreparedCall, CallToolResult> {
    let file_tool = agent_tools.for_call(name, page_tools);
    let mut forwarded = Map::new();
    let mut requested = requested;
    let mut caller_asks = false;
    for (key, value) in caller_meta.into_iter().flatten() {
        if !key.starts_with("clienttools/") {
            continue;
        }
        if key == meta::CONFIRMED_BY {
            return Err(CallToolResult::error(format!(
                "_meta '{key}' is set only by the bridge, once the person at the agent confirmed \
                 the call: a call may not carry it"
            )));
        }
        if !CALLER_KEYS.contains(&key.as_str()) {
            return Err(CallToolResult::error(format!(
                "_meta '{key}' is not a key a call may carry (it may carry {})",
                CALLER_KEYS.join(", ")
            )));
        }
        if key == meta::TIMEOUT_MS {
            if requested.is_some() {
                return Err(CallToolResult::error(format!(
                    "the call gives its timeout twice (timeoutMs and _meta '{key}'): give it once"
                )));
            }
            let ms = value.as_f64().filter(|ms| *ms > 0.0).ok_or_else(|| {
                CallToolResult::error(format!(
                    "_meta '{key}' must be a positive number of milliseconds, not {value}"
                ))
            })?;
            requested = Some(Duration::from_millis(ms.ceil() as u64));
            continue;
        }
        if let Some(tool) = file_tool {
            return Err(CallToolResult::error(format!(
                "tool '{}' is defined by the bridge (--tools): a call may not set its _meta '{key}'",
                tool.name
            )));
        }
        check_caller_value(key, value)?;
        if key == meta::REQUIRE_CONFIRMATION && value == &Value::Bool(true) {
            caller_asks = true;
        }
        forwarded.insert(key.clone(), value.clone());
    }

    let page_entry = page_tools.iter().find(|t| t.name == name);
    let (timeout, needs_confirmation, title, description) = match file_tool {
        Some(tool) => {
            check_arguments(tool, &arguments)?;
            forwarded.extend(tool.call_meta());
            // The tool's own timeout is its budget: a call may ask for less, not more.
            let timeout = match tool.timeout_ms.map(Duration::from_millis) {
                Some(budget) => clamp_timeout(requested, budget).min(budget),
                None => clamp_timeout(requested, default_timeout),
            };
            (
                timeout,
                tool.require_confirmation,
                tool.title.clone(),
                Some(tool.description.clone()),
            )
        }
        None => {
            let asks = page_entry.is_some_and(page_entry_asks);
            (
                clamp_timeout(requested, default_timeout),
                asks || caller_asks,
                page_entry
                    .and_then(|t| t.annotations.as_ref())
                    .and_then(|a| a.get("title"))
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                page_entry.and_then(|t| t.description.clone()),
            )
        }
    };
    Ok(PreparedCall {
        name: name.to_owned(),
        arguments,
        meta: forwarded,
        timeout,
        needs_confirmation,
        title,
        description,
    })
}

/// A page's `tools/list` entry asks for confirmation (SPEC §7; the page sets the `_meta` flag from
/// its definition's policy, and the annotations count as well).
fn page_entry_asks(tool: &Tool) -> bool {
    let flagged = tool
        .meta
        .as_ref()
        .and_then(|m| m.get(meta::REQUIRE_CONFIRMATION))
        .and_then(Value::as_bool)
        == Some(true);
    flagged || annotations_ask(tool.annotations.as_ref().and_then(Value::as_object))
}

fn check_caller_value(key: &str, value: &Value) -> Result<(), CallToolResult> {
    let wrong = |what: &str| {
        Err(CallToolResult::error(format!(
            "_meta '{key}' must be {what}, not {}",
            short(value)
        )))
    };
    match key {
        meta::INPUT_SCHEMA | meta::OUTPUT_SCHEMA => {
            if !validate::is_object_schema(value) {
                return wrong("a JSON Schema with \"type\": \"object\"");
            }
            CompiledSchema::compile_cached(value).map_err(|error| {
                CallToolResult::error(format!("_meta '{key}' is not a valid JSON Schema: {error}"))
            })?;
            Ok(())
        }
        meta::REQUIRE_CONFIRMATION if !value.is_boolean() => wrong("true or false"),
        meta::FALLBACK if value.as_str() != Some(FALLBACK_FORM) => wrong("\"form\""),
        _ => Ok(()),
    }
}

/// A value in an error message, cut short (an agent may send anything).
fn short(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(80) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

/// A `--tools` tool's input is checked at the bridge too: before a person is asked to confirm it.
fn check_arguments(tool: &Arc<AgentTool>, arguments: &Value) -> Result<(), CallToolResult> {
    tool.input
        .validate(arguments)
        .map_err(|errors| outcome::invalid_input(&errors))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const DEFAULT: Duration = Duration::from_secs(30);

    fn file() -> AgentTools {
        AgentTools::parse(
            &json!([{
                "name": "delete_car", "title": "Delete a car", "description": "Deletes a car",
                "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
                "requireConfirmation": true, "timeoutMs": 5000,
            }])
            .to_string(),
        )
        .unwrap()
    }

    fn page_tool(name: &str, annotations: Option<Value>, meta: Option<Value>) -> Tool {
        Tool {
            name: name.into(),
            description: Some("page tool".into()),
            input_schema: json!({"type": "object"}),
            output_schema: None,
            annotations,
            meta: meta.and_then(|m| m.as_object().cloned()),
        }
    }

    fn call(name: &str, caller: Value) -> Result<PreparedCall, String> {
        let page = [
            page_tool("echo", None, None),
            page_tool("wipe", Some(json!({"destructiveHint": true})), None),
            page_tool(
                "pay",
                None,
                Some(json!({"clienttools/requireConfirmation": true})),
            ),
            page_tool("look", Some(json!({"readOnlyHint": true})), None),
        ];
        prepare(
            name,
            json!({"id": "c1"}),
            caller.as_object(),
            None,
            DEFAULT,
            &file(),
            &page,
        )
        .map_err(|result| result.text().to_owned())
    }

    #[test]
    fn confirmed_by_is_refused_from_any_caller() {
        let error = call("echo", json!({"clienttools/confirmedBy": "agent"})).unwrap_err();
        assert!(error.contains("set only by the bridge"), "{error}");
        let error = call("delete_car", json!({"clienttools/confirmedBy": "agent"})).unwrap_err();
        assert!(error.contains("set only by the bridge"), "{error}");
    }

    #[test]
    fn file_tools_carry_their_schemas_and_policy_and_refuse_overrides() {
        let prepared = call("delete_car", json!({"progressToken": 3})).unwrap();
        assert!(prepared.needs_confirmation);
        assert_eq!(prepared.meta[meta::REQUIRE_CONFIRMATION], true);
        assert!(prepared.meta.contains_key(meta::INPUT_SCHEMA));
        assert_eq!(prepared.timeout, Duration::from_millis(5000));
        assert_eq!(prepared.title.as_deref(), Some("Delete a car"));
        for key in [
            "inputSchema",
            "outputSchema",
            "requireConfirmation",
            "fallback",
        ] {
            let error =
                call("delete_car", json!({format!("clienttools/{key}"): false})).unwrap_err();
            assert!(error.contains("defined by the bridge"), "{key}: {error}");
        }
        // A shorter timeout may be asked for, not a longer one.
        let shorter = call("delete_car", json!({"clienttools/timeoutMs": 100})).unwrap();
        assert_eq!(shorter.timeout, Duration::from_millis(100));
        let longer = call("delete_car", json!({"clienttools/timeoutMs": 60_000})).unwrap();
        assert_eq!(longer.timeout, Duration::from_millis(5000));
        let bad = prepare("delete_car", json!({}), None, None, DEFAULT, &file(), &[]).unwrap_err();
        assert!(bad.text().contains("invalid input"), "{}", bad.text());
    }

    #[test]
    fn caller_keys_are_checked_and_forwarded() {
        let schema = json!({"type": "object", "properties": {"q": {"type": "string"}}});
        let prepared = call(
            "search",
            json!({"clienttools/inputSchema": schema, "clienttools/fallback": "form",
                   "io.modelcontextprotocol/protocolVersion": "2025-11-25"}),
        )
        .unwrap();
        assert_eq!(prepared.meta[meta::INPUT_SCHEMA], schema);
        assert_eq!(prepared.meta[meta::FALLBACK], "form");
        assert_eq!(prepared.meta.len(), 2);
        assert!(!prepared.needs_confirmation);
        for (caller, says) in [
            (
                json!({"clienttools/inputSchema": {"type": "string"}}),
                "\"type\": \"object\"",
            ),
            (
                json!({"clienttools/inputSchema": {"type": "object", "minLength": "x"}}),
                "not a valid JSON Schema",
            ),
            (
                json!({"clienttools/requireConfirmation": "yes"}),
                "true or false",
            ),
            (json!({"clienttools/fallback": "dialog"}), "\"form\""),
            (json!({"clienttools/timeoutMs": -1}), "positive number"),
            (
                json!({"clienttools/kind": "function"}),
                "not a key a call may carry",
            ),
        ] {
            let error = call("echo", caller.clone()).unwrap_err();
            assert!(error.contains(says), "{caller}: {error}");
        }
        let twice = prepare(
            "echo",
            json!({}),
            json!({"clienttools/timeoutMs": 5}).as_object(),
            Some(Duration::from_millis(5)),
            DEFAULT,
            &file(),
            &[],
        )
        .unwrap_err();
        assert!(twice.text().contains("twice"), "{}", twice.text());
    }

    #[test]
    fn who_needs_confirmation() {
        assert!(call("wipe", json!({})).unwrap().needs_confirmation);
        assert!(call("pay", json!({})).unwrap().needs_confirmation);
        assert!(!call("look", json!({})).unwrap().needs_confirmation);
        assert!(!call("echo", json!({})).unwrap().needs_confirmation);
        let asked = call("echo", json!({"clienttools/requireConfirmation": true})).unwrap();
        assert!(asked.needs_confirmation);
    }
}
