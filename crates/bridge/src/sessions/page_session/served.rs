//! The page as a whole MCP server (SPEC §11 "Resources, prompts, completion"): what it offers
//! besides tools, its lists of resources, resource templates and prompts (read at its handshake
//! and again on its `list_changed`, like its tools), the agents' requests served by it exactly as
//! a tool call is (one entry point, [`PageSession::serve`]: the engine's timeouts and one outcome,
//! the page's progress, log messages and rounds tied to the request, cancellation), and resource
//! subscriptions (counted per page: the page hears `resources/subscribe` for a URI once, when its
//! first agent subscribes, and `resources/unsubscribe` when its last one leaves).

use std::sync::Arc;
use std::time::Duration;

use client_tools_core::limits::{call_timeout, MAX_TIMEOUT_MS};
use client_tools_core::protocol::{code, meta, RpcError};
use client_tools_core::registry::is_allowed;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio::sync::broadcast;

use super::calls::new_request;
use super::{now, PageSession, Via};
use crate::calls::policy::Who;
use crate::calls::policy_gate;
use crate::calls::request_engine::{Purpose, RequestFailure};
use crate::calls::served::{
    self, check_answer, entry_name, list_field, method, template_matches, ServedRequest, Subject,
};
use crate::limits::{
    whole_ms, ANSWER_SLACK, MAX_SUBSCRIPTIONS_PER_SESSION, PAGE_HANDSHAKE_TIMEOUT,
};
use crate::sessions::call_options::CallOptions;

/// How a served request ended, when it was not cancelled: the page's result (checked: its method's
/// shape), or a JSON-RPC error — the page's own, passed through with its code, message and data,
/// or the bridge's (`-32602` for a request it refuses, `-32603` for a page that is gone, silent
/// or answering nonsense).
pub type ServedOutcome = Result<Value, RpcError>;

/// What a page offers besides tools, as its `initialize` result declared it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Offered {
    pub resources: bool,
    /// `resources.subscribe`: the page sends `notifications/resources/updated` to subscribers.
    pub subscribe: bool,
    pub prompts: bool,
    pub completions: bool,
}

impl Offered {
    /// Reads an `initialize` result's `capabilities`.
    pub(crate) fn read(capabilities: &Value) -> Self {
        let resources = capabilities.get("resources").filter(|c| c.is_object());
        Self {
            resources: resources.is_some(),
            subscribe: resources
                .and_then(|r| r.get("subscribe"))
                .and_then(Value::as_bool)
                .unwrap_or(false),
            prompts: capabilities.get("prompts").is_some_and(Value::is_object),
            completions: capabilities
                .get("completions")
                .is_some_and(Value::is_object),
        }
    }

    /// Whether the page offers what `method` asks.
    fn offers(self, method: &str) -> bool {
        match method {
            method::PROMPTS_LIST | method::PROMPTS_GET => self.prompts,
            method::COMPLETION_COMPLETE => self.completions,
            method::RESOURCES_SUBSCRIBE | method::RESOURCES_UNSUBSCRIBE => self.subscribe,
            _ => self.resources,
        }
    }
}

/// The page's lists as this node read them.
#[derive(Default)]
pub(super) struct Lists {
    /// `None` until the page's `initialize` was read here (a session linked to another node's page
    /// asks the page through the link instead).
    offered: Option<Offered>,
    resources: Option<Arc<[Value]>>,
    templates: Option<Arc<[Value]>>,
    prompts: Option<Arc<[Value]>>,
}

impl Lists {
    fn slot(&mut self, method: &str) -> &mut Option<Arc<[Value]>> {
        match method {
            method::RESOURCE_TEMPLATES_LIST => &mut self.templates,
            method::PROMPTS_LIST => &mut self.prompts,
            _ => &mut self.resources,
        }
    }
}

/// The methods that list.
pub(crate) const LIST_METHODS: [&str; 3] = [
    method::RESOURCES_LIST,
    method::RESOURCE_TEMPLATES_LIST,
    method::PROMPTS_LIST,
];

