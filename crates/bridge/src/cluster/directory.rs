//! The cluster-wide session directory, as one node knows it: every other node's page sessions
//! (from their [`Entry`] announcements) and which nodes are alive (from their heartbeats).
//!
//! Presence, not storage: nothing is kept in NATS. A node announces each change of its sessions,
//! all of its connected sessions again every `ANNOUNCE_BEATS` heartbeats (an entry saying
//! "connected" is believed for `DIRECTORY_LEASE`: one lost "disconnected" does not leave a ghost),
//! and a heartbeat every `HEARTBEAT_INTERVAL`; a node silent for `NODE_TIMEOUT` is gone, and its
//! pages count as disconnected until they reconnect elsewhere (the bounds: crate::limits). A node
//! that joins (or whose NATS connection comes back) says hello, and every node announces its
//! sessions again. Sans-IO: the caller passes the time.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::wire::{is_node_id, is_session_id, Entry};
use crate::limits::{DIRECTORY_LEASE, NODE_TIMEOUT};

pub(crate) struct Directory {
    me: String,
    /// Session id → node → that node's latest entry.
    sessions: HashMap<String, HashMap<String, Known>>,
    nodes: HashMap<String, Node>,
    /// Entries of sessions disconnected (or of gone nodes) are forgotten after this long.
    ttl: Duration,
    /// Sessions known at most: beyond it, announcements of new sessions are ignored (logged once
    /// until there is room again).
    capacity: usize,
    full_logged: bool,
}

struct Known {
    entry: Entry,
    received: Instant,
}

struct Node {
    last_heard: Instant,
    /// Its access settings are this node's: it may serve and be served.
    same_policy: bool,
    /// Its silence was reported by [`Directory::sweep`].
    reported_gone: bool,
}

impl Directory {
    pub(crate) fn new(me: String, ttl: Duration, capacity: usize) -> Self {
        Self {
            me,
            sessions: HashMap::new(),
            nodes: HashMap::new(),
            ttl,
            capacity,
            full_logged: false,
        }
    }

    /// A heartbeat: `true` when the node was not alive (or not trusted) before.
    pub(crate) fn heartbeat(&mut self, node: &str, same_policy: bool, now: Instant) -> bool {
        if node == self.me || !is_node_id(node) {
            return false;
        }
        let was_alive = self.is_alive(node, now);
        self.nodes.insert(
            node.to_owned(),
            Node {
                last_heard: now,
                same_policy,
                reported_gone: false,
            },
        );
        !was_alive && same_policy
    }

    /// A node announced a session; `false` when it was ignored (this node's, malformed, or older
    /// than what is known).
    pub(crate) fn update(&mut self, entry: Entry, now: Instant) -> bool {
        if entry.node == self.me
            || !is_node_id(&entry.node)
            || !is_session_id(&entry.session)
            || self.differs(&entry.node)
        {
            return false;
        }
        if !self.sessions.contains_key(&entry.session) && self.sessions.len() >= self.capacity {
            if !self.full_logged {
                self.full_logged = true;
                tracing::warn!(
                    capacity = self.capacity,
                    "cluster directory full: sessions announced by other nodes are not listed here"
                );
            }
            return false;
        }
        self.full_logged = false;
        let by_node = self.sessions.entry(entry.session.clone()).or_default();
        if by_node
            .get(&entry.node)
            .is_some_and(|known| known.entry.seq >= entry.seq)
        {
            return false;
        }
        by_node.insert(
            entry.node.clone(),
            Known {
                entry,
                received: now,
            },
        );
        true
    }

    /// Alive: heard within [`NODE_TIMEOUT`], with this node's access settings.
    pub(crate) fn is_alive(&self, node: &str, now: Instant) -> bool {
        self.nodes
            .get(node)
            .is_some_and(|n| n.same_policy && now.duration_since(n.last_heard) < NODE_TIMEOUT)
    }

    /// Nodes heard from once that have a different policy (for the operator's log).
    pub(crate) fn differs(&self, node: &str) -> bool {
        self.nodes.get(node).is_some_and(|n| !n.same_policy)
    }

