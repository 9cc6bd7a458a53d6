//! The page engine, natively, with time as a parameter: every row of SPEC §5 and the waiting rules
//! of §7, frame in → outputs out. No browser and no sleep: a test says what time it is.

use client_tools_core::limits::{HANDLER_GRACE_MS, HUMAN_WAIT_MAX_MS, MAX_ROUNDS_WAITING};
use client_tools_core::page_engine::{
    Answer, CallEvent, CallHandle, Caller, EngineConfig, Event, HandlerOutcome, Input, Output,
    PageEngine, QuestionKind,
};
use client_tools_core::protocol::MAX_FRAME_BYTES;
use client_tools_core::registry::{Declaration, ToolKind};
use client_tools_core::time::Millis;
use client_tools_core::WarningCode;
use serde_json::{json, Value};

/// An engine, the time, and everything it asked for so far.
struct Page {
    engine: PageEngine<&'static str>,
    now: Millis,
    outputs: Vec<Output<&'static str>>,
}

impl Page {
    fn new() -> Self {
        Self::with(EngineConfig::default(), Vec::new())
    }

    fn with(config: EngineConfig, interrupted: Vec<String>) -> Self {
        let mut page = Self {
            engine: PageEngine::new(config, 30_000, interrupted),
            now: Millis(1_000.0),
            outputs: Vec::new(),
        };
        page.define(json!({
            "name": "read_board",
            "description": "Read the board",
            "parameters": {"type": "object", "properties": {"boardId": {"type": "string"}},
                           "required": ["boardId"]},
            "outputSchema": {"type": "object", "required": ["tasks"]},
            "timeoutMs": 5000
        }));
        page.define(json!({
            "name": "wipe",
            "description": "Wipe the board",
            "parameters": {"type": "object", "properties": {"boardId": {"type": "string"}},
                           "required": ["boardId"]},
            "requireConfirmation": true,
            "timeoutMs": 1000
        }));
        page.outputs.clear();
        page
    }

    fn define(&mut self, declaration: Value) {
        let declaration = Declaration {
            original_name: declaration["name"].as_str().unwrap().into(),
            description: declaration["description"].as_str().map(str::to_owned),
            parameters: declaration.get("parameters").cloned(),
            output_schema: declaration.get("outputSchema").cloned(),
            annotations: declaration.get("annotations").cloned(),
            require_confirmation: declaration["requireConfirmation"].as_bool(),
            timeout_ms: declaration["timeoutMs"].as_f64(),
            ..Declaration::default()
        };
        let kind = ToolKind::Function;
        (self.engine.define(self.now, declaration, kind, "handler")).unwrap();
        self.outputs
            .extend(std::iter::from_fn(|| self.engine.poll_output()));
    }

    fn input(&mut self, input: Input<'_>) {
        self.engine.handle(self.now, input);
        while let Some(output) = self.engine.poll_output() {
            self.outputs.push(output);
        }
    }

    fn frame(&mut self, frame: Value) {
        self.input(Input::Frame(&frame.to_string()));
    }

    fn call(&mut self, id: i64, name: &str, arguments: Value) {
        self.frame(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                          "params": {"name": name, "arguments": arguments}}));
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

    fn take(&mut self) -> Vec<Output<&'static str>> {
        std::mem::take(&mut self.outputs)
    }

    /// The frames sent, parsed.
    fn sent(&mut self) -> Vec<Value> {
        self.take()
            .into_iter()
            .filter_map(|output| match output {
                Output::Send(frame) => Some(serde_json::from_str(&frame).unwrap()),
                _ => None,
            })
            .collect()
    }

    /// The handler the engine asked to run (the only one since the last take).
    fn ran(&mut self) -> (CallHandle, String) {
        let runs: Vec<_> = self
            .take()
            .into_iter()
            .filter_map(|output| match output {
                Output::RunHandler { call, input, .. } => Some((call, input)),
                _ => None,
            })
            .collect();
        assert_eq!(runs.len(), 1, "expected one handler run: {runs:?}");
        runs.into_iter().next().unwrap()
    }

    fn settle(&mut self, call: CallHandle, outcome: HandlerOutcome) {
        self.input(Input::HandlerSettled { call, outcome });
    }
}

