//! What happens to the bridge's requests to one page, and nothing else: which requests wait, until
//! when, what a disconnect, a reconnect, progress, an answer or silence does to them (SPEC §9).
//!
//! Sans-IO (STYLE 13): the engine takes events and the current time and never waits. It puts frames
//! on the connection's bounded queue ([`OutgoingSender`], memory, not a socket) and settles each
//! request through its own channel; [`crate::page_session::PageSession`] owns it under its mutex
//! and does the waiting (one timer per caller, woken at [`RequestEngine::wake_at`]).

use std::collections::hash_map::{Entry, HashMap};
use std::time::{Duration, Instant};

use client_tools_core::limits::HUMAN_WAIT_MAX_MS;
use client_tools_core::protocol::{
    check_outgoing, encode_notification, method, CancelledParams, ProgressParams, RequestId,
    RpcError,
};
use serde_json::value::RawValue;
use tokio::sync::{mpsc, oneshot};

use crate::connection_queue::OutgoingSender;

/// How long a call whose page disconnected waits for the page to come back (a reload, a network
/// blip) before it fails. When the page reconnects, the call is sent again with the same id.
pub const RECONNECT_GRACE: Duration = Duration::from_secs(5);

/// The page's answer: its result (JSON text, parsed by the caller into the type it expects) or its
/// JSON-RPC error.
pub(crate) type Answer = Result<Box<RawValue>, RpcError>;
/// How a request ended.
pub(crate) type Settled = Result<Answer, RequestFailure>;

/// Why a request got no answer from the page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestFailure {
    NotConnected,
    Disconnected,
    TimedOut,
    /// An earlier call timed out and the page has not answered anything since.
    Unresponsive,
    /// The caller cancelled.
    Cancelled,
    /// Not sent: a bound of the bridge or of the page would be exceeded (the message names it).
    Refused(String),
}

impl RequestFailure {
    /// The text of the error result an agent gets (`timeout` is the call's, as the agent asked).
    pub fn describe(&self, session: &str, timeout: Duration) -> String {
        match self {
            RequestFailure::NotConnected => {
                format!(
                    "the page (session '{session}') is not connected: open the page and try again"
                )
            }
            RequestFailure::Disconnected => {
                format!("the page (session '{session}') disconnected before answering")
            }
            RequestFailure::TimedOut => format!(
                "the page (session '{session}') did not answer within {} ms",
                timeout.as_millis()
            ),
            RequestFailure::Cancelled => "cancelled by the runtime".to_owned(),
            RequestFailure::Unresponsive => format!(
                "the page (session '{session}') did not answer an earlier call in time; \
                 calls fail at once until it answers again"
            ),
            RequestFailure::Refused(limit) => limit.clone(),
        }
    }

    /// The `outcome` recorded in a call's trace.
    pub(crate) fn outcome(&self) -> &'static str {
        match self {
            RequestFailure::NotConnected => "not_connected",
            RequestFailure::Disconnected => "disconnected",
            RequestFailure::TimedOut => "timed_out",
            RequestFailure::Unresponsive => "unresponsive",
            RequestFailure::Cancelled => "cancelled",
            RequestFailure::Refused(_) => "refused_limit",
        }
    }
}

/// What a request is for decides how absence and silence treat it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Purpose {
    /// An agent's `tools/call`: refused at once while the page is unresponsive.
    ToolCall,
    /// The bridge's own requests (`initialize`, `tools/list`): they are sent even to a page that
    /// missed a deadline, so its tool list stays current; missing theirs counts like a call's.
    Housekeeping,
    /// "Is this connection alive?": never waits for a reconnect, and its silence proves nothing
    /// about calls (no fail-fast, no cancellation sent).
    Probe,
}

/// A request to send: `frame` is the whole JSON-RPC request whose id is `id`.
pub(crate) struct Request {
    pub id: String,
    pub frame: String,
    pub timeout: Duration,
    pub purpose: Purpose,
    /// Where the page's progress on this request goes; dropped when it is full.
    pub observer: Option<mpsc::Sender<ProgressParams>>,
}

