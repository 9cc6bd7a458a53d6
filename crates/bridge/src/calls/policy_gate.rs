//! Where a page session applies the policy (crate::calls::policy) to its prepared calls: the three calls `PageSession` makes at its choke
//! points (preparing a call, running it and reading its result, relaying a call from another
//! node), the `redact` rules on what the page sends while the call runs ([`EventRedaction`]),
//! with the audit of every decision.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use client_tools_core::protocol::{
    self, code, method, CallToolResult, Message, ProgressParams, RpcError, Tool,
};
use serde_json::{Map, Value};

use crate::calls::agent_tools::AgentTools;
use crate::calls::policy::redact::Redaction;
use crate::calls::policy::{
    audit, mark, mark_answer, shown, Acted, InputVerdict, Kind, Policy, Target, Who, ACTED_META,
};
use crate::calls::prepared_call::{listed_original, PreparedCall};
use crate::calls::served::{method as served, ServedRequest, Subject};
use crate::calls::tool_annotations;

/// Every route's call, once prepared (`PageSession::prepare`): `block` refuses it (with an audit
/// event under `call`, the id it would have had), `confirm` makes it need the person's approval.
pub(crate) fn prepared(
    policy: &Policy,
    mut call: PreparedCall,
    call_id: impl FnOnce() -> String,
    log_payloads: bool,
) -> Result<PreparedCall, CallToolResult> {
    if policy.is_empty() {
        return Ok(call);
    }
    let tool = call.original_name().to_owned();
    let target = Target::annotated(&tool, call.annotations());
    match policy.check_input(target, call.who(), call.arguments()) {
        Ok(verdict) => {
            if verdict.confirm {
                call.require_confirmation_by_policy();
            }
            call.set_policy_verdict(verdict);
            Ok(call)
        }
        Err(refusal) => {
            let (acted, result) = *refusal;
            let payload = log_payloads.then_some(call.arguments());
            audit(&acted, &tool, call.who(), &call_id(), payload);
            Err(result)
        }
    }
}

/// What the result rules of a running call need, taken from it before it is sent.
pub(crate) struct Running {
    /// What runs: a tool (its original name), a prompt, a resource.
    kind: Kind,
    tool: String,
    /// A tool's annotations, for the result rules' `annotations`.
    annotations: Option<Value>,
    verdict: InputVerdict,
    input: Value,
    /// The `redact` rules on what the page sends while it runs; `None`: none applies.
    events: Option<Arc<EventRedaction>>,
}

impl Running {
    /// The `redact` rules for the page's log and progress messages and rounds of this call, for
    /// the session to apply as each passes to the caller (crate::sessions::page_session's waiter).
    pub(crate) fn event_redaction(&self) -> Option<Arc<EventRedaction>> {
        self.events.clone()
    }
}

/// The `redact` rules that apply to one running call, on everything the page sends about it
/// before its result: log messages (every string but the level), progress messages and the
/// requests of rounds (crate::calls::policy::redact). Each rule that replaced something is audited once
/// per call, when it first does, and listed in the result's `_meta` ([`answered`]).
pub(crate) struct EventRedaction {
    policy: Arc<Policy>,
    /// The rules (their index in the policy), in file order.
    rules: Vec<usize>,
    /// Which of them replaced something in this call (and were audited).
    acted: Mutex<Vec<bool>>,
    tool: String,
    session: String,
    user: Option<String>,
    call: String,
    log_payloads: bool,
}

impl EventRedaction {
    /// The params of one of the page's log messages about the call (`notifications/message`).
    pub(crate) fn log(&self, params: &mut Map<String, Value>) {
        self.apply(params, Redaction::in_log, |params| {
            Value::Object(params.clone())
        });
    }

    /// One of the page's progress reports on the call.
    pub(crate) fn progress(&self, progress: &mut ProgressParams) {
        if progress.message.is_none() {
            return;
        }
        self.apply(progress, Redaction::in_progress, to_json);
    }

