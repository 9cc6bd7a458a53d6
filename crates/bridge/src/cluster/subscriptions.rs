//! Resource subscriptions across nodes (SPEC §11): a page hears `resources/subscribe` for a URI
//! once and `resources/unsubscribe` when its last subscriber leaves, whichever node its agents
//! are on. An agent on node B subscribes on B's linked session, which counts B's agents and sends
//! the first subscribe and the last unsubscribe of a URI through its link to node A, which holds
//! the page's socket. A takes each as one subscriber more or less on its own session (so the
//! page hears the first of all nodes and the last), remembers which node subscribed to what —
//! for the page's connection here, by its generation — and sends each such node the page's
//! `notifications/resources/updated` of those URIs to the inbox of its link, where the linked
//! session tells its agents as a page on a socket does (crate::cluster::link). A node that goes
//! silent has its subscriptions ended; when the page's connection here ends, what other nodes
//! subscribed on it is forgotten, and each linked session subscribes again on its next link
//! (`Cluster::reconcile`).

use std::sync::Arc;

use client_tools_core::protocol::{encode_error, encode_result, RequestId, RpcError};
use serde::Deserialize;
use serde_json::json;

use super::node::{Cluster, SubscribersOf};
use super::wire::{Outbound, Reply};
use crate::calls::served::method;
use crate::sessions::page_session::{PageSession, Via};

/// A subscribe or unsubscribe frame another node sends a page.
#[derive(Deserialize)]
struct Frame {
    id: RequestId,
    method: String,
    params: UriParams,
}

#[derive(Deserialize)]
struct UriParams {
    uri: String,
}

impl Cluster {
    /// A frame node `reply.node` sends `session`'s page: when it is a `resources/subscribe` or
    /// `resources/unsubscribe`, taken here (counted on `session`, answered to `reply`) instead of
    /// relayed, and `true`.
    pub(super) fn relayed_subscription(
        self: &Arc<Self>,
        session: &Arc<PageSession>,
        reply: &Reply,
        frame: &str,
    ) -> bool {
        let Some(generation) = session.generation() else {
            return false;
        };
        if reply.request.is_none() || session.via() != Some(Via::Socket) {
            return false;
        }
        let Ok(frame) = serde_json::from_str::<Frame>(frame) else {
            return false;
        };
        let answer_to = reply.subject();
        let answer = {
            let publisher = self.publisher.clone();
            move |outcome: Result<(), RpcError>| {
                let frame = match outcome {
                    Ok(()) => encode_result(&frame.id, &json!({})),
                    Err(error) => encode_error(Some(&frame.id), &error),
                };
                publisher.send(Outbound::frame(answer_to, frame));
            }
        };
        let (uri, node) = (frame.params.uri.clone(), reply.node.clone());
        match frame.method.as_str() {
            method::RESOURCES_SUBSCRIBE => {
                let inbox = Reply {
                    request: None,
                    ..reply.clone()
                }
                .subject();
                let (first, stale) = {
                    let mut subscribers = self.subscribers.lock();
                    let of = subscribers
                        .entry(session.id().to_owned())
                        .or_insert_with(|| SubscribersOf {
                            generation,
                            uris: Default::default(),
                        });
                    // Those of the page's previous connection here, not forgotten yet.
                    let stale = match of.generation == generation {
                        true => Default::default(),
                        false => {
                            of.generation = generation;
                            std::mem::take(&mut of.uris)
                        }
                    };
                    let nodes = of.uris.entry(uri.clone()).or_default();
                    (nodes.insert(node.clone(), inbox).is_none(), stale)
                };
                for (uri, nodes) in stale {
                    for _ in nodes {
                        session.forget_subscription(&uri);
                    }
                }
                if !first {
                    answer(Ok(()));
                    return true;
                }
                let (cluster, session) = (self.clone(), session.clone());
                tokio::spawn(async move {
                    let outcome = session.subscribe_relayed(&uri).await;
                    if outcome.is_err() {
                        cluster.remove_subscriber(session.id(), generation, &uri, &node);
                    }
                    answer(outcome);
                });
            }
            method::RESOURCES_UNSUBSCRIBE => {
                let removed = self.remove_subscriber(session.id(), generation, &uri, &node);
                answer(Ok(()));
                if removed {
                    let session = session.clone();
                    tokio::spawn(async move { session.unsubscribe_resource(&uri).await });
                }
            }
            _ => return false,
        }
        true
    }

    /// Node `node` no longer subscribed to `uri` of `session` on the page's connection
    /// `generation`: whether it was.
    fn remove_subscriber(&self, session: &str, generation: u64, uri: &str, node: &str) -> bool {
        let mut subscribers = self.subscribers.lock();
        let Some(of) = subscribers
            .get_mut(session)
            .filter(|of| of.generation == generation)
        else {
            return false;
        };
        let removed = of
            .uris
            .get_mut(uri)
            .is_some_and(|nodes| nodes.remove(node).is_some());
        of.uris.retain(|_, nodes| !nodes.is_empty());
        if of.uris.is_empty() {
            subscribers.remove(session);
        }
        removed
    }

    /// The page of `session` (on its connection `generation` here) updated `uri`: the nodes
    /// subscribed to it hear it.
    pub(super) fn forward_update(&self, session: &str, generation: u64, uri: &str) {
        let inboxes: Vec<String> = {
            let subscribers = self.subscribers.lock();
            let nodes = subscribers
                .get(session)
                .filter(|of| of.generation == generation)
                .and_then(|of| of.uris.get(uri));
            nodes.map(|nodes| nodes.values().cloned().collect())
        }
        .unwrap_or_default();
        if inboxes.is_empty() {
            return;
        }
        let notification = json!({
            "jsonrpc": "2.0",
            "method": method::RESOURCES_UPDATED,
            "params": {"uri": uri},
        })
        .to_string();
        for inbox in inboxes {
            self.publisher
                .send(Outbound::frame(inbox, notification.clone()));
        }
    }

    /// The page's connection `generation` here ended: what other nodes subscribed on it is no
    /// longer counted (they subscribe again on their next link).
    pub(super) fn forget_subscribers(&self, session: &Arc<PageSession>, generation: u64) {
        let forgotten = {
            let mut subscribers = self.subscribers.lock();
            match subscribers.get(session.id()) {
                Some(of) if of.generation == generation => subscribers.remove(session.id()),
                _ => None,
            }
        };
        for (uri, nodes) in forgotten.map(|of| of.uris).unwrap_or_default() {
            for _ in nodes {
                session.forget_subscription(&uri);
            }
        }
    }

    /// Node `node` went silent: its subscriptions end (the last one of a URI tells the page).
    pub(super) fn forget_node_subscriptions(&self, node: &str) {
        let ended: Vec<(String, String)> = {
            let mut subscribers = self.subscribers.lock();
            let mut ended = Vec::new();
            for (session, of) in subscribers.iter_mut() {
                for (uri, nodes) in of.uris.iter_mut() {
                    if nodes.remove(node).is_some() {
                        ended.push((session.clone(), uri.clone()));
                    }
                }
                of.uris.retain(|_, nodes| !nodes.is_empty());
            }
            subscribers.retain(|_, of| !of.uris.is_empty());
            ended
        };
        for (session, uri) in ended {
            if let Some(session) = self.sessions.get(&session) {
                tokio::spawn(async move { session.unsubscribe_resource(&uri).await });
            }
        }
    }
}