fn runs(outputs: &[Output<&'static str>]) -> usize {
    outputs
        .iter()
        .filter(|o| matches!(o, Output::RunHandler { .. }))
        .count()
}

fn events(outputs: &[Output<&'static str>]) -> Vec<Event> {
    outputs
        .iter()
        .filter_map(|o| match o {
            Output::Emit(event) => Some(event.clone()),
            _ => None,
        })
        .collect()
}

fn answer_text(frame: &Value) -> (&str, bool) {
    let result = &frame["result"];
    (
        result["content"][0]["text"].as_str().unwrap(),
        result["isError"].as_bool().unwrap(),
    )
}

/// The one answer frame among the outputs, for call `id`.
fn only_answer(frames: &[Value], id: i64) -> Value {
    let answers: Vec<_> = frames.iter().filter(|f| f["id"] == id).collect();
    assert_eq!(answers.len(), 1, "{frames:?}");
    answers[0].clone()
}

// ---- SPEC §5, row by row ----------------------------------------------------------------------

#[test]
fn a_call_runs_its_handler_once_and_answers_with_its_result() {
    let mut page = Page::new();
    page.call(1, "read_board", json!({"boardId": "b1"}));
    let outputs = page.take();
    assert!(matches!(
        &events(&outputs)[..],
        [Event::Call { tool_name, call_id, what: CallEvent::Activated }]
            if tool_name == "read_board" && call_id == "1"
    ));
    let (call, input) = outputs
        .into_iter()
        .find_map(|o| match o {
            Output::RunHandler { call, input, .. } => Some((call, input)),
            _ => None,
        })
        .unwrap();
    assert_eq!(input, r#"{"boardId":"b1"}"#, "the arguments as they stood");
    page.now = page.now.after(40);
    page.settle(call, HandlerOutcome::Returned(r#"{"tasks":[]}"#.into()));
    let outputs = page.take();
    assert!(matches!(
        &events(&outputs)[..],
        [Event::Call { what: CallEvent::Finished { is_error: false, duration_ms }, .. }]
            if *duration_ms == 40.0
    ));
    page.outputs = outputs;
    let answer = only_answer(&page.sent(), 1);
    assert_eq!(answer["result"]["structuredContent"], json!({"tasks": []}));
    assert_eq!(page.engine.live_calls(), 0);
    assert_eq!(
        page.engine.poll_timeout(),
        None,
        "no timer once nothing is live"
    );
}

#[test]
fn no_handler_waits_out_the_grace_then_fails() {
    let mut page = Page::new();
    page.call(1, "later", json!({}));
    assert!(page.take().is_empty(), "nothing yet: a handler may come");
    assert_eq!(
        page.engine.poll_timeout(),
        Some(page.now.after(HANDLER_GRACE_MS))
    );
    page.advance(HANDLER_GRACE_MS - 1);
    assert!(page.take().is_empty());
    page.advance(1);
    let answer = only_answer(&page.sent(), 1);
    assert_eq!(
        answer_text(&answer),
        ("no handler registered for tool 'later' on this page", true)
    );
}

#[test]
fn a_handler_registered_within_the_grace_runs_at_once() {
    let mut page = Page::new();
    page.call(1, "late_tool", json!({}));
    page.advance(500);
    page.engine
        .registry_mut()
        .register_handler("late_tool", "late")
        .unwrap();
    page.input(Input::ToolsChanged);
    let outputs = page.take();
    assert_eq!(runs(&outputs), 1, "{outputs:?}");
    assert!(outputs
        .iter()
        .any(|o| matches!(o, Output::Send(f) if f.contains("list_changed"))));
}

#[test]
fn the_allow_list_refuses_before_anything_runs() {
    let config = EngineConfig {
        allow: vec!["wipe".into()],
        ..EngineConfig::default()
    };
    let mut page = Page::with(config, Vec::new());
    page.call(1, "read_board", json!({"boardId": "b1"}));
    let outputs = page.take();
    assert_eq!(runs(&outputs), 0);
    assert!(events(&outputs).is_empty(), "never activated");
    page.outputs = outputs;
    let answer = only_answer(&page.sent(), 1);
    assert_eq!(
        answer_text(&answer),
        ("tool 'read_board' is not allowed", true)
    );
    // The page's own calls are not subject to it.
    let input = Some(r#"{"boardId":"b1"}"#.to_owned());
    let call = page
        .engine
        .begin_page_call(page.now, "read_board".into(), input, Caller::Page);
    page.input(Input::ToolsChanged);
    let outputs = page.take();
    assert!(outputs
        .iter()
        .any(|o| matches!(o, Output::RunHandler { call: c, .. } if *c == call)));
}

#[test]
fn invalid_input_lists_each_error() {
    let mut page = Page::new();
    page.call(1, "read_board", json!({"boardId": 7}));
    let outputs = page.take();
    assert_eq!(runs(&outputs), 0);
    page.outputs = outputs;
    let answer = only_answer(&page.sent(), 1);
    let (text, is_error) = answer_text(&answer);
    assert!(
        is_error && text.starts_with("invalid input:\n/boardId: "),
        "{text}"
    );
}

#[test]
fn a_throw_becomes_an_error_result_with_its_message() {
    let mut page = Page::new();
    page.call(1, "read_board", json!({"boardId": "b1"}));
    let (call, _) = page.ran();
    page.settle(call, HandlerOutcome::Threw("board offline".into()));
    let answer = only_answer(&page.sent(), 1);
    assert_eq!(answer_text(&answer), ("board offline", true));
}

#[test]
fn a_timeout_aborts_the_handler_and_a_late_result_changes_nothing() {
    let mut page = Page::new();
    page.call(1, "read_board", json!({"boardId": "b1"}));
    let (call, _) = page.ran();
    assert_eq!(page.engine.poll_timeout(), Some(page.now.after(5_000)));
    page.advance(4_999);
    assert!(page.take().is_empty());
    page.advance(1);
    let outputs = page.take();
    assert!(matches!(
        &outputs[0],
        Output::Abort { call: c, reason } if *c == call && reason == "timed out after 5000 ms"
    ));
    let events = events(&outputs);
    assert!(
        matches!(&events[0], Event::Call { what: CallEvent::Cancelled { reason, .. }, .. } if reason == "timeout")
    );
    assert!(matches!(
        &events[1],
        Event::Call {
            what: CallEvent::Finished { is_error: true, .. },
            ..
        }
    ));
    page.outputs = outputs;
    let answer = only_answer(&page.sent(), 1);
    assert_eq!(answer_text(&answer), ("timed out after 5000 ms", true));

    page.settle(call, HandlerOutcome::Returned(r#"{"tasks":[]}"#.into()));
    assert!(page.take().is_empty(), "the call ended once");
}

#[test]
fn the_runtime_timeout_bounds_a_page_tool() {
    let mut page = Page::new();
    page.frame(
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "read_board", "arguments": {"boardId": "b"},
        "_meta": {"clienttools/timeoutMs": 200}}}),
    );
    page.ran();
    page.advance(200);
    let answer = only_answer(&page.sent(), 1);
    assert_eq!(answer_text(&answer), ("timed out after 200 ms", true));
}

#[test]
fn a_runtime_cancel_aborts_and_sends_nothing_but_a_resend_learns_it() {
    let mut page = Page::new();
    page.call(1, "read_board", json!({"boardId": "b1"}));
    let (call, _) = page.ran();
    page.frame(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                      "params": {"requestId": 1, "reason": "user stopped"}}),
    );
    let outputs = page.take();
    assert!(
        matches!(&outputs[0], Output::Abort { call: c, reason } if *c == call && reason == "user stopped")
    );
    assert!(
        matches!(&events(&outputs)[..], [Event::Call { what: CallEvent::Cancelled { reason, .. }, .. }] if reason == "user stopped")
    );
    assert!(!outputs.iter().any(|o| matches!(o, Output::Send(_))));
    page.settle(call, HandlerOutcome::Returned("{}".into()));
    assert!(page.take().is_empty());
    page.call(1, "read_board", json!({"boardId": "b1"}));
    let answer = only_answer(&page.sent(), 1);
    assert_eq!(answer_text(&answer), ("the call was cancelled", true));
}

#[test]
fn output_failing_its_schema_is_an_error_and_a_warning() {
    let mut page = Page::new();
    page.call(1, "read_board", json!({"boardId": "b1"}));
    let (call, _) = page.ran();
    page.settle(call, HandlerOutcome::Returned(r#"{"nope":1}"#.into()));
    let outputs = page.take();
    assert!(events(&outputs).iter().any(|e| matches!(
        e,
        Event::Warning {
            code: WarningCode::OutputInvalid,
            ..
        }
    )));
    page.outputs = outputs;
    let answer = only_answer(&page.sent(), 1);
    let (text, is_error) = answer_text(&answer);
    assert!(
        is_error && text.contains("output schema") && text.contains("tasks"),
        "{text}"
    );
}

#[test]
fn a_result_that_is_not_json_is_an_error() {
    let mut page = Page::new();
    page.call(1, "read_board", json!({"boardId": "b1"}));
    let (call, _) = page.ran();
    page.settle(
        call,
        HandlerOutcome::NotSerializable("the value of \"f\" is a function".into()),
    );
    let answer = only_answer(&page.sent(), 1);
    let (text, _) = answer_text(&answer);
    assert!(text.contains("not JSON-serializable"), "{text}");
}

#[test]
fn a_result_too_large_to_send_is_replaced_by_an_error_naming_the_limit() {
    let mut page = Page::new();
    page.call(1, "read_board", json!({"boardId": "b1"}));
    let (call, _) = page.ran();
    let huge = format!(r#"{{"tasks":["{}"]}}"#, "x".repeat(MAX_FRAME_BYTES));
    page.settle(call, HandlerOutcome::Returned(huge));
    let outputs = page.take();
    assert!(events(&outputs).iter().any(|e| matches!(
        e,
        Event::Warning {
            code: WarningCode::FrameLimit,
            ..
        }
    )));
    page.outputs = outputs;
    let answer = only_answer(&page.sent(), 1);
    let (text, is_error) = answer_text(&answer);
    assert!(
        is_error && text.starts_with("the tool's result was not sent"),
        "{text}"
    );
}

// ---- confirmation (SPEC §5, §7) ---------------------------------------------------------------

fn confirm_ask(outputs: &[Output<&'static str>]) -> CallHandle {
    outputs
        .iter()
        .find_map(|o| match o {
            Output::AskPerson { call, question, .. }
                if matches!(question.kind, QuestionKind::Confirm { .. }) =>
            {
                Some(*call)
            }
            _ => None,
        })
        .expect("a confirmation is asked")
}

#[test]
fn a_confirm_callback_is_handed_the_tool_the_call_and_the_proposed_input() {
    let mut page = Page::new();
    page.call(1, "wipe", json!({"boardId": "b1"}));
    let request = page
        .take()
        .into_iter()
        .find_map(|output| match output {
            Output::AskPerson {
                call_id, question, ..
            } => Some(question.confirm_request(&call_id)),
            _ => None,
        })
        .expect("a confirmation is asked");
    assert_eq!(request["toolName"], "wipe");
    assert_eq!(request["originalName"], "wipe");
    assert_eq!(request["description"], "Wipe the board");
    assert_eq!(request["callId"], "1");
    assert_eq!(request["input"], json!({"boardId": "b1"}));
    assert_eq!(request["inputSchema"]["required"], json!(["boardId"]));
}

#[test]
fn a_rejection_ends_the_call_and_the_handler_never_runs() {
    let mut page = Page::new();
    page.call(1, "wipe", json!({"boardId": "b1"}));
    let outputs = page.take();
    assert_eq!(runs(&outputs), 0);
    let call = confirm_ask(&outputs);
    page.input(Input::Answered {
        call,
        answer: Answer::Reject(Some("not now".into())),
    });
    let answer = only_answer(&page.sent(), 1);
    assert_eq!(
        answer_text(&answer),
        ("rejected by the user: not now", true)
    );
}

#[test]
fn a_modified_input_is_validated_again_run_and_reported() {
    let mut page = Page::new();
    page.call(1, "wipe", json!({"boardId": "b1"}));
    let call = confirm_ask(&page.take());
    page.input(Input::Answered {
        call,
        answer: Answer::Modify(json!({"boardId": "b2"})),
    });
    let (handler_call, input) = page.ran();
    assert_eq!(handler_call, call);
    assert_eq!(input, r#"{"boardId":"b2"}"#);
    page.settle(call, HandlerOutcome::Returned("\"wiped\"".into()));
    let answer = only_answer(&page.sent(), 1);
    assert_eq!(
        answer["result"]["_meta"]["clienttools/modifiedInput"],
        json!({"boardId": "b2"})
    );

    page.call(2, "wipe", json!({"boardId": "b1"}));
    let call = confirm_ask(&page.take());
    page.input(Input::Answered {
        call,
        answer: Answer::Modify(json!({"boardId": 3})),
    });
    let outputs = page.take();
    assert_eq!(runs(&outputs), 0, "an invalid edit never runs");
    page.outputs = outputs;
    let answer = only_answer(&page.sent(), 2);
    let (text, _) = answer_text(&answer);
    assert!(text.contains("/boardId"), "{text}");
}

#[test]
fn human_time_is_not_handler_time_and_sends_progress_every_second() {
    let mut page = Page::new();
    page.frame(
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "wipe", "arguments": {"boardId": "b"}, "_meta": {"progressToken": "p1"}}}),
    );
    let call = confirm_ask(&page.take());
    // The person takes 10 s — ten times the handler's 1 s timeout.
    page.advance(10_000);
    let progress: Vec<f64> = page
        .sent()
        .iter()
        .map(|f| {
            assert_eq!(f["method"], "notifications/progress");
            assert_eq!(f["params"]["progressToken"], "p1");
            f["params"]["progress"].as_f64().unwrap()
        })
        .collect();
    assert_eq!(
        progress,
        (1..=10).map(|s| f64::from(s) * 1000.0).collect::<Vec<_>>()
    );
    page.input(Input::Answered {
        call,
        answer: Answer::Approve {
            allow_session: false,
            allow_always: false,
        },
    });
    page.ran();
    // The handler's own progress goes above what the wait reported: MCP progress only increases.
    page.input(Input::Progress {
        call,
        progress: 0.5,
        total: Some(1.0),
        message: None,
    });
    let sent = page.sent();
    assert_eq!(sent[0]["params"]["progress"], 10_000.5);
    assert_eq!(sent[0]["params"]["total"], 10_001.0);
    // Its timeout counts from the approval.
    page.advance(999);
    assert!(page.sent().is_empty());
    page.advance(1);
    let answer = only_answer(&page.sent(), 1);
    assert_eq!(answer_text(&answer), ("timed out after 1000 ms", true));
}

#[test]
fn a_person_who_never_answers_ends_the_call_after_the_human_bound() {
    let mut page = Page::new();
    page.call(1, "wipe", json!({"boardId": "b1"}));
    let call = confirm_ask(&page.take());
    page.advance(HUMAN_WAIT_MAX_MS - 1);
    assert!(
        page.sent().is_empty(),
        "no progress without a token, no answer yet"
    );
    page.advance(1);
    let outputs = page.take();
    assert!(outputs
        .iter()
        .any(|o| matches!(o, Output::WithdrawAsk { call: c } if *c == call)));
    page.outputs = outputs;
    let answer = only_answer(&page.sent(), 1);
    assert_eq!(
        answer_text(&answer),
        ("no confirmation from the user within 300000 ms", true)
    );
}

#[test]
fn a_cancel_while_a_person_decides_withdraws_the_dialog() {
    let mut page = Page::new();
    page.call(1, "wipe", json!({"boardId": "b1"}));
    let call = confirm_ask(&page.take());
    page.frame(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                      "params": {"requestId": 1}}),
    );
    let outputs = page.take();
    assert!(matches!(outputs[0], Output::WithdrawAsk { call: c } if c == call));
    assert!(matches!(&events(&outputs)[..],
        [Event::Call { what: CallEvent::Cancelled { reason, .. }, .. }] if reason == "cancelled by the agent runtime"));
    page.input(Input::Answered {
        call,
        answer: Answer::Approve {
            allow_session: false,
            allow_always: false,
        },
    });
    assert!(
        page.take().is_empty(),
        "a decision after the end runs nothing"
    );
}

#[test]
fn allow_for_session_skips_the_dialog_unless_the_call_forces_it() {
    let config = EngineConfig {
        offer_allow_for_session: true,
        ..EngineConfig::default()
    };
    let mut page = Page::with(config, Vec::new());
    page.call(1, "wipe", json!({"boardId": "b1"}));
    let outputs = page.take();
    assert!(outputs.iter().any(|o| matches!(
        o,
        Output::AskPerson { question, .. }
            if matches!(question.kind, QuestionKind::Confirm { offer_session: true, .. })
    )));
    let call = confirm_ask(&outputs);
    page.input(Input::Answered {
        call,
        answer: Answer::Approve {
            allow_session: true,
            allow_always: false,
        },
    });
    page.ran();
    page.call(2, "wipe", json!({"boardId": "b1"}));
    page.ran();
    page.frame(
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "wipe", "arguments": {"boardId": "b"},
        "_meta": {"clienttools/requireConfirmation": true}}}),
    );
    let outputs = page.take();
    assert!(outputs.iter().any(|o| matches!(
        o,
        Output::AskPerson { question, .. }
            if matches!(question.kind, QuestionKind::Confirm { offer_session: false, .. })
    )));
}

