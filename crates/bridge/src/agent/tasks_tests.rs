//! Whether a call may be a task, and room for it, with a real task book and the test's
//! [`FakePage`]: a `--tools` tool's `taskSupport` holds when the page registered a handler for it,
//! and a `required` tool's call at the task limit is refused before the page is sent anything; the
//! policy's `block` refuses a call before any task, and its `redact` holds for a task's result.

use std::sync::Arc;
use std::time::Duration;

use client_tools_core::protocol::{meta, method, Tool};
use client_tools_core::registry::TaskSupport;
use futures_util::future::BoxFuture;
use rmcp::model::ClientCapabilities;
use serde_json::{json, Map, Value};

use super::{TaskHostOf, Tasks};
use crate::agent::rounds::{
    arguments_digest, drive, task_refusal, task_support, tool_digest, AgentSide, CallKey, Driven,
    Rounds, RunningCall,
};
use crate::calls::agent_tools::AgentTools;
use crate::calls::policy::{Policy, ACTED_META};
use crate::ids::now_unix_ms;
use crate::limits::MAX_TASKS_PER_SESSION;
use crate::sessions::fake_page::{session, FakePage};
use crate::sessions::page_session::PageSession;

const FILE: &str = r#"[
  {"name": "later", "description": "may run long", "inputSchema": {"type": "object"},
   "taskSupport": "optional"},
  {"name": "only_task", "description": "always long", "inputSchema": {"type": "object"},
   "taskSupport": "required"}
]"#;

/// What `registerHandler` lists: kind `handler`, no schema, no `execution` (forbidden).
fn handler(name: &str) -> Tool {
    let mut extensions = Map::new();
    extensions.insert(meta::KIND.into(), "handler".into());
    extensions.insert(meta::ORIGINAL_NAME.into(), name.into());
    Tool {
        name: name.into(),
        description: None,
        input_schema: json!({"type": "object"}),
        output_schema: None,
        annotations: None,
        meta: Some(extensions),
        execution: None,
    }
}

/// A page session with the `--tools` file above, whose page registered handlers for its tools.
fn page_with_handlers() -> Arc<PageSession> {
    let file = AgentTools::parse(FILE).unwrap();
    let plain = Arc::try_unwrap(session()).ok().unwrap();
    let page = Arc::new(plain.with_agent_tools(Arc::new(file), Duration::from_secs(30)));
    page.set_tools(vec![handler("later"), handler("only_task")]);
    page
}

fn rounds_with(tasks: &Arc<Tasks>) -> Rounds {
    let rounds = Rounds::default();
    rounds.set_tasks(Arc::new(TaskHostOf(tasks.clone())));
    rounds
}

/// An agent that declared the tasks extension, and form elicitation when `asked` (it answers by
/// retrying: on 2026-07-28 it has no way to be asked during the call).
struct TaskAgent {
    asked: bool,
}

const TASK_AGENT: TaskAgent = TaskAgent { asked: false };
const ASKED_TASK_AGENT: TaskAgent = TaskAgent { asked: true };

impl AgentSide for TaskAgent {
    fn capabilities(&self) -> ClientCapabilities {
        let mut declared = json!({"extensions": {rmcp::model::TASKS_EXTENSION_ID: {}}});
        if self.asked {
            declared["elicitation"] = json!({"form": {}});
        }
        serde_json::from_value(declared).unwrap()
    }
    fn progress(&self, _: client_tools_core::protocol::ProgressParams) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
    fn log(&self, _: Map<String, Value>) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
    fn cancelled(&self) -> BoxFuture<'_, ()> {
        Box::pin(std::future::pending())
    }
}

fn key(page: &PageSession, tool: &str) -> CallKey {
    CallKey {
        page_session: page.id().to_owned(),
        tool: tool.into(),
        tool_digest: String::new(),
        arguments: String::new(),
    }
}

#[tokio::test]
async fn a_tools_file_task_support_holds_when_the_page_registered_a_handler_for_it() {
    let page = page_with_handlers();
    assert_eq!(task_support(&page, "later"), TaskSupport::Optional);
    assert_eq!(task_support(&page, "only_task"), TaskSupport::Required);

    let refusal = task_refusal(&page, "only_task", false).expect("refused without the extension");
    assert_eq!(refusal.code, -32021);
    assert!(
        refusal.message.contains("runs only as a task"),
        "{}",
        refusal.message
    );
    assert!(task_refusal(&page, "only_task", true).is_none());
    assert!(task_refusal(&page, "later", false).is_none());

    // An optional one that runs past the window becomes a task.
    let tasks = Arc::new(Tasks::default());
    let rounds = rounds_with(&tasks);
    let mut fake = FakePage::connect(&page);
    let call = page.prepare_call("later", json!({}), None, None).unwrap();
    let running = RunningCall::start_checked(&rounds, page.clone(), call, true, 4).unwrap();
    let driven = drive(&rounds, running, &TASK_AGENT, key(&page, "later"), 0, None);
    let (_, params) = fake.request(method::TOOLS_CALL).await;
    assert_eq!(params["name"], "later");
    let Driven::Task(task) = driven.await else {
        panic!("the call became a task")
    };
    assert_eq!(task["status"], "working");
    let id = task["taskId"].as_str().unwrap();
    assert!(tasks.knows(id));
}

