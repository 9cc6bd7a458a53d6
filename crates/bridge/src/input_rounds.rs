//! A page's call that asks the agent something, as the bridge keeps it (SPEC §4 "Asking
//! mid-call", §11): [`RunningCall`] is the page's call running on its own task, with the page's
//! events (logs, rounds), progress and outcome as channels; [`Suspended`] keeps one on revision
//! 2026-07-28 between the agent's `tools/call` that got `input_required` and its retry, found
//! again by the `requestState` the bridge sealed (HMAC under the bridge's key, crate::
//! agent_confirmation) and bound to the page session, the suspension, its round, the tool's
//! definition and the arguments. A state is single-use (a fresh nonce every time one is issued)
//! and expires with the human bound (300 s); suspended calls are bounded, the oldest forgotten
//! first (forgetting one cancels its page call), so orphaned rounds never block new calls.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use client_tools_core::limits::HUMAN_WAIT_MAX_MS;
use client_tools_core::protocol::{ProgressParams, RequestId};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use tokio::sync::{mpsc, oneshot};

use crate::agent_confirmation::{hex, RequestStates};
use crate::limits::LOG_BUFFER;
use crate::page_session::{CallEvent, CallOutcome, PageSession};
use crate::prepared_call::PreparedCall;

/// The prefix of a round's `requestState` (a confirmation's is `v1`).
pub(crate) const STATE_DOMAIN: &str = "r1";
/// Suspended calls the bridge keeps at once; one more forgets the oldest.
pub(crate) const MAX_SUSPENDED: usize = 256;
/// How long a suspended call (and its state) lives: the human bound.
pub(crate) const SUSPENDED_TTL: Duration = Duration::from_millis(HUMAN_WAIT_MAX_MS);

/// A page call running on its own task. Dropping it cancels the page's call (its handler's
/// `ctx.signal` aborts) unless it has ended.
pub(crate) struct RunningCall {
    pub page: Arc<PageSession>,
    pub events: mpsc::Receiver<CallEvent>,
    pub progress: mpsc::Receiver<ProgressParams>,
    pub outcome: oneshot::Receiver<Option<CallOutcome>>,
    cancel: Option<oneshot::Sender<String>>,
}

impl RunningCall {
    /// Starts `call` on `page`.
    pub(crate) fn start(
        page: Arc<PageSession>,
        call: PreparedCall,
        progress_buffer: usize,
    ) -> Self {
        let (cancel, cancelled) = oneshot::channel::<String>();
        let (events_tx, events) = mpsc::channel(LOG_BUFFER + 1);
        let (progress_tx, progress) = mpsc::channel(progress_buffer.max(1));
        let (outcome_tx, outcome) = oneshot::channel();
        let running = page.clone();
        tokio::spawn(async move {
            let cancel = async move {
                cancelled
                    .await
                    .unwrap_or_else(|_| "the agent stopped waiting".to_owned())
            };
            let outcome = running
                .call_prepared_with(call, cancel, Some(progress_tx), Some(events_tx))
                .await;
            let _ = outcome_tx.send(outcome);
        });
        Self {
            page,
            events,
            progress,
            outcome,
            cancel: Some(cancel),
        }
    }

    /// Cancels the page's call with `reason` (the page is told; no result follows).
    pub(crate) fn cancel(mut self, reason: &str) {
        if let Some(cancel) = self.cancel.take() {
            let _ = cancel.send(reason.to_owned());
        }
    }
}

/// A call suspended on a round (2026-07-28) until the agent retries.
pub(crate) struct Suspended {
    pub running: RunningCall,
    /// The page session and tool (as the agent named it) of the call.
    pub page_session: String,
    pub tool: String,
    /// [`tool_digest`] of the tool's definition when the call was made.
    pub tool_digest: String,
    /// [`arguments_digest`] of the call's arguments.
    pub arguments: String,
    /// Rounds asked so far in this call (1 for the first).
    pub round: u32,
    /// The page's open round: its request id and all its requests.
    pub round_id: RequestId,
    pub requests: Map<String, Value>,
    /// Answers received so far for this round (the retry asked again for the rest).
    pub answered: Map<String, Value>,
    /// The nonce of the one state that may redeem it now.
    nonce: String,
    expires: Instant,
}