/// A request waiting for the page's answer.
struct Pending {
    /// The exact frame, sent again after a reconnect (same id: the page runs it at most once).
    frame: String,
    purpose: Purpose,
    settle: oneshot::Sender<Settled>,
    /// When the engine stops waiting; progress from the page pushes it back.
    deadline: Instant,
    /// Progress never extends the wait beyond this.
    hard_deadline: Instant,
    timeout: Duration,
    /// Set while the page is away; the request fails [`RECONNECT_GRACE`] after it.
    disconnected_at: Option<Instant>,
    observer: Option<mpsc::Sender<ProgressParams>>,
}

/// The page's connection, as far as requests care.
enum Link {
    /// No page has connected yet, since the session was created.
    Never {
        since: Instant,
    },
    Up(OutgoingSender),
    /// The connection dropped; new requests wait [`RECONNECT_GRACE`] for the page to be back.
    Down {
        since: Instant,
    },
}

pub(crate) struct RequestEngine {
    pending: HashMap<String, Pending>,
    link: Link,
    /// A request timed out on a connected page: tool calls fail at once until the page answers
    /// anything again (or reconnects).
    unresponsive: bool,
    max_pending: usize,
}

impl RequestEngine {
    pub(crate) fn new(max_pending: usize, now: Instant) -> Self {
        Self {
            pending: HashMap::new(),
            link: Link::Never { since: now },
            unresponsive: false,
            max_pending,
        }
    }

    /// Sends a request, or fails it at once; the receiver gets its outcome. A frame the page would
    /// refuse, a full queue or too many waiting requests fail this request alone. On
    /// [`RequestFailure::Unresponsive`] the caller should ping the page: its answer ends fail-fast.
    pub(crate) fn begin(
        &mut self,
        request: Request,
        now: Instant,
    ) -> Result<oneshot::Receiver<Settled>, RequestFailure> {
        if let Err(limit) = check_outgoing(&request.frame) {
            return Err(RequestFailure::Refused(format!(
                "the call cannot be sent to the page: {limit}"
            )));
        }
        // A probe must get through to a page busy with many calls; probes are few (one per
        // takeover attempt).
        if request.purpose != Purpose::Probe && self.pending.len() >= self.max_pending {
            return Err(RequestFailure::Refused(format!(
                "too many calls waiting for this page (limit {})",
                self.max_pending
            )));
        }
        if request.purpose == Purpose::ToolCall && self.unresponsive {
            return Err(RequestFailure::Unresponsive);
        }
        let disconnected_at = match &self.link {
            Link::Up(outgoing) => {
                outgoing
                    .try_send(request.frame.clone())
                    .map_err(|full| RequestFailure::Refused(full.to_string()))?;
                None
            }
            // Dropped a moment ago: wait for the reconnect, the frame goes out on `connected`.
            Link::Down { since }
                if request.purpose != Purpose::Probe && now < *since + RECONNECT_GRACE =>
            {
                Some(*since)
            }
            Link::Down { .. } | Link::Never { .. } => return Err(RequestFailure::NotConnected),
        };
        let (settle, settled) = oneshot::channel();
        self.pending.insert(
            request.id,
            Pending {
                frame: request.frame,
                purpose: request.purpose,
                settle,
                deadline: now + request.timeout,
                hard_deadline: now + request.timeout + Duration::from_millis(HUMAN_WAIT_MAX_MS),
                timeout: request.timeout,
                disconnected_at,
                observer: request.observer,
            },
        );
        Ok(settled)
    }

    /// When request `id` may expire next (its deadline, or the end of its reconnect grace); `None`
    /// once it is settled.
    pub(crate) fn wake_at(&self, id: &str) -> Option<Instant> {
        let pending = self.pending.get(id)?;
        Some(match pending.disconnected_at {
            Some(at) => pending.deadline.min(at + RECONNECT_GRACE),
            None => pending.deadline,
        })
    }