#[tokio::test]
async fn a_required_tool_at_the_task_limit_is_refused_before_the_page_sees_the_call() {
    let page = page_with_handlers();
    let tasks = Arc::new(Tasks::default());
    let rounds = rounds_with(&tasks);
    let mut fake = FakePage::connect(&page);
    for i in 0..MAX_TASKS_PER_SESSION {
        tasks
            .lock()
            .create(&format!("t{i}"), page.id(), now_unix_ms())
            .unwrap();
    }
    let call = page
        .prepare_call("only_task", json!({}), None, None)
        .unwrap();
    let Err(refused) = RunningCall::start_checked(&rounds, page.clone(), call, true, 4) else {
        panic!("no room: refused before it starts")
    };
    assert!(refused.is_error);
    let text = serde_json::to_string(&refused.content).unwrap();
    assert!(
        text.contains(&format!("limit {MAX_TASKS_PER_SESSION}")),
        "{text}"
    );
    tokio::task::yield_now().await;
    assert!(fake.has_nothing_queued(), "the page never sees the call");

    // An optional one at the limit still runs (as a plain call): the page's first request, and
    // its only one (a call started before it would have been sent first).
    let call = page.prepare_call("later", json!({}), None, None).unwrap();
    let _running = RunningCall::start_checked(&rounds, page.clone(), call, true, 4).unwrap();
    let (_, params) = fake.request(method::TOOLS_CALL).await;
    assert_eq!(params["name"], "later");
    assert!(fake.has_nothing_queued());
}

const GUARDS: &str = r#"
[[rule]]
id = "mask"
tools = ["later"]
action = "redact"
redact = ["email"]

[[rule]]
id = "no-drop"
tools = ["only_task"]
when = "input.q.matches('(?i)drop')"
action = "block"
"#;

#[tokio::test]
async fn a_policy_redacts_a_task_result_and_blocks_a_call_before_any_task_is_made() {
    let file = AgentTools::parse(FILE).unwrap();
    let plain = Arc::try_unwrap(session()).ok().unwrap();
    let page = Arc::new(
        plain
            .with_agent_tools(Arc::new(file), Duration::from_secs(30))
            .with_policy(Arc::new(Policy::parse(GUARDS).unwrap())),
    );
    page.set_tools(vec![handler("later"), handler("only_task")]);
    let tasks = Arc::new(Tasks::default());
    let rounds = rounds_with(&tasks);
    let mut fake = FakePage::connect(&page);

    let Err(blocked) = page.prepare_call("only_task", json!({"q": "DROP TABLE t"}), None, None)
    else {
        panic!("the block rule refuses the call")
    };
    assert!(blocked.is_error);
    assert!(blocked.text().contains("no-drop"), "{}", blocked.text());
    tokio::task::yield_now().await;
    assert!(fake.has_nothing_queued(), "the page never sees the call");
    assert_eq!(tasks.lock().len(), 0, "no task was made");

    let mut changes = tasks.watch();
    let call = page.prepare_call("later", json!({}), None, None).unwrap();
    let running = RunningCall::start_checked(&rounds, page.clone(), call, true, 4).unwrap();
    let driven = drive(&rounds, running, &TASK_AGENT, key(&page, "later"), 0, None);
    let (call_id, _) = fake.request(method::TOOLS_CALL).await;
    let Driven::Task(task) = driven.await else {
        panic!("the call became a task")
    };
    let id = task["taskId"].as_str().unwrap().to_owned();
    fake.answer(
        &call_id,
        json!({"content": [{"type": "text", "text": "write to ada@example.com"}],
               "structuredContent": {"to": "ada@example.com"}}),
    );
    let completed = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            let (changed, detailed) = changes.recv().await.unwrap();
            if changed == id && detailed["status"] == "completed" {
                break detailed;
            }
        }
    })
    .await
    .expect("the task completes");
    // What the watchers were told and what `tasks/get` serves: the redacted result.
    for served in [completed, tasks.get(&id, page.id()).unwrap()] {
        let result = &served["result"];
        assert_eq!(result["content"][0]["text"], "write to [redacted email]");
        assert_eq!(result["structuredContent"]["to"], "[redacted email]");
        assert_eq!(result["_meta"][ACTED_META][0]["rule"], "mask");
        assert!(!served.to_string().contains("ada@example.com"), "{served}");
    }
}