/// Whether `uri` — as sent, or with every percent-encoding decoded (as the page reads it) — is
/// one of `resources` or one of `templates`' URIs (or a template itself, for a completion).
fn uri_listed(uri: &str, resources: &[Value], templates: &[Value]) -> bool {
    let decoded = served::percent_decoded(uri);
    let forms = [uri, &decoded];
    let listed = resources.iter().any(|r| {
        let listed = r.get("uri").and_then(Value::as_str);
        listed.is_some_and(|listed| forms.contains(&listed))
    });
    listed
        || templates.iter().any(|t| {
            let template = t.get("uriTemplate").and_then(Value::as_str);
            template.is_some_and(|t| {
                forms
                    .iter()
                    .any(|uri| t == *uri || template_matches(t, uri))
            })
        })
}

/// The page's answer to a URI's first subscription, for the subscribers waiting on it.
pub(super) type Subscribing = tokio::sync::watch::Sender<Option<Result<(), RpcError>>>;

/// The first subscription to a URI being asked of the page: dropped unanswered (its request
/// cancelled), the URI is no longer being asked about and its waiters ask again.
struct Asking<'a> {
    session: &'a PageSession,
    uri: &'a str,
    answered: Subscribing,
}

impl Drop for Asking<'_> {
    fn drop(&mut self) {
        if self.answered.borrow().is_none() {
            let mut state = self.session.lock();
            let ours =
                (state.subscribing.get(self.uri)).is_some_and(|s| s.same_channel(&self.answered));
            if ours {
                state.subscribing.remove(self.uri);
            }
        }
    }
}

/// The allow-list's refusal of `uri`.
fn not_allowed(uri: &str) -> RpcError {
    let mut error = served::invalid_params(format!(
        "resource '{uri}' is not allowed on this bridge (its --allow list names the resources \
         and templates agents may read)"
    ));
    error.data = Some(serde_json::json!({ "uri": uri }));
    error
}

impl PageSession {
    /// The page's `initialize` result was read: what it offers.
    pub(crate) fn set_offered(&self, capabilities: &Value) {
        self.lock().served.offered = Some(Offered::read(capabilities));
        self.changed();
    }

    /// What the page offers besides tools; `None` before its handshake on this node (a session
    /// linked to another node's page: ask it).
    pub fn offered(&self) -> Option<Offered> {
        self.lock().served.offered
    }

    /// The page answered one of the lists (`method`): kept, and watchers told when it changed.
    pub(crate) fn set_listed(&self, method: &str, entries: Vec<Value>) {
        let entries: Arc<[Value]> = entries.into();
        let mut state = self.lock();
        let slot = state.served.slot(method);
        if slot.as_deref() == Some(&*entries) {
            return;
        }
        *slot = Some(entries);
        drop(state);
        self.changed();
    }

    /// In a cluster, a session linked to another node's page: what that node read of the page
    /// (what it offers; each list, `None` for one it did not read or could not carry) replaces
    /// what this node knew, and watchers are told when it changed — an agent here hears the
    /// page's `list_changed` as one on its node does.
    pub(crate) fn mirror_served(&self, offered: Offered, lists: [Option<Vec<Value>>; 3]) {
        let mut state = self.lock();
        let mut changed = state.served.offered != Some(offered);
        state.served.offered = Some(offered);
        for (method, entries) in LIST_METHODS.into_iter().zip(lists) {
            let slot = state.served.slot(method);
            if slot.as_deref() != entries.as_deref() {
                *slot = entries.map(Arc::from);
                changed = true;
            }
        }
        drop(state);
        if changed {
            self.changed();
        }
    }

    /// One of the page's lists as this node last read it (all entries, the allow-list not
    /// applied); `None` when it never read it (the page offers none, or it is another node's).
    pub(crate) fn listed(&self, method: &str) -> Option<Arc<[Value]>> {
        self.lock().served.slot(method).clone()
    }

    /// The list `method` (`resources/list`, `resources/templates/list`, `prompts/list`) an agent
    /// sees: the page's, with the allow-list applied (by name) and the entries the operator's
    /// `block` rules cover left out (crate::calls::policy_gate::hidden). Read as this node keeps it, else
    /// (a page another node holds) asked of the page. A page that offers none lists nothing.
    pub async fn list(&self, method: &'static str) -> Result<Vec<Value>, RpcError> {
        let entries = match self.listed(method) {
            Some(entries) => entries,
            None => match self.offered() {
                Some(offered) if !offered.offers(method) => Arc::from(Vec::new()),
                _ => self.fetch_list(method).await?,
            },
        };
        Ok(self.visible(method, &entries))
    }