    /// Fails request `id` if its grace or its deadline has passed. A timeout on a connected page
    /// makes it unresponsive and tells it to stop (`notifications/cancelled`).
    pub(crate) fn expire(&mut self, id: &str, now: Instant) {
        let Entry::Occupied(entry) = self.pending.entry(id.to_owned()) else {
            return;
        };
        let pending = entry.get();
        let failure = if pending
            .disconnected_at
            .is_some_and(|at| now >= at + RECONNECT_GRACE)
        {
            RequestFailure::Disconnected
        } else if now >= pending.deadline {
            RequestFailure::TimedOut
        } else {
            return;
        };
        let pending = entry.remove();
        if failure == RequestFailure::TimedOut && pending.purpose != Purpose::Probe {
            if self.is_connected() {
                self.unresponsive = true;
            }
            self.send_cancelled(id, "the runtime stopped waiting (timeout)");
        }
        let _ = pending.settle.send(Err(failure));
    }

    /// An answer from the page, to any request: the page is responsive again. An answer to no
    /// request of this engine is handed back (it may be another cluster node's: crate::cluster).
    pub(crate) fn answer(&mut self, id: &RequestId, answer: Answer) -> Option<Answer> {
        self.unresponsive = false;
        // The bridge's ids are strings: looked up as they are, without a copy.
        let pending = match id {
            RequestId::String(id) => self.pending.remove(id.as_str()),
            RequestId::Number(n) => self.pending.remove(&n.to_string()),
        };
        match pending {
            Some(pending) => {
                let _ = pending.settle.send(Ok(answer));
                None
            }
            None => Some(answer),
        }
    }

    /// The page reported progress on a request (its `progressToken` is the request id): the
    /// engine waits longer, up to the hard bound, and passes the report on.
    /// Progress on no request of this engine is handed back (crate::cluster).
    pub(crate) fn progress(
        &mut self,
        progress: ProgressParams,
        now: Instant,
    ) -> Option<ProgressParams> {
        let Some(pending) = progress
            .progress_token
            .as_str()
            .and_then(|token| self.pending.get_mut(token))
        else {
            return Some(progress);
        };
        pending.deadline = (now + pending.timeout).min(pending.hard_deadline);
        if let Some(observer) = &pending.observer {
            // Progress is a hint (the next report supersedes it): a full observer misses one.
            let _ = observer.try_send(progress);
        }
        None
    }

    /// Request `id` ends with `failure` now (it never reached the page: nothing to cancel there).
    pub(crate) fn fail(&mut self, id: &str, failure: RequestFailure) -> bool {
        match self.pending.remove(id) {
            Some(pending) => {
                let _ = pending.settle.send(Err(failure));
                true
            }
            None => false,
        }
    }

    /// The caller gave up on request `id`: the page is told to stop. `false` when the request had
    /// already settled (its outcome stands).
    pub(crate) fn cancel(&mut self, id: &str, reason: &str) -> bool {
        let Some(pending) = self.pending.remove(id) else {
            return false;
        };
        if pending.purpose != Purpose::Probe {
            self.send_cancelled(id, reason);
        }
        true
    }

    /// A page connection is up: waiting requests go out on it again with their ids (the page runs
    /// each at most once), probes of a connection it replaced fail, and fail-fast ends.
    pub(crate) fn connected(&mut self, outgoing: OutgoingSender) {
        self.fail_probes();
        self.unresponsive = false;
        let mut unsent = Vec::new();
        for (id, pending) in &mut self.pending {
            pending.disconnected_at = None;
            if let Err(full) = outgoing.try_send(pending.frame.clone()) {
                unsent.push((id.clone(), full));
            }
        }
        for (id, full) in unsent {
            if let Some(pending) = self.pending.remove(&id) {
                let _ = pending
                    .settle
                    .send(Err(RequestFailure::Refused(full.to_string())));
            }
        }
        self.link = Link::Up(outgoing);
    }

    /// The connection dropped: waiting requests get [`RECONNECT_GRACE`] to see it back; probes fail.
    pub(crate) fn disconnected(&mut self, now: Instant) {
        self.link = Link::Down { since: now };
        self.fail_probes();
        for pending in self.pending.values_mut() {
            pending.disconnected_at.get_or_insert(now);
        }
    }

