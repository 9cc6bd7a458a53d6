//! A page session's connection: its socket or a link to the cluster node holding it, attached
//! and detached; the page's answers, delivered; frames relayed from other nodes.

use std::sync::Arc;
use std::time::SystemTime;

use client_tools_core::protocol::{
    self, encode_error, encode_notification, encode_result, method, DecodeError, Message, RequestId,
};
use tokio::sync::Notify;

use super::{now, Connection, PageSession, RelayRefused, State, Via, CLOSE_REPLACED};
use crate::calls::policy::Who;
use crate::calls::policy_gate;
pub use crate::calls::request_engine::RequestFailure;
use crate::calls::request_engine::{Answer, RequestEngine};
use crate::page::connection_queue::OutgoingSender;

impl PageSession {
    /// Sends a notification to the page if it is connected (dropped if it is not reading).
    pub(crate) fn notify_page(&self, method: &str, params: &impl serde::Serialize) {
        let frame = encode_notification(method, params);
        self.lock().drive(|engine| engine.notify(frame));
    }

    /// A page connection starts: returns its generation (to tell stale connections apart). Calls
    /// still waiting from before are sent again on it, and fail-fast ends.
    pub(crate) fn attach(&self, outgoing: OutgoingSender, kill: Arc<Notify>) -> u64 {
        self.attach_via(outgoing, kill, Via::Socket, SystemTime::now())
    }

    /// [`Self::attach`] of a connection carried by `via`, whose page connected at `attached_at`.
    pub(crate) fn attach_via(
        &self,
        outgoing: OutgoingSender,
        kill: Arc<Notify>,
        via: Via,
        attached_at: SystemTime,
    ) -> u64 {
        let mut state = self.lock();
        let generation = Self::attach_locked(&mut state, outgoing, kill, via, attached_at);
        drop(state);
        self.changed();
        generation
    }

    /// Attaches under the caller's lock; the caller tells the watchers once it is released.
    fn attach_locked(
        state: &mut State,
        outgoing: OutgoingSender,
        kill: Arc<Notify>,
        via: Via,
        attached_at: SystemTime,
    ) -> u64 {
        state.routes.clear();
        // Never a silent swap: a connection still attached (two claims that raced) is told it was
        // replaced and stops, so no two live connections share one session.
        if let Some(previous) = state.connection.take() {
            previous.outgoing.close(
                CLOSE_REPLACED,
                "replaced by a newer connection of the same page session".to_owned(),
            );
            previous.kill.notify_one();
        }
        state.generations += 1;
        let generation = state.generations;
        // A new connection reports its activity afresh (the page sends it after each connect).
        let at = crate::ids::unix_ms(attached_at);
        state.activity = client_tools_core::tabs::TabActivity::connected(at);
        state.connection = Some(Connection {
            generation,
            outgoing,
            kill,
            attached_at,
            via,
        });
        state.drive(RequestEngine::connected);
        generation
    }

    /// [`Self::attach_via`] for a link to another cluster node (crate::cluster): never in place of
    /// this node's own socket to the page (`None` then).
    pub(crate) fn attach_link(
        &self,
        outgoing: OutgoingSender,
        kill: Arc<Notify>,
        node: String,
        attached_at: SystemTime,
    ) -> Option<u64> {
        // Checked and attached under one lock: a socket attaching meanwhile wins.
        let mut state = self.lock();
        if state.connection.as_ref().map(|c| &c.via) == Some(&Via::Socket) {
            return None;
        }
        let generation =
            Self::attach_locked(&mut state, outgoing, kill, Via::Node(node), attached_at);
        drop(state);
        self.changed();
        Some(generation)
    }

    /// Closes the connection of `generation` (not a newer one) as [`Self::close_connection`] does.
    pub(crate) fn close_generation(&self, generation: u64, code: u16, reason: &str) {
        let state = self.lock();
        if let Some(connection) = state
            .connection
            .as_ref()
            .filter(|c| c.generation == generation)
        {
            connection.outgoing.close(code, reason.to_owned());
            connection.kill.notify_one();
        }
    }

    /// Ends a link to another cluster node (its forwarding stops), as when the session is
    /// forgotten here; a socket is left alone.
    pub(crate) fn drop_link(&self) {
        let state = self.lock();
        if let Some(connection) = state
            .connection
            .as_ref()
            .filter(|c| matches!(c.via, Via::Node(_)))
        {
            connection.kill.notify_one();
        }
    }

    /// Request `id` never reached the page (no cluster node holds its socket): it ends now,
    /// "not connected".
    pub(crate) fn not_delivered(&self, id: &str) {
        self.lock()
            .drive(|engine| engine.fail(id, RequestFailure::NotConnected));
    }

    /// The connection of `generation` ended: waiting calls get
    /// [`RECONNECT_GRACE`](crate::limits::RECONNECT_GRACE) to see it back.
    pub(crate) fn detach(&self, generation: u64) {
        let mut state = self.lock();
        if state.connection.as_ref().map(|c| c.generation) != Some(generation) {
            return; // a newer connection has taken over already
        }
        state.connection = None;
        state.routes.clear();
        state.drive(|engine| engine.disconnected(now()));
        let wake = state.engine.poll_timeout();
        self.arm(&mut state, wake);
        drop(state);
        self.changed();
    }

