//! A call's W3C trace context (`_meta.traceparent`, `_meta.tracestate`: MCP 2026-07-28) through the
//! page engine, natively: it reaches the handler and every result the page sends for the call; a
//! malformed one is dropped with a `trace_context_invalid` warning and the call goes on.

use client_tools_core::limits::HANDLER_GRACE_MS;
use client_tools_core::page_engine::{
    Answer, CallHandle, Caller, EngineConfig, Event, HandlerOutcome, Input, Output, PageEngine,
};
use client_tools_core::protocol::{TraceContext, MAX_FRAME_BYTES};
use client_tools_core::registry::{Declaration, ToolKind};
use client_tools_core::time::Millis;
use client_tools_core::WarningCode;
use serde_json::{json, Value};

const PARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01";
const STATE: &str = "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7";

struct Page {
    engine: PageEngine<&'static str>,
    now: Millis,
    outputs: Vec<Output<&'static str>>,
}

impl Page {
    fn new() -> Self {
        Self::reloaded_during(Vec::new())
    }

    /// A page whose previous page left these calls running.
    fn reloaded_during(interrupted: Vec<String>) -> Self {
        let mut page = Self {
            engine: PageEngine::new(EngineConfig::default(), 30_000, interrupted),
            now: Millis(1_000.0),
            outputs: Vec::new(),
        };
        let tool = |name: &str, confirm: bool| Declaration {
            original_name: name.into(),
            description: Some(name.into()),
            parameters: Some(json!({"type": "object", "properties": {"n": {"type": "number"}}})),
            require_confirmation: Some(confirm),
            timeout_ms: Some(1_000.0),
            ..Declaration::default()
        };
        for (name, confirm) in [("echo", false), ("wipe", true)] {
            let engine = &mut page.engine;
            engine
                .define(page.now, tool(name, confirm), ToolKind::Function, name)
                .unwrap();
        }
        page.take();
        page
    }

    fn input(&mut self, input: Input<'_>) {
        self.engine.handle(self.now, input);
        self.outputs
            .extend(std::iter::from_fn(|| self.engine.poll_output()));
    }

    /// `tools/call` `id` with `meta` as its `_meta`.
    fn call(&mut self, id: i64, name: &str, arguments: Value, meta: Value) {
        let frame = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                           "params": {"name": name, "arguments": arguments, "_meta": meta}});
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

    /// The one handler run since the last take: its call and the trace context it was given.
    fn ran(&mut self) -> (CallHandle, Option<TraceContext>) {
        let runs: Vec<_> = (self.take().into_iter())
            .filter_map(|output| match output {
                Output::RunHandler { call, trace, .. } => Some((call, trace)),
                _ => None,
            })
            .collect();
        assert_eq!(runs.len(), 1, "{runs:?}");
        runs.into_iter().next().unwrap()
    }

    /// The answer to call `id` among the frames sent since the last take (the only frame for it).
    fn answer(&mut self, id: i64) -> Value {
        let answers: Vec<Value> = (self.take().into_iter())
            .filter_map(|output| match output {
                Output::Send(frame) => serde_json::from_str(&frame).ok(),
                _ => None,
            })
            .filter(|frame: &Value| frame["id"] == id)
            .collect();
        assert_eq!(answers.len(), 1, "{answers:?}");
        answers.into_iter().next().unwrap()
    }

    fn settle(&mut self, call: CallHandle, outcome: HandlerOutcome) {
        self.input(Input::HandlerSettled { call, outcome });
    }
}

fn traced() -> Value {
    json!({"traceparent": PARENT, "tracestate": STATE, "progressToken": "p"})
}

fn the_trace() -> Option<TraceContext> {
    Some(TraceContext {
        traceparent: PARENT.into(),
        tracestate: Some(STATE.into()),
    })
}

/// The trace context in an answer's result `_meta`: `(traceparent, tracestate)`.
fn result_trace(answer: &Value) -> (Value, Value) {
    let meta = &answer["result"]["_meta"];
    (meta["traceparent"].clone(), meta["tracestate"].clone())
}

fn carries_the_trace(answer: &Value) {
    assert_eq!(
        result_trace(answer),
        (json!(PARENT), json!(STATE)),
        "{answer}"
    );
}

