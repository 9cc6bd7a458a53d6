//! Where the page's answers to relayed requests go: a session whose page's socket is on this
//! bridge remembers, per request relayed to it, the route its relayer gave (in a cluster, the
//! relaying node's inbox subject) — until the page answers, the connection ends, or the table is
//! full (the oldest route is forgotten first: its caller's own deadline ends that call). Part of
//! the session's state, kept under its lock; what a route means is the cluster's business.

use std::collections::{HashMap, VecDeque};

pub(crate) struct RelayRoutes {
    /// Request id → (reply subject, when it was inserted).
    by_id: HashMap<String, (String, u64)>,
    /// Ids in the order they came, with their insertion: an entry whose insertion is not the one
    /// in `by_id` was answered (or inserted again) since, and is skipped.
    order: VecDeque<(String, u64)>,
    inserted: u64,
    limit: usize,
}

impl RelayRoutes {
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            by_id: HashMap::new(),
            order: VecDeque::new(),
            inserted: 0,
            limit: limit.max(1),
        }
    }

    pub(crate) fn insert(&mut self, id: String, reply: String) {
        while self.by_id.len() >= self.limit || self.order.len() >= 2 * self.limit {
            let Some((oldest, when)) = self.order.pop_front() else {
                break;
            };
            if self.by_id.get(&oldest).is_some_and(|(_, at)| *at == when) {
                self.by_id.remove(&oldest);
            }
        }
        self.inserted += 1;
        self.by_id.insert(id.clone(), (reply, self.inserted));
        self.order.push_back((id, self.inserted));
    }

    /// The route of an answered request (forgotten).
    pub(crate) fn take(&mut self, id: &str) -> Option<String> {
        if self.by_id.is_empty() {
            return None;
        }
        self.by_id.remove(id).map(|(reply, _)| reply)
    }

    /// The route of a request still running (its progress).
    pub(crate) fn get(&self, id: &str) -> Option<String> {
        self.by_id.get(id).map(|(reply, _)| reply.clone())
    }

    /// The page's connection ended: its answers will come on another one, where the callers
    /// send their requests again.
    pub(crate) fn clear(&mut self) {
        self.by_id.clear();
        self.order.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_are_taken_once_and_the_oldest_go_first_when_full() {
        let mut routes = RelayRoutes::new(2);
        routes.insert("a".into(), "node-1".into());
        routes.insert("b".into(), "node-2".into());
        assert_eq!(routes.get("a").as_deref(), Some("node-1"));
        assert_eq!(routes.take("a").as_deref(), Some("node-1"));
        assert_eq!(routes.take("a"), None);
        routes.insert("c".into(), "node-3".into());
        routes.insert("d".into(), "node-3".into());
        // Full with b, c: b (the oldest) was forgotten for d.
        assert_eq!(routes.take("b"), None);
        assert_eq!(routes.take("c").as_deref(), Some("node-3"));
        assert_eq!(routes.take("d").as_deref(), Some("node-3"));
        // Sent again after being answered: the newer route stands when the older one is evicted.
        routes.insert("e".into(), "node-1".into());
        assert!(routes.take("e").is_some());
        routes.insert("e".into(), "node-2".into());
        routes.insert("f".into(), "node-1".into());
        routes.insert("g".into(), "node-1".into());
        assert_eq!(
            routes.get("e"),
            None,
            "e is the oldest of e, f, g: evicted for g"
        );
        routes.insert("e".into(), "node-2".into());
        routes.clear();
        assert_eq!(routes.take("e"), None);
    }
}
