//! At most once per call id (SPEC §5): what to do with a `tools/call` whose id the page may have
//! seen before — after a reconnect the runtime re-sends every call it has no answer for.
//!
//! The ledger remembers running ids, the answer frames of finished calls (bounded: the oldest are
//! forgotten first) and the calls that were running when the page was last unloaded. It never runs
//! a handler twice for one id in one page's life: a re-sent call joins the run in progress, gets
//! its stored answer again, or — if the page was reloaded while it ran — an error saying it was
//! not run again.
//!
//! One exception, opt-in and decided again on arrival (SPEC §7): a call the reload interrupted
//! before its handler started (it waited for the person's decision, its turn or its handler) is
//! asked again, and a call of a tool declared `idempotentHint: true` runs once more — once per
//! page life, so a storm of reloads never runs it twice in one page. What the previous page kept
//! is a claim, read from storage any script of the origin can write: it never runs a handler on
//! its own word ([`Again::admit`]).

use std::collections::{HashMap, VecDeque};

use serde_json::Value;

use crate::limits::MAX_LIVE_CALLS;
pub use crate::limits::{RESULT_STORE_BYTES, RESULT_STORE_LIMIT};
use crate::registry::{RegisteredTool, ToolKind};

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
    /// It was running when the page was unloaded, and the page kept that it may run again on
    /// this condition ([`Again::admit`] decides, once its tool is known). It is now marked
    /// running: a re-send joins it.
    Rerun(Again),
}

/// Why a call the reload interrupted may run again on the next page of its session: what the
/// page kept at unload, a claim to check when the call arrives again (SPEC §7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Again {
    /// Its handler had not started (it waited for the person's decision, for its turn under the
    /// tool's `concurrency`, or for its handler): it is asked again, and runs only if the person
    /// approves.
    Ask,
    /// Its handler ran, and its tool was declared `idempotentHint: true`: it runs once more if
    /// the tool still says so.
    Idempotent,
}

/// How an arriving call the reload interrupted is admitted, once its tool is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Readmission {
    /// As a new call (asked first if its tool asks): its tool says it is safe to repeat.
    AsNew,
    /// Only if the person approves it: asked whatever the tool's confirmation policy and any
    /// allowance given before, so the decision is never assumed.
    AskFirst,
    /// Answered that it was not run again: nothing backs the claim.
    NotAgain,
}

impl Again {
    /// `idempotent`: the tool the page declares *now* says so ([`is_idempotent`]). The claim
    /// alone never runs a handler: "it may run again" needs the tool's word, and "it had not
    /// started" leads only to asking the person — an idempotent tool's too (a call waiting for
    /// a decision is never decided by an allowance kept meanwhile).
    pub fn admit(self, idempotent: bool) -> Readmission {
        match (idempotent, self) {
            (_, Again::Ask) => Readmission::AskFirst,
            (true, Again::Idempotent) => Readmission::AsNew,
            (false, Again::Idempotent) => Readmission::NotAgain,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Again::Ask => "ask",
            Again::Idempotent => "idempotent",
        }
    }
}

/// Whether a call of `tool` that a reload interrupted may run once more: its declaration on the
/// page says `annotations.idempotentHint: true`. Not an agent-defined tool's (`registerHandler`):
/// its annotations are the runtime's word about a handler the page wrote, and the page does not
/// hold them.
pub fn is_idempotent<H>(tool: &RegisteredTool<H>) -> bool {
    tool.kind != ToolKind::Handler
        && (tool.annotations.as_ref()).and_then(|a| a.get("idempotentHint"))
            == Some(&Value::Bool(true))
}

/// A call the previous page of the session left running, as that page kept it at unload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interrupted {
    /// The ledger's key: the call id's JSON.
    pub id: String,
    /// `None`: it is not run again.
    pub again: Option<Again>,
}

impl From<String> for Interrupted {
    fn from(id: String) -> Self {
        Self { id, again: None }
    }
}

/// What the page keeps of `calls` at unload: a JSON array whose entries are an id (not run again;
/// also what earlier versions kept) or `{"id", "again": "ask" | "idempotent"}`.
pub fn keep(calls: &[Interrupted]) -> String {
    let entries: Vec<Value> = (calls.iter())
        .map(|call| match call.again {
            None => Value::from(call.id.as_str()),
            Some(again) => serde_json::json!({ "id": call.id, "again": again.as_str() }),
        })
        .collect();
    Value::from(entries).to_string()
}

