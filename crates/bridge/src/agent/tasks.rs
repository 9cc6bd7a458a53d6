//! Page calls as MCP tasks (SPEC §4 "Long calls as tasks", §11; the `io.modelcontextprotocol/
//! tasks` extension, SEP-2663). A call that may be a task (its tool's `taskSupport`, an agent that
//! declared the extension) and does not end within crate::limits::TASK_AFTER becomes one:
//! the agent gets its handle at once and the call runs on here, on a task of its own, whatever
//! happens to the agent's connection. The page's rounds wait in the task for `tasks/update`;
//! `tasks/cancel` cancels the page's call (its handler's `ctx.signal` aborts), asking for its
//! answer: a handler's partial value (`ctx.partial`) is kept by the cancelled task.
//!
//! The states and their rules are crate::agent::task_book (sans-IO); this module runs the calls, keeps
//! the book behind a lock and tells watchers (status notifications) of every change. A task id is
//! 128 random bits, prefixed in a cluster by the node that keeps the task (crate::cluster carries
//! `tasks/*` there from any node).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use client_tools_core::protocol::{CallToolResult, RpcError};
use rmcp::model::{ClientCapabilities, InputResponses};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use tokio::sync::{broadcast, oneshot};

use crate::agent::rounds::{check_responses, declared, RunningCall, TaskHost};
use crate::agent::task_book::{Answered, Refusal, TaskBook};
use crate::ids::now_unix_ms;
use crate::limits::TASK_CHANGES_BUFFER;
use crate::sessions::call_options::{CallEvent, InputRound};
use crate::sessions::page_session::{missing_capability_error, PageSession};

/// One change of a task: its id and what `tasks/get` answers now.
pub(crate) type Change = (String, Value);

/// The tasks of this node.
pub(crate) struct Tasks {
    book: Mutex<TaskBook>,
    /// The running tasks' pages and how to cancel their calls.
    runs: Mutex<HashMap<String, Run>>,
    changes: broadcast::Sender<Change>,
}

struct Run {
    page: Arc<PageSession>,
    cancel: Option<oneshot::Sender<()>>,
}

impl Default for Tasks {
    fn default() -> Self {
        Self {
            book: Mutex::default(),
            runs: Mutex::default(),
            changes: broadcast::channel(TASK_CHANGES_BUFFER).0,
        }
    }
}

/// A fresh task id: 128 random bits, after `holder.` in a cluster.
fn new_id(holder: &str) -> String {
    let random = crate::ids::random_hex(16);
    match holder.is_empty() {
        true => random,
        false => format!("{holder}.{random}"),
    }
}

/// The node a task id names as keeping it (`None` outside a cluster).
pub(crate) fn holder_of(id: &str) -> Option<&str> {
    id.split_once('.').map(|(node, _)| node)
}

impl Tasks {
    /// Every change of every task of this node, from now on.
    pub(crate) fn watch(&self) -> broadcast::Receiver<Change> {
        self.changes.subscribe()
    }

    /// Whether task `id` is kept here (whoever asks).
    pub(crate) fn knows(&self, id: &str) -> bool {
        self.lock().peek(id).is_some()
    }

    /// `tasks/get`: task `id` of `page_session`.
    pub(crate) fn get(&self, id: &str, page_session: &str) -> Result<Value, Refusal> {
        self.forget_expired();
        let mut book = self.lock();
        book.get(id, page_session, now_unix_ms())
            .map(|task| task.detailed(id))
    }

    /// `tasks/update`: answers for the round task `id` waits on (checked against its requests;
    /// extra keys ignored). Once every request is answered, the page's round gets them.
    pub(crate) fn update(
        &self,
        id: &str,
        page_session: &str,
        responses: &InputResponses,
    ) -> Result<(), Refusal> {
        self.forget_expired();
        let mut book = self.lock();
        book.get(id, page_session, now_unix_ms())?;
        let answers = check_responses(&book.pending(id), responses).map_err(|message| Refusal {
            code: client_tools_core::protocol::code::INVALID_PARAMS,
            message,
        })?;
        let answered = book.answer(id, page_session, answers, now_unix_ms())?;
        let detailed = book.peek(id).map(|task| task.detailed(id));
        drop(book);
        if let Answered::Round { round, responses } = answered {
            let page = self.runs().get(id).map(|run| run.page.clone());
            if let Some(page) = page {
                page.answer_round(
                    &round,
                    Ok(serde_json::json!({ "inputResponses": responses })),
                );
            }
        }
        if let Some(detailed) = detailed {
            let _ = self.changes.send((id.to_owned(), detailed));
        }
        Ok(())
    }

    /// `tasks/cancel`: a running task settles `cancelled` and its page call is cancelled; an
    /// ended one stays as it ended.
    pub(crate) fn cancel(&self, id: &str, page_session: &str) -> Result<(), Refusal> {
        self.forget_expired();
        let running = self.lock().cancel(id, page_session, now_unix_ms())?;
        if running {
            if let Some(cancel) = self.runs().get_mut(id).and_then(|run| run.cancel.take()) {
                let _ = cancel.send(());
            }
            self.changed(id);
        }
        Ok(())
    }

    /// Whether a task of `page_session` may be created now: why not, naming the limit.
    pub(crate) fn room(&self, page_session: &str) -> Result<(), String> {
        self.forget_expired();
        self.lock().room(page_session, now_unix_ms())
    }

    /// Forgets expired tasks; the calls of those still running are cancelled. Every path that
    /// reads or changes the book comes here first (crate::agent::task_book leaves running ones to it).
    fn forget_expired(&self) {
        let running = self.lock().expire(now_unix_ms());
        let mut runs = self.runs();
        for id in running {
            if let Some(cancel) = runs.remove(&id).and_then(|mut run| run.cancel.take()) {
                let _ = cancel.send(());
            }
        }
    }

