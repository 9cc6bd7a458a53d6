//! Harness for the end-to-end tests: a bridge on a free loopback port serving a test page and the
//! built package, and a real headless Chromium showing that page.
//!
//! Needs `pkg/` (built by `cargo xtask build`; `cargo xtask test` builds it first) and Chromium
//! (`CHROMIUM`, default `/usr/bin/chromium`).

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

pub mod python_steps;
pub mod raw_page;
pub mod site;
pub mod webdriver;

use client_tools_bridge::{Bridge, BridgeConfig, PageSession};
use tokio::net::TcpListener;
use tokio::process::{Child, Command};

/// A running bridge with one browser page connected to it.
pub struct Stack {
    pub bridge: Bridge,
    pub base_url: String,
    pub page: Arc<PageSession>,
    config: BridgeConfig,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
    browser: Child,
    _profile: TempDir,
}

impl Stack {
    /// Starts the bridge, opens `page` (a file of `tests/e2e/www/`) in Chromium and waits until the
    /// page has connected and listed its tools.
    pub async fn start(page: &str, config: BridgeConfig) -> Stack {
        let opened = Opened::new(page, config).await;
        let page = wait_for_page(&opened.bridge).await;
        Stack {
            bridge: opened.bridge,
            base_url: opened.base_url,
            page,
            config: opened.config,
            server: opened.server,
            browser: opened.browser,
            _profile: opened.profile,
        }
    }

    /// Serves `page` and opens it, without waiting for it to connect to this bridge (for pages that
    /// talk to another runtime). Dropping the result closes the browser (`kill_on_drop`).
    pub async fn start_page_only(page: &str) -> Opened {
        Opened::new(page, BridgeConfig::default()).await
    }

    /// Stops the bridge (every page connection drops) and starts a fresh one on the same address,
    /// as a runtime restart would; returns once the page has reconnected to the new bridge.
    pub async fn restart_bridge(&mut self) {
        self.server.abort();
        for session in self.bridge.sessions() {
            session.drop_connection();
        }
        let _ = (&mut self.server).await;
        let listener = loop {
            match TcpListener::bind(self.config.listen).await {
                Ok(listener) => break listener,
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        };
        self.bridge = Bridge::new(self.config.clone());
        self.server = spawn_server(&self.bridge, listener);
        self.page = wait_for_page(&self.bridge).await;
    }

    /// Stops the browser (the page's connection ends with it).
    pub async fn close_browser(&mut self) {
        let _ = self.browser.kill().await;
    }
}

/// A bridge serving the e2e site and the package, and Chromium showing one of its pages.
pub struct Opened {
    pub bridge: Bridge,
    pub base_url: String,
    config: BridgeConfig,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
    browser: Child,
    profile: TempDir,
}

impl Opened {
    /// Closes the browser (the page's tab with it).
    pub async fn close_browser(&mut self) {
        let _ = self.browser.kill().await;
    }

    async fn new(page: &str, config: BridgeConfig) -> Opened {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a loopback port");
        let address = listener.local_addr().unwrap();
        let config = BridgeConfig {
            listen: address,
            www_dir: e2e_dir().join("www"),
            pkg_dir: pkg_dir(),
            ..config
        };
        let bridge = Bridge::new(config.clone());
        let server = spawn_server(&bridge, listener);
        let base_url = format!("http://{address}");
        let profile = TempDir::new("chromium-profile");
        let browser = launch_chromium(&format!("{base_url}/{page}"), &profile.0);
        Opened {
            bridge,
            base_url,
            config,
            server,
            browser,
            profile,
        }
    }
}

/// A bridge on a free loopback port, without a browser (for tests whose pages are [`raw_page`]s).
pub struct BridgeOnly {
    pub bridge: Bridge,
    pub base_url: String,
    pub ws_url: String,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl BridgeOnly {
    pub async fn start(config: BridgeConfig) -> BridgeOnly {
        Self::start_serving(config, None).await
    }

    /// A bridge serving the e2e site and the built package, for pages a test opens itself (through
    /// WebDriver, [`webdriver::Driven`]).
    pub async fn serving_package(config: BridgeConfig) -> BridgeOnly {
        Self::start_serving(config, Some(pkg_dir())).await
    }

    /// A bridge serving the demo site (`www/`, what `cargo xtask demo` serves) and the package.
    pub async fn serving_demo(config: BridgeConfig) -> BridgeOnly {
        let www_dir = e2e_dir().join("../../www");
        Self::start_serving(BridgeConfig { www_dir, ..config }, Some(pkg_dir())).await
    }

    async fn start_serving(config: BridgeConfig, pkg: Option<PathBuf>) -> BridgeOnly {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a loopback port");
        let address = listener.local_addr().unwrap();
        let default_www = BridgeConfig::default().www_dir;
        let www_dir = if config.www_dir == default_www {
            e2e_dir().join("www")
        } else {
            config.www_dir.clone()
        };
        let bridge = Bridge::new(BridgeConfig {
            listen: address,
            www_dir,
            pkg_dir: pkg.unwrap_or(config.pkg_dir.clone()),
            ..config
        });
        let server = spawn_server(&bridge, listener);
        BridgeOnly {
            bridge,
            base_url: format!("http://{address}"),
            ws_url: format!("ws://{address}/ws"),
            server,
        }
    }
}

impl Drop for BridgeOnly {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// Polls `condition` every 20 ms until it holds; panics with `what` after 30 s.
pub async fn eventually(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !condition() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting: {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        let _ = self.browser.start_kill();
        self.server.abort();
    }
}

fn spawn_server(
    bridge: &Bridge,
    listener: TcpListener,
) -> tokio::task::JoinHandle<std::io::Result<()>> {
    let serving = bridge.clone();
    tokio::spawn(async move { serving.serve(listener).await })
}

async fn wait_for_page(bridge: &Bridge) -> Arc<PageSession> {
    bridge
        .wait_for_page(Duration::from_secs(60))
        .await
        .expect("the page connected to the bridge and listed its tools within 60 s")
}

pub fn e2e_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The built package: `CLIENT_TOOLS_PKG`, else the repository's `pkg/`.
pub fn pkg_dir() -> PathBuf {
    let dir = std::env::var_os("CLIENT_TOOLS_PKG")
        .map(PathBuf::from)
        .unwrap_or_else(|| e2e_dir().join("../../pkg"));
    assert!(
        dir.join("client_tools_bg.wasm").is_file(),
        "no built package in {}: run `cargo xtask build` (or `cargo xtask test`)",
        dir.display()
    );
    dir
}

fn launch_chromium(url: &str, profile: &std::path::Path) -> Child {
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    Command::new(&chromium)
        .args([
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-quic",
            "--no-first-run",
            "--remote-debugging-port=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("could not start {chromium}: {e}"))
}

/// A directory removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(label: &str) -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let dir = std::env::temp_dir().join(format!(
            "client-tools-{label}-{}-{nanos}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).expect("create a temp dir");
        Self(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