#[test]
fn a_confirmation_that_could_not_be_asked_is_an_error_result() {
    let mut page = Page::new();
    page.call(1, "wipe", json!({"boardId": "b1"}));
    let call = confirm_ask(&page.take());
    page.input(Input::Answered {
        call,
        answer: Answer::Cancelled,
    });
    let answer = only_answer(&page.sent(), 1);
    assert_eq!(answer_text(&answer), ("the dialog was closed", true));

    page.call(2, "wipe", json!({"boardId": "b1"}));
    let call = confirm_ask(&page.take());
    page.input(Input::Answered {
        call,
        answer: Answer::Failed("this page has no document body".into()),
    });
    let answer = only_answer(&page.sent(), 2);
    assert_eq!(
        answer_text(&answer),
        ("this page has no document body", true)
    );
}

// ---- the result form (SPEC §7) ----------------------------------------------------------------

fn result_form_call(page: &mut Page, id: i64) -> CallHandle {
    page.frame(
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": "pick_date", "arguments": {},
        "_meta": {"clienttools/fallback": "form",
                  "clienttools/outputSchema": {"type": "object", "required": ["date"],
                                               "properties": {"date": {"type": "string"}}}}}}),
    );
    page.advance(HANDLER_GRACE_MS);
    page.take()
        .iter()
        .find_map(|o| match o {
            Output::AskPerson { call, question, .. } if question.kind == QuestionKind::Result => {
                assert_eq!(question.title, "pick_date");
                assert_eq!(question.context, None, "no arguments to show");
                assert_eq!(question.value, json!({}), "the schema's initial value");
                Some(*call)
            }
            _ => None,
        })
        .expect("the result form is asked")
}

