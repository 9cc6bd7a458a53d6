//! Many bridge nodes, one set of page sessions (SPEC §9 *Cluster*, docs/deploy.md *A cluster*):
//! `--nats URL`. Without it none of this runs.
//!
//! A page session lives on the node that holds its WebSocket ([`owner`]); every other node that
//! needs it — an agent bound to it, an `/api` call — keeps a *linked* session: the same
//! [`PageSession`] with its request engine (timeouts, grace, progress, cancellation, fail-fast),
//! whose connection is not a socket but a [`link`] through NATS to the owner, which relays the
//! frames to its page and routes the page's answers back. So the call lifecycle is the same code on
//! every node. When the page reconnects to another node, linked sessions follow the
//! [`directory`]: their link moves to the new owner and their waiting calls are sent again with
//! their ids — the page's ledger runs each at most once.
//!
//! The files, from the bottom: [`wire`] (the subjects and messages), [`directory`] (where each
//! page is), [`node`] (the [`Cluster`] and its state, which every part works on), then the parts
//! — [`link`], [`owner`], [`subscriptions`] (resource subscriptions of agents on other nodes,
//! and the page's updates sent to them), [`rounds`] (retries carried to the node keeping their
//! call, a tool call's or a served request's), [`tasks`] (tasks read on the node keeping them)
//! — each adding to `Cluster` what it does. This file joins the cluster, starts the parts'
//! receivers and answers the bridge's lookups; no file imports one above it, so none imports
//! another in a circle (tests/module_graph.rs).

mod directory;
mod link;
mod node;
mod owner;
mod rounds;
mod subscriptions;
mod tasks;
mod wire;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use client_tools_core::connect::ConnectParams;
use futures_util::StreamExt;
use sha2::{Digest, Sha256};
use tokio::sync::mpsc;

use crate::agent::rounds::Rounds;
use crate::agent::tasks::Tasks;
use crate::config::BridgeConfig;
use crate::ids::{hex, random_hex, unix_ms};
use crate::limits::{
    ANNOUNCE_BEATS, CLAIM_ANSWER_SLACK, DIRECTORY_PER_NODE_SESSIONS, HEARTBEAT_INTERVAL,
    LINK_SWEEP_BEATS, NATS_CONNECT_TIMEOUT, NATS_EVENTS_BUFFER,
};
use crate::sessions::page_session::{visible_tools, PageSession, SessionInfo, Via};
use crate::sessions::table::{self, Claimed, Refused, SessionTable};
use directory::Directory;
pub(crate) use node::Cluster;
use node::{Driving, Subscribers};
use wire::{Entry, Heartbeat, Hello, Outbound, Publisher};

/// How to reach NATS (`--nats URL` and its credentials). `Debug` never shows a secret.
#[derive(Clone, Default)]
pub struct ClusterOptions {
    /// `nats://host:port` (or `tls://…`); several servers separated by commas.
    pub url: String,
    /// A NATS credentials file (JWT and NKey seed).
    pub creds_file: Option<PathBuf>,
    /// A NATS token.
    pub token: Option<String>,
    /// NATS user and password.
    pub user: Option<String>,
    pub password: Option<String>,
    /// A CA certificate (PEM) to trust for the NATS server's TLS certificate.
    pub ca_file: Option<PathBuf>,
}

impl std::fmt::Debug for ClusterOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let set = |secret: &Option<String>| secret.as_ref().map(|_| "<redacted>");
        f.debug_struct("ClusterOptions")
            .field("url", &self.url)
            .field("creds_file", &self.creds_file)
            .field("token", &set(&self.token))
            .field("user", &self.user)
            .field("password", &set(&self.password))
            .field("ca_file", &self.ca_file)
            .finish()
    }
}

