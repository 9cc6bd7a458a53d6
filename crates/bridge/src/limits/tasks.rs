//! Calls as MCP tasks (the tasks extension).

use std::time::Duration;

/// How long a call that may run as a task runs as a plain one first: one that ends sooner answers
/// at once (the extension's immediate result), one that takes longer becomes a task.
pub const TASK_AFTER: Duration = Duration::from_millis(200);

/// How long a task is kept after its last change (its result, once it ended).
pub const TASK_RETENTION: Duration = Duration::from_secs(600);

/// The polling interval the bridge suggests (`pollIntervalMs`).
pub const TASK_POLL_INTERVAL_MS: u64 = 500;

/// Tasks kept at once for one page session.
pub const MAX_TASKS_PER_SESSION: usize = 64;

/// Tasks kept at once on one bridge node.
pub const MAX_TASKS_PER_NODE: usize = 1_024;

/// Task status changes kept for slow watchers (one buffer per node, all its tasks).
pub const TASK_CHANGES_BUFFER: usize = 64;