    /// The entries of the list `method` an agent sees: the allow-list applied, and the entries
    /// a `block` rule covers left out.
    fn visible(&self, method: &str, entries: &[Value]) -> Vec<Value> {
        let who = self.who();
        entries
            .iter()
            .filter(|entry| is_allowed(&self.allow, entry_name(entry)))
            .filter(|entry| !policy_gate::hidden(&self.policy, who, method, entry))
            .cloned()
            .collect()
    }

    /// Asks the page for one of its lists (the bridge's own request, as `tools/list` is).
    pub(crate) async fn fetch_list(&self, method: &'static str) -> Result<Arc<[Value]>, RpcError> {
        let answer = self
            .request(method, Value::Object(Map::new()), PAGE_HANDSHAKE_TIMEOUT)
            .await
            .map_err(|failure| self.failure_error(&failure, PAGE_HANDSHAKE_TIMEOUT))??;
        let answer: Value = serde_json::from_str(answer.get())
            .map_err(|e| RpcError::new(code::INTERNAL_ERROR, e.to_string()))?;
        let mut answer = check_answer(method, answer)?;
        let entries = match answer.get_mut(list_field(method)).map(Value::take) {
            Some(Value::Array(entries)) => entries,
            _ => Vec::new(),
        };
        Ok(entries.into())
    }

    /// Whether the allow-list lets an agent ask about `subject`: a prompt by its name; a resource
    /// when it is listed, or its URI is one of a listed template's, under an allowed name (a
    /// completion's `ref/resource` names a template by its `uriTemplate`). An empty allow-list
    /// allows all.
    pub async fn may_serve(&self, subject: &Subject) -> Result<(), RpcError> {
        if self.allow.is_empty() {
            return Ok(());
        }
        match subject {
            Subject::List => Ok(()),
            Subject::Prompt(name) if is_allowed(&self.allow, &self.prompt_original(name).await) => {
                Ok(())
            }
            Subject::Prompt(name) => Err(served::invalid_params(format!(
                "prompt '{name}' is not allowed on this bridge (its --allow list)"
            ))),
            Subject::Resource(uri) => {
                let resources = self.list(method::RESOURCES_LIST).await?;
                let templates = self.list(method::RESOURCE_TEMPLATES_LIST).await?;
                match uri_listed(uri, &resources, &templates) {
                    true => Ok(()),
                    false => Err(not_allowed(uri)),
                }
            }
        }
    }

    /// Whether the lists this node read of the page (as an agent sees them) hold `uri`, or a
    /// template it is one of.
    pub(crate) fn lists_uri_now(&self, uri: &str) -> bool {
        let read = |method| match self.listed(method) {
            Some(entries) => self.visible(method, &entries),
            None => Vec::new(),
        };
        let resources = read(method::RESOURCES_LIST);
        let templates = read(method::RESOURCE_TEMPLATES_LIST);
        uri_listed(uri, &resources, &templates)
    }

    /// The name the page defined the prompt listed as `name` by (its entry's
    /// `_meta["clienttools/originalName"]`), else `name`: the allow-list and the policy's
    /// `prompts` patterns match it, as they match a tool's original name. Read from the list as
    /// this node keeps it (the page's, or mirrored from the node holding it); none kept (not read
    /// yet): `name`.
    pub(crate) async fn prompt_original(&self, name: &str) -> String {
        let Some(entries) = self.listed(method::PROMPTS_LIST) else {
            return name.to_owned();
        };
        let listed = entries
            .iter()
            .find(|entry| entry.get("name").and_then(Value::as_str) == Some(name));
        listed.map_or(name, entry_name).to_owned()
    }

