//! What happens to the bridge's requests to one page, and nothing else: which requests wait, until
//! when, what a disconnect, a reconnect, progress, an answer or silence does to them (SPEC §9).
//!
//! Sans-IO (STYLE 13): the engine takes events and the current time, never waits, and owns no
//! channel or socket. What it decides comes out of [`RequestEngine::poll_output`] as values (a
//! frame to send, a request settled, progress to pass on), and [`RequestEngine::poll_timeout`] says
//! when it wants [`RequestEngine::handle_timeout`]. [`crate::sessions::page_session::PageSession`] is the
//! driver: it owns the engine under its mutex, the connection's queue and each caller's waiter,
//! and performs the outputs.

use std::collections::hash_map::{Entry, HashMap};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

use client_tools_core::limits::HUMAN_WAIT_MAX_MS;
use client_tools_core::protocol::{
    check_outgoing, encode_notification, meta, method, CancelledParams, ProgressParams, RequestId,
    RpcError,
};
use serde_json::value::RawValue;

use crate::limits::{ANSWER_SLACK, RECONNECT_GRACE};

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
    /// Its place in the order requests began: the page reads frames in that order, so an answer
    /// to a request begun later shows the page alive after this one reached it.
    seq: u64,
    /// [`RequestEngine::signs_of_life`] when the request began.
    signs_before: u64,
    /// Cancelled with the page asked for its answer ([`RequestEngine::cancel_for_answer`]): it
    /// waits [`ANSWER_SLACK`] for it, and ends [`RequestFailure::Cancelled`] without one.
    cancelled: bool,
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
    /// A request timed out on a connected page that showed no sign of life since it was sent
    /// (its `seq`): tool calls fail at once until the page answers a request begun after it
    /// (the ping the caller sends), or reconnects.
    unresponsive: Option<u64>,
    /// How many requests began (the next one's `seq`).
    begun: u64,
    /// The latest `seq` the page answered. An answer to an earlier request may have been on its
    /// way while the page froze, so it says nothing of the requests after it.
    answered_up_to: Option<u64>,
    /// How many progress reports, answers to tool calls and answers to no request of this engine
    /// the page sent: a request that times out after one since it began did not find the page
    /// stuck (it may have waited its turn there, its tool's `concurrency` taken by a call that
    /// just ended: the wait counts against the bridge's deadline). An answer to the bridge's own
    /// earlier housekeeping (the lists it asks for at connect) is not one: it may have been on
    /// its way while the page froze.
    signs_of_life: u64,
    max_pending: usize,
    outputs: VecDeque<Output>,
}

impl RequestEngine {
    pub(crate) fn new(max_pending: usize, now: Instant) -> Self {
        Self {
            pending: HashMap::new(),
            link: Link::Never { since: now },
            unresponsive: None,
            begun: 0,
            answered_up_to: None,
            signs_of_life: 0,
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
        if request.purpose == Purpose::ToolCall && self.unresponsive.is_some() {
            return Err(RequestFailure::Unresponsive);
        }
        self.begun += 1;
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
                seq: self.begun,
                signs_before: self.signs_of_life,
                cancelled: false,
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
        if pending.cancelled && now >= pending.deadline {
            // The page did not answer the cancel in time: cancelled, as without an answer.
            entry.remove();
            return self.push_settled(id.to_owned(), Err(RequestFailure::Cancelled));
        }
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
            let answered_later = self.answered_up_to.is_some_and(|seq| seq > pending.seq);
            if self.is_connected() && !answered_later && self.signs_of_life == pending.signs_before
            {
                self.unresponsive = self.unresponsive.max(Some(pending.seq));
            }
            self.send_cancelled(id, "the runtime stopped waiting (timeout)", false);
        }
        self.push_settled(id.to_owned(), Err(failure));
    }

    /// An answer from the page: to a request begun after the one that made it unresponsive, or
    /// to no request of this engine (the ping sent on fail-fast, another cluster node's request),
    /// the page is responsive again. An answer to no request of this engine is handed back
    /// (crate::cluster).
    pub(crate) fn answer(&mut self, id: &RequestId, answer: Answer) -> Option<Answer> {
        // The bridge's ids are strings: looked up as they are, without a copy.
        let settled = match id {
            RequestId::String(id) => self.pending.remove_entry(id.as_str()),
            RequestId::Number(n) => self.pending.remove_entry(&n.to_string()),
        };
        let Some((id, pending)) = settled else {
            self.unresponsive = None;
            self.signs_of_life += 1;
            return Some(answer);
        };
        self.answered_up_to = self.answered_up_to.max(Some(pending.seq));
        if pending.purpose == Purpose::ToolCall {
            self.signs_of_life += 1;
        }
        if self.unresponsive.is_some_and(|stuck| pending.seq > stuck) {
            self.unresponsive = None;
        }
        self.push_settled(id, Ok(answer));
        None
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
        self.signs_of_life += 1;
        if pending.cancelled {
            return None; // its caller cancelled: only the answer is awaited, for a bounded time
        }
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
        if pending.purpose != Purpose::Probe && !pending.cancelled {
            self.send_cancelled(id, reason, false);
        }
        true
    }

