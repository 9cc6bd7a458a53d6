//! A linked session's connection: its frames go through NATS to the node holding the page's
//! socket, each with a [`Reply`] subject naming this node, the session, the link and — for a
//! request — the request; the page's answers and progress come back there, and so does NATS's
//! "no responders" when that node does not serve the page (any more). Which node each linked
//! session's link goes to is kept in line with the directory here too (`Cluster::reconcile`):
//! linked anew when the page connects anywhere, dropped when its node goes silent or refuses it.

use std::sync::Arc;
use std::time::{Instant, UNIX_EPOCH};

use client_tools_core::protocol::{code, method, Message, RequestId, RpcError};
use client_tools_core::tabs::TabActivity;
use futures_util::StreamExt;
use serde::Deserialize;
use tokio::sync::Notify;

use super::node::{Cluster, LinkState};
use super::wire::{self, Entry, Reply};
use crate::calls::served;
use crate::ids::unix_ms;
use crate::limits::{NATS_HEADROOM_BYTES, REFUSED_LINK_BACKOFF};
use crate::page::connection_queue::{self, Outgoing, OutgoingReceiver};
use crate::sessions::page_session::{PageSession, Via, CLOSE_REPLACED};

impl Cluster {
    /// Brings a session's link in line with the directory: linked to the page's connection on the
    /// node that holds it, unlinked when it is connected nowhere (its waiting calls get the
    /// reconnect grace), and the page's tools as that node lists them.
    pub(super) fn reconcile(&self, session: &Arc<PageSession>) {
        let id = session.id();
        if session.via() == Some(Via::Socket) {
            self.links().remove(id);
            self.settle_two_owners(session);
            return;
        }
        let now = Instant::now();
        let owner = self.directory().owner(id, now).cloned();
        let mut links = self.links();
        let Some(entry) = owner else {
            if let Some(LinkState {
                generation: Some(generation),
                ..
            }) = links.remove(id)
            {
                session.detach(generation);
            }
            return;
        };
        let same_connection =
            |link: &LinkState| link.node == entry.node && link.owner_generation == entry.generation;
        let current = links.get(id);
        let linked = current.is_some_and(|link| {
            same_connection(link)
                && link.generation.is_some()
                && link.generation == session.generation()
        });
        let refused = current.is_some_and(|link| {
            same_connection(link)
                && link
                    .refused_at
                    .is_some_and(|at| now.duration_since(at) < REFUSED_LINK_BACKOFF)
        });
        if !linked && !refused {
            // A new connection of the page (on any node): linked anew, and the calls waiting
            // here are sent again on it with their ids.
            match attach(self, session, &entry) {
                Some(generation) => {
                    links.insert(
                        id.to_owned(),
                        LinkState {
                            node: entry.node.clone(),
                            owner_generation: entry.generation,
                            generation: Some(generation),
                            refused_at: None,
                            resubscribed: false,
                        },
                    );
                }
                None => {
                    links.remove(id);
                }
            }
        }
        // The page's handshake on its node is done: the resources this node's agents are
        // subscribed to are subscribed on this link (once per link; the page's node counts them).
        let resubscribe = entry.tools_listed
            && links
                .get_mut(id)
                .filter(|link| link.generation.is_some() && !link.resubscribed)
                .map(|link| link.resubscribed = true)
                .is_some();
        drop(links);
        if resubscribe {
            let session = session.clone();
            tokio::spawn(async move { session.resubscribe().await });
        }
        session.set_activity(TabActivity {
            visible: entry.visible,
            focused: entry.focused,
            in_front_at: entry.in_front_at_ms,
            connected_at: entry.connected_at_ms,
        });
        // Listed there, even none (a page that serves only resources and prompts): its handshake
        // is done, and nothing here waits for it.
        let tools_differ =
            !session.has_listed_tools() || session.page_tools()[..] != entry.tools[..];
        if entry.tools_listed && tools_differ {
            session.set_tools(entry.tools);
        }
        if let Some(served) = entry.served {
            let lists = [served.resources, served.templates, served.prompts];
            session.mirror_served(served.offered, lists);
        }
    }

