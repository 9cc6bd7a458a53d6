//! What the nodes of a cluster say to each other on NATS, and on which subjects
//! (docs/deploy.md, *A cluster*). Core NATS only: request-reply and plain subjects, no JetStream.
//!
//! | subject | what |
//! |---|---|
//! | `clienttools.page.<session>.frames` | frames for a page, to the node holding its socket (reply: the sender's inbox) |
//! | `clienttools.page.<session>.claim` | "may this page's new connection take the session over?" (request-reply) |
//! | `clienttools.node.<node>.page.<session>` | a node's inbox: the page's answers and progress |
//! | `clienttools.directory` | a node's page session changed ([`Entry`]) |
//! | `clienttools.heartbeat` | a node is alive, and with which access settings ([`Heartbeat`]) |
//! | `clienttools.hello` | a node (re)joined: every node publishes its sessions again |

use bytes::Bytes;
use client_tools_core::protocol::Tool;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

pub(crate) const DIRECTORY: &str = "clienttools.directory";
pub(crate) const HEARTBEAT: &str = "clienttools.heartbeat";
pub(crate) const HELLO: &str = "clienttools.hello";
/// The queue group of the subjects a page's node serves: one node answers, even in a race.
pub(crate) const OWNER_GROUP: &str = "owner";
/// The header naming the request a relayed frame carries (its answer goes back to the sender).
pub(crate) const REQUEST_ID: &str = "Clienttools-Request-Id";
/// Answers to a claim.
pub(crate) const CLAIM_LIVE: &str = "live";
pub(crate) const CLAIM_RELEASED: &str = "released";

pub(crate) fn page_frames(session: &str) -> String {
    format!("clienttools.page.{session}.frames")
}

pub(crate) fn page_claim(session: &str) -> String {
    format!("clienttools.page.{session}.claim")
}

pub(crate) fn node_inbox(node: &str, session: &str) -> String {
    format!("clienttools.node.{node}.page.{session}")
}

pub(crate) fn node_inboxes(node: &str) -> String {
    format!("clienttools.node.{node}.page.*")
}

/// The session id at the end of a node inbox subject, if it is one the bridge could have made.
pub(crate) fn session_of_inbox(subject: &str) -> Option<&str> {
    let session = subject.rsplit('.').next()?;
    is_session_id(session).then_some(session)
}

/// Session ids are 32 lowercase hex digits (crate::sessions); node ids 16. Anything else read
/// from NATS is ignored: it never becomes part of a subject.
pub(crate) fn is_session_id(id: &str) -> bool {
    id.len() == 32 && is_hex(id)
}

pub(crate) fn is_node_id(id: &str) -> bool {
    id.len() == 16 && is_hex(id)
}

fn is_hex(id: &str) -> bool {
    id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// One page session as the node holding it describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Entry {
    pub node: String,
    pub session: String,
    /// Increases with every entry the node publishes: a later one replaces an earlier one.
    pub seq: u64,
    pub connected: bool,
    pub connected_at_ms: Option<u64>,
    /// The page answered `tools/list` (its handshake is done).
    pub tools_listed: bool,
    /// The page's own tools, as it listed them.
    pub tools: Vec<Tool>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Heartbeat {
    pub node: String,
    /// A digest of the node's access settings: nodes that differ do not serve each other.
    pub policy: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Hello {
    pub node: String,
}

/// One message for NATS.
#[derive(Debug)]
pub(crate) struct Outbound {
    pub subject: String,
    pub reply: Option<String>,
    pub request_id: Option<String>,
    pub payload: Bytes,
}

impl Outbound {
    pub(crate) fn frame(subject: String, frame: String) -> Self {
        Self {
            subject,
            reply: None,
            request_id: None,
            payload: Bytes::from(frame),
        }
    }

    pub(crate) fn json(subject: &str, value: &impl Serialize) -> Self {
        let payload = serde_json::to_vec(value).unwrap_or_default();
        Self {
            subject: subject.to_owned(),
            reply: None,
            request_id: None,
            payload: Bytes::from(payload),
        }
    }
}

/// Puts messages on NATS in the order given, from code that cannot wait (under a session's lock):
/// one task publishes them. When NATS cannot take them as fast, the queue fills and a message is
/// dropped with a warning — a relayed call then ends at its caller's deadline.
#[derive(Clone)]
pub(crate) struct Publisher(mpsc::Sender<Outbound>);

/// Messages waiting for the publishing task.
pub(crate) const PUBLISH_QUEUE: usize = 65_536;

impl Publisher {
    pub(crate) fn new() -> (Self, mpsc::Receiver<Outbound>) {
        let (sender, receiver) = mpsc::channel(PUBLISH_QUEUE);
        (Self(sender), receiver)
    }

    pub(crate) fn send(&self, message: Outbound) {
        if let Err(error) = self.0.try_send(message) {
            tracing::warn!(subject = %error.into_inner().subject, "cluster message dropped: the queue to NATS is full");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_ids_the_bridge_makes_become_subjects() {
        let id = "0123456789abcdef0123456789abcdef";
        assert_eq!(
            session_of_inbox(&node_inbox("0123456789abcdef", id)),
            Some(id)
        );
        for hostile in ["*", ">", "a.b", "0123456789ABCDEF0123456789ABCDEF", ""] {
            assert!(!is_session_id(hostile), "{hostile}");
            assert_eq!(
                session_of_inbox(&format!("clienttools.node.x.page.{hostile}")),
                None
            );
        }
        assert!(is_node_id("0123456789abcdef") && !is_node_id("0123456789abcde*"));
    }
}