impl Cluster {
    /// Connects to NATS, subscribes to what the node serves, says hello and starts the node's
    /// tasks. An error names what failed (the URL, the credentials).
    pub(crate) async fn join(
        options: &ClusterOptions,
        config: &BridgeConfig,
        sessions: Arc<SessionTable>,
        suspended: Arc<Rounds>,
        tasks: Arc<Tasks>,
    ) -> Result<Arc<Cluster>, String> {
        let node = random_hex(8);
        let (events_tx, events) = mpsc::channel(NATS_EVENTS_BUFFER);
        let mut connect = async_nats::ConnectOptions::new()
            .name(format!("client-tools-bridge {node}"))
            .connection_timeout(NATS_CONNECT_TIMEOUT)
            .event_callback(move |event| {
                let events = events_tx.clone();
                async move {
                    let _ = events.try_send(event);
                }
            });
        if let Some(path) = &options.creds_file {
            connect = connect.credentials_file(path).await.map_err(|error| {
                format!(
                    "cannot read the NATS credentials file {}: {error}",
                    path.display()
                )
            })?;
        }
        if let Some(token) = &options.token {
            connect = connect.token(token.clone());
        }
        match (&options.user, &options.password) {
            (Some(user), Some(password)) => {
                connect = connect.user_and_password(user.clone(), password.clone())
            }
            (None, None) => {}
            _ => return Err("--nats-user and --nats-password go together".to_owned()),
        }
        if let Some(ca) = &options.ca_file {
            connect = connect.add_root_certificates(ca.clone()).require_tls(true);
        }
        let servers: Vec<&str> = options.url.split(',').map(str::trim).collect();
        let client = connect
            .connect(servers)
            .await
            .map_err(|error| format!("cannot connect to NATS at {}: {error}", options.url))?;
        let (publisher, outbound) = Publisher::new();
        sessions.set_relay_replies(Arc::new(publisher.clone()));
        let cluster = Arc::new(Cluster {
            node: node.clone(),
            max_payload: client.server_info().max_payload,
            client,
            publisher,
            policy: policy_of(config),
            sessions: sessions.clone(),
            directory: Mutex::new(Directory::new(
                node.clone(),
                config.limits.session_ttl,
                config
                    .limits
                    .max_sessions
                    .saturating_mul(DIRECTORY_PER_NODE_SESSIONS),
            )),
            links: Mutex::new(HashMap::new()),
            seq: AtomicU64::new(0),
            config: config.clone(),
            rounds: suspended,
            tasks,
            driving: Driving::default(),
            subscribers: Subscribers::default(),
        });
        let subscribe = |subject: String| {
            let client = cluster.client.clone();
            async move {
                client
                    .subscribe(subject.clone())
                    .await
                    .map_err(|error| format!("cannot subscribe to {subject} on NATS: {error}"))
            }
        };
        let inbox = subscribe(wire::node_replies(&node)).await?;
        let frames = subscribe(wire::node_frames(&node)).await?;
        let entries = subscribe(wire::DIRECTORY_SUBJECT.to_owned()).await?;
        let heartbeats = subscribe(wire::HEARTBEAT_SUBJECT.to_owned()).await?;
        let hellos = subscribe(wire::HELLO_SUBJECT.to_owned()).await?;
        let retries = subscribe(wire::node_rounds(&node)).await?;
        let task_requests = subscribe(wire::node_tasks(&node)).await?;
        tokio::spawn(publish(cluster.client.clone(), outbound));
        tokio::spawn(link::receive(cluster.clone(), inbox));
        tokio::spawn(owner::receive(cluster.clone(), frames));
        tokio::spawn(rounds::receive(cluster.clone(), retries));
        tokio::spawn(tasks::receive(cluster.clone(), task_requests));
        tokio::spawn(cluster.clone().watch(entries, heartbeats, hellos, events));
        cluster.say_hello();
        tracing::info!(node = %node, url = %options.url, "joined the cluster");
        Ok(cluster)
    }