    /// Two nodes holding a socket for one session (claims that raced): the older connection
    /// gives way — closed as replaced; its page, if still there, reconnects and is told the
    /// session is live elsewhere (a new session). Ties go to the node with the greater id.
    fn settle_two_owners(&self, session: &PageSession) {
        let Some(elsewhere) = self
            .directory()
            .owner(session.id(), Instant::now())
            .cloned()
        else {
            return;
        };
        let (Some(generation), Some(here)) = (session.generation(), session.connected_at()) else {
            return;
        };
        let here = (Some(unix_ms(here)), self.node.as_str());
        if here < (elsewhere.connected_at_ms, elsewhere.node.as_str()) {
            tracing::warn!(session = %session.id(), user = session.user().unwrap_or(""), node = %elsewhere.node, "this page session is connected to another node too: the older connection, here, is closed");
            session.close_generation(
                generation,
                CLOSE_REPLACED,
                "replaced by a newer connection of the same page session on another node",
            );
        }
    }

    pub(super) fn reconcile_all(&self) {
        for session in self.sessions.list() {
            if session.via() != Some(Via::Socket) {
                self.reconcile(&session);
            }
        }
    }

    /// A frame sent on link `reply.link` reached no node holding the page (NATS's "no
    /// responders", or the node no longer holds it): the request it carried ends "not connected"
    /// at once (it never reached the page), and the link is down until the directory says where
    /// the page is. Replies about an older link change nothing (its requests went again since).
    fn not_served(&self, reply: &Reply) {
        let Some(session) = self.sessions.get(&reply.session) else {
            return;
        };
        let mut links = self.links();
        let Some(link) = links
            .get_mut(&reply.session)
            .filter(|link| link.generation == Some(reply.link))
        else {
            return;
        };
        link.generation = None;
        link.refused_at = Some(Instant::now());
        drop(links);
        tracing::info!(session = %reply.session, user = session.user().unwrap_or(""), "the page's node does not serve it now");
        if let Some(request) = &reply.request {
            session.not_delivered(request);
        }
        session.detach(reply.link);
        self.reconcile(&session);
    }

    /// Links refused a while ago are tried again (the directory may still name the same node).
    pub(super) fn retry_refused_links(&self) {
        let now = Instant::now();
        let due: Vec<String> = self
            .links()
            .iter()
            .filter(|(_, link)| {
                link.refused_at
                    .is_some_and(|at| now.duration_since(at) >= REFUSED_LINK_BACKOFF)
            })
            .map(|(id, _)| id.clone())
            .collect();
        for id in due {
            if let Some(session) = self.sessions.get(&id) {
                self.reconcile(&session);
            }
        }
    }

    /// A node went silent: the links to it are down (their calls wait the reconnect grace for the
    /// page to show up on another node, where the directory may already say it is).
    pub(super) fn node_gone(&self, node: &str) {
        self.forget_node_subscriptions(node);
        for session in self.drop_links(|link| link.node == node) {
            self.reconcile(&session);
        }
    }

    /// Drops the links `which` picks (their sessions detached); returns those sessions.
    pub(super) fn drop_links(&self, which: impl Fn(&LinkState) -> bool) -> Vec<Arc<PageSession>> {
        let dropped: Vec<(String, Option<u64>)> = {
            let mut links = self.links();
            let ids: Vec<String> = links
                .iter()
                .filter(|(_, link)| which(link))
                .map(|(id, _)| id.clone())
                .collect();
            ids.into_iter()
                .filter_map(|id| links.remove(&id).map(|link| (id, link.generation)))
                .collect()
        };
        dropped
            .into_iter()
            .filter_map(|(id, generation)| {
                let session = self.sessions.get(&id)?;
                if let Some(generation) = generation {
                    session.detach(generation);
                }
                Some(session)
            })
            .collect()
    }

    /// Link records of sessions the table forgot (expired) go too.
    pub(super) fn forget_links_of_forgotten_sessions(&self) {
        self.links().retain(|id, _| self.sessions.get(id).is_some());
    }
}

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
            // The page's resource update, sent by its node to the nodes subscribed
            // (crate::cluster::subscriptions): this node's agents hear it.
            Some(Ok(Message::Notification { method, params }))
                if method == served::method::RESOURCES_UPDATED =>
            {
                if let Some(uri) = params.get("uri").and_then(|uri| uri.as_str()) {
                    session.resource_updated(uri.to_owned());
                }
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
