//! What a call carries to the page besides its arguments (SPEC §6 `_meta`), decided in one place
//! for every route (`/mcp`, `/api`, the Rust API): which tool the name means (a normalized or an
//! original name, the page's rule), the allow-list, the agent's own `clienttools/` keys, checked;
//! the schemas and policy of a `--tools FILE` tool, which no call may override; the timeout; and
//! whether the call needs a person's confirmation.
//!
//! `clienttools/confirmedBy` is never taken from a caller: only the bridge sets it, after the
//! person at the agent approved the call (crate::agent::confirmation). A [`PreparedCall`] is made
//! only here and its fields are read-only outside this crate: a caller of the Rust API cannot forge
//! one.

use std::sync::Arc;
use std::time::Duration;

use client_tools_core::call::outcome;
use client_tools_core::limits::{self, positive_ms, TimeoutBound, TimeoutTooLong};
use client_tools_core::names;
use client_tools_core::protocol::{meta, CallToolResult, Tool, TraceContext};
use client_tools_core::registry::{find_listed, is_allowed};
use client_tools_core::validate::{self, CompiledSchema};
use serde_json::{Map, Value};

use crate::calls::agent_tools::{annotations_ask, AgentTool, AgentTools, FALLBACK_FORM};
use crate::calls::policy::{InputVerdict, Who};
use crate::calls::tool_annotations;
use crate::limits::{whole_ms, MAX_QUOTED_VALUE_CHARS};

/// The `_meta` keys a caller may set on a call (for tools it defines itself, SPEC §3).
const CALLER_KEYS: [&str; 5] = [
    meta::INPUT_SCHEMA,
    meta::OUTPUT_SCHEMA,
    meta::REQUIRE_CONFIRMATION,
    meta::TIMEOUT_MS,
    meta::FALLBACK,
];

/// A call ready to go to the page: everything checked. Made only by
/// [`PageSession::prepare_call`](crate::PageSession::prepare_call), run (once) by
/// [`PageSession::call_tool`](crate::PageSession::call_tool) of the same session.
///
/// Its fields cannot be set from outside the bridge, and only the bridge marks it confirmed:
///
/// ```compile_fail
/// fn forge(call: &mut client_tools_bridge::PreparedCall) {
///     call.meta.insert("clienttools/confirmedBy".into(), "agent".into());
/// }
/// ```
///
/// ```compile_fail
/// fn forge(call: &mut client_tools_bridge::PreparedCall) {
///     call.confirmed_by_agent();
/// }
/// ```
#[derive(Debug)]
pub struct PreparedCall {
    session: String,
    /// The user the session serves (SPEC §13), for the operator's policy.
    user: Option<String>,
    name: String,
    /// The original name the allow-list matched (the listed entry's `clienttools/originalName`).
    original_name: String,
    arguments: Value,
    meta: Map<String, Value>,
    timeout: Duration,
    needs_confirmation: bool,
    title: Option<String>,
    description: Option<String>,
    /// What the operator's input rules decided (crate::calls::policy).
    policy: InputVerdict,
    /// The tool's annotations (crate::calls::tool_annotations): the `--tools` file's for its
    /// tools, else the page's entry's; `None` when it has none.
    annotations: Option<Value>,
    /// The caller's W3C trace context (`_meta.traceparent`, `tracestate`), checked: forwarded to
    /// the page beside the `clienttools/` keys, not part of what a person confirms.
    trace: Option<TraceContext>,
}

impl PreparedCall {
    /// The page session the call was prepared for (only that session runs it).
    pub fn session(&self) -> &str {
        &self.session
    }

