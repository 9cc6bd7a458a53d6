//! A tool's `concurrency` through the page engine, natively, with time as a parameter: calls beyond
//! the bound wait in arrival order (`toolqueued`), start when a turn is free (asked first, then
//! run), their timeout starting with their handler; a cancel, an unregister, a new session end a
//! waiting call with one outcome and no handler run. Tools without it run calls in parallel.

use client_tools_core::limits::MAX_CONCURRENCY;
use client_tools_core::page_api::read_declaration;
use client_tools_core::page_engine::{
    Answer, CallEvent, CallHandle, Caller, EngineConfig, Event, HandlerOutcome, Input, Output,
    PageEngine,
};
use client_tools_core::registry::{Declaration, ToolKind};
use client_tools_core::time::Millis;
use client_tools_core::ErrorCode;
use serde_json::{json, Value};

struct Page {
    engine: PageEngine<&'static str>,
    now: Millis,
    outputs: Vec<Output<&'static str>>,
}

/// What happened, in order, in a form a test compares whole.
#[derive(Debug, PartialEq)]
enum Seen {
    /// `toolqueued` of call id, at this position.
    Queued(String, usize),
    Activated(String),
    Cancelled(String, String),
    Finished(String),
    /// The handler of this call runs.
    Ran(CallHandle),
    Asked(CallHandle),
    /// An answer frame: call id, its text, whether an error.
    Answer(Value, String, bool),
    /// A page call settled (`None`: cancelled).
    Settled(CallHandle, Option<String>),
}

fn tool(name: &str, concurrency: Option<f64>) -> Declaration {
    Declaration {
        original_name: name.into(),
        description: Some(name.into()),
        parameters: Some(json!({"type": "object"})),
        timeout_ms: Some(1_000.0),
        concurrency,
        ..Declaration::default()
    }
}

impl Page {
    /// A page with `save` (`concurrency` as given, timeout 1 s) and `read` (no bound).
    fn with_save(concurrency: f64) -> Self {
        let mut page = Self {
            engine: PageEngine::new(EngineConfig::default(), 30_000, Vec::new()),
            now: Millis(1_000.0),
            outputs: Vec::new(),
        };
        page.define(tool("save", Some(concurrency)));
        page.define(tool("read", None));
        page.outputs.clear();
        page
    }

    fn define(&mut self, declaration: Declaration) {
        let kind = ToolKind::Function;
        (self.engine.define(self.now, declaration, kind, "handler")).unwrap();
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

    fn call(&mut self, id: i64, name: &str) {
        let frame = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                           "params": {"name": name, "arguments": {"n": id}}});
        self.input(Input::Frame(&frame.to_string()));
    }

    fn cancel(&mut self, id: i64) {
        let frame = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                           "params": {"requestId": id, "reason": "the agent gave up"}});
        self.input(Input::Frame(&frame.to_string()));
    }

    /// Moves the clock to `ms` later, waking the engine at every time it asked for on the way.
    fn advance(&mut self, ms: u64) {
        let until = self.now.after(ms);
        while let Some(at) = self.engine.poll_timeout().filter(|at| *at <= until) {
            self.now = self.now.max(at);
            self.input(Input::Timeout);
        }
        self.now = until;
    }

    fn settle(&mut self, call: CallHandle) {
        let outcome = HandlerOutcome::Returned(r#"{"ok":true}"#.into());
        self.input(Input::HandlerSettled { call, outcome });
    }

    /// What happened since the last look (frames other than answers, warnings and list changes
    /// left out).
    fn seen(&mut self) -> Vec<Seen> {
        std::mem::take(&mut self.outputs)
            .into_iter()
            .filter_map(|output| match output {
                Output::RunHandler { call, .. } => Some(Seen::Ran(call)),
                Output::AskPerson { call, .. } => Some(Seen::Asked(call)),
                Output::Settled { call, result } => {
                    Some(Seen::Settled(call, result.map(|r| r.text().to_owned())))
                }
                Output::Send(frame) => {
                    let frame: Value = serde_json::from_str(&frame).unwrap();
                    let result = frame.get("result")?.get("content")?;
                    Some(Seen::Answer(
                        frame["id"].clone(),
                        result[0]["text"].as_str().unwrap().to_owned(),
                        frame["result"]["isError"] == true,
                    ))
                }
                Output::Emit(Event::Call { call_id, what, .. }) => Some(match what {
                    CallEvent::Queued { position } => Seen::Queued(call_id, position),
                    CallEvent::Activated => Seen::Activated(call_id),
                    CallEvent::Cancelled { reason, .. } => Seen::Cancelled(call_id, reason),
                    CallEvent::Finished { .. } => Seen::Finished(call_id),
                }),
                _ => None,
            })
            .collect()
    }

    /// The handlers run since the last look (the rest of what happened is dropped).
    fn ran(&mut self) -> Vec<CallHandle> {
        (self.seen().into_iter())
            .filter_map(|seen| match seen {
                Seen::Ran(call) => Some(call),
                _ => None,
            })
            .collect()
    }
}

