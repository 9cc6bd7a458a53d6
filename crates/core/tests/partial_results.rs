//! `ctx.partial(value)` through the page engine, natively, with time as a parameter (SPEC §7,
//! issue 36 point 4): the last partial value is kept; a call that times out ends with an error
//! result carrying it (a text block and `structuredContent`); a call the runtime cancels sends no
//! result (SPEC §5) and its `toolcancel` event carries the value, unless the runtime asks for the
//! answer (`_meta["clienttools/answer"]: true`): then the error result carrying it is sent. Bad
//! values — not JSON, too large — are one warning each, and the call goes on.

use client_tools_core::limits::MAX_PARTIAL_BYTES;
use client_tools_core::page_engine::{
    CallEvent, CallHandle, EngineConfig, Event, HandlerOutcome, Input, Output, PageEngine,
};
use client_tools_core::partial;
use client_tools_core::registry::{Declaration, ToolKind};
use client_tools_core::time::Millis;
use client_tools_core::WarningCode;
use serde_json::{json, Value};

struct Page {
    engine: PageEngine<&'static str>,
    now: Millis,
    outputs: Vec<Output<&'static str>>,
}

impl Page {
    /// A page with `export` (1 s timeout, no output schema) and `typed` (1 s, an output schema).
    fn new() -> Self {
        let mut page = Self {
            engine: PageEngine::new(EngineConfig::default(), 30_000, Vec::new()),
            now: Millis(1_000.0),
            outputs: Vec::new(),
        };
        let tool = |name: &str, output: Option<Value>| Declaration {
            original_name: name.into(),
            description: Some(name.into()),
            parameters: Some(json!({"type": "object"})),
            output_schema: output,
            timeout_ms: Some(1_000.0),
            ..Declaration::default()
        };
        let typed = json!({"type": "object", "properties": {"rows": {"type": "number"}}, "required": ["rows"]});
        for (name, output) in [("export", None), ("typed", Some(typed))] {
            let engine = &mut page.engine;
            engine
                .define(page.now, tool(name, output), ToolKind::Function, name)
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

    fn frame(&mut self, frame: Value) {
        self.input(Input::Frame(&frame.to_string()));
    }

    /// `tools/call` `id` of `name`: the handle of its handler, which starts at once.
    fn call(&mut self, id: i64, name: &str) -> CallHandle {
        self.frame(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                          "params": {"name": name, "arguments": {}}}));
        let runs: Vec<CallHandle> = (self.take().into_iter())
            .filter_map(|output| match output {
                Output::RunHandler { call, .. } => Some(call),
                _ => None,
            })
            .collect();
        assert_eq!(runs.len(), 1, "{runs:?}");
        runs[0]
    }

    fn partial(&mut self, call: CallHandle, json: Result<&str, &str>) {
        let json = json.map(str::to_owned).map_err(str::to_owned);
        self.input(Input::Partial { call, json });
    }

    fn cancel(&mut self, id: i64, meta: Option<Value>) {
        let mut params = json!({"requestId": id, "reason": "the agent changed its mind"});
        if let Some(meta) = meta {
            params["_meta"] = meta;
        }
        self.frame(
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params}),
        );
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
}

