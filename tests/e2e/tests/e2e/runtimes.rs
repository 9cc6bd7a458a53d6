//! The page's tools in other agent runtimes (SPEC §12), through the package's adapters
//! (`client-tools/ag-ui`, `/elevenlabs`, `/openai-realtime`, `/ai-sdk`, `/uipath`), each against the
//! runtime's own client library in real Chromium and Firefox: `@ag-ui/client`'s `HttpAgent`,
//! `@elevenlabs/client`'s `Conversation`, the `openai` package's `OpenAIRealtimeWebSocket`, the
//! `ai` package's `AbstractChat` with `DefaultChatTransport`, `@uipath/uipath-typescript`'s
//! `ConversationalAgent` sessions. The runtimes' side is `tests/runtimes/server.mjs` (fixtures and
//! where they come from: `tests/runtimes/fixtures.mjs`).
//!
//! Every runtime asks in one turn for a call that succeeds, one whose input the schema rejects and
//! one the person rejects (the page's `confirm`), then for a tool the page defined during the turn
//! (its tool list followed): the runtime must get each outcome in its own form, once. UiPath's turn
//! has more (its confirmations, the result form, an unknown tool, calls stopped by the runtime),
//! with 1.3.8 as published and with the later releases' `executingToolCall`.

use std::process::Stdio;
use std::time::Duration;

use client_tools_e2e::e2e_dir;
use client_tools_e2e::webdriver::{BrowserKind, Driven};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// The runtimes' server (`node tests/runtimes/server.mjs`), stopped when dropped.
struct RuntimesServer {
    url: String,
    _child: Child,
}

async fn start_server() -> RuntimesServer {
    let dir = e2e_dir().join("..").join("runtimes");
    assert!(
        dir.join("node_modules/@ag-ui/client").is_dir(),
        "tests/runtimes has no node_modules: `cargo xtask test` installs it (npm ci there, after \
         `cargo xtask pack`)"
    );
    let mut child = Command::new("node")
        .arg("server.mjs")
        .current_dir(&dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start node tests/runtimes/server.mjs");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let url = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(line) = lines.next_line().await.expect("read the server's output") {
            if let Some(url) = line.strip_prefix("listening ") {
                return url.to_owned();
            }
        }
        panic!("the runtimes' server ended before it listened")
    })
    .await
    .expect("the runtimes' server listens within 60 s");
    // Keep reading, so the server never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    RuntimesServer { url, _child: child }
}

async fn scenario(driven: &Driven, name: &str) -> Value {
    let script = format!(
        "const done = arguments[arguments.length - 1];
         window.scenarios.{name}().then(done, (e) => done({{ failed: String(e && e.stack || e) }}));"
    );
    let outcome = driven.eval_async(&script).await;
    assert!(
        outcome.get("failed").is_none(),
        "{name} in {:?}: {}",
        driven.kind,
        outcome["failed"]
    );
    // Nothing thrown and not caught, no promise rejected and not handled, on the page.
    assert_eq!(
        outcome["pageErrors"],
        serde_json::json!([]),
        "{name} in {:?}: the page's errors",
        driven.kind
    );
    outcome
}

/// The page's events: each call ran once (the bad input never started; the rejected one was
/// activated, asked and answered without its handler).
fn assert_each_ran_once(events: &Value, runtime: &str) {
    // Sorted: the three calls of a turn run side by side.
    let mut events: Vec<&str> = events
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap())
        .collect();
    events.sort_unstable();
    assert_eq!(
        events,
        [
            "toolactivated add_numbers",
            "toolactivated late_tool",
            "toolactivated wipe_board",
            "toolresult add_numbers",
            "toolresult late_tool",
            "toolresult wipe_board",
        ],
        "{runtime}: the page's events"
    );
}

const REJECTED: &str = "rejected by the user: not now";
/// What a UiPath call running when the page stops the adapter ends with (its signal's reason).
const STOPPED: &str = "the page stopped client-tools/uipath";
/// What the schema says of `{a: "two"}`.
const INVALID: &str = "/a: \"two\" is not of type \"number\"";