/// What a round's `requestState` says (integrity-protected, readable: hashes only).
#[derive(Serialize, Deserialize)]
struct Claims {
    /// The suspension's key in the store.
    k: String,
    /// Round number.
    r: u32,
    /// Hash of the page session id.
    p: String,
    /// Tool definition digest.
    d: String,
    /// Nonce.
    n: String,
    /// Expiry, unix milliseconds.
    e: u64,
}

/// Why a retry was refused (a JSON-RPC `-32602` for the agent).
pub(crate) type Refusal = String;

/// The bridge's suspended calls.
#[derive(Default)]
pub(crate) struct SuspendedCalls {
    calls: Mutex<HashMap<String, Suspended>>,
}

impl SuspendedCalls {
    /// Keeps `call` (its nonce and expiry are set here) and returns the state that resumes it.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn suspend(
        &self,
        states: &RequestStates,
        running: RunningCall,
        page_session: String,
        tool: String,
        tool_digest: String,
        arguments: String,
        round: u32,
        round_id: RequestId,
        requests: Map<String, Value>,
        answered: Map<String, Value>,
    ) -> String {
        let suspended = Suspended {
            running,
            page_session,
            tool,
            tool_digest,
            arguments,
            round,
            round_id,
            requests,
            answered,
            nonce: String::new(),
            expires: Instant::now(),
        };
        self.keep(states, random_hex(), suspended)
    }

    /// Keeps `suspended` under `key` with a fresh nonce and expiry; returns its new state.
    pub(crate) fn keep(
        &self,
        states: &RequestStates,
        key: String,
        mut suspended: Suspended,
    ) -> String {
        suspended.nonce = random_hex();
        suspended.expires = Instant::now() + SUSPENDED_TTL;
        let claims = Claims {
            k: key.clone(),
            r: suspended.round,
            p: short_hash(&suspended.page_session),
            d: suspended.tool_digest.clone(),
            n: suspended.nonce.clone(),
            e: unix_ms() + SUSPENDED_TTL.as_millis() as u64,
        };
        let payload = serde_json::to_vec(&claims).expect("strings and numbers");
        let mut calls = self.lock();
        forget_expired(&mut calls);
        while calls.len() >= MAX_SUSPENDED {
            let Some(oldest) = calls
                .iter()
                .min_by_key(|(_, s)| s.expires)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            if let Some(forgotten) = calls.remove(&oldest) {
                forgotten
                    .running
                    .cancel("too many calls waiting for agents' answers on this bridge");
            }
        }
        calls.insert(key, suspended);
        states.seal(STATE_DOMAIN, &payload)
    }

    /// The suspended call `state` resumes, taken out of the store (with its key), if `state` is
    /// this bridge's, unaltered, unexpired and the current one of a call of page session `page`.
    pub(crate) fn take(
        &self,
        states: &RequestStates,
        state: &str,
        page: &str,
    ) -> Result<(String, Suspended), Refusal> {
        let payload = states
            .open(STATE_DOMAIN, state)
            .ok_or("requestState integrity check failed (not issued by this bridge, or altered)")?;
        let claims: Claims =
            serde_json::from_slice(&payload).map_err(|_| "requestState integrity check failed")?;
        if unix_ms() >= claims.e {
            return Err(format!(
                "requestState expired (valid for {} s): call the tool again",
                SUSPENDED_TTL.as_secs()
            ));
        }
        if claims.p != short_hash(page) {
            return Err("requestState was issued for another page session".into());
        }
        let mut calls = self.lock();
        forget_expired(&mut calls);
        let fits = calls.get(&claims.k).is_some_and(|s| {
            s.nonce == claims.n && s.round == claims.r && s.tool_digest == claims.d
        });
        if !fits {
            return Err(
                "requestState was already used, or its call ended or was forgotten: call the \
                 tool again"
                    .into(),
            );
        }
        let suspended = calls.remove(&claims.k).expect("checked above");
        Ok((claims.k, suspended))
    }

    /// Suspended calls kept now.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Suspended>> {
        self.calls.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Forgets (and cancels) the suspended calls whose time is over.