/// Reads what the previous page kept ([`keep`]), defensively: the storage is the origin's, and
/// any script of it can write there. An entry that is not what a page writes is dropped; a claim
/// that is not one a page makes, or an id kept twice, leaves the call with no claim (not run
/// again). The second value says what was ignored, for a warning; an empty text is nothing kept.
pub fn read_kept(text: &str) -> (Vec<Interrupted>, Option<String>) {
    let mut calls: Vec<Interrupted> = Vec::new();
    if text.is_empty() {
        return (calls, None);
    }
    let Ok(Value::Array(entries)) = serde_json::from_str::<Value>(text) else {
        let why = "it is not a JSON array; none of its calls is run again".to_owned();
        return (calls, Some(why));
    };
    let mut ignored = entries.len().saturating_sub(MAX_LIVE_CALLS);
    for entry in entries.iter().take(MAX_LIVE_CALLS) {
        let Some((id, again)) = kept_entry(entry) else {
            ignored += 1;
            continue;
        };
        let again = again.unwrap_or_else(|()| {
            ignored += 1;
            None
        });
        match calls.iter_mut().find(|call| call.id == id) {
            Some(earlier) => {
                ignored += 1;
                earlier.again = None;
            }
            None => calls.push(Interrupted {
                id: id.to_owned(),
                again,
            }),
        }
    }
    let why = (ignored > 0).then(|| {
        format!(
            "{ignored} of its {} entries are not what a page keeps (an id, or {{id, again: \"ask\" \
             | \"idempotent\"}}, each id once, at most {MAX_LIVE_CALLS}); they were ignored, and \
             no call they name is run again",
            entries.len()
        )
    });
    (calls, why)
}