    /// Keeps the directory and the links current: entries, heartbeats, hellos, NATS reconnects,
    /// and every [`HEARTBEAT_INTERVAL`] this node's own heartbeat and a look for nodes gone silent.
    async fn watch(
        self: Arc<Self>,
        mut entries: async_nats::Subscriber,
        mut heartbeats: async_nats::Subscriber,
        mut hellos: async_nats::Subscriber,
        mut events: mpsc::Receiver<async_nats::Event>,
    ) {
        let mut ticks = tokio::time::interval(HEARTBEAT_INTERVAL);
        let mut beats = 0u64;
        // Hellos (and a NATS reconnect) ask for this node's pages: answered once per heartbeat.
        let mut announce_due = false;
        loop {
            tokio::select! {
                _ = ticks.tick() => {
                    beats += 1;
                    if announce_due || beats.is_multiple_of(ANNOUNCE_BEATS) {
                        announce_due = false;
                        // In order, behind the heartbeat: a node that just joined trusts us first.
                        self.publisher.send(self.heartbeat());
                        self.announce_all();
                    } else {
                        // Not behind a full queue of relayed answers and announcements.
                        let beat = self.heartbeat();
                        let _ = self.client.publish(beat.subject, beat.payload).await;
                    }
                    let gone = self.directory().sweep(Instant::now());
                    for node in &gone {
                        tracing::warn!(%node, "cluster node gone silent: its pages count as disconnected");
                        self.node_gone(node);
                    }
                    if !gone.is_empty() {
                        self.sessions.changed();
                    }
                    self.retry_refused_links();
                    if beats.is_multiple_of(LINK_SWEEP_BEATS) {
                        self.forget_links_of_forgotten_sessions();
                    }
                }
                Some(message) = entries.next() => {
                    let Ok(entry) = serde_json::from_slice::<Entry>(&message.payload) else { continue };
                    let session = entry.session.clone();
                    if self.directory().update(entry, Instant::now()) {
                        if let Some(session) = self.sessions.get(&session) {
                            self.reconcile(&session);
                        }
                        // Whoever waits for a page (on any node) looks again.
                        self.sessions.changed();
                    }
                }
                Some(message) = heartbeats.next() => {
                    let Ok(beat) = serde_json::from_slice::<Heartbeat>(&message.payload) else { continue };
                    let same = beat.policy == self.policy;
                    let (back, known_different) = {
                        let mut directory = self.directory();
                        let known_different = directory.differs(&beat.node);
                        (directory.heartbeat(&beat.node, same, Instant::now()), known_different)
                    };
                    if !same && !known_different && beat.node != self.node {
                        tracing::error!(node = %beat.node, "a cluster node runs with other access settings (tokens, origins, allow-list, policy): it is not served and serves nothing here");
                    }
                    if back {
                        self.reconcile_all();
                    }
                }
                Some(message) = hellos.next() => {
                    let Ok(hello) = serde_json::from_slice::<Hello>(&message.payload) else { continue };
                    if hello.node != self.node {
                        announce_due = true;
                    }
                }
                Some(event) = events.recv() => match event {
                    async_nats::Event::Connected => {
                        tracing::info!("NATS connection back: announcing this node's sessions");
                        self.publisher.send(Outbound::json(wire::HELLO_SUBJECT, &Hello { node: self.node.clone() }));
                        announce_due = true;
                        self.reconcile_all();
                    }
                    async_nats::Event::Disconnected => {
                        tracing::warn!("NATS connection lost: pages on other nodes are unreachable until it is back");
                        self.drop_links(|_| true);
                    }
                    other => tracing::info!(event = %other, "NATS"),
                },
                else => return,
            }
        }
    }

    fn say_hello(&self) {
        self.publisher.send(self.heartbeat());
        let hello = Hello {
            node: self.node.clone(),
        };
        self.publisher
            .send(Outbound::json(wire::HELLO_SUBJECT, &hello));
        self.announce_all();
    }

    fn heartbeat(&self) -> Outbound {
        let beat = Heartbeat {
            node: self.node.clone(),
            policy: self.policy.clone(),
        };
        Outbound::json(wire::HEARTBEAT_SUBJECT, &beat)
    }

    /// A session of this node, or — when another node's page has it — a linked one made for it.
    pub(crate) fn session(&self, id: &str) -> Option<Arc<PageSession>> {
        if let Some(session) = self.sessions.get(id) {
            if session.via().is_none() {
                // Not connected here: maybe it is elsewhere now.
                self.reconcile(&session);
            }
            return Some(session);
        }
        let user = self.directory().user_of(id)?;
        let session = self.sessions.linked(id, user.as_deref()).ok()?;
        self.reconcile(&session);
        Some(session)
    }