fn forget_expired(calls: &mut HashMap<String, Suspended>) {
    let now = Instant::now();
    let expired: Vec<String> = calls
        .iter()
        .filter(|(_, s)| s.expires <= now)
        .map(|(k, _)| k.clone())
        .collect();
    for key in expired {
        if let Some(forgotten) = calls.remove(&key) {
            forgotten.running.cancel("the agent did not answer in time");
        }
    }
}

/// SHA-256 of a tool's definition as listed (its JSON): a state is bound to it.
pub(crate) fn tool_digest(tool: Option<&client_tools_core::protocol::Tool>) -> String {
    let json = serde_json::to_vec(&tool).unwrap_or_default();
    hex(&Sha256::digest(&json))
}

/// SHA-256 of a call's arguments (their JSON as the agent sent them, keys in order).
pub(crate) fn arguments_digest(arguments: &Value) -> String {
    let json = serde_json::to_vec(arguments).unwrap_or_default();
    hex(&Sha256::digest(&json))
}

fn short_hash(text: &str) -> String {
    hex(&Sha256::digest(text.as_bytes())[..16])
}

fn random_hex() -> String {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the operating system's random source");
    hex(&bytes)
}

fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::request_engine::tests::{session, FakePage};

    fn suspend(calls: &SuspendedCalls, states: &RequestStates, page: &Arc<PageSession>) -> String {
        let call = page.prepare_call("ask", json!({}), None, None).unwrap();
        let running = RunningCall::start(page.clone(), call, 4);
        calls.suspend(
            states,
            running,
            page.id().to_owned(),
            "ask".into(),
            "digest".into(),
            arguments_digest(&json!({})),
            1,
            RequestId::Number(1),
            Map::new(),
            Map::new(),
        )
    }

    #[tokio::test]
    async fn a_state_resumes_its_call_once_and_a_tampered_one_never() {
        let page = session();
        let _page = FakePage::connect(&page);
        let (calls, states) = (SuspendedCalls::default(), RequestStates::default());
        let state = suspend(&calls, &states, &page);
        let tampered = format!("{state}-TAMPERED");
        let error = calls.take(&states, &tampered, page.id()).err().unwrap();
        assert!(error.contains("integrity check failed"), "{error}");
        let mut flipped = state.clone().into_bytes();
        flipped[5] = if flipped[5] == b'0' { b'1' } else { b'0' };
        let flipped = String::from_utf8(flipped).unwrap();
        assert!(calls.take(&states, &flipped, page.id()).is_err());
        let other = RequestStates::default();
        assert!(
            calls.take(&other, &state, page.id()).is_err(),
            "another bridge's key"
        );
        assert!(calls.take(&states, &state, "another-page").is_err());

        let (key, suspended) = calls.take(&states, &state, page.id()).unwrap();
        assert_eq!(calls.len(), 0);
        let again = calls.take(&states, &state, page.id()).err().unwrap();
        assert!(again.contains("already used"), "{again}");
        // Kept again (asked again for missing answers, or the next round): a new state.
        let next = calls.keep(&states, key, suspended);
        assert_ne!(next, state);
        assert!(calls.take(&states, &state, page.id()).is_err());
        assert!(calls.take(&states, &next, page.id()).is_ok());
    }

    #[tokio::test]
    async fn suspended_calls_are_bounded_the_oldest_forgotten_first() {
        let page = crate::request_engine::tests::session_with(crate::Limits {
            max_pending_per_session: MAX_SUSPENDED + 8,
            ..Default::default()
        });
        let _page = FakePage::connect(&page);
        let (calls, states) = (SuspendedCalls::default(), RequestStates::default());
        let first = suspend(&calls, &states, &page);
        for _ in 0..MAX_SUSPENDED {
            suspend(&calls, &states, &page);
        }
        assert_eq!(calls.len(), MAX_SUSPENDED);
        assert!(calls.take(&states, &first, page.id()).is_err());
    }
}
