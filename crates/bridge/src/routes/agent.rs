//! `/mcp`: MCP Streamable HTTP for agents (rmcp), one [`McpAgent`] per MCP session, bound to the
//! page session named by `?session=<id>` (else the newest connected page).

use std::sync::Arc;

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use crate::bridge::Bridge;
use crate::mcp::McpAgent;

pub fn mcp_service(bridge: &Bridge) -> StreamableHttpService<McpAgent, LocalSessionManager> {
    let bridge = bridge.clone();
    // The bridge checks `Host` on every route itself (crate::auth), with the names configured by
    // --allowed-host: rmcp's own narrower check would refuse those.
    let config = StreamableHttpServerConfig::default().disable_allowed_hosts();
    StreamableHttpService::new(
        move || Ok(McpAgent::new(bridge.clone(), None)),
        Arc::new(LocalSessionManager::default()),
        config,
    )
}
