//! What an agent's HTTP request says about whose pages it reaches and which it asks for — read
//! from the request rmcp is handling, also where rmcp gives the agent no request in hand.
//!
//! rmcp checks a call's `Mcp-Param-*` headers against the called tool's schema (SEP-2243) before
//! the request reaches the agent, asking [`rmcp::ServerHandler::get_tool`] of a fresh agent that
//! no request has bound yet. That lookup must see only pages the request's credential reaches: the
//! route runs rmcp inside [`with_request_seen`], and the agent reads [`RequestSeen::current`].

use axum::extract::Request;
use axum::http::Uri;
use axum::middleware::Next;
use axum::response::Response;

use super::Bound;
use crate::sessions::scope::AgentScope;

/// The credential's scope (crate::routes::auth) and the binding the URL asks for.
#[derive(Debug, Clone)]
pub(super) struct RequestSeen {
    pub scope: AgentScope,
    pub binding: Option<Bound>,
}

tokio::task_local! {
    static SEEN: RequestSeen;
}

impl RequestSeen {
    /// The HTTP request being handled, if this runs inside [`with_request_seen`].
    pub fn current() -> Option<Self> {
        SEEN.try_with(Clone::clone).ok()
    }
}

/// Middleware of `/mcp` (after the agent check put the scope on the request): rmcp handles the
/// request with [`RequestSeen::current`] readable. A request without a scope reaches no page.
pub async fn with_request_seen(request: Request, next: Next) -> Response {
    let Some(scope) = request.extensions().get::<AgentScope>().cloned() else {
        return next.run(request).await;
    };
    let binding = binding_in(request.uri());
    SEEN.scope(RequestSeen { scope, binding }, next.run(request))
        .await
}

/// `?session=<id>` or `?user=SUB` of a request's URL.
pub(super) fn binding_in(uri: &Uri) -> Option<Bound> {
    uri.query()?.split('&').find_map(|pair| {
        let (key, value) = pair.split_once('=')?;
        let value = percent_decoded(value).filter(|v| !v.is_empty())?;
        match key {
            "session" => Some(Bound::Session(value)),
            "user" => Some(Bound::User(value)),
            _ => None,
        }
    })
}

/// A query value, `%XX` and `+` decoded (a user id may hold any character); `None` if malformed.
fn percent_decoded(value: &str) -> Option<String> {
    let value = value.replace('+', " ");
    let decoded = percent_encoding::percent_decode_str(&value)
        .decode_utf8()
        .ok()?;
    Some(decoded.into_owned())
}