    /// The connected pages of `user` anywhere in the cluster (this node's, and a linked session
    /// for each other node's).
    pub(crate) fn user_pages(&self, user: &str) -> Vec<Arc<PageSession>> {
        let mut pages: Vec<Arc<PageSession>> = self.sessions.of_user(user);
        let remote: Vec<String> = {
            let directory = self.directory();
            directory
                .entries(Instant::now())
                .into_iter()
                .filter(|entry| entry.connected && entry.user.as_deref() == Some(user))
                .map(|entry| entry.session)
                .collect()
        };
        for id in remote {
            if pages.iter().any(|page| page.id() == id) {
                continue;
            }
            if let Some(session) = self.session(&id) {
                pages.push(session);
            }
        }
        pages.retain(|page| page.is_connected());
        pages
    }

    /// The most recently connected page anywhere in the cluster.
    pub(crate) fn newest(&self) -> Option<Arc<PageSession>> {
        let local = self.sessions.newest();
        let remote = self.directory().newest(Instant::now()).cloned();
        let Some(remote) = remote else { return local };
        let local_at = local.as_ref().and_then(|s| s.connected_at()).map(unix_ms);
        if local.is_some() && local_at >= remote.connected_at_ms {
            return local;
        }
        self.session(&remote.session).or(local)
    }

    /// Every session known here or anywhere in the cluster, connected ones first, most recently
    /// connected first.
    pub(crate) fn infos(&self) -> Vec<SessionInfo> {
        let mut infos: Vec<SessionInfo> = self
            .sessions
            .list()
            .iter()
            .map(|session| {
                let mut info = session.info();
                info.node = match session.via() {
                    Some(Via::Socket) => Some(self.node.clone()),
                    Some(Via::Node(node)) => Some(node),
                    None => None,
                };
                info
            })
            .collect();
        let here: HashSet<String> = infos.iter().map(|info| info.id.clone()).collect();
        let entries = self.directory().entries(Instant::now());
        for entry in entries {
            if here.contains(&entry.session) {
                continue;
            }
            infos.push(SessionInfo {
                id: entry.session,
                connected: entry.connected,
                connected_at_ms: entry
                    .connected_at_ms
                    .filter(|_| entry.connected)
                    .map(u128::from),
                tools: visible_tools(&self.config.allow, &self.config.tools, &entry.tools),
                user: entry.user,
                node: entry.connected.then_some(entry.node),
            });
        }
        infos.sort_by_key(|info| std::cmp::Reverse(info.connected_at_ms));
        infos
    }

    /// A page's connect, cluster-wide. Unless the page's session is on a socket here, the node
    /// holding it (if any) is asked whether its page still answers there: then this is another
    /// tab (a new session); when that node releases it, or no node serves it (NATS's "no
    /// responders"), this node takes the session over. When nobody can be asked (NATS is away, the
    /// question times out) the newcomer gets a new session: ownership never lapses. A page that
    /// presents its secret is always told `resumed`: it keeps its call ledger, so whatever node
    /// resends its calls, none runs twice (a session nobody had is new anyway, and resuming costs
    /// it nothing).
    pub(crate) async fn claim(
        &self,
        params: &ConnectParams,
        user: Option<&str>,
    ) -> Result<Claimed, Refused> {
        let Some(id) = params
            .resume_secret
            .as_deref()
            .and_then(|secret| table::id_of_secret(secret, user))
        else {
            return self.sessions.claim(params, user, false).await;
        };
        let on_socket_here = self
            .sessions
            .get(&id)
            .is_some_and(|s| s.via() == Some(Via::Socket));
        if !on_socket_here {
            let wait = self.config.limits.takeover_probe + CLAIM_ANSWER_SLACK;
            let asked = self
                .client
                .request(wire::page_claim(&id), bytes::Bytes::new());
            let take_over = match tokio::time::timeout(wait, asked).await {
                Ok(Ok(answer)) => answer.payload.as_ref() == wire::CLAIM_RELEASED.as_bytes(),
                Ok(Err(error)) => error.kind() == async_nats::RequestErrorKind::NoResponders,
                Err(_) => false,
            };
            if !take_over {
                tracing::info!(session = %id, user = user.unwrap_or(""), "resume claim on a session live elsewhere, or nobody to ask: new session");
                return self
                    .sessions
                    .claim(&ConnectParams::default(), user, false)
                    .await;
            }
        }
        self.sessions.claim(params, user, true).await
    }

