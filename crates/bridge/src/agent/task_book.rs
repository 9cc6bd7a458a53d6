//! The tasks of one bridge node as a state machine, sans-IO (SPEC §4 "Long calls as tasks", §11;
//! MCP tasks extension, SEP-2663): what `tasks/get` reads, what `tasks/update` and `tasks/cancel`
//! change, what a call's events do to its task, and when a task is forgotten. Time is a parameter
//! (unix milliseconds); crate::agent::tasks performs the rest (the page, the timers, the agents).
//!
//! A task belongs to a page session: only a caller bound to that session reads or changes it, and
//! a task of another session answers as an unknown one (`-32602`, as the extension wants for a
//! denial). It is kept [`TASK_RETENTION`] after its last change, at most
//! [`MAX_TASKS_PER_SESSION`] per page session and [`MAX_TASKS_PER_NODE`] per node; a full book
//! refuses new tasks, never forgets unread ones.
//! Only [`TaskBook::expire`] forgets a task that is still running, and it names it: its call is
//! to be cancelled (the other paths treat it as gone and leave it to `expire`).

use std::collections::HashMap;

use client_tools_core::protocol::{CallToolResult, RequestId, RpcError};
use serde_json::{json, Map, Value};

use crate::limits::{
    MAX_TASKS_PER_NODE, MAX_TASKS_PER_SESSION, TASK_POLL_INTERVAL_MS, TASK_RETENTION,
};

/// Where a task stands.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Status {
    Working,
    /// Waiting on the page's round `round`: its requests, and the answers given so far.
    InputRequired {
        round: RequestId,
        requests: Map<String, Value>,
        answered: Map<String, Value>,
    },
    /// The call's result (an error result too: the tool ran).
    Completed(Value),
    /// The JSON-RPC error the call ended with (`{code, message, data?}`).
    Failed(Value),
    Cancelled,
}

impl Status {
    fn name(&self) -> &'static str {
        match self {
            Status::Working => "working",
            Status::InputRequired { .. } => "input_required",
            Status::Completed(_) => "completed",
            Status::Failed(_) => "failed",
            Status::Cancelled => "cancelled",
        }
    }

    pub(crate) fn is_terminal(&self) -> bool {
        matches!(
            self,
            Status::Completed(_) | Status::Failed(_) | Status::Cancelled
        )
    }
}

/// One task.
#[derive(Debug, Clone)]
pub(crate) struct Task {
    pub page_session: String,
    pub status: Status,
    status_message: Option<String>,
    /// A cancelled task's call answered the cancel with its handler's partial value (SPEC §7):
    /// that error result, which `tasks/get` gives as the cancelled task's `result`.
    cancel_answer: Option<Value>,
    created_ms: u64,
    updated_ms: u64,
}

impl Task {
    fn expires_ms(&self) -> u64 {
        self.updated_ms + TASK_RETENTION.as_millis() as u64
    }

    /// The task as `tasks/get` answers it (the extension's `DetailedTask`, without `resultType`).
    pub(crate) fn detailed(&self, id: &str) -> Value {
        let mut task = self.summary(id);
        let fields = task.as_object_mut().expect("an object");
        match &self.status {
            Status::InputRequired {
                requests, answered, ..
            } => {
                let pending: Map<String, Value> = requests
                    .iter()
                    .filter(|(key, _)| !answered.contains_key(*key))
                    .map(|(key, request)| (key.clone(), request.clone()))
                    .collect();
                fields.insert("inputRequests".into(), Value::Object(pending));
            }
            Status::Completed(result) => {
                fields.insert("result".into(), result.clone());
            }
            Status::Failed(error) => {
                fields.insert("error".into(), error.clone());
            }
            Status::Cancelled => {
                if let Some(result) = &self.cancel_answer {
                    fields.insert("result".into(), result.clone());
                }
            }
            Status::Working => {}
        }
        task
    }

