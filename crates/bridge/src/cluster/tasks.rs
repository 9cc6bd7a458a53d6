//! Tasks across nodes (crate::agent::tasks): a task is kept by the node that ran its call into a task,
//! and its id names that node; `tasks/get`, `tasks/update` and `tasks/cancel` that reach another
//! node are carried there by NATS request-reply, with the page session the caller is bound to
//! (the keeping node checks it as for its own callers). A node that is gone took its tasks with
//! it: they answer as unknown.

use std::sync::Arc;

use client_tools_core::protocol::code;
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::node::Cluster;
use super::wire;
use crate::agent::task_book::Refusal;
use crate::agent::tasks::TaskOp;
use crate::limits::RELAYED_TASK_ANSWER_WITHIN;

/// A caller's request about a task, carried to the node keeping it.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Asked {
    from: String,
    page_session: String,
    op: TaskOp,
}

impl Cluster {
    /// Carries `op` to node `holder`, which keeps its task, and returns its answer.
    pub(crate) async fn relay_task(
        &self,
        holder: &str,
        op: TaskOp,
        page_session: &str,
    ) -> Result<Value, Refusal> {
        let gone = || {
            Refusal::invalid(format!(
                "no task '{}' for this page session (it never existed, expired, or its cluster \
                 node is gone)",
                op.task_id()
            ))
        };
        if !wire::is_node_id(holder) || !self.directory().trusted(holder) {
            return Err(gone());
        }
        let asked = Asked {
            from: self.node.clone(),
            page_session: page_session.to_owned(),
            op: op.clone(),
        };
        let payload = serde_json::to_vec(&asked).unwrap_or_default();
        if payload.len() > self.max_payload {
            return Err(Refusal::invalid(format!(
                "the request is {} bytes, above what the cluster's NATS server carries ({} bytes)",
                payload.len(),
                self.max_payload
            )));
        }
        let request = self
            .client
            .request(wire::node_tasks(holder), payload.into());
        match tokio::time::timeout(RELAYED_TASK_ANSWER_WITHIN, request).await {
            Ok(Ok(message)) => serde_json::from_slice::<Result<Value, Refusal>>(&message.payload)
                .unwrap_or_else(|error| {
                    Err(Refusal {
                        code: code::INTERNAL_ERROR,
                        message: format!("unreadable answer from cluster node {holder}: {error}"),
                    })
                }),
            Ok(Err(error))
                if error.kind() == async_nats::client::RequestErrorKind::NoResponders =>
            {
                Err(gone())
            }
            Ok(Err(error)) => Err(Refusal {
                code: code::INTERNAL_ERROR,
                message: format!("the request could not cross the cluster: {error}"),
            }),
            Err(_) => Err(Refusal {
                code: code::INTERNAL_ERROR,
                message: format!("cluster node {holder}, which keeps this task, did not answer"),
            }),
        }
    }
}

/// The requests other nodes carry here about this node's tasks.
pub(super) async fn receive(cluster: Arc<Cluster>, mut messages: async_nats::Subscriber) {
    while let Some(message) = messages.next().await {
        let Some(reply) = message.reply else {
            continue;
        };
        let Ok(asked) = serde_json::from_slice::<Asked>(&message.payload) else {
            continue;
        };
        if !cluster.directory().trusted(&asked.from) {
            tracing::warn!(node = %asked.from, "task request from an unknown or untrusted node ignored");
            continue;
        }
        let answer = asked.op.apply(&cluster.tasks, &asked.page_session);
        let payload = serde_json::to_vec(&answer).unwrap_or_default();
        let payload = match payload.len() > cluster.max_payload {
            true => serde_json::to_vec(&Err::<Value, _>(Refusal {
                code: code::INTERNAL_ERROR,
                message: format!(
                    "the task is {} bytes, above what the cluster's NATS server carries ({} \
                     bytes): read it on the node that keeps it",
                    payload.len(),
                    cluster.max_payload
                ),
            }))
            .unwrap_or_default(),
            false => payload,
        };
        let _ = cluster.client.publish(reply, payload.into()).await;
    }
}