    /// The requests of one of the page's rounds (`inputRequests`).
    pub(crate) fn round(&self, requests: &mut Map<String, Value>) {
        self.apply(requests, Redaction::in_round, |requests| {
            Value::Object(requests.clone())
        });
    }

    /// The JSON-RPC error the page ended the call with (`-32021`), which the agent gets as one.
    pub(crate) fn error(&self, error: &mut RpcError) {
        self.apply(error, Redaction::in_error, to_json);
    }

    /// Each rule in file order; the first replacement of each rule in this call is audited (the
    /// event as redacted, with `--log-payloads`).
    fn apply<T: ?Sized>(
        &self,
        target: &mut T,
        redact: impl Fn(&Redaction, &mut T) -> usize,
        payload: impl Fn(&T) -> Value,
    ) {
        for (n, &at) in self.rules.iter().enumerate() {
            let Some((redaction, acted)) = self.policy.redaction(at) else {
                continue;
            };
            if redact(redaction, target) == 0 {
                continue;
            }
            let first = {
                let mut seen = self.acted.lock().unwrap_or_else(|p| p.into_inner());
                !std::mem::replace(&mut seen[n], true)
            };
            if first {
                let payload = self.log_payloads.then(|| payload(target));
                let who = Who {
                    session: &self.session,
                    user: self.user.as_deref(),
                };
                audit(&acted, &self.tool, who, &self.call, payload.as_ref());
            }
        }
    }

    /// The rules that replaced something in what the page sent while the call ran.
    fn acted(&self) -> Vec<Acted> {
        let seen = self.acted.lock().unwrap_or_else(|p| p.into_inner());
        self.rules
            .iter()
            .zip(seen.iter())
            .filter(|(_, seen)| **seen)
            .filter_map(|(&at, _)| self.policy.redaction(at).map(|(_, acted)| acted))
            .collect()
    }
}

/// A call about to go to the page (`PageSession::call_tool`): its `limit` rules are
/// counted here unless another node holds the page's socket (`linked`: that node counts it, as
/// every call to the page passes it); its `confirm` and `log` decisions are audited once, now that
/// it runs. `Err`: the result to answer instead.
pub(crate) fn running(
    policy: &Arc<Policy>,
    call: &PreparedCall,
    call_id: &str,
    linked: bool,
    now: Instant,
    log_payloads: bool,
) -> Result<Option<Running>, CallToolResult> {
    if policy.is_empty() {
        return Ok(None);
    }
    let verdict = call.policy_verdict().clone();
    let tool = call.original_name();
    let payload = log_payloads.then_some(call.arguments());
    if !linked {
        if let Err(refusal) = policy.admit(&verdict, tool, call.who(), now) {
            let (acted, result) = *refusal;
            audit(&acted, tool, call.who(), call_id, payload);
            return Err(result);
        }
    }
    for acted in &verdict.acted {
        audit(acted, tool, call.who(), call_id, payload);
    }
    let input = match verdict.has_result_rules {
        true => call.arguments().clone(),
        false => Value::Null,
    };
    let target = Target::annotated(tool, call.annotations());
    let events = match verdict.has_result_rules {
        true => policy.event_redactions(target, call.who(), call.arguments()),
        false => Vec::new(),
    };
    let events = (!events.is_empty()).then(|| {
        Arc::new(EventRedaction {
            policy: Arc::clone(policy),
            acted: Mutex::new(vec![false; events.len()]),
            rules: events,
            tool: tool.to_owned(),
            session: call.session().to_owned(),
            user: call.who().user.map(str::to_owned),
            call: call_id.to_owned(),
            log_payloads,
        })
    });
    let annotations = match verdict.has_result_rules {
        true => call.annotations().cloned(),
        false => None,
    };
    Ok(Some(Running {
        kind: Kind::Tool,
        tool: tool.to_owned(),
        annotations,
        verdict,
        input,
        events,
    }))
}