    fn changed(&self, id: &str) {
        let detailed = self.lock().peek(id).map(|task| task.detailed(id));
        if let Some(detailed) = detailed {
            let _ = self.changes.send((id.to_owned(), detailed));
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, TaskBook> {
        self.book.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn runs(&self) -> std::sync::MutexGuard<'_, HashMap<String, Run>> {
        self.runs.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The task's handle on its own `Arc` (the call's task holds one).
pub(crate) struct TaskHostOf(pub Arc<Tasks>);

impl TaskHost for TaskHostOf {
    fn room(&self, page_session: &str) -> Result<(), String> {
        self.0.room(page_session)
    }

    #[allow(clippy::result_large_err)]
    fn start(
        &self,
        holder: &str,
        running: RunningCall,
        capabilities: ClientCapabilities,
        pending: Option<InputRound>,
    ) -> Result<Value, (RunningCall, Option<InputRound>, String)> {
        let tasks = &self.0;
        tasks.forget_expired();
        let id = new_id(holder);
        let session = running.page.id().to_owned();
        let created = match tasks.lock().create(&id, &session, now_unix_ms()) {
            Ok(created) => created,
            Err(why) => return Err((running, pending, why)),
        };
        let (cancel, cancelled) = oneshot::channel();
        let run = Run {
            page: running.page.clone(),
            cancel: Some(cancel),
        };
        tasks.runs().insert(id.clone(), run);
        tracing::info!(task = %id, session = %session, user = running.page.user().unwrap_or(""), traceparent = running.traceparent.as_deref().map(tracing::field::display), "call became a task");
        tokio::spawn(run_task(
            tasks.clone(),
            id,
            running,
            capabilities,
            pending,
            cancelled,
        ));
        Ok(created)
    }
}

/// Runs a task's call to its end: its rounds wait in the book for `tasks/update`, its progress
/// messages become the task's `statusMessage`, its log messages are dropped (no request of the
/// agent's is open to carry them).
async fn run_task(
    tasks: Arc<Tasks>,
    id: String,
    mut running: RunningCall,
    capabilities: ClientCapabilities,
    pending: Option<InputRound>,
    mut cancelled: oneshot::Receiver<()>,
) {
    if let Some(round) = pending {
        ask(&tasks, &id, &running.page, &capabilities, round);
    }
    let ended = loop {
        tokio::select! {
            biased;
            _ = &mut cancelled => break None,
            Some(update) = running.progress.recv() => {
                tasks.lock().progress(&id, update.message, now_unix_ms());
            }
            Some(event) = running.events.recv() => {
                if let CallEvent::Input(round) = event {
                    ask(&tasks, &id, &running.page, &capabilities, round);
                }
            }
            outcome = &mut running.outcome => break Some(outcome.ok().flatten()),
        }
    };
    let Some(outcome) = ended else {
        // `tasks/cancel` (the task is `cancelled` already): the page is asked for its answer
        // after all; one carrying the handler's partial value (SPEC §7), after the operator's
        // rules as any result, is kept by the cancelled task (TaskBook::cancel_answered).
        // Expired tasks come here too (no longer in the book: nothing is kept).
        let reason = "cancelled by the agent (tasks/cancel)";
        if let Some(Ok(result)) = running.cancel_for_answer(reason).await {
            tasks.lock().cancel_answered(&id, result, now_unix_ms());
        }
        tasks.runs().remove(&id);
        return tasks.changed(&id);
    };
    let outcome: Option<Result<CallToolResult, RpcError>> = outcome;
    tasks.lock().settle(&id, outcome, now_unix_ms());
    tasks.runs().remove(&id);
    tasks.changed(&id);
}

/// The page asks the agent `round` in task `id`: it waits in the book for `tasks/update`, unless
/// it needs a capability the agent did not declare (the page is told so at once).
fn ask(
    tasks: &Tasks,
    id: &str,
    page: &PageSession,
    capabilities: &ClientCapabilities,
    round: InputRound,
) {
    let lacking: Map<String, Value> = round
        .requests
        .iter()
        .filter(|(_, request)| !declared(capabilities, request))
        .map(|(key, request)| (key.clone(), request.clone()))
        .collect();
    if !lacking.is_empty() {
        page.answer_round(&round.id, Err(missing_capability_error(&lacking)));
        return;
    }
    tasks
        .lock()
        .ask(id, round.id, round.requests, now_unix_ms());
    tasks.changed(id);
}

#[cfg(test)]
#[path = "tasks_tests.rs"]
mod tests;

/// A caller's request about a task (what `tasks/get`, `tasks/update` and `tasks/cancel` ask).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "op")]
pub(crate) enum TaskOp {
    Get {
        task_id: String,
    },
    Update {
        task_id: String,
        input_responses: InputResponses,
    },
    Cancel {
        task_id: String,
    },
}

impl TaskOp {
    pub(crate) fn task_id(&self) -> &str {
        match self {
            TaskOp::Get { task_id }
            | TaskOp::Update { task_id, .. }
            | TaskOp::Cancel { task_id } => task_id,
        }
    }

    /// Applies it to this node's tasks: the detailed task for `get`, `{}` for the others.
    pub(crate) fn apply(&self, tasks: &Tasks, page_session: &str) -> Result<Value, Refusal> {
        match self {
            TaskOp::Get { task_id } => tasks.get(task_id, page_session),
            TaskOp::Update {
                task_id,
                input_responses,
            } => tasks
                .update(task_id, page_session, input_responses)
                .map(|()| json!({})),
            TaskOp::Cancel { task_id } => tasks.cancel(task_id, page_session).map(|()| json!({})),
        }
    }
}
