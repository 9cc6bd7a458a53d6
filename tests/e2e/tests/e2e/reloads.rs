//! Reloads (SPEC §7, "Calls that behave as their tools say"), with real reloads in Chromium and
//! Firefox under WebDriver, calls coming from the bridge, which re-sends every call it has no
//! answer for when the reloaded page resumes the session. Each handler counts its runs in the
//! page's `localStorage`, which the test reads across reloads.
//!
//! A call of an `idempotentHint` tool the reload interrupted runs once more and the agent gets one
//! result; a call of any other tool is answered that it was not run again; a call waiting for the
//! person's decision is asked again, through any number of reloads, and runs once when approved;
//! storage rewritten to say "run it again" runs nothing.

use std::sync::Arc;
use std::time::Duration;

use client_tools_bridge::{BridgeConfig, CallOptions, PageSession};
use client_tools_core::protocol::CallToolResult;
use client_tools_e2e::webdriver::{BrowserKind, Driven};
use client_tools_e2e::BridgeOnly;
use fantoccini::key::Key;
use serde_json::{json, Value};
use tokio::task::JoinHandle;

/// The reloads page open in one browser, connected to its own bridge.
struct Reloads {
    driven: Driven,
    page: Arc<PageSession>,
    _served: BridgeOnly,
}

impl Reloads {
    async fn open(kind: BrowserKind) -> Reloads {
        let served = BridgeOnly::serving_package(BridgeConfig::default()).await;
        let driven = Driven::start(kind).await;
        driven
            .goto(&format!("{}/reloads.html", served.base_url))
            .await;
        let page = served
            .bridge
            .wait_for_page(Duration::from_secs(60))
            .await
            .expect("the page connected and listed its tools");
        let reloads = Reloads {
            driven,
            page,
            _served: served,
        };
        reloads.ready().await;
        reloads
    }

    /// Waits until the page (again) has started and resumed its session.
    async fn ready(&self) {
        let status = self
            .driven
            .until(
                "the page has started (or failed)",
                "const s = document.getElementById('status')?.textContent;
                 return s === undefined || s === 'loading' ? null : s;",
            )
            .await;
        assert_eq!(
            status, "ready",
            "the page did not start in {:?}",
            self.driven.kind
        );
    }

    /// A real reload (WebDriver's refresh): the page unloads, loads again and resumes.
    async fn reload(&self) {
        self.driven.client.refresh().await.expect("reload the page");
        self.ready().await;
    }

    /// Starts a call through the bridge, as an agent would.
    fn call(&self, name: &str, key: &str) -> JoinHandle<CallToolResult> {
        let page = self.page.clone();
        let (name, arguments) = (name.to_owned(), json!({ "key": key }));
        tokio::spawn(async move {
            page.call_tool(
                (&name, arguments),
                CallOptions::new().timeout(Duration::from_secs(60)),
            )
            .await
            .into_result()
        })
    }

    /// How often the handler ran for `key`, in all of the page's lives.
    async fn runs(&self, key: &str) -> u64 {
        let script = "return Number(localStorage.getItem('runs:' + arguments[0]) || 0)";
        let value = self.driven.eval(script, vec![json!(key)]).await;
        value.as_u64().unwrap_or(0)
    }

    /// Waits until the handler for `key` has run `runs` times.
    async fn until_runs(&self, key: &str, runs: u64) {
        let script = format!(
            "return Number(localStorage.getItem('runs:' + {key})) === {runs}",
            key = serde_json::to_string(key).unwrap()
        );
        let what = format!("the handler for '{key}' has run {runs} time(s)");
        self.driven.until(&what, &script).await;
    }

    /// Lets the blocked handler for `key` return.
    async fn release(&self, key: &str) {
        let script = "localStorage.setItem('release:' + arguments[0], '1')";
        self.driven.eval(script, vec![json!(key)]).await;
    }

    async fn approve(&self) {
        self.driven.wait_for_dialog("delete_feed").await;
        self.driven.tab_to("approve").await;
        self.driven.press(&[Key::Enter]).await;
    }

    async fn quit(self) {
        self.driven.quit().await;
    }
}

async fn outcome(call: JoinHandle<CallToolResult>) -> CallToolResult {
    tokio::time::timeout(Duration::from_secs(60), call)
        .await
        .expect("the call ended within 60 s")
        .expect("the call task")
}