fn warnings(outputs: &[Output<&'static str>]) -> Vec<(WarningCode, String)> {
    outputs
        .iter()
        .filter_map(|output| match output {
            Output::Emit(Event::Warning { code, message, .. }) => Some((*code, message.clone())),
            _ => None,
        })
        .collect()
}

#[test]
fn the_handler_gets_it_and_the_result_carries_it_back() {
    let mut page = Page::new();
    page.call(1, "echo", json!({"n": 1}), traced());
    let (call, trace) = page.ran();
    assert_eq!(trace, the_trace());
    page.settle(call, HandlerOutcome::Returned(r#"{"ok":true}"#.into()));
    let answer = page.answer(1);
    carries_the_trace(&answer);
    assert_eq!(answer["result"]["structuredContent"], json!({"ok": true}));

    // The frame the hot path does not read (a member name with an escape) is read the same way.
    let frame = format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"echo","arguments":{{"\u006e":2}},"_meta":{}}}}}"#,
        traced()
    );
    page.input(Input::Frame(&frame));
    let (call, trace) = page.ran();
    assert_eq!(trace, the_trace());
    page.settle(call, HandlerOutcome::ReturnedNothing);
    carries_the_trace(&page.answer(2));

    // Without one: nothing given, nothing added.
    page.call(3, "echo", json!({}), json!({}));
    let (call, trace) = page.ran();
    assert_eq!(trace, None);
    page.settle(call, HandlerOutcome::Returned("1".into()));
    assert_eq!(page.answer(3)["result"].get("_meta"), None);
    // A traceparent alone: `tracestate` stays absent.
    page.call(4, "echo", json!({}), json!({"traceparent": PARENT}));
    let (call, trace) = page.ran();
    assert_eq!(trace.unwrap().tracestate, None);
    page.settle(call, HandlerOutcome::Returned("1".into()));
    let answer = page.answer(4);
    assert_eq!(result_trace(&answer), (json!(PARENT), Value::Null));
}

#[test]
fn a_handlers_own_meta_stays_beside_it_and_its_own_trace_keys_are_replaced() {
    let mut page = Page::new();
    page.call(1, "echo", json!({}), traced());
    let (call, _) = page.ran();
    let shaped = json!({"content": [{"type": "text", "text": "hi"}],
        "_meta": {"mine": 1, "traceparent": "made up", "tracestate": "x=y"}});
    page.settle(call, HandlerOutcome::Returned(shaped.to_string()));
    let answer = page.answer(1);
    carries_the_trace(&answer);
    assert_eq!(answer["result"]["_meta"]["mine"], 1);

    // A call without a trace context leaves the handler's `_meta` as it was.
    page.call(2, "echo", json!({}), json!({}));
    let (call, _) = page.ran();
    page.settle(call, HandlerOutcome::Returned(shaped.to_string()));
    assert_eq!(page.answer(2)["result"]["_meta"], shaped["_meta"]);
}