#[test]
fn the_result_form_answers_with_what_the_person_gave() {
    let mut page = Page::new();
    let call = result_form_call(&mut page, 1);
    page.input(Input::Answered {
        call,
        answer: Answer::Result(json!({"date": "2026-12-24"})),
    });
    let answer = only_answer(&page.sent(), 1);
    assert_eq!(answer["result"]["structuredContent"]["date"], "2026-12-24");

    let call = result_form_call(&mut page, 2);
    page.input(Input::Answered {
        call,
        answer: Answer::Cancelled,
    });
    let answer = only_answer(&page.sent(), 2);
    assert_eq!(answer_text(&answer), ("the user cancelled", true));

    let call = result_form_call(&mut page, 3);
    page.advance(HUMAN_WAIT_MAX_MS);
    let outputs = page.take();
    assert!(outputs
        .iter()
        .any(|o| matches!(o, Output::WithdrawAsk { call: c } if *c == call)));
    page.outputs = outputs;
    let answer = only_answer(&page.sent(), 3);
    assert_eq!(
        answer_text(&answer),
        ("no result from the user within 300000 ms", true)
    );
}

// ---- form tools: waiting for the person to submit ---------------------------------------------

#[test]
fn a_form_waiting_for_its_submit_is_human_time() {
    let mut page = Page::new();
    page.engine
        .registry_mut()
        .define(
            Declaration {
                original_name: "book".into(),
                timeout_ms: Some(1_000.0),
                ..Declaration::default()
            },
            ToolKind::Form,
            "form",
        )
        .unwrap();
    page.input(Input::ToolsChanged);
    page.take();
    page.call(1, "book", json!({}));
    let (call, _) = page.ran();
    page.input(Input::WaitingForPerson { call });
    page.advance(60_000);
    assert!(
        page.sent().is_empty(),
        "no timeout while the person fills it"
    );
    page.input(Input::PersonDone { call });
    page.advance(1_000);
    let outputs = page.take();
    assert!(matches!(&outputs[0], Output::Abort { call: c, .. } if *c == call));
    page.outputs = outputs;
    let answer = only_answer(&page.sent(), 1);
    assert_eq!(answer_text(&answer), ("timed out after 1000 ms", true));

    page.call(2, "book", json!({}));
    let (call, _) = page.ran();
    page.input(Input::WaitingForPerson { call });
    page.advance(HUMAN_WAIT_MAX_MS);
    let answer = only_answer(&page.sent(), 2);
    assert_eq!(
        answer_text(&answer),
        ("the user did not submit the form in time", true)
    );

    page.call(3, "book", json!({}));
    let (call, _) = page.ran();
    page.input(Input::Withdraw {
        call,
        reason: "the form was reset".into(),
    });
    let outputs = page.take();
    assert!(matches!(&events(&outputs)[..],
        [Event::Call { what: CallEvent::Cancelled { reason, .. }, .. }] if reason == "the form was reset"));
    page.outputs = outputs;
    let answer = only_answer(&page.sent(), 3);
    assert_eq!(
        answer_text(&answer),
        ("cancelled by the page: the form was reset", true)
    );
}

// ---- at most once per call id (SPEC §5) --------------------------------------------------------

#[test]
fn a_resent_call_joins_the_run_or_gets_its_stored_answer() {
    let mut page = Page::new();
    page.call(1, "read_board", json!({"boardId": "b1"}));
    let (call, _) = page.ran();
    page.call(1, "read_board", json!({"boardId": "b1"}));
    assert!(page.take().is_empty(), "joins the run in progress");
    page.settle(call, HandlerOutcome::Returned(r#"{"tasks":[1]}"#.into()));
    let first = only_answer(&page.sent(), 1);
    page.call(1, "read_board", json!({"boardId": "b1"}));
    let outputs = page.take();
    assert_eq!(runs(&outputs), 0);
    page.outputs = outputs;
    assert_eq!(only_answer(&page.sent(), 1), first);
}

#[test]
fn a_call_interrupted_by_a_reload_is_not_run_again() {
    let mut page = Page::with(EngineConfig::default(), vec!["9".into()]);
    page.call(9, "read_board", json!({"boardId": "b1"}));
    let outputs = page.take();
    assert_eq!(runs(&outputs), 0);
    page.outputs = outputs;
    let answer = only_answer(&page.sent(), 9);
    let (text, is_error) = answer_text(&answer);
    assert!(is_error && text.contains("was not run again"), "{text}");
}

#[test]
fn a_new_session_cancels_the_earlier_sessions_calls_a_resumed_one_keeps_them() {
    let mut page = Page::new();
    page.call(1, "read_board", json!({"boardId": "b1"}));
    let (call, _) = page.ran();
    page.input(Input::SessionBegun { resumed: true });
    assert!(page.take().is_empty());
    assert_eq!(page.engine.running_agent_calls(), vec!["1".to_owned()]);
    page.input(Input::SessionBegun { resumed: false });
    let outputs = page.take();
    assert!(matches!(&outputs[0], Output::Abort { call: c, .. } if *c == call));
    assert!(!outputs.iter().any(|o| matches!(o, Output::Send(_))));
    // The new session's call 1 is a new call.
    page.call(1, "read_board", json!({"boardId": "b1"}));
    page.ran();
}

// ---- page calls ----------------------------------------------------------------------------

#[test]
fn a_page_call_settles_once_and_a_cancel_settles_it_with_nothing() {
    let mut page = Page::new();
    let input = Some(r#"{"boardId":"b1"}"#.to_owned());
    let call =
        page.engine
            .begin_page_call(page.now, "read_board".into(), input.clone(), Caller::Page);
    page.input(Input::ToolsChanged);
    page.take();
    page.settle(call, HandlerOutcome::Returned(r#"{"tasks":[]}"#.into()));
    let settled: Vec<_> = page
        .take()
        .into_iter()
        .filter_map(|o| match o {
            Output::Settled { call: c, result } => Some((c, result)),
            _ => None,
        })
        .collect();
    assert!(matches!(&settled[..], [(c, Some(r))] if *c == call && !r.is_error));

    let call = page
        .engine
        .begin_page_call(page.now, "read_board".into(), input, Caller::Agent);
    page.input(Input::Cancel {
        call,
        reason: "the browser's agent aborted the call".into(),
    });
    let outputs = page.take();
    assert!(outputs
        .iter()
        .any(|o| matches!(o, Output::Settled { call: c, result: None } if *c == call)));
}

// ---- frames that are not calls (SPEC §6) -------------------------------------------------------

#[test]
fn initialize_ping_list_and_unknown_methods_are_answered_here() {
    let mut page = Page::new();
    page.frame(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}}),
    );
    page.frame(json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}));
    page.frame(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}));
    page.frame(json!({"jsonrpc": "2.0", "id": 4, "method": "resources/list"}));
    page.frame(
        json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"arguments": 1}}),
    );
    page.input(Input::Frame("{not json"));
    page.frame(json!({"jsonrpc": "2.0", "id": 6, "result": {}}));
    let sent = page.sent();
    assert_eq!(sent.len(), 6, "responses are never answered: {sent:?}");
    assert_eq!(
        sent[0]["result"]["capabilities"]["tools"]["listChanged"],
        true
    );
    assert_eq!(sent[1]["result"], json!({}));
    let names: Vec<_> = sent[2]["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["read_board", "wipe"]);
    assert_eq!(sent[3]["error"]["code"], -32601);
    assert_eq!(sent[4]["error"]["code"], -32602);
    assert_eq!(sent[5]["error"]["code"], -32700);
}

// ---- MCP results, logs and asking the agent (SPEC §4) -----------------------------------------

