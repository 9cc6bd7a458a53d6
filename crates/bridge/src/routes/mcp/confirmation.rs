//! Confirmation by the person at the agent (`--confirm-via agent`), the MCP half: asked with
//! `elicitation/create` (2025-11-25) or an `InputRequiredResult` the client retries with
//! (2026-07-28). What is asked and how its answer is bound to the call is
//! crate::agent::confirmation's, for every route.

#![allow(deprecated)]

use std::time::Duration;

use client_tools_core::protocol::{self, RpcError};
use rmcp::model::{
    CallToolRequestParams, ElicitResult, InputRequests, InputRequiredResult,
    ProgressNotificationParam, ServerRequest,
};
use rmcp::service::RequestContext;
use rmcp::{Peer, RoleServer};
use serde_json::{Map, Value};

use crate::agent::confirmation::{self as agent_confirmation, Binding, Decision};
use crate::calls::prepared_call::PreparedCall;
use crate::config::ConfirmVia;
use crate::ids::now_unix_ms;
use crate::limits::{CONFIRMATION_PROGRESS_EVERY, REQUEST_STATE_TTL_MS};
use crate::sessions::page_session::PageSession;

use super::{mcp_session_id, McpAgent};

/// What the agent-side confirmation decided for a call (crate::agent::confirmation).
pub(super) enum Confirmation {
    /// The call goes to the page (confirmed by the agent's person, or the page asks).
    Proceed,
    /// 2026-07-28: the client must ask its person and retry with the answer.
    Ask(InputRequiredResult),
    /// The call ends with this result.
    Refused(protocol::CallToolResult),
}

impl McpAgent {
    /// Asks the person at the agent to confirm `call` when the bridge runs with
    /// `--confirm-via agent`, the call needs confirmation, the client declared form elicitation,
    /// and the arguments fit in the question whole; otherwise the page asks (SPEC §7). On
    /// 2025-11-25 the bridge sends `elicitation/create` and waits (sending progress meanwhile when
    /// the call has a progress token), then prepares the call again and refuses it if what would
    /// be forwarded changed; on 2026-07-28 (no server-to-client requests) the call returns an
    /// `InputRequiredResult` and the client retries with the answer and the `requestState`, which
    /// is checked (it binds the forwarded `_meta`) and spent here.
    pub(super) async fn confirm(
        &self,
        page: &PageSession,
        call: &mut PreparedCall,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
        waited: &mut f64,
    ) -> Confirmation {
        let retried = request.request_state.is_some() || request.input_responses.is_some();
        let wanted = self.bridge.config().confirm_via == ConfirmVia::Agent
            && call.needs_confirmation()
            && can_elicit(context);
        let question = wanted.then(|| agent_confirmation::question(call)).flatten();
        if wanted && question.is_none() {
            tracing::info!(
                session = %page.id(),
                user = page.user().unwrap_or(""),
                tool = call.name(),
                "arguments too long to show whole at the agent: the page confirms this call"
            );
        }
        let Some(question) = question else {
            // Answers given without a state feed the call's first round (SEP-2322).
            return match request.request_state.is_some() {
                true => Confirmation::Refused(protocol::CallToolResult::error(
                    "this call carries a requestState, but the bridge asked for no input for it",
                )),
                false => Confirmation::Proceed,
            };
        };
        let handshake_era = context
            .protocol_version()
            .is_none_or(|version| version.has_initialize());
        let forwarded = agent_confirmation::forwarded_digest(call);
        let decision = if handshake_era {
            if retried {
                return Confirmation::Refused(protocol::CallToolResult::error(
                    "requestState and inputResponses belong to protocol revision 2026-07-28; \
                     this session speaks an earlier one",
                ));
            }
            let asked = context.peer.create_elicitation_with_timeout(
                question,
                Some(Duration::from_millis(REQUEST_STATE_TTL_MS)),
            );
            let ticking = progress_while_waiting(context, waited);
            let answer = tokio::select! {
                answer = asked => answer,
                () = ticking => unreachable!("progress_while_waiting never ends"),
                () = context.ct.cancelled() => {
                    return Confirmation::Refused(protocol::CallToolResult::error("cancelled"));
                }
            };
            let decision = match answer {
                Ok(answer) => Decision::from_answer(&answer),
                Err(error) => {
                    return Confirmation::Refused(protocol::CallToolResult::error(format!(
                        "the agent's client did not answer the confirmation request: {error}"
                    )))
                }
            };
            if decision == Ok(Decision::Approve) {
                // The page may have redefined the tool while the person decided: what they
                // approved must be what goes.
                let arguments = call.arguments().clone();
                let again =
                    page.prepare_call(&request.name, arguments, Some(&context.meta.0 .0), None);
                match again {
                    Ok(again) if agent_confirmation::forwarded_digest(&again) == forwarded => {
                        *call = again
                    }
                    Ok(_) => {
                        return Confirmation::Refused(protocol::CallToolResult::error(format!(
                            "tool '{}' changed while the person at the agent decided (its \
                             schemas, policy or timeout): not run; call it again",
                            call.name()
                        )))
                    }
                    Err(refused) => return Confirmation::Refused(refused),
                }
            }
            decision
        } else {
            let mcp_session = mcp_session_id(context);
            let binding = Binding::of(call, &forwarded, page.id(), mcp_session.as_deref());
            let states = self.bridge.request_states();
            let now = now_unix_ms();
            let Some(state) = request.request_state.as_deref() else {
                if request.input_responses.is_some() {
                    return Confirmation::Refused(protocol::CallToolResult::error(
                        "inputResponses without requestState: send back the requestState the \
                         bridge issued with the question",
                    ));
                }
                let question = InputRequests::from([(
                    agent_confirmation::INPUT_KEY.to_owned(),
                    agent_confirmation::input_request(&question),
                )]);
                let state = states.issue(&binding, now);
                return Confirmation::Ask(InputRequiredResult::new(Some(question), Some(state)));
            };
            if let Err(refusal) = states.redeem(state, &binding, now) {
                return Confirmation::Refused(protocol::CallToolResult::error(refusal));
            }
            let answer = request
                .input_responses
                .as_ref()
                .and_then(|responses| responses.get(agent_confirmation::INPUT_KEY));
            let Some(answer) = answer else {
                return Confirmation::Refused(protocol::CallToolResult::error(format!(
                    "the retried call carries no inputResponses['{}'] (the person's answer)",
                    agent_confirmation::INPUT_KEY
                )));
            };
            match serde_json::from_value::<ElicitResult>(answer.clone()) {
                Ok(answer) => Decision::from_answer(&answer),
                Err(error) => {
                    return Confirmation::Refused(protocol::CallToolResult::error(format!(
                        "inputResponses['{}'] is not an elicitation result: {error}",
                        agent_confirmation::INPUT_KEY
                    )))
                }
            }
        };
        let decision = match decision {
            Ok(decision) => decision,
            Err(error) => return Confirmation::Refused(protocol::CallToolResult::error(error)),
        };
        match decision.refusal() {
            Some(refusal) => Confirmation::Refused(refusal),
            None => {
                call.confirmed_by_agent();
                Confirmation::Proceed
            }
        }
    }
}

