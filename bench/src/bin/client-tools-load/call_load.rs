//! Tool calls as a runtime makes them: `POST /api/sessions/{id}/call` over `concurrency` keep-alive
//! HTTP connections, one call in flight on each, sessions taken round-robin so that every page
//! answers its share.
//!
//! A call counts as a success only when the result is the page's echo of *that* call's arguments:
//! an error result, an HTTP failure or someone else's answer is an error.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use client_tools_core::protocol::CallToolResult;
use serde_json::{json, Value};
use tokio::task::JoinSet;

use crate::simulated_page::TOOL_NAME;

/// The page answers at once; this only bounds a stuck call (it then counts as an error).
const CALL_TIMEOUT_MS: u64 = 10_000;
/// Error messages kept per run, to say what went wrong.
const ERROR_SAMPLES: usize = 5;

#[derive(Debug, Default)]
pub struct CallLoad {
    pub calls: u64,
    pub errors: u64,
    /// From the first call sent to the last result received (calls in flight at the deadline
    /// finish: every call ends with a result).
    pub elapsed: Duration,
    /// One per call, errors included.
    pub latencies_us: Vec<u64>,
    pub error_samples: Vec<String>,
}

/// The call URL of a target: a session id (`/api/sessions/{id}/call`), or a path under `/api/`
/// (`sessions/{id}`, `users/{sub}`: a user's tab, SPEC §13).
fn target_url(base_url: &str, target: &str) -> String {
    match target.contains('/') {
        true => format!("{base_url}/api/{target}/call"),
        false => format!("{base_url}/api/sessions/{target}/call"),
    }
}

/// Calls `echo` on `sessions` (the ids the bridge gave the pages, or `users/{sub}`), round-robin,
/// for `duration`.
pub async fn drive(
    http: &reqwest::Client,
    base_url: &str,
    sessions: Arc<[String]>,
    concurrency: usize,
    duration: Duration,
    payload_bytes: usize,
) -> CallLoad {
    if sessions.is_empty() {
        return CallLoad {
            errors: 1,
            error_samples: vec!["no session to call".into()],
            ..CallLoad::default()
        };
    }
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let deadline = started + duration;
    let mut workers = JoinSet::new();
    for _ in 0..concurrency.max(1) {
        let http = http.clone();
        let base_url = base_url.to_owned();
        let next = next.clone();
        let sessions = sessions.clone();
        workers.spawn(async move {
            let mut tally = CallLoad::default();
            while Instant::now() < deadline {
                let n = next.fetch_add(1, Ordering::Relaxed);
                let session = &sessions[n % sessions.len()];
                let url = target_url(&base_url, session);
                let arguments = arguments(n, payload_bytes);
                let sent = Instant::now();
                let outcome = call(&http, &url, &arguments).await;
                tally.latencies_us.push(sent.elapsed().as_micros() as u64);
                tally.calls += 1;
                if let Err(error) = outcome {
                    tally.errors += 1;
                    if tally.error_samples.len() < ERROR_SAMPLES {
                        tally.error_samples.push(format!("{session}: {error}"));
                    }
                }
            }
            tally
        });
    }
    let mut total = CallLoad::default();
    while let Some(joined) = workers.join_next().await {
        let tally = joined.unwrap_or_else(|error| CallLoad {
            errors: 1,
            error_samples: vec![format!("a call worker failed: {error}")],
            ..CallLoad::default()
        });
        total.calls += tally.calls;
        total.errors += tally.errors;
        total.latencies_us.extend(tally.latencies_us);
        let room = ERROR_SAMPLES.saturating_sub(total.error_samples.len());
        total
            .error_samples
            .extend(tally.error_samples.into_iter().take(room));
    }
    total.elapsed = started.elapsed();
    total
}

/// One call; `Ok` only for the echo of `arguments`.
async fn call(http: &reqwest::Client, url: &str, arguments: &Value) -> Result<(), String> {
    let body = json!({ "name": TOOL_NAME, "arguments": arguments, "timeoutMs": CALL_TIMEOUT_MS });
    let response = http
        .post(url)
        .json(&body)
        .send()
        .await
        .map_err(|e| format!("request failed: {e}"))?;
    let status = response.status();
    let bytes = response
        .bytes()
        .await
        .map_err(|e| format!("reading the response: {e}"))?;
    if !status.is_success() {
        return Err(format!(
            "HTTP {status}: {}",
            String::from_utf8_lossy(&bytes)
        ));
    }
    let result: CallToolResult =
        serde_json::from_slice(&bytes).map_err(|e| format!("not a tool result: {e}"))?;
    if result.is_error {
        return Err(format!("error result: {}", result.text()));
    }
    if result.structured_content.as_ref() != Some(arguments) {
        return Err(format!(
            "the result is not the echo of this call's arguments: {}",
            String::from_utf8_lossy(&bytes)
        ));
    }
    Ok(())
}

/// `{"text": "<n>xxx…"}`, `payload_bytes` long as JSON (longer only when `n` does not fit): the
/// number makes every call's echo distinguishable from another's.
fn arguments(n: usize, payload_bytes: usize) -> Value {
    const ENVELOPE: usize = r#"{"text":""}"#.len();
    let mut text = format!("{n:012}-");
    let wanted = payload_bytes.saturating_sub(ENVELOPE);
    if text.len() < wanted {
        text.extend(std::iter::repeat_n('x', wanted - text.len()));
    }
    json!({ "text": text })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_have_the_requested_size() {
        assert_eq!(arguments(7, 100).to_string().len(), 100);
        assert_ne!(arguments(7, 100), arguments(8, 100));
        assert!(arguments(7, 0).to_string().contains("000000000007"));
    }
}
