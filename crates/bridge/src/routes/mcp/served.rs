//! The page as a whole MCP server for agents (SPEC §11 "Resources, prompts, completion"): its
//! lists, `resources/read`, `prompts/get` and `completion/complete` driven as a `tools/call` is
//! (crate::agent::rounds::drive: progress, log messages, rounds — on the request's stream on
//! 2025-11-25, `input_required` and a retry with `requestState` on 2026-07-28), and resource
//! subscriptions (`resources/subscribe` on 2025-11-25, `subscriptions/listen` on 2026-07-28).
//!
//! Over a user's tabs (SPEC §13) the lists are the union of the tabs' (an entry by its key — a
//! resource's `uri`, a template's `uriTemplate`, a prompt's `name` — as the tab most recently in
//! front lists it), and a read, a get or a completion goes to the tab most recently in front that
//! lists the resource (or a template it matches) or the prompt; a retry goes to the tab whose
//! round it answers; none listing it: the front-most tab, which answers for itself.

#![allow(deprecated)]

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use client_tools_core::protocol::{meta, RpcError};
use rmcp::model::{
    ErrorCode, InputRequests, InputRequiredResult, InputResponses, JsonObject, SubscriptionFilter,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, Peer, RoleServer};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::agent::rounds::{
    self, arguments_digest, drive, AgentSide, CallKey, Driven, Retry, RunningCall, STATE_DOMAIN,
};
use crate::calls::served::{self, method, template_matches, ServedRequest, Subject};
use crate::limits::MAX_SUBSCRIPTIONS_PER_AGENT;
use crate::sessions::page_session::PageSession;
use crate::sessions::user_tabs;

use super::call_side::{level_name, McpSide};
use super::{is_handshake_era, lock, Bound, McpAgent};

/// One MCP session's resource subscriptions (2025-11-25): each URI with the page it is
/// subscribed on, and the pages whose updates a task forwards to the agent.
#[derive(Default)]
pub(super) struct Subscriptions {
    uris: HashMap<String, Arc<PageSession>>,
    forwarding: HashSet<String>,
}

/// A page's JSON-RPC error as the agent's.
pub(super) fn to_mcp_error(error: RpcError) -> McpError {
    McpError::new(ErrorCode(error.code as i32), error.message, error.data)
}

/// A served request's answer as the agent's result type; `InputRequired` for a round.
pub(super) enum Served<R> {
    Complete(R),
    InputRequired(InputRequiredResult),
}

/// The agent's side of a completion on 2026-07-28: rmcp has no `input_required` for
/// `completion/complete`, so its rounds are refused to the page as capabilities the agent lacks
/// (`-32021` if the handler lets it propagate).
struct NoRounds<'a>(&'a McpSide<'a>);

impl AgentSide for NoRounds<'_> {
    fn capabilities(&self) -> rmcp::model::ClientCapabilities {
        rmcp::model::ClientCapabilities::default()
    }
    fn declares_tasks(&self) -> bool {
        false
    }
    fn progress(
        &self,
        update: client_tools_core::protocol::ProgressParams,
    ) -> futures_util::future::BoxFuture<'_, ()> {
        self.0.progress(update)
    }
    fn log(&self, params: Map<String, Value>) -> futures_util::future::BoxFuture<'_, ()> {
        self.0.log(params)
    }
    fn cancelled(&self) -> futures_util::future::BoxFuture<'_, ()> {
        self.0.cancelled()
    }
}

/// The key of an entry of `list` (the union keeps one entry per key).
fn entry_key<'a>(list: &str, entry: &'a Value) -> &'a str {
    let field = match list {
        method::RESOURCES_LIST => "uri",
        method::RESOURCE_TEMPLATES_LIST => "uriTemplate",
        _ => "name",
    };
    entry.get(field).and_then(Value::as_str).unwrap_or_default()
}

