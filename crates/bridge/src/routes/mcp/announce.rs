//! What an agent hears unasked: its page's tool, prompt and resource lists changing, and (2025-11-25) the status of the
//! tasks its calls became — for as long as its MCP session lasts.

#![allow(deprecated)]

use rmcp::model::{
    DetailedTask, ServerNotification, TaskStatusNotification, TaskStatusNotificationParams,
};
use rmcp::{Peer, RoleServer};

use super::McpAgent;

impl McpAgent {
    /// Tells `peer` whenever the page's tool list changes, for as long as the agent is connected:
    /// woken by the page's changes (or, while no page is bound yet, any page's) and by the agent's
    /// transport closing ([`Peer::closed`]), never by a timer.
    pub(super) async fn announce_changes(self, peer: Peer<RoleServer>) {
        if self.user_pages(None).is_some() {
            return self.announce_user_changes(peer).await;
        }
        // What the agent could have listed so far: nothing, if no page was there yet.
        let mut listed = self.page(None).map(|p| p.tools()).unwrap_or_default();
        let mut pages = self.bridge.watch_pages();
        let page = loop {
            if let Some(page) = self.page(None) {
                break page;
            }
            tokio::select! {
                changed = pages.changed() => if changed.is_err() { return },
                () = peer.closed() => return,
            }
        };
        drop(pages);
        let mut changes = page.subscribe();
        let mut served = self.served_lists_now();
        loop {
            let now = page.tools();
            if now != listed {
                listed = now;
                if peer.notify_tool_list_changed().await.is_err() {
                    return;
                }
            }
            if !self.announce_served(&peer, &mut served).await {
                return;
            }
            tokio::select! {
                changed = changes.changed() => if changed.is_err() { return },
                () = peer.closed() => return,
            }
        }
    }
}

impl McpAgent {
    /// Over a user's tabs: `list_changed` whenever the union changes — a tab opens, closes or
    /// changes its tools, or another tab comes to front with another definition of a name.
    async fn announce_user_changes(self, peer: Peer<RoleServer>) {
        let mut changes = self.bridge.watch_pages();
        let mut listed = self.tools_now();
        let mut served = self.served_lists_now();
        loop {
            tokio::select! {
                changed = changes.changed() => if changed.is_err() { return },
                () = peer.closed() => return,
            }
            let now = self.tools_now();
            if now != listed {
                listed = now;
                if peer.notify_tool_list_changed().await.is_err() {
                    return;
                }
            }
            if !self.announce_served(&peer, &mut served).await {
                return;
            }
        }
    }
}

impl McpAgent {
    /// `prompts/list_changed` and `resources/list_changed` when the page's prompts or resources
    /// (templates included) differ from `listed`, which becomes what they are; `false` once the
    /// agent is gone.
    async fn announce_served(
        &self,
        peer: &Peer<RoleServer>,
        listed: &mut (Vec<serde_json::Value>, Vec<serde_json::Value>),
    ) -> bool {
        let now = self.served_lists_now();
        if now.0 != listed.0 && peer.notify_prompt_list_changed().await.is_err() {
            return false;
        }
        if now.1 != listed.1 && peer.notify_resource_list_changed().await.is_err() {
            return false;
        }
        *listed = now;
        true
    }

    /// 2025-11-25 (a session, a stream of its own): `notifications/tasks` for every change of the
    /// tasks this session's calls became on this node, for as long as the agent is connected.
    /// Revision 2026-07-28 would carry them on `subscriptions/listen`, which rmcp cannot filter by
    /// task yet: there agents poll `tasks/get`.
    pub(super) async fn announce_tasks(self, peer: Peer<RoleServer>) {
        let mut changes = self.bridge.tasks().watch();
        loop {
            let change = tokio::select! {
                change = changes.recv() => change,
                () = peer.closed() => return,
            };
            let (id, detailed) = match change {
                Ok(change) => change,
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                Err(_) => return,
            };
            let mine = self
                .tasks
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .contains(&id);
            let Ok(task) = serde_json::from_value::<DetailedTask>(detailed) else {
                continue;
            };
            if mine {
                let params = TaskStatusNotificationParams::new(task);
                let notification = TaskStatusNotification::new(params);
                let sent = peer
                    .send_notification(ServerNotification::TaskStatusNotification(notification))
                    .await;
                if sent.is_err() {
                    return;
                }
            }
        }
    }
}