    /// What a `subscriptions/listen` stream (2026-07-28) knows before it acknowledges: the
    /// refusal of a subscription to `uri` that can be decided now, without asking the page — the
    /// URI's own checks, a page that offers no subscriptions, the operator's policy (a `block`
    /// rule, audited as the subscription would be) and the allow-list, when this node has read
    /// the page's lists. `None`: the page decides (its answer comes later).
    pub(crate) fn refuses_subscription_now(&self, uri: &str) -> Option<RpcError> {
        let request = match ServedRequest::subscribe(uri) {
            Ok(request) => request,
            Err(refused) => return Some(refused),
        };
        if self.offered().is_some_and(|offered| !offered.subscribe) {
            return Some(RpcError::new(
                code::METHOD_NOT_FOUND,
                format!("the page (session '{}') offers no subscriptions", self.id),
            ));
        }
        if !self.policy.is_empty() {
            let (target, input) = policy_gate::served_facts(&request)?;
            if self
                .policy
                .check_input_on(target, self.who(), &input)
                .is_err()
            {
                let id = self.next_request_id();
                let decided = policy_gate::serving(
                    &self.policy,
                    &request,
                    self.who(),
                    &id,
                    true,
                    now(),
                    self.log_payloads,
                );
                return decided.err();
            }
        }
        if !self.allow.is_empty() {
            let resources = self.listed(method::RESOURCES_LIST)?;
            let templates = self.listed(method::RESOURCE_TEMPLATES_LIST)?;
            let resources = self.visible(method::RESOURCES_LIST, &resources);
            let templates = self.visible(method::RESOURCE_TEMPLATES_LIST, &templates);
            if !uri_listed(uri, &resources, &templates) {
                return Some(not_allowed(uri));
            }
        }
        None
    }

    /// Asks the page what `request` asks, as a tool call is made: within a timeout (the options',
    /// else `_meta` `clienttools/timeoutMs`, else the bridge's), with exactly one outcome. The page
    /// may report progress, log and ask the agent rounds (`clienttools/input`) tied to the request
    /// by its id, as during a `tools/call` (the options' `progress` and `events` hear them); the
    /// options' `cancel` tells it `notifications/cancelled`. `None` when cancelled.
    ///
    /// The allow-list is checked here ([`Self::may_serve`]); the page's errors (an unknown URI's
    /// `-32002`, a prompt's `-32602`) come back as the page sent them.
    pub async fn serve(
        &self,
        request: ServedRequest,
        mut options: CallOptions<'_>,
    ) -> Option<ServedOutcome> {
        let method = request.method();
        if let Err(refused) = self.may_serve(request.subject()).await {
            return Some(Err(refused));
        }
        if let Some(false) = self.offered().map(|offered| offered.offers(method)) {
            return Some(Err(RpcError::new(
                code::METHOD_NOT_FOUND,
                format!("the page (session '{}') offers no {method}", self.id),
            )));
        }
        let timeout = match self.served_timeout(&options) {
            Ok(timeout) => timeout,
            Err(refused) => return Some(Err(refused)),
        };
        let id = self.next_request_id();
        // The operator's policy on reads, gets and completions (a subscription is decided in
        // `subscribe_resource`; the bridge's own unsubscribe and resubscribe are not the agent's).
        let policed = match method {
            method::RESOURCES_SUBSCRIBE | method::RESOURCES_UNSUBSCRIBE => Ok(None),
            _ => {
                let linked = matches!(self.via(), Some(Via::Node(_)));
                let who = self.who();
                // A prompt by the name the page defined it by.
                let policed_as = match request.subject() {
                    Subject::Prompt(name) if !self.policy.is_empty() => {
                        let original = self.prompt_original(name).await;
                        (original != *name).then(|| request.about_prompt(original))
                    }
                    _ => None,
                };
                policy_gate::serving(
                    &self.policy,
                    policed_as.as_ref().unwrap_or(&request),
                    who,
                    &id,
                    linked,
                    now(),
                    self.log_payloads,
                )
            }
        };
        let policed = match policed {
            Ok(policed) => policed,
            Err(refused) => return Some(Err(refused)),
        };
        let redact = policed
            .as_ref()
            .and_then(policy_gate::Running::event_redaction);
        let mut params = request.into_params();
        let mut bridge_meta = Map::new();
        bridge_meta.insert(meta::TIMEOUT_MS.into(), whole_ms(timeout).into());
        let level = options.meta.as_ref().and_then(|m| m.get(meta::LOG_LEVEL));
        if let Some(level) = level.filter(|l| l.is_string()) {
            bridge_meta.insert(meta::LOG_LEVEL.into(), level.clone());
        }
        params.insert("_meta".into(), Value::Object(bridge_meta));
        let request = new_request(
            id.clone(),
            method,
            Value::Object(params),
            timeout + ANSWER_SLACK,
            Purpose::ToolCall,
        );
        let cancel = options.take_cancel();
        let started = tokio::time::Instant::now();
        let settled = self
            .send_and_wait(
                request,
                options.progress,
                (options.events, redact),
                cancel,
                None,
            )
            .await;
        let (outcome, traced) = match settled {
            Ok(Ok(answer)) => {
                let read = serde_json::from_str::<Value>(answer.get())
                    .map_err(|e| RpcError::new(code::INTERNAL_ERROR, e.to_string()))
                    .and_then(|answer| check_answer(method, answer))
                    .and_then(|mut answer| match &policed {
                        Some(policed) => policy_gate::served_answered(
                            &self.policy,
                            policed,
                            self.who(),
                            &id,
                            method,
                            &mut answer,
                            self.log_payloads,
                        )
                        .map(|()| answer),
                        None => Ok(answer),
                    });
                let traced = if read.is_ok() { "ok" } else { "error" };
                (Some(read), traced)
            }
            Ok(Err(mut error)) => {
                if let Some(policed) = &policed {
                    policy_gate::failed(policed, &mut error);
                }
                (Some(Err(error)), "error")
            }
            Err(RequestFailure::Cancelled) => (None, "cancelled"),
            Err(failure) => (
                Some(Err(self.failure_error(&failure, timeout))),
                failure.outcome(),
            ),
        };
        tracing::info_span!(
            "served_request",
            session = %self.id,
            user = self.user.as_deref().unwrap_or(""),
            method,
            request = %id,
            outcome = traced,
            duration_ms = started.elapsed().as_millis() as u64,
        )
        .in_scope(|| tracing::info!("served request finished"));
        outcome
    }

