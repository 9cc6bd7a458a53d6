//! A real browser driven through WebDriver (chromedriver or geckodriver, via `fantoccini`): the
//! tests of the built-in dialog and result form press real keys and read the page the way a person
//! with a keyboard and a screen reader would.
//!
//! Drivers and browsers come from `CHROMEDRIVER` / `GECKODRIVER` and `CHROMIUM` / `FIREFOX`
//! (`cargo xtask test` sets them; the defaults are Debian's paths and `geckodriver` on `PATH`).

use std::process::Stdio;
use std::time::Duration;

use fantoccini::actions::InputSource as _;
use fantoccini::elements::Element;
use fantoccini::key::Key;
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::process::{Child, Command};

/// The browsers the dialog tests run in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BrowserKind {
    Chromium,
    Firefox,
}

impl BrowserKind {
    pub const ALL: [BrowserKind; 2] = [BrowserKind::Chromium, BrowserKind::Firefox];

    fn driver(self) -> String {
        match self {
            BrowserKind::Chromium => {
                std::env::var("CHROMEDRIVER").unwrap_or_else(|_| "/usr/bin/chromedriver".into())
            }
            BrowserKind::Firefox => {
                std::env::var("GECKODRIVER").unwrap_or_else(|_| "geckodriver".into())
            }
        }
    }

    fn capabilities(self, dark: bool, extra: &[&str]) -> serde_json::Map<String, Value> {
        let caps = match self {
            BrowserKind::Chromium => {
                let binary =
                    std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
                let mut args = vec![
                    "--headless=new",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-dev-shm-usage",
                    "--disable-background-networking",
                    "--disable-component-update",
                    "--disable-sync",
                    "--no-first-run",
                    "--window-size=900,900",
                ];
                if dark {
                    args.push("--force-dark-mode");
                }
                args.extend_from_slice(extra);
                json!({
                    "browserName": "chrome",
                    "goog:chromeOptions": { "binary": binary, "args": args },
                })
            }
            BrowserKind::Firefox => {
                let binary =
                    std::env::var("FIREFOX").unwrap_or_else(|_| "/usr/bin/firefox-esr".into());
                json!({
                    "browserName": "firefox",
                    "moz:firefoxOptions": {
                        "binary": binary,
                        "args": ["-headless", "--width=900", "--height=900"],
                        // 0 = dark, 1 = light: what `prefers-color-scheme` reports to pages.
                        "prefs": { "layout.css.prefers-color-scheme.content-override": if dark { 0 } else { 1 } },
                    },
                })
            }
        };
        let Value::Object(map) = caps else {
            unreachable!()
        };
        map
    }
}

/// One browser session under WebDriver. Dropping it ends the driver (and so the browser).
pub struct Driven {
    pub kind: BrowserKind,
    pub client: Client,
    driver: Child,
}

impl Driven {
    /// Starts the driver on a free loopback port and opens a headless session in it.
    pub async fn start(kind: BrowserKind) -> Driven {
        Self::start_with(kind, false).await
    }

    /// As [`Driven::start`], with the browser reporting `prefers-color-scheme: dark` when `dark`.
    pub async fn start_with(kind: BrowserKind, dark: bool) -> Driven {
        Self::start_with_args(kind, dark, &[]).await
    }

    /// As [`Driven::start_with`], with more command-line arguments for Chromium (e.g. features).
    pub async fn start_with_args(kind: BrowserKind, dark: bool, extra: &[&str]) -> Driven {
        Self::start_with_capabilities(kind, kind.capabilities(dark, extra)).await
    }

    /// As [`Driven::start`], the browser accepting a self-signed certificate: a local HTTPS
    /// server's (WebDriver `acceptInsecureCerts`), for clients that open only `https:` or `wss:`.
    pub async fn start_accepting_self_signed(kind: BrowserKind) -> Driven {
        let mut capabilities = kind.capabilities(false, &[]);
        capabilities.insert("acceptInsecureCerts".into(), Value::Bool(true));
        Self::start_with_capabilities(kind, capabilities).await
    }

