//! The script embed as pages use it (issue 13, SPEC §4): one `<script src=".../client-tools.js">`
//! as a classic script (deferred or not) and as a module, from a vendor folder, under another file
//! name and from another origin, configured by `data-` attributes (endpoint, token, allow), with
//! commands queued before it loaded — from scripts before and after its own element — replayed in
//! order; included twice; and the page's own code using the global class. Every page comes from a
//! site of its own (`client_tools_e2e::site`) with a strict Content-Security-Policy (`script-src
//! 'self' 'wasm-unsafe-eval'`, `style-src 'self'`), the bridge on another port with a page token;
//! both browsers.

use std::time::Duration;

use client_tools_bridge::{BridgeConfig, CallOptions};
use client_tools_e2e::site::Site;
use client_tools_e2e::webdriver::{BrowserKind, Driven};
use client_tools_e2e::{eventually, BridgeOnly};
use serde_json::{json, Value};

const TIMEOUT: Duration = Duration::from_secs(20);
/// The bridge's `--page-token`: the pages pass it in `data-token` (or their own options).
const PAGE_TOKEN: &str = "embed-page-token";

struct Opened {
    driven: Driven,
    page: std::sync::Arc<client_tools_bridge::PageSession>,
    bridge: BridgeOnly,
    _site: Site,
}

async fn open(kind: BrowserKind, page: &str) -> Opened {
    let bridge = BridgeOnly::start(BridgeConfig {
        page_token: Some(PAGE_TOKEN.into()),
        ..BridgeConfig::default()
    })
    .await;
    let site = Site::start(&bridge.ws_url).await;
    let driven = Driven::start(kind).await;
    driven.goto(&format!("{}/{page}", site.base_url)).await;
    let page = bridge
        .bridge
        .wait_for_page(Duration::from_secs(60))
        .await
        .expect("the page connected to the bridge and listed its tools");
    Opened {
        driven,
        page,
        bridge,
        _site: site,
    }
}

fn names(opened: &Opened) -> Vec<String> {
    let mut names: Vec<String> = opened.page.tools().into_iter().map(|t| t.name).collect();
    names.sort();
    names
}

async fn greet(opened: &Opened) {
    let result = opened
        .page
        .call_tool(
            ("greet", json!({ "name": "Ada" })),
            CallOptions::new().timeout(TIMEOUT),
        )
        .await
        .into_result();
    assert!(!result.is_error, "{}", result.text());
    assert_eq!(result.text(), "Hello, Ada");
}

/// The policy was on (the page's inline script was refused) and the package needed nothing it
/// forbids: no `eval`, no inline script or style of its own.
async fn only_the_pages_inline_script_was_refused(opened: &Opened) {
    let inline_ran = opened
        .driven
        .eval("return window.inlineRan === true;", vec![])
        .await;
    assert_eq!(
        inline_ran,
        json!(false),
        "the page's inline script ran: no CSP"
    );
    let violations = opened
        .driven
        .eval("return window.violations;", vec![])
        .await;
    let violations = violations.as_array().expect("a list").clone();
    assert!(
        !violations.is_empty()
            && violations.iter().all(|v| v
                .as_str()
                .is_some_and(|v| v.starts_with("script-src") && v.ends_with("inline"))),
        "the policy refused something of the package's: {violations:?}"
    );
}