    /// The task's base fields (what `CreateTaskResult` carries, without `resultType`).
    pub(crate) fn summary(&self, id: &str) -> Value {
        let mut task = json!({
            "taskId": id,
            "status": self.status.name(),
            "createdAt": iso8601(self.created_ms),
            "lastUpdatedAt": iso8601(self.updated_ms),
            // From creation to when the bridge may forget it: it grows while the task changes.
            "ttlMs": self.expires_ms() - self.created_ms,
            "pollIntervalMs": TASK_POLL_INTERVAL_MS,
        });
        if let Some(message) = &self.status_message {
            task["statusMessage"] = message.clone().into();
        }
        task
    }
}

/// Why a task request was refused: a JSON-RPC error for the agent.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Refusal {
    pub code: i64,
    pub message: String,
}

impl Refusal {
    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Self {
            code: client_tools_core::protocol::code::INVALID_PARAMS,
            message: message.into(),
        }
    }

    fn unknown(id: &str) -> Self {
        Self::invalid(format!(
            "no task '{id}' for this page session (it never existed, expired, or belongs to \
             another page session)"
        ))
    }
}

/// What an answer to a task's round did.
#[derive(Debug, PartialEq)]
pub(crate) enum Answered {
    /// Some requests still wait for an answer.
    Partly,
    /// Every request is answered: the page's round `round` gets these `inputResponses`.
    Round {
        round: RequestId,
        responses: Map<String, Value>,
    },
}

/// The tasks of one node, by id.
#[derive(Default)]
pub(crate) struct TaskBook {
    tasks: HashMap<String, Task>,
}

impl TaskBook {
    /// Whether a task of `page_session` may be created now (expired tasks do not count).
    pub(crate) fn room(&mut self, page_session: &str, now_ms: u64) -> Result<(), String> {
        self.forget_ended(now_ms);
        let live = self
            .tasks
            .values()
            .filter(|t| t.expires_ms() > now_ms)
            .count();
        if live >= MAX_TASKS_PER_NODE {
            return Err(format!(
                "too many tasks on this bridge (limit {MAX_TASKS_PER_NODE}): wait until some expire"
            ));
        }
        let of_session = self
            .tasks
            .values()
            .filter(|t| t.page_session == page_session && t.expires_ms() > now_ms)
            .count();
        if of_session >= MAX_TASKS_PER_SESSION {
            return Err(format!(
                "too many tasks in this page session (limit {MAX_TASKS_PER_SESSION}): wait until \
                 some expire ({} s after their end)",
                TASK_RETENTION.as_secs()
            ));
        }
        Ok(())
    }

    /// Creates task `id` (working) of `page_session`, if there is [`Self::room`].
    pub(crate) fn create(
        &mut self,
        id: &str,
        page_session: &str,
        now_ms: u64,
    ) -> Result<Value, String> {
        self.room(page_session, now_ms)?;
        let task = Task {
            page_session: page_session.to_owned(),
            status: Status::Working,
            status_message: None,
            cancel_answer: None,
            created_ms: now_ms,
            updated_ms: now_ms,
        };
        let summary = task.summary(id);
        self.tasks.insert(id.to_owned(), task);
        Ok(summary)
    }

    /// Task `id` as the caller bound to `page_session` may see it.
    pub(crate) fn get(
        &mut self,
        id: &str,
        page_session: &str,
        now_ms: u64,
    ) -> Result<&Task, Refusal> {
        self.forget_ended(now_ms);
        match self.tasks.get(id) {
            Some(task) if task.page_session == page_session && task.expires_ms() > now_ms => {
                Ok(task)
            }
            _ => Err(Refusal::unknown(id)),
        }
    }

    /// The page asks the agent round `round` for the task's call: it waits for input.
    pub(crate) fn ask(
        &mut self,
        id: &str,
        round: RequestId,
        requests: Map<String, Value>,
        now_ms: u64,
    ) {
        self.change(id, now_ms, |task| {
            task.status = Status::InputRequired {
                round,
                requests,
                answered: Map::new(),
            }
        });
    }