/// The frames sent among `outputs`, parsed.
fn sent(outputs: &[Output<&'static str>]) -> Vec<Value> {
    (outputs.iter())
        .filter_map(|output| match output {
            Output::Send(frame) => serde_json::from_str(frame).ok(),
            _ => None,
        })
        .collect()
}

/// The one answer to call `id` among `outputs`.
fn answer(outputs: &[Output<&'static str>], id: i64) -> Value {
    let answers: Vec<Value> = (sent(outputs).into_iter())
        .filter(|frame| frame["id"] == id)
        .collect();
    assert_eq!(answers.len(), 1, "{answers:?}");
    answers[0]["result"].clone()
}

fn warnings(outputs: &[Output<&'static str>]) -> Vec<(WarningCode, String)> {
    (outputs.iter())
        .filter_map(|output| match output {
            Output::Emit(Event::Warning { code, message, .. }) => Some((*code, message.clone())),
            _ => None,
        })
        .collect()
}

/// The `toolcancel` events among `outputs`: `(reason, partial)`.
fn cancels(outputs: &[Output<&'static str>]) -> Vec<(String, Option<Value>)> {
    (outputs.iter())
        .filter_map(|output| match output {
            Output::Emit(Event::Call {
                what: CallEvent::Cancelled { reason, partial },
                ..
            }) => Some((reason.clone(), partial.clone())),
            _ => None,
        })
        .collect()
}

#[test]
fn a_call_that_times_out_ends_with_an_error_result_carrying_the_last_partial_value() {
    let mut page = Page::new();
    let call = page.call(1, "export");
    page.partial(call, Ok(r#"{"rows": 1}"#));
    page.partial(call, Ok(r#"{"rows": 2, "last": "o-2"}"#));
    assert!(
        page.take().is_empty(),
        "a partial value sends nothing by itself"
    );

    page.advance(1_000);
    let outputs = page.take();
    let result = answer(&outputs, 1);
    assert_eq!(result["isError"], true, "{result}");
    assert_eq!(result["content"][0]["text"], "timed out after 1000 ms");
    let carried = json!({"partial": {"rows": 2, "last": "o-2"}});
    assert_eq!(result["structuredContent"], carried, "{result}");
    let text: Value = serde_json::from_str(result["content"][1]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text, carried);
    assert_eq!(
        cancels(&outputs),
        [(
            "timeout".to_owned(),
            Some(json!({"rows": 2, "last": "o-2"}))
        )]
    );

    // The handler's late end changes nothing, nor does a partial value after the end.
    page.partial(call, Ok("3"));
    page.input(Input::HandlerSettled {
        call,
        outcome: HandlerOutcome::Returned("{}".into()),
    });
    assert!(page.take().is_empty());
}

#[test]
fn without_a_partial_value_a_timeout_is_as_before() {
    let mut page = Page::new();
    page.call(1, "export");
    page.advance(1_000);
    let outputs = page.take();
    let result = answer(&outputs, 1);
    assert_eq!(result["content"].as_array().unwrap().len(), 1, "{result}");
    assert!(result.get("structuredContent").is_none(), "{result}");
    assert_eq!(cancels(&outputs), [("timeout".to_owned(), None)]);
}

/// A tool with an output schema: MCP clients check an error result's `structuredContent` against
/// it too, so the value travels in the text block only.
#[test]
fn a_tool_with_an_output_schema_carries_it_in_text_only() {
    let mut page = Page::new();
    let call = page.call(1, "typed");
    page.partial(call, Ok("[1, 2]"));
    page.advance(1_000);
    let result = answer(&page.take(), 1);
    assert!(result.get("structuredContent").is_none(), "{result}");
    assert_eq!(result["content"][1]["text"], r#"{"partial":[1,2]}"#);
}

#[test]
fn bad_values_are_one_warning_each_and_the_earlier_value_is_kept() {
    let mut page = Page::new();
    let call = page.call(1, "export");
    page.partial(call, Ok(r#"{"step": 1}"#));

    page.partial(
        call,
        Err(&partial::not_json("TypeError: cyclic object value")),
    );
    page.partial(
        call,
        Err(&partial::not_json(
            "TypeError: BigInt value can't be serialized in JSON",
        )),
    );
    let big = format!("\"{}\"", "x".repeat(10 * 1024 * 1024));
    page.partial(call, Ok(&big));
    let outputs = page.take();
    let warned = warnings(&outputs);
    assert_eq!(warned.len(), 3, "{warned:?}");
    assert!(warned
        .iter()
        .all(|(code, _)| *code == WarningCode::PartialDropped));
    assert!(warned[0].1.contains("cyclic object value"), "{warned:?}");
    assert!(warned[1].1.contains("BigInt"), "{warned:?}");
    assert!(
        warned[2].1.contains(&format!(
            "larger than the bound of {MAX_PARTIAL_BYTES} bytes"
        )),
        "{warned:?}"
    );
    assert!(warned
        .iter()
        .all(|(_, m)| m.contains("the earlier partial value is kept")));
    assert!(
        sent(&outputs).is_empty(),
        "the call goes on: nothing is sent"
    );

    // The call is not failed by any of it: it ends as its handler says.
    page.input(Input::HandlerSettled {
        call,
        outcome: HandlerOutcome::Returned(r#"{"done": true}"#.into()),
    });
    let result = answer(&page.take(), 1);
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(result["structuredContent"], json!({"done": true}));
}

#[test]
fn the_earlier_value_stands_after_a_bad_one_and_a_timeout_carries_it() {
    let mut page = Page::new();
    let call = page.call(1, "export");
    page.partial(call, Ok(r#"{"step": 1}"#));
    page.partial(
        call,
        Err(&partial::not_json("TypeError: cyclic object value")),
    );
    page.advance(1_000);
    let result = answer(&page.take(), 1);
    assert_eq!(result["structuredContent"], json!({"partial": {"step": 1}}));
}

/// SPEC §5: the agent asked not to hear back. The value goes to the page's `toolcancel`.
#[test]
fn a_runtime_cancel_sends_no_result_and_its_toolcancel_carries_the_value() {
    let mut page = Page::new();
    let call = page.call(1, "export");
    page.partial(call, Ok(r#"{"saved": ["a"]}"#));
    page.cancel(1, None);
    let outputs = page.take();
    assert!(sent(&outputs).is_empty(), "{:?}", sent(&outputs));
    assert_eq!(
        cancels(&outputs),
        [(
            "the agent changed its mind".to_owned(),
            Some(json!({"saved": ["a"]}))
        )]
    );
    assert!(outputs.iter().any(|o| matches!(o, Output::Abort { .. })));
    // A meta that is not `true` asks for nothing.
    let call = page.call(2, "export");
    page.partial(call, Ok("1"));
    page.cancel(2, Some(json!({"clienttools/answer": "yes"})));
    assert!(sent(&page.take()).is_empty());
}

/// The runtime asks for the answer after its cancel (the bridge, for `tasks/cancel`): the call
/// ends with an error result carrying the value, sent for that request id; without a value, the
/// error result alone.
#[test]
fn a_runtime_cancel_asking_for_the_answer_gets_the_error_result_carrying_it() {
    let mut page = Page::new();
    let call = page.call(1, "export");
    page.partial(call, Ok(r#"{"saved": 2}"#));
    page.cancel(1, Some(json!({"clienttools/answer": true})));
    let outputs = page.take();
    let result = answer(&outputs, 1);
    assert_eq!(result["isError"], true);
    assert_eq!(
        result["content"][0]["text"],
        "cancelled by the runtime: the agent changed its mind"
    );
    assert_eq!(
        result["structuredContent"],
        json!({"partial": {"saved": 2}})
    );
    assert_eq!(
        cancels(&outputs),
        [(
            "the agent changed its mind".to_owned(),
            Some(json!({"saved": 2}))
        )]
    );
    assert!(outputs.iter().any(|o| matches!(o, Output::Abort { .. })));
    // The page sees a cancel, as without the answer: no `toolresult`.
    let finished = outputs.iter().any(|o| {
        matches!(
            o,
            Output::Emit(Event::Call {
                what: CallEvent::Finished { .. },
                ..
            })
        )
    });
    assert!(!finished, "no toolresult for a cancelled call");

    page.call(2, "export");
    page.cancel(2, Some(json!({"clienttools/answer": true})));
    let result = answer(&page.take(), 2);
    assert_eq!(result["isError"], true);
    assert_eq!(result["content"].as_array().unwrap().len(), 1, "{result}");
    assert!(result.get("structuredContent").is_none(), "{result}");

    // A re-send of the id gets the same answer (the ledger kept it), not a second run.
    page.frame(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "export", "arguments": {}}}));
    let again = answer(&page.take(), 1);
    assert_eq!(again["structuredContent"], json!({"partial": {"saved": 2}}));
}