async fn embedded_with_data_attributes_and_a_queue(kind: BrowserKind, page: &str) {
    let opened = open(kind, page).await;
    // Queued before the package loaded: defined, and only what `data-allow` lets agents see.
    assert_eq!(names(&opened), ["empty_cart", "greet", "read_cart"]);
    greet(&opened).await;
    let cart = opened
        .page
        .call_tool(
            ("read_cart", json!({})),
            CallOptions::new().timeout(TIMEOUT),
        )
        .await
        .into_result();
    assert_eq!(
        cart.structured_content,
        Some(json!({ "items": ["tea", "scones"] }))
    );

    // Both ran: the queued function and the ready event (in that order when the queue ran first).
    let mut log: Vec<String> =
        serde_json::from_value(opened.driven.eval("return window.embedLog;", vec![]).await)
            .expect("a list of strings");
    log.sort();
    assert_eq!(
        log,
        [
            "queued function: instance true",
            "ready: class function, instance true"
        ]
    );
    let queued = opened
        .driven
        .eval("return window.queuedBeforeLoad;", vec![])
        .await;
    assert_eq!(
        queued,
        json!(true),
        "the commands ran at once: no queue was tested"
    );
    // One instance, one page session, whatever the number of copies of the script.
    assert_eq!(opened.bridge.bridge.sessions().len(), 1);
    let errors = opened
        .driven
        .eval("return window.consoleErrors;", vec![])
        .await;
    let errors: Vec<&str> = errors
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].contains("a queued command failed")
            && errors[0].contains("no method 'noSuchMethod'"),
        "{errors:?}"
    );

    // After loading, a push runs at once.
    opened
        .driven
        .eval(
            r#"ClientTools.push(["defineFunction", {
                 name: "Late Tool", description: "Defined after the package loaded",
                 parameters: { type: "object", properties: {} }, handler: () => "late" }]);
               return true;"#,
            vec![],
        )
        .await;
    eventually("the tool pushed after loading is listed", || {
        names(&opened).contains(&"late_tool".to_owned())
    })
    .await;
    let late = opened
        .page
        .call_tool(
            ("late_tool", json!({})),
            CallOptions::new().timeout(TIMEOUT),
        )
        .await
        .into_result();
    assert_eq!(late.text(), "late");

    // The built-in dialog is styled although the policy refuses inline styles (the UI's styles are
    // a constructed stylesheet), and it answers the call.
    let page = opened.page.clone();
    let call = tokio::spawn(async move {
        page.call_tool(
            ("empty_cart", json!({})),
            CallOptions::new().timeout(TIMEOUT),
        )
        .await
        .into_result()
    });
    opened.driven.wait_for_dialog("Empty Cart").await;
    let styled = opened
        .driven
        .eval(
            "const dialog = document.querySelector('client-tools-ui').shadowRoot.querySelector('dialog');
             const style = getComputedStyle(dialog);
             return [style.paddingTop, style.borderTopLeftRadius];",
            vec![],
        )
        .await;
    assert_eq!(styled, json!(["20px", "12px"]), "the dialog is unstyled");
    opened.driven.tab_to("approve").await;
    opened.driven.press(&[fantoccini::key::Key::Enter]).await;
    let emptied = call.await.expect("the call ends");
    assert!(!emptied.is_error, "{}", emptied.text());

    only_the_pages_inline_script_was_refused(&opened).await;
    opened.driven.quit().await;
}

async fn the_global_class_in_the_pages_own_code(kind: BrowserKind) {
    let opened = open(kind, "embed-programmatic.html").await;
    assert_eq!(names(&opened), ["greet"]);
    greet(&opened).await;
    let log = opened
        .driven
        .until(
            "the page's code connected",
            "return window.embedLog.length === 2 && window.embedLog;",
        )
        .await;
    assert_eq!(
        log,
        json!(["global is the class true, instance null", "connected"])
    );
    only_the_pages_inline_script_was_refused(&opened).await;
    opened.driven.quit().await;
}

macro_rules! in_both_browsers {
    ($($browser:ident: $kind:expr),*) => {$(
        mod $browser {
            use super::*;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn a_classic_script_included_twice_with_the_queue_before_it() {
                embedded_with_data_attributes_and_a_queue($kind, "embed-classic.html").await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn a_module_script_with_the_queue_after_it() {
                embedded_with_data_attributes_and_a_queue($kind, "embed-module.html").await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn a_classic_script_without_defer_and_the_queue_after_it() {
                embedded_with_data_attributes_and_a_queue($kind, "embed-after.html").await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn a_deferred_script_and_a_deferred_queue_after_it() {
                embedded_with_data_attributes_and_a_queue($kind, "embed-defer.html").await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn a_module_under_another_name_marked_data_client_tools() {
                embedded_with_data_attributes_and_a_queue($kind, "embed-renamed.html").await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn from_another_origin() {
                embedded_with_data_attributes_and_a_queue($kind, "embed-cdn.html").await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn the_global_class_in_the_pages_own_code() {
                super::the_global_class_in_the_pages_own_code($kind).await;
            }
        }
    )*};
}

in_both_browsers!(chromium: BrowserKind::Chromium, firefox: BrowserKind::Firefox);