#[test]
fn a_handler_shaped_mcp_result_is_sent_as_it_is() {
    let mut page = Page::new();
    page.define(json!({"name": "snapshot", "description": "A picture of the board"}));
    page.take();
    page.call(1, "snapshot", json!({}));
    let (call, _) = page.ran();
    let result = json!({"content": [
        {"type": "text", "text": "the board"},
        {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
    ]});
    page.settle(call, HandlerOutcome::Returned(result.to_string()));
    let answer = only_answer(&page.sent(), 1);
    assert_eq!(answer["result"]["content"], result["content"]);
    assert_eq!(answer["result"]["isError"], false);
    assert!(answer["result"].get("structuredContent").is_none());

    page.call(2, "snapshot", json!({}));
    let (call, _) = page.ran();
    let broken = json!({"content": [{"type": "image", "data": "AAAA"}]});
    page.settle(call, HandlerOutcome::Returned(broken.to_string()));
    let answer = only_answer(&page.sent(), 2);
    let (text, is_error) = answer_text(&answer);
    assert!(
        is_error && text.contains("content[0]: a image block needs 'mimeType'"),
        "{text}"
    );

    // With an output schema, structuredContent is what it checks.
    page.call(3, "read_board", json!({"boardId": "b"}));
    let (call, _) = page.ran();
    let shaped = json!({"content": [{"type": "text", "text": "1 task"}],
                        "structuredContent": {"tasks": [1]}});
    page.settle(call, HandlerOutcome::Returned(shaped.to_string()));
    let answer = only_answer(&page.sent(), 3);
    assert_eq!(answer["result"]["structuredContent"], json!({"tasks": [1]}));
    page.call(4, "read_board", json!({"boardId": "b"}));
    let (call, _) = page.ran();
    let unshaped = json!({"content": [{"type": "text", "text": "no structure"}]});
    page.settle(call, HandlerOutcome::Returned(unshaped.to_string()));
    let answer = only_answer(&page.sent(), 4);
    assert!(answer_text(&answer).0.contains("no structuredContent"));
}

#[test]
fn logs_go_to_the_agent_at_its_level_and_are_bounded() {
    let mut page = Page::new();
    page.frame(
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "read_board", "arguments": {"boardId": "b"},
        "_meta": {"clienttools/logLevel": "warning"}}}),
    );
    let (call, _) = page.ran();
    for level in ["debug", "info", "warning", "error"] {
        page.input(Input::Log {
            call,
            level: level.into(),
            data: json!({"at": level}),
            logger: Some("board".into()),
        });
    }
    let sent = page.sent();
    let levels: Vec<_> = sent.iter().map(|f| f["params"]["level"].clone()).collect();
    assert_eq!(levels, [json!("warning"), json!("error")]);
    assert_eq!(sent[0]["method"], "notifications/message");
    assert_eq!(sent[0]["params"]["logger"], "board");
    assert_eq!(sent[0]["params"]["_meta"]["clienttools/callId"], "1");

    page.input(Input::Log {
        call,
        level: "loud".into(),
        data: json!(1),
        logger: None,
    });
    let outputs = page.take();
    assert!(matches!(
        &events(&outputs)[..],
        [Event::Warning {
            code: WarningCode::LogDropped,
            ..
        }]
    ));
    for n in 0..150 {
        page.input(Input::Log {
            call,
            level: "error".into(),
            data: json!(n),
            logger: None,
        });
    }
    let outputs = page.take();
    let sent = outputs
        .iter()
        .filter(|o| matches!(o, Output::Send(_)))
        .count();
    assert_eq!(sent, 98, "100 per call in all");
    assert_eq!(events(&outputs).len(), 1, "the drop is said once");
}

/// The one answer to a round: the agent's `{inputResponses}`, or the error's code.
fn agent_answered(outputs: &[Output<&'static str>]) -> Result<Value, i64> {
    outputs
        .iter()
        .find_map(|o| match o {
            Output::AgentAnswered { answer, .. } => Some(answer.clone().map_err(|e| e.code)),
            _ => None,
        })
        .expect("the round is answered")
}

#[test]
fn a_round_goes_to_the_agent_and_its_time_is_not_handler_time() {
    let mut page = Page::new();
    page.frame(
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "read_board", "arguments": {"boardId": "b"}, "_meta": {"progressToken": "p"}}}),
    );
    let (call, _) = page.ran();
    page.advance(4_000); // of the handler's 5 s
    page.input(Input::AskAgent {
        call,
        requests: r#"{"name": {"method": "elicitation/create",
            "params": {"message": "Your name?", "requestedSchema": {"type": "object"}}},
            "roots": {"method": "roots/list", "params": null}}"#,
    });
    let sent = page.sent();
    assert_eq!(sent.len(), 1, "one request for the round");
    assert_eq!(sent[0]["method"], "clienttools/input");
    assert_eq!(sent[0]["params"]["_meta"]["clienttools/callId"], "7");
    let asked = &sent[0]["params"]["inputRequests"];
    assert_eq!(asked["name"]["method"], "elicitation/create");
    assert_eq!(asked["name"]["params"]["message"], "Your name?");
    assert_eq!(
        asked["roots"],
        json!({"method": "roots/list", "params": null}),
        "as the handler gave them (the runtime reads null as none)"
    );
    // The agent takes 20 s: progress keeps the runtime waiting, the handler's clock stands still.
    page.advance(20_000);
    let ticks = page.sent();
    assert_eq!(ticks.len(), 20);
    assert_eq!(
        ticks[19]["params"]["message"],
        "waiting for the agent to answer"
    );
    let id = sent[0]["id"].clone();
    let responses = json!({"inputResponses": {"roots": {"roots": []}}});
    page.frame(json!({"jsonrpc": "2.0", "id": id, "result": responses}));
    assert_eq!(
        agent_answered(&page.take()),
        Ok(responses),
        "as the agent gave it (the SDK names a missing key)"
    );
    // An answer to a round answered before changes nothing.
    page.frame(json!({"jsonrpc": "2.0", "id": id, "result": {}}));
    assert!(page.take().is_empty());
    page.advance(999);
    assert!(
        page.sent().is_empty(),
        "1 s of the handler's timeout was left"
    );
    page.advance(1);
    let answer = only_answer(&page.sent(), 7);
    assert_eq!(answer_text(&answer), ("timed out after 5000 ms", true));
}