fn ok(id: i64) -> Seen {
    Seen::Answer(json!(id), r#"{"ok":true}"#.into(), false)
}

#[test]
fn one_at_a_time_serializes_calls_in_arrival_order() {
    let mut page = Page::with_save(1.0);
    page.call(1, "save");
    let [first] = page.ran()[..] else {
        panic!("the first call runs at once")
    };
    page.call(2, "save");
    page.call(3, "save");
    assert_eq!(
        page.seen(),
        [Seen::Queued("2".into(), 1), Seen::Queued("3".into(), 2)],
        "the others wait, in arrival order, and nothing runs"
    );
    assert_eq!(page.engine.live_calls(), 3);

    page.settle(first);
    let seen = page.seen();
    let [Seen::Finished(_), answer, Seen::Activated(next_id), Seen::Ran(second)] = &seen[..] else {
        panic!("the first answers, then the second starts: {seen:?}")
    };
    assert_eq!((answer, next_id.as_str()), (&ok(1), "2"));
    page.settle(*second);
    let seen = page.seen();
    assert!(
        matches!(&seen[..], [_, _, Seen::Activated(id), Seen::Ran(_)] if id == "3"),
        "{seen:?}"
    );
}

#[test]
fn a_bound_of_two_runs_two_and_starts_the_third_when_either_ends() {
    let mut page = Page::with_save(2.0);
    for id in 1..=3 {
        page.call(id, "save");
    }
    let seen = page.seen();
    let runs: Vec<_> = (seen.iter())
        .filter_map(|s| match s {
            Seen::Ran(call) => Some(*call),
            _ => None,
        })
        .collect();
    assert_eq!(runs.len(), 2, "{seen:?}");
    assert!(seen.contains(&Seen::Queued("3".into(), 1)), "{seen:?}");
    // The second ends first: its turn goes to the third, the first still runs.
    page.settle(runs[1]);
    let seen = page.seen();
    assert_eq!(seen[1], ok(2));
    assert_eq!(seen[2..3], [Seen::Activated("3".into())]);
    assert!(matches!(seen[3], Seen::Ran(_)), "{seen:?}");
    assert_eq!(page.engine.live_calls(), 2);
}

#[test]
fn tools_without_a_bound_run_their_calls_in_parallel() {
    let mut page = Page::with_save(1.0);
    page.call(1, "read");
    page.call(2, "read");
    page.call(3, "save");
    page.call(4, "read");
    assert_eq!(page.ran().len(), 4, "another tool's bound changes nothing");
}

#[test]
fn the_timeout_starts_when_the_handler_starts_not_while_waiting() {
    let mut page = Page::with_save(1.0);
    page.call(1, "save");
    page.call(2, "save");
    page.seen();
    // The first never settles: it times out after its 1 s, and the second starts then.
    page.advance(999);
    assert_eq!(page.seen(), []);
    page.advance(1);
    let seen = page.seen();
    let timed_out = |id: i64| Seen::Answer(json!(id), "timed out after 1000 ms".into(), true);
    assert!(
        matches!(&seen[..], [
            Seen::Cancelled(one, why), Seen::Finished(_), answer, Seen::Activated(two), Seen::Ran(_)
        ] if one == "1" && why == "timeout" && *answer == timed_out(1) && two == "2"),
        "{seen:?}"
    );
    // The second waited 1 s already, yet has its whole second from its start.
    page.advance(999);
    assert_eq!(
        page.seen(),
        [],
        "not timed out: its timeout started with it"
    );
    page.advance(1);
    let seen = page.seen();
    assert!(seen.contains(&timed_out(2)), "{seen:?}");
    assert_eq!(page.engine.poll_timeout(), None);
}

#[test]
fn a_waiting_call_has_no_timer_however_long_it_waits() {
    let mut page = Page::with_save(1.0);
    page.call(1, "save");
    let [first] = page.ran()[..] else { panic!() };
    let deadline = page.engine.poll_timeout();
    page.call(2, "save");
    assert_eq!(
        page.engine.poll_timeout(),
        deadline,
        "the waiting call adds none"
    );
    page.advance(900);
    page.settle(first);
    page.seen();
    assert_eq!(page.engine.poll_timeout(), Some(page.now.after(1_000)));
}

#[test]
fn a_cancel_removes_a_waiting_call_which_never_runs() {
    let mut page = Page::with_save(1.0);
    page.call(1, "save");
    let [first] = page.ran()[..] else { panic!() };
    page.call(2, "save");
    page.call(3, "save");
    page.seen();
    page.cancel(2);
    assert_eq!(
        page.seen(),
        [Seen::Cancelled("2".into(), "the agent gave up".into())],
        "no result is sent for a cancelled call (SPEC §5)"
    );
    page.settle(first);
    let seen = page.seen();
    assert!(seen.contains(&Seen::Activated("3".into())), "{seen:?}");
    assert_eq!(
        seen.iter().filter(|s| matches!(s, Seen::Ran(_))).count(),
        1,
        "the third takes the turn; the cancelled one is gone: {seen:?}"
    );
    // One outcome: a re-send of the cancelled id learns it, and runs nothing.
    page.call(2, "save");
    assert_eq!(
        page.seen(),
        [Seen::Answer(
            json!(2),
            "the call was cancelled".into(),
            true
        )]
    );
    // A re-send of a waiting id joins it: it still waits, once.
    page.call(4, "save");
    page.call(4, "save");
    assert_eq!(page.seen(), [Seen::Queued("4".into(), 1)]);
}

#[test]
fn unregistering_or_replacing_the_tool_ends_each_waiting_call_with_one_error() {
    let removed = "tool 'save' was removed or replaced while the call waited for its turn; it did \
                   not run";
    for replace in [false, true] {
        let mut page = Page::with_save(1.0);
        page.call(1, "save");
        let [first] = page.ran()[..] else { panic!() };
        page.call(2, "save");
        page.seen();
        if replace {
            page.define(tool("save", Some(1.0)));
        } else {
            assert!(page.engine.unregister(page.now, "save"));
            page.drain();
        }
        assert_eq!(
            page.seen(),
            [
                Seen::Cancelled("2".into(), removed.into()),
                Seen::Answer(json!(2), removed.into(), true),
            ],
            "replace: {replace}"
        );
        // The running call goes on and answers; nothing else starts.
        page.settle(first);
        let seen = page.seen();
        assert_eq!(seen[1..], [ok(1)], "{seen:?}");
        page.call(3, "save");
        assert_eq!(page.ran().len(), usize::from(replace), "replace: {replace}");
    }
}

#[test]
fn a_new_session_cancels_waiting_calls_without_starting_them() {
    let mut page = Page::with_save(1.0);
    page.call(1, "save");
    page.call(2, "save");
    page.seen();
    page.input(Input::SessionBegun { resumed: false });
    let seen = page.seen();
    assert_eq!(
        seen.iter()
            .filter(|s| matches!(s, Seen::Cancelled(..)))
            .count(),
        2,
        "{seen:?}"
    );
    assert!(
        !seen
            .iter()
            .any(|s| matches!(s, Seen::Ran(_) | Seen::Activated(_))),
        "a turn given back starts no call of the old session: {seen:?}"
    );
    assert_eq!(page.engine.live_calls(), 0);
}

#[test]
fn the_person_is_asked_once_the_call_has_its_turn() {
    let mut page = Page::with_save(1.0);
    let mut asks = tool("wipe", Some(1.0));
    asks.require_confirmation = Some(true);
    page.define(asks);
    page.seen();
    page.call(1, "wipe");
    page.call(2, "wipe");
    let seen = page.seen();
    let [Seen::Activated(_), Seen::Asked(first), Seen::Queued(id, 1)] = &seen[..] else {
        panic!("one question at a time: {seen:?}")
    };
    assert_eq!(id, "2");
    // The first is approved and runs: the second still waits for its turn.
    let answer = Answer::Approve {
        allow_session: false,
        allow_always: false,
    };
    page.input(Input::Answered {
        call: *first,
        answer,
    });
    assert_eq!(page.seen(), [Seen::Ran(*first)]);
    page.settle(*first);
    let seen = page.seen();
    let [_, _, Seen::Activated(id), Seen::Asked(second)] = &seen[..] else {
        panic!("the second is asked once the first ended: {seen:?}")
    };
    assert_eq!(id, "2");
    // While the second is asked, it holds the turn; a rejection gives it back.
    page.call(3, "wipe");
    assert_eq!(page.seen(), [Seen::Queued("3".into(), 1)]);
    page.input(Input::Answered {
        call: *second,
        answer: Answer::Reject(None),
    });
    let seen = page.seen();
    let rejected = Seen::Answer(json!(2), "rejected by the user".into(), true);
    assert!(
        matches!(&seen[..], [_, answer, Seen::Activated(id), Seen::Asked(_)]
            if *answer == rejected && id == "3"),
        "{seen:?}"
    );
}

#[test]
fn page_calls_wait_their_turn_the_same_way() {
    let mut page = Page::with_save(1.0);
    let now = page.now;
    let a = page
        .engine
        .begin_page_call(now, "save".into(), None, Caller::Page);
    let b = page
        .engine
        .begin_page_call(now, "save".into(), None, Caller::Page);
    page.drain();
    let seen = page.seen();
    assert_eq!(
        seen,
        [
            Seen::Activated("local-1".into()),
            Seen::Ran(a),
            Seen::Queued("local-2".into(), 1),
        ]
    );
    page.settle(a);
    let seen = page.seen();
    assert_eq!(seen[1], Seen::Settled(a, Some(r#"{"ok":true}"#.into())));
    assert_eq!(seen[2..], [Seen::Activated("local-2".into()), Seen::Ran(b)]);
    // A waiting page call stopped by its caller settles once, with no result.
    let c = page
        .engine
        .begin_page_call(page.now, "save".into(), None, Caller::Page);
    page.drain();
    page.input(Input::Cancel {
        call: c,
        reason: "aborted".into(),
    });
    let seen = page.seen();
    assert_eq!(
        seen[1..],
        [
            Seen::Cancelled("local-3".into(), "aborted".into()),
            Seen::Settled(c, None)
        ]
    );
}

#[test]
fn a_concurrency_that_is_not_a_whole_number_from_one_to_the_bound_is_refused() {
    let mut page = Page::with_save(1.0);
    for bad in [0.0, -1.0, 1.5, (MAX_CONCURRENCY + 1) as f64, 1e12] {
        let error = page
            .engine
            .define(page.now, tool("bad", Some(bad)), ToolKind::Function, "h")
            .unwrap_err();
        assert_eq!(error.code(), ErrorCode::InvalidOptions, "{bad}");
        let message = error.to_string();
        assert!(
            message.contains("tool 'bad': concurrency must be a whole number from 1 to 4096")
                && message.contains(&format!("got {bad}")),
            "{message}"
        );
        assert!(page.engine.registry().get("bad").is_none(), "{bad}");
    }
    page.drain();
    assert_eq!(
        page.seen(),
        [],
        "a refused declaration tells nobody anything"
    );
    for good in [1.0, MAX_CONCURRENCY as f64] {
        (page
            .engine
            .define(page.now, tool("good", Some(good)), ToolKind::Function, "h"))
        .unwrap();
    }
    // As the page writes it: not a number, named by its key.
    let text = r#"{"name":"t","concurrency":"2"}"#;
    let wrong = read_declaration("t".into(), text).unwrap_err().to_string();
    assert!(
        wrong.contains("declaration of tool 't': 'concurrency': expected a number, got string"),
        "{wrong}"
    );
    let read = read_declaration("t".into(), r#"{"name":"t","concurrency":3}"#).unwrap();
    assert_eq!(read.concurrency, Some(3.0));
}

#[test]
fn a_tool_redefined_with_a_bound_counts_the_calls_still_running_under_its_name() {
    let mut page = Page::with_save(1.0);
    page.call(1, "read");
    let [earlier] = page.ran()[..] else { panic!() };
    // `read` now runs one call at a time: the call of its earlier definition still runs.
    page.define(tool("read", Some(1.0)));
    page.seen();
    page.call(2, "read");
    assert_eq!(page.seen(), [Seen::Queued("2".into(), 1)]);
    page.settle(earlier);
    let seen = page.seen();
    assert!(
        matches!(&seen[..], [_, answer, Seen::Activated(id), Seen::Ran(_)] if *answer == ok(1) && id == "2"),
        "{seen:?}"
    );
}
