//! Reloads (SPEC §5 "at most once", §7 "Calls that behave as their tools say"), natively with time
//! as a parameter: a page's life ends with what it keeps at unload, and the next page of the
//! session starts from it while the runtime re-sends every call it has no answer for.
//!
//! A call waiting for the person's decision (or its turn, or its handler) is asked again; a call
//! of a tool declared `idempotentHint: true` runs once more; every other call is answered that it
//! was not run again. What was kept is a claim: the tool the next page declares decides, and a
//! claim alone never runs a handler.

use client_tools_core::page_engine::{
    Answer, CallHandle, EngineConfig, Event, HandlerOutcome, Input, Output, PageEngine,
    QuestionKind,
};
use client_tools_core::registry::{Declaration, ToolKind};
use client_tools_core::time::Millis;
use client_tools_core::WarningCode;
use proptest::prelude::*;
use serde_json::{json, Value};

/// One page's life: its engine, the time, and what it asked for since the last look.
struct Page {
    engine: PageEngine<&'static str>,
    now: Millis,
    outputs: Vec<Output<&'static str>>,
}

impl Page {
    /// The first page of a session.
    fn first() -> Self {
        Self::loaded(None, true)
    }

    /// The next page of the session, after the previous one kept `kept` at unload and
    /// (`defined`) declared its tools again as it loaded.
    fn loaded(kept: Option<&str>, defined: bool) -> Self {
        let mut engine = PageEngine::new(EngineConfig::default(), 30_000, Vec::new());
        if let Some(kept) = kept {
            engine.reloaded(kept);
        }
        let mut page = Self {
            engine,
            now: Millis(1_000.0),
            outputs: Vec::new(),
        };
        if defined {
            page.define_tools();
        }
        page.input(Input::SessionBegun { resumed: true });
        page
    }

    /// The page unloads: what it keeps for the next page of the session.
    fn unload(self) -> String {
        self.engine.kept_at_unload()
    }

    /// A reload: the next page, with what this one kept.
    fn reload(self) -> Page {
        Page::loaded(Some(&self.unload()), true)
    }

    fn define_tools(&mut self) {
        self.define(
            "refresh_feed",
            Some(json!({"idempotentHint": true})),
            None,
            None,
        );
        self.define("place_order", None, None, None);
        self.define("wipe", None, Some(true), None);
        self.define("save", None, None, Some(1.0));
        self.define(
            "sync",
            Some(json!({"idempotentHint": true, "destructiveHint": true})),
            None,
            None,
        );
    }

    fn define(
        &mut self,
        name: &'static str,
        annotations: Option<Value>,
        require_confirmation: Option<bool>,
        concurrency: Option<f64>,
    ) {
        let declaration = Declaration {
            original_name: name.into(),
            description: Some(format!("{name} (a test tool)")),
            parameters: Some(json!({"type": "object"})),
            annotations,
            require_confirmation,
            concurrency,
            timeout_ms: Some(10_000.0),
            ..Declaration::default()
        };
        (self
            .engine
            .define(self.now, declaration, ToolKind::Function, name))
        .unwrap();
        self.drain();
    }

    fn drain(&mut self) {
        self.outputs
            .extend(std::iter::from_fn(|| self.engine.poll_output()));
    }

    fn input(&mut self, input: Input<'_>) {
        self.engine.handle(self.now, input);
        self.drain();
    }