    /// The page's progress message on the task's call.
    pub(crate) fn progress(&mut self, id: &str, message: Option<String>, now_ms: u64) {
        if message.is_some() {
            self.change(id, now_ms, |task| task.status_message = message);
        }
    }

    /// `tasks/update`: `answers` (already checked against their requests) for the task's round;
    /// keys it does not wait on are ignored. Answering a task that waits on nothing is a no-op.
    pub(crate) fn answer(
        &mut self,
        id: &str,
        page_session: &str,
        answers: Map<String, Value>,
        now_ms: u64,
    ) -> Result<Answered, Refusal> {
        self.get(id, page_session, now_ms)?;
        let task = self.tasks.get_mut(id).expect("checked above");
        let Status::InputRequired {
            requests, answered, ..
        } = &mut task.status
        else {
            return Ok(Answered::Partly);
        };
        for (key, answer) in answers {
            if requests.contains_key(&key) {
                answered.insert(key, answer);
            }
        }
        task.updated_ms = now_ms;
        if answered.len() < requests.len() {
            return Ok(Answered::Partly);
        }
        let Status::InputRequired {
            round, answered, ..
        } = std::mem::replace(&mut task.status, Status::Working)
        else {
            unreachable!("matched above")
        };
        Ok(Answered::Round {
            round,
            responses: answered,
        })
    }

    /// The requests of task `id`'s round still waiting for an answer (empty: none waits).
    pub(crate) fn pending(&self, id: &str) -> Map<String, Value> {
        match self.tasks.get(id).map(|t| &t.status) {
            Some(Status::InputRequired {
                requests, answered, ..
            }) => requests
                .iter()
                .filter(|(key, _)| !answered.contains_key(*key))
                .map(|(key, request)| (key.clone(), request.clone()))
                .collect(),
            _ => Map::new(),
        }
    }

    /// `tasks/cancel`: `true` when the task was running (its call is to be cancelled); a task that
    /// ended stays as it ended (the acknowledgement is the same).
    pub(crate) fn cancel(
        &mut self,
        id: &str,
        page_session: &str,
        now_ms: u64,
    ) -> Result<bool, Refusal> {
        let running = !self.get(id, page_session, now_ms)?.status.is_terminal();
        if running {
            self.change(id, now_ms, |task| task.status = Status::Cancelled);
        }
        Ok(running)
    }

    /// The task's call ended: its result, the JSON-RPC error it failed with, or (`None`) no
    /// result (cancelled). The first end counts.
    pub(crate) fn settle(
        &mut self,
        id: &str,
        outcome: Option<Result<CallToolResult, RpcError>>,
        now_ms: u64,
    ) {
        let status = match outcome {
            Some(Ok(result)) => {
                Status::Completed(serde_json::to_value(result).unwrap_or(Value::Null))
            }
            Some(Err(error)) => Status::Failed(serde_json::to_value(error).unwrap_or(Value::Null)),
            None => Status::Cancelled,
        };
        if self.tasks.get(id).is_some_and(|t| !t.status.is_terminal()) {
            self.change(id, now_ms, |task| task.status = status);
        }
    }

    /// The page answered the cancel of task `id`'s call with an error result carrying its
    /// handler's partial value (SPEC §7). The task stays `cancelled` — 2025-11-25 wants it so
    /// before `tasks/cancel` is acknowledged, SEP-2663 allows it, and a terminal status never
    /// changes — and says what was done where every client reads it: its `statusMessage` is the
    /// result's text (its first line why, then `{"partial": …}`); `tasks/get` gives the result
    /// itself as `result` too where the task is written as JSON (`/api`; on `/mcp` the
    /// extension's `CancelledTask` has no `result`, and typed clients drop it). Only a cancelled
    /// task without one takes it.
    pub(crate) fn cancel_answered(&mut self, id: &str, result: CallToolResult, now_ms: u64) {
        let cancelled = (self.tasks.get(id))
            .is_some_and(|task| task.status == Status::Cancelled && task.cancel_answer.is_none());
        if cancelled {
            let texts: Vec<&str> = result.content.iter().filter_map(|c| c.as_text()).collect();
            let message = texts.join("\n");
            let result = serde_json::to_value(&result).unwrap_or(Value::Null);
            self.change(id, now_ms, |task| {
                task.cancel_answer = Some(result);
                task.status_message = Some(message);
            });
        }
    }

