//! The bridge serving the benchmark page, with cross-origin isolation so `performance.now()` has
//! microsecond resolution in the page (100 µs / 1 ms otherwise, too coarse for per-call numbers).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::http::{HeaderName, HeaderValue};
use axum::response::Response;
use client_tools_bridge::{Bridge, BridgeConfig, PageSession};
use tokio::net::TcpListener;

pub struct BenchServer {
    pub bridge: Bridge,
    pub base_url: String,
    task: tokio::task::JoinHandle<()>,
}

impl BenchServer {
    /// A bridge on a free loopback port serving `www` at `/` and the package at `/pkg/`.
    pub async fn start(www: PathBuf, pkg: PathBuf) -> std::io::Result<BenchServer> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let address = listener.local_addr()?;
        let bridge = Bridge::new(BridgeConfig {
            listen: address,
            www_dir: www,
            pkg_dir: pkg,
            ..BridgeConfig::default()
        });
        let app = bridge
            .router()
            .layer(axum::middleware::map_response(isolate));
        // As `Bridge::serve` does: tool calls are small frames, so Nagle's delay must not apply.
        let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
            let _ = tcp.set_nodelay(true);
        });
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(BenchServer {
            bridge,
            base_url: format!("http://{address}"),
            task,
        })
    }

    /// Waits until `count` pages are connected and list their tools.
    pub async fn wait_for_pages(
        &self,
        count: usize,
        timeout: Duration,
    ) -> Result<Vec<Arc<PageSession>>, String> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let ready: Vec<_> = self
                .bridge
                .sessions()
                .into_iter()
                .filter(|s| s.is_connected() && s.tools().iter().any(|t| t.name == "echo"))
                .collect();
            if ready.len() >= count {
                return Ok(ready);
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(format!(
                    "only {} of {count} benchmark pages connected within {} s",
                    ready.len(),
                    timeout.as_secs()
                ));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for BenchServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn isolate(mut response: Response) -> Response {
    let headers = response.headers_mut();
    for (name, value) in [
        ("cross-origin-opener-policy", "same-origin"),
        ("cross-origin-embedder-policy", "require-corp"),
    ] {
        headers.insert(
            HeaderName::from_static(name),
            HeaderValue::from_static(value),
        );
    }
    response
}