    /// Where the session's page is connected now: the entry of a live node saying so (the most
    /// recently connected one, should two say so for a moment).
    pub(crate) fn owner(&self, session: &str, now: Instant) -> Option<&Entry> {
        self.sessions
            .get(session)?
            .values()
            .filter(|known| now.duration_since(known.received) < DIRECTORY_LEASE)
            .map(|known| &known.entry)
            .filter(|entry| entry.connected && self.is_alive(&entry.node, now))
            .max_by_key(|entry| (entry.connected_at_ms, entry.generation))
    }

    /// Whether a node with this node's access settings has announced this session (connected or
    /// not) and it is not forgotten.
    #[cfg(test)]
    pub(crate) fn knows(&self, session: &str) -> bool {
        self.sessions
            .get(session)
            .is_some_and(|by_node| by_node.keys().any(|node| self.trusted(node)))
    }

    /// The user of a session a trusted node announced (`Some(None)`: known, and it serves nobody
    /// in particular); `None` when no trusted node knows it. A user's session is made here only as
    /// its own user's, so an agent scoped to another user never reaches it through a link.
    pub(crate) fn user_of(&self, session: &str) -> Option<Option<String>> {
        self.sessions
            .get(session)?
            .iter()
            .filter(|(node, _)| self.trusted(node))
            .map(|(_, known)| &known.entry)
            .max_by_key(|entry| (entry.connected_at_ms, entry.generation))
            .map(|entry| entry.user.clone())
    }

    /// Heard from, with this node's access settings (alive or not).
    pub(crate) fn trusted(&self, node: &str) -> bool {
        self.nodes.get(node).is_some_and(|n| n.same_policy)
    }

    /// The most recently connected page on another live node.
    pub(crate) fn newest(&self, now: Instant) -> Option<&Entry> {
        self.sessions
            .keys()
            .filter_map(|session| self.owner(session, now))
            .max_by_key(|entry| entry.connected_at_ms)
    }

    /// One entry per session other nodes know: where it is connected, else its latest.
    pub(crate) fn entries(&self, now: Instant) -> Vec<Entry> {
        self.sessions
            .iter()
            .filter_map(|(session, by_node)| {
                let entry = self.owner(session, now).or_else(|| {
                    by_node
                        .iter()
                        .filter(|(node, _)| self.trusted(node))
                        .map(|(_, known)| known)
                        .max_by_key(|known| known.received)
                        .map(|known| &known.entry)
                })?;
                let mut entry = entry.clone();
                entry.connected = self.owner(session, now).is_some();
                Some(entry)
            })
            .collect()
    }

