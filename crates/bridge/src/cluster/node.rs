//! This node's part in the cluster, as state: the [`Cluster`] that every part of the node works on
//! (its NATS client, the directory, the links' records, the retries it drives), and what those
//! parts all need of it — the directory and the links under their locks, and announcing this
//! node's sessions.
//!
//! The parts that act on it ([`link`](super::link), [`owner`](super::owner),
//! [`subscriptions`](super::subscriptions), [`rounds`](super::rounds), [`tasks`](super::tasks))
//! sit above this file and add their own
//! `impl Cluster` blocks; `cluster/mod.rs` joins the cluster and starts their receivers. This file
//! names none of them, so each can name it without a circle (tests/module_graph.rs).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::sync::Notify;

use super::directory::Directory;
use super::wire::{self, Entry, Outbound, Publisher, ServedEntry};
use crate::agent::rounds::Rounds;
use crate::agent::tasks::Tasks;
use crate::config::BridgeConfig;
use crate::ids::unix_ms;
use crate::limits::NATS_HEADROOM_BYTES;
use crate::sessions::page_session::{PageSession, Via, LIST_METHODS};
use crate::sessions::table::SessionTable;

/// This node's part in the cluster.
pub(crate) struct Cluster {
    pub(super) node: String,
    pub(super) client: async_nats::Client,
    pub(super) publisher: Publisher,
    /// Digest of the access settings every node must share ([`wire::Heartbeat::policy`]).
    pub(super) policy: String,
    pub(super) sessions: Arc<SessionTable>,
    pub(super) directory: Mutex<Directory>,
    /// Linked sessions: which node each one's link goes to.
    pub(super) links: Mutex<HashMap<String, LinkState>>,
    /// Orders this node's directory entries.
    pub(super) seq: AtomicU64,
    pub(super) config: BridgeConfig,
    /// The NATS server's message size limit, respected before sending.
    pub(super) max_payload: usize,
    /// This node's suspended calls (crate::agent::rounds), which retries relayed here resume.
    pub(super) rounds: Arc<Rounds>,
    /// This node's tasks (crate::agent::tasks), which other nodes' agents read through
    /// [`tasks`](super::tasks).
    pub(super) tasks: Arc<Tasks>,
    /// The relayed retries this node drives now ([`rounds`](super::rounds)).
    pub(super) driving: Driving,
    /// Which other nodes subscribed to which resources of this node's pages
    /// ([`subscriptions`](super::subscriptions)).
    pub(super) subscribers: Subscribers,
}

/// Where one linked session's link goes ([`link`](super::link) keeps it in line with the
/// directory).
pub(super) struct LinkState {
    pub(super) node: String,
    /// The page's connection on that node the link was made for.
    pub(super) owner_generation: u64,
    /// The connection generation of the link here; `None` once that node did not serve it (NATS's
    /// "no responders"): then not remade to the same connection for
    /// [`REFUSED_LINK_BACKOFF`](crate::limits::REFUSED_LINK_BACKOFF).
    pub(super) generation: Option<u64>,
    pub(super) refused_at: Option<Instant>,
    /// This node's agents' resource subscriptions were sent on this link
    /// ([`subscriptions`](super::subscriptions)).
    pub(super) resubscribed: bool,
}

/// The relayed retries this node drives ([`rounds`](super::rounds)), by their stream: how to
/// cancel each. Plain state, here so the `Cluster` can hold it.
#[derive(Default)]
pub(super) struct Driving(Mutex<HashMap<String, Arc<Notify>>>);

impl Driving {
    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Notify>>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The resource subscriptions other nodes hold on this node's pages
/// ([`subscriptions`](super::subscriptions)): by page session, the page's connection here they
/// were made on (its generation), and by URI the nodes subscribed, each with the inbox its linked
/// session hears the page on. Plain state, here so the `Cluster` can hold it.
#[derive(Default)]
pub(super) struct Subscribers(Mutex<HashMap<String, SubscribersOf>>);

/// One page session's subscribers from other nodes ([`Subscribers`]).
pub(super) struct SubscribersOf {
    pub(super) generation: u64,
    /// URI → node → inbox.
    pub(super) uris: HashMap<String, HashMap<String, String>>,
}

impl Subscribers {
    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, SubscribersOf>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Cluster {
    pub(crate) fn node(&self) -> &str {
        &self.node
    }

    pub(super) fn directory(&self) -> std::sync::MutexGuard<'_, Directory> {
        self.directory.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn links(&self) -> std::sync::MutexGuard<'_, HashMap<String, LinkState>> {
        self.links.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Tells the cluster where this node's session stands (connected here or not, its tools).
    pub(crate) fn announce(&self, session: &PageSession) {
        let activity = session.activity();
        let mut entry = Entry {
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
            served: served_entry(session),
        };
        let mut message = Outbound::json(wire::DIRECTORY_SUBJECT, &entry);
        if message.payload.len() + NATS_HEADROOM_BYTES > self.max_payload {
            // Its lists left out (linked sessions ask the page for them), not the session.
            tracing::warn!(session = %session.id(), user = session.user().unwrap_or(""), bytes = message.payload.len(), max_payload = self.max_payload, "the page's resource and prompt lists are too large for the cluster's NATS server: other nodes ask the page for them");
            entry.served = entry.served.map(|served| ServedEntry {
                resources: None,
                templates: None,
                prompts: None,
                ..served
            });
            message = Outbound::json(wire::DIRECTORY_SUBJECT, &entry);
        }
        self.publisher.send(message);
    }

    /// Every session whose page is connected to this node, announced again.
    pub(super) fn announce_all(&self) {
        for session in self.sessions.list() {
            if session.via() == Some(Via::Socket) {
                self.announce(&session);
            }
        }
    }
}

/// What `session`'s page offers besides tools and the lists this node read of it (SPEC §11);
/// `None` before its handshake here.
fn served_entry(session: &PageSession) -> Option<ServedEntry> {
    let offered = session.offered()?;
    let [resources, templates, prompts] =
        LIST_METHODS.map(|method| session.listed(method).map(|listed| listed.to_vec()));
    Some(ServedEntry {
        offered,
        resources,
        templates,
        prompts,
    })
}
