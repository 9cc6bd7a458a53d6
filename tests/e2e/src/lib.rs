//! Harness for the end-to-end tests: a bridge on a free loopback port serving a test page and the
//! built package, and a real headless browser showing that page.
//!
//! The browser [`Stack`] opens is picked by `E2E_BROWSER`: `chromium` (the default) or `firefox`,
//! e.g. `E2E_BROWSER=firefox cargo test -p client-tools-e2e -- --test-threads 1`; [`browser`]
//! tells a test which one it runs in. The tests built on [`webdriver::Driven`] ignore it: they run
//! in both browsers every time.
//!
//! Needs `pkg/` (built by `cargo xtask build`; `cargo xtask test` builds it first) and the browser:
//! Chromium (`CHROMIUM`, default `/usr/bin/chromium`) or Firefox (`FIREFOX`, default
//! `/usr/bin/firefox-esr`).

use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub mod cluster;
pub mod npm_app;
pub mod python_steps;
pub mod raw_page;
pub mod site;
pub mod webdriver;

use client_tools_bridge::{Bridge, BridgeConfig, PageSession};
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::net::TcpListener;
use tokio::process::{Child, Command};
pub use webdriver::BrowserKind;

/// The browser [`Stack`] and [`Opened`] show their page in: `E2E_BROWSER` (`chromium`, the
/// default, or `firefox`).
pub fn browser() -> BrowserKind {
    match std::env::var("E2E_BROWSER").as_deref() {
        Err(_) | Ok("") | Ok("chromium") => BrowserKind::Chromium,
        Ok("firefox") => BrowserKind::Firefox,
        Ok(other) => panic!("E2E_BROWSER={other}: expected `chromium` or `firefox`"),
    }
}

/// A running bridge with one browser page connected to it.
pub struct Stack {
    pub bridge: Bridge,
    pub base_url: String,
    pub page: Arc<PageSession>,
    config: BridgeConfig,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
    browser: Browser,
    _profile: TempDir,
}

impl Stack {
    /// Starts the bridge, opens `page` (a file of `tests/e2e/www/`) in the [`browser`] and waits
    /// until the page has connected and listed its tools.
    pub async fn start(page: &str, config: BridgeConfig) -> Stack {
        let mut opened = Opened::new(page, config).await;
        let page = opened.browser.wait_for_page(&opened.bridge).await;
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
        self.page = self.browser.wait_for_page(&self.bridge).await;
    }

    /// Stops the browser (the page's connection ends with it).
    pub async fn close_browser(&mut self) {
        self.browser.kill().await;
    }
}

/// A bridge serving the e2e site and the package, and the [`browser`] showing one of its pages.
pub struct Opened {
    pub bridge: Bridge,
    pub base_url: String,
    config: BridgeConfig,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
    browser: Browser,
    profile: TempDir,
}