    /// Whose call it is, as the operator's policy sees it: the session and its user.
    pub(crate) fn who(&self) -> Who<'_> {
        Who {
            session: &self.session,
            user: self.user.as_deref(),
        }
    }

    /// The tool's name as listed (a call by its original name is sent under this one).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The original name the bridge's `--allow` list was matched against.
    pub fn original_name(&self) -> &str {
        &self.original_name
    }

    pub fn arguments(&self) -> &Value {
        &self.arguments
    }

    /// The `clienttools/` keys sent to the page (the timeout and progress token are added when the
    /// frame is written, and the trace context).
    pub fn meta(&self) -> &Map<String, Value> {
        &self.meta
    }

    /// The caller's W3C trace context, as checked ([`TraceContext::read`]): what the page gets in
    /// the call's `_meta`, the call's log events carry, and its result's `_meta` gives back.
    pub fn trace(&self) -> Option<&TraceContext> {
        self.trace.as_ref()
    }

    /// The `traceparent` of [`Self::trace`], for log events.
    pub(crate) fn traceparent(&self) -> Option<&str> {
        self.trace.as_ref().map(|trace| trace.traceparent.as_str())
    }

    /// The call's timeout (sent as `clienttools/timeoutMs`).
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Whether a person must approve the call (SPEC §7): the page's entry asks for it
    /// (`_meta.clienttools/requireConfirmation: true`; absent, `destructiveHint` or
    /// `consequentialHint`), the `--tools` tool does, or the caller did.
    pub fn needs_confirmation(&self) -> bool {
        self.needs_confirmation
    }

    /// The tool's title, for a confirmation asked at the agent's side.
    pub fn title(&self) -> Option<&str> {
        self.title.as_deref()
    }

    /// The tool's description, for a confirmation asked at the agent's side.
    pub fn description(&self) -> Option<&str> {
        self.description.as_deref()
    }

    /// The tool's annotations as the call resolved it: the `--tools` file's entry for a tool
    /// defined there, else the page's `tools/list` entry's (`None`: it has none). What the
    /// operator's policy reads as `annotations`.
    pub fn annotations(&self) -> Option<&Value> {
        self.annotations.as_ref()
    }

    /// Whether the tool's results hold untrusted content (`annotations.untrustedContentHint:
    /// true`): each result of the call that reaches an agent carries
    /// `_meta["clienttools/untrusted"]: true`.
    pub fn is_untrusted(&self) -> bool {
        tool_annotations::is_untrusted(self.annotations.as_ref())
    }

    /// Whether the person at the agent approved it (the bridge set `clienttools/confirmedBy`).
    pub fn is_confirmed_by_agent(&self) -> bool {
        self.meta.contains_key(meta::CONFIRMED_BY)
    }

    /// The person at the agent approved: the page skips its own dialog (SPEC §7). Only the bridge
    /// calls this, once the answer came (crate::routes::mcp).
    pub(crate) fn confirmed_by_agent(&mut self) {
        self.meta
            .insert(meta::CONFIRMED_BY.into(), CONFIRMED_BY_AGENT.into());
    }

    /// A `confirm` rule of the operator's policy holds: the person must approve, whatever the
    /// page's own policy says (the call's `_meta` asks the page, which cannot opt out).
    pub(crate) fn require_confirmation_by_policy(&mut self) {
        self.needs_confirmation = true;
        self.meta
            .insert(meta::REQUIRE_CONFIRMATION.into(), Value::Bool(true));
    }

    pub(crate) fn set_policy_verdict(&mut self, verdict: InputVerdict) {
        self.policy = verdict;
    }

    pub(crate) fn policy_verdict(&self) -> &InputVerdict {
        &self.policy
    }

    /// The agent's log level for this call (`clienttools/logLevel`: the page sends log messages
    /// at or above it). Set by the bridge, after confirmation: it is not part of what a person
    /// confirms.
    pub(crate) fn set_log_level(&mut self, level: &str) {
        self.meta.insert(meta::LOG_LEVEL.into(), level.into());
    }

    /// A call as [`prepare`] would make it, for other modules' tests.
    #[cfg(test)]
    pub(crate) fn for_test(name: &str, arguments: Value, meta: Map<String, Value>) -> Self {
        Self {
            session: "s1".into(),
            user: None,
            name: name.into(),
            original_name: name.into(),
            arguments,
            meta,
            timeout: Duration::from_secs(1),
            needs_confirmation: true,
            title: Some("Delete a car".into()),
            description: Some("Deletes a car for good".into()),
            policy: InputVerdict::default(),
            trace: None,
            annotations: None,
        }
    }

    /// Parts for the frame (crate::sessions::page_session): its `_meta` is the `clienttools/` keys
    /// and the trace context.
    pub(crate) fn into_parts(self) -> (String, Value, Map<String, Value>, Duration) {
        let mut meta = self.meta;
        if let Some(trace) = self.trace {
            trace.put(&mut meta);
        }
        (self.name, self.arguments, meta, self.timeout)
    }
}

/// The value of `clienttools/confirmedBy` the bridge sets.
pub const CONFIRMED_BY_AGENT: &str = "agent";

/// A timeout a caller asked for outside `_meta`, and the name of the field it came in (for errors):
/// `/api`'s `timeoutMs`, the Rust API's `timeout`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RequestedTimeout {
    pub timeout: Duration,
    pub field: &'static str,
}

