//! [`Bridge`]: the sessions of all pages, and the HTTP server around them.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::serve::ListenerExt;
use axum::Router;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tower_http::services::ServeDir;

use crate::config::BridgeConfig;
use crate::mcp::McpAgent;
use crate::session::PageSession;
use crate::{http_api, page_socket};

/// Cheap to clone: all clones share the same sessions.
#[derive(Clone)]
pub struct Bridge {
    inner: Arc<Inner>,
}

struct Inner {
    config: BridgeConfig,
    sessions: Mutex<Sessions>,
    next_id: AtomicU64,
}

/// Sessions by id, with the order in which they (re)connected: the last is the newest.
type Sessions = (HashMap<String, Arc<PageSession>>, Vec<String>);

impl Bridge {
    pub fn new(config: BridgeConfig) -> Self {
        Self {
            inner: Arc::new(Inner {
                config,
                sessions: Mutex::new((HashMap::new(), Vec::new())),
                next_id: AtomicU64::new(1),
            }),
        }
    }

    pub fn config(&self) -> &BridgeConfig {
        &self.inner.config
    }

    /// All routes: `/ws`, `/mcp`, `/api/…`, `/pkg/…` and the site at `/`.
    pub fn router(&self) -> Router {
        let config = self.config();
        let agents = Router::new()
            .nest_service("/mcp", self.mcp_service())
            .route_layer(middleware::from_fn_with_state(
                self.clone(),
                require_agent_token,
            ));
        Router::new()
            .merge(agents)
            .route("/ws", get(page_socket::upgrade))
            .route("/api/sessions", get(http_api::list_sessions))
            .route("/api/sessions/{id}/call", post(http_api::call_tool))
            .nest_service("/pkg", ServeDir::new(&config.pkg_dir))
            .fallback_service(ServeDir::new(&config.www_dir))
            .with_state(self.clone())
    }

    /// Serves until the process ends (TCP_NODELAY on: tool calls are small, latency matters).
    pub async fn serve(&self, listener: TcpListener) -> std::io::Result<()> {
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        axum::serve(listener, self.router()).await
    }

    /// MCP Streamable HTTP for agents: one [`McpAgent`] per MCP session, bound to the page session
    /// named by `?session=<id>` (else the newest page).
    fn mcp_service(&self) -> StreamableHttpService<McpAgent, LocalSessionManager> {
        let bridge = self.clone();
        let listen_ip = self.config().listen.ip();
        let mut config = StreamableHttpServerConfig::default();
        // rmcp refuses unknown `Host` headers (DNS rebinding). Loopback names always work; a
        // specific listen address is added; on a wildcard address the host cannot be known.
        if listen_ip.is_unspecified() {
            config = config.disable_allowed_hosts();
        } else {
            let listen_host = listen_ip.to_string();
            config =
                config.with_allowed_hosts(["localhost", "127.0.0.1", "::1", listen_host.as_str()]);
        }
        StreamableHttpService::new(
            move || Ok(McpAgent::new(bridge.clone(), None)),
            Arc::new(LocalSessionManager::default()),
            config,
        )
    }

    pub fn session(&self, id: &str) -> Option<Arc<PageSession>> {
        self.lock().0.get(id).cloned()
    }

    /// The session that connected last and is still connected, else the last one seen.
    pub fn newest_session(&self) -> Option<Arc<PageSession>> {
        let sessions = self.lock();
        let ordered = sessions.1.iter().rev().filter_map(|id| sessions.0.get(id));
        let all: Vec<_> = ordered.cloned().collect();
        all.iter()
            .find(|s| s.is_connected())
            .or(all.first())
            .cloned()
    }

    /// Every session, newest first.
    pub fn sessions(&self) -> Vec<Arc<PageSession>> {
        let sessions = self.lock();
        sessions
            .1
            .iter()
            .rev()
            .filter_map(|id| sessions.0.get(id).cloned())
            .collect()
    }

    /// Waits until some page is connected and lists at least one tool.
    pub async fn wait_for_page(&self, timeout: Duration) -> Option<Arc<PageSession>> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Some(session) = self.newest_session() {
                if session.is_connected() && !session.tools().is_empty() {
                    return Some(session);
                }
            }
            if tokio::time::Instant::now() >= deadline {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub fn session_or_create(&self, id: &str) -> Arc<PageSession> {
        let mut sessions = self.lock();
        let session = sessions
            .0
            .entry(id.to_owned())
            .or_insert_with(|| {
                Arc::new(PageSession::new(id.to_owned(), self.config().allow.clone()))
            })
            .clone();
        sessions.1.retain(|existing| existing != id);
        sessions.1.push(id.to_owned());
        session
    }

    pub(crate) fn new_session_id(&self) -> String {
        let n = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        format!("bridge-{n}")
    }

    /// Pages may connect from the configured origins; by default from loopback origins (and from
    /// non-browser clients, which send no `Origin`).
    pub(crate) fn origin_allowed(&self, origin: Option<&str>) -> bool {
        let allowed = &self.config().allowed_origins;
        match origin {
            None => allowed.is_empty(),
            Some(origin) if allowed.is_empty() => is_loopback_origin(origin),
            Some(origin) => allowed.iter().any(|a| a == origin || a == "*"),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Sessions> {
        self.inner
            .sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }
}

/// With `--token`, agents must send `Authorization: Bearer <token>`: `401` otherwise.
async fn require_agent_token(
    State(bridge): State<Bridge>,
    request: Request,
    next: Next,
) -> Response {
    let Some(expected) = &bridge.config().token else {
        return next.run(request).await;
    };
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    if presented == Some(expected.as_str()) {
        return next.run(request).await;
    }
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, "Bearer")],
        "missing or wrong bearer token",
    )
        .into_response()
}

fn is_loopback_origin(origin: &str) -> bool {
    let Some(rest) = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
    else {
        return false;
    };
    let host = match rest.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => rest.split(':').next().unwrap_or(""),
    };
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_origins() {
        assert!(is_loopback_origin("http://127.0.0.1:8787"));
        assert!(is_loopback_origin("http://localhost"));
        assert!(is_loopback_origin("http://[::1]:80"));
        assert!(!is_loopback_origin("http://127.example.com.evil"));
        assert!(!is_loopback_origin("https://example.com"));
        assert!(!is_loopback_origin("null"));
    }
}
