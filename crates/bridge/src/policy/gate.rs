//! Where a page session applies the policy: the three calls `PageSession` makes at its choke
//! points (preparing a call, running it and reading its result, relaying a call from another
//! node), with the audit of every decision.

use std::sync::Arc;
use std::time::Instant;

use client_tools_core::protocol::{self, method, CallToolResult, Message, Tool};
use serde_json::Value;

use super::{audit, mark, Acted, InputVerdict, Policy};
use crate::agent_tools::AgentTools;
use crate::prepared_call::{listed_original, PreparedCall};

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
    match policy.check_input(&tool, call.session(), call.arguments()) {
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
            audit(&acted, &tool, call.session(), &call_id(), payload);
            Err(result)
        }
    }
}

/// What the result rules of a running call need, taken from it before it is sent.
pub(crate) struct Running {
    tool: String,
    verdict: InputVerdict,
    input: Value,
}

/// A call about to go to the page (`PageSession::call_prepared_with`): its `limit` rules are
/// counted here unless another node holds the page's socket (`linked`: that node counts it, as
/// every call to the page passes it); its `confirm` and `log` decisions are audited once, now that
/// it runs. `Err`: the result to answer instead.
pub(crate) fn running(
    policy: &Policy,
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
        if let Err(refusal) = policy.admit(&verdict, tool, call.session(), now) {
            let (acted, result) = *refusal;
            audit(&acted, tool, call.session(), call_id, payload);
            return Err(result);
        }
    }
    for acted in &verdict.acted {
        audit(acted, tool, call.session(), call_id, payload);
    }
    let input = match verdict.has_result_rules {
        true => call.arguments().clone(),
        false => Value::Null,
    };
    Ok(Some(Running {
        tool: tool.to_owned(),
        verdict,
        input,
    }))
}

/// The page's result, before any caller sees it: the result rules, the audit, and the rules that
/// acted on the call listed in its `_meta`.
pub(crate) fn answered(
    policy: &Policy,
    running: &Running,
    session: &str,
    call_id: &str,
    result: &mut CallToolResult,
    log_payloads: bool,
) {
    let acted = if running.verdict.has_result_rules {
        policy.check_result(&running.tool, session, &running.input, result)
    } else {
        Vec::new()
    };
    if !acted.is_empty() {
        let payload = log_payloads.then(|| serde_json::to_value(&*result).unwrap_or_default());
        for one in &acted {
            audit(one, &running.tool, session, call_id, payload.as_ref());
        }
    }
    let confirmed: Vec<Acted> = running
        .verdict
        .acted
        .iter()
        .filter(|a| a.action == "confirm")
        .cloned()
        .collect();
    mark(result, &confirmed);
}

/// A frame another cluster node relays to this node's page: a `tools/call` is counted against the
/// `limit` rules here. `Err`: the result to answer in the page's stead.
pub(crate) fn relayed(
    policy: &Policy,
    frame: &str,
    session: &str,
    agent_tools: &AgentTools,
    page_tools: &Arc<[Tool]>,
    now: Instant,
) -> Result<(), CallToolResult> {
    if !policy.has_limits() || !frame.contains(method::TOOLS_CALL) {
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
        return Ok(());
    }
    let name = params
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let input = params.get("arguments").cloned().unwrap_or(Value::Null);
    let tool = listed_original(name, agent_tools, page_tools);
    match policy.admit_relayed(&tool, session, &input, now) {
        Ok(()) => Ok(()),
        Err(refusal) => {
            let (acted, result) = *refusal;
            audit(&acted, &tool, session, &request_text(&id), None);
            Err(result)
        }
    }
}

fn request_text(id: &protocol::RequestId) -> String {
    match id {
        protocol::RequestId::String(text) => text.clone(),
        other => serde_json::to_string(other).unwrap_or_default(),
    }
}
