//! A linked session's connection: its frames go through NATS to the node holding the page's
//! socket, each with a [`Reply`] subject naming this node, the session, the link and — for a
//! request — the request; the page's answers and progress come back there, and so does NATS's
//! "no responders" when that node does not serve the page (any more).

use std::sync::Arc;
use std::time::UNIX_EPOCH;

use client_tools_core::protocol::{code, method, Message, RequestId, RpcError};
use futures_util::StreamExt;
use serde::Deserialize;
use tokio::sync::Notify;

use super::wire::{self, Entry, Reply};
use super::Cluster;
use crate::limits::NATS_HEADROOM_BYTES;
use crate::page::connection_queue::{self, Outgoing, OutgoingReceiver};
use crate::sessions::page_session::PageSession;

/// Links `session` to the node `entry` says holds its page: the link's generation, or `None`
/// when the page's socket is on this node now.
pub(super) fn attach(cluster: &Cluster, session: &Arc<PageSession>, entry: &Entry) -> Option<u64> {
    let limits = &cluster.config.limits;
    let (sender, queue) =
        connection_queue::channel(limits.outgoing_queue_frames, limits.outgoing_queue_bytes);
    let kill = Arc::new(Notify::new());
    let connected_at =
        UNIX_EPOCH + std::time::Duration::from_millis(entry.connected_at_ms.unwrap_or_default());
    let generation = session.attach_link(sender, kill.clone(), entry.node.clone(), connected_at)?;
    tracing::info!(session = %session.id(), user = session.user().unwrap_or(""), node = %entry.node, "linked to the page's node");
    let link = Link {
        client: cluster.client.clone(),
        subject: wire::serve_frames(&entry.node, session.id()),
        reply: Reply {
            node: cluster.node.clone(),
            session: session.id().to_owned(),
            link: generation,
            request: None,
        },
        max_payload: cluster.max_payload,
    };
    tokio::spawn(link.forward(session.clone(), queue, kill));
    Some(generation)
}

struct Link {
    client: async_nats::Client,
    /// Where the page's node takes its frames.
    subject: String,
    reply: Reply,
    max_payload: usize,
}

impl Link {
    /// Publishes what the session queues for its page until the link is replaced or dropped.
    async fn forward(
        self,
        session: Arc<PageSession>,
        mut queue: OutgoingReceiver,
        kill: Arc<Notify>,
    ) {
        loop {
            let item = tokio::select! {
                item = queue.recv() => item,
                () = kill.notified() => None,
            };
            let frame = match item {
                None => return,
                // Closing is the page's node's business (a takeover asks it: Cluster::claim).
                Some(Outgoing::Close { .. }) => continue,
                Some(Outgoing::Frame(frame)) => frame,
            };
            // While NATS is away nothing is handed to its client to send later: the links are
            // down then (Cluster::watch), and a waiting request goes again on the next link or
            // fails at its deadline — never delivered after its caller was told it failed.
            if self.client.connection_state() != async_nats::connection::State::Connected {
                continue;
            }
            let request = request_id_of(&frame).filter(|id| wire::is_request_id(id));
            if frame.len() + NATS_HEADROOM_BYTES > self.max_payload {
                if let Some(id) = request {
                    let error = RpcError::new(
                        code::INVALID_REQUEST,
                        format!(
                            "the call is {} bytes, above what the cluster's NATS server carries \
                             ({} bytes, its max_payload)",
                            frame.len(),
                            self.max_payload
                        ),
                    );
                    session.resolve(&RequestId::String(id), Err(error));
                }
                continue;
            }
            let reply = Reply {
                request,
                ..self.reply.clone()
            };
            let sent = self
                .client
                .publish_with_reply(self.subject.clone(), reply.subject(), frame.into())
                .await;
            if let Err(error) = sent {
                tracing::warn!(session = %session.id(), user = session.user().unwrap_or(""), %error, "frame for a page on another node not sent");
            }
        }
    }
}

/// The id of a request frame (the bridge's ids are strings); `None` for a notification.
fn request_id_of(frame: &str) -> Option<String> {
    #[derive(Deserialize)]
    struct Head {
        id: Option<String>,
        method: Option<serde::de::IgnoredAny>,
    }
    let head: Head = serde_json::from_str(frame).ok()?;
    head.method.and(head.id)
}

/// This node's inbox: the answers and progress of the pages its linked sessions reach, and the
/// frames no node took.
pub(super) async fn receive(cluster: Arc<Cluster>, mut inbox: async_nats::Subscriber) {
    while let Some(message) = inbox.next().await {
        let Some(reply) = Reply::parse(&message.subject) else {
            continue;
        };
        let not_served = message
            .headers
            .as_ref()
            .is_some_and(|headers| headers.get(wire::NOT_SERVED).is_some());
        if not_served || message.status == Some(async_nats::StatusCode::NO_RESPONDERS) {
            cluster.not_served(&reply);
            continue;
        }
        let Some(session) = cluster.sessions.get(&reply.session) else {
            continue;
        };
        // The page's answer or progress, relayed, goes to the request it belongs to; its rounds
        // and log messages about a call of this node to the caller waiting on it; anything else
        // is ignored (only requests this node sent are waiting).
        let Ok(text) = std::str::from_utf8(&message.payload) else {
            continue;
        };
        match session.deliver_answer(text) {
            Some(Ok(Message::Request { id, method, params })) if method == method::INPUT => {
                if let Some(error) = session.page_input(id.clone(), params) {
                    session.refuse_page_request(&id, &error);
                }
            }
            Some(Ok(Message::Notification { method, params })) if method == method::MESSAGE => {
                session.page_log(params)
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_told_from_notifications() {
        let request = r#"{"jsonrpc":"2.0","id":"abc-1","method":"tools/call","params":{}}"#;
        assert_eq!(request_id_of(request).as_deref(), Some("abc-1"));
        let notification = r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{}}"#;
        assert_eq!(request_id_of(notification), None);
        assert_eq!(request_id_of("not json"), None);
    }
}