/// The page's result, before any caller sees it: the result rules, the audit, and the rules that
/// acted on the call listed in its `_meta` — a `redact` rule that replaced something only in what
/// the page sent while the call ran (its log, progress, rounds) too.
pub(crate) fn answered(
    policy: &Policy,
    running: &Running,
    who: Who<'_>,
    call_id: &str,
    result: &mut CallToolResult,
    log_payloads: bool,
) {
    let acted = if running.verdict.has_result_rules {
        let target = Target::annotated(&running.tool, running.annotations.as_ref());
        policy.check_result(target, who, &running.input, result)
    } else {
        Vec::new()
    };
    let on_events = running
        .events
        .as_ref()
        .map(|events| events.acted())
        .unwrap_or_default();
    // A rule already audited for what it replaced while the call ran is not audited again.
    let unaudited: Vec<&Acted> = acted.iter().filter(|a| !on_events.contains(a)).collect();
    if !unaudited.is_empty() {
        let payload = log_payloads.then(|| serde_json::to_value(&*result).unwrap_or_default());
        for one in unaudited {
            audit(one, &running.tool, who, call_id, payload.as_ref());
        }
    }
    let mut listed: Vec<Acted> = on_events
        .into_iter()
        .filter(|a| !acted.contains(a))
        .collect();
    listed.extend(
        running
            .verdict
            .acted
            .iter()
            .filter(|a| a.action == "confirm")
            .cloned(),
    );
    mark(result, &listed);
}

/// The JSON-RPC error the page ended the call with (`-32021`, which an MCP agent gets as an
/// error, not a result): the `redact` rules of what the page sends while the call runs apply to
/// it too (`block` rules act on results alone).
pub(crate) fn failed(running: &Running, error: &mut RpcError) {
    if let Some(events) = &running.events {
        events.error(error);
    }
}

/// What answers a relayed request in the page's stead: a tool call's error result, or a served
/// request's JSON-RPC error.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Refused {
    Result(CallToolResult),
    Error(RpcError),
}

/// A frame another cluster node relays to this node's page: a `tools/call`, or a `prompts/get`,
/// `resources/read` or `completion/complete`, is counted against the `limit` rules here.
/// `Err`: what to answer in the page's stead.
pub(crate) fn relayed(
    policy: &Policy,
    frame: &str,
    who: Who<'_>,
    agent_tools: &AgentTools,
    page_tools: &Arc<[Tool]>,
    now: Instant,
) -> Result<(), Refused> {
    const COUNTED: [&str; 4] = [
        method::TOOLS_CALL,
        served::PROMPTS_GET,
        served::RESOURCES_READ,
        served::COMPLETION_COMPLETE,
    ];
    if !policy.has_limits() || !COUNTED.iter().any(|m| frame.contains(m)) {
        return Ok(());
    }
    let Ok(Message::Request {
        id,
        method: called,
        params,
    }) = protocol::decode(frame)
    else {
        return Ok(());
    };
    if called != method::TOOLS_CALL {
        let Value::Object(params) = params else {
            return Ok(());
        };
        let Some(request) = served_request(&called, params) else {
            return Ok(());
        };
        let Some((target, input)) = served_facts(&request) else {
            return Ok(());
        };
        return policy
            .admit_relayed_on(target, who, &input, now)
            .map_err(|refusal| {
                let (acted, message) = *refusal;
                audit(&acted, &target.audited(), who, &request_text(&id), None);
                Refused::Error(refused(&acted, &message))
            });
    }
    let name = params
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let input = params.get("arguments").cloned().unwrap_or(Value::Null);
    let tool = listed_original(name, agent_tools, page_tools);
    let annotations = tool_annotations::of_listed(name, agent_tools, page_tools);
    let target = Target::annotated(&tool, annotations.as_ref());
    match policy.admit_relayed(target, who, &input, now) {
        Ok(()) => Ok(()),
        Err(refusal) => {
            let (acted, result) = *refusal;
            audit(&acted, &tool, who, &request_text(&id), None);
            Err(Refused::Result(result))
        }
    }
}