    /// Nodes that went silent since the last sweep (each reported once), and forgets entries
    /// nobody has confirmed for the TTL.
    pub(crate) fn sweep(&mut self, now: Instant) -> Vec<String> {
        let mut gone = Vec::new();
        for (id, node) in &mut self.nodes {
            if !node.reported_gone && now.duration_since(node.last_heard) >= NODE_TIMEOUT {
                node.reported_gone = true;
                gone.push(id.clone());
            }
        }
        let ttl = self.ttl.max(DIRECTORY_LEASE);
        // A connected page is announced again within its lease: an entry not heard of for the
        // TTL is a page gone (or a node gone) long ago.
        self.sessions.retain(|_, by_node| {
            by_node.retain(|_, known| now.duration_since(known.received) < ttl);
            !by_node.is_empty()
        });
        self.nodes
            .retain(|_, n| now.duration_since(n.last_heard) < NODE_TIMEOUT + ttl);
        gone
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::HEARTBEAT_INTERVAL;

    const A: &str = "aaaaaaaaaaaaaaaa";
    const B: &str = "bbbbbbbbbbbbbbbb";
    const ME: &str = "eeeeeeeeeeeeeeee";
    const S: &str = "0123456789abcdef0123456789abcdef";

    fn entry(node: &str, seq: u64, connected: bool, at: u64) -> Entry {
        Entry {
            node: node.into(),
            session: S.into(),
            seq,
            connected,
            generation: 1,
            connected_at_ms: Some(at),
            tools_listed: true,
            tools: Vec::new(),
            user: None,
            visible: false,
            focused: false,
            in_front_at_ms: None,
            served: None,
        }
    }

    #[test]
    fn a_session_is_where_a_live_node_says_it_is_connected() {
        let now = Instant::now();
        let mut directory = Directory::new(ME.into(), Duration::from_secs(60), 10);
        assert!(directory.heartbeat(A, true, now));
        assert!(!directory.heartbeat(A, true, now));
        assert!(directory.heartbeat(B, true, now));
        assert!(directory.update(entry(A, 1, true, 10), now));
        assert_eq!(directory.owner(S, now).unwrap().node, A);
        // The page moved to B; A's late "disconnected" does not move it back.
        assert!(directory.update(entry(B, 1, true, 20), now));
        assert!(directory.update(entry(A, 2, false, 10), now));
        assert_eq!(directory.owner(S, now).unwrap().node, B);
        // An older entry of B is ignored; this node's own and malformed ones too.
        assert!(!directory.update(entry(B, 1, false, 20), now));
        assert!(!directory.update(entry(ME, 9, true, 30), now));
        let mut hostile = entry(A, 3, true, 40);
        hostile.session = "clienttools.>".into();
        assert!(!directory.update(hostile, now));
        assert_eq!(directory.newest(now).unwrap().node, B);
        // B goes silent: reported once, its page is nowhere.
        let later = now + NODE_TIMEOUT;
        directory.heartbeat(A, true, later);
        assert_eq!(directory.sweep(later), vec![B.to_owned()]);
        assert_eq!(
            directory.sweep(later + HEARTBEAT_INTERVAL),
            Vec::<String>::new()
        );
        assert!(directory.owner(S, later).is_none());
        assert!(directory.knows(S));
        assert!(!directory.entries(later)[0].connected);
    }

    #[test]
    fn a_node_with_other_access_settings_serves_nothing() {
        let now = Instant::now();
        let mut directory = Directory::new(ME.into(), Duration::from_secs(60), 10);
        assert!(!directory.heartbeat(A, false, now));
        directory.update(entry(A, 1, true, 10), now);
        assert!(directory.owner(S, now).is_none());
        assert!(!directory.knows(S));
        assert!(directory.entries(now).is_empty());
        assert!(directory.differs(A));
    }

    #[test]
    fn a_connected_entry_not_announced_again_is_not_believed() {
        let now = Instant::now();
        let mut directory = Directory::new(ME.into(), Duration::from_secs(600), 10);
        directory.heartbeat(A, true, now);
        directory.update(entry(A, 1, true, 10), now);
        let later = now + DIRECTORY_LEASE;
        directory.heartbeat(A, true, later);
        assert!(directory.owner(S, later).is_none());
        assert!(!directory.entries(later)[0].connected);
        directory.update(entry(A, 2, true, 10), later);
        assert_eq!(directory.owner(S, later).unwrap().node, A);
    }

    #[test]
    fn the_directory_is_bounded() {
        let now = Instant::now();
        let mut directory = Directory::new(ME.into(), Duration::from_secs(60), 1);
        directory.heartbeat(A, true, now);
        assert!(directory.update(entry(A, 1, true, 10), now));
        let mut other = entry(A, 2, true, 10);
        other.session = "f".repeat(32);
        assert!(!directory.update(other, now));
        // A known session is still updated.
        assert!(directory.update(entry(A, 3, false, 10), now));
    }

    #[test]
    fn disconnected_sessions_are_forgotten_after_the_ttl() {
        let now = Instant::now();
        let ttl = Duration::from_secs(60);
        let mut directory = Directory::new(ME.into(), ttl, 10);
        directory.heartbeat(A, true, now);
        directory.update(entry(A, 1, false, 10), now);
        directory.sweep(now + ttl - Duration::from_secs(1));
        assert!(directory.knows(S));
        directory.sweep(now + ttl);
        assert!(!directory.knows(S));
    }
}
