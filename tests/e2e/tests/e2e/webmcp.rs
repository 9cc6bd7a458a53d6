//! WebMCP end to end (SPEC §8): the car-rental demo's forms (`www/cars.html`) are tools that agents
//! call through the bridge — its console API, an official MCP client — in real Chromium and Firefox;
//! and in a Chromium with WebMCP switched on, the browser's own `document.modelContext` gets the
//! page's defined tools while the forms it registers itself still reach the bridge.

use std::sync::Arc;
use std::time::Duration;

use client_tools_bridge::{BridgeConfig, CallOptions, PageSession};
use client_tools_e2e::webdriver::{BrowserKind, Driven};
use client_tools_e2e::{python_steps, BridgeOnly};
use fantoccini::Locator;
use serde_json::{json, Value};

const AGENT_TOKEN: &str = "webmcp-agent-token";
const TIMEOUT: Duration = Duration::from_secs(20);

struct Opened {
    driven: Driven,
    page: Arc<PageSession>,
    served: BridgeOnly,
}

async fn open(kind: BrowserKind, page: &str, extra_args: &[&str]) -> Opened {
    let config = BridgeConfig {
        agent_token: Some(AGENT_TOKEN.into()),
        ..BridgeConfig::default()
    };
    let served = if page == "cars.html" {
        BridgeOnly::serving_demo(config).await
    } else {
        BridgeOnly::serving_package(config).await
    };
    let driven = Driven::start_with_args(kind, false, extra_args).await;
    driven.goto(&format!("{}/{page}", served.base_url)).await;
    let page = served
        .bridge
        .wait_for_page(Duration::from_secs(60))
        .await
        .expect("the page connected and listed its tools");
    Opened {
        driven,
        page,
        served,
    }
}

/// A call through the bridge's HTTP API, as the demo console makes it.
async fn console_call(opened: &Opened, name: &str, arguments: Value) -> Value {
    let response = reqwest::Client::new()
        .post(format!(
            "{}/api/sessions/{}/call",
            opened.served.base_url,
            opened.page.id()
        ))
        .bearer_auth(AGENT_TOKEN)
        .json(&json!({ "name": name, "arguments": arguments }))
        .send()
        .await
        .expect("the bridge answers");
    assert_eq!(response.status().as_u16(), 200);
    response.json().await.expect("a JSON result")
}

fn dates() -> Value {
    json!({ "pickup": "2026-12-18", "dropoff": "2026-12-22" })
}

fn with(mut base: Value, more: Value) -> Value {
    base.as_object_mut()
        .unwrap()
        .extend(more.as_object().unwrap().clone());
    base
}