    /// The task `id`, if kept (whoever asks).
    pub(crate) fn peek(&self, id: &str) -> Option<&Task> {
        self.tasks.get(id)
    }

    /// Forgets the tasks past their expiry; returns the ids of those still running (their calls
    /// are to be cancelled).
    pub(crate) fn expire(&mut self, now_ms: u64) -> Vec<String> {
        let expired: Vec<String> = self
            .tasks
            .iter()
            .filter(|(_, task)| task.expires_ms() <= now_ms)
            .map(|(id, _)| id.clone())
            .collect();
        expired
            .into_iter()
            .filter(|id| {
                let task = self.tasks.remove(id).expect("listed above");
                !task.status.is_terminal()
            })
            .collect()
    }

    /// Forgets the expired tasks that ended (nothing left to cancel); running ones stay for
    /// [`Self::expire`], which names them.
    fn forget_ended(&mut self, now_ms: u64) {
        self.tasks
            .retain(|_, task| task.expires_ms() > now_ms || !task.status.is_terminal());
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.tasks.len()
    }

    fn change(&mut self, id: &str, now_ms: u64, change: impl FnOnce(&mut Task)) {
        if let Some(task) = self.tasks.get_mut(id) {
            change(task);
            task.updated_ms = now_ms;
        }
    }
}