/// Whether the client declared form elicitation (in `initialize`, or on 2026-07-28 in the
/// request's `_meta`); a bare `elicitation: {}` means form.
pub(super) fn can_elicit(context: &RequestContext<RoleServer>) -> bool {
    context
        .client_capabilities()
        .and_then(|capabilities| capabilities.elicitation)
        .is_some_and(|e| e.form.is_some() || e.url.is_none())
}

/// 2025-11-25: a round's requests to the agent, concurrently, as requests on the call's stream
/// (rmcp relates a request sent while a call is handled to it); `{inputResponses}` for the page,
/// or an error naming the request the agent failed. Bounded by the human wait (the core's `HUMAN_WAIT_MAX_MS`).
pub(super) async fn ask_agent(
    peer: Peer<RoleServer>,
    requests: Map<String, Value>,
) -> Result<Value, RpcError> {
    let asks = requests.into_iter().map(|(key, request)| {
        let peer = peer.clone();
        async move {
            let failed = |why: String| {
                RpcError::new(
                    protocol::code::INTERNAL_ERROR,
                    format!("inputRequests['{key}']: {why}"),
                )
            };
            let request: ServerRequest = serde_json::from_value(request)
                .map_err(|e| failed(format!("not a request the bridge can send: {e}")))?;
            let limit = Duration::from_millis(client_tools_core::limits::HUMAN_WAIT_MAX_MS);
            let answer = tokio::time::timeout(limit, peer.send_request(request))
                .await
                .map_err(|_| failed("the agent did not answer in time".into()))?
                .map_err(|e| match e {
                    rmcp::ServiceError::McpError(e) => {
                        let mut error = RpcError::new(
                            i64::from(e.code.0),
                            format!(
                                "inputRequests['{key}']: the agent answered with an error: {}",
                                e.message
                            ),
                        );
                        error.data = e.data;
                        error
                    }
                    other => failed(format!("the agent's client failed: {other}")),
                })?;
            let answer = serde_json::to_value(answer).map_err(|e| failed(e.to_string()))?;
            Ok::<_, RpcError>((key, answer))
        }
    });
    let answers = futures_util::future::try_join_all(asks).await?;
    let responses: Map<String, Value> = answers.into_iter().collect();
    Ok(serde_json::json!({ "inputResponses": responses }))
}

/// While the person at the agent decides (2025-11-25): `notifications/progress` every
/// [`CONFIRMATION_PROGRESS_EVERY`] under the call's progress token, if it has one, so the client
/// extends its deadline (SPEC §5). Never ends (the caller stops polling it); `waited` is the last progress sent.
pub(super) async fn progress_while_waiting(context: &RequestContext<RoleServer>, waited: &mut f64) {
    let Some(token) = context.meta.get_progress_token() else {
        return std::future::pending().await;
    };
    let mut ticks = tokio::time::interval_at(
        tokio::time::Instant::now() + CONFIRMATION_PROGRESS_EVERY,
        CONFIRMATION_PROGRESS_EVERY,
    );
    loop {
        ticks.tick().await;
        *waited += 1.0;
        let param = ProgressNotificationParam::new(token.clone(), *waited)
            .with_message("waiting for the person at the agent to confirm the call");
        // A client that stopped reading does not stop the wait: its answer (or the timeout) does.
        let _ = context.peer.notify_progress(param).await;
    }
}
