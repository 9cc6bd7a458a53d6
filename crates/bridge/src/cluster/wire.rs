//! What the nodes of a cluster say to each other on NATS, and on which subjects
//! (docs/deploy.md, *A cluster*). Core NATS only: request-reply and plain subjects, no JetStream.
//!
//! | subject | what |
//! |---|---|
//! | `clienttools.node.<node>.serve.<session>` | frames for a page, to the node holding its socket (reply: the sender's [`Reply`] subject) |
//! | `clienttools.node.<node>.reply.<session>.<link>[.<request>]` | a node's inbox: the page's answer to `<request>`, its progress; the page's resource updates the node subscribed to (crate::cluster::subscriptions); NATS's "no responders" |
//! | `clienttools.node.<node>.rounds.retry` | a retry of a call (a tool call or a served request) suspended on a round, to the node keeping it (reply: the sender's [`round_stream`]) |
//! | `clienttools.node.<node>.rounds.cancel` | the agent gave up on a relayed retry (payload: its stream) |
//! | `clienttools.node.<node>.round.<token>` | what the keeping node sends back about a relayed retry: progress, logs, its outcome |
//! | `clienttools.node.<node>.tasks` | `tasks/get`, `tasks/update`, `tasks/cancel` of a task `<node>` keeps (request-reply, crate::cluster::tasks) |
//! | `clienttools.page.<session>.claim` | "may this page's new connection take the session over?" (request-reply, queue group `owner`) |
//! | `clienttools.directory` | a node's page session changed (its connection, tools, resources and prompts), or is announced again ([`Entry`]) |
//! | `clienttools.heartbeat` | a node is alive, and with which access settings ([`Heartbeat`]) |
//! | `clienttools.hello` | a node (re)joined: every node publishes its sessions again |

use bytes::Bytes;
use client_tools_core::protocol::Tool;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::limits::NATS_PUBLISH_QUEUE;
use crate::sessions::page_session::{Offered, RelayReplies};

/// The subjects every node listens on (the table above).
pub(crate) const DIRECTORY_SUBJECT: &str = "clienttools.directory";
pub(crate) const HEARTBEAT_SUBJECT: &str = "clienttools.heartbeat";
pub(crate) const HELLO_SUBJECT: &str = "clienttools.hello";
/// The queue group of the claim subject: one node answers, even in a race.
pub(crate) const OWNER_GROUP: &str = "owner";
/// A header on a message to a [`Reply`] subject: the frame was not delivered (the node does not
/// hold the page's socket), as NATS's "no responders" says when no node serves the subject.
pub(crate) const NOT_SERVED: &str = "Clienttools-Not-Served";
/// Answers to a claim.
pub(crate) const CLAIM_LIVE: &str = "live";
pub(crate) const CLAIM_RELEASED: &str = "released";

/// Where `node` takes frames for the page of `session` (while it holds its socket).
pub(crate) fn serve_frames(node: &str, session: &str) -> String {
    format!("clienttools.node.{node}.serve.{session}")
}

/// Every frame for the pages of `node` (one subscription per node, not per page).
pub(crate) fn node_frames(node: &str) -> String {
    format!("clienttools.node.{node}.serve.*")
}

/// The session id at the end of a [`serve_frames`] subject, if the bridge could have made it.
pub(crate) fn session_of_frames(subject: &str) -> Option<&str> {
    let session = subject.rsplit('.').next()?;
    is_session_id(session).then_some(session)
}

/// Where `node` takes retries of the calls it keeps suspended (crate::cluster::rounds).
pub(crate) fn round_retry(node: &str) -> String {
    format!("clienttools.node.{node}.rounds.retry")
}

/// Where `node` takes the cancellations of relayed retries.
pub(crate) fn round_cancel(node: &str) -> String {
    format!("clienttools.node.{node}.rounds.cancel")
}

/// Both of the above.
pub(crate) fn node_rounds(node: &str) -> String {
    format!("clienttools.node.{node}.rounds.*")
}

/// Where `node` hears back about one retry it relayed (`token`: random hex).
pub(crate) fn round_stream(node: &str, token: &str) -> String {
    format!("clienttools.node.{node}.round.{token}")
}

/// The node of a [`round_stream`] subject, if the bridge could have made it.
pub(crate) fn round_stream_node(subject: &str) -> Option<&str> {
    let mut parts = subject.split('.');
    let (Some("clienttools"), Some("node"), Some(node), Some("round"), Some(token), None) = (
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
    ) else {
        return None;
    };
    (is_node_id(node) && token.len() == 32 && is_hex(token)).then_some(node)
}

/// Where `node` takes the requests about the tasks it keeps (crate::cluster::tasks).
pub(crate) fn node_tasks(node: &str) -> String {
    format!("clienttools.node.{node}.tasks")
}

pub(crate) fn page_claim(session: &str) -> String {
    format!("clienttools.page.{session}.claim")
}

/// Everything `node` is answered on.
pub(crate) fn node_replies(node: &str) -> String {
    format!("clienttools.node.{node}.reply.>")
}

/// Where a relayed frame's answer goes: the sending node, its session, the link (connection
/// generation) it was sent on, and — for a request — the request's id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Reply {
    pub node: String,
    pub session: String,
    pub link: u64,
    pub request: Option<String>,
}

