//! Long page calls as MCP tasks (SPEC §4 "Long calls as tasks", §11): a real page in Chromium,
//! a real bridge, agents speaking MCP 2026-07-28 (stateless) with the tasks extension over plain
//! HTTP. A task outlives the agent's connection and is read by another one; a task waiting on the
//! page's dialog is cancelled by the agent, and the page's dialog closes with its handler never
//! run. (A task read and cancelled from other cluster nodes: tests/cluster.rs.)

use std::time::{Duration, Instant};

use client_tools_bridge::BridgeConfig;
use client_tools_e2e::webdriver::{BrowserKind, Driven};
use client_tools_e2e::BridgeOnly;
use serde_json::{json, Value};

const AGENT_TOKEN: &str = "tasks-agent-token";
const TASKS: &str = "io.modelcontextprotocol/tasks";

/// One stateless MCP request (2026-07-28) of an agent declaring the tasks extension, on a fresh
/// HTTP client (its own connection): the JSON-RPC answer.
async fn mcp(base_url: &str, session: &str, method: &str, params: Value) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}, "extensions": {TASKS: {}}},
    });
    let name = params
        .get("name")
        .or_else(|| params.get("taskId"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let mut request = reqwest::Client::new()
        .post(format!("{base_url}/mcp?session={session}"))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
        .bearer_auth(AGENT_TOKEN)
        .json(&body);
    if let Some(name) = name {
        request = request.header("mcp-name", name);
    }
    let text = request
        .send()
        .await
        .expect("the bridge answers")
        .text()
        .await
        .unwrap_or_default();
    text.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .chain(std::iter::once(text.as_str()))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(|message| message.get("id").is_some())
        .unwrap_or_else(|| panic!("no answer to {method} in {text}"))
}

/// `tasks/get` until the task's status is `status` (30 s at most): the task.
async fn until_status(base_url: &str, session: &str, task: &str, status: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let got = mcp(base_url, session, "tasks/get", json!({"taskId": task})).await;
        if got["result"]["status"] == status {
            return got["result"].clone();
        }
        assert!(
            Instant::now() < deadline,
            "task {task} not {status} in 30 s: {got}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// An `/api` request (`POST` with `body`, else `GET`) of page session `session`'s `path`: the
/// status and the JSON answer.
async fn api(base_url: &str, session: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let url = format!("{base_url}/api/sessions/{session}/{path}");
    let client = reqwest::Client::new();
    let request = match body {
        Some(body) => client.post(url).json(&body),
        None => client.get(url),
    };
    let response = request
        .bearer_auth(AGENT_TOKEN)
        .send()
        .await
        .expect("the bridge answers");
    let status = response.status().as_u16();
    let text = response.text().await.unwrap_or_default();
    let json = serde_json::from_str(&text).unwrap_or_else(|_| json!({"text": text}));
    (status, json)
}

/// `GET …/tasks/{task}` until the task's status is `status` (30 s at most): the task.
async fn api_until_status(base_url: &str, session: &str, task: &str, status: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (code, got) = api(base_url, session, &format!("tasks/{task}"), None).await;
        assert_eq!(code, 200, "{got}");
        if got["status"] == status {
            return got;
        }
        assert!(
            Instant::now() < deadline,
            "task {task} not {status} in 30 s: {got}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

struct Tasks {
    driven: Driven,
    served: BridgeOnly,
    session: String,
}

impl Tasks {
    async fn open() -> Tasks {
        let config = BridgeConfig {
            agent_token: Some(AGENT_TOKEN.into()),
            ..BridgeConfig::default()
        };
        let served = BridgeOnly::serving_package(config).await;
        let driven = Driven::start(BrowserKind::Chromium).await;
        driven
            .goto(&format!("{}/tasks.html", served.base_url))
            .await;
        let status = driven
            .until(
                "the page has started (or failed)",
                "const s = document.getElementById('status').textContent;
                 return s === 'loading' ? null : s;",
            )
            .await;
        assert_eq!(status, "ready", "the tasks page did not start");
        let page = served
            .bridge
            .wait_for_page(Duration::from_secs(60))
            .await
            .expect("the tasks page connected");
        let session = page.id().to_owned();
        Tasks {
            driven,
            served,
            session,
        }
    }

    async fn call(&self, tool: &str, arguments: Value) -> Value {
        let params = json!({"name": tool, "arguments": arguments});
        mcp(&self.served.base_url, &self.session, "tools/call", params).await["result"].clone()
    }

    async fn counts(&self) -> Value {
        self.driven.eval("return window.counts", vec![]).await
    }
}

/// The agent's connection that made the call is gone long before the call ends; another
/// connection (another HTTP client, no MCP session in common) reads the task: working, then
/// completed with the page's result. The handler ran once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_whose_agent_connection_dropped_is_still_answered() {
    let tasks = Tasks::open().await;
    // Agents see how each tool runs as a task (`execution.taskSupport`) in `tools/list`.
    let (base, session) = (&tasks.served.base_url, &tasks.session);
    let listed = mcp(base, session, "tools/list", json!({})).await;
    let support = |name: &str| {
        let tools = listed["result"]["tools"]
            .as_array()
            .expect("tools/list answers");
        let tool = tools
            .iter()
            .find(|t| t["name"] == name)
            .expect("the tool is listed");
        tool["execution"]["taskSupport"].clone()
    };
    assert_eq!(support("slow_job"), "optional", "{listed}");
    assert_eq!(support("only_as_task"), "required", "{listed}");
    let created = tasks.call("slow_job", json!({"ms": 1500})).await;
    assert_eq!(created["resultType"], "task", "{created}");
    assert_eq!(created["status"], "working", "{created}");
    assert!(created.get("content").is_none(), "{created}");
    let id = created["taskId"].as_str().unwrap().to_owned();
    assert_eq!(id.len(), 32, "128 random bits, in hex: {id}");
    // The call's HTTP client (and its connection) is dropped with `mcp`'s return. Another reads:
    let working = mcp(base, session, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(working["result"]["status"], "working", "{working}");
    let done = until_status(base, session, &id, "completed").await;
    assert_eq!(done["result"]["isError"], false, "{done}");
    let text = done["result"]["content"][0]["text"].as_str().unwrap();
    assert_eq!(text, "done after 1500 ms (run 1)", "{done}");
    assert_eq!(tasks.counts().await["slow_job"], 1);
    // Another page session's agent does not see it.
    let other = mcp(base, "another-session", "tasks/get", json!({"taskId": id})).await;
    assert_eq!(other["error"]["code"], -32602, "{other}");
    tasks.driven.quit().await;
}

/// A call waiting on the person in the page's dialog is a task; the agent cancels it: the task
/// settles `cancelled`, the page's dialog closes, `toolcancel` fires, and the handler never runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_waiting_on_the_dialog_is_cancelled_from_the_agent() {
    let tasks = Tasks::open().await;
    let created = tasks.call("approve_order", json!({"order": "o-7"})).await;
    assert_eq!(created["resultType"], "task", "{created}");
    let id = created["taskId"].as_str().unwrap().to_owned();
    tasks.driven.wait_for_dialog("approve_order").await;
    let (base, session) = (&tasks.served.base_url, &tasks.session);
    let working = mcp(base, session, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(working["result"]["status"], "working", "{working}");
    let ack = mcp(base, session, "tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(ack["result"], json!({"resultType": "complete"}), "{ack}");
    let cancelled = until_status(base, session, &id, "cancelled").await;
    assert!(cancelled.get("result").is_none(), "{cancelled}");
    tasks
        .driven
        .until(
            "the page's dialog closes",
            "const d = document.querySelector('client-tools-ui')?.shadowRoot?.querySelector('dialog');
             return !d || !d.open;",
        )
        .await;
    tasks
        .driven
        .until("toolcancel fired", "return window.counts.cancelled === 1")
        .await;
    assert_eq!(
        tasks.counts().await["approve_order"],
        0,
        "the handler never ran"
    );
    // Cancelling again is the same acknowledgement; the task stays cancelled.
    let again = mcp(base, session, "tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(
        again["result"],
        json!({"resultType": "complete"}),
        "{again}"
    );
    tasks.driven.quit().await;
}

/// `/api` callers and tasks: a call declaring the extension becomes a task, read with `GET
/// …/tasks/{task}` to its result; a task waiting on the page's question is answered with `POST
/// …/update`; a running one is cancelled with `POST …/cancel` (the page's handler is aborted); a
/// `required` tool is refused (`-32021`, naming the extension) to a caller without it, and the
/// page never runs it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_callers_get_tasks_answer_and_cancel_them() {
    let tasks = Tasks::open().await;
    let (base, session) = (&tasks.served.base_url, &tasks.session);
    let with_tasks = |name: &str, arguments: Value| {
        json!({"name": name, "arguments": arguments,
               "capabilities": {"elicitation": {}, "extensions": {TASKS: {}}}})
    };

    // A long call becomes a task, read to its result.
    let (status, created) = api(
        base,
        session,
        "call",
        Some(with_tasks("slow_job", json!({"ms": 1500}))),
    )
    .await;
    assert_eq!(status, 200, "{created}");
    assert_eq!(created["resultType"], "task", "{created}");
    assert_eq!(created["status"], "working", "{created}");
    let id = created["taskId"].as_str().unwrap().to_owned();
    let (status, working) = api(base, session, &format!("tasks/{id}"), None).await;
    assert_eq!(status, 200, "{working}");
    assert_eq!(working["resultType"], "complete", "{working}");
    assert_eq!(working["status"], "working", "{working}");
    let done = api_until_status(base, session, &id, "completed").await;
    let text = done["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert_eq!(text, "done after 1500 ms (run 1)", "{done}");
    let (status, other) = api(base, "another-session", &format!("tasks/{id}"), None).await;
    assert_eq!(status, 400, "{other}");
    assert_eq!(other["error"]["code"], -32602, "{other}");

    // The page asks a question: the task waits for it, answered with update.
    let (_, created) = api(
        base,
        session,
        "call",
        Some(with_tasks("ask_colour", json!({}))),
    )
    .await;
    assert_eq!(created["resultType"], "task", "{created}");
    let id = created["taskId"].as_str().unwrap().to_owned();
    let asked = api_until_status(base, session, &id, "input_required").await;
    let requests = asked["inputRequests"].as_object().expect("inputRequests");
    assert_eq!(requests.len(), 1, "{asked}");
    let (key, request) = requests.iter().next().unwrap();
    assert_eq!(request["method"], "elicitation/create", "{asked}");
    assert_eq!(request["params"]["message"], "Which colour?", "{asked}");
    let malformed = json!({"inputResponses": {key.clone(): {"action": "maybe"}}});
    let (status, refused) = api(
        base,
        session,
        &format!("tasks/{id}/update"),
        Some(malformed),
    )
    .await;
    assert_eq!(status, 400, "{refused}");
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let answer = json!({"inputResponses": {key.clone(): {"action": "accept", "content": {"color": "teal"}}}});
    let (status, ack) = api(base, session, &format!("tasks/{id}/update"), Some(answer)).await;
    assert_eq!(status, 200, "{ack}");
    let done = api_until_status(base, session, &id, "completed").await;
    let text = done["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert_eq!(text, "colour teal", "{done}");

    // A running task is cancelled: its page call is aborted.
    let (_, created) = api(
        base,
        session,
        "call",
        Some(with_tasks("slow_job", json!({"ms": 60000}))),
    )
    .await;
    assert_eq!(created["resultType"], "task", "{created}");
    let id = created["taskId"].as_str().unwrap().to_owned();
    let (status, ack) = api(
        base,
        session,
        &format!("tasks/{id}/cancel"),
        Some(json!({})),
    )
    .await;
    assert_eq!(status, 200, "{ack}");
    assert_eq!(ack["resultType"], "complete", "{ack}");
    let cancelled = api_until_status(base, session, &id, "cancelled").await;
    assert!(cancelled.get("result").is_none(), "{cancelled}");
    tasks
        .driven
        .until("toolcancel fired", "return window.counts.cancelled === 1")
        .await;

    // A required tool: refused to a caller without the extension, a task for one with it.
    let plain =
        json!({"name": "only_as_task", "arguments": {}, "capabilities": {"elicitation": {}}});
    let (status, refused) = api(base, session, "call", Some(plain)).await;
    assert_eq!(status, 400, "{refused}");
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(TASKS), "{refused}");
    assert!(
        refused["error"]["data"]["requiredCapabilities"]["extensions"][TASKS].is_object(),
        "{refused}"
    );
    let bare = json!({"name": "only_as_task", "arguments": {}});
    let (status, refused) = api(base, session, "call", Some(bare)).await;
    assert_eq!(status, 400, "{refused}");
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    assert_eq!(
        tasks.counts().await["only_as_task"],
        0,
        "the page never ran it"
    );
    let (status, ran) = api(
        base,
        session,
        "call",
        Some(with_tasks("only_as_task", json!({}))),
    )
    .await;
    assert_eq!(status, 200, "{ran}");
    // `required`: always a task (SEP-2663), even for a call that ends at once: one already
    // completed, its result read as any task's.
    assert_eq!(ran["resultType"], "task", "{ran}");
    let id = ran["taskId"].as_str().unwrap().to_owned();
    let done = api_until_status(base, session, &id, "completed").await;
    let text = done["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert_eq!(text, "ran as a task", "{done}");
    assert_eq!(tasks.counts().await["only_as_task"], 1);
    tasks.driven.quit().await;
}