    /// Ends the current connection: its writer sends a WebSocket close frame (`code`, `reason`)
    /// after what is already queued, and its reader stops at once, so a page that does not answer
    /// the close (a frozen tab being replaced) does not hold the connection.
    pub(crate) fn close_connection(&self, code: u16, reason: &str) {
        let state = self.lock();
        if let Some(connection) = &state.connection {
            connection.outgoing.close(code, reason.to_owned());
            connection.kill.notify_one();
        }
    }

    /// An answer from the page: it is responsive again. An answer to a request another cluster
    /// node relayed goes back to that node.
    pub(crate) fn resolve(&self, id: &RequestId, answer: Answer) {
        let mut state = self.lock();
        let Some(answer) = state.drive(|engine| engine.answer(id, answer)) else {
            return;
        };
        let Some(route) = state.routes.take(&id.to_string()) else {
            return;
        };
        drop(state);
        let frame = match answer {
            Ok(result) => encode_result(id, &result),
            Err(error) => encode_error(Some(id), &error),
        };
        if let Some(replies) = &self.relay_replies {
            replies.send_back(route, Some(id.to_string()), frame);
        }
    }

    /// Hands the page's answers and progress reports to the requests they belong to: the one
    /// reading of a page's frame, whether it came on the page's own socket or relayed from the node
    /// that holds it. Anything else comes back decoded (or why it could not be) for the caller;
    /// `None` when it was delivered.
    pub(crate) fn deliver_answer(&self, text: &str) -> Option<Result<Message, DecodeError>> {
        if let Some((id, result)) = protocol::read_answer(text) {
            self.resolve(&id, Ok(result));
            return None;
        }
        // An answer over the frame limit is refused, and the request it names ends at once with
        // an error naming the limit (crate::page::oversized), not at its timeout.
        if let Some((id, error)) = crate::page::oversized::refused_answer(text) {
            tracing::warn!(session = %self.id, request = %id, bytes = text.len(), "page answer over the frame limit refused");
            self.resolve(&id, Err(error));
            return None;
        }
        match protocol::decode(text) {
            Ok(Message::Response { id, result }) => {
                let result = result.map(|value| {
                    serde_json::value::to_raw_value(&value).expect("a JSON value always prints")
                });
                self.resolve(&id, result);
                None
            }
            Ok(Message::Notification { method, params }) if method == method::PROGRESS => {
                if let Ok(progress) = serde_json::from_value(params) {
                    self.progress(progress);
                }
                None
            }
            other => Some(other),
        }
    }

    /// How this session's page is reached: `None` while it is not connected.
    pub(crate) fn via(&self) -> Option<Via> {
        self.lock().connection.as_ref().map(|c| c.via.clone())
    }

    /// The generation of the current connection, if any.
    pub(crate) fn generation(&self) -> Option<u64> {
        self.lock().connection.as_ref().map(|c| c.generation)
    }

    /// A frame another cluster node sends this session's page through this node (which holds its
    /// socket). A request (`request_id`) is remembered so its answer and progress go back to
    /// `reply`. Refused (with the reason) when the page's socket is not here, the frame breaks the
    /// page's limits, or its queue is full.
    pub(crate) fn relay_to_page(
        &self,
        frame: String,
        request_id: Option<String>,
        reply: &str,
    ) -> Result<(), RelayRefused> {
        if self.via() != Some(Via::Socket) {
            return Err(RelayRefused::NotHere);
        }
        protocol::check_outgoing(&frame).map_err(|limit| {
            RelayRefused::Refused(format!("the call cannot be sent to the page: {limit}"))
        })?;
        // Outside the session's lock: conditions may take their time budget.
        let tools = self.page_tools();
        policy_gate::relayed(
            &self.policy,
            &frame,
            Who {
                session: &self.id,
                user: self.user.as_deref(),
            },
            &self.agent_tools,
            &tools,
            now(),
        )
        .map_err(|refused| match refused {
            policy_gate::Refused::Result(result) => RelayRefused::Answered(result),
            policy_gate::Refused::Error(error) => RelayRefused::Failed(error),
        })?;
        let mut state = self.lock();
        if state.connection.as_ref().map(|c| &c.via) != Some(&Via::Socket) {
            return Err(RelayRefused::NotHere);
        }
        let connection = state.connection.as_ref().ok_or(RelayRefused::NotHere)?;
        connection
            .outgoing
            .try_send(frame)
            .map_err(|full| RelayRefused::Refused(full.to_string()))?;
        if let Some(id) = request_id {
            state.routes.insert(id, reply.to_owned());
        }
        Ok(())
    }

    /// The current connection's generation (a new connection of the page is the next one): for
    /// tests that check a page did not reconnect.
    #[cfg(any(test, feature = "testing"))]
    pub fn generation_for_test(&self) -> Option<u64> {
        self.generation()
    }

    /// Closes the page's connection from the bridge side, as a network failure would (the page
    /// reconnects by itself).
    #[cfg(any(test, feature = "testing"))]
    pub fn drop_connection(&self) {
        if let Some(connection) = &self.lock().connection {
            connection.kill.notify_one();
        }
    }

    /// Sends every waiting call again with its id, as a runtime does after a reconnect: the page
    /// must answer each once.
    #[cfg(any(test, feature = "testing"))]
    pub fn resend_pending(&self) {
        self.lock().drive(RequestEngine::resend_pending);
    }
}