/// What [`prepare`] needs from the session, copied out of its lock.
pub(crate) struct Context<'a> {
    pub session: &'a str,
    pub user: Option<&'a str>,
    pub allow: &'a [String],
    pub default_timeout: Duration,
    pub agent_tools: &'a AgentTools,
    /// The page's own `tools/list` entries (before the `--tools` merge).
    pub page_tools: &'a [Tool],
}

/// The tool a call's `name` means, by the page's rule (the core's `registry::find_listed`): a
/// `--tools` tool's name or the page's listed name first, else a page tool's original name
/// (`clienttools/originalName`). A name the page has not listed (yet: a call may come before its
/// `tools/list`) that normalizes to a `--tools` tool's name is that tool — the page would resolve
/// it to its handler for it, which must not run without the file's schemas and policy. Else the
/// name as given. Returns the canonical name.
pub(crate) fn resolve_name(name: &str, agent_tools: &AgentTools, page_tools: &[Tool]) -> String {
    if agent_tools.get(name).is_some() {
        return name.to_owned();
    }
    if let Some(listed) = find_listed(page_tools, name) {
        return listed.name.clone();
    }
    match names::normalize(name) {
        Ok(normalized) if agent_tools.get(&normalized).is_some() => normalized,
        _ => name.to_owned(),
    }
}

/// The original name the allow-list matches for the canonical `name`: the listed entry's (a
/// `--tools` tool's is its name; a page tool's its `clienttools/originalName`), else `name`.
pub(crate) fn listed_original(name: &str, agent_tools: &AgentTools, page_tools: &[Tool]) -> String {
    if agent_tools.for_call(name, page_tools).is_some() {
        return name.to_owned();
    }
    page_tools
        .iter()
        .find(|t| t.name == name)
        .map_or(name, Tool::original_name)
        .to_owned()
}

