//! A page for the bridge's unit tests: one connection to a [`PageSession`] whose outgoing queue
//! the test reads and whose answers it hands to the session, as `routes/page.rs` does for a real
//! page's socket.

use std::sync::Arc;

use client_tools_core::protocol::{decode, CallToolResult, Message, ProgressParams, RequestId};
use futures_util::FutureExt;
use serde_json::{json, Value};
use tokio::sync::Notify;

use crate::limits::Limits;
use crate::page::connection_queue::{self, Outgoing, OutgoingReceiver};
use crate::sessions::page_session::PageSession;

pub(crate) fn session_with(limits: Limits) -> Arc<PageSession> {
    Arc::new(PageSession::new("s1".into(), Vec::new(), limits, false))
}

pub(crate) fn session() -> Arc<PageSession> {
    session_with(Limits::default())
}

/// The page end of one connection.
pub(crate) struct FakePage {
    session: Arc<PageSession>,
    pub(crate) queue: OutgoingReceiver,
    /// Notified when the bridge ends the connection.
    pub(crate) kill: Arc<Notify>,
    generation: u64,
}

impl FakePage {
    pub(crate) fn connect(session: &Arc<PageSession>) -> Self {
        Self::connect_bounded(session, 64, 1 << 20)
    }

    pub(crate) fn connect_bounded(session: &Arc<PageSession>, frames: usize, bytes: usize) -> Self {
        let (sender, queue) = connection_queue::channel(frames, bytes);
        let kill = Arc::new(Notify::new());
        let generation = session.attach(sender, kill.clone());
        Self {
            session: session.clone(),
            queue,
            kill,
            generation,
        }
    }

    /// The next frame the bridge sent.
    pub(crate) async fn frame(&mut self) -> String {
        match self.queue.recv().await {
            Some(Outgoing::Frame(frame)) => frame,
            other => panic!("expected a frame, got {other:?}"),
        }
    }

    /// The next request the bridge sent: its id and params, after checking its method.
    pub(crate) async fn request(&mut self, expected: &str) -> (RequestId, Value) {
        match decode(&self.frame().await).unwrap() {
            Message::Request { id, method, params } if method == expected => (id, params),
            other => panic!("expected a {expected} request, got {other:?}"),
        }
    }

    /// The next notification the bridge sent, after checking its method.
    pub(crate) async fn notification(&mut self, expected: &str) -> Value {
        match decode(&self.frame().await).unwrap() {
            Message::Notification { method, params } if method == expected => params,
            other => panic!("expected a {expected} notification, got {other:?}"),
        }
    }

    /// Whether the bridge has queued nothing more for this page.
    pub(crate) fn has_nothing_queued(&mut self) -> bool {
        self.queue.recv().now_or_never().is_none()
    }

    pub(crate) fn answer(&self, id: &RequestId, result: Value) {
        let result = serde_json::value::to_raw_value(&result).unwrap();
        self.session.resolve(id, Ok(result));
    }

    pub(crate) fn answer_call(&self, id: &RequestId, text: &str) {
        let result = serde_json::to_value(CallToolResult::success(json!(text))).unwrap();
        self.answer(id, result);
    }

    pub(crate) fn report_progress(&self, id: &RequestId, progress: f64) {
        self.session.progress(ProgressParams {
            progress_token: json!(id.to_string()),
            progress,
            total: None,
            message: None,
        });
    }

    pub(crate) fn disconnect(self) {
        self.session.detach(self.generation);
    }
}