/// A relayed frame's served request, as the node that sent it built it.
fn served_request(called: &str, mut params: Map<String, Value>) -> Option<ServedRequest> {
    let text = |params: &Map<String, Value>, key: &str| {
        params.get(key).and_then(Value::as_str).map(str::to_owned)
    };
    match called {
        served::PROMPTS_GET => {
            let arguments = params.get("arguments").and_then(Value::as_object).cloned();
            Some(ServedRequest::get_prompt(
                &text(&params, "name")?,
                arguments,
            ))
        }
        served::RESOURCES_READ => ServedRequest::read(&text(&params, "uri")?).ok(),
        served::COMPLETION_COMPLETE => {
            params.remove("_meta");
            ServedRequest::complete(params).ok()
        }
        _ => None,
    }
}

fn to_json(value: &impl serde::Serialize) -> Value {
    serde_json::to_value(value).unwrap_or_default()
}

fn request_text(id: &protocol::RequestId) -> String {
    match id {
        protocol::RequestId::String(text) => text.clone(),
        other => serde_json::to_string(other).unwrap_or_default(),
    }
}

/// What the policy decides on in a served request (SPEC §11): its target — a prompt by name, a
/// resource by URI (a completion's: the prompt or the template it completes) — and what a
/// condition reads as `input`: a prompt's arguments, a resource's `{uri}`, a completion's params
/// (`{ref, argument, context?}`). `None`: a list (its entries are filtered instead, [`hidden`]).
pub(crate) fn served_facts(request: &ServedRequest) -> Option<(Target<'_>, Value)> {
    let target = match request.subject() {
        Subject::List => return None,
        Subject::Prompt(name) => Target::of(Kind::Prompt, name),
        Subject::Resource(uri) => Target::of(Kind::Resource, uri),
    };
    let params = request.params();
    let input = match request.method() {
        served::PROMPTS_GET => params
            .get("arguments")
            .cloned()
            .unwrap_or_else(|| Value::Object(Map::new())),
        served::COMPLETION_COMPLETE => Value::Object(params.clone()),
        _ => serde_json::json!({ "uri": target.name }),
    };
    Some((target, input))
}

/// A served request the policy refuses (`block`, `limit`): `-32602` with the message (naming the
/// rule) and `data: {"clienttools/policy": [{rule, action}]}`.
pub(crate) fn refused(acted: &Acted, message: &str) -> RpcError {
    let named = format!("'{}'", acted.rule);
    let message = match message.contains(&named) {
        true => message.to_owned(),
        false => format!("{message} (policy rule {named})"),
    };
    let mut error = RpcError::new(code::INVALID_PARAMS, message);
    error.data = Some(serde_json::json!({ ACTED_META: shown(std::slice::from_ref(acted)) }));
    error
}

/// A served request about to go to the page (`PageSession::serve`): the input rules on its
/// target — `block` refuses it, `limit` counts it (unless another node holds the page's socket:
/// that node counts it, crate::calls::policy_gate::relayed), `log` is audited — and the `redact`
/// rules on what the page sends while it runs, as for a tool call ([`running`]). `Err`: the
/// JSON-RPC error the agent gets instead; `Ok(None)`: nothing to apply (no policy, a list).
pub(crate) fn serving(
    policy: &Arc<Policy>,
    request: &ServedRequest,
    who: Who<'_>,
    call_id: &str,
    linked: bool,
    now: Instant,
    log_payloads: bool,
) -> Result<Option<Running>, RpcError> {
    if policy.is_empty() {
        return Ok(None);
    }
    let Some((target, input)) = served_facts(request) else {
        return Ok(None);
    };
    let audited = target.audited();
    let payload = log_payloads.then_some(&input);
    let verdict = policy
        .check_input_on(target, who, &input)
        .and_then(
            |verdict| match linked || request.method() == served::RESOURCES_SUBSCRIBE {
                true => Ok(verdict),
                false => policy
                    .admit_on(&verdict, target, who, now)
                    .map(|()| verdict),
            },
        );
    let verdict = match verdict {
        Ok(verdict) => verdict,
        Err(refusal) => {
            let (acted, message) = *refusal;
            audit(&acted, &audited, who, call_id, payload);
            return Err(refused(&acted, &message));
        }
    };
    for acted in &verdict.acted {
        audit(acted, &audited, who, call_id, payload);
    }
    let events = match verdict.has_result_rules {
        true => policy.event_redactions_on(target, who, &input),
        false => Vec::new(),
    };
    let events = (!events.is_empty()).then(|| {
        Arc::new(EventRedaction {
            policy: Arc::clone(policy),
            acted: Mutex::new(vec![false; events.len()]),
            rules: events,
            tool: audited.to_string(),
            session: who.session.to_owned(),
            user: who.user.map(str::to_owned),
            call: call_id.to_owned(),
            log_payloads,
        })
    });
    let input = match verdict.has_result_rules {
        true => input,
        false => Value::Null,
    };
    Ok(Some(Running {
        kind: target.kind,
        tool: target.name.to_owned(),
        annotations: None,
        verdict,
        input,
        events,
    }))
}

