//! [`Bridge`]: what every route shares — the configuration, the sessions of all pages (in a
//! cluster, of every node's pages), the agent-side confirmation's keys. It imports no route: the
//! HTTP server that puts the routes around it is server.rs.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::sync::watch;

use crate::agent::request_state::RequestStates;
use crate::agent::rounds::{self, AgentSide, Driven, Retry, Rounds};
use crate::agent::task_book::Refusal;
use crate::agent::tasks::{self, TaskHostOf, TaskOp, Tasks};
use crate::cluster::{Cluster, ClusterOptions};
use crate::config::BridgeConfig;
use crate::sessions::page_session::{PageSession, SessionInfo};
use crate::sessions::scope::AgentScope;
use crate::sessions::table::{Claimed, Refused, SessionTable};
use client_tools_core::connect::ConnectParams;
use serde_json::Value;

/// Cheap to clone: all clones share the same sessions.
#[derive(Clone)]
pub struct Bridge {
    inner: Arc<Inner>,
}

struct Inner {
    config: BridgeConfig,
    sessions: Arc<SessionTable>,
    /// Page calls waiting for a caller's retry with its answers (2026-07-28 and `/api`,
    /// crate::agent::rounds), and the key and spent list of every `requestState` (the agent-side
    /// confirmation's too).
    rounds: Arc<Rounds>,
    /// The calls that became MCP tasks on this node (crate::agent::tasks).
    tasks: Arc<Tasks>,
    /// Set once the bridge joined a cluster ([`Bridge::join_cluster`]).
    cluster: OnceLock<Arc<Cluster>>,
}

impl Bridge {
    pub fn new(config: BridgeConfig) -> Self {
        let sessions = SessionTable::new(
            config.limits.clone(),
            config.allow.clone(),
            config.log_payloads,
        )
        .with_agent_tools(config.tools.clone(), config.timeout)
        .with_policy(config.policy.clone());
        let rounds = Arc::new(Rounds::default());
        let tasks = Arc::new(Tasks::default());
        rounds.set_tasks(Arc::new(TaskHostOf(tasks.clone())));
        Self {
            inner: Arc::new(Inner {
                config,
                sessions: Arc::new(sessions),
                rounds,
                tasks,
                cluster: OnceLock::new(),
            }),
        }
    }

    pub(crate) fn tasks(&self) -> &Arc<Tasks> {
        &self.inner.tasks
    }

    /// `tasks/get`, `tasks/update` or `tasks/cancel` of a caller bound to `page_session`, on the
    /// node that keeps the task (in a cluster, the one its id names, reached through NATS).
    pub(crate) async fn task(&self, op: TaskOp, page_session: &str) -> Result<Value, Refusal> {
        let holder = tasks::holder_of(op.task_id()).map(str::to_owned);
        if let (Some(cluster), Some(holder)) = (self.cluster(), holder) {
            if holder != cluster.node() {
                return cluster.relay_task(&holder, op, page_session).await;
            }
        }
        op.apply(self.tasks(), page_session)
    }

    pub fn config(&self) -> &BridgeConfig {
        &self.inner.config
    }

    pub(crate) fn request_states(&self) -> &RequestStates {
        &self.inner.rounds.states
    }

    pub(crate) fn rounds(&self) -> &Rounds {
        &self.inner.rounds
    }

    /// A caller's retry of a suspended call (crate::agent::rounds::resume), on whichever node
    /// keeps the call: in a cluster, the node its state names, reached through NATS.
    pub(crate) async fn resume_round(&self, retry: Retry, agent: &dyn AgentSide) -> Driven {
        if let (Some(cluster), Some(holder)) = (self.cluster(), rounds::holder(&retry.state)) {
            if holder != cluster.node() {
                return cluster.relay_retry(&holder, retry, agent).await;
            }
        }
        rounds::resume(self.rounds(), retry, agent).await
    }

