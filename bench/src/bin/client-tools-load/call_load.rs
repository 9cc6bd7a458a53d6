//! Tool calls as a runtime makes them: `POST /api/sessions/{id}/call` over `concurrency` keep-alive
//! HTTP connections, one call in flight on each, sessions taken round-robin so that every page
//! answers its share. Or as an MCP agent makes them ([`Target::Mcp`], `--token-bench`): a stateless
//! 2026-07-28 `tools/call` on `POST /mcp`, so the two agent routes are measured the same way.
//!
//! A call counts as a success only when the result is the page's echo of *that* call's arguments:
//! an error result, an HTTP failure or someone else's answer is an error.

use std::fmt;
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

/// The MCP revision of [`Target::Mcp`]'s calls: the stateless one (no `initialize`, no MCP
/// session), so every call is one HTTP request, as on `/api`, and nothing but the route differs.
const MCP_REVISION: &str = "2026-07-28";

/// Where a call goes and how.
pub enum Target {
    /// `POST /api/{path}/call`: `path` a session id (`/api/sessions/{id}/call`), or a path under
    /// `/api/` (`sessions/{id}`, `users/{sub}`: a user's tab, SPEC §13).
    Api(String),
    /// A `tools/call` on `POST /mcp{query}` (`?session={id}`, `?user={sub}` or nothing), with
    /// `bearer` instead of the client's own token when given: a signed agent token binds the call
    /// to its user's tabs with no query at all.
    Mcp {
        query: String,
        bearer: Option<String>,
    },
}

impl fmt::Display for Target {
    /// What an error sample names: the path, not the token.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Api(path) => write!(f, "/api/{path}"),
            Target::Mcp { query, bearer } => {
                let signed = if bearer.is_some() {
                    " (signed token)"
                } else {
                    ""
                };
                write!(f, "/mcp{query}{signed}")
            }
        }
    }
}

/// The call URL of an [`Target::Api`] path.
fn api_url(base_url: &str, target: &str) -> String {
    match target.contains('/') {
        true => format!("{base_url}/api/{target}/call"),
        false => format!("{base_url}/api/sessions/{target}/call"),
    }
}

/// Calls `echo` on `sessions` (the ids the bridge gave the pages, or `users/{sub}`) through `/api`,
/// round-robin, for `duration`.
pub async fn drive(
    http: &reqwest::Client,
    base_url: &str,
    sessions: Arc<[String]>,
    concurrency: usize,
    duration: Duration,
    payload_bytes: usize,
) -> CallLoad {
    let targets = sessions.iter().cloned().map(Target::Api).collect();
    drive_targets(
        http,
        base_url,
        targets,
        concurrency,
        duration,
        payload_bytes,
    )
    .await
}

/// [`drive`] to any [`Target`]s, round-robin.
pub async fn drive_targets(
    http: &reqwest::Client,
    base_url: &str,
    targets: Arc<[Target]>,
    concurrency: usize,
    duration: Duration,
    payload_bytes: usize,
) -> CallLoad {
    if targets.is_empty() {
        return CallLoad {
            errors: 1,
            error_samples: vec!["no target to call".into()],
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
        let targets = targets.clone();
        workers.spawn(async move {
            let mut tally = CallLoad::default();
            while Instant::now() < deadline {
                let n = next.fetch_add(1, Ordering::Relaxed);
                let target = &targets[n % targets.len()];
                let arguments = arguments(n, payload_bytes);
                let sent = Instant::now();
                let outcome = match target {
                    Target::Api(path) => call(&http, &api_url(&base_url, path), &arguments).await,
                    Target::Mcp { query, bearer } => {
                        let url = format!("{base_url}/mcp{query}");
                        mcp_call(&http, &url, bearer.as_deref(), &arguments).await
                    }
                };
                tally.latencies_us.push(sent.elapsed().as_micros() as u64);
                tally.calls += 1;
                if let Err(error) = outcome {
                    tally.errors += 1;
                    if tally.error_samples.len() < ERROR_SAMPLES {
                        tally.error_samples.push(format!("{target}: {error}"));
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
    echoed(result, arguments, &bytes)
}

/// One `tools/call` as a stateless MCP client sends it (2026-07-28: the revision and the client's
/// capabilities in `_meta`, the method and tool in headers, as tests/e2e's `mcp()`); `Ok` only
/// for the echo of `arguments`.
async fn mcp_call(
    http: &reqwest::Client,
    url: &str,
    bearer: Option<&str>,
    arguments: &Value,
) -> Result<(), String> {
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {
            "name": TOOL_NAME, "arguments": arguments,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": MCP_REVISION,
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    });
    let mut request = http
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", MCP_REVISION)
        .header("mcp-method", "tools/call")
        .header("mcp-name", TOOL_NAME)
        .json(&body);
    // The request's own `Authorization` wins over the client's default one (the operator's).
    if let Some(bearer) = bearer {
        request = request.bearer_auth(bearer);
    }
    let response = request
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
    let answer = mcp_answer(&bytes)
        .ok_or_else(|| format!("no JSON-RPC answer in {}", String::from_utf8_lossy(&bytes)))?;
    if let Some(error) = answer.get("error") {
        return Err(format!("JSON-RPC error: {error}"));
    }
    let result: CallToolResult = serde_json::from_value(answer["result"].clone())
        .map_err(|e| format!("not a tool result: {e}"))?;
    echoed(result, arguments, &bytes)
}

/// The JSON-RPC answer (the message with an `id`) in an MCP response: the body itself (JSON), or
/// one of its SSE events' `data:` lines (rmcp may stream a call's answer).
fn mcp_answer(bytes: &[u8]) -> Option<Value> {
    let text = std::str::from_utf8(bytes).ok()?;
    text.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .chain(std::iter::once(text))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(|message| message.get("id").is_some())
}

/// `Ok` when `result` is the page's echo of `arguments` (`bytes`: the answer, for the error).
fn echoed(result: CallToolResult, arguments: &Value, bytes: &[u8]) -> Result<(), String> {
    if result.is_error {
        return Err(format!("error result: {}", result.text()));
    }
    if result.structured_content.as_ref() != Some(arguments) {
        return Err(format!(
            "the result is not the echo of this call's arguments: {}",
            String::from_utf8_lossy(bytes)
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

    #[test]
    fn an_mcp_answer_is_read_from_json_or_sse() {
        let json = br#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#;
        assert_eq!(mcp_answer(json).unwrap()["id"], 1);
        let sse = b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n\
                    event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n";
        assert_eq!(mcp_answer(sse).unwrap()["id"], 1);
        assert!(mcp_answer(b"event: message\n\n").is_none());
    }
}