    /// The caller cancels request `id` and wants the page's answer to the cancel after all (a
    /// client-tools extension, `_meta["clienttools/answer"]: true`: the page ends the call with an
    /// error result carrying its handler's partial value, SPEC §7): the request waits
    /// [`ANSWER_SLACK`] more for it, then ends [`RequestFailure::Cancelled`]. `None`: it had
    /// settled already (its outcome stands); `Some(false)`: cancelled without an answer to wait
    /// for (a probe, a page away), as [`Self::cancel`]; `Some(true)`: the answer is awaited.
    pub(crate) fn cancel_for_answer(
        &mut self,
        id: &str,
        reason: &str,
        now: Instant,
    ) -> Option<bool> {
        let pending = self.pending.get_mut(id)?;
        if pending.cancelled {
            return Some(true);
        }
        if pending.purpose == Purpose::Probe || !matches!(self.link, Link::Up) {
            self.cancel(id, reason);
            return Some(false);
        }
        pending.cancelled = true;
        pending.deadline = now + ANSWER_SLACK;
        pending.hard_deadline = pending.deadline;
        self.send_cancelled(id, reason, true);
        Some(true)
    }

    /// A page connection is up: waiting requests go out on it again with their ids (the page runs
    /// each at most once), probes of a connection it replaced fail, and fail-fast ends.
    pub(crate) fn connected(&mut self) {
        self.fail_probes();
        self.unresponsive = None;
        self.link = Link::Up;
        // A request cancelled while it waited for the page's answer is not sent again.
        let cancelled: Vec<String> = (self.pending.iter())
            .filter(|(_, pending)| pending.cancelled)
            .map(|(id, _)| id.clone())
            .collect();
        for id in cancelled {
            self.settle(&id, Err(RequestFailure::Cancelled));
        }
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

    /// `notifications/cancelled` for request `id`; `answer`: the page is asked for its answer.
    fn send_cancelled(&mut self, id: &str, reason: &str, answer: bool) {
        let meta = answer.then(|| {
            let mut meta = serde_json::Map::new();
            meta.insert(meta::ANSWER.into(), true.into());
            meta
        });
        let params = CancelledParams {
            request_id: RequestId::String(id.to_owned()),
            reason: Some(reason.to_owned()),
            meta,
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
    use client_tools_core::limits::MAX_FRAME_BYTES;
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

    /// Issue 36 point 4: a cancel that asks for the page's answer (`clienttools/answer`) keeps
    /// the request [`ANSWER_SLACK`] for it: the answer settles it; silence ends it cancelled,
    /// without making the page unresponsive; its progress is not passed on; a reconnect does not
    /// send it again; a page away gets the plain cancel.
    #[test]
    fn a_cancel_asking_for_the_answer_waits_a_bounded_time_for_it() {
        let t0 = Instant::now();
        let mut engine = engine(t0);
        engine.begin(request("b-1", Purpose::ToolCall), t0).unwrap();
        engine.begin(request("b-2", Purpose::ToolCall), t0).unwrap();
        outputs(&mut engine);

        assert_eq!(
            engine.cancel_for_answer("b-1", "tasks/cancel", t0),
            Some(true)
        );
        let out = outputs(&mut engine);
        let [(None, cancelled)] = &sent(&out)[..] else {
            panic!("{out:?}")
        };
        let cancelled: serde_json::Value = serde_json::from_str(cancelled).unwrap();
        assert_eq!(cancelled["params"]["requestId"], "b-1");
        assert_eq!(cancelled["params"]["_meta"]["clienttools/answer"], true);
        assert!(settled(&out).is_empty(), "the answer is awaited");
        assert_eq!(engine.wake_at("b-1"), Some(t0 + ANSWER_SLACK));
        let report = ProgressParams {
            progress_token: json!("b-1"),
            progress: 1.0,
            total: None,
            message: None,
        };
        assert!(engine.progress(report, t0).is_none());
        assert!(
            outputs(&mut engine).is_empty(),
            "no progress after the cancel"
        );
        assert_eq!(engine.wake_at("b-1"), Some(t0 + ANSWER_SLACK));

        let id = RequestId::String("b-1".into());
        assert!(engine.answer(&id, answer(r#"{"isError":true}"#)).is_none());
        let out = settled(&outputs(&mut engine));
        assert_eq!(out, [("b-1".into(), Ok(r#"{"isError":true}"#.into()))]);

        // Silence: cancelled at the end of the slack, no second cancel, no fail-fast.
        assert_eq!(
            engine.cancel_for_answer("b-2", "tasks/cancel", t0),
            Some(true)
        );
        outputs(&mut engine);
        engine.handle_timeout(t0 + ANSWER_SLACK);
        let out = outputs(&mut engine);
        assert_eq!(
            settled(&out),
            [("b-2".into(), Err(RequestFailure::Cancelled))]
        );
        assert!(sent(&out).is_empty(), "{out:?}");
        engine
            .begin(request("b-3", Purpose::ToolCall), t0 + ANSWER_SLACK)
            .unwrap();
        outputs(&mut engine);
        assert_eq!(
            engine.cancel_for_answer("b-9", "gone", t0),
            None,
            "settled already"
        );

        // A reconnect while the answer is awaited: it is not sent again, and ends cancelled.
        assert_eq!(
            engine.cancel_for_answer("b-3", "tasks/cancel", t0),
            Some(true)
        );
        outputs(&mut engine);
        engine.disconnected(t0);
        engine.connected();
        let out = outputs(&mut engine);
        assert_eq!(
            settled(&out),
            [("b-3".into(), Err(RequestFailure::Cancelled))]
        );
        assert!(sent(&out).is_empty(), "{out:?}");

        // A page away: the plain cancel (nothing can answer).
        engine.begin(request("b-4", Purpose::ToolCall), t0).unwrap();
        engine.disconnected(t0);
        outputs(&mut engine);
        assert_eq!(
            engine.cancel_for_answer("b-4", "tasks/cancel", t0),
            Some(false)
        );
        assert_eq!(engine.pending(), 0);
    }

    #[test]
    fn any_answer_ends_fail_fast_and_so_does_a_reconnect() {
        let t0 = Instant::now();
        let mut engine = engine(t0);
        engine.begin(request("b-1", Purpose::ToolCall), t0).unwrap();
        engine.handle_timeout(t0 + TIMEOUT);
        outputs(&mut engine);
        let fast = engine.begin(request("b-2", Purpose::ToolCall), t0 + TIMEOUT);
        assert_eq!(fast, Err(RequestFailure::Unresponsive));

        // The late answer to the timed-out call is nobody's now, yet it shows the page is back.
        let late = RequestId::String("b-1".into());
        assert!(engine.answer(&late, answer("{}")).is_some());
        engine
            .begin(request("b-3", Purpose::ToolCall), t0 + TIMEOUT)
            .unwrap();
        engine.handle_timeout(t0 + TIMEOUT * 2);
        outputs(&mut engine);
        let fast = engine.begin(request("b-4", Purpose::ToolCall), t0 + TIMEOUT * 2);
        assert_eq!(fast, Err(RequestFailure::Unresponsive));

        // A new connection is a new page: fail-fast ends too.
        engine.disconnected(t0 + TIMEOUT * 2);
        engine.connected();
        engine
            .begin(request("b-5", Purpose::ToolCall), t0 + TIMEOUT * 2)
            .unwrap();
    }

    /// Issue 36 point 2: a call that waited its turn in the page (its tool's `concurrency`) past
    /// the bridge's deadline times out, but the page answered meanwhile: it is not stuck, and the
    /// next call goes to it.
    #[test]
    fn a_timeout_after_the_page_answered_since_leaves_it_responsive() {
        let t0 = Instant::now();
        let mut engine = engine(t0);
        engine.begin(request("b-1", Purpose::ToolCall), t0).unwrap();
        engine.begin(request("b-2", Purpose::ToolCall), t0).unwrap();
        let first = RequestId::String("b-1".into());
        engine.answer(&first, answer("{}"));
        outputs(&mut engine);
        engine.handle_timeout(t0 + TIMEOUT);
        let out = outputs(&mut engine);
        assert_eq!(
            settled(&out),
            [("b-2".into(), Err(RequestFailure::TimedOut))]
        );
        let [(None, cancelled)] = &sent(&out)[..] else {
            panic!("the page is told to stop the call: {out:?}")
        };
        assert!(cancelled.contains("notifications/cancelled") && cancelled.contains("b-2"));
        engine
            .begin(request("b-3", Purpose::ToolCall), t0 + TIMEOUT)
            .unwrap();
        // Progress counts as a sign of life too; silence since the call began does not.
        engine
            .begin(request("b-4", Purpose::ToolCall), t0 + TIMEOUT)
            .unwrap();
        let report = ProgressParams {
            progress_token: json!("b-3"),
            progress: 1.0,
            total: None,
            message: None,
        };
        assert!(engine.progress(report, t0 + TIMEOUT).is_none());
        engine.handle_timeout(t0 + TIMEOUT * 3);
        outputs(&mut engine);
        engine
            .begin(request("b-5", Purpose::ToolCall), t0 + TIMEOUT * 3)
            .unwrap();
        engine.handle_timeout(t0 + TIMEOUT * 5);
        outputs(&mut engine);
        let fast = engine.begin(request("b-6", Purpose::ToolCall), t0 + TIMEOUT * 5);
        assert_eq!(fast, Err(RequestFailure::Unresponsive));
    }

    /// The bridge's lists asked at connect may be answered just after a call went out, by a page
    /// that then froze in that call: those answers were on their way and show nothing of the
    /// call. An answer to a request begun after the call does (the page read the call first).
    #[test]
    fn only_answers_the_page_sent_after_reading_the_call_show_it_alive() {
        let t0 = Instant::now();
        let mut engine = engine(t0);
        engine
            .begin(request("b-1", Purpose::Housekeeping), t0)
            .unwrap();
        engine.begin(request("b-2", Purpose::ToolCall), t0).unwrap();
        engine.answer(&RequestId::String("b-1".into()), answer("{}"));
        engine.handle_timeout(t0 + TIMEOUT);
        outputs(&mut engine);
        let fast = engine.begin(request("b-3", Purpose::ToolCall), t0 + TIMEOUT);
        assert_eq!(fast, Err(RequestFailure::Unresponsive));
        // The ping the caller sends then (an answer to no request of the engine) ends it.
        engine.answer(&RequestId::String("b-ping".into()), answer("{}"));
        engine
            .begin(request("b-4", Purpose::ToolCall), t0 + TIMEOUT)
            .unwrap();
    }

    #[test]
    fn a_session_no_page_ever_connected_to_fails_requests_at_once() {
        let t0 = Instant::now();
        let mut engine = RequestEngine::new(8, t0);
        for purpose in [Purpose::ToolCall, Purpose::Housekeeping, Purpose::Probe] {
            let refused = engine.begin(request("b-1", purpose), t0);
            assert_eq!(refused, Err(RequestFailure::NotConnected));
        }
        assert_eq!((engine.pending(), engine.poll_timeout()), (0, None));
        assert!(outputs(&mut engine).is_empty());
    }

    #[test]
    fn a_frame_the_page_would_refuse_fails_that_request_alone() {
        let t0 = Instant::now();
        let mut engine = engine(t0);
        let mut huge = request("b-1", Purpose::ToolCall);
        huge.frame = json!({"jsonrpc": "2.0", "id": "b-1", "method": "tools/call",
                            "params": {"text": "a".repeat(MAX_FRAME_BYTES)}})
        .to_string();
        let Err(RequestFailure::Refused(why)) = engine.begin(huge, t0) else {
            panic!("a frame over the page's limit is refused")
        };
        assert!(why.starts_with("the call cannot be sent to the page: the frame would be"));
        assert!(outputs(&mut engine).is_empty(), "nothing was sent");
        // The page is healthy: no fail-fast.
        engine.begin(request("b-2", Purpose::ToolCall), t0).unwrap();
    }

    #[test]
    fn a_thousand_requests_each_settle_once_through_reconnects() {
        let t0 = Instant::now();
        let mut engine = RequestEngine::new(1_000, t0);
        engine.connected();
        for n in 0..1_000 {
            let mut call = request(&format!("b-{n}"), Purpose::ToolCall);
            call.timeout = Duration::from_secs(300);
            engine.begin(call, t0).unwrap();
        }
        let mut now = t0;
        let mut settled_ids = std::collections::HashSet::new();
        let mut out = outputs(&mut engine);
        while engine.pending() > 0 {
            // The page answers half of what it was sent, then its connection drops and comes back:
            // the rest is sent again.
            let received: Vec<String> = sent(&out).into_iter().filter_map(|(id, _)| id).collect();
            for id in &received[..received.len().div_ceil(2)] {
                engine.answer(&RequestId::String(id.clone()), answer("{}"));
            }
            now += Duration::from_secs(1);
            engine.disconnected(now);
            engine.connected();
            out = outputs(&mut engine);
            for (id, outcome) in settled(&out) {
                assert_eq!(outcome, Ok("{}".to_owned()));
                assert!(settled_ids.insert(id), "settled twice");
            }
        }
        assert_eq!(settled_ids.len(), 1_000);
    }
}