impl Reply {
    pub(crate) fn subject(&self) -> String {
        let base = format!(
            "clienttools.node.{}.reply.{}.{}",
            self.node, self.session, self.link
        );
        match &self.request {
            Some(request) => format!("{base}.{request}"),
            None => base,
        }
    }

    /// A reply subject the bridge could have made; anything else is `None`.
    pub(crate) fn parse(subject: &str) -> Option<Reply> {
        let mut parts = subject.split('.');
        let (
            Some("clienttools"),
            Some("node"),
            Some(node),
            Some("reply"),
            Some(session),
            Some(link),
        ) = (
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
        )
        else {
            return None;
        };
        let request = parts.next();
        if parts.next().is_some()
            || !is_node_id(node)
            || !is_session_id(session)
            || request.is_some_and(|id| !is_request_id(id))
        {
            return None;
        }
        Some(Reply {
            node: node.to_owned(),
            session: session.to_owned(),
            link: link.parse().ok()?,
            request: request.map(str::to_owned),
        })
    }
}

/// A request id the bridge makes (`<instance>-<n>`, `<instance>-ping`: crate::sessions::page_session), fit to
/// be a subject token.
pub(crate) fn is_request_id(id: &str) -> bool {
    (3..=64).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// Session ids are 32 lowercase hex digits (crate::sessions::table); node ids 16. Anything else read
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
    /// The page's connection on that node (a new connection of the same page is a new link).
    pub generation: u64,
    pub connected_at_ms: Option<u64>,
    /// The page answered `tools/list` (its handshake is done).
    pub tools_listed: bool,
    /// The page's own tools, as it listed them.
    pub tools: Vec<Tool>,
    /// The person the page serves (its signed token's `sub`, SPEC §13).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// What the page reported of its visibility and focus (client_tools_core::tabs).
    #[serde(default)]
    pub visible: bool,
    #[serde(default)]
    pub focused: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_front_at_ms: Option<u64>,
    /// What the page offers besides tools and its lists, once the node read them (SPEC §11).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub served: Option<ServedEntry>,
}

/// A page's resources, resource templates and prompts as the node holding it read them: nodes
/// with a session linked to it keep them as theirs (their agents list them and hear them change).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ServedEntry {
    pub offered: Offered,
    /// `None`: not read (the page offers none), or left out to fit NATS's `max_payload` — then
    /// the linked sessions ask the page for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<Vec<Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub templates: Option<Vec<Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts: Option<Vec<Value>>,
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

impl Publisher {
    pub(crate) fn new() -> (Self, mpsc::Receiver<Outbound>) {
        let (sender, receiver) = mpsc::channel(NATS_PUBLISH_QUEUE);
        (Self(sender), receiver)
    }

    pub(crate) fn send(&self, message: Outbound) {
        if let Err(error) = self.0.try_send(message) {
            tracing::warn!(subject = %error.into_inner().subject, "cluster message dropped: the queue to NATS is full");
        }
    }
}

/// The page's answers to requests another node relayed go back to that node's inbox (`route`).
impl RelayReplies for Publisher {
    fn send_back(&self, route: String, request: Option<String>, frame: String) {
        self.send(Outbound {
            request_id: request,
            ..Outbound::frame(route, frame)
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_ids_the_bridge_makes_become_subjects() {
        let session = "0123456789abcdef0123456789abcdef";
        let reply = Reply {
            node: "0123456789abcdef".into(),
            session: session.into(),
            link: 7,
            request: Some("0a1b2c3d4e5f-12".into()),
        };
        assert_eq!(Reply::parse(&reply.subject()), Some(reply.clone()));
        let notification = Reply {
            request: None,
            ..reply
        };
        assert_eq!(Reply::parse(&notification.subject()), Some(notification));
        for hostile in [
            "clienttools.node.0123456789abcdef.reply.*.1",
            "clienttools.node.0123456789abcdef.reply.0123456789ABCDEF0123456789ABCDEF.1",
            "clienttools.node.x.reply.0123456789abcdef0123456789abcdef.1",
            "clienttools.node.0123456789abcdef.reply.0123456789abcdef0123456789abcdef.x",
            "clienttools.node.0123456789abcdef.reply.0123456789abcdef0123456789abcdef.1.a_b",
            "clienttools.node.0123456789abcdef.reply.0123456789abcdef0123456789abcdef.1.a.b",
            "clienttools.node.0123456789abcdef.serve.0123456789abcdef0123456789abcdef.1",
        ] {
            assert_eq!(Reply::parse(hostile), None, "{hostile}");
        }
        assert!(is_node_id("0123456789abcdef") && !is_node_id("0123456789abcde*"));
        let frames = serve_frames("0123456789abcdef", session);
        assert_eq!(session_of_frames(&frames), Some(session));
        assert_eq!(
            session_of_frames("clienttools.node.0123456789abcdef.serve.>"),
            None
        );
        assert!(!is_request_id(&"a".repeat(65)) && is_request_id("0a1b2c3d4e5f-ping"));
        let stream = round_stream("0123456789abcdef", session);
        assert_eq!(round_stream_node(&stream), Some("0123456789abcdef"));
        for hostile in [
            "clienttools.node.0123456789abcdef.round.*",
            "clienttools.node.0123456789abcdef.round.>",
            "clienttools.node.0123456789abcdef.round.0123456789abcdef0123456789abcdef.x",
            "clienttools.node.*.round.0123456789abcdef0123456789abcdef",
        ] {
            assert_eq!(round_stream_node(hostile), None, "{hostile}");
        }
    }
}
