//! A web site of the page's own, apart from the bridge, as a user's site serves the package: the
//! pages of `tests/e2e/www/` at `/`, the built package deep in `/assets/vendor/client-tools/` (the
//! script embed resolves everything from its own `src`), every response with a strict
//! Content-Security-Policy (no `unsafe-eval`, no `unsafe-inline`, styles only from the site). A page
//! connects to the bridge on its own port: `{{bridge_ws}}` in a page is replaced by its address.
//!
//! [`Site::serve_folder`] serves a folder as it is (what a bundler built) under the same policy.

use std::path::PathBuf;

use axum::extract::{Path, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use tokio::net::TcpListener;
use tower_http::services::ServeDir;
use tower_http::set_header::SetResponseHeaderLayer;

use crate::{e2e_dir, pkg_dir};

/// Where the site serves the package.
pub const PACKAGE_PATH: &str = "/assets/vendor/client-tools";

/// A running site; stops when dropped.
pub struct Site {
    pub base_url: String,
    /// The policy every response carries.
    pub csp: String,
    server: tokio::task::JoinHandle<()>,
}

#[derive(Clone)]
struct Pages {
    dir: PathBuf,
    bridge_ws: String,
}

impl Site {
    /// Serves the site on a free loopback port; its pages connect to `bridge_ws`.
    pub async fn start(bridge_ws: &str) -> Site {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a loopback port");
        let base_url = format!("http://{}", listener.local_addr().unwrap());
        let csp = strict_policy(bridge_ws);
        let pages = Pages {
            dir: e2e_dir().join("www"),
            bridge_ws: bridge_ws.to_owned(),
        };
        let app = Router::new()
            .route("/{page}", get(page))
            .with_state(pages)
            .nest_service(PACKAGE_PATH, ServeDir::new(pkg_dir()))
            .nest_service("/scripts", ServeDir::new(e2e_dir().join("www/scripts")))
            .layer(SetResponseHeaderLayer::overriding(
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_str(&csp).expect("a header value"),
            ));
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Site {
            base_url,
            csp,
            server,
        }
    }

    /// Serves the files of `dir` as they are (`index.html` for a folder), under the same strict
    /// policy: a site as a bundler built it (tests/e2e/tests/bundlers.rs). Its pages find the
    /// bridge by themselves; the policy lets them connect to `bridge_ws`.
    pub async fn serve_folder(dir: &std::path::Path, bridge_ws: &str) -> Site {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a loopback port");
        let base_url = format!("http://{}", listener.local_addr().unwrap());
        let csp = strict_policy(bridge_ws);
        let app = Router::new().fallback_service(ServeDir::new(dir)).layer(
            SetResponseHeaderLayer::overriding(
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_str(&csp).expect("a header value"),
            ),
        );
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Site {
            base_url,
            csp,
            server,
        }
    }
}

/// No `unsafe-eval`, no `unsafe-inline`, styles only from the site; connections to the site and the
/// bridge at `bridge_ws`.
fn strict_policy(bridge_ws: &str) -> String {
    let bridge_origin = bridge_ws.trim_end_matches("/ws");
    format!(
        "default-src 'none'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; \
         connect-src 'self' {bridge_origin}; img-src 'self'; base-uri 'none'; \
         form-action 'self'; frame-ancestors 'none'"
    )
}

/// An `.html` page of `tests/e2e/www/`, with the bridge's address filled in.
async fn page(State(pages): State<Pages>, Path(name): Path<String>) -> Response {
    let safe = name.ends_with(".html") && !name.contains(['/', '\\']) && !name.starts_with('.');
    match std::fs::read_to_string(pages.dir.join(&name)) {
        Ok(text) if safe => Html(text.replace("{{bridge_ws}}", &pages.bridge_ws)).into_response(),
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}

impl Drop for Site {
    fn drop(&mut self) {
        self.server.abort();
    }
}