/// Checks a call and decides what it carries. `caller_meta` is the `_meta` the agent sent (keys
/// outside `clienttools/` are the transport's and are not forwarded, but for its trace context,
/// `trace`, which the caller read from it with [`TraceContext::read`]); `requested` a timeout the
/// caller asked for outside `_meta`.
pub(crate) fn prepare(
    context: &Context,
    name: &str,
    arguments: Value,
    caller_meta: Option<&Map<String, Value>>,
    requested: Option<RequestedTimeout>,
    trace: Option<TraceContext>,
) -> Result<PreparedCall, CallToolResult> {
    let Context {
        agent_tools,
        page_tools,
        ..
    } = *context;
    let canonical = resolve_name(name, agent_tools, page_tools);
    let original_name = listed_original(&canonical, agent_tools, page_tools);
    if !is_allowed(context.allow, &original_name) {
        return Err(outcome::not_allowed(name));
    }
    let name = canonical.as_str();
    let file_tool = agent_tools.for_call(name, page_tools);
    let mut forwarded = Map::new();
    let mut requested = requested;
    let mut caller_asks = false;
    for (key, value) in caller_meta.into_iter().flatten() {
        // The page session of a call over a user's tabs is the route's to read (SPEC §13).
        if !key.starts_with("clienttools/") || key == meta::SESSION {
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
            if let Some(other) = requested {
                return Err(CallToolResult::error(format!(
                    "the call gives its timeout twice ({} and _meta '{key}'): give it once",
                    other.field
                )));
            }
            let ms = value.as_f64().and_then(positive_ms).ok_or_else(|| {
                CallToolResult::error(format!(
                    "_meta '{key}' must be a positive number of milliseconds, not {}",
                    short(value)
                ))
            })?;
            requested = Some(RequestedTimeout {
                timeout: Duration::from_millis(ms),
                field: "_meta 'clienttools/timeoutMs'",
            });
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
    let annotations = tool_annotations::of(file_tool.map(AsRef::as_ref), page_entry);
    let (timeout, needs_confirmation, title, description) = match file_tool {
        Some(tool) => {
            let budget = tool.timeout_ms.map(Duration::from_millis);
            let timeout = checked_timeout(requested, budget, context.default_timeout)?;
            check_arguments(tool, &arguments)?;
            forwarded.extend(tool.call_meta());
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
                checked_timeout(requested, None, context.default_timeout)?,
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
        session: context.session.to_owned(),
        user: context.user.map(str::to_owned),
        name: canonical,
        original_name,
        arguments,
        meta: forwarded,
        timeout,
        needs_confirmation,
        title,
        description,
        policy: InputVerdict::default(),
        trace,
        annotations,
    })
}

/// A call's timeout, checked: the one timeout rule of every route (the core's
/// `limits::call_timeout`, docs/api.md *Timeouts*): none asked → the tool's budget (its
/// `timeoutMs` in `--tools`), else the bridge's default; asked → it must be positive and at most
/// the budget, else at most the core's `MAX_TIMEOUT_MS`. Anything else is an error naming the
/// field and the limit, never silently changed.
pub(crate) fn checked_timeout(
    requested: Option<RequestedTimeout>,
    budget: Option<Duration>,
    default: Duration,
) -> Result<Duration, CallToolResult> {
    let (asked, field) = match requested {
        None => (None, ""),
        Some(RequestedTimeout { timeout, field }) if timeout.is_zero() => {
            return Err(CallToolResult::error(format!(
                "{field} must be a positive number of milliseconds, not 0"
            )))
        }
        Some(RequestedTimeout { timeout, field }) => (Some(whole_ms(timeout)), field),
    };
    match limits::call_timeout(asked, budget.map(whole_ms), whole_ms(default)) {
        Ok(ms) => Ok(Duration::from_millis(ms)),
        Err(TimeoutTooLong {
            asked,
            limit,
            bound: TimeoutBound::Budget,
        }) => Err(CallToolResult::error(format!(
            "{field} {asked} ms is above the tool's timeout of {limit} ms (its timeoutMs in \
             --tools): ask for at most that"
        ))),
        Err(TimeoutTooLong {
            asked,
            limit,
            bound: TimeoutBound::Max,
        }) => Err(CallToolResult::error(format!(
            "{field} {asked} ms is above the maximum of {limit} ms"
        ))),
    }
}

/// Whether a page's `tools/list` entry asks for confirmation (SPEC §7): its
/// `_meta.clienttools/requireConfirmation` decides both ways when present (`false`: the page opted
/// out, whatever the annotations say); absent, `destructiveHint` or `consequentialHint` do.
fn page_entry_asks(tool: &Tool) -> bool {
    let flag = tool
        .meta
        .as_ref()
        .and_then(|m| m.get(meta::REQUIRE_CONFIRMATION))
        .and_then(Value::as_bool);
    flag.unwrap_or_else(|| annotations_ask(tool.annotations.as_ref().and_then(Value::as_object)))
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
    match text.char_indices().nth(MAX_QUOTED_VALUE_CHARS) {
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
    use client_tools_core::limits::MAX_TIMEOUT_MS;
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
            execution: None,
            meta: meta.and_then(|m| m.as_object().cloned()),
        }
    }

    fn page() -> Vec<Tool> {
        vec![
            page_tool("echo", None, None),
            page_tool("wipe", Some(json!({"destructiveHint": true})), None),
            page_tool(
                "pay",
                None,
                Some(json!({"clienttools/requireConfirmation": true})),
            ),
            page_tool("look", Some(json!({"readOnlyHint": true})), None),
            page_tool(
                "reviews",
                Some(json!({"readOnlyHint": true, "untrustedContentHint": true})),
                None,
            ),
            // The page opted out: its flag decides, whatever the hints say.
            page_tool(
                "tidy",
                Some(json!({"destructiveHint": true, "consequentialHint": true})),
                Some(json!({"clienttools/requireConfirmation": false})),
            ),
            // What `registerHandler("Delete-Car")` lists: a handler entry under its normalized name.
            page_tool(
                "delete-car",
                None,
                Some(
                    json!({"clienttools/originalName": "Delete-Car", "clienttools/kind": "handler"}),
                ),
            ),
            // A page's own confirming tool defined as "Wipe All".
            page_tool(
                "wipe_all",
                Some(json!({"destructiveHint": true})),
                Some(json!({"clienttools/originalName": "Wipe All"})),
            ),
            // `registerHandler("Delete_Car")`: the file's `delete_car` replaces this entry.
            page_tool(
                "delete_car",
                None,
                Some(
                    json!({"clienttools/originalName": "Delete_Car", "clienttools/kind": "handler"}),
                ),
            ),
        ]
    }

    fn prepare_with(
        allow: &[String],
        tools: &AgentTools,
        name: &str,
        arguments: Value,
        caller: Option<&Map<String, Value>>,
        requested: Option<RequestedTimeout>,
    ) -> Result<PreparedCall, CallToolResult> {
        let page = page();
        let context = Context {
            session: "s1",
            user: None,
            allow,
            default_timeout: DEFAULT,
            agent_tools: tools,
            page_tools: &page,
        };
        prepare(
            &context,
            name,
            arguments,
            caller,
            requested,
            TraceContext::read(caller).0,
        )
    }

    fn call(name: &str, caller: Value) -> Result<PreparedCall, String> {
        prepare_with(
            &[],
            &file(),
            name,
            json!({"id": "c1"}),
            caller.as_object(),
            None,
        )
        .map_err(|result| result.text().to_owned())
    }

    fn api_timeout(ms: u64) -> Option<RequestedTimeout> {
        Some(RequestedTimeout {
            timeout: Duration::from_millis(ms),
            field: "timeoutMs",
        })
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
        assert!(prepared.needs_confirmation());
        assert!(!prepared.is_confirmed_by_agent());
        assert_eq!(prepared.meta()[meta::REQUIRE_CONFIRMATION], true);
        assert!(prepared.meta().contains_key(meta::INPUT_SCHEMA));
        assert_eq!(prepared.timeout(), Duration::from_millis(5000));
        assert_eq!(prepared.title(), Some("Delete a car"));
        assert_eq!(prepared.session(), "s1");
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
        let bad = prepare_with(&[], &file(), "delete_car", json!({}), None, None).unwrap_err();
        assert!(bad.text().contains("invalid input"), "{}", bad.text());
    }

    #[test]
    fn one_timeout_rule_with_errors_naming_the_field_and_the_limit() {
        // A shorter timeout than the file tool's budget may be asked for, not a longer one.
        let shorter = call("delete_car", json!({"clienttools/timeoutMs": 100})).unwrap();
        assert_eq!(shorter.timeout(), Duration::from_millis(100));
        let longer = call("delete_car", json!({"clienttools/timeoutMs": 60_000})).unwrap_err();
        assert!(
            longer.contains(
                "_meta 'clienttools/timeoutMs' 60000 ms is above the tool's timeout of 5000 ms"
            ),
            "{longer}"
        );
        let api = |name: &str, ms: u64| {
            prepare_with(
                &[],
                &file(),
                name,
                json!({"id": "c1"}),
                None,
                api_timeout(ms),
            )
            .map(|call| call.timeout())
            .map_err(|result| result.text().to_owned())
        };
        assert_eq!(api("delete_car", 5000), Ok(Duration::from_millis(5000)));
        let error = api("delete_car", 5001).unwrap_err();
        assert!(
            error.starts_with("timeoutMs 5001 ms is above the tool's timeout of 5000 ms"),
            "{error}"
        );
        // Zero is an error on every route, not "the default".
        let error = api("echo", 0).unwrap_err();
        assert_eq!(
            error,
            "timeoutMs must be a positive number of milliseconds, not 0"
        );
        let error = call("echo", json!({"clienttools/timeoutMs": 0})).unwrap_err();
        assert!(error.contains("must be a positive number"), "{error}");
        // Above the maximum: an error, not cut to 300 s.
        let error = api("echo", MAX_TIMEOUT_MS + 1).unwrap_err();
        assert!(error.contains("above the maximum of 300000 ms"), "{error}");
        assert_eq!(
            api("echo", MAX_TIMEOUT_MS),
            Ok(Duration::from_millis(MAX_TIMEOUT_MS))
        );
        // None asked: the tool's budget, else the bridge's default.
        assert_eq!(
            call("delete_car", json!({})).unwrap().timeout(),
            Duration::from_millis(5000)
        );
        assert_eq!(call("echo", json!({})).unwrap().timeout(), DEFAULT);
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
        assert_eq!(prepared.meta()[meta::INPUT_SCHEMA], schema);
        assert_eq!(prepared.meta()[meta::FALLBACK], "form");
        assert_eq!(prepared.meta().len(), 2);
        assert!(!prepared.needs_confirmation());
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
        let twice = prepare_with(
            &[],
            &file(),
            "echo",
            json!({}),
            json!({"clienttools/timeoutMs": 5}).as_object(),
            api_timeout(5),
        )
        .unwrap_err();
        assert!(
            twice.text().contains("twice (timeoutMs and _meta"),
            "{}",
            twice.text()
        );
    }

    #[test]
    fn who_needs_confirmation() {
        assert!(call("wipe", json!({})).unwrap().needs_confirmation());
        assert!(call("pay", json!({})).unwrap().needs_confirmation());
        assert!(!call("look", json!({})).unwrap().needs_confirmation());
        assert!(!call("echo", json!({})).unwrap().needs_confirmation());
        // `requireConfirmation: false` in the page's entry is the page's decision.
        assert!(!call("tidy", json!({})).unwrap().needs_confirmation());
        let asked = call("echo", json!({"clienttools/requireConfirmation": true})).unwrap();
        assert!(asked.needs_confirmation());
    }

    #[test]
    fn a_call_carries_its_tools_annotations() {
        let reviews = call("reviews", json!({})).unwrap();
        assert!(reviews.is_untrusted());
        assert_eq!(
            reviews.annotations(),
            Some(&json!({"readOnlyHint": true, "untrustedContentHint": true}))
        );
        let look = call("look", json!({})).unwrap();
        assert!(!look.is_untrusted());
        assert_eq!(look.annotations(), Some(&json!({"readOnlyHint": true})));
        assert_eq!(call("echo", json!({})).unwrap().annotations(), None);
        // A `--tools` tool: the file's annotations, not the page's handler entry's.
        let file = AgentTools::parse(
            &json!([{"name": "delete_car", "description": "Deletes", "inputSchema": {"type": "object"},
                     "annotations": {"untrustedContentHint": true}}])
            .to_string(),
        )
        .unwrap();
        let delete = prepare_with(&[], &file, "Delete_Car", json!({}), None, None).unwrap();
        assert!(delete.is_untrusted());
    }

    /// Defect: a call by the ORIGINAL name skipped the file's `_meta`, its argument check and the
    /// confirmation, because only exact names were matched while the page resolves both.
    #[test]
    fn a_call_by_original_name_is_the_listed_tool_under_its_listed_name() {
        // A page tool: "Wipe All" is `wipe_all`, and asks for confirmation.
        let wipe = call("Wipe All", json!({})).unwrap();
        assert_eq!(wipe.name(), "wipe_all");
        assert!(wipe.needs_confirmation());
        // A `--tools` tool whose page handler was registered under another spelling.
        let delete = call("Delete_Car", json!({})).unwrap();
        assert_eq!(delete.name(), "delete_car");
        assert!(delete.needs_confirmation());
        assert!(delete.meta().contains_key(meta::INPUT_SCHEMA));
        let error = call(
            "Delete_Car",
            json!({"clienttools/requireConfirmation": false}),
        )
        .unwrap_err();
        assert!(error.contains("defined by the bridge"), "{error}");
        let invalid =
            prepare_with(&[], &file(), "Delete_Car", json!({"id": 3}), None, None).unwrap_err();
        assert!(
            invalid.text().contains("invalid input"),
            "{}",
            invalid.text()
        );
        // A file tool defined as `delete-car` and a page handler "Delete-Car".
        let dashed = AgentTools::parse(
            &json!([{"name": "delete-car", "description": "Deletes", "requireConfirmation": true,
                     "inputSchema": {"type": "object"}}])
            .to_string(),
        )
        .unwrap();
        let delete = prepare_with(&[], &dashed, "Delete-Car", json!({}), None, None).unwrap();
        assert_eq!(delete.name(), "delete-car");
        assert!(delete.needs_confirmation());
        assert!(delete.meta().contains_key(meta::INPUT_SCHEMA));
        // Not listed by the page (yet), but it normalizes to a file tool: that tool.
        let unlisted = prepare_with(&[], &dashed, "DELETE-CAR", json!({}), None, None).unwrap();
        assert_eq!(unlisted.name(), "delete-car");
        assert!(unlisted.needs_confirmation());
        // An exact listed name wins over an original name (the page's order); unknown names go as
        // they are.
        assert_eq!(call("echo", json!({})).unwrap().name(), "echo");
        assert_eq!(call("Not Listed", json!({})).unwrap().name(), "Not Listed");
    }

    #[test]
    fn the_allow_list_matches_original_names_whichever_name_is_called() {
        let allow = ["Wipe All".to_owned()];
        for name in ["Wipe All", "wipe_all"] {
            let call = prepare_with(&allow, &file(), name, json!({}), None, None).unwrap();
            assert_eq!(call.original_name(), "Wipe All");
        }
        for name in ["wipe", "echo", "delete_car", "Delete_Car", "unlisted"] {
            let refused = prepare_with(&allow, &file(), name, json!({}), None, None).unwrap_err();
            assert_eq!(refused.text(), format!("tool '{name}' is not allowed"));
        }
        // A `--tools` tool is listed under its own name (its original name).
        let allow = ["delete_car".to_owned()];
        for name in ["delete_car", "Delete_Car"] {
            prepare_with(&allow, &file(), name, json!({"id": "c"}), None, None).unwrap();
        }
    }
}