async fn the_demo_forms_are_tools_of_the_bridge(kind: BrowserKind) {
    let opened = open(kind, "cars.html", &[]).await;
    let tools = opened.page.tools();
    let search = tools
        .iter()
        .find(|t| t.name == "search_cars")
        .expect("search_cars listed");
    let meta = search.meta.as_ref().expect("_meta");
    assert_eq!(meta["clienttools/kind"], "form");
    let schema = serde_json::to_value(&search.input_schema).unwrap();
    assert_eq!(schema["required"], json!(["pickup", "dropoff"]));
    assert_eq!(
        schema["properties"]["maxPrice"]["description"],
        "The highest price per day, in euros"
    );
    assert_eq!(
        schema["properties"]["fuel"]["description"],
        "The fuel the car runs on"
    );

    // The console's call: the form is filled and submitted, the page answers with its results.
    let found = console_call(
        &opened,
        "search_cars",
        with(dates(), json!({ "fuel": "electric" })),
    )
    .await;
    assert_eq!(found["isError"], false, "{found}");
    assert_eq!(found["structuredContent"]["count"], 2, "{found}");
    let shown = opened
        .driven
        .eval(
            "return document.querySelector('#search [name=fuel]:checked').value",
            vec![],
        )
        .await;
    assert_eq!(shown, "electric", "the page shows what the agent asked for");

    // What the page refuses, the agent hears; what the schema refuses never reaches the page.
    let backwards = json!({ "pickup": "2026-12-22", "dropoff": "2026-12-18" });
    let refused = console_call(&opened, "search_cars", backwards).await;
    assert_eq!(refused["isError"], true);
    assert!(
        refused["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("return date"),
        "{refused}"
    );
    let invalid = console_call(
        &opened,
        "search_cars",
        with(dates(), json!({ "fuel": "coal" })),
    )
    .await;
    assert_eq!(invalid["isError"], true);

    // reserve_car has no toolautosubmit: the person presses Reserve.
    let page = opened.page.clone();
    let reservation = tokio::spawn(async move {
        let arguments = json!({ "carId": "tesla-3", "name": "Ada", "email": "ada@example.org" });
        page.call_tool(
            ("reserve_car", arguments),
            CallOptions::new().timeout(Duration::from_secs(60)),
        )
        .await
        .into_result()
    });
    opened
        .driven
        .until(
            "the Reserve button to ask for the person",
            "return document.querySelector('#reserve button').hasAttribute('data-tool-submit-active') || null",
        )
        .await;
    let button = opened
        .driven
        .client
        .find(Locator::Css("#reserve button"))
        .await
        .unwrap();
    button.click().await.unwrap();
    let reserved = reservation.await.unwrap();
    assert!(!reserved.is_error, "{}", reserved.text());
    assert_eq!(
        reserved.text(),
        "Reserved: Tesla Model 3 for Ada (confirmation sent to ada@example.org)"
    );
    opened.driven.quit().await;
}

async fn a_form_that_navigates_answers_before_it_goes(kind: BrowserKind) {
    let opened = open(kind, "navigating-form.html", &[]).await;
    let result = opened
        .page
        .call_tool(
            ("go_search", json!({ "q": "red cars", "page": 2 })),
            CallOptions::new().timeout(TIMEOUT),
        )
        .await
        .into_result();
    assert!(!result.is_error, "{}", result.text());
    assert_eq!(
        result.structured_content,
        Some(json!({ "q": "red cars", "page": 2 }))
    );
    let landed = opened
        .driven
        .until(
            "the browser to follow the form",
            "return document.getElementById('landed') ? location.search : null",
        )
        .await;
    assert_eq!(landed, "?q=red+cars&page=2");
    opened.driven.quit().await;
}

/// Where the browser's `modelContext` comes from on the adoption page.
enum ModelContext {
    /// MCP-B's `@mcp-b/global` (its IIFE build, from `tests/runtimes/node_modules`).
    McpB,
    /// Chromium's own WebMCP (`--enable-features=WebMCP`).
    Native,
}

/// `adoptBrowserTools` (SPEC §8): the tools other code registers with `document.modelContext` are
/// tools of the bridge (`_meta` `clienttools/kind: "browser"`), run through the browser's
/// `executeTool` with the call's signal after the SDK's checks; the list follows registrations and
/// their aborts; the page's own tools, registered there too, are not adopted back.
async fn adopts_the_browsers_tools(kind: BrowserKind, context: ModelContext) {
    let config = BridgeConfig {
        agent_token: Some(AGENT_TOKEN.into()),
        ..BridgeConfig::default()
    };
    let served = BridgeOnly::serving_package(config).await;
    let args: &[&str] = match context {
        ModelContext::Native => &["--enable-features=WebMCP"],
        ModelContext::McpB => &[],
    };
    let driven = Driven::start_with_args(kind, false, args).await;
    driven
        .goto(&format!("{}/adopt.html", served.base_url))
        .await;
    driven
        .until(
            "the page to load",
            "return document.getElementById('status').textContent === 'waiting' || null",
        )
        .await;
    if let ModelContext::McpB = context {
        let iife = client_tools_e2e::e2e_dir()
            .join("../runtimes/node_modules/@mcp-b/global/dist/index.iife.js");
        let source = std::fs::read_to_string(&iife).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (`cargo xtask test` installs tests/runtimes)",
                iife.display()
            )
        });
        driven.eval(&source, vec![]).await;
    }
    driven.eval("window.start()", vec![]).await;
    let status = driven
        .until(
            "the page to start",
            "const s = document.getElementById('status').textContent; return s === 'waiting' ? null : s",
        )
        .await;
    assert_eq!(status, "ready");
    let page = served
        .bridge
        .wait_for_page(Duration::from_secs(60))
        .await
        .expect("the page connected");
    let kinds = |page: &PageSession| -> Vec<(String, String)> {
        let mut kinds: Vec<_> = (page.tools().iter())
            .map(|tool| {
                let meta = tool.meta.as_ref().map(|m| m["clienttools/kind"].clone());
                (
                    tool.name.to_string(),
                    meta.unwrap_or_default().as_str().unwrap_or("").into(),
                )
            })
            .collect();
        kinds.sort();
        kinds
    };
    client_tools_e2e::eventually("the browser's tools are adopted", || {
        kinds(&page).len() == 4
    })
    .await;
    assert_eq!(
        kinds(&page),
        [
            ("cancel_order".into(), "browser".into()),
            ("lookup_order".into(), "browser".into()),
            ("shout".into(), "function".into()),
            ("wait_forever".into(), "browser".into()),
        ]
    );

    let result = page
        .call_tool(
            ("lookup_order", json!({ "orderId": "A1" })),
            CallOptions::new().timeout(TIMEOUT),
        )
        .await
        .into_result();
    assert!(!result.is_error, "{}", result.text());
    assert_eq!(result.text(), "order A1: shipped");
    assert_eq!(
        result.structured_content,
        Some(json!({ "orderId": "A1", "status": "shipped" }))
    );
    let refused = page
        .call_tool(
            ("lookup_order", json!({})),
            CallOptions::new().timeout(TIMEOUT),
        )
        .await
        .into_result();
    assert!(refused.is_error, "the SDK checks the input first");
    // A tool that does not say it only reads asks the person first: refused, never run.
    let refused = (page.call_tool(
        ("cancel_order", json!({ "orderId": "A1" })),
        CallOptions::new().timeout(TIMEOUT),
    ))
    .await
    .into_result();
    assert!(
        refused.is_error && refused.text().contains("not now"),
        "{}",
        refused.text()
    );
    let asked = driven.eval("return window.asked", vec![]).await;
    assert_eq!(asked, json!(["cancel_order"]));
    let executed = driven.eval("return window.executed", vec![]).await;
    assert_eq!(
        executed,
        json!(["A1"]),
        "executed once, not on invalid input nor when refused"
    );

    let started = async {
        driven
            .until(
                "the tool to run",
                "return window.executed.includes('wait') || null",
            )
            .await;
        "the agent gave up".to_owned()
    };
    let cancelled = page
        .call_tool(
            ("wait_forever", json!({})),
            CallOptions::new().timeout(TIMEOUT).cancel(started),
        )
        .await
        .result();
    assert!(cancelled.is_none(), "cancelled: no result");
    driven
        .until(
            "the browser's call to see its signal abort",
            "return window.aborted.includes('wait_forever') || null",
        )
        .await;

    driven
        .eval("window.unregisterOther('lookup_order')", vec![])
        .await;
    driven.eval("return window.registerLater()", vec![]).await;
    client_tools_e2e::eventually("the adopted tools follow the browser's", || {
        let names: Vec<_> = kinds(&page).into_iter().map(|(name, _)| name).collect();
        names == ["cancel_order", "count_items", "shout", "wait_forever"]
    })
    .await;
    let counted = page
        .call_tool(
            ("count_items", json!({})),
            CallOptions::new().timeout(TIMEOUT),
        )
        .await
        .into_result();
    assert!(!counted.is_error, "{}", counted.text());
    assert_eq!(counted.structured_content, Some(json!({ "items": 3 })));
    let warnings = driven.eval("return window.warnings", vec![]).await;
    assert_eq!(warnings, json!([]));
    driven.quit().await;
}