#[test]
fn what_cannot_be_asked_is_answered_at_once() {
    let mut page = Page::new();
    page.call(1, "read_board", json!({"boardId": "b"}));
    let (call, _) = page.ran();
    for bad in ["[]", "{\"a\":", "\"roots/list\"", ""] {
        page.input(Input::AskAgent {
            call,
            requests: bad,
        });
        assert_eq!(agent_answered(&page.take()), Err(-32602), "{bad}");
    }
    let deep = format!("{{\"a\":{}1{}}}", "[".repeat(200), "]".repeat(200));
    page.input(Input::AskAgent {
        call,
        requests: &deep,
    });
    assert_eq!(agent_answered(&page.take()), Err(-32602), "too deep");
    let long = format!(
        r#"{{"a":{{"method":"roots/list","params":{{"x":"{}"}}}}}}"#,
        "x".repeat(MAX_FRAME_BYTES)
    );
    page.input(Input::AskAgent {
        call,
        requests: &long,
    });
    assert_eq!(
        agent_answered(&page.take()),
        Err(-32602),
        "over the frame limit"
    );
    assert!(page.sent().is_empty(), "nothing went to the runtime");
    // A page call has no agent to ask.
    let local = page.engine.begin_page_call(
        page.now,
        "read_board".into(),
        Some(r#"{"boardId":"b"}"#.into()),
        Caller::Page,
    );
    page.take();
    let roots = r#"{"a": {"method": "roots/list"}}"#;
    page.input(Input::AskAgent {
        call: local,
        requests: roots,
    });
    assert_eq!(agent_answered(&page.take()), Err(-32021));

    // The runtime refuses the round: the handler hears why.
    page.input(Input::AskAgent {
        call,
        requests: roots,
    });
    let sent = page.sent();
    // One round at a time per call.
    page.input(Input::AskAgent {
        call,
        requests: roots,
    });
    assert_eq!(agent_answered(&page.take()), Err(-32600));
    page.frame(
        json!({"jsonrpc": "2.0", "id": sent[0]["id"], "error": {"code": -32021,
        "message": "no sampling", "data": {"requiredCapabilities": {"sampling": {}}}}}),
    );
    assert_eq!(agent_answered(&page.take()), Err(-32021));

    // The agent never answers: after the human bound the round fails and the handler goes on.
    page.input(Input::AskAgent {
        call,
        requests: roots,
    });
    page.take();
    page.advance(HUMAN_WAIT_MAX_MS);
    assert_eq!(agent_answered(&page.take()), Err(-32001));
}

#[test]
fn a_malformed_answer_to_a_round_fails_the_round_not_the_page() {
    let mut page = Page::new();
    page.call(1, "read_board", json!({"boardId": "b"}));
    let (call, _) = page.ran();
    let roots = r#"{"a": {"method": "roots/list"}}"#;
    for hostile in [
        json!(5),
        json!("abc"),
        json!({}),
        json!({"inputResponses": [1]}),
        json!(null),
    ] {
        page.input(Input::AskAgent {
            call,
            requests: roots,
        });
        let sent = page.sent();
        page.frame(json!({"jsonrpc": "2.0", "id": sent[0]["id"], "result": hostile}));
        assert_eq!(agent_answered(&page.take()), Err(-32602), "{hostile}");
    }
    // The call goes on: its handler can still answer.
    page.input(Input::HandlerSettled {
        call,
        outcome: HandlerOutcome::Returned(r#"{"tasks": []}"#.into()),
    });
    assert!(
        !answer_text(&only_answer(&page.sent(), 1)).1,
        "a result, not an error"
    );
}

#[test]
fn a_page_has_at_most_so_many_rounds_waiting() {
    let mut page = Page::new();
    let roots = r#"{"a": {"method": "roots/list"}}"#;
    let mut calls = Vec::new();
    for id in 0..=MAX_ROUNDS_WAITING as i64 {
        page.call(id, "read_board", json!({"boardId": "b"}));
        calls.push(page.ran().0);
    }
    for call in &calls[..MAX_ROUNDS_WAITING] {
        page.input(Input::AskAgent {
            call: *call,
            requests: roots,
        });
    }
    assert_eq!(page.sent().len(), MAX_ROUNDS_WAITING);
    page.input(Input::AskAgent {
        call: calls[MAX_ROUNDS_WAITING],
        requests: roots,
    });
    let refused = page.take();
    let message = refused.iter().find_map(|o| match o {
        Output::AgentAnswered { answer: Err(e), .. } => Some(e.message.clone()),
        _ => None,
    });
    assert_eq!(
        message.as_deref(),
        Some(format!("the page has {MAX_ROUNDS_WAITING} rounds waiting for agents").as_str())
    );
    assert!(page.sent().is_empty(), "nothing more went to the runtime");
}

#[test]
fn a_handler_that_lets_a_missing_capability_propagate_fails_the_request() {
    let mut page = Page::new();
    page.call(1, "read_board", json!({"boardId": "b"}));
    let (call, _) = page.ran();
    let required = json!({"sampling": {}});
    page.settle(call, HandlerOutcome::CapabilityMissing(required.clone()));
    let answer = only_answer(&page.sent(), 1);
    assert_eq!(answer["error"]["code"], -32021);
    assert_eq!(answer["error"]["data"]["requiredCapabilities"], required);
    page.call(1, "read_board", json!({"boardId": "b"}));
    assert_eq!(
        only_answer(&page.sent(), 1)["error"]["code"],
        -32021,
        "a re-send learns it"
    );
}

// ---- what a hostile runtime cannot do -----------------------------------------------------------

#[test]
fn ids_1_and_quoted_1_are_two_calls() {
    let mut page = Page::new();
    page.call(1, "read_board", json!({"boardId": "b"}));
    let (first, _) = page.ran();
    page.frame(json!({"jsonrpc": "2.0", "id": "1", "method": "tools/call",
                      "params": {"name": "read_board", "arguments": {"boardId": "b"}}}));
    let (second, _) = page.ran();
    assert_ne!(first, second, "not joined");
    page.frame(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                      "params": {"requestId": "1"}}),
    );
    let outputs = page.take();
    assert!(matches!(outputs[0], Output::Abort { call, .. } if call == second));
    page.settle(first, HandlerOutcome::Returned(r#"{"tasks":[]}"#.into()));
    assert_eq!(only_answer(&page.sent(), 1)["id"], 1);
}

#[test]
fn a_page_runs_a_bounded_number_of_calls() {
    let mut page = Page::new();
    for id in 0..client_tools_core::limits::MAX_LIVE_CALLS as i64 {
        page.call(id, "nobody_yet", json!({}));
    }
    assert!(page.take().is_empty(), "each waits for a handler");
    page.call(9_999, "nobody_yet", json!({}));
    let answer = only_answer(&page.sent(), 9_999);
    assert!(answer_text(&answer).0.contains("calls in progress"));
    let long = "x".repeat(100_000);
    page.advance(HANDLER_GRACE_MS);
    page.take();
    page.call(10_000, &long, json!({}));
    page.advance(HANDLER_GRACE_MS);
    let answer = only_answer(&page.sent(), 10_000);
    assert!(
        answer_text(&answer).0.len() < 300,
        "a hostile name is not echoed whole"
    );
}

#[test]
fn progress_only_increases_and_is_always_a_number() {
    let mut page = Page::new();
    page.engine
        .registry_mut()
        .define(
            Declaration {
                original_name: "book".into(),
                require_confirmation: Some(true),
                ..Declaration::default()
            },
            ToolKind::Form,
            "form",
        )
        .unwrap();
    page.input(Input::ToolsChanged);
    page.take();
    page.frame(
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "book", "arguments": {}, "_meta": {"progressToken": 1}}}),
    );
    let call = confirm_ask(&page.take());
    page.advance(5_000);
    page.input(Input::Answered {
        call,
        answer: Answer::Approve {
            allow_session: true,
            allow_always: false,
        },
    });
    page.input(Input::Progress {
        call,
        progress: f64::NAN,
        total: None,
        message: None,
    });
    page.input(Input::WaitingForPerson { call });
    page.advance(3_000);
    let progress: Vec<f64> = page
        .sent()
        .iter()
        .map(|f| f["params"]["progress"].as_f64().expect("a number"))
        .collect();
    assert!(progress.windows(2).all(|w| w[0] < w[1]), "{progress:?}");
    assert_eq!(progress.len(), 8);
    // "Allow for this session" was not offered (the option is off): the next call asks again.
    page.input(Input::PersonDone { call });
    page.settle(call, HandlerOutcome::ReturnedNothing);
    page.call(2, "book", json!({}));
    confirm_ask(&page.take());
}

// ---- the page's tools -------------------------------------------------------------------------