/// Every result the page sends for a call carries it: the error results of SPEC §5 (a throw,
/// invalid input, no handler, a rejection, a timeout), one replaced for the frame limit, the
/// answer to a call interrupted by a reload, and a re-sent id's stored answer.
#[test]
fn every_result_of_the_call_carries_it() {
    let mut page = Page::new();
    let ended = |page: &mut Page, id: i64, text: &str| {
        let answer = page.answer(id);
        assert_eq!(answer["result"]["isError"], true, "{answer}");
        let said = answer["result"]["content"][0]["text"].as_str().unwrap();
        assert!(said.contains(text), "{said}");
        carries_the_trace(&answer);
        answer
    };

    page.call(1, "echo", json!({}), traced());
    let (call, _) = page.ran();
    page.settle(call, HandlerOutcome::Threw("boom".into()));
    ended(&mut page, 1, "boom");

    page.call(2, "echo", json!({"n": "one"}), traced());
    ended(&mut page, 2, "invalid input");

    page.call(3, "nobody", json!({}), traced());
    page.advance(HANDLER_GRACE_MS);
    ended(&mut page, 3, "no handler registered");

    page.call(4, "wipe", json!({}), traced());
    let asked = page.take().into_iter().find_map(|output| match output {
        Output::AskPerson { call, .. } => Some(call),
        _ => None,
    });
    let answer = Answer::Reject(Some("not now".into()));
    page.input(Input::Answered {
        call: asked.unwrap(),
        answer,
    });
    ended(&mut page, 4, "rejected by the user");

    page.call(5, "echo", json!({}), traced());
    page.ran();
    page.advance(1_000);
    let timed_out = ended(&mut page, 5, "timed out after 1000 ms");

    page.call(6, "echo", json!({}), traced());
    let (call, _) = page.ran();
    let huge = format!(r#""{}""#, "x".repeat(MAX_FRAME_BYTES));
    page.settle(call, HandlerOutcome::Returned(huge));
    ended(&mut page, 6, "the tool's result was not sent");

    // A re-sent id gets the stored answer, as it was.
    page.call(5, "echo", json!({}), json!({}));
    assert_eq!(page.answer(5), timed_out);

    // A cancelled call sends nothing; its id sent again learns so, with the trace.
    page.call(7, "echo", json!({}), traced());
    page.ran();
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": 7, "reason": "stop"}});
    page.input(Input::Frame(&cancel.to_string()));
    assert!(!page.take().iter().any(|o| matches!(o, Output::Send(_))));
    page.call(7, "echo", json!({}), json!({}));
    ended(&mut page, 7, "the call was cancelled");

    let mut reloaded = Page::reloaded_during(vec!["9".into()]);
    reloaded.call(9, "echo", json!({}), traced());
    ended(&mut reloaded, 9, "was not run again");
}

/// A request that fails as a whole (a capability the agent lacks: -32021) is a JSON-RPC error:
/// it has no `_meta`. The page's own calls (`invoke`) have no trace context.
#[test]
fn errors_and_the_pages_own_calls_carry_none() {
    let mut page = Page::new();
    page.call(1, "echo", json!({}), traced());
    let (call, _) = page.ran();
    let required = json!({"sampling": {}});
    page.settle(call, HandlerOutcome::CapabilityMissing(required));
    let answer = page.answer(1);
    assert_eq!(answer["error"]["code"], -32021);
    assert_eq!(answer.get("result"), None);

    let handle = (page.engine).begin_page_call(page.now, "echo".into(), None, Caller::Page);
    page.input(Input::ToolsChanged); // (drains what the call asked for)
    let (call, trace) = page.ran();
    assert_eq!((call, trace), (handle, None));
}

/// What an agent (or a runtime) may send that is not W3C Trace Context: dropped, said once in a
/// `trace_context_invalid` warning that names what was wrong, and the call runs as if it had none.
#[test]
fn a_malformed_one_is_dropped_with_a_warning_and_the_call_goes_on() {
    let ten_kb = format!("a={}", "b".repeat(10 * 1024));
    let zeros = format!("00-{}-00f067aa0ba902b7-01", "0".repeat(32));
    let cases: [(Value, &str, bool); 8] = [
        (
            json!({"traceparent": format!("{PARENT}{}", "0".repeat(200))}),
            "55 to 128 (a later version)",
            false,
        ),
        (
            json!({"traceparent": PARENT.to_uppercase(), "tracestate": STATE}),
            "lowercase hex",
            false,
        ),
        (json!({"traceparent": zeros}), "all-zero trace-id", false),
        (
            json!({"traceparent": 42, "tracestate": STATE}),
            "is not a string",
            false,
        ),
        (
            json!({"traceparent": format!("ff{}", &PARENT[2..])}),
            "version ff",
            false,
        ),
        (
            json!({"traceparent": format!("{PARENT}-ab")}),
            "is not 55 characters (version 00)",
            false,
        ),
        (
            json!({"tracestate": STATE}),
            "without a valid traceparent",
            false,
        ),
        // The traceparent stays when only the tracestate is wrong.
        (
            json!({"traceparent": PARENT, "tracestate": ten_kb}),
            "over 512 characters",
            true,
        ),
    ];
    for (n, (meta, why, keeps_parent)) in cases.into_iter().enumerate() {
        let id = n as i64 + 1;
        let mut page = Page::new();
        page.call(id, "echo", json!({"n": id}), meta.clone());
        let outputs = page.take();
        let said = warnings(&outputs);
        assert_eq!(said.len(), 1, "{meta}: {said:?}");
        let (code, message) = &said[0];
        assert_eq!(*code, WarningCode::TraceContextInvalid);
        assert!(message.starts_with("_meta "), "{message}");
        assert!(message.contains(why), "{meta}: {message}");
        assert!(
            message.contains("(the call goes on without it)"),
            "{message}"
        );
        assert!(message.len() < 200, "the value is never quoted: {message}");
        page.outputs = outputs;
        let (call, trace) = page.ran();
        let parent = trace.map(|trace| {
            assert_eq!(trace.tracestate, None);
            trace.traceparent
        });
        assert_eq!(parent.is_some(), keeps_parent, "{meta}");
        page.settle(call, HandlerOutcome::Returned(r#"{"ran":true}"#.into()));
        let answer = page.answer(id);
        assert_eq!(answer["result"]["isError"], false, "{answer}");
        let expected = match keeps_parent {
            true => (json!(PARENT), Value::Null),
            false => (Value::Null, Value::Null),
        };
        assert_eq!(result_trace(&answer), expected, "{meta}");
    }
}
