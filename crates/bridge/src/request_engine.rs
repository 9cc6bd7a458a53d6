//! What happens to the bridge's requests to one page, and nothing else: which requests wait, until
//! when, what a disconnect, a reconnect, progress, an answer or silence does to them (SPEC §9).
//!
//! Sans-IO (STYLE 13): the engine takes events and the current time, never waits, and owns no
//! channel or socket. What it decides comes out of [`RequestEngine::poll_output`] as values (a
//! frame to send, a request settled, progress to pass on), and [`RequestEngine::poll_timeout`] says
//! when it wants [`RequestEngine::handle_timeout`]. [`crate::page_session::PageSession`] is the
//! driver: it owns the engine under its mutex, the connection's queue and each caller's waiter,
//! and performs the outputs.

use std::collections::hash_map::{Entry, HashMap};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

use client_tools_core::limits::HUMAN_WAIT_MAX_MS;
use client_tools_core::protocol::{
    check_outgoing, encode_notification, method, CancelledParams, ProgressParams, RequestId,
    RpcError,
};
use serde_json::value::RawValue;

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
}

/// What the engine asks its driver to do, in order.
#[derive(Debug)]
pub(crate) enum Output {
    /// Put `frame` on the page's connection. `request`: the request it carries; when the
    /// connection's queue refuses it, the driver reports [`RequestEngine::unsent`]. A notification
    /// (`None`) that does not fit is dropped.
    Send {
        frame: String,
        request: Option<String>,
    },
    /// Request `id` ended: its caller gets `outcome`.
    Settle { id: String, outcome: Settled },
    /// The page reported progress on request `id`, for its caller (a hint: a caller that is not
    /// keeping up misses it).
    Progress { id: String, report: ProgressParams },
}

/// A request waiting for the page's answer.
struct Pending {
    /// The exact frame, sent again after a reconnect (same id: the page runs it at most once).
    frame: String,
    purpose: Purpose,
    /// When the engine stops waiting; progress from the page pushes it back.
    deadline: Instant,
    /// Progress never extends the wait beyond this.
    hard_deadline: Instant,
    timeout: Duration,
    /// Set while the page is away; the request fails [`RECONNECT_GRACE`] after it.
    disconnected_at: Option<Instant>,
}

impl Pending {
    /// When the request may expire next: its deadline, or the end of its reconnect grace.
    fn wake_at(&self) -> Instant {
        match self.disconnected_at {
            Some(at) => self.deadline.min(at + RECONNECT_GRACE),
            None => self.deadline,
        }
    }
}

/// The page's connection, as far as requests care.
#[derive(Debug, Clone, Copy)]
enum Link {
    /// No page has connected yet, since the session was created.
    Never {
        since: Instant,
    },
    Up,
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
    outputs: VecDeque<Output>,
}

impl RequestEngine {
    pub(crate) fn new(max_pending: usize, now: Instant) -> Self {
        Self {
            pending: HashMap::new(),
            link: Link::Never { since: now },
            unresponsive: false,
            max_pending,
            outputs: VecDeque::new(),
        }
    }

    /// The next thing to do, in the order the engine decided them.
    pub(crate) fn poll_output(&mut self) -> Option<Output> {
        self.outputs.pop_front()
    }

