//! [`Bridge`]: the sessions of all pages, and the HTTP server around them.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::routing::{get, post};
use axum::serve::ListenerExt;
use axum::Router;
use tokio::net::TcpListener;

use crate::auth;
use crate::cluster::{Cluster, ClusterOptions};
use crate::config::BridgeConfig;
use crate::confirm::RequestStates;
use crate::guard::Guard;
use crate::routes::{agent, api, page, site};
use crate::session::{PageSession, SessionInfo};
use crate::sessions::{Claimed, Refused, Sessions};
use client_tools_core::connect::ConnectParams;

/// Cheap to clone: all clones share the same sessions.
#[derive(Clone)]
pub struct Bridge {
    inner: Arc<Inner>,
}

struct Inner {
    config: BridgeConfig,
    sessions: Arc<Sessions>,
    /// The key and spent list of the agent-side confirmation's `requestState`s (2026-07-28).
    request_states: RequestStates,
    /// Set once the bridge joined a cluster ([`Bridge::join_cluster`]).
    cluster: OnceLock<Arc<Cluster>>,
}

impl Bridge {
    pub fn new(config: BridgeConfig) -> Self {
        let sessions = Sessions::new(
            config.limits.clone(),
            config.allow.clone(),
            config.log_payloads,
        )
        .with_agent_tools(config.tools.clone(), config.timeout);
        Self {
            inner: Arc::new(Inner {
                config,
                sessions: Arc::new(sessions),
                request_states: RequestStates::default(),
                cluster: OnceLock::new(),
            }),
        }
    }

    pub fn config(&self) -> &BridgeConfig {
        &self.inner.config
    }

    /// Every route: [`Self::page_router`], [`Self::agent_router`] and [`Self::site_router`], all
    /// behind the `Host` check (DNS rebinding).
    pub fn router(&self) -> Router {
        self.page_router()
            .merge(self.agent_router())
            .merge(self.site_router())
    }

    /// `GET /ws`: where pages connect (`Origin`, page token, connection limit).
    pub fn page_router(&self) -> Router {
        self.guarded(Router::new().route("/ws", get(page::upgrade)))
    }

    /// `/mcp` and `/api/…`: what agents call (same-origin browsers only, agent token).
    pub fn agent_router(&self) -> Router {
        let routes = Router::new()
            .nest_service("/mcp", agent::mcp_service(self))
            .route("/api/sessions", get(api::list_sessions))
            .route("/api/sessions/{id}/call", post(api::call_tool))
            .route_layer(Guard::new(self, auth::require_agent));
        self.guarded(routes)
    }

    /// `/pkg/…` (the built package) and `/` (the `--www` site, the demo by default).
    pub fn site_router(&self) -> Router {
        let config = self.config();
        self.guarded(site::router(&config.pkg_dir, &config.www_dir))
    }

    fn guarded(&self, routes: Router<Bridge>) -> Router {
        routes
            .layer(Guard::new(self, auth::require_known_host))
            .with_state(self.clone())
    }

    /// Serves until the process ends (TCP_NODELAY on: tool calls are small, latency matters).
    pub async fn serve(&self, listener: TcpListener) -> std::io::Result<()> {
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        axum::serve(listener, self.router()).await
    }

    pub(crate) fn request_states(&self) -> &RequestStates {
        &self.inner.request_states
    }

    pub(crate) fn table(&self) -> &Arc<Sessions> {
        &self.inner.sessions
    }

    /// Joins the cluster on NATS (SPEC §9 *Cluster*, `--nats URL`): from now on this bridge's
    /// pages are reachable from every node, and every node's pages from here. Call it before
    /// serving; a second call is refused.
    pub async fn join_cluster(&self, options: &ClusterOptions) -> Result<(), String> {
        if self.inner.cluster.get().is_some() {
            return Err("this bridge is in a cluster already".to_owned());
        }
        let cluster = Cluster::join(options, self.config(), self.table().clone()).await?;
        self.inner
            .cluster
            .set(cluster)
            .map_err(|_| "this bridge is in a cluster already".to_owned())
    }

    /// This node's id in the cluster, when it joined one.
    pub fn cluster_node(&self) -> Option<&str> {
        self.cluster().map(|cluster| cluster.node())
    }

    pub(crate) fn cluster(&self) -> Option<&Arc<Cluster>> {
        self.inner.cluster.get()
    }

    /// A page's connect (crate::sessions; in a cluster, crate::cluster).
    pub(crate) async fn claim(&self, params: &ConnectParams) -> Result<Claimed, Refused> {
        match self.cluster() {
            Some(cluster) => cluster.claim(params).await,
            None => self.table().claim(params, false).await,
        }
    }

    /// The session with this id (not expired). In a cluster, a page connected to another node
    /// too: its session here is linked to that node.
    pub fn session(&self, id: &str) -> Option<Arc<PageSession>> {
        match self.cluster() {
            Some(cluster) => cluster.session(id),
            None => self.table().get(id),
        }
    }

    /// The most recently connected page that is connected now (in a cluster: on any node).
    pub fn newest_session(&self) -> Option<Arc<PageSession>> {
        match self.cluster() {
            Some(cluster) => cluster.newest(),
            None => self.table().newest(),
        }
    }

    /// Every session of this bridge, connected ones first, most recently connected first.
    pub fn sessions(&self) -> Vec<Arc<PageSession>> {
        self.table().list()
    }

    /// What `GET /api/sessions` lists: [`Self::sessions`], and in a cluster every node's.
    pub fn session_infos(&self) -> Vec<SessionInfo> {
        match self.cluster() {
            Some(cluster) => cluster.infos(),
            None => self.sessions().iter().map(|s| s.info()).collect(),
        }
    }

    /// Page connections open now.
    pub fn connections(&self) -> usize {
        self.table().connections()
    }

    /// Waits until some page is connected and lists at least one tool.
    pub async fn wait_for_page(&self, timeout: Duration) -> Option<Arc<PageSession>> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Some(session) = self.newest_session() {
                if !session.tools().is_empty() {
                    return Some(session);
                }
            }
            if tokio::time::Instant::now() >= deadline {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}