    fn fail_probes(&mut self) {
        let probes: Vec<String> = self
            .pending
            .iter()
            .filter(|(_, pending)| pending.purpose == Purpose::Probe)
            .map(|(id, _)| id.clone())
            .collect();
        for id in probes {
            if let Some(probe) = self.pending.remove(&id) {
                let _ = probe.settle.send(Err(RequestFailure::Disconnected));
            }
        }
    }

    /// Sends a frame now, or says why not (the page is away, or not reading).
    pub(crate) fn send(&self, frame: String) -> Result<(), String> {
        match &self.link {
            Link::Up(outgoing) => outgoing.try_send(frame).map_err(|full| full.to_string()),
            Link::Never { .. } | Link::Down { .. } => Err("the page is not connected".to_owned()),
        }
    }

    /// Sends a frame that may be lost (a notification): dropped when the page is not connected or
    /// not reading.
    pub(crate) fn notify(&self, frame: String) {
        if let Link::Up(outgoing) = &self.link {
            if let Err(full) = outgoing.try_send(frame) {
                tracing::warn!(%full, "notification to the page dropped");
            }
        }
    }

    fn send_cancelled(&self, id: &str, reason: &str) {
        let params = CancelledParams {
            request_id: RequestId::String(id.to_owned()),
            reason: Some(reason.to_owned()),
        };
        self.notify(encode_notification(method::CANCELLED, &params));
    }

    /// Asks the connection's writer to close it with this WebSocket close code and reason.
    pub(crate) fn close_link(&self, code: u16, reason: &str) {
        if let Link::Up(outgoing) = &self.link {
            outgoing.close(code, reason.to_owned());
        }
    }

    pub(crate) fn is_connected(&self) -> bool {
        matches!(self.link, Link::Up(_))
    }

    pub(crate) fn has_connected(&self) -> bool {
        !matches!(self.link, Link::Never { .. })
    }

    /// How long no page has been connected (since creation when none ever was); `None` while one is.
    pub(crate) fn disconnected_for(&self, now: Instant) -> Option<Duration> {
        match self.link {
            Link::Up(_) => None,
            Link::Never { since } | Link::Down { since } => {
                Some(now.saturating_duration_since(since))
            }
        }
    }

    /// Requests waiting for an answer.
    pub(crate) fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Sends every waiting request again, as after a reconnect (fault injection: the page must
    /// answer each once).
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn resend_pending(&self) {
        if let Link::Up(outgoing) = &self.link {
            for pending in self.pending.values() {
                let _ = outgoing.try_send(pending.frame.clone());
            }
        }
    }
}

/// The engine driven through [`crate::page_session::PageSession`], as the bridge uses it, against a
/// fake page: a connection whose outgoing queue the test reads and whose answers it hands to
/// `resolve`. Time is paused: deadlines and grace periods pass at once, exactly.
#[cfg(test)]
pub(crate) mod tests {
    use std::sync::Arc;

    use client_tools_core::limits::{MAX_FRAME_BYTES, MAX_FRAME_DEPTH};
    use client_tools_core::protocol::{decode, CallToolResult, Message};
    use futures_util::FutureExt;
    use serde_json::{json, Value};
    use tokio::sync::Notify;
    use tokio::task::JoinHandle;
    use tokio::time::{sleep, Instant};

    use super::*;
    use crate::connection_queue::{self, Outgoing, OutgoingReceiver};
    use crate::limits::Limits;
    use crate::page_session::PageSession;

    /// A call's timeout in these tests; the bridge waits 2.5 s more for the page's own outcome.
    const TIMEOUT: Duration = Duration::from_secs(1);
    const WAIT: Duration = Duration::from_millis(3_500);

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