mod chromium {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn adopts_the_tools_mcp_b_registers() {
        super::adopts_the_browsers_tools(BrowserKind::Chromium, ModelContext::McpB).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn adopts_the_tools_of_native_webmcp() {
        super::adopts_the_browsers_tools(BrowserKind::Chromium, ModelContext::Native).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_demo_forms_are_tools_of_the_bridge() {
        super::the_demo_forms_are_tools_of_the_bridge(BrowserKind::Chromium).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_form_that_navigates_answers_before_it_goes() {
        super::a_form_that_navigates_answers_before_it_goes(BrowserKind::Chromium).await;
    }

    /// The official MCP Python client lists the form and calls it (SPEC §8: a page's forms reach
    /// any MCP agent through the bridge).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_mcp_client_calls_the_demo_form() {
        let opened = open(BrowserKind::Chromium, "cars.html", &[]).await;
        let url = format!(
            "{}/mcp?session={}",
            opened.served.base_url,
            opened.page.id()
        );
        let steps = json!([
            {"list": true},
            {"call": "search_cars", "arguments": with(dates(), json!({ "make": "Toyota", "maxPrice": 50 }))},
        ]);
        let out = python_steps::run(&url, AGENT_TOKEN, "2025-11-25", None, &steps).await;
        assert_eq!(out.len(), 2, "{out:?}");
        let listed = out[0]["tools"].as_array().unwrap();
        let search = listed
            .iter()
            .find(|t| t["name"] == "search_cars")
            .expect("listed");
        assert_eq!(search["_meta"]["clienttools/kind"], "form");
        assert_eq!(out[1]["isError"], false, "{out:?}");
        assert_eq!(out[1]["structured"]["count"], 1, "{out:?}");
        assert_eq!(out[1]["structured"]["cars"][0]["model"], "Yaris");
        opened.driven.quit().await;
    }

    /// Chromium's own WebMCP (`--enable-features=WebMCP`): the browser registers the form itself
    /// and the SDK does not register it again; the defined tool is registered with the browser
    /// and runs through the SDK's pipeline when the browser's agent calls it; the form still
    /// reaches MCP agents through the bridge, and the page sees `agentInvoked` either way.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn native_webmcp_gets_the_defined_tools_and_keeps_its_forms() {
        let opened = open(
            BrowserKind::Chromium,
            "webmcp.html",
            &["--enable-features=WebMCP"],
        )
        .await;
        let driven = &opened.driven;
        driven
            .until(
                "the page to be ready",
                "return document.getElementById('status').textContent === 'ready' || null",
            )
            .await;
        let list = "const done = arguments[arguments.length - 1];
                    document.modelContext.getTools().then((tools) => done(tools.map((t) => t.name).sort()));";
        let deadline = tokio::time::Instant::now() + TIMEOUT;
        let names = loop {
            let names = driven.eval_async(list).await;
            if names.as_array().is_some_and(|n| n.len() >= 2)
                || tokio::time::Instant::now() > deadline
            {
                break names;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        assert_eq!(
            names,
            json!(["find_book", "shout"]),
            "one registration each"
        );
        let executed = driven
            .eval_async(
                "const done = arguments[arguments.length - 1];
                 document.modelContext.getTools().then(async (tools) => {
                   const shout = tools.find((t) => t.name === 'shout');
                   try { done(await document.modelContext.executeTool(shout, { text: 'hi' })); }
                   catch (e) { done('threw ' + e.name + ': ' + e.message); }
                 });",
            )
            .await;
        assert!(
            executed.to_string().contains("HI"),
            "the browser's call ran the handler: {executed}"
        );
        let warnings = driven.eval("return window.warnings", vec![]).await;
        assert_eq!(warnings, json!([]), "no duplicate registration");

        let through_bridge = opened
            .page
            .call_tool(
                ("find_book", json!({ "title": "Dune" })),
                CallOptions::new().timeout(TIMEOUT),
            )
            .await
            .into_result();
        assert!(!through_bridge.is_error, "{}", through_bridge.text());
        assert_eq!(
            through_bridge.structured_content,
            Some(json!({ "found": ["Dune (2nd edition)"] }))
        );
        let submits = driven.eval("return window.submits", vec![]).await;
        assert_eq!(submits, json!([{ "agentInvoked": true }]));
        opened.driven.quit().await;
    }
}

mod firefox {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn adopts_the_tools_mcp_b_registers() {
        super::adopts_the_browsers_tools(BrowserKind::Firefox, ModelContext::McpB).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_demo_forms_are_tools_of_the_bridge() {
        super::the_demo_forms_are_tools_of_the_bridge(BrowserKind::Firefox).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_form_that_navigates_answers_before_it_goes() {
        super::a_form_that_navigates_answers_before_it_goes(BrowserKind::Firefox).await;
    }
}