/// The `warning` events among `outputs`, by code.
fn warnings(outputs: &[Output<&'static str>]) -> Vec<WarningCode> {
    (outputs.iter())
        .filter_map(|output| match output {
            Output::Emit(Event::Warning { code, .. }) => Some(*code),
            _ => None,
        })
        .collect()
}

#[test]
fn changing_the_tools_warns_the_page_and_tells_the_agent_once_per_change() {
    let mut page = Page::new();
    let bare = Declaration {
        original_name: "read cart".into(),
        ..Declaration::default()
    };
    let name = (page.engine.define(page.now, bare, ToolKind::Function, "h")).unwrap();
    assert_eq!(name, "read_cart");
    page.outputs
        .extend(std::iter::from_fn(|| page.engine.poll_output()));
    let outputs = page.take();
    assert_eq!(
        warnings(&outputs),
        [
            WarningCode::ParametersNotObject,
            WarningCode::MissingDescription
        ]
    );
    assert!(
        matches!(outputs.last(), Some(Output::Send(frame)) if frame.contains("notifications/tools/list_changed"))
    );
    assert_eq!(
        events(&outputs).len(),
        3,
        "two warnings and toolschanged: {outputs:?}"
    );

    assert!(!page.engine.unregister(page.now, "no_such_tool"));
    assert!(
        page.engine.poll_output().is_none(),
        "nothing changed, nothing told"
    );
    assert!(
        page.engine.unregister(page.now, "read cart"),
        "by its original name"
    );
    let outputs: Vec<_> = std::iter::from_fn(|| page.engine.poll_output()).collect();
    assert!(matches!(outputs[0], Output::Emit(Event::ToolsChanged)));
    assert!(page.engine.registry().get("read_cart").is_none());

    let error = page.engine.register_handler(page.now, "", "h");
    assert!(error.is_err(), "an empty name is refused");
    assert!(
        page.engine.poll_output().is_none(),
        "a refused change tells nothing"
    );
}

/// The confirmation asked for call `id` of `name`: what it offers, and the declaration it carries.
fn asked(page: &mut Page, id: i64, name: &str, meta: Value) -> (QuestionKind, Option<String>) {
    page.frame(
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": name, "arguments": {"boardId": "b"}, "_meta": meta}}),
    );
    page.take()
        .into_iter()
        .find_map(|o| match o {
            Output::AskPerson { question, .. } => Some((question.kind, question.declaration)),
            _ => None,
        })
        .expect("a confirmation is asked")
}

fn always_page() -> Page {
    let config = EngineConfig {
        offer_allow_always: true,
        ..EngineConfig::default()
    };
    Page::with(config, Vec::new())
}

#[test]
fn always_allow_is_offered_with_the_declaration_unless_the_call_forces_the_confirmation() {
    let (kind, declaration) = asked(&mut Page::new(), 1, "wipe", json!({}));
    assert!(
        matches!(
            kind,
            QuestionKind::Confirm {
                offer_always: false,
                ..
            }
        ) && declaration.is_none(),
        "off by default"
    );
    let mut page = always_page();
    let (kind, declaration) = asked(&mut page, 2, "wipe", json!({}));
    assert_eq!(
        kind,
        QuestionKind::Confirm {
            offer_session: false,
            offer_always: true
        }
    );
    // The tool's tools/list entry (natively each object's keys come sorted).
    assert_eq!(
        declaration.as_deref(),
        Some(
            r#"{"name":"wipe","description":"Wipe the board","inputSchema":{"properties":{"boardId":{"type":"string"}},"required":["boardId"],"type":"object"},"execution":{"taskSupport":"optional"},"_meta":{"clienttools/kind":"function","clienttools/originalName":"wipe","clienttools/requireConfirmation":true}}"#
        )
    );
    // The runtime's _meta, the bridge's --tools file and the operator's policy all force it so:
    // asked each time, nothing kept is looked up.
    let forced = json!({"clienttools/requireConfirmation": true});
    let (kind, declaration) = asked(&mut page, 3, "wipe", forced);
    assert_eq!(
        (kind, declaration),
        (
            QuestionKind::Confirm {
                offer_session: false,
                offer_always: false
            },
            None
        )
    );
}

#[test]
fn the_declaration_text_is_the_same_for_the_same_declaration_and_differs_for_any_change() {
    let text_of = |declaration: Value| {
        let mut page = always_page();
        page.define(declaration);
        asked(&mut page, 1, "t", json!({}))
            .1
            .expect("always offered")
    };
    let base = json!({"name": "t", "description": "Delete a card", "requireConfirmation": true,
        "parameters": {"type": "object", "properties": {"id": {"type": "string", "minLength": 1}}},
        "outputSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}},
        "annotations": {"destructiveHint": true, "title": "Delete"}});
    let reordered = json!({"annotations": {"title": "Delete", "destructiveHint": true},
        "outputSchema": {"properties": {"ok": {"type": "boolean"}}, "type": "object"},
        "parameters": {"properties": {"id": {"minLength": 1, "type": "string"}}, "type": "object"},
        "requireConfirmation": true, "description": "Delete a card", "name": "t"});
    assert_eq!(
        text_of(base.clone()),
        text_of(reordered),
        "key order does not count"
    );
    // What the page's own settings say (timeout) is not what the person approved.
    let mut timed = base.clone();
    timed["timeoutMs"] = json!(9000);
    assert_eq!(text_of(base.clone()), text_of(timed));
    let changes = [
        ("description", json!("Delete every card")),
        (
            "parameters",
            json!({"type": "object", "properties": {"id": {"type": "string"}}}),
        ),
        (
            "parameters",
            json!({"type": "object", "properties": {"id": {"type": "string",
            "minLength": 1}, "all": {"type": "boolean"}}}),
        ),
        ("outputSchema", json!({"type": "object"})),
        ("annotations", json!({"destructiveHint": true})),
        (
            "annotations",
            json!({"destructiveHint": true, "title": "Delete",
            "openWorldHint": true}),
        ),
    ];
    let mut seen = vec![text_of(base.clone())];
    for (key, value) in changes {
        // Two tools, one name, other schemas (or words): never one text.
        let mut changed = base.clone();
        changed[key] = value;
        let text = text_of(changed);
        assert!(
            !seen.contains(&text),
            "{key} changed, the text must too: {text}"
        );
        seen.push(text);
    }
}

#[test]
fn an_allowance_for_the_session_is_the_tools_not_its_names() {
    let config = EngineConfig {
        offer_allow_for_session: true,
        ..EngineConfig::default()
    };
    let mut page = Page::with(config, Vec::new());
    page.call(1, "wipe", json!({"boardId": "b1"}));
    let call = confirm_ask(&page.take());
    let allow = Answer::Approve {
        allow_session: true,
        allow_always: false,
    };
    page.input(Input::Answered {
        call,
        answer: allow,
    });
    page.ran();
    // The page redefining its own tool keeps the allowance.
    page.define(
        json!({"name": "wipe", "description": "Wipe the board", "requireConfirmation": true}),
    );
    page.call(2, "wipe", json!({"boardId": "b1"}));
    page.ran();
    // Another owner taking the name (a tool adopted from the browser) is asked about again.
    assert!(page.engine.unregister(page.now, "wipe"));
    let adopted = Declaration {
        original_name: "wipe".into(),
        description: Some("Wipe, the browser's way".into()),
        require_confirmation: Some(true),
        ..Declaration::default()
    };
    (page
        .engine
        .define(page.now, adopted, ToolKind::Browser, "other"))
    .unwrap();
    page.take();
    page.call(3, "wipe", json!({"boardId": "b1"}));
    confirm_ask(&page.take());
}

#[test]
fn a_batch_of_tool_changes_is_told_once() {
    let mut page = Page::new();
    let now = page.now;
    page.engine.batch_tool_changes(now, |engine| {
        for name in ["one", "two", "three"] {
            let declaration = Declaration {
                original_name: name.into(),
                description: Some(name.into()),
                ..Declaration::default()
            };
            engine
                .define(now, declaration, ToolKind::Browser, "h")
                .unwrap();
        }
        assert!(engine.unregister(now, "two"));
    });
    let outputs: Vec<_> = std::iter::from_fn(|| page.engine.poll_output()).collect();
    let changed = (outputs.iter())
        .filter(|o| matches!(o, Output::Emit(Event::ToolsChanged)))
        .count();
    let notices = (outputs.iter())
        .filter(|o| matches!(o, Output::Send(f) if f.contains("list_changed")))
        .count();
    assert_eq!((changed, notices), (1, 1), "{outputs:?}");
    page.engine.batch_tool_changes(now, |_| ());
    assert!(
        page.engine.poll_output().is_none(),
        "no change, nothing told"
    );
}

#[test]
fn an_allowance_given_while_the_name_changed_hands_is_not_kept() {
    let config = EngineConfig {
        offer_allow_for_session: true,
        ..EngineConfig::default()
    };
    let mut page = Page::with(config, Vec::new());
    page.call(1, "wipe", json!({"boardId": "b1"}));
    let call = confirm_ask(&page.take());
    // While the person decides, the tool leaves and another owner takes its name.
    assert!(page.engine.unregister(page.now, "wipe"));
    let other = Declaration {
        original_name: "wipe".into(),
        description: Some("Wipe, another owner's".into()),
        require_confirmation: Some(true),
        ..Declaration::default()
    };
    (page
        .engine
        .define(page.now, other, ToolKind::Browser, "other"))
    .unwrap();
    page.input(Input::Answered {
        call,
        answer: Answer::Approve {
            allow_session: true,
            allow_always: false,
        },
    });
    page.take();
    page.call(2, "wipe", json!({"boardId": "b1"}));
    confirm_ask(&page.take());
}

// ---- resources, prompts and completion: requests the page's server answers (SPEC §11) -------

fn served_page() -> Page {
    let mut page = Page::new();
    page.engine.serve_with("server");
    page
}

#[test]
fn served_requests_run_the_server_once_and_answer_what_it_answered() {
    let mut page = served_page();
    page.frame(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}));
    let capabilities = page.sent()[0]["result"]["capabilities"].clone();
    assert_eq!(capabilities["resources"]["subscribe"], true);
    assert_eq!(capabilities["prompts"]["listChanged"], true);
    assert!(capabilities["completions"].is_object());

    page.frame(
        json!({"jsonrpc": "2.0", "id": 2, "method": "resources/read",
                      "params": {"uri": "board://tasks", "_meta": {"progressToken": "p"}}}),
    );
    let (call, input) = page.ran();
    let input: Value = serde_json::from_str(&input).unwrap();
    assert_eq!(input["method"], "resources/read");
    assert_eq!(input["params"]["uri"], "board://tasks");
    page.input(Input::Progress {
        call,
        progress: 1.0,
        total: None,
        message: None,
    });
    let body = json!({"result": {"contents": [{"uri": "board://tasks", "text": "3 tasks"}]}});
    page.settle(call, HandlerOutcome::Returned(body.to_string()));
    // The same id again: the stored answer, not a second run.
    page.frame(
        json!({"jsonrpc": "2.0", "id": 2, "method": "resources/read",
                      "params": {"uri": "board://tasks"}}),
    );
    let outputs = page.take();
    assert_eq!(runs(&outputs), 0);
    assert!(events(&outputs).is_empty(), "no tool events: {outputs:?}");
    let sent: Vec<Value> = outputs
        .iter()
        .filter_map(|o| match o {
            Output::Send(frame) => Some(serde_json::from_str(frame).unwrap()),
            _ => None,
        })
        .collect();
    assert_eq!(sent[0]["method"], "notifications/progress");
    assert_eq!(sent[0]["params"]["progressToken"], "p");
    assert_eq!(sent[1]["result"], body["result"]);
    assert_eq!(sent[2], sent[1]);

    page.frame(json!({"jsonrpc": "2.0", "id": 3, "method": "prompts/get",
                      "params": {"name": "nope"}}));
    let (call, _) = page.ran();
    let error = json!({"error": {"code": -32602, "message": "no prompt 'nope'"}});
    page.settle(call, HandlerOutcome::Returned(error.to_string()));
    let answer = only_answer(&page.sent(), 3);
    assert_eq!(answer["error"]["code"], -32602);
    assert_eq!(answer["error"]["message"], "no prompt 'nope'");
}

