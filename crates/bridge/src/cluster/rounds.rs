//! Rounds across nodes (crate::agent::rounds): a retry of a suspended call — its `requestState`
//! names the node keeping the call — that reached another node is carried there, saying which
//! kind of call it resumes ([`Kind`]: a tool call, or a served request — a prompt, a resource
//! read, a completion — whose rounds the keeping node keeps apart). The node that
//! got the retry ("the agent's node") subscribes to a subject of its own for the answer, sends the
//! retry with the agent's declared capabilities to the keeping node, and relays what comes back
//! — the page's progress and log messages, then where the call stands — to its agent; the keeping
//! node checks the state as for a retry it got itself (it holds the key, and the state is spent
//! there: single-use holds cluster-wide) and drives the call. A cancelled agent request cancels
//! the call there; a keeping node that goes silent ends the request here.

use std::sync::Arc;

use client_tools_core::protocol::{CallToolResult, ProgressParams};
use futures_util::future::BoxFuture;
use futures_util::StreamExt;
use rmcp::model::ClientCapabilities;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio::sync::Notify;

use super::node::Cluster;
use super::wire;
use crate::agent::rounds::{self, AgentSide, Driven, PageAnswer, Retry};
use crate::ids::random_hex;
use crate::limits::{
    MAX_SUSPENDED_CALLS, NATS_HEADROOM_BYTES, RELAYED_RETRY_ALIVE_EVERY, RELAYED_RETRY_SILENCE,
};

/// A retry carried to the node keeping its call.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Relayed {
    /// The agent's node, and its subject for what comes back ([`wire::round_stream`]).
    from: String,
    stream: String,
    retry: Retry,
    /// What the agent declared it can answer (the next rounds are checked against it).
    capabilities: ClientCapabilities,
    /// Which kind of call the retry resumes (absent, from a node that relays only tool calls: a
    /// tool call).
    #[serde(default)]
    kind: Kind,
}

/// The kinds of call a relayed retry resumes: each is kept apart on the keeping node
/// (crate::agent::rounds::Rounds), and its outcome is of its own type.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) enum Kind {
    /// `tools/call` (its outcome a `CallToolResult`).
    #[default]
    Call,
    /// `prompts/get`, `resources/read`, `completion/complete` (its outcome the page's result or
    /// JSON-RPC error).
    Served,
}

/// A page's answer a relayed retry can resume and carry back: [`Kind`] names it on the wire.
pub(crate) trait Relayable: PageAnswer + Serialize + DeserializeOwned {
    const KIND: Kind;
}

impl Relayable for CallToolResult {
    const KIND: Kind = Kind::Call;
}

impl Relayable for Value {
    const KIND: Kind = Kind::Served;
}

/// What the keeping node sends back about a relayed retry, in order; `Done` last.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
enum Back<T = CallToolResult> {
    Progress(ProgressParams),
    Log(Map<String, Value>),
    Alive,
    Done(Driven<T>),
}

impl Cluster {
    /// Carries `retry` to node `holder`, which keeps its call (of the kind `T` says), and relays
    /// what it sends back to `agent` until the call ends or asks again.
    pub(crate) async fn relay_retry<T: Relayable>(
        &self,
        holder: &str,
        retry: Retry,
        agent: &dyn AgentSide,
    ) -> Driven<T> {
        if !wire::is_node_id(holder) {
            return Driven::Refused(
                "requestState integrity check failed (not issued by this bridge, or altered)"
                    .to_owned(),
            );
        }
        if !self.directory().trusted(holder) {
            return Driven::Refused(
                "requestState was issued by a node that is gone (or not trusted here): its request \
                 ended; make the request again without it"
                    .to_owned(),
            );
        }
        let stream = wire::round_stream(&self.node, &random_hex(16));
        let mut back = match self.client.subscribe(stream.clone()).await {
            Ok(back) => back,
            Err(error) => {
                return ended_with(format!("the retry could not cross the cluster: {error}"))
            }
        };
        let relayed = Relayed {
            from: self.node.clone(),
            stream: stream.clone(),
            retry,
            capabilities: agent.capabilities(),
            kind: T::KIND,
        };
        let payload = serde_json::to_vec(&relayed).unwrap_or_default();
        if payload.len() + NATS_HEADROOM_BYTES > self.max_payload {
            return Driven::Refused(format!(
                "the retry is {} bytes, above what the cluster's NATS server carries ({} bytes, \
                 its max_payload)",
                payload.len(),
                self.max_payload
            ));
        }
        let sent = self
            .client
            .publish_with_reply(wire::round_retry(holder), stream.clone(), payload.into())
            .await;
        if let Err(error) = sent {
            return ended_with(format!("the retry could not cross the cluster: {error}"));
        }
        let cancel = || {
            let client = self.client.clone();
            let (subject, stream) = (wire::round_cancel(holder), stream.clone());
            async move {
                let _ = client.publish(subject, stream.into()).await;
            }
        };
        let mut cancelled = agent.cancelled();
        loop {
            let message = tokio::select! {
                () = &mut cancelled => {
                    cancel().await;
                    return Driven::Ended(None);
                }
                message = tokio::time::timeout(RELAYED_RETRY_SILENCE, back.next()) => message,
            };
            let message = match message {
                Ok(Some(message)) => message,
                Ok(None) | Err(_) => {
                    cancel().await;
                    return ended_with(format!(
                        "the cluster node keeping this call ({holder}) went silent: its outcome \
                         is unknown"
                    ));
                }
            };
            if message.status == Some(async_nats::StatusCode::NO_RESPONDERS) {
                return Driven::Refused(
                    "requestState was already used, or its request ended or was forgotten (its \
                     node is gone): make the request again without it"
                        .to_owned(),
                );
            }
            match serde_json::from_slice::<Back<T>>(&message.payload) {
                Ok(Back::Progress(update)) => agent.progress(update).await,
                Ok(Back::Log(params)) => agent.log(params).await,
                Ok(Back::Alive) => {}
                Ok(Back::Done(driven)) => return driven,
                Err(error) => {
                    tracing::warn!(node = %holder, %error, "unreadable answer to a relayed retry")
                }
            }
        }
    }
}