    /// Whose requests the policy decides on: this session, and the user it serves.
    pub(crate) fn who(&self) -> Who<'_> {
        Who {
            session: &self.id,
            user: self.user.as_deref(),
        }
    }

    /// The timeout of a served request: the options', else the `_meta`'s `clienttools/timeoutMs`,
    /// else the bridge's; over the core's bound, refused naming it.
    fn served_timeout(&self, options: &CallOptions<'_>) -> Result<Duration, RpcError> {
        let asked = match options.timeout {
            Some(timeout) => Some(whole_ms(timeout)),
            None => {
                let given = options.meta.as_ref().and_then(|m| m.get(meta::TIMEOUT_MS));
                match given {
                    None => None,
                    Some(ms) => {
                        match ms.as_f64().and_then(client_tools_core::limits::positive_ms) {
                            Some(ms) => Some(ms),
                            None => {
                                return Err(served::invalid_params(format!(
                                    "_meta '{}' must be a positive number of milliseconds",
                                    meta::TIMEOUT_MS
                                )))
                            }
                        }
                    }
                }
            }
        };
        let default_ms = whole_ms(self.default_timeout);
        call_timeout(asked, None, default_ms)
            .map(Duration::from_millis)
            .map_err(|_| {
                served::invalid_params(format!(
                    "a timeout of {} ms is over the limit of {MAX_TIMEOUT_MS} ms",
                    asked.unwrap_or_default()
                ))
            })
    }

    /// A request that got no answer from the page, as the agent's JSON-RPC error (`-32603`).
    fn failure_error(&self, failure: &RequestFailure, timeout: Duration) -> RpcError {
        RpcError::new(code::INTERNAL_ERROR, failure.describe(&self.id, timeout))
    }

    /// The page's `notifications/resources/updated`: to the agents subscribed (each agent's own
    /// subscriptions filter what it hears).
    pub(crate) fn resource_updated(&self, uri: String) {
        let _ = self.resource_updates.send(uri);
    }

    /// The URIs of the page's `notifications/resources/updated` from now on.
    pub fn resource_updates(&self) -> broadcast::Receiver<String> {
        self.resource_updates.subscribe()
    }

    /// One more agent subscription to `uri`: the first one asks the page (`resources/subscribe`,
    /// whose error is the agent's), later ones only count. Bounded per page session.
    pub async fn subscribe_resource(&self, uri: &str) -> Result<(), RpcError> {
        let request = ServedRequest::subscribe(uri)?;
        self.may_serve(request.subject()).await?;
        let id = self.next_request_id();
        let who = self.who();
        policy_gate::serving(
            &self.policy,
            &request,
            who,
            &id,
            true,
            now(),
            self.log_payloads,
        )?;
        self.count_subscription(uri, request).await
    }

    /// In a cluster, on the node holding the page's socket: another node's first subscription to
    /// `uri` (its linked session counts its own agents', and checked them as
    /// [`Self::subscribe_resource`] does) counts as one more here, so the page hears the first
    /// subscription of all nodes and the last unsubscription ([`Self::unsubscribe_resource`]).
    pub(crate) async fn subscribe_relayed(&self, uri: &str) -> Result<(), RpcError> {
        let request = ServedRequest::subscribe(uri)?;
        self.count_subscription(uri, request).await
    }

    /// A subscription counted for another node that no longer holds it (the page's connection
    /// here ended or was replaced): no longer counted; when it was the URI's last, the page is
    /// told `resources/unsubscribe` (not awaited). That node subscribes again wherever the page is.
    pub(crate) fn forget_subscription(self: &Arc<Self>, uri: &str) {
        if !self.release_subscription(uri) {
            return;
        }
        // The last one: the page stops watching the URI (a long-lived tab's watched set, bounded
        // by the page, does not fill with URIs nobody is subscribed to).
        let (session, uri) = (self.clone(), uri.to_owned());
        tokio::spawn(async move {
            if let Ok(request) = ServedRequest::unsubscribe(&uri) {
                let _ = session.serve(request, CallOptions::new()).await;
            }
        });
    }

    /// Counts one more subscription to `uri`; the first asks the page (`request`). One that comes
    /// while the page is being asked about the first waits for its answer: counted when the page
    /// accepted, refused with the page's error when it refused (so no agent stays subscribed to
    /// a URI the page does not watch).
    async fn count_subscription(&self, uri: &str, request: ServedRequest) -> Result<(), RpcError> {
        let asking = loop {
            let mut waiting = {
                let mut state = self.lock();
                if let Some(count) = state.subscribed.get_mut(uri) {
                    *count += 1;
                    return Ok(());
                }
                match state.subscribing.get(uri) {
                    Some(asking) => asking.subscribe(),
                    None => {
                        let known = state.subscribed.len() + state.subscribing.len();
                        if known >= MAX_SUBSCRIPTIONS_PER_SESSION {
                            return Err(served::invalid_params(format!(
                                "too many resources subscribed on this page session (limit \
                                 {MAX_SUBSCRIPTIONS_PER_SESSION})"
                            )));
                        }
                        let (asking, _) = tokio::sync::watch::channel(None);
                        state.subscribing.insert(uri.to_owned(), asking.clone());
                        break Asking {
                            session: self,
                            uri,
                            answered: asking,
                        };
                    }
                }
            };
            // The first subscriber's answer; its asking dropped unanswered: ask again.
            let answer = waiting.wait_for(Option::is_some).await.map(|a| a.clone());
            if let Ok(Some(Err(refused))) = answer {
                return Err(refused);
            }
        };
        let asked = self.serve(request, CallOptions::new()).await;
        let answer = match asked {
            Some(Ok(_)) => Ok(()),
            outcome => Err(outcome
                .and_then(Result::err)
                .unwrap_or_else(|| RpcError::new(code::INTERNAL_ERROR, "cancelled"))),
        };
        {
            let mut state = self.lock();
            state.subscribing.remove(uri);
            if answer.is_ok() {
                *state.subscribed.entry(uri.to_owned()).or_insert(0) += 1;
            }
        }
        asking.answered.send_replace(Some(answer.clone()));
        answer
    }

    /// One agent subscription to `uri` less: the last one tells the page (`resources/unsubscribe`,
    /// its answer not awaited by the agent).
    pub async fn unsubscribe_resource(&self, uri: &str) {
        if !self.release_subscription(uri) {
            return;
        }
        if let Ok(request) = ServedRequest::unsubscribe(uri) {
            let _ = self.serve(request, CallOptions::new()).await;
        }
    }

    /// Counts one subscription to `uri` less: `true` when it was the last.
    fn release_subscription(&self, uri: &str) -> bool {
        let mut state = self.lock();
        let Some(count) = state.subscribed.get_mut(uri) else {
            return false;
        };
        *count -= 1;
        if *count > 0 {
            return false;
        }
        state.subscribed.remove(uri);
        true
    }

    /// After the page (re)connected and listed: the resources agents are subscribed to are
    /// subscribed on the new connection (a reloaded page starts with none).
    pub(crate) async fn resubscribe(&self) {
        let uris: Vec<String> = self.lock().subscribed.keys().cloned().collect();
        for uri in uris {
            if let Ok(request) = ServedRequest::subscribe(&uri) {
                let _ = self.serve(request, CallOptions::new()).await;
            }
        }
    }
}