    async fn start_with_capabilities(
        kind: BrowserKind,
        capabilities: serde_json::Map<String, Value>,
    ) -> Driven {
        crate::refuse_in_tests_without_browser();
        let port = free_port().await;
        let driver_path = kind.driver();
        let mut command = Command::new(&driver_path);
        match kind {
            BrowserKind::Chromium => command.arg(format!("--port={port}")),
            BrowserKind::Firefox => command.args(["--port", &port.to_string()]),
        };
        let driver = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("could not start {driver_path}: {e}"));
        let url = format!("http://127.0.0.1:{port}");
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        let client = loop {
            let connector = hyper_util::client::legacy::connect::HttpConnector::new();
            match ClientBuilder::new(connector)
                .capabilities(capabilities.clone())
                .connect(&url)
                .await
            {
                Ok(client) => break client,
                Err(e) => {
                    assert!(
                        tokio::time::Instant::now() < deadline,
                        "no {kind:?} WebDriver session within 60 s: {e}"
                    );
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        };
        Driven {
            kind,
            client,
            driver,
        }
    }

    pub async fn goto(&self, url: &str) {
        self.client.goto(url).await.expect("navigate");
    }

    /// Runs `script` (a function body; `arguments` holds `args`) in the page and returns its value.
    pub async fn eval(&self, script: &str, args: Vec<Value>) -> Value {
        self.client
            .execute(script, args)
            .await
            .unwrap_or_else(|e| panic!("script failed in {:?}: {e}\n{script}", self.kind))
    }

    /// Runs `script` asynchronously: it ends by calling `arguments[arguments.length - 1](value)`.
    pub async fn eval_async(&self, script: &str) -> Value {
        self.client
            .execute_async(script, vec![])
            .await
            .unwrap_or_else(|e| panic!("script failed in {:?}: {e}\n{script}", self.kind))
    }

    /// Polls `script` until it returns a truthy value (30 s), and returns that value.
    pub async fn until(&self, what: &str, script: &str) -> Value {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            let value = self.eval(script, vec![]).await;
            let truthy = match &value {
                Value::Null => false,
                Value::Bool(b) => *b,
                Value::Number(n) => n.as_f64() != Some(0.0),
                Value::String(s) => !s.is_empty(),
                _ => true,
            };
            if truthy {
                return value;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "timed out in {:?} waiting: {what}",
                self.kind
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    /// An element of the SDK's UI (inside the open shadow root of `<client-tools-ui>`).
    pub async fn ui(&self, selector: &str) -> Element {
        let host = self
            .client
            .find(Locator::Css("client-tools-ui"))
            .await
            .expect("the UI host element <client-tools-ui>");
        let root = host.shadow_root().await.expect("its open shadow root");
        root.find(Locator::Css(selector))
            .await
            .unwrap_or_else(|e| panic!("no '{selector}' in the UI ({:?}): {e}", self.kind))
    }

    /// Waits until the UI's dialog is open for the tool `original_name`, has focus and takes input
    /// (not `aria-busy`: just after one request replaced another it ignores activations), so keys
    /// go to it.
    pub async fn wait_for_dialog(&self, original_name: &str) {
        let script = format!(
            "const root = document.querySelector('client-tools-ui')?.shadowRoot;
             const dialog = root?.querySelector('dialog');
             return !!(dialog && dialog.open && !dialog.hasAttribute('aria-busy') &&
               root.querySelector('[data-ct=\"original-name\"]')?.textContent.includes({name}) &&
               root.activeElement);",
            name = serde_json::to_string(original_name).unwrap()
        );
        self.until(
            &format!("the dialog for '{original_name}' is open and focused"),
            &script,
        )
        .await;
    }

    /// The text of the UI element `selector` ("" when absent).
    pub async fn ui_text(&self, selector: &str) -> String {
        let value = self
            .eval(
                "const el = document.querySelector('client-tools-ui')?.shadowRoot
                   ?.querySelector(arguments[0]);
                 return el ? el.textContent : '';",
                vec![Value::String(selector.into())],
            )
            .await;
        value.as_str().unwrap_or_default().to_owned()
    }

    /// Selects everything in the focused field (Ctrl+A) and types `text` over it.
    pub async fn replace_text(&self, text: &str) {
        use fantoccini::actions::{KeyAction, KeyActions};
        let control = char::from(Key::Control);
        let select_all = KeyActions::new("keyboard".into())
            .then(KeyAction::Down { value: control })
            .then(KeyAction::Down { value: 'a' })
            .then(KeyAction::Up { value: 'a' })
            .then(KeyAction::Up { value: control });
        self.client
            .perform_actions(select_all)
            .await
            .expect("perform Ctrl+A");
        let backspace = char::from(Key::Backspace).to_string();
        self.type_text(&backspace).await;
        self.type_text(text).await;
    }

    /// Double-clicks the UI element `selector` with the mouse, as a person in a hurry would.
    pub async fn double_click(&self, selector: &str) {
        use fantoccini::actions::{MouseActions, PointerAction, MOUSE_BUTTON_LEFT};
        let element = self.ui(selector).await;
        let click = || {
            [
                PointerAction::Down {
                    button: MOUSE_BUTTON_LEFT,
                },
                PointerAction::Up {
                    button: MOUSE_BUTTON_LEFT,
                },
            ]
        };
        let mut mouse = MouseActions::new("mouse".into()).then(PointerAction::MoveToElement {
            element,
            duration: None,
            x: 0.0,
            y: 0.0,
        });
        for action in click().into_iter().chain(click()) {
            mouse = mouse.then(action);
        }
        self.client
            .perform_actions(mouse)
            .await
            .expect("perform a double click");
    }

    /// Presses Shift+Tab once.
    pub async fn shift_tab(&self) {
        use fantoccini::actions::{KeyAction, KeyActions};
        let (shift, tab) = (char::from(Key::Shift), char::from(Key::Tab));
        let keys = KeyActions::new("keyboard".into())
            .then(KeyAction::Down { value: shift })
            .then(KeyAction::Down { value: tab })
            .then(KeyAction::Up { value: tab })
            .then(KeyAction::Up { value: shift });
        self.client
            .perform_actions(keys)
            .await
            .expect("perform Shift+Tab");
    }

    /// Whether the UI's dialog is closed (or was never opened).
    pub async fn dialog_closed(&self) -> bool {
        self.eval(
            "const d = document.querySelector('client-tools-ui')?.shadowRoot?.querySelector('dialog');
             return !d || !d.open;",
            vec![],
        )
        .await
            == Value::Bool(true)
    }

    /// Presses keys as a person would: each key goes down and up, through WebDriver's actions, to
    /// whatever has focus.
    pub async fn press(&self, keys: &[Key]) {
        for key in keys {
            let text: String = char::from(*key).to_string();
            self.type_text(&text).await;
        }
    }

    /// Types `text` into whatever has focus, key by key.
    pub async fn type_text(&self, text: &str) {
        use fantoccini::actions::{KeyAction, KeyActions};
        let mut actions = KeyActions::new("keyboard".into());
        for c in text.chars() {
            actions = actions
                .then(KeyAction::Down { value: c })
                .then(KeyAction::Up { value: c });
        }
        self.client
            .perform_actions(actions)
            .await
            .expect("perform key actions");
    }

    /// The `data-action`, `data-ct` or `data-path` of the focused element inside the UI, or
    /// `"outside"` when focus is not in the UI at all.
    pub async fn focused_in_ui(&self) -> String {
        let value = self
            .eval(
                "const host = document.querySelector('client-tools-ui');
                 if (!host || document.activeElement !== host) return 'outside';
                 const el = host.shadowRoot.activeElement;
                 if (!el) return 'outside';
                 return el.getAttribute('data-action') || el.getAttribute('data-ct')
                   || el.getAttribute('data-path') || el.tagName.toLowerCase();",
                vec![],
            )
            .await;
        value.as_str().unwrap_or("outside").to_owned()
    }

    /// Presses Tab until the focused UI element is `target` (a `data-action`/`data-ct`/`data-path`),
    /// at most 30 times; panics if focus ever leaves the UI or the target is never reached.
    pub async fn tab_to(&self, target: &str) {
        for _ in 0..30 {
            let focused = self.focused_in_ui().await;
            assert_ne!(
                focused, "outside",
                "focus left the dialog ({:?})",
                self.kind
            );
            if focused == target {
                return;
            }
            self.press(&[Key::Tab]).await;
        }
        panic!(
            "Tab never reached '{target}' in the dialog ({:?})",
            self.kind
        );
    }
}

impl Driven {
    /// Ends the session (the browser quits) and the driver.
    pub async fn quit(mut self) {
        let _ = self.client.clone().close().await;
        let _ = self.driver.kill().await;
    }
}

impl Drop for Driven {
    fn drop(&mut self) {
        let _ = self.driver.start_kill();
    }
}

async fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    listener.local_addr().unwrap().port()
}