/// How a relayed retry ends when the bridge, not the page, failed it: a tool call's error result,
/// a served request's JSON-RPC error.
fn ended_with<T: PageAnswer>(text: String) -> Driven<T> {
    Driven::Ended(Some(T::failed(text)))
}

/// The retries other nodes carry here, and their cancellations.
pub(super) async fn receive(cluster: Arc<Cluster>, mut messages: async_nats::Subscriber) {
    while let Some(message) = messages.next().await {
        if message.subject.as_str() == wire::round_cancel(&cluster.node) {
            let stream = String::from_utf8_lossy(&message.payload);
            if let Some(cancel) = cluster.driving.lock().get(stream.as_ref()) {
                cancel.notify_one();
            }
            continue;
        }
        let Ok(relayed) = serde_json::from_slice::<Relayed>(&message.payload) else {
            continue;
        };
        let from_its_node = wire::round_stream_node(&relayed.stream) == Some(&relayed.from);
        if !from_its_node || !cluster.directory().trusted(&relayed.from) {
            tracing::warn!(node = %relayed.from, "retry from an unknown or untrusted node ignored");
            continue;
        }
        let taken = {
            let mut driving = cluster.driving.lock();
            let room =
                driving.len() < MAX_SUSPENDED_CALLS && !driving.contains_key(&relayed.stream);
            if room {
                driving.insert(relayed.stream.clone(), Arc::new(Notify::new()));
            }
            room
        };
        if !taken {
            let done = Back::<CallToolResult>::Done(Driven::Refused(
                "too many retries relayed to this cluster node at once: try again".to_owned(),
            ));
            send(&cluster, &relayed.stream, &done).await;
            continue;
        }
        match relayed.kind {
            Kind::Call => tokio::spawn(serve::<CallToolResult>(cluster.clone(), relayed)),
            Kind::Served => tokio::spawn(serve::<Value>(cluster.clone(), relayed)),
        };
    }
}

/// Drives a relayed retry here ([`rounds::resume`], as the call of kind `T`) and sends what
/// happens back.
async fn serve<T: Relayable>(cluster: Arc<Cluster>, relayed: Relayed) {
    let Some(cancel) = cluster.driving.lock().get(&relayed.stream).cloned() else {
        return;
    };
    let side = RelayedSide {
        cluster: &cluster,
        stream: &relayed.stream,
        capabilities: relayed.capabilities,
        cancel,
    };
    let resumed = rounds::resume::<T>(&cluster.rounds, relayed.retry, &side);
    let alive = async {
        let mut ticks = tokio::time::interval(RELAYED_RETRY_ALIVE_EVERY);
        ticks.tick().await;
        loop {
            ticks.tick().await;
            send(&cluster, &relayed.stream, &Back::<T>::Alive).await;
        }
    };
    let driven = tokio::select! {
        driven = resumed => driven,
        () = alive => unreachable!("never ends"),
    };
    cluster.driving.lock().remove(&relayed.stream);
    let done = Back::Done(driven);
    let payload = serde_json::to_vec(&done).unwrap_or_default();
    if payload.len() + NATS_HEADROOM_BYTES > cluster.max_payload {
        let too_large = ended_with::<T>(format!(
            "the call's result is {} bytes, above what the cluster's NATS server carries ({} \
             bytes, its max_payload)",
            payload.len(),
            cluster.max_payload
        ));
        send(&cluster, &relayed.stream, &Back::Done(too_large)).await;
        return;
    }
    let _ = cluster
        .client
        .publish(relayed.stream.clone(), payload.into())
        .await;
}

async fn send<T: Serialize>(cluster: &Cluster, stream: &str, back: &Back<T>) {
    let payload = serde_json::to_vec(back).unwrap_or_default();
    if payload.len() + NATS_HEADROOM_BYTES > cluster.max_payload {
        return; // a progress report or log message too large to carry is dropped
    }
    let _ = cluster
        .client
        .publish(stream.to_owned(), payload.into())
        .await;
}

/// The agent of a relayed retry, as the keeping node sees it: on another node.
struct RelayedSide<'a> {
    cluster: &'a Cluster,
    stream: &'a str,
    capabilities: ClientCapabilities,
    cancel: Arc<Notify>,
}

impl AgentSide for RelayedSide<'_> {
    fn capabilities(&self) -> ClientCapabilities {
        self.capabilities.clone()
    }

    fn progress(&self, update: ProgressParams) -> BoxFuture<'_, ()> {
        let back = Back::<CallToolResult>::Progress(update);
        Box::pin(async move { send(self.cluster, self.stream, &back).await })
    }

    fn log(&self, params: Map<String, Value>) -> BoxFuture<'_, ()> {
        let back = Back::<CallToolResult>::Log(params);
        Box::pin(async move { send(self.cluster, self.stream, &back).await })
    }

    fn cancelled(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.cancel.notified())
    }
}