impl Opened {
    /// Closes the browser (the page's tab with it).
    pub async fn close_browser(&mut self) {
        self.browser.kill().await;
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
        let url = format!("{base_url}/{page}");
        let (profile, browser) = Browser::launch(browser(), &url);
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

/// A page open in the [`browser`] at any URL (served by whatever the test runs: the bridge nodes
/// of a cluster, behind a load balancer). Closed on drop.
pub struct Tab {
    browser: Browser,
    _profile: TempDir,
}

impl Tab {
    pub fn open(url: &str) -> Tab {
        let (profile, browser) = Browser::launch(browser(), url);
        Tab {
            browser,
            _profile: profile,
        }
    }

    /// Closes the browser (the page's tab with it).
    pub async fn close(&mut self) {
        self.browser.kill().await;
    }

    /// What the browser printed last (for failure messages).
    pub fn last_output(&self) -> String {
        self.browser.last_output()
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
        let _ = self.browser.child.start_kill();
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

/// Panics in a test of a `without_browser` module (the Firefox pass of `cargo xtask test` skips
/// them: a browser opened there would be tested in Chromium alone). libtest names each test's
/// thread after the test.
pub fn refuse_in_tests_without_browser() {
    let thread = std::thread::current();
    let name = thread.name().unwrap_or_default();
    assert!(
        !name.contains("::without_browser::"),
        "{name} opens a browser: move it out of its `without_browser` module"
    );
}

/// A headless browser showing one page, killed on drop (`kill_on_drop`). It keeps the last lines
/// it printed, for the message when its page never connects.
struct Browser {
    kind: BrowserKind,
    child: Child,
    output: Arc<Mutex<VecDeque<String>>>,
}

impl Browser {
    /// Starts `kind` on `url` with a fresh profile (removed when the returned [`TempDir`] drops).
    fn launch(kind: BrowserKind, url: &str) -> (TempDir, Browser) {
        refuse_in_tests_without_browser();
        let (profile, mut child) = match kind {
            BrowserKind::Chromium => {
                let profile = TempDir::new("chromium-profile");
                let child = launch_chromium(url, &profile.0);
                (profile, child)
            }
            BrowserKind::Firefox => {
                let profile = TempDir::new("firefox-profile");
                let child = launch_firefox(url, &profile.0);
                (profile, child)
            }
        };
        let output = Arc::new(Mutex::new(VecDeque::new()));
        if let Some(stdout) = child.stdout.take() {
            keep_last_lines(stdout, &output);
        }
        if let Some(stderr) = child.stderr.take() {
            keep_last_lines(stderr, &output);
        }
        let browser = Browser {
            kind,
            child,
            output,
        };
        (profile, browser)
    }

    /// Waits (60 s at most) until the page has connected to `bridge` and listed its tools; fails at
    /// once, with what the browser printed last, if the browser exits first.
    async fn wait_for_page(&mut self, bridge: &Bridge) -> Arc<PageSession> {
        let timeout = Duration::from_secs(60);
        tokio::select! {
            page = bridge.wait_for_page(timeout) => page.unwrap_or_else(|| panic!(
                "the page did not connect to the bridge and list its tools within {} s in {:?}{}",
                timeout.as_secs(), self.kind, self.last_output()
            )),
            status = self.child.wait() => panic!(
                "{:?} exited ({}) before its page connected to the bridge{}",
                self.kind,
                status.map_or_else(|e| e.to_string(), |status| status.to_string()),
                self.last_output()
            ),
        }
    }

    async fn kill(&mut self) {
        let _ = self.child.kill().await;
    }

    fn last_output(&self) -> String {
        let lines = self.output.lock().unwrap();
        if lines.is_empty() {
            return "; it printed nothing".into();
        }
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        format!("; its last output:\n{}", lines.join("\n"))
    }
}

/// Reads `from` line by line, keeping the last 50 lines in `into`.
fn keep_last_lines(
    from: impl AsyncRead + Unpin + Send + 'static,
    into: &Arc<Mutex<VecDeque<String>>>,
) {
    let into = Arc::clone(into);
    tokio::spawn(async move {
        let mut lines = BufReader::new(from).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let mut kept = into.lock().unwrap();
            if kept.len() == 50 {
                kept.pop_front();
            }
            kept.push_back(line);
        }
    });
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
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("could not start {chromium}: {e}"))
}

/// Firefox's preferences for a page under test, written to the fresh profile's `user.js` (read at
/// startup): no first-run or welcome pages, no telemetry or data reporting, no updates (of Firefox,
/// add-ons, search engines, remote settings) and no other background connections, so the only
/// traffic is the page's own, and no dialog (slow script, crash recovery) ever holds the page up.
/// Mostly what geckodriver and Firefox's remote agent set for automation.
const FIREFOX_PREFS: &[(&str, &str)] = &[
    // First run, welcome and what's-new pages; the default-browser check; session restore.
    ("browser.aboutwelcome.enabled", "false"),
    ("browser.shell.checkDefaultBrowser", "false"),
    ("browser.startup.homepage_override.mstone", "\"ignore\""),
    ("browser.startup.page", "0"),
    ("startup.homepage_welcome_url", "\"about:blank\""),
    ("startup.homepage_welcome_url.additional", "\"\""),
    ("browser.sessionstore.resume_from_crash", "false"),
    ("toolkit.startup.max_resumed_crashes", "-1"),
    ("browser.uitour.enabled", "false"),
    ("browser.warnOnQuit", "false"),
    ("browser.tabs.warnOnClose", "false"),
    // Telemetry and data reporting (and the privacy-notice tab of a first run).
    ("datareporting.policy.dataSubmissionEnabled", "false"),
    (
        "datareporting.policy.dataSubmissionPolicyBypassNotification",
        "true",
    ),
    ("datareporting.policy.firstRunURL", "\"\""),
    ("datareporting.healthreport.uploadEnabled", "false"),
    ("toolkit.telemetry.enabled", "false"),
    ("toolkit.telemetry.unified", "false"),
    ("toolkit.telemetry.archive.enabled", "false"),
    ("toolkit.telemetry.reportingpolicy.firstRun", "false"),
    ("toolkit.telemetry.server", "\"\""),
    ("browser.ping-centre.telemetry", "false"),
    // Updates: Firefox, add-ons, search engines, media plugins, remote settings, studies.
    ("app.update.disabledForTesting", "true"),
    ("app.update.auto", "false"),
    ("extensions.update.enabled", "false"),
    ("extensions.systemAddon.update.enabled", "false"),
    ("extensions.getAddons.cache.enabled", "false"),
    ("extensions.blocklist.enabled", "false"),
    ("extensions.autoDisableScopes", "0"),
    ("extensions.enabledScopes", "5"),
    ("extensions.installDistroAddons", "false"),
    ("browser.search.update", "false"),
    ("media.gmp-manager.updateEnabled", "false"),
    (
        "services.settings.server",
        "\"data:,#remote-settings-disabled/v1\"",
    ),
    ("security.remote_settings.intermediates.enabled", "false"),
    ("security.remote_settings.crlite_filters.enabled", "false"),
    ("app.normandy.enabled", "false"),
    ("app.normandy.api_url", "\"\""),
    ("app.shield.optoutstudies.enabled", "false"),
    ("messaging-system.rsexperimentloader.enabled", "false"),
    // Other background connections: Safe Browsing lists, connectivity and captive-portal checks,
    // DNS over HTTPS, push, region and geolocation lookups, prefetching, new-tab content.
    ("browser.safebrowsing.malware.enabled", "false"),
    ("browser.safebrowsing.phishing.enabled", "false"),
    ("browser.safebrowsing.downloads.enabled", "false"),
    ("browser.safebrowsing.blockedURIs.enabled", "false"),
    ("browser.safebrowsing.provider.mozilla.updateURL", "\"\""),
    ("browser.safebrowsing.provider.google4.updateURL", "\"\""),
    ("network.connectivity-service.enabled", "false"),
    ("network.captive-portal-service.enabled", "false"),
    ("network.trr.mode", "5"),
    ("dom.push.connection.enabled", "false"),
    ("browser.region.network.url", "\"\""),
    ("browser.region.update.enabled", "false"),
    ("geo.provider.network.url", "\"\""),
    ("network.dns.disablePrefetch", "true"),
    ("network.prefetch-next", "false"),
    ("network.predictor.enabled", "false"),
    ("network.http.speculative-parallel-limit", "0"),
    ("browser.newtabpage.enabled", "false"),
    ("browser.newtab.preload", "false"),
    ("browser.pagethumbnails.capturing_disabled", "true"),
    ("identity.fxaccounts.enabled", "false"),
    // No slow-script or hang dialogs; focus as if the window were in front (as under geckodriver).
    ("dom.max_script_run_time", "0"),
    ("dom.ipc.reportProcessHangs", "false"),
    ("hangmonitor.timeout", "0"),
    ("focusmanager.testmode", "true"),
    // The page's console on stdout: the last lines are in the message when a page never connects.
    ("devtools.console.stdout.content", "true"),
];

fn launch_firefox(url: &str, profile: &std::path::Path) -> Child {
    let firefox = std::env::var("FIREFOX").unwrap_or_else(|_| "/usr/bin/firefox-esr".into());
    let user_js: String = FIREFOX_PREFS
        .iter()
        .map(|(name, value)| format!("user_pref(\"{name}\", {value});\n"))
        .collect();
    std::fs::write(profile.join("user.js"), user_js).expect("write the profile's user.js");
    Command::new(&firefox)
        .args(["--headless", "--no-remote", "--profile"])
        .arg(profile)
        .arg(url)
        // A crash ends the test with the page's connection, not with a crash-reporter window.
        .env("MOZ_CRASHREPORTER_DISABLE", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("could not start {firefox}: {e}"))
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