    /// A retry of a suspended served request (a prompt, a resource read, a completion: SPEC §11),
    /// on whichever node keeps the request, as [`Self::resume_round`] resumes a tool call's.
    pub(crate) async fn resume_served(&self, retry: Retry, agent: &dyn AgentSide) -> Driven<Value> {
        if let (Some(cluster), Some(holder)) = (self.cluster(), rounds::holder(&retry.state)) {
            if holder != cluster.node() {
                return cluster.relay_retry(&holder, retry, agent).await;
            }
        }
        rounds::resume(self.rounds(), retry, agent).await
    }

    pub(crate) fn table(&self) -> &Arc<SessionTable> {
        &self.inner.sessions
    }

    /// Joins the cluster on NATS (SPEC §9 *Cluster*, `--nats URL`): from now on this bridge's
    /// pages are reachable from every node, and every node's pages from here. Call it before
    /// serving; a second call is refused.
    pub async fn join_cluster(&self, options: &ClusterOptions) -> Result<(), String> {
        if self.inner.cluster.get().is_some() {
            return Err("this bridge is in a cluster already".to_owned());
        }
        let cluster = Cluster::join(
            options,
            self.config(),
            self.table().clone(),
            self.inner.rounds.clone(),
            self.inner.tasks.clone(),
        )
        .await?;
        self.inner.rounds.set_node(cluster.node());
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

    /// A page's connect (crate::sessions::table; in a cluster, crate::cluster), by `user` when its
    /// signed token named one.
    pub(crate) async fn claim(
        &self,
        params: &ConnectParams,
        user: Option<&str>,
    ) -> Result<Claimed, Refused> {
        match self.cluster() {
            Some(cluster) => cluster.claim(params, user).await,
            None => self.table().claim(params, user, false).await,
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

    /// The session `id` if an agent of `scope` reaches it; another user's is unknown (SPEC §13).
    pub fn session_for(&self, scope: &AgentScope, id: &str) -> Option<Arc<PageSession>> {
        self.session(id).filter(|session| scope.reaches(session))
    }

    /// The most recently connected live page an agent of `scope` reaches.
    pub fn newest_session_for(&self, scope: &AgentScope) -> Option<Arc<PageSession>> {
        match scope.user() {
            None => self.newest_session(),
            Some(user) => self
                .user_pages(user)
                .into_iter()
                .filter_map(|page| Some((page.connected_at()?, page)))
                .max_by_key(|(at, _)| *at)
                .map(|(_, page)| page),
        }
    }

    /// The connected pages of `user` (SPEC §13: a user's tabs), on every node.
    pub fn user_pages(&self, user: &str) -> Vec<Arc<PageSession>> {
        match self.cluster() {
            Some(cluster) => cluster.user_pages(user),
            None => {
                let mut pages = self.table().of_user(user);
                pages.retain(|page| page.is_connected());
                pages
            }
        }
    }

    /// What `GET /api/sessions` lists to an agent of `scope`.
    pub fn session_infos_for(&self, scope: &AgentScope) -> Vec<SessionInfo> {
        let mut infos = self.session_infos();
        infos.retain(|info| scope.reaches_user(info.user.as_deref()));
        infos
    }

    /// Fetches the signed tokens' key set again from `--token-jwks-url` (if due: at most once a
    /// minute, crate::tokens): a token named a key the bridge does not have.
    pub(crate) async fn refetch_token_keys(&self) {
        if let Some(keys) = &self.config().token_keys {
            keys.refetch_if_due(crate::ids::now_unix_ms()).await;
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

    /// A receiver that changes whenever a page session's tools or connection change, on this node
    /// or (in a cluster) on any: what waits for a page wakes on it instead of polling.
    pub fn watch_pages(&self) -> watch::Receiver<u64> {
        self.table().watch()
    }

    /// Waits until some page is connected and lists at least one tool.
    pub async fn wait_for_page(&self, timeout: Duration) -> Option<Arc<PageSession>> {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut changes = self.watch_pages();
        loop {
            if let Some(session) = self.newest_session() {
                if !session.tools().is_empty() {
                    return Some(session);
                }
            }
            tokio::select! {
                changed = changes.changed() => changed.ok()?,
                () = tokio::time::sleep_until(deadline) => return None,
            }
        }
    }
}