/// Whether `page`'s lists (as read) name `subject`.
async fn lists(page: &PageSession, subject: &Subject) -> bool {
    match subject {
        Subject::List => true,
        Subject::Prompt(name) => page.list(method::PROMPTS_LIST).await.is_ok_and(|prompts| {
            prompts
                .iter()
                .any(|p| p.get("name").and_then(Value::as_str) == Some(name))
        }),
        Subject::Resource(uri) => {
            let listed = page
                .list(method::RESOURCES_LIST)
                .await
                .is_ok_and(|resources| {
                    resources
                        .iter()
                        .any(|r| r.get("uri").and_then(Value::as_str) == Some(uri))
                });
            listed
                || page
                    .list(method::RESOURCE_TEMPLATES_LIST)
                    .await
                    .is_ok_and(|templates| {
                        templates.iter().any(|t| {
                            let template = t.get("uriTemplate").and_then(Value::as_str);
                            template.is_some_and(|t| t == uri || template_matches(t, uri))
                        })
                    })
        }
    }
}

impl McpAgent {
    /// The pages an agent's served request may go to: its page, or its user's tabs, front-most
    /// first.
    async fn served_pages(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> Result<Vec<Arc<PageSession>>, McpError> {
        let bound = self
            .bound(Some(context))
            .map_err(|why| McpError::invalid_request(why, None))?;
        match bound.1 {
            Some(Bound::User(_)) => {
                let mut pages = self.user_pages_or_wait(Some(context)).await;
                let front = user_tabs::front_most(&pages);
                if let Some(front) = front {
                    pages.retain(|p| p.id() != front.id());
                    pages.insert(0, front);
                }
                Ok(pages)
            }
            _ => self
                .page_or_wait(Some(context))
                .await
                .map(|page| vec![page])
                .map_err(|why| McpError::invalid_params(why, None)),
        }
    }

    /// The list `list` an agent sees: its page's, or the union of its user's tabs'.
    pub(super) async fn served_list<T: DeserializeOwned>(
        &self,
        list: &'static str,
        context: &RequestContext<RoleServer>,
    ) -> Result<Vec<T>, McpError> {
        let pages = self.served_pages(context).await?;
        let mut seen = HashSet::new();
        let mut entries = Vec::new();
        for page in &pages {
            let listed = match page.list(list).await {
                Ok(listed) => listed,
                Err(error) if pages.len() == 1 => return Err(to_mcp_error(error)),
                Err(_) => continue, // one tab failing leaves the others' entries
            };
            for entry in listed {
                if !seen.insert(entry_key(list, &entry).to_owned()) {
                    continue;
                }
                match serde_json::from_value::<T>(entry) {
                    Ok(entry) => entries.push(entry),
                    Err(error) => {
                        tracing::info!(session = %page.id(), method = list, %error, "page list entry skipped")
                    }
                }
            }
        }
        Ok(entries)
    }

    /// The page a served request goes to (see the module's rule).
    async fn served_target(
        &self,
        subject: &Subject,
        state: Option<&str>,
        context: &RequestContext<RoleServer>,
    ) -> Result<Arc<PageSession>, McpError> {
        let pages = self.served_pages(context).await?;
        if pages.len() > 1 {
            if let Some(state) = state {
                let ids: Vec<&str> = pages.iter().map(|page| page.id()).collect();
                if let Some(id) = rounds::page_session_of(state, &ids) {
                    let id = id.to_owned();
                    return Ok(pages.into_iter().find(|p| p.id() == id).expect("listed"));
                }
            }
            for page in &pages {
                if lists(page, subject).await {
                    return Ok(page.clone());
                }
            }
        }
        pages.into_iter().next().ok_or_else(|| {
            McpError::invalid_params("no open tab of this user: open the page again", None)
        })
    }

    /// Drives `request` (what the agent asked: `name` and `arguments` bind its rounds' states)
    /// to its answer, a round (`input_required`, 2026-07-28), or an error.
    pub(super) async fn serve<R: DeserializeOwned>(
        &self,
        request: ServedRequest,
        arguments: Value,
        state: Option<&str>,
        responses: Option<InputResponses>,
        context: &RequestContext<RoleServer>,
    ) -> Result<Served<R>, McpError> {
        let state = state.filter(|state| state.starts_with(&format!("{STATE_DOMAIN}.")));
        let page = self
            .served_target(request.subject(), state, context)
            .await?;
        let handshake_era = is_handshake_era(context);
        let log = self.log_threshold(context, handshake_era);
        let side = McpSide {
            context,
            waited: 0.0,
            log,
            handshake_era,
        };
        let name = match request.subject() {
            Subject::Prompt(name) | Subject::Resource(name) => name.clone(),
            Subject::List => String::new(),
        };
        let tool = format!("{} {name}", request.method());
        let completion = request.method() == method::COMPLETION_COMPLETE;
        let driven = match state {
            Some(state) => {
                if handshake_era {
                    return Err(McpError::invalid_params(
                        "requestState belongs to protocol revision 2026-07-28; this session \
                         speaks an earlier one",
                        None,
                    ));
                }
                let retry = Retry {
                    state: state.to_owned(),
                    page_session: page.id().to_owned(),
                    tool,
                    arguments: arguments.as_object().cloned().unwrap_or_default(),
                    responses: responses.unwrap_or_default(),
                };
                self.bridge.resume_served(retry, &side).await
            }
            None => {
                // The agent's `_meta["clienttools/timeoutMs"]` (up to the core's bound, as for
                // tools/call; an invalid one is refused naming it), and the session's log level.
                let mut meta = Map::new();
                if let Some(ms) = context.meta.0.get(meta::TIMEOUT_MS) {
                    meta.insert(meta::TIMEOUT_MS.into(), ms.clone());
                }
                if let Some(level) = log {
                    meta.insert(meta::LOG_LEVEL.into(), level_name(level).into());
                }
                let running = RunningCall::serve(
                    page.clone(),
                    request,
                    Some(meta),
                    self.bridge.config().limits.progress_buffer,
                );
                let key = CallKey {
                    page_session: page.id().to_owned(),
                    tool_digest: arguments_digest(&Value::String(tool.clone())),
                    tool,
                    arguments: arguments_digest(&arguments),
                };
                let supplied = if handshake_era { None } else { responses };
                let rounds = self.bridge.rounds();
                match completion && !handshake_era {
                    true => drive(rounds, running, &NoRounds(&side), key, 0, supplied).await,
                    false => drive(rounds, running, &side, key, 0, supplied).await,
                }
            }
        };
        match driven {
            Driven::Ended(Some(Ok(answer))) => serde_json::from_value::<R>(answer)
                .map(Served::Complete)
                .map_err(|error| {
                    McpError::internal_error(format!("the page's answer: {error}"), None)
                }),
            Driven::Ended(Some(Err(error))) => Err(to_mcp_error(error)),
            Driven::Ended(None) => Err(McpError::internal_error("cancelled", None)),
            Driven::InputRequired { requests, state } => {
                let requests: InputRequests = requests
                    .into_iter()
                    .filter_map(|(key, request)| Some((key, serde_json::from_value(request).ok()?)))
                    .collect();
                Ok(Served::InputRequired(InputRequiredResult::new(
                    Some(requests),
                    Some(state),
                )))
            }
            Driven::Refused(why) => Err(McpError::invalid_params(why, None)),
            Driven::Task(_) => Err(McpError::internal_error(
                "a served request never becomes a task",
                None,
            )),
        }
    }

    /// `resources/subscribe` (2025-11-25): counted on the page it goes to; the agent hears that
    /// page's updates of the URI until it unsubscribes or its session ends. Bounded per session.
    pub(super) async fn subscribe_uri(
        &self,
        uri: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        served::check_uri(uri).map_err(to_mcp_error)?;
        {
            let subscriptions = lock(&self.subscriptions);
            if subscriptions.uris.contains_key(uri) {
                return Ok(());
            }
            if subscriptions.uris.len() >= MAX_SUBSCRIPTIONS_PER_AGENT {
                return Err(McpError::invalid_params(
                    format!(
                        "too many resource subscriptions in this MCP session (limit \
                         {MAX_SUBSCRIPTIONS_PER_AGENT}): unsubscribe from one first"
                    ),
                    Some(serde_json::json!({ "uri": uri, "limit": MAX_SUBSCRIPTIONS_PER_AGENT })),
                ));
            }
        }
        let subject = Subject::Resource(uri.to_owned());
        let page = self.served_target(&subject, None, context).await?;
        page.subscribe_resource(uri).await.map_err(to_mcp_error)?;
        let forward = {
            let mut subscriptions = lock(&self.subscriptions);
            let raced = subscriptions.uris.len() >= MAX_SUBSCRIPTIONS_PER_AGENT
                || subscriptions.uris.contains_key(uri);
            match raced {
                // Another request of this session got there first.
                true => None,
                false => {
                    subscriptions.uris.insert(uri.to_owned(), page.clone());
                    Some(subscriptions.forwarding.insert(page.id().to_owned()))
                }
            }
        };
        let Some(forward) = forward else {
            page.unsubscribe_resource(uri).await;
            return Ok(());
        };
        if forward {
            tokio::spawn(self.clone().forward_updates(page, context.peer.clone()));
        }
        Ok(())
    }

    /// `resources/unsubscribe` (2025-11-25).
    pub(super) async fn unsubscribe_uri(&self, uri: &str) {
        let page = lock(&self.subscriptions).uris.remove(uri);
        if let Some(page) = page {
            page.unsubscribe_resource(uri).await;
        }
    }

    /// Forwards `page`'s resource updates of the URIs this session subscribed there, for as long
    /// as the agent is connected; then its subscriptions there end.
    async fn forward_updates(self, page: Arc<PageSession>, peer: Peer<RoleServer>) {
        let mut updates = page.resource_updates();
        loop {
            let uri = tokio::select! {
                uri = updates.recv() => uri,
                () = peer.closed() => break,
            };
            let uri = match uri {
                Ok(uri) => uri,
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                Err(_) => break,
            };
            let mine = lock(&self.subscriptions)
                .uris
                .get(&uri)
                .is_some_and(|on| Arc::ptr_eq(on, &page));
            if mine {
                let param = rmcp::model::ResourceUpdatedNotificationParam::new(uri);
                if peer.notify_resource_updated(param).await.is_err() {
                    break;
                }
            }
        }
        let released: Vec<String> = {
            let mut subscriptions = lock(&self.subscriptions);
            subscriptions.forwarding.remove(page.id());
            let mine: Vec<String> = (subscriptions.uris.iter())
                .filter(|(_, on)| Arc::ptr_eq(on, &page))
                .map(|(uri, _)| uri.clone())
                .collect();
            for uri in &mine {
                subscriptions.uris.remove(uri);
            }
            mine
        };
        for uri in released {
            page.unsubscribe_resource(&uri).await;
        }
    }

    /// What a `subscriptions/listen` stream (2026-07-28) acknowledges, decided before the
    /// acknowledgment is sent: the list changes, and of the URIs asked the first
    /// MAX_SUBSCRIPTIONS_PER_AGENT it subscribes — not one refused by what is known now
    /// ([`Self::subscription_accepted`]); only the page's own refusal comes later (docs/api.md).
    pub(super) fn subscription_filter(
        &self,
        requested: &SubscriptionFilter,
        context: Option<&RequestContext<RoleServer>>,
    ) -> Option<SubscriptionFilter> {
        let mut accepted = SubscriptionFilter::builder()
            .tools_list_changed()
            .prompts_list_changed()
            .resources_list_changed()
            .build();
        if let Some(uris) = &requested.resource_subscriptions {
            let pages = self.subscription_pages_now(context);
            let uris = uris
                .iter()
                .filter(|uri| Self::subscription_accepted(pages.as_deref(), uri));
            accepted.resource_subscriptions =
                Some(uris.take(MAX_SUBSCRIPTIONS_PER_AGENT).cloned().collect());
        }
        Some(accepted)
    }

    /// The pages a listen stream would subscribe on, as they are now (without waiting): the
    /// bound page, or the user's tabs; `None` when that cannot be known (no request).
    fn subscription_pages_now(
        &self,
        context: Option<&RequestContext<RoleServer>>,
    ) -> Option<Vec<Arc<PageSession>>> {
        let context = context?;
        self.bound(Some(context)).ok()?;
        if let Some(pages) = self.user_pages(Some(context)) {
            return Some(pages);
        }
        Some(self.page(Some(context)).into_iter().collect())
    }

    /// Whether a listen stream's subscription to `uri` is acknowledged: its page (`pages`' one
    /// that lists it, else the first, as [`Self::served_target`] picks) does not refuse it by
    /// what is known now (PageSession::refuses_subscription_now). `pages` `None`: not known yet
    /// (the URI's own checks only).
    fn subscription_accepted(pages: Option<&[Arc<PageSession>]>, uri: &str) -> bool {
        let Some(pages) = pages else {
            return served::check_uri(uri).is_ok();
        };
        let page = match pages.len() {
            0 | 1 => pages.first(),
            _ => (pages.iter().find(|page| page.lists_uri_now(uri))).or(pages.first()),
        };
        let Some(page) = page else {
            return false; // no page: nothing would be subscribed
        };
        match page.refuses_subscription_now(uri) {
            None => true,
            Some(refused) => {
                tracing::info!(session = %page.id(), %uri, error = %refused.message, "resource subscription refused before the acknowledgment");
                false
            }
        }
    }

    /// 2026-07-28: subscribes a listen stream to `uris`, each on the page it goes to (one the
    /// page refuses is left out, with a log line): the pages with the URIs subscribed on each.
    pub(super) async fn subscribe_stream(
        &self,
        uris: &[String],
        context: &RequestContext<RoleServer>,
    ) -> Vec<(Arc<PageSession>, HashSet<String>)> {
        let mut subscribed: Vec<(Arc<PageSession>, HashSet<String>)> = Vec::new();
        for uri in uris {
            if subscribed.iter().any(|(_, on)| on.contains(uri)) {
                continue;
            }
            let subject = Subject::Resource(uri.clone());
            let Ok(page) = self.served_target(&subject, None, context).await else {
                continue;
            };
            if let Err(error) = page.subscribe_resource(uri).await {
                tracing::info!(session = %page.id(), %uri, error = %error.message, "resource subscription refused");
                continue;
            }
            match subscribed.iter_mut().find(|(on, _)| Arc::ptr_eq(on, &page)) {
                Some((_, uris)) => {
                    uris.insert(uri.clone());
                }
                None => subscribed.push((page, HashSet::from([uri.clone()]))),
            }
        }
        subscribed
    }

    /// What the agent's prompts and resources (and templates) lists are now, as this node read
    /// them (for `list_changed`): `(prompts, resources)`.
    pub(super) fn served_lists_now(&self) -> (Vec<Value>, Vec<Value>) {
        let pages = match self.user_pages(None) {
            Some(pages) => pages,
            None => self.page(None).into_iter().collect(),
        };
        let mut prompts = Vec::new();
        let mut resources = Vec::new();
        for page in pages {
            let id = Value::String(page.id().to_owned());
            if let Some(listed) = page.listed(method::PROMPTS_LIST) {
                prompts.push(id.clone());
                prompts.extend(listed.iter().cloned());
            }
            for list in [method::RESOURCES_LIST, method::RESOURCE_TEMPLATES_LIST] {
                if let Some(listed) = page.listed(list) {
                    resources.push(id.clone());
                    resources.extend(listed.iter().cloned());
                }
            }
        }
        (prompts, resources)
    }
}

/// The agent's arguments of a prompt, as a JSON object (none: `{}`).
pub(super) fn prompt_arguments(arguments: &Option<JsonObject>) -> Value {
    Value::Object(arguments.clone().unwrap_or_default())
}
