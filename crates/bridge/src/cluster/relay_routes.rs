//! Where the answers to relayed requests go: the node holding a page's socket remembers, per
//! request another node relayed, that node's inbox subject — until the page answers, the
//! connection ends, or the table is full (the oldest route is forgotten first: its caller's own
//! deadline ends that call).

use std::collections::{HashMap, VecDeque};

pub(crate) struct RelayRoutes {
    by_id: HashMap<String, String>,
    /// Ids in the order they came, for forgetting the oldest (may hold ids already answered).
    order: VecDeque<String>,
    limit: usize,
}

impl RelayRoutes {
    /// Routes kept per request a session may have waiting on one node: every node may have as
    /// many waiting as this one does.
    pub(crate) const PER_PENDING: usize = 4;

    pub(crate) fn new(limit: usize) -> Self {
        Self {
            by_id: HashMap::new(),
            order: VecDeque::new(),
            limit: limit.max(1),
        }
    }

    pub(crate) fn insert(&mut self, id: String, reply: String) {
        while self.by_id.len() >= self.limit || self.order.len() >= 2 * self.limit {
            let Some(oldest) = self.order.pop_front() else {
                break;
            };
            self.by_id.remove(&oldest);
        }
        if self.by_id.insert(id.clone(), reply).is_none() {
            self.order.push_back(id);
        }
    }

    /// The route of an answered request (forgotten).
    pub(crate) fn take(&mut self, id: &str) -> Option<String> {
        if self.by_id.is_empty() {
            return None;
        }
        self.by_id.remove(id)
    }

    /// The route of a request still running (its progress).
    pub(crate) fn get(&self, id: &str) -> Option<String> {
        self.by_id.get(id).cloned()
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
        routes.insert("e".into(), "node-1".into());
        routes.clear();
        assert_eq!(routes.take("e"), None);
    }
}
