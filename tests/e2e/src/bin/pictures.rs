//! Renders the built-in confirmation dialog and result form (light and dark), and the demo (the
//! task board with its agent console, after one call), to PNG files for the docs:
//! `cargo xtask pictures` (writes `docs/images/`). Real Chromium under WebDriver, real calls
//! through the bridge, the built package.
//!
//! Usage: `pictures <output dir>`; needs `CLIENT_TOOLS_PKG` (or `pkg/`) and Chromium/chromedriver.

use std::path::PathBuf;
use std::time::Duration;

use client_tools_bridge::{AgentTools, BridgeConfig, CallOptions};
use client_tools_e2e::webdriver::{BrowserKind, Driven};
use client_tools_e2e::BridgeOnly;
use serde_json::json;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let out = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "docs/images".into()),
    );
    std::fs::create_dir_all(&out).expect("create the output directory");
    demo(&out).await;
    for (dark, theme) in [(false, "light"), (true, "dark")] {
        let tools = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tools/hitl-tools.json");
        let config = BridgeConfig {
            tools: AgentTools::load(&tools)
                .expect("tools/hitl-tools.json")
                .into(),
            ..BridgeConfig::default()
        };
        let served = BridgeOnly::serving_package(config).await;
        let driven = Driven::start_with(BrowserKind::Chromium, dark).await;
        // Tall enough for the whole dialog: a picture of a scrolled dialog says less.
        driven
            .client
            .set_window_size(900, 1600)
            .await
            .expect("resize the window");
        driven
            .goto(&format!("{}/pictures.html", served.base_url))
            .await;
        let page = served
            .bridge
            .wait_for_page(Duration::from_secs(60))
            .await
            .expect("the pictures page connected");

        let confirm = {
            let page = page.clone();
            tokio::spawn(async move {
                let arguments = json!({
                    "taskId": "t42", "column": "in-progress", "assignee": "ana@example.com",
                    "due": "2026-12-14", "estimate": 3, "notify": true, "labels": ["backend", "urgent"],
                });
                page.call_tool(
                    ("move_task", arguments),
                    CallOptions::new().timeout(Duration::from_secs(60)),
                )
                .await
                .into_result()
            })
        };
        driven.wait_for_dialog("Move Task").await;
        shoot(&driven, &out.join(format!("confirm-{theme}.png"))).await;
        driven.press(&[fantoccini::key::Key::Escape]).await;
        let _ = confirm.await;

        // The result form of an agent-defined tool the page has no handler for, half filled in
        // (a choice's option values are its index).
        let form = {
            let page = page.clone();
            tokio::spawn(async move {
                page.call_tool(
                    ("pick_slot", json!({"order": "o-17"})),
                    CallOptions::new().timeout(Duration::from_secs(60)),
                )
                .await
                .into_result()
            })
        };
        driven.wait_for_dialog("pick_slot").await;
        driven
            .eval(
                "const root = document.querySelector('client-tools-ui').shadowRoot;
                 const set = (path, value) => {
                   const c = root.querySelector(`[data-path=\"${path}\"]`);
                   c.value = value;
                   c.dispatchEvent(new Event('input', { bubbles: true }));
                 };
                 set('/date', '2026-12-14');
                 set('/window', '1');
                 set('/floor', '3');",
                vec![],
            )
            .await;
        shoot(&driven, &out.join(format!("result-form-{theme}.png"))).await;
        driven.press(&[fantoccini::key::Key::Escape]).await;
        let _ = form.await;
        driven.quit().await;
    }
}

/// The demo as `cargo xtask demo` serves it, after one call through its agent console.
async fn demo(out: &std::path::Path) {
    let served = BridgeOnly::serving_demo(BridgeConfig {
        agent_token: Some("pictures".into()),
        ..BridgeConfig::default()
    })
    .await;
    let driven = Driven::start(BrowserKind::Chromium).await;
    driven
        .client
        .set_window_size(1280, 960)
        .await
        .expect("resize the window");
    driven
        .goto(&format!("{}/#agent-token=pictures", served.base_url))
        .await;
    served
        .bridge
        .wait_for_page(Duration::from_secs(60))
        .await
        .expect("the demo connected");
    driven
        .until(
            "the console lists the board's tools",
            "return document.querySelectorAll('#call-name option').length > 0;",
        )
        .await;
    driven
        .eval(
            "document.querySelector('#call-form button[type=submit]').click(); return true;",
            vec![],
        )
        .await;
    driven
        .until(
            "the call's result is in the console's log",
            "return document.querySelectorAll('#log li').length > 0;",
        )
        .await;
    let png = driven
        .client
        .screenshot()
        .await
        .expect("screenshot the demo");
    let path = out.join("demo.png");
    std::fs::write(&path, png).expect("write the picture");
    println!("wrote {}", path.display());
    driven.quit().await;
}

/// Saves a picture of the open dialog (just the dialog, with a margin the browser draws).
async fn shoot(driven: &Driven, path: &std::path::Path) {
    let dialog = driven.ui("dialog").await;
    driven
        .eval(
            "document.querySelector('client-tools-ui').shadowRoot.querySelector('dialog').scrollTop = 0",
            vec![],
        )
        .await;
    let png = dialog.screenshot().await.expect("screenshot the dialog");
    std::fs::write(path, png).expect("write the picture");
    println!("wrote {}", path.display());
}