    /// Starts serving a page whose socket this node just accepted (see [`owner`]).
    pub(crate) fn serve(self: &Arc<Self>, session: Arc<PageSession>, generation: u64) {
        // Subscribed now, not in the task: a disconnect before it runs is not missed.
        let changes = session.subscribe();
        tokio::spawn(owner::serve(self.clone(), session, generation, changes));
    }
}

/// Puts the queued messages on NATS, in order.
async fn publish(client: async_nats::Client, mut outbound: mpsc::Receiver<Outbound>) {
    while let Some(message) = outbound.recv().await {
        let subject = message.subject.clone();
        let sent = match message.reply {
            Some(reply) => {
                client
                    .publish_with_reply(message.subject, reply, message.payload)
                    .await
            }
            None => client.publish(message.subject, message.payload).await,
        };
        if let Err(error) = sent {
            tracing::warn!(%subject, %error, "cluster message not sent");
            if let Some(id) = message.request_id {
                // The answer did not fit: its caller gets an error now, not at its deadline.
                let text = format!("the page's answer could not cross the cluster: {error}");
                let frame = owner::error_frame(&id, &text);
                let _ = client.publish(subject, frame.into()).await;
            }
        }
    }
}

/// A digest of what must be the same on every node for access control to hold cluster-wide: the
/// agent and page tokens, the signed tokens' keys, the allowed origins, the allow-list, the
/// guardrails' rules (`--policy`).
fn policy_of(config: &BridgeConfig) -> String {
    let mut hash = Sha256::new();
    hash.update(b"client-tools cluster policy\0");
    for token in [&config.agent_token, &config.page_token] {
        hash.update(token.as_deref().unwrap_or("\u{0}none").as_bytes());
        hash.update(b"\0");
    }
    for list in [&config.allowed_origins, &config.allow] {
        let mut sorted = list.clone();
        sorted.sort();
        for item in sorted {
            hash.update(item.as_bytes());
            hash.update(b"\0");
        }
        hash.update(b"\x01");
    }
    // The guardrails too: a node with other rules would let through what this one blocks.
    hash.update(config.policy.digest().as_bytes());
    // And the signed tokens' keys, audience and issuer (SPEC §13): a node that accepts other
    // tokens would let another user's agent reach this node's pages.
    let tokens = config.token_keys.as_ref().map(|keys| keys.digest());
    hash.update(tokens.as_deref().unwrap_or("\u{0}none").as_bytes());
    hex(&hash.finalize()[..16])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_changes_with_every_access_setting_and_not_with_order() {
        let base = BridgeConfig::default();
        let with = |change: &dyn Fn(&mut BridgeConfig)| {
            let mut config = base.clone();
            change(&mut config);
            policy_of(&config)
        };
        let plain = policy_of(&base);
        assert_ne!(plain, with(&|c| c.agent_token = Some("a".into())));
        assert_ne!(plain, with(&|c| c.page_token = Some("a".into())));
        assert_ne!(
            with(&|c| c.agent_token = Some("a".into())),
            with(&|c| c.page_token = Some("a".into()))
        );
        assert_ne!(plain, with(&|c| c.allow = vec!["x".into()]));
        assert_ne!(plain, with(&|c| c.allowed_origins = vec!["x".into()]));
        let rules = |text: &str| Arc::new(crate::calls::policy::Policy::parse(text).unwrap());
        let guarded =
            with(&|c| c.policy = rules("[[rule]]\nid = \"r\"\ntools = [\"*\"]\naction = \"log\""));
        assert_ne!(plain, guarded);
        // The rules count, not their comments or layout.
        let same = with(&|c| {
            c.policy = rules("# audit\n[[rule]]\nid = \"r\"\naction = \"log\"\ntools = [\"*\"]")
        });
        assert_eq!(guarded, same);
        assert_eq!(
            with(&|c| c.allow = vec!["x".into(), "y".into()]),
            with(&|c| c.allow = vec!["y".into(), "x".into()])
        );
        assert_eq!(plain, with(&|c| c.listen = "127.0.0.1:1".parse().unwrap()));
    }
}
