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

mod directory;
mod link;
mod owner;
mod rounds;
mod tasks;
mod wire;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use client_tools_core::connect::ConnectParams;
use client_tools_core::tabs::TabActivity;
use futures_util::StreamExt;
use sha2::{Digest, Sha256};
use tokio::sync::mpsc;

use crate::agent::rounds::Rounds;
use crate::agent::tasks::Tasks;
use crate::config::BridgeConfig;
use crate::ids::{hex, random_hex, unix_ms};
use crate::limits::{
    ANNOUNCE_BEATS, CLAIM_ANSWER_SLACK, DIRECTORY_PER_NODE_SESSIONS, HEARTBEAT_INTERVAL,
    LINK_SWEEP_BEATS, NATS_CONNECT_TIMEOUT, NATS_EVENTS_BUFFER, REFUSED_LINK_BACKOFF,
};
use crate::sessions::page_session::{visible_tools, PageSession, SessionInfo, Via, CLOSE_REPLACED};
use crate::sessions::table::{self, Claimed, Refused, SessionTable};
use directory::Directory;
use wire::{Entry, Heartbeat, Hello};
use wire::{Outbound, Publisher};

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

/// This node's part in the cluster.
pub(crate) struct Cluster {
    node: String,
    client: async_nats::Client,
    publisher: Publisher,
    /// Digest of the access settings every node must share ([`Heartbeat::policy`]).
    policy: String,
    sessions: Arc<SessionTable>,
    directory: Mutex<Directory>,
    /// Linked sessions: which node each one's link goes to.
    links: Mutex<HashMap<String, LinkState>>,
    /// Orders this node's directory entries.
    seq: AtomicU64,
    config: BridgeConfig,
    /// The NATS server's message size limit, respected before sending.
    max_payload: usize,
    /// This node's suspended calls (crate::agent::rounds), which retries relayed here resume.
    rounds: Arc<Rounds>,
    /// This node's tasks (crate::agent::tasks), which other nodes' agents read through [`tasks`].
    tasks: Arc<Tasks>,
    /// The relayed retries this node drives now ([`rounds`]).
    driving: rounds::Driving,
}

struct LinkState {
    node: String,
    /// The page's connection on that node the link was made for.
    owner_generation: u64,
    /// The connection generation of the link here; `None` once that node did not serve it (NATS's
    /// "no responders"): then not remade to the same connection for [`REFUSED_LINK_BACKOFF`].
    generation: Option<u64>,
    refused_at: Option<Instant>,
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
            driving: rounds::Driving::default(),
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

