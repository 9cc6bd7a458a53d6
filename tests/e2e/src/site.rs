//! A web site of the page's own, apart from the bridge, as a user's site serves the package: the
//! pages of `tests/e2e/www/` at `/`, the built package deep in `/assets/vendor/client-tools/` (the
//! script embed resolves everything from its own `src`), every response with a strict
//! Content-Security-Policy (no `unsafe-eval`, no `unsafe-inline`, styles only from the site). A page
//! connects to the bridge on its own port: `{{bridge_ws}}` in a page is replaced by its address.
//! The package is also served under `/renamed/` with its loader called `embed.js` (a module script
//! must then mark itself `data-client-tools`), and by a "CDN" of its own on another origin, with
//! CORS (`{{cdn}}` in a page; the policy allows it for scripts and connections).
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
    cdn: Option<tokio::task::JoinHandle<()>>,
}

#[derive(Clone)]
struct Pages {
    dir: PathBuf,
    bridge_ws: String,
    cdn_url: String,
}

impl Site {
    /// Serves the site on a free loopback port; its pages connect to `bridge_ws`.
    pub async fn start(bridge_ws: &str) -> Site {
        let (cdn_url, cdn) = serve_cdn().await;
        let csp = strict_policy(bridge_ws, &cdn_url);
        let pages = Pages {
            dir: e2e_dir().join("www"),
            bridge_ws: bridge_ws.to_owned(),
            cdn_url,
        };
        let app = Router::new()
            .route("/{page}", get(page))
            .with_state(pages)
            .route("/renamed/{*path}", get(renamed))
            .nest_service(PACKAGE_PATH, ServeDir::new(pkg_dir()))
            .nest_service("/scripts", ServeDir::new(e2e_dir().join("www/scripts")))
            .layer(policy_header(&csp));
        let (base_url, server) = serve(app).await;
        Site {
            base_url,
            csp,
            server,
            cdn: Some(cdn),
        }
    }

    /// Serves the files of `dir` as they are (`index.html` for a folder), under the same strict
    /// policy: a site as a bundler built it (tests/e2e/tests/e2e/bundlers.rs). Its pages find the
    /// bridge by themselves; the policy lets them connect to `bridge_ws`.
    pub async fn serve_folder(dir: &std::path::Path, bridge_ws: &str) -> Site {
        let csp = strict_policy(bridge_ws, "");
        let app = Router::new()
            .fallback_service(ServeDir::new(dir))
            .layer(policy_header(&csp));
        let (base_url, server) = serve(app).await;
        Site {
            base_url,
            csp,
            server,
            cdn: None,
        }
    }
}

/// The package on another origin, as a CDN serves it: `Access-Control-Allow-Origin: *` (module
/// scripts and `fetch` of the `.wasm` are CORS requests).
async fn serve_cdn() -> (String, tokio::task::JoinHandle<()>) {
    let app = Router::new()
        .nest_service("/client-tools", ServeDir::new(pkg_dir()))
        .layer(SetResponseHeaderLayer::overriding(
            header::ACCESS_CONTROL_ALLOW_ORIGIN,
            HeaderValue::from_static("*"),
        ));
    serve(app).await
}

/// Serves `app` on a free loopback port: its base URL, and the task serving it.
async fn serve(app: Router) -> (String, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind a loopback port");
    let url = format!("http://{}", listener.local_addr().unwrap());
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (url, server)
}

/// The `Content-Security-Policy` header on every response.
fn policy_header(csp: &str) -> SetResponseHeaderLayer<HeaderValue> {
    SetResponseHeaderLayer::overriding(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_str(csp).expect("a header value"),
    )
}

/// The package under `/renamed/`, its loader as `embed.js`.
async fn renamed(Path(path): Path<String>) -> Response {
    let file = if path == "embed.js" {
        "client-tools.js"
    } else {
        path.as_str()
    };
    if file
        .split('/')
        .any(|part| part.is_empty() || part.starts_with('.'))
    {
        return StatusCode::NOT_FOUND.into_response();
    }
    let content_type = match file.rsplit('.').next() {
        Some("js") => "text/javascript",
        Some("wasm") => "application/wasm",
        _ => "application/octet-stream",
    };
    match std::fs::read(pkg_dir().join(file)) {
        Ok(bytes) => ([(header::CONTENT_TYPE, content_type)], bytes).into_response(),
        Err(_) => StatusCode::NOT_FOUND.into_response(),
    }
}

/// No `unsafe-eval`, no `unsafe-inline`, styles only from the site; scripts from the site and the
/// CDN (`cdn`, may be empty), connections to those and to the bridge at `bridge_ws`.
fn strict_policy(bridge_ws: &str, cdn: &str) -> String {
    let bridge_origin = bridge_ws.trim_end_matches("/ws");
    format!(
        "default-src 'none'; script-src 'self' {cdn} 'wasm-unsafe-eval'; style-src 'self'; \
         connect-src 'self' {cdn} {bridge_origin}; img-src 'self'; base-uri 'none'; \
         form-action 'self'; frame-ancestors 'none'"
    )
}

/// An `.html` page of `tests/e2e/www/`, with the bridge's address filled in.
async fn page(State(pages): State<Pages>, Path(name): Path<String>) -> Response {
    let safe = name.ends_with(".html") && !name.contains(['/', '\\']) && !name.starts_with('.');
    match std::fs::read_to_string(pages.dir.join(&name)) {
        Ok(text) if safe => Html(
            text.replace("{{bridge_ws}}", &pages.bridge_ws)
                .replace("{{cdn}}", &pages.cdn_url),
        )
        .into_response(),
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}

impl Drop for Site {
    fn drop(&mut self) {
        self.server.abort();
        if let Some(cdn) = &self.cdn {
            cdn.abort();
        }
    }
}