/// The page's answer to a served request, before any caller sees it: the result rules on
/// `method`'s result (`redact` replaces, `block` withholds: `Err` naming the rule), the audit,
/// and the rules that acted listed in the answer's `_meta` — a `redact` rule that replaced
/// something only in what the page sent while it ran too ([`answered`] for a tool call).
pub(crate) fn served_answered(
    policy: &Policy,
    running: &Running,
    who: Who<'_>,
    call_id: &str,
    method: &str,
    answer: &mut Value,
    log_payloads: bool,
) -> Result<(), RpcError> {
    let target = Target::of(running.kind, &running.tool);
    let audited = target.audited();
    let decided = match running.verdict.has_result_rules {
        true => policy.check_answer(target, who, &running.input, method, answer),
        false => Ok(Vec::new()),
    };
    let on_events = running
        .events
        .as_ref()
        .map(|events| events.acted())
        .unwrap_or_default();
    let (acted, withheld) = match decided {
        Ok(acted) => (acted, None),
        Err((acted, why)) => (acted, Some(why)),
    };
    let unaudited: Vec<&Acted> = acted.iter().filter(|a| !on_events.contains(a)).collect();
    if !unaudited.is_empty() {
        let payload = (log_payloads && withheld.is_none()).then(|| answer.clone());
        for one in unaudited {
            audit(one, &audited, who, call_id, payload.as_ref());
        }
    }
    if let Some(why) = withheld {
        let blocking = acted.last().expect("a withheld answer names its rule");
        return Err(refused(blocking, &why));
    }
    let only_on_events: Vec<Acted> = on_events
        .into_iter()
        .filter(|a| !acted.contains(a))
        .collect();
    let mut listed = acted;
    listed.extend(only_on_events);
    mark_answer(answer, &listed);
    Ok(())
}

/// Whether a list leaves out its entry `entry` of `list` (`prompts/list`, `resources/list`,
/// `resources/templates/list`): a `block` rule covers it and decides so without its request's
/// arguments (a resource's `input` is `{uri}`, a template's `{uri: <uriTemplate>}`, a prompt's
/// `{}`; a condition that cannot be decided leaves it listed: the request is decided when made).
pub(crate) fn hidden(policy: &Policy, who: Who<'_>, list: &str, entry: &Value) -> bool {
    if policy.is_empty() {
        return false;
    }
    let field = |name: &str| entry.get(name).and_then(Value::as_str).unwrap_or_default();
    let (target, input) = match list {
        served::PROMPTS_LIST => (
            // By the name the page defined it by (`clienttools/originalName`), else `name`.
            Target::of(Kind::Prompt, crate::calls::served::entry_name(entry)),
            Value::Object(Map::new()),
        ),
        served::RESOURCE_TEMPLATES_LIST => (
            Target::of(Kind::Resource, field("uriTemplate")),
            serde_json::json!({ "uri": field("uriTemplate") }),
        ),
        _ => (
            Target::of(Kind::Resource, field("uri")),
            serde_json::json!({ "uri": field("uri") }),
        ),
    };
    policy.hides(target, who, &input)
}
