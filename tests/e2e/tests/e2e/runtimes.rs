//! The page's tools in other agent runtimes (SPEC §12), through the package's adapters
//! (`client-tools/ag-ui`, `/elevenlabs`, `/openai-realtime`, `/ai-sdk`), each against the runtime's
//! own client library in real Chromium and Firefox: `@ag-ui/client`'s `HttpAgent`,
//! `@elevenlabs/client`'s `Conversation`, the `openai` package's `OpenAIRealtimeWebSocket`, the
//! `ai` package's `AbstractChat` with `DefaultChatTransport`. The runtimes' side is
//! `tests/runtimes/server.mjs` (fixtures and where they come from: `tests/runtimes/fixtures.mjs`).
//!
//! Every runtime asks in one turn for a call that succeeds, one whose input the schema rejects and
//! one the person rejects (the page's `confirm`), then for a tool the page defined during the turn
//! (its tool list followed): the runtime must get each outcome in its own form, once.

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
    // Turn-taking: one `response.create` per response, after its calls' outputs and its
    // `response.done` — the three calls of `resp_1` get one, the late call's `resp_9` one.
    assert_eq!(of_type("response.create").count(), 2, "{received:#?}");
    let position = |found: &dyn Fn(&Value) -> bool| received.iter().position(found);
    let first_create = position(&|m| m["type"] == "response.create").unwrap();
    let first_done =
        position(&|m| m["type"] == "(server) response.done" && m["response"] == "resp_1")
            .expect("the server ended resp_1");
    assert!(
        first_done < first_create,
        "response.create before response.done: {received:#?}"
    );
    for id in ["call_add", "call_bad", "call_wipe"] {
        let output =
            position(&|m| m["type"] == "conversation.item.create" && m["item"]["call_id"] == id)
                .unwrap_or_else(|| panic!("no output for {id}"));
        assert!(
            output < first_create,
            "{id}'s output after response.create: {received:#?}"
        );
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
    ag_ui(&driven).await;
    eleven_labs(&driven).await;
    openai_realtime(&driven).await;
    ai_sdk(&driven).await;
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