    /// The runtime sends (or re-sends) call `id`.
    fn call(&mut self, id: i64, name: &str) {
        let frame = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                           "params": {"name": name, "arguments": {}}});
        self.input(Input::Frame(&frame.to_string()));
    }

    fn advance(&mut self, ms: u64) {
        let until = self.now.after(ms);
        while let Some(at) = self.engine.poll_timeout().filter(|at| *at <= until) {
            self.now = self.now.max(at);
            self.input(Input::Timeout);
        }
        self.now = until;
    }

    fn take(&mut self) -> Vec<Output<&'static str>> {
        std::mem::take(&mut self.outputs)
    }

    /// What happened since the last look, summed up.
    fn look(&mut self) -> Seen {
        let mut seen = Seen::default();
        for output in self.take() {
            match output {
                Output::RunHandler { call, .. } => seen.ran.push(call),
                Output::AskPerson { call, question, .. } => seen.asked.push((call, question.kind)),
                Output::Send(frame) => {
                    let frame: Value = serde_json::from_str(&frame).unwrap();
                    if frame.get("id").is_some() {
                        seen.answers.push(frame);
                    }
                }
                Output::Emit(Event::Warning {
                    code,
                    message,
                    tool_name,
                }) => seen.warnings.push((code, message, tool_name)),
                _ => {}
            }
        }
        seen
    }

    fn settle(&mut self, call: CallHandle, value: &str) {
        let outcome = HandlerOutcome::Returned(value.into());
        self.input(Input::HandlerSettled { call, outcome });
    }

    fn answer(&mut self, call: CallHandle, answer: Answer) {
        self.input(Input::Answered { call, answer });
    }

    /// The person approves `call` (nothing allowed beyond it).
    fn approve(&mut self, call: CallHandle) {
        let approve = Answer::Approve {
            allow_session: false,
            allow_always: false,
        };
        self.answer(call, approve);
    }
}

#[derive(Debug, Default)]
struct Seen {
    ran: Vec<CallHandle>,
    asked: Vec<(CallHandle, QuestionKind)>,
    answers: Vec<Value>,
    warnings: Vec<(WarningCode, String, Option<String>)>,
}

impl Seen {
    /// The one handler run.
    fn ran_once(&self) -> CallHandle {
        assert_eq!(self.ran.len(), 1, "{self:?}");
        self.ran[0]
    }

    /// The one question, which is a confirmation that does not offer "allow for this session".
    fn asked_once(&self) -> CallHandle {
        assert_eq!(
            self.ran,
            [],
            "nothing runs before the person decides: {self:?}"
        );
        match &self.asked[..] {
            [(
                call,
                QuestionKind::Confirm {
                    offer_session: false,
                    ..
                },
            )] => *call,
            other => panic!("expected one confirmation: {other:?}"),
        }
    }

    /// The one answer, for call `id`: its text and whether it is an error.
    fn answered(&self, id: i64) -> (String, bool) {
        assert_eq!(self.answers.len(), 1, "{self:?}");
        let answer = &self.answers[0];
        assert_eq!(answer["id"], id);
        let result = &answer["result"];
        let text = result["content"][0]["text"].as_str().unwrap().to_owned();
        (text, result["isError"].as_bool().unwrap())
    }

    fn not_run_again(&self, id: i64) {
        assert_eq!(self.ran, [], "{self:?}");
        assert!(self.asked.is_empty(), "{self:?}");
        let (text, is_error) = self.answered(id);
        assert!(is_error, "{text}");
        assert_eq!(
            text,
            format!("the page was reloaded while call {id} was running; it was not run again")
        );
    }
}

// ---- what a reload does to each kind of call -----------------------------------------------------