fn is_not_run_again(result: &CallToolResult) -> bool {
    result.is_error
        && result
            .text()
            .starts_with("the page was reloaded while call ")
        && result.text().ends_with("; it was not run again")
}

/// One test per browser for each scenario.
macro_rules! in_both_browsers {
    ($($scenario:ident),* $(,)?) => {
        mod chromium {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $scenario() {
                    super::$scenario(client_tools_e2e::webdriver::BrowserKind::Chromium).await;
                }
            )*
        }
        mod firefox {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $scenario() {
                    super::$scenario(client_tools_e2e::webdriver::BrowserKind::Firefox).await;
                }
            )*
        }
    };
}

in_both_browsers!(
    an_idempotent_call_runs_once_more_after_a_reload,
    any_other_call_is_not_run_again,
    a_pending_confirmation_is_asked_again_through_a_reload_storm,
    storage_rewritten_to_run_a_call_again_runs_nothing,
);

async fn an_idempotent_call_runs_once_more_after_a_reload(kind: BrowserKind) {
    let page = Reloads::open(kind).await;
    let call = page.call("refresh_feed", "feed");
    page.until_runs("feed", 1).await;
    page.reload().await;
    // The bridge re-sends the call to the resumed session: it runs once more.
    page.until_runs("feed", 2).await;
    page.release("feed").await;
    let result = outcome(call).await;
    assert!(!result.is_error, "{result:?}");
    assert_eq!(result.structured_content, Some(json!({"run": 2})));
    assert_eq!(page.runs("feed").await, 2, "once more, not again and again");
    page.quit().await;
}

async fn any_other_call_is_not_run_again(kind: BrowserKind) {
    let page = Reloads::open(kind).await;
    let call = page.call("place_order", "order");
    page.until_runs("order", 1).await;
    page.reload().await;
    let result = outcome(call).await;
    assert!(is_not_run_again(&result), "{result:?}");
    assert_eq!(page.runs("order").await, 1);
    page.quit().await;
}

async fn a_pending_confirmation_is_asked_again_through_a_reload_storm(kind: BrowserKind) {
    let page = Reloads::open(kind).await;
    let call = page.call("delete_feed", "delete");
    page.driven.wait_for_dialog("delete_feed").await;
    // One reload, then two more straight after each other, the person never answering.
    page.reload().await;
    page.driven.wait_for_dialog("delete_feed").await;
    page.driven.client.refresh().await.expect("reload the page");
    page.reload().await;
    assert_eq!(
        page.runs("delete").await,
        0,
        "never run on an assumed decision"
    );
    page.approve().await;
    let result = outcome(call).await;
    assert!(!result.is_error, "{result:?}");
    assert_eq!(result.structured_content, Some(json!({"run": 1})));
    assert_eq!(page.runs("delete").await, 1);
    page.quit().await;
}

async fn storage_rewritten_to_run_a_call_again_runs_nothing(kind: BrowserKind) {
    let page = Reloads::open(kind).await;
    let call = page.call("place_order", "forged");
    page.until_runs("forged", 1).await;
    let tamper = "sessionStorage.setItem('tamper', '1')";
    page.driven.eval(tamper, vec![]).await;
    page.reload().await;
    let result = outcome(call).await;
    assert!(is_not_run_again(&result), "{result:?}");
    let warnings = page.driven.eval("return window.warnings", vec![]).await;
    let warnings = warnings.as_array().expect("the page's warnings");
    let of = |code: &str| -> Vec<&Value> {
        let code = json!(code);
        (warnings.iter()).filter(|w| w["code"] == code).collect()
    };
    let ignored = of("stored_data_ignored");
    assert_eq!(ignored.len(), 2, "{warnings:?}");
    // The entries no page writes, when the page read them; the claim the tool does not back,
    // when the call came again.
    assert!(ignored[0]["message"]
        .as_str()
        .unwrap()
        .contains("3 of its 4 entries are not what a page keeps"));
    assert_eq!(ignored[1]["toolName"], "place_order");
    assert!(ignored[1]["message"]
        .as_str()
        .unwrap()
        .contains("does not say so now; it was not run again"));
    assert_eq!(page.runs("forged").await, 1);
    page.quit().await;
}
