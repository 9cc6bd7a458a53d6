//! `/mcp`: MCP Streamable HTTP for agents (rmcp), one [`McpAgent`] per MCP session, bound to the
//! page session named by `?session=<id>` (else the newest connected page).

use std::sync::Arc;

use axum::extract::Request;
use axum::http::{Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::{any_service, MethodRouter};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use super::mcp::{with_request_seen, McpAgent};
use crate::bridge::Bridge;

/// `/mcp` as the bridge serves it: [`mcp_service`], with a session's `DELETE` answered 200
/// ([`terminated_is_ok`]), and the HTTP request's scope readable while rmcp handles it
/// ([`with_request_seen`]: rmcp's header checks look up tools before the agent has the request).
pub fn mcp_route(bridge: &Bridge) -> MethodRouter {
    any_service(mcp_service(bridge))
        .layer(middleware::from_fn(terminated_is_ok))
        .layer(middleware::from_fn(with_request_seen))
}

pub fn mcp_service(bridge: &Bridge) -> StreamableHttpService<McpAgent, LocalSessionManager> {
    let bridge = bridge.clone();
    // The bridge checks `Host` on every route itself (crate::routes::auth), with the names configured by
    // --allowed-host: rmcp's own narrower check would refuse those.
    let config = StreamableHttpServerConfig::default().disable_allowed_hosts();
    StreamableHttpService::new(
        move || Ok(McpAgent::new(bridge.clone(), None)),
        Arc::new(LocalSessionManager::default()),
        config,
    )
}

/// rmcp ends a session on `DELETE` and answers `202 Accepted`; the session is terminated by then,
/// which the Streamable HTTP transport answers `200 OK` — and the official Python SDK accepts only
/// 200, 204 or 405 there (else it logs `Session termination failed: 202` at every close). Every
/// other answer (a POST's 202 for a notification, a DELETE's 400 or 404) is left as rmcp gave it.
pub async fn terminated_is_ok(request: Request, next: Next) -> Response {
    let delete = request.method() == Method::DELETE;
    let mut response = next.run(request).await;
    if delete && response.status() == StatusCode::ACCEPTED {
        *response.status_mut() = StatusCode::OK;
    }
    response
}
