//! At most once per call id (SPEC §5): what to do with a `tools/call` whose id the page may have
//! seen before — after a reconnect the runtime re-sends every call it has no answer for.
//!
//! The ledger remembers running ids, the answer frames of finished calls (bounded: the oldest are
//! forgotten first) and the ids that were running when the page was last unloaded. It never runs a
//! handler twice for one id: a re-sent call joins the run in progress, gets its stored answer again,
//! or — if the page was reloaded while it ran — an error saying it was not run again.

use std::collections::{HashMap, HashSet, VecDeque};

pub use crate::limits::{RESULT_STORE_BYTES, RESULT_STORE_LIMIT};

/// What to do with an arriving call id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Arrival {
    /// New: run it (it is now marked running).
    Run,
    /// Running already: its answer will be sent when it ends.
    Join,
    /// Finished: send this stored answer frame again.
    Resend(String),
    /// It was running when the page was unloaded: answer that it was not run again.
    Interrupted,
}

#[derive(Debug, Clone)]
pub struct CallLedger {
    running: HashSet<String>,
    finished: HashMap<String, String>,
    order: VecDeque<String>,
    /// The stored frames' bytes, bounded by [`RESULT_STORE_BYTES`] like their count.
    bytes: usize,
    interrupted: HashSet<String>,
    limit: usize,
}

impl Default for CallLedger {
    fn default() -> Self {
        Self::new(RESULT_STORE_LIMIT)
    }
}

impl CallLedger {
    pub fn new(limit: usize) -> Self {
        Self {
            running: HashSet::new(),
            finished: HashMap::new(),
            order: VecDeque::new(),
            bytes: 0,
            interrupted: HashSet::new(),
            limit: limit.max(1),
        }
    }

    /// Ids that were running when the previous page of this session went away.
    pub fn with_interrupted(mut self, ids: impl IntoIterator<Item = String>) -> Self {
        self.interrupted.extend(ids);
        self
    }

    pub fn arrive(&mut self, id: &str) -> Arrival {
        if self.running.contains(id) {
            return Arrival::Join;
        }
        if let Some(frame) = self.finished.get(id) {
            return Arrival::Resend(frame.clone());
        }
        if self.interrupted.contains(id) {
            return Arrival::Interrupted;
        }
        self.running.insert(id.to_owned());
        Arrival::Run
    }

    /// The call ended with `frame` (sent now, and again on a re-send). A cancelled call records
    /// the frame a re-send should get.
    pub fn finish(&mut self, id: &str, frame: String) {
        self.running.remove(id);
        self.interrupted.remove(id);
        self.bytes += frame.len();
        match self.finished.insert(id.to_owned(), frame) {
            Some(earlier) => self.bytes -= earlier.len(),
            None => self.order.push_back(id.to_owned()),
        }
        while self.order.len() > self.limit
            || (self.bytes > RESULT_STORE_BYTES && self.order.len() > 1)
        {
            if let Some(oldest) = self.order.pop_front() {
                if let Some(frame) = self.finished.remove(&oldest) {
                    self.bytes -= frame.len();
                }
            }
        }
    }

    pub fn is_running(&self, id: &str) -> bool {
        self.running.contains(id)
    }

    /// Ids running now (persisted when the page unloads).
    pub fn running_ids(&self) -> Vec<String> {
        self.running.iter().cloned().collect()
    }

    pub fn stored_results(&self) -> usize {
        self.finished.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn runs_once_then_joins_then_resends() {
        let mut ledger = CallLedger::default();
        assert_eq!(ledger.arrive("a"), Arrival::Run);
        assert_eq!(ledger.arrive("a"), Arrival::Join);
        ledger.finish("a", "frame-a".into());
        assert_eq!(ledger.arrive("a"), Arrival::Resend("frame-a".into()));
    }

    #[test]
    fn interrupted_calls_are_not_run_again() {
        let mut ledger = CallLedger::default().with_interrupted(["x".to_owned()]);
        assert_eq!(ledger.arrive("x"), Arrival::Interrupted);
        ledger.finish("x", "not run again".into());
        assert_eq!(ledger.arrive("x"), Arrival::Resend("not run again".into()));
    }

    #[test]
    fn the_store_is_bounded_oldest_first() {
        let mut ledger = CallLedger::new(2);
        for id in ["a", "b", "c"] {
            ledger.arrive(id);
            ledger.finish(id, format!("frame-{id}"));
        }
        assert_eq!(ledger.stored_results(), 2);
        assert_eq!(ledger.arrive("c"), Arrival::Resend("frame-c".into()));
        assert_eq!(
            ledger.arrive("a"),
            Arrival::Run,
            "forgotten beyond the bound"
        );
    }

    proptest! {
        /// Under any interleaving of arrivals and finishes, an id is never `Run` twice while its
        /// answer is still remembered.
        #[test]
        fn never_runs_an_id_twice(ops in proptest::collection::vec((0u8..6, any::<bool>()), 1..200)) {
            let mut ledger = CallLedger::new(1_000);
            let mut runs = HashMap::<String, usize>::new();
            for (n, finish) in ops {
                let id = format!("id-{n}");
                if finish {
                    if ledger.is_running(&id) {
                        ledger.finish(&id, format!("answer-{id}"));
                    }
                } else if ledger.arrive(&id) == Arrival::Run {
                    *runs.entry(id.clone()).or_default() += 1;
                }
                prop_assert!(runs.values().all(|&count| count <= 1), "{runs:?}");
            }
        }
    }
}