    pub(crate) fn node(&self) -> &str {
        &self.node
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

    fn directory(&self) -> std::sync::MutexGuard<'_, Directory> {
        self.directory.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn links(&self) -> std::sync::MutexGuard<'_, HashMap<String, LinkState>> {
        self.links.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Tells the cluster where this node's session stands (connected here or not, its tools).
    pub(crate) fn announce(&self, session: &PageSession) {
        let activity = session.activity();
        let entry = Entry {
            node: self.node.clone(),
            session: session.id().to_owned(),
            seq: self.seq.fetch_add(1, Ordering::Relaxed) + 1,
            connected: session.via() == Some(Via::Socket),
            generation: session.generation().unwrap_or_default(),
            connected_at_ms: session.connected_at().map(unix_ms),
            tools_listed: session.has_listed_tools(),
            tools: session.page_tools().to_vec(),
            user: session.user().map(str::to_owned),
            visible: activity.visible,
            focused: activity.focused,
            in_front_at_ms: activity.in_front_at,
        };
        self.publisher
            .send(Outbound::json(wire::DIRECTORY_SUBJECT, &entry));
    }

    /// Every session whose page is connected to this node, announced again.
    fn announce_all(&self) {
        for session in self.sessions.list() {
            if session.via() == Some(Via::Socket) {
                self.announce(&session);
            }
        }
    }

    /// Brings a session's link in line with the directory: linked to the page's connection on the
    /// node that holds it, unlinked when it is connected nowhere (its waiting calls get the
    /// reconnect grace), and the page's tools as that node lists them.
    fn reconcile(&self, session: &Arc<PageSession>) {
        let id = session.id();
        if session.via() == Some(Via::Socket) {
            self.links().remove(id);
            self.settle_two_owners(session);
            return;
        }
        let now = Instant::now();
        let owner = self.directory().owner(id, now).cloned();
        let mut links = self.links();
        let Some(entry) = owner else {
            if let Some(LinkState {
                generation: Some(generation),
                ..
            }) = links.remove(id)
            {
                session.detach(generation);
            }
            return;
        };
        let same_connection =
            |link: &LinkState| link.node == entry.node && link.owner_generation == entry.generation;
        let current = links.get(id);
        let linked = current.is_some_and(|link| {
            same_connection(link)
                && link.generation.is_some()
                && link.generation == session.generation()
        });
        let refused = current.is_some_and(|link| {
            same_connection(link)
                && link
                    .refused_at
                    .is_some_and(|at| now.duration_since(at) < REFUSED_LINK_BACKOFF)
        });
        if !linked && !refused {
            // A new connection of the page (on any node): linked anew, and the calls waiting
            // here are sent again on it with their ids.
            match link::attach(self, session, &entry) {
                Some(generation) => {
                    links.insert(
                        id.to_owned(),
                        LinkState {
                            node: entry.node.clone(),
                            owner_generation: entry.generation,
                            generation: Some(generation),
                            refused_at: None,
                        },
                    );
                }
                None => {
                    links.remove(id);
                }
            }
        }
        drop(links);
        session.set_activity(TabActivity {
            visible: entry.visible,
            focused: entry.focused,
            in_front_at: entry.in_front_at_ms,
            connected_at: entry.connected_at_ms,
        });
        if entry.tools_listed && session.page_tools()[..] != entry.tools[..] {
            session.set_tools(entry.tools);
        }
    }

    /// Two nodes holding a socket for one session (claims that raced): the older connection
    /// gives way — closed as replaced; its page, if still there, reconnects and is told the
    /// session is live elsewhere (a new session). Ties go to the node with the greater id.
    fn settle_two_owners(&self, session: &PageSession) {
        let Some(elsewhere) = self
            .directory()
            .owner(session.id(), Instant::now())
            .cloned()
        else {
            return;
        };
        let (Some(generation), Some(here)) = (session.generation(), session.connected_at()) else {
            return;
        };
        let here = (Some(unix_ms(here)), self.node.as_str());
        if here < (elsewhere.connected_at_ms, elsewhere.node.as_str()) {
            tracing::warn!(session = %session.id(), user = session.user().unwrap_or(""), node = %elsewhere.node, "this page session is connected to another node too: the older connection, here, is closed");
            session.close_generation(
                generation,
                CLOSE_REPLACED,
                "replaced by a newer connection of the same page session on another node",
            );
        }
    }

    fn reconcile_all(&self) {
        for session in self.sessions.list() {
            if session.via() != Some(Via::Socket) {
                self.reconcile(&session);
            }
        }
    }

    /// A frame sent on link `reply.link` reached no node holding the page (NATS's "no
    /// responders", or the node no longer holds it): the request it carried ends "not connected"
    /// at once (it never reached the page), and the link is down until the directory says where
    /// the page is. Replies about an older link change nothing (its requests went again since).
    pub(crate) fn not_served(&self, reply: &wire::Reply) {
        let Some(session) = self.sessions.get(&reply.session) else {
            return;
        };
        let mut links = self.links();
        let Some(link) = links
            .get_mut(&reply.session)
            .filter(|link| link.generation == Some(reply.link))
        else {
            return;
        };
        link.generation = None;
        link.refused_at = Some(Instant::now());
        drop(links);
        tracing::info!(session = %reply.session, user = session.user().unwrap_or(""), "the page's node does not serve it now");
        if let Some(request) = &reply.request {
            session.not_delivered(request);
        }
        session.detach(reply.link);
        self.reconcile(&session);
    }

    /// Links refused a while ago are tried again (the directory may still name the same node).
    fn retry_refused_links(&self) {
        let now = Instant::now();
        let due: Vec<String> = self
            .links()
            .iter()
            .filter(|(_, link)| {
                link.refused_at
                    .is_some_and(|at| now.duration_since(at) >= REFUSED_LINK_BACKOFF)
            })
            .map(|(id, _)| id.clone())
            .collect();
        for id in due {
            if let Some(session) = self.sessions.get(&id) {
                self.reconcile(&session);
            }
        }
    }

    /// A node went silent: the links to it are down (their calls wait the reconnect grace for the
    /// page to show up on another node, where the directory may already say it is).
    fn node_gone(&self, node: &str) {
        for session in self.drop_links(|link| link.node == node) {
            self.reconcile(&session);
        }
    }

    /// Drops the links `which` picks (their sessions detached); returns those sessions.
    fn drop_links(&self, which: impl Fn(&LinkState) -> bool) -> Vec<Arc<PageSession>> {
        let dropped: Vec<(String, Option<u64>)> = {
            let mut links = self.links();
            let ids: Vec<String> = links
                .iter()
                .filter(|(_, link)| which(link))
                .map(|(id, _)| id.clone())
                .collect();
            ids.into_iter()
                .filter_map(|id| links.remove(&id).map(|link| (id, link.generation)))
                .collect()
        };
        dropped
            .into_iter()
            .filter_map(|(id, generation)| {
                let session = self.sessions.get(&id)?;
                if let Some(generation) = generation {
                    session.detach(generation);
                }
                Some(session)
            })
            .collect()
    }

    /// Link records of sessions the table forgot (expired) go too.
    fn forget_links_of_forgotten_sessions(&self) {
        self.links().retain(|id, _| self.sessions.get(id).is_some());
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