fn names(tools: &Value) -> Vec<&str> {
    tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect()
}

async fn ag_ui(driven: &Driven) {
    let outcome = scenario(driven, "agUi").await;
    let runs = outcome["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 3, "three runs: {runs:#?}");
    assert_eq!(names(&runs[0]["tools"]), ["add_numbers", "wipe_board"]);
    assert_eq!(
        names(&runs[1]["tools"]),
        ["add_numbers", "late_tool", "wipe_board"],
        "the follow-up run lists the tool defined during the first"
    );
    let tool_message = |run: &Value, id: &str| -> Value {
        run["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["role"] == "tool" && m["toolCallId"] == id)
            .unwrap_or_else(|| panic!("no tool message for {id} in {run:#?}"))
            .clone()
    };
    let add = tool_message(&runs[1], "call_add");
    assert_eq!(add["content"], r#"{"sum":5}"#);
    assert!(add.get("error").is_none(), "{add}");
    let bad = tool_message(&runs[1], "call_bad");
    assert!(bad["error"].as_str().unwrap().contains(INVALID), "{bad}");
    assert_eq!(bad["content"], bad["error"]);
    let wipe = tool_message(&runs[1], "call_wipe");
    assert_eq!(wipe["error"], REJECTED);
    let late = tool_message(&runs[2], "call_late");
    assert_eq!(late["content"], "echo hello");
    // `late_tool` is declared `untrustedContentHint`: its message says so, and only its.
    let untrusted = serde_json::json!({"clienttools/untrusted": true});
    assert_eq!(late["metadata"], untrusted, "{late}");
    assert!(add.get("metadata").is_none(), "{add}");
    assert_each_ran_once(&outcome["events"], "AG-UI");
}

async fn eleven_labs(driven: &Driven) {
    let outcome = scenario(driven, "elevenLabs").await;
    let received = outcome["received"].as_array().unwrap();
    assert_eq!(
        received.len(),
        4,
        "one client_tool_result per call: {received:#?}"
    );
    let result = |id: &str| -> &Value {
        received
            .iter()
            .find(|m| m["tool_call_id"] == id)
            .unwrap_or_else(|| panic!("no client_tool_result for {id}: {received:#?}"))
    };
    assert_eq!(result("call_add")["result"], r#"{"sum":5}"#);
    assert_eq!(result("call_add")["is_error"], false);
    assert_eq!(result("call_bad")["is_error"], true);
    assert!(
        result("call_bad")["result"]
            .as_str()
            .unwrap()
            .contains(INVALID),
        "{}",
        result("call_bad")
    );
    assert_eq!(result("call_wipe")["is_error"], true);
    assert!(
        result("call_wipe")["result"]
            .as_str()
            .unwrap()
            .ends_with(REJECTED),
        "{}",
        result("call_wipe")
    );
    assert_eq!(result("call_late")["result"], "echo hello");
    assert_eq!(result("call_late")["is_error"], false);
    assert_each_ran_once(&outcome["events"], "ElevenLabs");
}

async fn openai_realtime(driven: &Driven) {
    let outcome = scenario(driven, "openAiRealtime").await;
    let received = outcome["received"].as_array().unwrap();
    let of_type = |t: &'static str| received.iter().filter(move |m| m["type"] == t);
    // The server refuses a `response.create` while a response is under way or asked for and not
    // begun, as the API does: it never had to.
    assert_eq!(
        of_type("(server) error").count(),
        0,
        "the server refused a response.create: {received:#?}"
    );
    // Turn-taking: `resp_1`'s two calls get one `response.create`, after their outputs and its
    // `response.done` (and before `resp_2`'s call is answered: it is sent at once); `resp_2`'s call,
    // answered while that one had not begun, and the late call of the response it began get one
    // more, after both outputs and both responses' end. Each carries its tag.
    let creates: Vec<usize> = received
        .iter()
        .enumerate()
        .filter(|(_, m)| m["type"] == "response.create")
        .map(|(n, _)| n)
        .collect();
    assert_eq!(creates.len(), 2, "{received:#?}");
    for &n in &creates {
        let tag = &received[n]["response"]["metadata"]["client_tools"];
        assert!(
            tag.is_string() && *tag == received[n]["event_id"],
            "{:#}",
            received[n]
        );
    }
    let position = |found: &dyn Fn(&Value) -> bool| received.iter().position(found);
    let done = |id: &str| {
        position(&|m| m["type"] == "(server) response.done" && m["response"] == id)
            .unwrap_or_else(|| panic!("the server ended {id}: {received:#?}"))
    };
    let output_at = |id: &str| {
        position(&|m| m["type"] == "conversation.item.create" && m["item"]["call_id"] == id)
            .unwrap_or_else(|| panic!("no output for {id}: {received:#?}"))
    };
    let (first, second) = (creates[0], creates[1]);
    for (before, create) in [
        (output_at("call_add"), first),
        (output_at("call_bad"), first),
        (done("resp_1"), first),
        (first, output_at("call_wipe")),
        (output_at("call_wipe"), second),
        (output_at("call_late"), second),
        (done("resp_2"), second),
        (done("resp_3"), second),
    ] {
        assert!(before < create, "out of turn: {received:#?}");
    }
    let output = |id: &str| -> String {
        of_type("conversation.item.create")
            .find(|m| m["item"]["call_id"] == id)
            .unwrap_or_else(|| panic!("no function_call_output for {id}: {received:#?}"))["item"]
            ["output"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let error = |id: &str| -> String {
        let output: Value =
            serde_json::from_str(&output(id)).expect("a failed call's output is JSON");
        output["error"].as_str().expect("{\"error\": …}").to_owned()
    };
    assert_eq!(output("call_add"), r#"{"sum":5}"#);
    assert!(error("call_bad").contains(INVALID));
    assert_eq!(error("call_wipe"), REJECTED);
    assert_eq!(output("call_late"), "echo hello");
    assert!(
        of_type("session.update").any(|m| names(&m["session"]["tools"]).contains(&"late_tool")),
        "the handler told the session of the new tool: {received:#?}"
    );
    assert_eq!(outcome["failures"], serde_json::json!([]));
    assert_each_ran_once(&outcome["events"], "OpenAI Realtime");
}

/// OpenAI Realtime when the API refuses the handler's `response.create`: `resp_1` asks for the
/// three calls; as the server reads the handler's `response.create` it begins a response of its own
/// (`resp_2`, no call) and answers that `response.create` with
/// `conversation_already_has_active_response` naming its `event_id`, then ends `resp_2`. The handler
/// asks again exactly once, after that response's `response.done` (a second ask while a response
/// is active or asked for would be refused too), and sends no output twice.
async fn openai_realtime_refused(driven: &Driven) {
    let outcome = scenario(driven, "openAiRealtimeRefused").await;
    let received = outcome["received"].as_array().unwrap();
    let at = |found: &dyn Fn(&Value) -> bool| -> Vec<usize> {
        (received.iter().enumerate())
            .filter(|(_, m)| found(m))
            .map(|(n, _)| n)
            .collect()
    };
    let creates = at(&|m| m["type"] == "response.create");
    let refusals = at(&|m| m["type"] == "(server) error");
    assert_eq!(refusals.len(), 1, "one refusal: {received:#?}");
    let refusal = &received[refusals[0]]["error"];
    assert_eq!(refusal["code"], "conversation_already_has_active_response");
    assert_eq!(
        refusal["event_id"], received[creates[0]]["event_id"],
        "the first response.create was refused: {received:#?}"
    );
    let done = |id: &str| at(&|m| m["type"] == "(server) response.done" && m["response"] == id);
    assert_eq!(done("resp_2").len(), 1, "{received:#?}");
    // Asked again exactly once after `resp_2` ended, and not between the refusal and then: the
    // retry is the only `response.create` between the refusal and `resp_3`'s end; each has a tag
    // of its own.
    let after_refusal: Vec<usize> = (creates.iter().copied())
        .filter(|&n| n > refusals[0] && n < done("resp_3")[0])
        .collect();
    assert_eq!(after_refusal.len(), 1, "{received:#?}");
    assert!(after_refusal[0] > done("resp_2")[0], "{received:#?}");
    assert_eq!(creates.len(), 3, "{received:#?}");
    assert_ne!(
        received[creates[1]]["event_id"], received[creates[0]]["event_id"],
        "{received:#?}"
    );
    // Each call's output sent once.
    for id in ["call_add", "call_bad", "call_wipe", "call_late"] {
        let outputs =
            at(&|m| m["type"] == "conversation.item.create" && m["item"]["call_id"] == id);
        assert_eq!(outputs.len(), 1, "{id}: {received:#?}");
    }
    // The client library reported the refusal (its `error` event), and nothing else.
    let failures = outcome["failures"].as_array().unwrap();
    assert_eq!(failures.len(), 1, "{failures:#?}");
    assert!(
        failures[0].as_str().unwrap().contains("resp_2"),
        "{failures:#?}"
    );
    assert_each_ran_once(&outcome["events"], "OpenAI Realtime (refused)");
}

async fn ai_sdk(driven: &Driven) {
    let outcome = scenario(driven, "aiSdk").await;
    let requests = outcome["requests"].as_array().unwrap();
    assert_eq!(requests.len(), 3, "three requests: {requests:#?}");
    let listed = |n: usize| -> Vec<String> {
        let mut names: Vec<String> = requests[n]["tools"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        names.sort();
        names
    };
    assert_eq!(listed(0), ["add_numbers", "wipe_board"]);
    assert_eq!(listed(1), ["add_numbers", "late_tool", "wipe_board"]);
    let parts: Vec<&Value> = outcome["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["parts"].as_array().unwrap())
        .collect();
    let part = |id: &str| -> &Value {
        parts
            .iter()
            .find(|p| p["toolCallId"] == id)
            .unwrap_or_else(|| panic!("no tool part for {id}: {parts:#?}"))
    };
    assert_eq!(part("call_add")["state"], "output-available");
    assert_eq!(part("call_add")["output"], serde_json::json!({"sum": 5}));
    assert_eq!(part("call_bad")["state"], "output-error");
    assert!(part("call_bad")["errorText"]
        .as_str()
        .unwrap()
        .contains(INVALID));
    assert_eq!(part("call_wipe")["state"], "output-error");
    assert_eq!(part("call_wipe")["errorText"], REJECTED);
    assert_eq!(part("call_late")["state"], "output-available");
    assert_eq!(part("call_late")["output"], "echo hello");
    assert_eq!(outcome["errors"], serde_json::json!([]));
    assert_each_ran_once(&outcome["events"], "AI SDK");
}

/// UiPath's record, for one scenario: what the client sent and the server sent, in order.
struct UiPathRecord<'a> {
    entries: Vec<(&'a str, &'a Value)>,
}

impl<'a> UiPathRecord<'a> {
    fn new(received: &'a Value, flavour: &str) -> Self {
        let prefix = format!("conv-{flavour}-");
        let entries = received
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|entry| {
                let (side, event) = ["client", "server"]
                    .into_iter()
                    .find_map(|side| entry.get(side).map(|event| (side, event)))?;
                let ours = event["conversationId"]
                    .as_str()
                    .is_some_and(|id| id.starts_with(&prefix));
                ours.then_some((side, event))
            })
            .collect();
        UiPathRecord { entries }
    }

    /// Positions and contents of `side`'s `kind` events (`endToolCall`, …) of call `id`.
    fn of_call(&self, side: &str, id: &str, kind: &str) -> Vec<(usize, &'a Value)> {
        self.entries
            .iter()
            .enumerate()
            .filter(|(_, (s, _))| *s == side)
            .filter_map(|(n, (_, event))| {
                let call = &event["exchange"]["message"]["toolCall"];
                (call["toolCallId"] == id).then(|| call.get(kind).map(|v| (n, v)))?
            })
            .collect()
    }

    /// The client's one `endToolCall` of `id`.
    fn end(&self, id: &str) -> &'a Value {
        let ends = self.of_call("client", id, "endToolCall");
        assert_eq!(ends.len(), 1, "one endToolCall for {id}: {ends:#?}");
        ends[0].1
    }

    fn declared(&self) -> Vec<Vec<&'a str>> {
        self.entries
            .iter()
            .filter_map(|(_, event)| event["exchange"]["startExchange"].get("clientSideTools"))
            .map(names)
            .collect()
    }
}

/// UiPath conversational agents, `flavour` "1.3.8" (the library as published: the adapter runs
/// each call by itself; the person answers through `confirm`) or "later" (1.3.8 with the change
/// of 1.5.1: the adapter waits for `executingToolCall`; the person answers at the dialog).
async fn ui_path(driven: &Driven, name: &str, flavour: &str) {
    let outcome = scenario(driven, name).await;
    let received = &outcome["received"];
    let handshakes: Vec<&Value> = received
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|entry| entry.get("handshake"))
        .collect();
    assert!(!handshakes.is_empty());
    for handshake in handshakes {
        assert_eq!(
            handshake,
            &serde_json::json!({"token": "uipath-local-secret", "org": "local-org", "tenant": "local-tenant"}),
            "the SDK's secret as socket.io auth, the org and tenant as query parameters"
        );
    }
    let record = UiPathRecord::new(received, flavour);
    let declared = record.declared();
    assert_eq!(
        declared[0],
        ["add_numbers", "wait_for_signal", "wipe_board"]
    );
    assert_eq!(
        declared[1],
        ["add_numbers", "late_tool", "wait_for_signal", "wipe_board"],
        "the second exchange declares the tool defined during the first"
    );
    let first = received
        .as_array()
        .unwrap()
        .iter()
        .find_map(|e| e["client"]["exchange"]["startExchange"]["clientSideTools"].as_array())
        .unwrap();
    assert_eq!(
        first[0]["inputSchema"]["required"],
        serde_json::json!(["a", "b"])
    );

    let end = |id: &str| record.end(id);
    let output = |id: &str| -> &Value {
        assert_eq!(end(id)["isError"], false, "{id}: {}", end(id));
        &end(id)["output"]
    };
    let error = |id: &str| -> String {
        assert_eq!(end(id)["isError"], true, "{id}: {}", end(id));
        end(id)["output"].as_str().unwrap().to_owned()
    };
    assert_eq!(output("call_add"), &serde_json::json!({"sum": 5}));
    assert!(error("call_bad").contains(INVALID));
    assert_eq!(error("call_wipe"), REJECTED);
    assert_eq!(
        output("call_form"),
        &serde_json::json!({"approved": true, "note": "ok"}),
        "the person's result form"
    );
    assert_eq!(
        error("call_unknown"),
        "no handler registered for tool 'no_such_tool' on this page"
    );
    assert_eq!(
        output("call_old"),
        &serde_json::json!({"sum": 8}),
        "a start without isClientSideTool, of a page tool"
    );
    assert_eq!(output("call_late"), "echo hello");
    // `late_tool` is declared `untrustedContentHint`: its end's metaData says so, and only its.
    let untrusted = serde_json::json!({"clienttools/untrusted": true});
    assert_eq!(
        end("call_late")["metaData"],
        untrusted,
        "{}",
        end("call_late")
    );
    assert!(
        end("call_add").get("metaData").is_none(),
        "{}",
        end("call_add")
    );
    // The runtime's confirmations: approved with the person's edit, which the call ran with.
    let confirms = |id: &str| -> Vec<&Value> {
        record
            .of_call("client", id, "confirmToolCall")
            .into_iter()
            .map(|(_, c)| c)
            .collect()
    };
    assert_eq!(
        confirms("call_confirm"),
        [&serde_json::json!({"approved": true, "input": {"a": 1, "b": 41}})]
    );
    assert_eq!(output("call_confirm"), &serde_json::json!({"sum": 42}));
    assert_eq!(
        confirms("call_refuse"),
        [&serde_json::json!({"approved": false})]
    );
    // Approved as it was; the go-ahead's final input differs (later releases) or never comes.
    assert_eq!(
        confirms("call_final"),
        [&serde_json::json!({"approved": true, "input": {"a": 10, "b": 10}})]
    );
    assert_eq!(
        confirms("call_no_go"),
        [&serde_json::json!({"approved": true, "input": {"a": 6, "b": 6}})]
    );
    assert_eq!(
        output("call_no_go"),
        &serde_json::json!({"sum": 12}),
        "run without a go-ahead"
    );
    // Confirmation asked for input the schema rejects: the call's error result, no refusal, and
    // the person was not asked.
    assert!(
        error("call_confirm_bad").contains(INVALID),
        "{}",
        end("call_confirm_bad")
    );
    let asked: Vec<&str> = outcome["asked"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(
        asked.len(),
        5,
        "the person was asked of wipe_board and four confirmations: {asked:#?}"
    );
    // What the client leaves alone: server-side tools (said or not), the calls the runtime stopped.
    for id in [
        "call_server",
        "call_old_server",
        "call_error",
        "call_ending",
        "call_cut",
    ] {
        assert!(
            record.of_call("client", id, "endToolCall").is_empty(),
            "no endToolCall for {id}"
        );
    }
    for id in [
        "call_add",
        "call_wipe",
        "call_form",
        "call_late",
        "call_confirm_bad",
        "call_stopped",
    ] {
        assert!(confirms(id).is_empty(), "no confirmToolCall for {id}");
    }
    // The call running when the page stopped the adapter: one error result saying so.
    assert_eq!(error("call_stopped"), STOPPED);
    let executing = |id: &str| -> usize { record.of_call("server", id, "executingToolCall")[0].0 };
    let ended_at = |id: &str| record.of_call("client", id, "endToolCall")[0].0;
    if flavour == "1.3.8" {
        // Without `executingToolCall` the adapter answers by itself, the refusal too, with the
        // input the person approved. The server holds a call's go-ahead until the call's end
        // (server.mjs): each call that ended here ended with none sent — run by the adapter
        // itself, never waiting (an adapter that waited would never end them).
        assert_eq!(error("call_refuse"), "rejected by the user: not this one");
        for id in [
            "call_add",
            "call_bad",
            "call_wipe",
            "call_form",
            "call_unknown",
            "call_old",
            "call_late",
        ] {
            assert!(
                ended_at(id) < executing(id),
                "{id}: 1.3.8 runs at once: {:#?}",
                record.entries
            );
        }
        assert_eq!(output("call_final"), &serde_json::json!({"sum": 20}));
    } else {
        // The runtime goes on from a refusal; each call runs on its `executingToolCall`, with
        // that event's input.
        assert!(record
            .of_call("client", "call_refuse", "endToolCall")
            .is_empty());
        let confirmed = record.of_call("client", "call_confirm", "confirmToolCall")[0].0;
        assert!(confirmed < executing("call_confirm"));
        let final_input = record.of_call("server", "call_final", "executingToolCall");
        assert_eq!(
            final_input[0].1["input"],
            serde_json::json!({"a": 10, "b": 20})
        );
        assert_eq!(
            output("call_final"),
            &serde_json::json!({"sum": 30}),
            "run on the executingToolCall's input, not the approved one"
        );
        for id in [
            "call_add",
            "call_bad",
            "call_wipe",
            "call_confirm",
            "call_final",
            "call_form",
            "call_unknown",
            "call_old",
            "call_late",
        ] {
            assert!(
                executing(id) < ended_at(id),
                "{id} answered before its executingToolCall: {:#?}",
                record.entries
            );
        }
        // No go-ahead came: the adapter ran it by itself after its wait.
        assert!(record
            .of_call("server", "call_no_go", "executingToolCall")
            .is_empty());
        let confirmed = record.of_call("client", "call_no_go", "confirmToolCall")[0].0;
        assert!(confirmed < ended_at("call_no_go"));
    }
    // The handler's `ctx.signal` aborted by each way the runtime stops a call, and by `stop()`.
    assert_eq!(
        outcome["aborts"],
        serde_json::json!({
            "call_error": "the UiPath runtime reported an error for the call: the tool call timed out on the runtime",
            "call_ending": "the UiPath session is ending",
            "call_cut": "WebSocket disconnected: io server disconnect",
            "call_stopped": STOPPED,
        })
    );
    // No session error went unhandled while those calls were interrupted: the socket's disconnect
    // reached the adapter (it listens while a call runs), and the test listens to nothing.
    assert_eq!(
        outcome["interrupted"],
        serde_json::json!({
            "ending": {"aborted": "the UiPath session is ending", "pageErrors": []},
            "cut": {"aborted": "WebSocket disconnected: io server disconnect", "pageErrors": []},
            "stopped": {"aborted": STOPPED, "pageErrors": []},
        })
    );
    assert_eq!(
        outcome["connectRefused"],
        "NOT_CONNECTED: not connected to an agent runtime: a page transport is attached \
         (attachTransport): call disconnect() before connect()",
        "connect() while the adapter is attached"
    );
    assert!(
        outcome["refused"].as_str().unwrap().starts_with(
            "TypeError: client-tools/uipath: this ClientTools is connecting to a runtime"
        ),
        "{}",
        outcome["refused"]
    );
    // The page's events: each call once (the refused one never reached the page's tool).
    let mut events: Vec<&str> = outcome["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap())
        .collect();
    events.sort_unstable();
    let mut expected = vec![
        "toolactivated add_numbers",
        "toolactivated add_numbers",
        "toolactivated add_numbers",
        "toolactivated add_numbers",
        "toolactivated add_numbers",
        "toolactivated approve_invoice",
        "toolactivated late_tool",
        "toolactivated wait_for_signal",
        "toolactivated wait_for_signal",
        "toolactivated wait_for_signal",
        "toolactivated wait_for_signal",
        "toolactivated wipe_board",
        "toolcancel wait_for_signal: WebSocket disconnected: io server disconnect",
        "toolcancel wait_for_signal: the UiPath runtime reported an error for the call: the tool call timed out on the runtime",
        "toolcancel wait_for_signal: the UiPath session is ending",
        "toolcancel wait_for_signal: the page stopped client-tools/uipath",
        "toolresult add_numbers",
        "toolresult add_numbers",
        "toolresult add_numbers",
        "toolresult add_numbers",
        "toolresult add_numbers",
        "toolresult approve_invoice",
        "toolresult late_tool",
        "toolresult wipe_board",
    ];
    expected.sort_unstable();
    assert_eq!(events, expected, "UiPath ({flavour}): the page's events");
}

async fn every_runtime_in(kind: BrowserKind) {
    let server = start_server().await;
    let driven = Driven::start_accepting_self_signed(kind).await;
    driven.goto(&format!("{}/", server.url)).await;
    driven
        .until(
            "the page loaded its bundle and the package",
            "return window.scenariosReady === true",
        )
        .await;
    // The page's check for errors nobody handled catches a promise rejected as it begins.
    let planted = driven
        .eval_async(
            "const done = arguments[arguments.length - 1];
             window.scenarios.plantedRejection().then(done, (e) => done({ failed: String(e) }));",
        )
        .await;
    let caught = planted["caught"].as_array().expect("caught");
    assert_eq!(caught.len(), 1, "{planted}");
    let caught = caught[0].as_str().unwrap();
    assert!(
        caught.starts_with("unhandled rejection: ") && caught.contains("planted by the test"),
        "{planted}"
    );
    ag_ui(&driven).await;
    eleven_labs(&driven).await;
    openai_realtime(&driven).await;
    openai_realtime_refused(&driven).await;
    ai_sdk(&driven).await;
    ui_path(&driven, "uiPath", "1.3.8").await;
    ui_path(&driven, "uiPathLater", "later").await;
    // Nothing went wrong on the page after the last scenario returned either.
    let late = driven
        .eval(
            "return window.reported().then(() => window.pageErrors);",
            vec![],
        )
        .await;
    assert_eq!(late, serde_json::json!([]), "the page's errors in {kind:?}");
    driven.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_runtime_in_chromium() {
    every_runtime_in(BrowserKind::Chromium).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_runtime_in_firefox() {
    every_runtime_in(BrowserKind::Firefox).await;
}