/// One entry of what a page kept: its id and its claim (`Err`: a claim no page makes); `None`: no
/// entry a page writes.
fn kept_entry(entry: &Value) -> Option<(&str, Result<Option<Again>, ()>)> {
    let (id, again) = match entry {
        Value::String(id) => return Some((id, Ok(None))),
        Value::Object(fields) => (fields.get("id")?.as_str()?, fields.get("again")),
        _ => return None,
    };
    let again = match again.map(Value::as_str) {
        None => Ok(None),
        Some(Some("ask")) => Ok(Some(Again::Ask)),
        Some(Some("idempotent")) => Ok(Some(Again::Idempotent)),
        Some(_) => Err(()),
    };
    Some((id, again))
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
    interrupted: Vec<Interrupted>,
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

    /// Calls that were running when the previous page of this session went away (an id alone:
    /// not run again).
    pub fn with_interrupted(
        mut self,
        calls: impl IntoIterator<Item = impl Into<Interrupted>>,
    ) -> Self {
        self.interrupted.extend(calls.into_iter().map(Into::into));
        self
    }

    pub fn arrive(&mut self, id: &str) -> Arrival {
        if self.running.iter().any(|r| r == id) {
            return Arrival::Join;
        }
        if let Some(frame) = self.finished.get(id) {
            return Arrival::Resend(frame.clone());
        }
        if let Some(at) = self.interrupted.iter().position(|i| i.id == id) {
            let Some(again) = self.interrupted[at].again else {
                return Arrival::Interrupted;
            };
            // Once in this page's life: from now on it is running, then finished.
            self.interrupted.swap_remove(at);
            self.running.push(id.to_owned());
            return Arrival::Rerun(again);
        }
        self.running.push(id.to_owned());
        Arrival::Run
    }

    /// The call ended with `frame` (sent now, and again on a re-send). A cancelled call records
    /// the frame a re-send should get.
    pub fn finish(&mut self, id: &str, frame: String) {
        self.running.retain(|r| r != id);
        self.interrupted.retain(|i| i.id != id);
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
    fn a_call_that_may_run_again_runs_once_in_this_page_then_is_answered_as_any_other() {
        let kept = Interrupted {
            id: "x".into(),
            again: Some(Again::Idempotent),
        };
        let mut ledger = CallLedger::default().with_interrupted([kept]);
        assert_eq!(ledger.arrive("x"), Arrival::Rerun(Again::Idempotent));
        assert_eq!(
            ledger.arrive("x"),
            Arrival::Join,
            "re-sent while it runs again"
        );
        ledger.finish("x", "ran again".into());
        assert_eq!(ledger.arrive("x"), Arrival::Resend("ran again".into()));
    }

    #[test]
    fn what_a_page_keeps_reads_back_as_it_was() {
        let calls = vec![
            Interrupted::from("1".to_owned()),
            Interrupted {
                id: r#""a""#.into(),
                again: Some(Again::Ask),
            },
            Interrupted {
                id: "3".into(),
                again: Some(Again::Idempotent),
            },
        ];
        assert_eq!(read_kept(&keep(&calls)), (calls, None));
        assert_eq!(read_kept(""), (Vec::new(), None));
        // What an earlier version kept: ids alone.
        let (calls, why) = read_kept(r#"["7","8"]"#);
        assert_eq!((calls.len(), calls[1].again, why), (2, None, None));
    }

    #[test]
    fn what_a_page_does_not_keep_is_ignored_and_never_runs_anything() {
        for text in ["{", "null", r#"{"id":"1","again":"ask"}"#, "\u{0}"] {
            let (calls, why) = read_kept(text);
            assert!(calls.is_empty(), "{text}");
            assert!(why.unwrap().contains("not a JSON array"), "{text}");
        }
        let (calls, why) = read_kept(
            r#"["1", 2, null, {"again":"ask"}, {"id":3,"again":"ask"},
               {"id":"4","again":"always"}, {"id":"5","again":true},
               {"id":"6","again":"idempotent"}, {"id":"6","again":"ask"},
               {"id":"7","again":"ask","extra":1}]"#,
        );
        let kept: Vec<(&str, Option<Again>)> =
            (calls.iter()).map(|c| (c.id.as_str(), c.again)).collect();
        assert_eq!(
            kept,
            [
                ("1", None),
                // A claim no page makes: the call is still known as interrupted, never re-run.
                ("4", None),
                ("5", None),
                // Kept twice: no claim holds.
                ("6", None),
                ("7", Some(Again::Ask)),
            ]
        );
        assert!(why.unwrap().starts_with("7 of its 10 entries"));
        // A flood: the first entries a page could have kept count, the rest are ignored.
        let flood: Vec<String> = (0..MAX_LIVE_CALLS + 5).map(|n| n.to_string()).collect();
        let (calls, why) = read_kept(&serde_json::to_string(&flood).unwrap());
        assert_eq!(calls.len(), MAX_LIVE_CALLS);
        assert!(why.unwrap().starts_with("5 of its"));
    }

    #[test]
    fn a_claim_runs_nothing_on_its_own_word() {
        assert_eq!(Again::Idempotent.admit(true), Readmission::AsNew);
        // Not started (waiting for a decision or its turn): asked, its tool idempotent or not.
        assert_eq!(Again::Ask.admit(true), Readmission::AskFirst);
        assert_eq!(Again::Ask.admit(false), Readmission::AskFirst);
        assert_eq!(Again::Idempotent.admit(false), Readmission::NotAgain);
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
        /// Under any interleaving of arrivals and finishes, an id is never `Run` (or `Rerun`)
        /// twice in one page's life while its answer is still remembered, whatever the previous
        /// page kept of it.
        #[test]
        fn never_runs_an_id_twice(
            ops in proptest::collection::vec((0u8..6, any::<bool>()), 1..200),
            kept in proptest::collection::vec((0u8..6, 0u8..3), 0..8),
        ) {
            let kept = kept.into_iter().map(|(n, again)| Interrupted {
                id: format!("id-{n}"),
                again: [None, Some(Again::Ask), Some(Again::Idempotent)][again as usize],
            });
            let mut ledger = CallLedger::new(1_000).with_interrupted(kept);
            let mut runs = std::collections::HashMap::<String, usize>::new();
            for (n, finish) in ops {
                let id = format!("id-{n}");
                if finish {
                    if ledger.is_running(&id) {
                        ledger.finish(&id, format!("answer-{id}"));
                    }
                } else if matches!(ledger.arrive(&id), Arrival::Run | Arrival::Rerun(_)) {
                    *runs.entry(id.clone()).or_default() += 1;
                }
                prop_assert!(runs.values().all(|&count| count <= 1), "{runs:?}");
            }
        }
    }
}
