//! The static site: the built package at `/pkg/` and the `--www` folder at `/`.
//!
//! Its pages are served in an origin-keyed agent cluster (`Origin-Agent-Cluster: ?1`): no
//! `document.domain` games, and what WebMCP polyfills ask of a page before they run (MCP-B's
//! refuses a page whose `originAgentCluster` is `false`, Firefox's default).

use std::path::Path;

use axum::http::{HeaderName, HeaderValue};
use axum::Router;
use tower_http::services::ServeDir;
use tower_http::set_header::SetResponseHeaderLayer;

/// `/pkg/…` from `pkg_dir`, everything else from `www_dir`.
pub fn router<S: Clone + Send + Sync + 'static>(pkg_dir: &Path, www_dir: &Path) -> Router<S> {
    Router::new()
        .nest_service("/pkg", ServeDir::new(pkg_dir))
        .fallback_service(ServeDir::new(www_dir))
        .layer(SetResponseHeaderLayer::if_not_present(
            HeaderName::from_static("origin-agent-cluster"),
            HeaderValue::from_static("?1"),
        ))
}