#[test]
fn a_call_of_an_idempotent_tool_the_reload_interrupted_runs_once_more() {
    let mut page = Page::first();
    page.call(1, "refresh_feed");
    page.look().ran_once();

    let mut page = page.reload();
    page.call(1, "refresh_feed");
    let again = page.look().ran_once();
    page.call(1, "refresh_feed");
    let seen = page.look();
    assert!(
        seen.ran.is_empty() && seen.answers.is_empty(),
        "a re-send joins it: {seen:?}"
    );
    page.settle(again, r#"{"items":3}"#);
    let (text, is_error) = page.look().answered(1);
    assert!(!is_error && text.contains("items"), "{text}");
    // Its answer is stored like any other.
    page.call(1, "refresh_feed");
    let seen = page.look();
    assert!(seen.ran.is_empty());
    assert_eq!(seen.answered(1).0, text);
}

#[test]
fn a_call_of_any_other_tool_stays_interrupted() {
    let mut page = Page::first();
    page.call(2, "place_order");
    page.look().ran_once();

    let mut page = page.reload();
    page.call(2, "place_order");
    page.look().not_run_again(2);
    page.call(2, "place_order");
    page.look().not_run_again(2);
}

#[test]
fn a_call_waiting_for_the_persons_decision_is_asked_again_never_assumed() {
    let mut page = Page::first();
    page.call(3, "wipe");
    page.look().asked_once();

    let mut page = page.reload();
    // On the new page the person allowed `wipe` for the session on another call: the
    // interrupted one is asked all the same.
    page.call(30, "wipe");
    let other = page.take();
    let other = other
        .iter()
        .find_map(|o| match o {
            Output::AskPerson { call, .. } => Some(*call),
            _ => None,
        })
        .unwrap();
    page.answer(
        other,
        Answer::Approve {
            allow_session: true,
            allow_always: false,
        },
    );
    page.take();
    page.call(3, "wipe");
    let asked = page.look().asked_once();
    page.approve(asked);
    let ran = page.look().ran_once();
    page.settle(ran, r#""wiped""#);
    assert_eq!(page.look().answered(3), ("wiped".to_owned(), false));
}

#[test]
fn a_rejection_after_the_reload_ends_the_call_as_any_rejection() {
    let mut page = Page::first();
    page.call(4, "wipe");
    page.look().asked_once();

    let mut page = page.reload();
    page.call(4, "wipe");
    let asked = page.look().asked_once();
    page.answer(asked, Answer::Reject(Some("not now".into())));
    let seen = page.look();
    assert!(seen.ran.is_empty());
    assert_eq!(
        seen.answered(4),
        ("rejected by the user: not now".to_owned(), true)
    );
}

#[test]
fn a_result_form_waiting_for_the_person_is_shown_again() {
    let form_call = |page: &mut Page| {
        let frame = json!({"jsonrpc": "2.0", "id": 12, "method": "tools/call", "params": {
            "name": "pick_date", "arguments": {},
            "_meta": {"clienttools/fallback": "form",
                      "clienttools/outputSchema": {"type": "object", "required": ["date"],
                                                   "properties": {"date": {"type": "string"}}}}}});
        page.input(Input::Frame(&frame.to_string()));
        page.advance(client_tools_core::limits::HANDLER_GRACE_MS);
        let seen = page.look();
        assert!(seen.ran.is_empty());
        match &seen.asked[..] {
            [(call, QuestionKind::Result)] => *call,
            other => panic!("expected the result form: {other:?}"),
        }
    };
    let mut page = Page::first();
    form_call(&mut page);
    let mut page = page.reload();
    let form = form_call(&mut page);
    page.answer(form, Answer::Result(json!({"date": "2026-12-24"})));
    let (text, is_error) = page.look().answered(12);
    assert!(!is_error && text.contains("2026-12-24"), "{text}");
}

#[test]
fn a_call_waiting_for_its_turn_is_asked_before_it_runs() {
    let mut page = Page::first();
    page.call(5, "save");
    page.look().ran_once();
    page.call(6, "save");
    let seen = page.look();
    assert!(
        seen.ran.is_empty() && seen.asked.is_empty(),
        "6 waits for its turn"
    );

    let mut page = page.reload();
    // The runtime re-sends both, in its own order.
    page.call(6, "save");
    let asked = page.look().asked_once();
    page.call(5, "save");
    page.look().not_run_again(5);
    page.approve(asked);
    page.look().ran_once();
}

/// A call that had not started is asked, its tool idempotent or not: the reload does not turn
/// "it waited" into "it may run" (nor lets an allowance kept meanwhile decide for the person).
#[test]
fn a_call_of_an_idempotent_tool_that_waited_for_its_turn_is_asked_too() {
    let mut page = Page::first();
    page.define(
        "poll",
        Some(json!({"idempotentHint": true})),
        None,
        Some(1.0),
    );
    page.call(8, "poll");
    page.look().ran_once();
    page.call(9, "poll");
    let seen = page.look();
    assert!(seen.ran.is_empty() && seen.asked.is_empty(), "9 waits");

    let mut page = page.reload();
    page.define(
        "poll",
        Some(json!({"idempotentHint": true})),
        None,
        Some(1.0),
    );
    page.call(9, "poll");
    let asked = page.look().asked_once();
    page.approve(asked);
    page.look().ran_once();
}

#[test]
fn an_idempotent_tool_that_asks_is_asked_again_before_it_runs_once_more() {
    let mut page = Page::first();
    page.call(7, "sync");
    let asked = page.look().asked_once();
    page.approve(asked);
    page.look().ran_once();

    let mut page = page.reload();
    page.call(7, "sync");
    let asked = page.look().asked_once();
    page.approve(asked);
    page.look().ran_once();
}

#[test]
fn a_re_sent_call_that_arrives_before_the_tools_are_declared_waits_for_them() {
    let mut page = Page::first();
    page.call(8, "refresh_feed");
    page.look().ran_once();
    let kept = page.unload();

    let mut page = Page::loaded(Some(&kept), false);
    page.call(8, "refresh_feed");
    assert!(
        page.look().ran.is_empty(),
        "no tool yet: it waits the grace"
    );
    page.advance(500);
    page.define_tools();
    page.look().ran_once();
}

#[test]
fn a_new_session_owes_nothing_to_what_the_earlier_page_kept() {
    let mut page = Page::first();
    page.call(9, "place_order");
    page.look().ran_once();
    let mut page = page.reload();
    page.input(Input::SessionBegun { resumed: false });
    page.take();
    // The new session's call 9 is a new call.
    page.call(9, "place_order");
    page.look().ran_once();
}

// ---- a reload storm --------------------------------------------------------------------------------

#[test]
fn a_reload_storm_during_a_waiting_confirmation_asks_each_time_and_runs_once() {
    let mut page = Page::first();
    page.call(10, "wipe");
    page.look().asked_once();
    for _ in 0..5 {
        page = page.reload();
        page.call(10, "wipe");
        page.look().asked_once();
        // The runtime re-sends again within the same page life: one question still.
        page.call(10, "wipe");
        let seen = page.look();
        assert!(seen.asked.is_empty() && seen.ran.is_empty() && seen.answers.is_empty());
    }
    let mut page = page.reload();
    page.call(10, "wipe");
    let asked = page.look().asked_once();
    page.approve(asked);
    let ran = page.look().ran_once();
    page.settle(ran, r#""wiped""#);
    assert_eq!(page.look().answered(10), ("wiped".to_owned(), false));
    // Finished: a later page of the session that knows nothing of it is not the ledger's concern,
    // but this page answers a re-send with the stored answer.
    page.call(10, "wipe");
    let seen = page.look();
    assert!(seen.ran.is_empty() && seen.asked.is_empty());
    assert_eq!(seen.answered(10), ("wiped".to_owned(), false));
}

#[test]
fn a_person_who_never_answers_across_reloads_gets_the_human_bound_on_the_last_page() {
    let mut page = Page::first();
    page.call(11, "wipe");
    page.look().asked_once();
    let mut page = page.reload();
    page.call(11, "wipe");
    page.look().asked_once();
    page.advance(client_tools_core::limits::HUMAN_WAIT_MAX_MS);
    let seen = page.look();
    assert!(seen.ran.is_empty());
    let (text, is_error) = seen.answered(11);
    assert!(
        is_error && text.contains("no confirmation from the user"),
        "{text}"
    );
}

/// What one page life may do with the call in flight.
#[derive(Debug, Clone, Copy)]
enum Step {
    /// The runtime re-sends it.
    Resend,
    /// The person approves what they are asked.
    Approve,
    /// Its handler ends.
    Settle,
    /// The page reloads.
    Reload,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        Just(Step::Resend),
        Just(Step::Approve),
        Just(Step::Settle),
        Just(Step::Reload)
    ]
}

/// What the storm did to the call so far.
#[derive(Default)]
struct Tally {
    runs_in_all: usize,
    runs_this_page: usize,
    running: Option<CallHandle>,
    asking: Option<CallHandle>,
    /// The call's one answer, and the page life that gave it.
    answer: Option<(Value, usize)>,
}

impl Tally {
    fn note(&mut self, seen: Seen, page: usize) -> Result<(), TestCaseError> {
        self.runs_in_all += seen.ran.len();
        self.runs_this_page += seen.ran.len();
        self.running = seen.ran.first().copied().or(self.running);
        self.asking = seen.asked.first().map(|(call, _)| *call).or(self.asking);
        prop_assert!(seen.answers.len() <= 1);
        if let Some(frame) = seen.answers.into_iter().next() {
            match &self.answer {
                Some((earlier, _)) => prop_assert_eq!(earlier, &frame, "one outcome per call"),
                None => self.answer = Some((frame, page)),
            }
        }
        Ok(())
    }
}

proptest! {
    /// Under any storm of reloads, re-sends, approvals and endings: no handler runs twice in one
    /// page life; a tool that is not idempotent runs at most once in all; and the call has one
    /// answer, which every re-send gets.
    #[test]
    fn a_storm_never_runs_a_call_twice_in_one_page_or_a_non_idempotent_one_twice_at_all(
        tool in prop_oneof![Just("refresh_feed"), Just("place_order"), Just("wipe"), Just("sync")],
        steps in proptest::collection::vec(step(), 1..40),
    ) {
        let mut page = Page::first();
        let mut life = 0;
        let mut tally = Tally::default();
        page.call(1, tool);
        tally.note(page.look(), life)?;
        for step in steps {
            // The runtime re-sends only what it has no answer for, except to the page that gave
            // it (a re-send that crossed the answer).
            let resends = tally.answer.as_ref().is_none_or(|(_, given)| *given == life);
            match step {
                Step::Resend if resends => page.call(1, tool),
                Step::Resend => {}
                Step::Approve => {
                    if let Some(call) = tally.asking.take() {
                        page.answer(call, Answer::Approve { allow_session: false, allow_always: false });
                    }
                }
                Step::Settle => {
                    if let Some(call) = tally.running.take() {
                        page.settle(call, r#""done""#);
                    }
                }
                Step::Reload => {
                    page = page.reload();
                    life += 1;
                    (tally.runs_this_page, tally.running, tally.asking) = (0, None, None);
                    if tally.answer.is_none() {
                        page.call(1, tool);
                    }
                }
            }
            tally.note(page.look(), life)?;
            prop_assert!(tally.runs_this_page <= 1, "twice in one page life");
            if tool == "place_order" || tool == "wipe" {
                prop_assert!(tally.runs_in_all <= 1, "{} ran {} times", tool, tally.runs_in_all);
            }
        }
    }
}

// ---- what was kept is a claim -------------------------------------------------------------------

#[test]
fn what_a_page_keeps_says_which_calls_may_run_again() {
    let mut page = Page::first();
    page.call(1, "refresh_feed");
    page.call(2, "place_order");
    page.call(3, "wipe");
    page.call(4, "save");
    page.call(5, "save");
    page.call(6, "missing_tool");
    page.take();
    let kept: Value = serde_json::from_str(&page.unload()).unwrap();
    assert_eq!(
        kept,
        json!([
            {"id": "1", "again": "idempotent"},
            "2",
            {"id": "3", "again": "ask"},
            "4",
            {"id": "5", "again": "ask"},
            {"id": "6", "again": "ask"},
        ])
    );
}

#[test]
fn a_claim_of_idempotence_the_tool_does_not_make_runs_nothing_and_warns() {
    let mut page = Page::first();
    page.call(1, "place_order");
    page.look().ran_once();
    // Storage any script of the origin can write says "it may run again".
    page.unload();
    let hostile = r#"[{"id":"1","again":"idempotent"}]"#;
    let mut page = Page::loaded(Some(hostile), true);
    assert!(
        page.look().warnings.is_empty(),
        "well-formed: read as it is"
    );
    page.call(1, "place_order");
    let seen = page.look();
    seen.not_run_again(1);
    let [(code, message, tool)] = &seen.warnings[..] else {
        panic!("{seen:?}")
    };
    assert_eq!(*code, WarningCode::StoredDataIgnored);
    assert_eq!(tool.as_deref(), Some("place_order"));
    assert!(message.contains("does not say so now"), "{message}");
}

#[test]
fn a_tool_declared_again_without_the_hint_is_not_run_again() {
    let mut page = Page::first();
    page.call(1, "refresh_feed");
    page.look().ran_once();
    let kept = page.unload();
    let mut page = Page::loaded(Some(&kept), false);
    page.define("refresh_feed", None, None, None);
    page.take();
    page.call(1, "refresh_feed");
    let seen = page.look();
    seen.not_run_again(1);
    assert_eq!(seen.warnings.len(), 1);
}

#[test]
fn a_claim_that_it_waited_for_the_person_only_ever_asks() {
    let mut page = Page::first();
    page.call(1, "place_order");
    page.look().ran_once();
    page.unload();
    let hostile = r#"[{"id":"1","again":"ask"}]"#;
    let mut page = Page::loaded(Some(hostile), true);
    page.call(1, "place_order");
    let asked = page.look().asked_once();
    page.answer(asked, Answer::Reject(None));
    let seen = page.look();
    assert!(seen.ran.is_empty());
    assert!(seen.answered(1).1);
}

#[test]
fn an_agent_defined_tool_is_never_run_again_on_a_claim() {
    let mut page = Page::loaded(Some(r#"[{"id":"1","again":"idempotent"}]"#), true);
    page.engine
        .register_handler(page.now, "agent_tool", "agent handler")
        .unwrap();
    page.take();
    page.call(1, "agent_tool");
    page.look().not_run_again(1);
}

#[test]
fn a_served_request_is_never_run_again_on_a_claim() {
    let mut page = Page::loaded(Some(r#"[{"id":"5","again":"idempotent"}]"#), true);
    page.engine.serve_with("server");
    page.take();
    let frame = json!({"jsonrpc": "2.0", "id": 5, "method": "resources/read",
                       "params": {"uri": "page://x"}});
    page.input(Input::Frame(&frame.to_string()));
    let seen = page.look();
    assert!(seen.ran.is_empty());
    assert_eq!(
        seen.answers[0]["error"]["message"],
        "the page was reloaded while it answered request 5"
    );
}

#[test]
fn kept_data_that_is_not_what_a_page_keeps_is_ignored_with_a_warning() {
    for hostile in [
        "not json",
        r#"{"1":"idempotent"}"#,
        r#"[1, {"again":"idempotent"}, {"id":"2","again":"always"}, "2"]"#,
    ] {
        let mut page = Page::loaded(Some(hostile), true);
        let seen = page.look();
        let [(code, message, None)] = &seen.warnings[..] else {
            panic!("{hostile}: {seen:?}")
        };
        assert_eq!(*code, WarningCode::StoredDataIgnored);
        assert!(message.contains("is not what a page keeps"), "{message}");
        // Id 2 was named, with a claim no page makes: it is known as interrupted, not run again.
        page.call(2, "refresh_feed");
        let seen = page.look();
        if hostile.starts_with('[') {
            seen.not_run_again(2);
        } else {
            // Nothing could be read: the call is new to this page.
            seen.ran_once();
        }
    }
}