#[test]
fn every_failure_of_a_served_request_is_one_json_rpc_error() {
    let mut page = served_page();
    page.frame(json!({"jsonrpc": "2.0", "id": 1, "method": "prompts/get", "params": {}}));
    let (call, _) = page.ran();
    page.settle(call, HandlerOutcome::Threw("boom".into()));
    assert_eq!(only_answer(&page.sent(), 1)["error"]["message"], "boom");

    // Silence: the page's default timeout (30 s here), then an error; a late answer is ignored.
    page.frame(json!({"jsonrpc": "2.0", "id": 2, "method": "resources/read", "params": {}}));
    let (call, _) = page.ran();
    page.advance(30_001);
    let outputs = page.take();
    assert!(outputs
        .iter()
        .any(|o| matches!(o, Output::Abort { call: c, .. } if *c == call)));
    let answer: Vec<Value> = outputs
        .iter()
        .filter_map(|o| match o {
            Output::Send(frame) => Some(serde_json::from_str(frame).unwrap()),
            _ => None,
        })
        .collect();
    assert_eq!(answer.len(), 1);
    assert_eq!(answer[0]["error"]["code"], -32603);
    assert!(answer[0]["error"]["message"]
        .as_str()
        .unwrap()
        .contains("30000"));
    page.settle(call, HandlerOutcome::Returned(r#"{"result":{}}"#.into()));
    assert!(page.sent().is_empty());

    // Too large to send: an error naming the limit instead.
    page.frame(json!({"jsonrpc": "2.0", "id": 3, "method": "resources/read", "params": {}}));
    let (call, _) = page.ran();
    let huge = format!(
        r#"{{"result":{{"contents":[{{"uri":"a:b","text":"{}"}}]}}}}"#,
        "x".repeat(MAX_FRAME_BYTES)
    );
    page.settle(call, HandlerOutcome::Returned(huge));
    let answer = only_answer(&page.sent(), 3);
    assert_eq!(answer["error"]["code"], -32603);
    assert!(answer["error"]["message"]
        .as_str()
        .unwrap()
        .contains("not sent"));

    // A cancel aborts it and sends nothing.
    page.frame(json!({"jsonrpc": "2.0", "id": 4, "method": "completion/complete", "params": {}}));
    let (call, _) = page.ran();
    page.frame(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                      "params": {"requestId": 4, "reason": "enough"}}),
    );
    let outputs = page.take();
    assert!(outputs
        .iter()
        .any(|o| matches!(o, Output::Abort { call: c, .. } if *c == call)));
    assert!(!outputs.iter().any(|o| matches!(o, Output::Send(_))));
}

#[test]
fn a_served_request_asks_the_agent_in_rounds_as_a_call_does() {
    let mut page = served_page();
    page.frame(json!({"jsonrpc": "2.0", "id": 7, "method": "prompts/get",
                      "params": {"name": "ask"}}));
    let (call, _) = page.ran();
    let requests =
        json!({"ctx": {"method": "elicitation/create", "params": {"message": "Which?"}}});
    page.input(Input::AskAgent {
        call,
        requests: &requests.to_string(),
    });
    let round = page.sent().pop().unwrap();
    assert_eq!(round["method"], "clienttools/input");
    assert_eq!(round["params"]["_meta"]["clienttools/callId"], "7");
    page.frame(json!({"jsonrpc": "2.0", "id": round["id"], "result": {
        "inputResponses": {"ctx": {"action": "accept", "content": {}}}}}));
    let outputs = page.take();
    assert!(outputs
        .iter()
        .any(|o| matches!(o, Output::AgentAnswered { call: c, answer: Ok(_) } if *c == call)));
    page.settle(
        call,
        HandlerOutcome::Returned(r#"{"result":{"messages":[]}}"#.into()),
    );
    assert_eq!(
        only_answer(&page.sent(), 7)["result"]["messages"],
        json!([])
    );
}

#[test]
fn without_a_server_the_served_methods_are_unknown_and_notifications_go_out_when_they_fit() {
    let mut page = Page::new();
    page.frame(json!({"jsonrpc": "2.0", "id": 1, "method": "prompts/list"}));
    assert_eq!(only_answer(&page.sent(), 1)["error"]["code"], -32601);
    page.input(Input::Notify {
        method: "notifications/resources/updated",
        params: r#"{"uri":"board://tasks"}"#,
    });
    let sent = page.sent();
    assert_eq!(sent[0]["method"], "notifications/resources/updated");
    assert_eq!(sent[0]["params"]["uri"], "board://tasks");
    page.input(Input::Notify {
        method: "notifications/resources/updated",
        params: "{not json",
    });
    assert!(page.sent().is_empty());
}

#[test]
fn a_served_request_ends_at_the_runtimes_timeout_when_it_is_shorter() {
    let mut page = served_page();
    page.frame(
        json!({"jsonrpc": "2.0", "id": 1, "method": "resources/read",
                      "params": {"uri": "a:b", "_meta": {"clienttools/timeoutMs": 500}}}),
    );
    page.ran();
    page.advance(501);
    let answer = only_answer(&page.sent(), 1);
    assert!(
        answer["error"]["message"].as_str().unwrap().contains("500"),
        "{answer}"
    );
}