/// `YYYY-MM-DDThh:mm:ss.mmmZ` of a unix time in milliseconds (UTC; proleptic Gregorian).
pub(crate) fn iso8601(ms: u64) -> String {
    let (days, rest) = ((ms / 86_400_000) as i64, ms % 86_400_000);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let (h, m, s, milli) = (
        rest / 3_600_000,
        rest / 60_000 % 60,
        rest / 1_000 % 60,
        rest % 1_000,
    );
    format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}.{milli:03}Z")
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: u64 = 1_780_000_000_000;

    fn round(requests: Value) -> Map<String, Value> {
        requests.as_object().unwrap().clone()
    }

    #[test]
    fn timestamps_are_iso8601_utc() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(iso8601(1_785_196_800_123), "2026-07-28T00:00:00.123Z");
    }

    #[test]
    fn a_task_goes_working_input_required_partly_answered_working_completed() {
        let mut book = TaskBook::default();
        let created = book.create("t1", "page", T0).unwrap();
        assert_eq!(created["status"], "working");
        assert_eq!(created["createdAt"], iso8601(T0));
        assert_eq!(created["ttlMs"], TASK_RETENTION.as_millis() as u64);
        assert!(created.get("result").is_none() && created.get("inputRequests").is_none());

        let asked =
            round(json!({"a": {"method": "elicitation/create"}, "b": {"method": "roots/list"}}));
        book.ask("t1", RequestId::Number(7), asked, T0 + 10);
        let task = book.get("t1", "page", T0 + 20).unwrap().detailed("t1");
        assert_eq!(task["status"], "input_required");
        assert_eq!(task["inputRequests"].as_object().unwrap().len(), 2);

        let first = round(json!({"a": {"action": "accept"}, "zzz": {"ignored": true}}));
        assert_eq!(
            book.answer("t1", "page", first, T0 + 30),
            Ok(Answered::Partly)
        );
        let task = book.get("t1", "page", T0 + 40).unwrap().detailed("t1");
        assert_eq!(task["status"], "input_required");
        assert_eq!(
            task["inputRequests"]
                .as_object()
                .unwrap()
                .keys()
                .collect::<Vec<_>>(),
            ["b"]
        );
        assert_eq!(book.pending("t1").keys().collect::<Vec<_>>(), ["b"]);

        let second = round(json!({"b": {"roots": []}}));
        let Ok(Answered::Round { round, responses }) = book.answer("t1", "page", second, T0 + 50)
        else {
            panic!("the round is answered")
        };
        assert_eq!(round, RequestId::Number(7));
        assert_eq!(responses.len(), 2);
        assert_eq!(
            book.get("t1", "page", T0 + 60).unwrap().status,
            Status::Working
        );

        book.settle("t1", Some(Ok(CallToolResult::error("boom"))), T0 + 70);
        let task = book.get("t1", "page", T0 + 80).unwrap().detailed("t1");
        assert_eq!(
            task["status"], "completed",
            "a tool error is a completed task"
        );
        assert_eq!(task["result"]["isError"], true);
        assert_eq!(task["lastUpdatedAt"], iso8601(T0 + 70));
        // A later end does not change it.
        book.settle("t1", None, T0 + 90);
        assert_eq!(
            book.get("t1", "page", T0 + 90).unwrap().status.name(),
            "completed"
        );
    }

    #[test]
    fn a_protocol_error_fails_the_task_and_cancel_is_idempotent() {
        let mut book = TaskBook::default();
        book.create("f", "page", T0).unwrap();
        book.settle("f", Some(Err(RpcError::new(-32021, "missing"))), T0 + 1);
        let task = book.get("f", "page", T0 + 2).unwrap().detailed("f");
        assert_eq!(task["status"], "failed");
        assert_eq!(task["error"]["code"], -32021);
        assert!(task.get("result").is_none());
        assert_eq!(
            book.cancel("f", "page", T0 + 3),
            Ok(false),
            "ended: stays failed"
        );

        book.create("c", "page", T0).unwrap();
        assert_eq!(book.cancel("c", "page", T0 + 1), Ok(true));
        assert_eq!(book.cancel("c", "page", T0 + 2), Ok(false));
        book.settle(
            "c",
            Some(Ok(CallToolResult::success(json!("late")))),
            T0 + 3,
        );
        assert_eq!(
            book.get("c", "page", T0 + 4).unwrap().status,
            Status::Cancelled
        );
    }

    /// Issue 36 point 4: a cancelled task stays `cancelled`; the page's answer to the cancel,
    /// carrying the handler's partial value, is its `result`; a task that ended otherwise, or one
    /// that has it already, does not take one.
    #[test]
    fn a_cancelled_task_carries_the_answer_to_its_cancel() {
        let mut book = TaskBook::default();
        book.create("c", "page", T0).unwrap();
        assert_eq!(book.cancel("c", "page", T0 + 1), Ok(true));
        let mut answer = CallToolResult::error("cancelled by the runtime: tasks/cancel");
        client_tools_core::partial::attach(&mut answer, &json!({"rows": 2}), true);
        book.cancel_answered("c", answer.clone(), T0 + 2);
        let task = book.get("c", "page", T0 + 3).unwrap().detailed("c");
        assert_eq!(task["status"], "cancelled");
        assert_eq!(task["result"]["isError"], true);
        assert_eq!(
            task["result"]["structuredContent"],
            json!({"partial": {"rows": 2}})
        );
        assert_eq!(task["lastUpdatedAt"], iso8601(T0 + 2));
        assert_eq!(
            task["statusMessage"],
            "cancelled by the runtime: tasks/cancel\n{\"partial\":{\"rows\":2}}"
        );
        book.cancel_answered("c", CallToolResult::error("again"), T0 + 4);
        let task = book.get("c", "page", T0 + 5).unwrap().detailed("c");
        assert_eq!(
            task["result"]["content"][0]["text"],
            "cancelled by the runtime: tasks/cancel"
        );

        book.create("done", "page", T0).unwrap();
        book.settle("done", Some(Ok(CallToolResult::success(json!(1)))), T0 + 1);
        book.cancel_answered("done", answer, T0 + 2);
        let task = book.get("done", "page", T0 + 3).unwrap().detailed("done");
        assert_eq!(task["status"], "completed");
        assert_eq!(task["result"]["content"][0]["text"], "1");
    }

    #[test]
    fn another_page_sessions_task_is_unknown_like_a_made_up_one() {
        let mut book = TaskBook::default();
        book.create("t", "page", T0).unwrap();
        let theirs = book.get("t", "other", T0).unwrap_err();
        let made_up = book.get("nope", "page", T0).unwrap_err();
        assert_eq!(theirs.code, -32602);
        assert_eq!(made_up.code, -32602);
        assert!(book.cancel("t", "other", T0).is_err());
        assert!(book.answer("t", "other", Map::new(), T0).is_err());
        assert_eq!(book.get("t", "page", T0).unwrap().status, Status::Working);
    }

    #[test]
    fn tasks_are_kept_for_their_ttl_then_forgotten_running_ones_named() {
        let mut book = TaskBook::default();
        let ttl = TASK_RETENTION.as_millis() as u64;
        book.create("done", "page", T0).unwrap();
        book.settle(
            "done",
            Some(Ok(CallToolResult::success(json!(1)))),
            T0 + 1_000,
        );
        book.create("stuck", "page", T0).unwrap();
        let detailed = book
            .get("done", "page", T0 + 1_000)
            .unwrap()
            .detailed("done");
        assert_eq!(detailed["ttlMs"], ttl + 1_000, "measured from creation");
        assert_eq!(book.expire(T0 + ttl), vec!["stuck".to_owned()]);
        assert!(
            book.get("done", "page", T0 + ttl).is_ok(),
            "not before its ttl"
        );
        assert!(book.get("done", "page", T0 + ttl + 1_000).is_err());
        assert_eq!(book.len(), 0);
    }

    #[test]
    fn a_running_task_expired_through_any_path_is_still_named_for_cancelling() {
        let ttl = TASK_RETENTION.as_millis() as u64;
        let later = T0 + ttl;
        type Path = fn(&mut TaskBook, u64);
        let paths: [(&str, Path); 4] = [
            ("get", |book, now| {
                assert!(book.get("run", "page", now).is_err());
            }),
            ("answer", |book, now| {
                assert!(book.answer("run", "page", Map::new(), now).is_err());
            }),
            ("cancel", |book, now| {
                assert!(book.cancel("run", "page", now).is_err());
            }),
            ("room", |book, now| {
                book.room("page", now).unwrap();
            }),
        ];
        for (path, through) in paths {
            let mut book = TaskBook::default();
            book.create("run", "page", T0).unwrap();
            through(&mut book, later);
            assert_eq!(
                book.expire(later),
                vec!["run".to_owned()],
                "expired through {path}: its call is still to be cancelled"
            );
            assert_eq!(book.len(), 0);
        }
    }

    #[test]
    fn tasks_are_bounded_per_session_and_per_node_with_clear_errors() {
        let mut book = TaskBook::default();
        for i in 0..MAX_TASKS_PER_SESSION {
            book.create(&format!("s{i}"), "busy", T0).unwrap();
        }
        let full = book.create("one-more", "busy", T0).unwrap_err();
        assert!(
            full.contains("too many tasks in this page session"),
            "{full}"
        );
        book.create("other", "quiet", T0).unwrap();
        let mut i = 0;
        while book.len() < MAX_TASKS_PER_NODE {
            book.create(&format!("n{i}"), &format!("p{i}"), T0).unwrap();
            i += 1;
        }
        let full = book.create("last", "fresh", T0).unwrap_err();
        assert!(full.contains("too many tasks on this bridge"), "{full}");
        // Expired ones make room again.
        let later = T0 + TASK_RETENTION.as_millis() as u64;
        book.create("last", "fresh", later).unwrap();
    }
}
