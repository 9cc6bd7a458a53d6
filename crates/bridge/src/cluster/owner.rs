//! The node holding a page's socket serves its session to the cluster while the socket lasts:
//! it announces the session (connected, tools) and takes the frames other nodes send the page,
//! and the claims of a new connection of the same page on another node.

use std::sync::Arc;

use client_tools_core::protocol::{code, encode_error, RequestId, RpcError};
use futures_util::StreamExt;

use super::wire;
use super::Cluster;
use crate::session::{PageSession, Via};
use crate::sessions::CLOSE_REPLACED;

/// Serves `session` (connected to this node's socket as `generation`) until that connection ends.
pub(super) async fn serve(cluster: Arc<Cluster>, session: Arc<PageSession>, generation: u64) {
    let id = session.id().to_owned();
    let subscribe = |subject: String| {
        let client = cluster.client.clone();
        async move {
            client
                .queue_subscribe(subject, wire::OWNER_GROUP.to_owned())
                .await
        }
    };
    let (mut frames, mut claims) = match (
        subscribe(wire::page_frames(&id)).await,
        subscribe(wire::page_claim(&id)).await,
    ) {
        (Ok(frames), Ok(claims)) => (frames, claims),
        (Err(error), _) | (_, Err(error)) => {
            tracing::error!(session = %id, %error, "cannot serve this page to the cluster");
            return;
        }
    };
    let mut changes = session.subscribe();
    cluster.announce(&session);
    let mut announced = session.page_tools();
    loop {
        tokio::select! {
            Some(message) = frames.next() => relay(&cluster, &session, message),
            Some(message) = claims.next() => {
                let probe = cluster.config.limits.takeover_probe;
                let publisher = cluster.publisher.clone();
                let session = session.clone();
                tokio::spawn(async move {
                    let Some(reply) = message.reply else { return };
                    let live = session.via() == Some(Via::Socket) && session.is_answering(probe).await;
                    if !live {
                        session.close_connection(
                            CLOSE_REPLACED,
                            "replaced by a newer connection of the same page session",
                        );
                    }
                    let answer = if live { wire::CLAIM_LIVE } else { wire::CLAIM_RELEASED };
                    publisher.send(wire::Outbound::frame(reply.to_string(), answer.to_owned()));
                });
            }
            changed = changes.changed() => {
                if changed.is_err()
                    || session.generation() != Some(generation)
                    || session.via() != Some(Via::Socket)
                {
                    break;
                }
                let tools = session.page_tools();
                if !Arc::ptr_eq(&tools, &announced) {
                    announced = tools;
                    cluster.announce(&session);
                }
            }
        }
    }
    drop((frames, claims));
    // Another connection of this page on this node has taken over: it announces itself.
    if session.via() != Some(Via::Socket) {
        cluster.announce(&session);
    }
}

/// A frame another node sends the page. Only from a live node with this node's access settings,
/// for this session; a request that cannot be delivered is answered with the reason at once.
fn relay(cluster: &Cluster, session: &PageSession, message: async_nats::Message) {
    let Some(reply) = message.reply.as_deref() else {
        return;
    };
    let from = reply
        .strip_prefix("clienttools.node.")
        .and_then(|rest| rest.split('.').next())
        .unwrap_or_default();
    if reply != wire::node_inbox(from, session.id())
        || !cluster
            .directory()
            .is_alive(from, std::time::Instant::now())
    {
        tracing::warn!(session = %session.id(), %reply, "frame from an unknown or untrusted node ignored");
        return;
    }
    let request_id = message
        .headers
        .as_ref()
        .and_then(|headers| headers.get(wire::REQUEST_ID))
        .map(|id| id.as_str().to_owned());
    let Ok(frame) = String::from_utf8(message.payload.to_vec()) else {
        return;
    };
    if let Err(reason) = session.relay_to_page(frame, request_id.clone(), reply) {
        if let Some(id) = request_id {
            let answer = error_frame(&id, &reason);
            cluster
                .publisher
                .send(wire::Outbound::frame(reply.to_owned(), answer));
        }
    }
}

/// A JSON-RPC error answer to request `id`.
pub(super) fn error_frame(id: &str, message: &str) -> String {
    let error = RpcError::new(code::INTERNAL_ERROR, message.to_owned());
    encode_error(Some(&RequestId::String(id.to_owned())), &error)
}