/// The page's round for its call `call`: one question, `name`.
fn name_round(call: &client_tools_core::protocol::RequestId) -> Value {
    json!({"inputRequests": {"user_name": {"method": "elicitation/create", "params": {
            "message": "What is your name?",
            "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}}},
        "_meta": {"clienttools/callId": call.to_string()}})
}

#[tokio::test]
async fn an_optional_tool_that_asks_at_once_becomes_a_task_waiting_on_the_question() {
    let page = page_with_handlers();
    let tasks = Arc::new(Tasks::default());
    let rounds = rounds_with(&tasks);
    let mut fake = FakePage::connect(&page);
    let call = page.prepare_call("later", json!({}), None, None).unwrap();
    let running = RunningCall::start_checked(&rounds, page.clone(), call, true, 4).unwrap();
    let (driven, ()) = tokio::join!(
        drive(
            &rounds,
            running,
            &ASKED_TASK_AGENT,
            key(&page, "later"),
            0,
            None
        ),
        async {
            let (id, _) = fake.request(method::TOOLS_CALL).await;
            let round = client_tools_core::protocol::RequestId::String("input-1".into());
            assert_eq!(page.page_input(round, name_round(&id)), None);
        }
    );
    let Driven::Task(task) = driven else {
        panic!("an optional call that asks becomes a task: {driven:?}")
    };
    let id = task["taskId"].as_str().unwrap();
    let got = until_status(&tasks, id, &page, "input_required").await;
    assert!(got["inputRequests"]["user_name"].is_object(), "{got}");
}

#[tokio::test]
async fn a_required_tool_asks_on_the_call_first_and_always_ends_as_a_task() {
    let page = page_with_handlers();
    let tasks = Arc::new(Tasks::default());
    let rounds = rounds_with(&tasks);
    let mut fake = FakePage::connect(&page);
    let call = page
        .prepare_call("only_task", json!({}), None, None)
        .unwrap();
    let running = RunningCall::start_checked(&rounds, page.clone(), call, true, 4).unwrap();
    let (driven, call_id) = tokio::join!(
        drive(
            &rounds,
            running,
            &ASKED_TASK_AGENT,
            checked_key(&page, "only_task"),
            0,
            None
        ),
        async {
            let (id, _) = fake.request(method::TOOLS_CALL).await;
            let round = client_tools_core::protocol::RequestId::String("input-1".into());
            assert_eq!(page.page_input(round, name_round(&id)), None);
            id
        }
    );
    // Round 1 is the `tools/call`'s own (multi round-trip): no task yet.
    let Driven::InputRequired { requests, state } = driven else {
        panic!("a required call's first question is asked on the call: {driven:?}")
    };
    assert!(requests.contains_key("user_name"));
    assert_eq!(
        tasks.lock().len(),
        0,
        "no task before the question is answered"
    );
    // The retry answers it; the handler then ends at once: still a task, already completed.
    let retry = crate::agent::rounds::Retry {
        state,
        page_session: page.id().to_owned(),
        tool: "only_task".into(),
        arguments: Map::new(),
        responses: serde_json::from_value(
            json!({"user_name": {"action": "accept", "content": {"name": "Alice"}}}),
        )
        .unwrap(),
    };
    let (driven, ()) = tokio::join!(
        crate::agent::rounds::resume::<client_tools_core::protocol::CallToolResult>(
            &rounds,
            retry,
            &ASKED_TASK_AGENT
        ),
        async {
            let answer: Value = serde_json::from_str(&fake.frame().await).unwrap();
            assert_eq!(answer["id"], "input-1", "{answer}");
            let name = &answer["result"]["inputResponses"]["user_name"]["content"]["name"];
            assert_eq!(name, "Alice", "{answer}");
            fake.answer_call(&call_id, "Hello, Alice!");
        }
    );
    let Driven::Task(task) = driven else {
        panic!("a required call ends as a task: {driven:?}")
    };
    let id = task["taskId"].as_str().unwrap();
    let done = until_status(&tasks, id, &page, "completed").await;
    assert_eq!(
        done["result"]["content"][0]["text"], "Hello, Alice!",
        "{done}"
    );
}

/// The task `id` once its status is `status` (10 s at most; the task runs on its own tokio task).
async fn until_status(tasks: &Tasks, id: &str, page: &PageSession, status: &str) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let got = tasks.get(id, page.id()).unwrap();
        if got["status"] == status {
            return got;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "not {status}: {got}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The key a call of `tool` without arguments is suspended under, as a retry names it again.
fn checked_key(page: &PageSession, tool: &str) -> CallKey {
    CallKey {
        tool_digest: tool_digest(page.tools().iter().find(|t| t.name == tool)),
        arguments: arguments_digest(&json!({})),
        ..key(page, tool)
    }
}
