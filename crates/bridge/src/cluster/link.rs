//! A linked session's connection: its frames go through NATS to the node holding the page's
//! socket (with this node's inbox as the reply subject), and the page's answers and progress come
//! back to that inbox.

use std::sync::Arc;
use std::time::UNIX_EPOCH;

use client_tools_core::protocol::{self, code, Message as Rpc, RequestId, RpcError};
use futures_util::StreamExt;
use serde::Deserialize;
use tokio::sync::Notify;

use super::wire::{self, Entry};
use super::Cluster;
use crate::outgoing::{self, Outgoing, OutgoingReceiver};
use crate::page_answer;
use crate::session::{PageSession, Via};

/// Bytes a relayed frame's headers and subjects may take beyond the frame, within NATS's limit.
const ENVELOPE_BYTES: usize = 512;

/// Links `session` to the node `entry` says holds its page: returns the connection's generation.
pub(super) fn attach(cluster: &Cluster, session: &Arc<PageSession>, entry: &Entry) -> u64 {
    let limits = &cluster.config.limits;
    let (sender, queue) =
        outgoing::channel(limits.outgoing_queue_frames, limits.outgoing_queue_bytes);
    let kill = Arc::new(Notify::new());
    let connected_at =
        UNIX_EPOCH + std::time::Duration::from_millis(entry.connected_at_ms.unwrap_or_default());
    let generation = session.attach_via(
        sender,
        kill.clone(),
        Via::Node(entry.node.clone()),
        connected_at,
    );
    tracing::info!(session = %session.id(), node = %entry.node, "linked to the page's node");
    tokio::spawn(forward(
        cluster.client.clone(),
        cluster.node.clone(),
        cluster.max_payload,
        session.clone(),
        queue,
        kill,
    ));
    generation
}

/// Publishes what the session queues for its page until the link is replaced or dropped.
async fn forward(
    client: async_nats::Client,
    node: String,
    max_payload: usize,
    session: Arc<PageSession>,
    mut queue: OutgoingReceiver,
    kill: Arc<Notify>,
) {
    let subject = wire::page_frames(session.id());
    let reply = wire::node_inbox(&node, session.id());
    loop {
        let item = tokio::select! {
            item = queue.recv() => item,
            () = kill.notified() => None,
        };
        let frame = match item {
            None => return,
            // Closing is the page's node's business (a takeover asks it: crate::cluster::claim).
            Some(Outgoing::Close { .. }) => continue,
            Some(Outgoing::Frame(frame)) => frame,
        };
        // While NATS is away, nothing is handed to its client to send later: a request waits
        // for the link to come back (then it is sent again) or fails at its deadline, and is
        // never delivered after its caller was told it failed.
        if client.connection_state() != async_nats::connection::State::Connected {
            continue;
        }
        let request_id = request_id_of(&frame);
        if frame.len() + ENVELOPE_BYTES > max_payload {
            if let Some(id) = request_id {
                let error = RpcError::new(
                    code::INVALID_REQUEST,
                    format!(
                        "the call is {} bytes, above what the cluster's NATS server carries \
                         ({max_payload} bytes, its max_payload)",
                        frame.len()
                    ),
                );
                session.resolve(&RequestId::String(id), Err(error));
            }
            continue;
        }
        let mut headers = async_nats::HeaderMap::new();
        if let Some(id) = &request_id {
            headers.insert(wire::REQUEST_ID, id.as_str());
        }
        let sent = client
            .publish_with_reply_and_headers(subject.clone(), reply.clone(), headers, frame.into())
            .await;
        if let Err(error) = sent {
            tracing::warn!(session = %session.id(), %error, "frame for a page on another node not sent");
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

/// This node's inbox: answers and progress of the pages its linked sessions reach, and NATS's
/// "no responders" when nobody serves a page any more.
pub(super) async fn receive(cluster: Arc<Cluster>, mut inbox: async_nats::Subscriber) {
    while let Some(message) = inbox.next().await {
        let Some(id) = wire::session_of_inbox(&message.subject) else {
            continue;
        };
        if message.status == Some(async_nats::StatusCode::NO_RESPONDERS) {
            cluster.link_lost(id);
            continue;
        }
        let Some(session) = cluster.sessions.get(id) else {
            continue;
        };
        if let Ok(text) = std::str::from_utf8(&message.payload) {
            answer(&session, text);
        }
    }
}

/// The page's answer or progress, relayed: to the waiting request it belongs to (anything else
/// is ignored — only requests this node sent are waiting).
fn answer(session: &PageSession, text: &str) {
    if let Some((id, result)) = page_answer::read(text) {
        return session.resolve(&id, Ok(result));
    }
    match protocol::decode(text) {
        Ok(Rpc::Response { id, result }) => {
            let result = result.map(|value| {
                serde_json::value::to_raw_value(&value).expect("a JSON value always prints")
            });
            session.resolve(&id, result);
        }
        Ok(Rpc::Notification { method, params }) if method == protocol::method::PROGRESS => {
            if let Ok(progress) = serde_json::from_value(params) {
                session.progress(progress);
            }
        }
        _ => {}
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
