//! At most once per call id (SPEC §5): what to do with a `tools/call` whose id the page may have
//! seen before — after a reconnect the runtime re-sends every call it has no answer for.
//!
//! The ledger remembers running ids, the answer frames of finished calls (bounded: the oldest are
//! forgotten first) and the ids that were running when the page was last unloaded. It never runs a
//! handler twice for one id: a re-sent call joins the run in progress, gets its stored answer again,
//! or — if the page was reloaded while it ran — an error saying it was not run again.

use std::collections::{HashMap, VecDeque};

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

/// The running and interrupted ids are scanned lists (a page runs few calls at once); the stored
/// answers are a map, looked up by every arriving call: scanning 1 000 of them cost more than half
/// of a call's time in the engine.
#[derive(Debug, Clone)]
pub struct CallLedger {
    running: Vec<String>,
    /// Finished calls' answer frames by id.
    finished: HashMap<String, String>,
    /// The ids of `finished`, oldest first (the order they are forgotten in).
    finished_order: VecDeque<String>,
    /// The stored frames' bytes, bounded by [`RESULT_STORE_BYTES`] like their count.
    bytes: usize,
    interrupted: Vec<String>,
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
            running: Vec::new(),
            finished: HashMap::new(),
            finished_order: VecDeque::new(),
            bytes: 0,
            interrupted: Vec::new(),
            limit: limit.max(1),
        }
    }

    /// Ids that were running when the previous page of this session went away.
    pub fn with_interrupted(mut self, ids: impl IntoIterator<Item = String>) -> Self {
        self.interrupted.extend(ids);
        self
    }

    pub fn arrive(&mut self, id: &str) -> Arrival {
        if self.running.iter().any(|r| r == id) {
            return Arrival::Join;
        }
        if let Some(frame) = self.finished.get(id) {
            return Arrival::Resend(frame.clone());
        }
        if self.interrupted.iter().any(|i| i == id) {
            return Arrival::Interrupted;
        }
        self.running.push(id.to_owned());
        Arrival::Run
    }

    /// The call ended with `frame` (sent now, and again on a re-send). A cancelled call records
    /// the frame a re-send should get.
    pub fn finish(&mut self, id: &str, frame: String) {
        self.running.retain(|r| r != id);
        self.interrupted.retain(|i| i != id);
        if let Some(earlier) = self.finished.remove(id) {
            self.bytes -= earlier.len();
            self.finished_order.retain(|f| f != id);
        }
        self.bytes += frame.len();
        self.finished.insert(id.to_owned(), frame);
        self.finished_order.push_back(id.to_owned());
        while self.finished.len() > self.limit
            || (self.bytes > RESULT_STORE_BYTES && self.finished.len() > 1)
        {
            let Some(oldest) = self.finished_order.pop_front() else {
                break;
            };
            if let Some(frame) = self.finished.remove(&oldest) {
                self.bytes -= frame.len();
            }
        }
    }

    pub fn is_running(&self, id: &str) -> bool {
        self.running.iter().any(|r| r == id)
    }

    /// Ids running now (persisted when the page unloads).
    pub fn running_ids(&self) -> Vec<String> {
        self.running.clone()
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
            let mut runs = std::collections::HashMap::<String, usize>::new();
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