        pub(crate) fn connect_bounded(
            session: &Arc<PageSession>,
            frames: usize,
            bytes: usize,
        ) -> Self {
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

        fn report_progress(&self, id: &RequestId, progress: f64) {
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

    /// A tool call running in the background, with how long it took.
    fn spawn_call(
        session: &Arc<PageSession>,
        timeout: Duration,
    ) -> JoinHandle<(CallToolResult, Duration)> {
        let session = session.clone();
        tokio::spawn(async move {
            let started = Instant::now();
            let result = session.call_tool("echo", json!({"x": 1}), timeout).await;
            (result, started.elapsed())
        })
    }

    async fn call_now(session: &Arc<PageSession>) -> CallToolResult {
        session
            .call_tool("echo", json!({}), TIMEOUT)
            .now_or_never()
            .expect("the call ends at once")
    }

    /// One call that goes to the page and back.
    async fn assert_calls_work(session: &Arc<PageSession>, page: &mut FakePage) {
        let call = spawn_call(session, TIMEOUT);
        let (id, _) = page.request(method::TOOLS_CALL).await;
        page.answer_call(&id, "fine");
        let (result, _) = call.await.unwrap();
        assert!(!result.is_error, "{}", result.text());
    }

    #[tokio::test(start_paused = true)]
    async fn an_answer_before_the_deadline_is_the_result() {
        let session = session();
        let mut page = FakePage::connect(&session);
        let call = spawn_call(&session, TIMEOUT);
        let (id, params) = page.request(method::TOOLS_CALL).await;
        assert_eq!(params["name"], "echo");
        assert_eq!(params["arguments"], json!({"x": 1}));
        assert_eq!(params["_meta"]["clienttools/timeoutMs"], 1_000);
        assert_eq!(params["_meta"]["progressToken"], json!(id.to_string()));
        assert_eq!(session.pending_calls(), 1);

        sleep(Duration::from_millis(900)).await;
        page.answer_call(&id, "hello");
        let (result, took) = call.await.unwrap();
        assert_eq!(result.text(), "hello");
        assert_eq!(took, Duration::from_millis(900));
        assert_eq!(session.pending_calls(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn silence_times_out_and_later_calls_fail_fast_until_the_page_answers_a_ping() {
        let session = session();
        let mut page = FakePage::connect(&session);
        let call = spawn_call(&session, TIMEOUT);
        let (id, _) = page.request(method::TOOLS_CALL).await;
        let (result, took) = call.await.unwrap();
        assert_eq!(
            result.text(),
            "the page (session 's1') did not answer within 1000 ms"
        );
        assert_eq!(took, WAIT);
        // The page is told to stop.
        let cancelled = page.notification(method::CANCELLED).await;
        assert_eq!(cancelled["requestId"], json!(id.to_string()));
        assert_eq!(cancelled["reason"], "the runtime stopped waiting (timeout)");

        // Fail fast: no second wait, and the page is pinged instead of called.
        let fast = call_now(&session).await;
        assert!(
            fast.text().contains("calls fail at once"),
            "{}",
            fast.text()
        );
        let (ping, _) = page.request(method::PING).await;
        assert!(page.has_nothing_queued());
        assert_eq!(session.pending_calls(), 0);

        // The page answers the ping: calls reach it again.
        page.answer(&ping, json!({}));
        assert_calls_work(&session, &mut page).await;
    }

    #[tokio::test(start_paused = true)]
    async fn a_late_answer_ends_fail_fast() {
        let session = session();
        let mut page = FakePage::connect(&session);
        let call = spawn_call(&session, TIMEOUT);
        let (late, _) = page.request(method::TOOLS_CALL).await;
        assert!(call.await.unwrap().0.is_error);
        page.notification(method::CANCELLED).await;
        assert!(call_now(&session)
            .await
            .text()
            .contains("calls fail at once"));
        page.request(method::PING).await;

        page.answer_call(&late, "too late");
        assert_calls_work(&session, &mut page).await;
    }

    #[tokio::test(start_paused = true)]
    async fn a_reconnect_ends_fail_fast() {
        let session = session();
        let mut page = FakePage::connect(&session);
        let call = spawn_call(&session, TIMEOUT);
        page.request(method::TOOLS_CALL).await;
        assert!(call.await.unwrap().0.is_error);
        page.disconnect();

        let mut page = FakePage::connect(&session);
        assert_calls_work(&session, &mut page).await;
    }

    #[tokio::test(start_paused = true)]
    async fn progress_extends_the_deadline_but_never_beyond_the_hard_bound() {
        let session = session();
        let mut page = FakePage::connect(&session);
        let call = spawn_call(&session, TIMEOUT);
        let (id, _) = page.request(method::TOOLS_CALL).await;
        // A report every 3 s keeps a call with a 3.5 s wait alive...
        let mut reports = 0;
        while !call.is_finished() {
            sleep(Duration::from_secs(3)).await;
            page.report_progress(&id, reports as f64);
            reports += 1;
        }
        // ...until the hard bound: the wait plus the longest a human may take (300 s).
        let (result, took) = call.await.unwrap();
        assert!(result.text().contains("did not answer within 1000 ms"));
        assert_eq!(took, WAIT + Duration::from_millis(HUMAN_WAIT_MAX_MS));
        assert_eq!(session.progress_notifications(), reports);
    }

    #[tokio::test(start_paused = true)]
    async fn progress_reaches_the_observer_and_a_full_observer_misses_reports() {
        let session = session();
        let mut page = FakePage::connect(&session);
        let (observer, mut reports) = mpsc::channel(2);
        let call = {
            let session = session.clone();
            tokio::spawn(async move {
                let never = std::future::pending::<String>();
                session
                    .call_tool_observed("echo", json!({}), TIMEOUT, never, Some(observer))
                    .await
            })
        };
        let (id, _) = page.request(method::TOOLS_CALL).await;
        for step in 0..5 {
            page.report_progress(&id, step as f64);
        }
        page.answer_call(&id, "done");
        assert_eq!(call.await.unwrap().unwrap().text(), "done");
        let mut received = Vec::new();
        while let Ok(report) = reports.try_recv() {
            received.push(report.progress);
        }
        assert_eq!(received, [0.0, 1.0]);
        assert_eq!(session.progress_notifications(), 5);
    }

    #[tokio::test(start_paused = true)]
    async fn a_reconnect_within_the_grace_resends_the_same_frame() {
        let session = session();
        let mut page = FakePage::connect(&session);
        let call = spawn_call(&session, Duration::from_secs(30));
        let sent = page.frame().await;
        page.disconnect();
        sleep(Duration::from_secs(2)).await;
        // A call made while the page is away waits for it too.
        let meanwhile = spawn_call(&session, Duration::from_secs(30));
        sleep(Duration::from_secs(2)).await;
        assert!(!call.is_finished() && !meanwhile.is_finished());

        let mut page = FakePage::connect(&session);
        let mut resent = vec![page.frame().await, page.frame().await];
        resent.sort_by_key(|frame| frame != &sent);
        assert_eq!(resent[0], sent, "the same frame, the same id");
        for frame in &resent {
            let Message::Request { id, .. } = decode(frame).unwrap() else {
                panic!("{frame}")
            };
            page.answer_call(&id, "after the reconnect");
        }
        assert_eq!(call.await.unwrap().0.text(), "after the reconnect");
        assert_eq!(meanwhile.await.unwrap().0.text(), "after the reconnect");
    }

    #[tokio::test(start_paused = true)]
    async fn a_page_away_beyond_the_grace_fails_the_call_as_disconnected() {
        let session = session();
        let mut page = FakePage::connect(&session);
        let call = spawn_call(&session, Duration::from_secs(30));
        page.request(method::TOOLS_CALL).await;
        page.disconnect();
        let (result, took) = call.await.unwrap();
        assert_eq!(
            result.text(),
            "the page (session 's1') disconnected before answering"
        );
        assert_eq!(took, RECONNECT_GRACE);
        // After the grace, a call fails at once; not fail-fast: the page did not miss a deadline.
        assert!(call_now(&session).await.text().contains("is not connected"));
        let mut page = FakePage::connect(&session);
        assert_calls_work(&session, &mut page).await;
    }

    #[tokio::test(start_paused = true)]
    async fn a_session_no_page_ever_connected_to_fails_calls_at_once() {
        let session = session();
        assert!(call_now(&session).await.text().contains("is not connected"));
    }

    #[tokio::test(start_paused = true)]
    async fn cancelling_tells_the_page_and_gives_no_result() {
        let session = session();
        let mut page = FakePage::connect(&session);
        let call = {
            let session = session.clone();
            tokio::spawn(async move {
                let cancel = async {
                    sleep(Duration::from_millis(300)).await;
                    "the agent changed its mind".to_owned()
                };
                session
                    .call_tool_until("echo", json!({}), TIMEOUT, cancel)
                    .await
            })
        };
        let (id, _) = page.request(method::TOOLS_CALL).await;
        assert_eq!(call.await.unwrap(), None);
        let cancelled = page.notification(method::CANCELLED).await;
        assert_eq!(cancelled["requestId"], json!(id.to_string()));
        assert_eq!(cancelled["reason"], "the agent changed its mind");
        assert_eq!(session.pending_calls(), 0);
        // The page's late answer changes nothing.
        page.answer_call(&id, "ignored");
        assert_calls_work(&session, &mut page).await;
    }

    #[tokio::test(start_paused = true)]
    async fn a_caller_that_stops_waiting_cancels_its_call() {
        let session = session();
        let mut page = FakePage::connect(&session);
        let call = spawn_call(&session, TIMEOUT);
        let (id, _) = page.request(method::TOOLS_CALL).await;
        call.abort();
        assert!(call.await.unwrap_err().is_cancelled());
        let cancelled = page.notification(method::CANCELLED).await;
        assert_eq!(cancelled["requestId"], json!(id.to_string()));
        assert_eq!(session.pending_calls(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn one_call_over_the_pending_limit_fails_at_once() {
        let session = session_with(Limits {
            max_pending_per_session: 2,
            ..Limits::default()
        });
        let mut page = FakePage::connect(&session);
        let _first = spawn_call(&session, TIMEOUT);
        let (first, _) = page.request(method::TOOLS_CALL).await;
        let _second = spawn_call(&session, TIMEOUT);
        page.request(method::TOOLS_CALL).await;

        let refused = call_now(&session).await;
        assert_eq!(
            refused.text(),
            "too many calls waiting for this page (limit 2)"
        );
        assert!(page.has_nothing_queued());
        page.answer_call(&first, "one done");
        assert_calls_work(&session, &mut page).await;
    }

    #[tokio::test(start_paused = true)]
    async fn a_frame_the_page_would_refuse_fails_that_call_alone() {
        let session = session();
        let mut page = FakePage::connect(&session);
        let huge = json!({"text": "a".repeat(MAX_FRAME_BYTES)});
        let deep = (0..MAX_FRAME_DEPTH).fold(json!(1), |inner, _| json!([inner]));
        for (arguments, limit) in [(huge, "bytes, over the limit"), (deep, "levels deep")] {
            let result = session
                .call_tool("echo", arguments, TIMEOUT)
                .now_or_never()
                .expect("refused at once");
            assert!(result.is_error);
            assert!(
                result
                    .text()
                    .starts_with("the call cannot be sent to the page: the frame would be"),
                "{}",
                result.text()
            );
            assert!(result.text().contains(limit), "{}", result.text());
        }
        assert!(page.has_nothing_queued());
        assert_eq!(session.pending_calls(), 0);
        // Healthy: no fail-fast, the next call goes through.
        assert_calls_work(&session, &mut page).await;
    }

    #[tokio::test(start_paused = true)]
    async fn a_page_that_does_not_read_fails_calls_at_once_and_drops_notifications() {
        let session = session();
        let mut page = FakePage::connect_bounded(&session, 2, 1 << 20);
        let first = spawn_call(&session, TIMEOUT);
        let second = spawn_call(&session, TIMEOUT);
        tokio::task::yield_now().await;
        let refused = call_now(&session).await;
        assert!(
            refused
                .text()
                .starts_with("the page is not reading: 2 frames / "),
            "{}",
            refused.text()
        );
        session.notify_page(method::INITIALIZED, &json!({}));

        // The page catches up: what was queued arrives, the notification did not fit.
        for _ in 0..2 {
            let (id, _) = page.request(method::TOOLS_CALL).await;
            page.answer_call(&id, "read at last");
        }
        assert!(page.has_nothing_queued());
        assert!(!first.await.unwrap().0.is_error);
        assert!(!second.await.unwrap().0.is_error);
        assert_calls_work(&session, &mut page).await;
    }

    #[tokio::test(start_paused = true)]
    async fn calls_that_do_not_fit_the_new_connection_fail() {
        let session = session();
        let page = FakePage::connect(&session);
        let calls: Vec<_> = (0..3)
            .map(|_| spawn_call(&session, Duration::from_secs(30)))
            .collect();
        tokio::task::yield_now().await;
        page.disconnect();
        let mut page = FakePage::connect_bounded(&session, 2, 1 << 20);
        for _ in 0..2 {
            let (id, _) = page.request(method::TOOLS_CALL).await;
            page.answer_call(&id, "resent");
        }
        let mut texts = Vec::new();
        for call in calls {
            texts.push(call.await.unwrap().0.text().to_owned());
        }
        let resent = texts.iter().filter(|text| *text == "resent").count();
        let refused = texts
            .iter()
            .filter(|text| text.starts_with("the page is not reading: 2 frames"))
            .count();
        assert_eq!((resent, refused), (2, 1), "{texts:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_probe_is_true_only_for_a_live_connection_that_answers() {
        let session = session();
        let within = Duration::from_secs(2);
        assert!(!session.is_answering(within).await, "nobody connected");

        let mut page = FakePage::connect(&session);
        let probe = {
            let session = session.clone();
            tokio::spawn(async move { session.is_answering(within).await })
        };
        let (id, _) = page.request(method::PING).await;
        page.answer(&id, json!({}));
        assert!(probe.await.unwrap());

        // Silence: no, after `within`; and no fail-fast for calls afterwards.
        let started = Instant::now();
        let probe = {
            let session = session.clone();
            tokio::spawn(async move { session.is_answering(within).await })
        };
        page.request(method::PING).await;
        assert!(!probe.await.unwrap());
        assert_eq!(started.elapsed(), within);
        assert!(page.has_nothing_queued(), "no cancellation for a ping");
        assert_calls_work(&session, &mut page).await;

        // The connection drops meanwhile: no at once, no reconnect grace.
        let started = Instant::now();
        let probe = {
            let session = session.clone();
            tokio::spawn(async move { session.is_answering(within).await })
        };
        page.request(method::PING).await;
        page.disconnect();
        assert!(!probe.await.unwrap());
        assert_eq!(started.elapsed(), Duration::ZERO);
        assert!(!session.is_answering(within).await, "within the grace");
    }

    #[tokio::test(start_paused = true)]
    async fn a_thousand_calls_in_flight_each_get_their_own_answer_through_reconnects() {
        let session = session();
        let limits = Limits::default();
        let connect = |session: &Arc<PageSession>| {
            FakePage::connect_bounded(
                session,
                limits.outgoing_queue_frames,
                limits.outgoing_queue_bytes,
            )
        };
        let mut page = connect(&session);
        let calls: Vec<_> = (0..1_000)
            .map(|_| spawn_call(&session, Duration::from_secs(30)))
            .collect();
        // Every call is sent; then each round the page answers half of what it received, and its
        // connection drops: the rest is sent again on the next connection.
        sleep(Duration::from_millis(1)).await;
        while session.pending_calls() > 0 {
            let mut received = Vec::new();
            while let Some(Some(Outgoing::Frame(frame))) = page.queue.recv().now_or_never() {
                if let Ok(Message::Request { id, .. }) = decode(&frame) {
                    received.push(id);
                }
            }
            for id in &received[..received.len().div_ceil(2)] {
                page.answer_call(id, &id.to_string());
            }
            page.disconnect();
            sleep(Duration::from_secs(1)).await;
            page = connect(&session);
        }
        let mut answers = std::collections::HashSet::new();
        for call in calls {
            let (result, _) = call.await.unwrap();
            assert!(!result.is_error, "{}", result.text());
            answers.insert(result.text().to_owned());
        }
        assert_eq!(answers.len(), 1_000);
    }
}
