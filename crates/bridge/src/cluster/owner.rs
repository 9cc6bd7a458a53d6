//! The node holding a page's socket serves its session to the cluster while the socket lasts:
//! it announces the session (connected, tools, what it offers besides tools and its lists),
//! takes the frames other nodes send the page (one subscription for all of this node's pages:
//! [`receive`]; resource subscriptions counted here, crate::cluster::subscriptions), sends the
//! page's resource updates to the nodes subscribed, and answers the claims of a new connection of
//! the same page on another node.

use std::sync::Arc;

use client_tools_core::protocol::{code, encode_error, encode_result, RequestId, RpcError};
use futures_util::StreamExt;
use tokio::sync::{watch, Semaphore};

use super::node::Cluster;
use super::wire::{self, Reply};
use crate::limits::MAX_CLAIMS_WAITING;
use crate::sessions::page_session::{
    Offered, PageSession, RelayRefused, Via, CLOSE_REPLACED, LIST_METHODS,
};
use serde_json::Value;

/// Serves `session` (connected to this node's socket as `generation`) until that connection ends.
/// `changes` was subscribed when the socket attached, so no change since is missed.
pub(super) async fn serve(
    cluster: Arc<Cluster>,
    session: Arc<PageSession>,
    generation: u64,
    mut changes: watch::Receiver<u64>,
) {
    let id = session.id().to_owned();
    let claims = cluster
        .client
        .queue_subscribe(wire::page_claim(&id), wire::OWNER_GROUP.to_owned())
        .await;
    let mut claims = match claims {
        Ok(claims) => claims,
        Err(error) => {
            tracing::error!(session = %id, user = session.user().unwrap_or(""), %error, "cannot serve this page to the cluster");
            return;
        }
    };
    let serving = |session: &PageSession| {
        session.generation() == Some(generation) && session.via() == Some(Via::Socket)
    };
    // Subscribed now: no update of the page's while it is served here is missed.
    let mut updates = session.resource_updates();
    if serving(&session) {
        cluster.announce(&session);
        let mut announced = session.page_tools();
        let mut announced_served = served_now(&session);
        let waiting = Arc::new(Semaphore::new(MAX_CLAIMS_WAITING));
        let probing = Arc::new(tokio::sync::Mutex::new(()));
        loop {
            tokio::select! {
                Some(message) = claims.next() => {
                    let Some(reply) = message.reply else { continue };
                    let Ok(permit) = waiting.clone().try_acquire_owned() else {
                        let answer = wire::Outbound::frame(reply.to_string(), wire::CLAIM_LIVE.to_owned());
                        cluster.publisher.send(answer);
                        continue;
                    };
                    let (cluster, session, probing) = (cluster.clone(), session.clone(), probing.clone());
                    tokio::spawn(async move {
                        let _permit = permit;
                        let _one_at_a_time = probing.lock().await;
                        let answer = answer_claim(&cluster, &session).await;
                        cluster.publisher.send(wire::Outbound::frame(reply.to_string(), answer.to_owned()));
                    });
                }
                Ok(uri) = updates.recv() => cluster.forward_update(&id, generation, &uri),
                changed = changes.changed() => {
                    if changed.is_err() || !serving(&session) {
                        break;
                    }
                    let tools = session.page_tools();
                    let served = served_now(&session);
                    if !Arc::ptr_eq(&tools, &announced) || served != announced_served {
                        announced = tools;
                        announced_served = served;
                        cluster.announce(&session);
                    }
                }
            }
        }
    }
    drop(claims);
    cluster.forget_subscribers(&session, generation);
    // Another connection of this page on this node has taken over: it announces itself.
    if session.via() != Some(Via::Socket) {
        cluster.announce(&session);
    }
}

/// What the page offers besides tools and its lists, as this node read them: announced again
/// when they change (linked sessions elsewhere keep them, and their agents hear `list_changed`).
type ServedNow = (Option<Offered>, [Option<Arc<[Value]>>; 3]);

fn served_now(session: &PageSession) -> ServedNow {
    (
        session.offered(),
        LIST_METHODS.map(|method| session.listed(method)),
    )
}

/// Whether the page's connection here still answers: if not, it is closed and the session is
/// released to the node that asked.
async fn answer_claim(cluster: &Cluster, session: &PageSession) -> &'static str {
    let probed = session.generation();
    let live = session.via() == Some(Via::Socket)
        && session
            .is_answering(cluster.config.limits.takeover_probe)
            .await;
    if live {
        return wire::CLAIM_LIVE;
    }
    if let Some(generation) = probed {
        session.close_generation(
            generation,
            CLOSE_REPLACED,
            "replaced by a newer connection of the same page session",
        );
    }
    wire::CLAIM_RELEASED
}

/// The frames other nodes send this node's pages, in the order they come.
pub(super) async fn receive(cluster: Arc<Cluster>, mut frames: async_nats::Subscriber) {
    while let Some(message) = frames.next().await {
        relay(&cluster, message).await;
    }
}

/// A frame another node sends a page: only from a node with this node's access settings, for the
/// session its subject names. One that cannot be delivered because the socket is not here is
/// answered "not served" (its sender looks for the page again); one the page's limits refuse,
/// with the reason.
async fn relay(cluster: &Arc<Cluster>, message: async_nats::Message) {
    let Some(reply) = message.reply.as_deref().and_then(Reply::parse) else {
        return;
    };
    let Some(id) = wire::session_of_frames(&message.subject) else {
        return;
    };
    if reply.session != id || !cluster.directory().trusted(&reply.node) {
        let session = cluster.sessions.get(id);
        let user = session.as_deref().and_then(PageSession::user).unwrap_or("");
        tracing::warn!(session = %id, user, node = %reply.node, "frame from an unknown or untrusted node ignored");
        return;
    }
    let Ok(frame) = String::from_utf8(message.payload.to_vec()) else {
        return;
    };
    let subject = reply.subject();
    let relayed = match cluster.sessions.get(id) {
        // A resource subscription is counted with this node's own (crate::cluster::subscriptions).
        Some(session) if cluster.relayed_subscription(&session, &reply, &frame) => Ok(()),
        Some(session) => session.relay_to_page(frame, reply.request.clone(), &subject),
        None => Err(RelayRefused::NotHere),
    };
    match relayed {
        Ok(()) => {}
        Err(RelayRefused::NotHere) => {
            let mut headers = async_nats::HeaderMap::new();
            headers.insert(wire::NOT_SERVED, "1");
            let _ = cluster
                .client
                .publish_with_headers(subject, headers, bytes::Bytes::new())
                .await;
        }
        Err(RelayRefused::Answered(result)) => {
            if let Some(id) = &reply.request {
                let answer = encode_result(&RequestId::String(id.clone()), &result);
                cluster
                    .publisher
                    .send(wire::Outbound::frame(subject, answer));
            }
        }
        Err(RelayRefused::Failed(error)) => {
            if let Some(id) = &reply.request {
                let answer = encode_error(Some(&RequestId::String(id.clone())), &error);
                cluster
                    .publisher
                    .send(wire::Outbound::frame(subject, answer));
            }
        }
        Err(RelayRefused::Refused(reason)) => {
            if let Some(id) = &reply.request {
                let answer = error_frame(id, &reason);
                cluster
                    .publisher
                    .send(wire::Outbound::frame(subject, answer));
            }
        }
    }
}

/// A JSON-RPC error answer to request `id`.
pub(super) fn error_frame(id: &str, message: &str) -> String {
    let error = RpcError::new(code::INTERNAL_ERROR, message.to_owned());
    encode_error(Some(&RequestId::String(id.to_owned())), &error)
}