    /// When the engine next wants [`Self::handle_timeout`]: the earliest deadline or end of a
    /// reconnect grace of the waiting requests; `None` when none waits. The driver's one timer
    /// sleeps until then.
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        self.pending.values().map(Pending::wake_at).min()
    }

    /// When request `id` may expire next (a request just begun: the driver's timer may have to
    /// wake earlier); `None` once it is settled.
    pub(crate) fn wake_at(&self, id: &str) -> Option<Instant> {
        self.pending.get(id).map(Pending::wake_at)
    }

    /// Takes a request, or fails it at once. A frame the page would refuse, too many waiting
    /// requests or (for a call) an unresponsive page fail this request alone; otherwise it waits,
    /// and goes out now if the page is connected (else on its reconnect). On
    /// [`RequestFailure::Unresponsive`] the caller should ping the page: its answer ends fail-fast.
    pub(crate) fn begin(&mut self, request: Request, now: Instant) -> Result<(), RequestFailure> {
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
        let disconnected_at = match self.link {
            Link::Up => {
                self.outputs.push_back(Output::Send {
                    frame: request.frame.clone(),
                    request: Some(request.id.clone()),
                });
                None
            }
            // Dropped a moment ago: wait for the reconnect, the frame goes out on `connected`.
            Link::Down { since }
                if request.purpose != Purpose::Probe && now < since + RECONNECT_GRACE =>
            {
                Some(since)
            }
            Link::Down { .. } | Link::Never { .. } => return Err(RequestFailure::NotConnected),
        };
        self.pending.insert(
            request.id,
            Pending {
                frame: request.frame,
                purpose: request.purpose,
                deadline: now + request.timeout,
                hard_deadline: now + request.timeout + Duration::from_millis(HUMAN_WAIT_MAX_MS),
                timeout: request.timeout,
                disconnected_at,
            },
        );
        Ok(())
    }

    /// The connection's queue refused request `id`'s frame (`reason` says why): it ends, refused.
    pub(crate) fn unsent(&mut self, id: &str, reason: String) {
        self.settle(id, Err(RequestFailure::Refused(reason)));
    }

    /// Fails every request whose grace or deadline has passed. A timeout on a connected page makes
    /// it unresponsive and tells it to stop (`notifications/cancelled`).
    pub(crate) fn handle_timeout(&mut self, now: Instant) {
        let due: Vec<String> = self
            .pending
            .iter()
            .filter(|(_, pending)| pending.wake_at() <= now)
            .map(|(id, _)| id.clone())
            .collect();
        for id in due {
            self.expire(&id, now);
        }
    }

    fn expire(&mut self, id: &str, now: Instant) {
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
        self.push_settled(id.to_owned(), Err(failure));
    }

    /// An answer from the page, to any request: the page is responsive again. An answer to no
    /// request of this engine is handed back (it may be another cluster node's: crate::cluster).
    pub(crate) fn answer(&mut self, id: &RequestId, answer: Answer) -> Option<Answer> {
        self.unresponsive = false;
        // The bridge's ids are strings: looked up as they are, without a copy.
        let id = match id {
            RequestId::String(id) => self.pending.remove_entry(id.as_str()),
            RequestId::Number(n) => self.pending.remove_entry(&n.to_string()),
        }
        .map(|(id, _)| id);
        match id {
            Some(id) => {
                self.push_settled(id, Ok(answer));
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
        let Some(token) = progress.progress_token.as_str() else {
            return Some(progress);
        };
        let Some(pending) = self.pending.get_mut(token) else {
            return Some(progress);
        };
        pending.deadline = (now + pending.timeout).min(pending.hard_deadline);
        let id = token.to_owned();
        self.outputs.push_back(Output::Progress {
            id,
            report: progress,
        });
        None
    }

    /// Request `id` ends with `failure` now (it never reached the page: nothing to cancel there).
    pub(crate) fn fail(&mut self, id: &str, failure: RequestFailure) -> bool {
        self.settle(id, Err(failure))
    }

    /// The caller gave up on request `id`: the page is told to stop. `false` when the request had
    /// already settled (its outcome stands). Nothing is settled: the caller is gone.
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
    pub(crate) fn connected(&mut self) {
        self.fail_probes();
        self.unresponsive = false;
        self.link = Link::Up;
        for (id, pending) in &mut self.pending {
            pending.disconnected_at = None;
            self.outputs.push_back(Output::Send {
                frame: pending.frame.clone(),
                request: Some(id.clone()),
            });
        }
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
            self.settle(&id, Err(RequestFailure::Disconnected));
        }
    }

    /// Ends request `id` with `outcome`; `false` when it was not waiting.
    fn settle(&mut self, id: &str, outcome: Settled) -> bool {
        match self.pending.remove_entry(id) {
            Some((id, _)) => {
                self.push_settled(id, outcome);
                true
            }
            None => false,
        }
    }

    fn push_settled(&mut self, id: String, outcome: Settled) {
        self.outputs.push_back(Output::Settle { id, outcome });
    }

    /// Sends a frame that may be lost (a notification) while the page is connected: dropped when
    /// it is not, or not reading.
    pub(crate) fn notify(&mut self, frame: String) {
        if self.is_connected() {
            self.outputs.push_back(Output::Send {
                frame,
                request: None,
            });
        }
    }

    fn send_cancelled(&mut self, id: &str, reason: &str) {
        let params = CancelledParams {
            request_id: RequestId::String(id.to_owned()),
            reason: Some(reason.to_owned()),
        };
        self.notify(encode_notification(method::CANCELLED, &params));
    }

    pub(crate) fn is_connected(&self) -> bool {
        matches!(self.link, Link::Up)
    }

    pub(crate) fn has_connected(&self) -> bool {
        !matches!(self.link, Link::Never { .. })
    }

    /// How long no page has been connected (since creation when none ever was); `None` while one is.
    pub(crate) fn disconnected_for(&self, now: Instant) -> Option<Duration> {
        match self.link {
            Link::Up => None,
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
    /// answer each once; a copy that does not fit is dropped).
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn resend_pending(&mut self) {
        let frames: Vec<String> = self.pending.values().map(|p| p.frame.clone()).collect();
        for frame in frames {
            self.notify(frame);
        }
    }
}

/// The engine alone, with time as a parameter: inputs in, outputs out, no runtime.
#[cfg(test)]
mod engine_tests {
    use serde_json::json;

    use super::*;

    const TIMEOUT: Duration = Duration::from_secs(1);

    fn engine(at: Instant) -> RequestEngine {
        let mut engine = RequestEngine::new(8, at);
        engine.connected();
        assert!(outputs(&mut engine).is_empty());
        engine
    }

    fn request(id: &str, purpose: Purpose) -> Request {
        let frame = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call"}).to_string();
        Request {
            id: id.to_owned(),
            frame,
            timeout: TIMEOUT,
            purpose,
        }
    }

    fn outputs(engine: &mut RequestEngine) -> Vec<Output> {
        std::iter::from_fn(|| engine.poll_output()).collect()
    }

    fn answer(text: &str) -> Answer {
        Ok(RawValue::from_string(text.to_owned()).unwrap())
    }

    /// The request ids settled among `outputs`, with how.
    fn settled(outputs: &[Output]) -> Vec<(String, Result<String, RequestFailure>)> {
        let how = |outcome: &Settled| match outcome {
            Ok(Ok(result)) => Ok(result.get().to_owned()),
            Ok(Err(error)) => Ok(error.message.clone()),
            Err(failure) => Err(failure.clone()),
        };
        let settle = |output: &Output| match output {
            Output::Settle { id, outcome } => Some((id.clone(), how(outcome))),
            _ => None,
        };
        outputs.iter().filter_map(settle).collect()
    }

    /// The frames sent among `outputs`, and for which request.
    fn sent(outputs: &[Output]) -> Vec<(Option<String>, String)> {
        let send = |output: &Output| match output {
            Output::Send { frame, request } => Some((request.clone(), frame.clone())),
            _ => None,
        };
        outputs.iter().filter_map(send).collect()
    }

    #[test]
    fn a_request_goes_out_and_its_answer_settles_it() {
        let t0 = Instant::now();
        let mut engine = engine(t0);
        let call = request("b-1", Purpose::ToolCall);
        let frame = call.frame.clone();
        engine.begin(call, t0).unwrap();
        assert_eq!(sent(&outputs(&mut engine)), [(Some("b-1".into()), frame)]);
        assert_eq!(engine.poll_timeout(), Some(t0 + TIMEOUT));

        let id = RequestId::String("b-1".into());
        assert!(engine.answer(&id, answer("{}")).is_none());
        assert_eq!(
            settled(&outputs(&mut engine)),
            [("b-1".into(), Ok("{}".into()))]
        );
        assert_eq!((engine.pending(), engine.poll_timeout()), (0, None));
        // An answer to no request of this engine is handed back.
        assert!(engine.answer(&id, answer("{}")).is_some());
        assert!(outputs(&mut engine).is_empty());
    }

    #[test]
    fn silence_times_out_tells_the_page_and_makes_calls_fail_fast_until_it_answers() {
        let t0 = Instant::now();
        let mut engine = engine(t0);
        engine.begin(request("b-1", Purpose::ToolCall), t0).unwrap();
        outputs(&mut engine);
        engine.handle_timeout(t0 + TIMEOUT - Duration::from_millis(1));
        assert!(outputs(&mut engine).is_empty());

        engine.handle_timeout(t0 + TIMEOUT);
        let out = outputs(&mut engine);
        assert_eq!(
            settled(&out),
            [("b-1".into(), Err(RequestFailure::TimedOut))]
        );
        let [(None, cancelled)] = &sent(&out)[..] else {
            panic!("{out:?}")
        };
        assert!(cancelled.contains("notifications/cancelled") && cancelled.contains("b-1"));

        // Fail-fast for calls; the bridge's own requests still go.
        let refused = engine.begin(request("b-2", Purpose::ToolCall), t0 + TIMEOUT);
        assert_eq!(refused, Err(RequestFailure::Unresponsive));
        engine
            .begin(request("b-3", Purpose::Housekeeping), t0 + TIMEOUT)
            .unwrap();
        let housekeeping = RequestId::String("b-3".into());
        engine.answer(&housekeeping, answer("{}"));
        outputs(&mut engine);
        engine
            .begin(request("b-4", Purpose::ToolCall), t0 + TIMEOUT)
            .unwrap();
    }

    #[test]
    fn progress_pushes_the_deadline_back_but_never_beyond_the_hard_bound() {
        let t0 = Instant::now();
        let mut engine = engine(t0);
        engine.begin(request("b-1", Purpose::ToolCall), t0).unwrap();
        outputs(&mut engine);
        let report = ProgressParams {
            progress_token: json!("b-1"),
            progress: 1.0,
            total: None,
            message: None,
        };
        let later = t0 + Duration::from_millis(900);
        assert!(engine.progress(report.clone(), later).is_none());
        assert!(matches!(&outputs(&mut engine)[..], [Output::Progress { id, .. }] if id == "b-1"));
        assert_eq!(engine.poll_timeout(), Some(later + TIMEOUT));

        let hard = t0 + TIMEOUT + Duration::from_millis(HUMAN_WAIT_MAX_MS);
        engine.progress(report.clone(), hard);
        assert_eq!(engine.poll_timeout(), Some(hard));
        engine.handle_timeout(hard);
        let out = outputs(&mut engine);
        assert_eq!(
            settled(&out),
            [("b-1".into(), Err(RequestFailure::TimedOut))]
        );
        // Progress on no request of this engine is handed back.
        assert_eq!(engine.progress(report.clone(), hard), Some(report));
    }

    #[test]
    fn a_reconnect_within_the_grace_resends_the_frame_and_beyond_it_the_call_fails() {
        let t0 = Instant::now();
        let mut engine = engine(t0);
        let call = request("b-1", Purpose::ToolCall);
        let frame = call.frame.clone();
        engine.begin(call, t0).unwrap();
        outputs(&mut engine);

        engine.disconnected(t0);
        assert_eq!(engine.poll_timeout(), Some(t0 + TIMEOUT));
        let mut long = request("b-2", Purpose::ToolCall);
        long.timeout = Duration::from_secs(30);
        engine.begin(long, t0 + Duration::from_secs(1)).unwrap();
        assert!(
            outputs(&mut engine).is_empty(),
            "nothing goes out while the page is away"
        );
        engine.connected();
        let resent = sent(&outputs(&mut engine));
        assert!(resent.contains(&(Some("b-1".into()), frame)), "{resent:?}");
        assert_eq!(resent.len(), 2);

        engine.disconnected(t0 + Duration::from_secs(2));
        let grace_over = t0 + Duration::from_secs(2) + RECONNECT_GRACE;
        assert_eq!(engine.wake_at("b-2"), Some(grace_over));
        engine.handle_timeout(grace_over);
        let out = settled(&outputs(&mut engine));
        assert!(
            out.contains(&("b-2".into(), Err(RequestFailure::Disconnected))),
            "{out:?}"
        );
        let late = engine.begin(request("b-3", Purpose::ToolCall), grace_over);
        assert_eq!(late, Err(RequestFailure::NotConnected));
    }

    #[test]
    fn a_frame_the_connection_refuses_fails_its_request_alone() {
        let t0 = Instant::now();
        let mut engine = engine(t0);
        engine.begin(request("b-1", Purpose::ToolCall), t0).unwrap();
        outputs(&mut engine);
        engine.unsent("b-1", "the page is not reading".into());
        let refused = Err(RequestFailure::Refused("the page is not reading".into()));
        assert_eq!(settled(&outputs(&mut engine)), [("b-1".into(), refused)]);
        engine.begin(request("b-2", Purpose::ToolCall), t0).unwrap();
    }

    #[test]
    fn probes_wait_for_no_reconnect_and_their_silence_proves_nothing() {
        let t0 = Instant::now();
        let mut engine = engine(t0);
        engine.begin(request("p-1", Purpose::Probe), t0).unwrap();
        outputs(&mut engine);
        engine.handle_timeout(t0 + TIMEOUT);
        let out = outputs(&mut engine);
        assert_eq!(
            settled(&out),
            [("p-1".into(), Err(RequestFailure::TimedOut))]
        );
        assert!(sent(&out).is_empty(), "no cancellation for a probe");
        engine
            .begin(request("b-1", Purpose::ToolCall), t0 + TIMEOUT)
            .unwrap();

        engine
            .begin(request("p-2", Purpose::Probe), t0 + TIMEOUT)
            .unwrap();
        outputs(&mut engine);
        engine.disconnected(t0 + TIMEOUT);
        let out = settled(&outputs(&mut engine));
        assert_eq!(out, [("p-2".into(), Err(RequestFailure::Disconnected))]);
        let away = engine.begin(request("p-3", Purpose::Probe), t0 + TIMEOUT);
        assert_eq!(away, Err(RequestFailure::NotConnected));
    }

    #[test]
    fn one_request_over_the_limit_fails_at_once_and_a_cancel_tells_the_page() {
        let t0 = Instant::now();
        let mut engine = RequestEngine::new(1, t0);
        engine.connected();
        engine.begin(request("b-1", Purpose::ToolCall), t0).unwrap();
        let over = engine.begin(request("b-2", Purpose::ToolCall), t0);
        let limit = "too many calls waiting for this page (limit 1)".to_owned();
        assert_eq!(over, Err(RequestFailure::Refused(limit)));
        outputs(&mut engine);

        assert!(engine.cancel("b-1", "the agent changed its mind"));
        let out = outputs(&mut engine);
        assert!(
            settled(&out).is_empty(),
            "the caller is gone: nothing to settle"
        );
        let [(None, cancelled)] = &sent(&out)[..] else {
            panic!("{out:?}")
        };
        assert!(cancelled.contains("the agent changed its mind"));
        assert!(!engine.cancel("b-1", "again"));
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
    use tokio::sync::{mpsc, Notify};
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
