//! The demo's agent console (`www/console.js`, what `cargo xtask demo` serves) answers a handler's
//! question over `/api` (docs/api.md, *Rounds over `/api`*): the board's `assign_task` asks the
//! person at the agent who should take a task (`ctx.elicit`); the console shows the question as a
//! form, the person types and accepts (or declines), and the console calls again with the answer;
//! `board_snapshot` returns a picture of the board (an image block), which the console shows.
//! `assign_task` allows tasks (SPEC §4 "Long calls as tasks") and the console takes them: its
//! question and answer go through the task (`tasks/get`, `tasks/update` over `/api`).
//! Each call the page runs is listed once in the log: its running entry replaced by its outcome.
//! The board is also a resource: the console lists it and reads it (`/api/sessions/{id}/resources`).
//! Real Chromium and Firefox through WebDriver, the real bridge and the demo site.

use std::time::Duration;

use client_tools_bridge::BridgeConfig;
use client_tools_e2e::webdriver::{BrowserKind, Driven};
use client_tools_e2e::BridgeOnly;
use fantoccini::Locator;
use serde_json::json;

const AGENT_TOKEN: &str = "console-agent-token";

/// Selects `tool` in the console, fills in `arguments` and submits the call form, as a person does.
async fn call_from_console(driven: &Driven, tool: &str, arguments: &str) {
    driven
        .until(
            "the console lists the tool",
            &format!("return [...document.querySelectorAll('#call-name option')].some(o => o.value === '{tool}')"),
        )
        .await;
    driven
        .eval(
            "document.querySelector('#call-name').value = arguments[0];
             document.querySelector('#call-args').value = arguments[1];",
            vec![json!(tool), json!(arguments)],
        )
        .await;
    let submit = driven
        .client
        .find(Locator::Css("#call-form button[type=submit]"))
        .await
        .expect("the call button");
    submit.click().await.expect("click");
}

/// The text of the newest result entry of the console's log, once there is one after `before`.
async fn newest_result(driven: &Driven, before: usize) -> String {
    let script = format!(
        "const results = [...document.querySelectorAll('#log .entry.result, #log .entry.error')];
         return results.length > {before} ? results[0].textContent : ''"
    );
    driven
        .until("a result in the console's log", &script)
        .await
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Presses the question form's button `value` (`accept`, `decline`, `cancel`), as a person does.
async fn press(driven: &Driven, value: &str) {
    let selector = format!("#ask button[value={value}]");
    let button = driven.client.find(Locator::Css(&selector)).await;
    button
        .expect("the form's button")
        .click()
        .await
        .expect("click");
}

/// The heads of the console's log entries for calls this tab ran, once `tool` has `outcomes` of
/// them: each call is listed once, its running entry ("▶ tool (call …)") replaced by its outcome
/// ("✔ tool (call …)"), so no running entry stays beside an outcome.
async fn calls_listed_once(driven: &Driven, kind: BrowserKind, tool: &str, outcomes: usize) {
    let script = format!(
        "const heads = [...document.querySelectorAll('#log .entry-head')].map(h => h.textContent)
           .filter(h => /^[▶✔✖⊘] /.test(h));
         return heads.filter(h => h === '✔ {tool}' || h.startsWith('✔ {tool} ')).length >= {outcomes} ? heads : null"
    );
    let heads = driven
        .until("the calls' outcomes in the console's log", &script)
        .await;
    let heads: Vec<&str> = heads
        .as_array()
        .expect("the heads")
        .iter()
        .filter_map(|h| h.as_str())
        .collect();
    assert!(
        heads.iter().all(|h| !h.starts_with('▶')),
        "{kind:?}: a running entry stayed beside its outcome: {heads:?}"
    );
    let ids: Vec<&str> = heads
        .iter()
        .filter_map(|h| h.split("(call ").nth(1))
        .collect();
    let mut unique = ids.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(
        unique.len(),
        ids.len(),
        "{kind:?}: a call listed twice: {heads:?}"
    );
    let of_tool = heads
        .iter()
        .filter(|h| h.starts_with(&format!("✔ {tool} (call ")))
        .count();
    assert_eq!(of_tool, outcomes, "{kind:?}: {heads:?}");
}

async fn results(driven: &Driven) -> usize {
    let count = driven
        .eval(
            "return document.querySelectorAll('#log .entry.result, #log .entry.error').length",
            vec![],
        )
        .await;
    count.as_u64().unwrap_or(0) as usize
}

async fn the_console_answers_a_handlers_question(kind: BrowserKind) {
    let config = BridgeConfig {
        agent_token: Some(AGENT_TOKEN.into()),
        ..BridgeConfig::default()
    };
    let served = BridgeOnly::serving_demo(config).await;
    let driven = Driven::start(kind).await;
    driven
        .goto(&format!("{}/#agent-token={AGENT_TOKEN}", served.base_url))
        .await;
    served
        .bridge
        .wait_for_page(Duration::from_secs(60))
        .await
        .expect("the demo connected and listed its tools");

    // Accepted: the person types a name into the form built from `requestedSchema`.
    let before = results(&driven).await;
    call_from_console(&driven, "assign_task", r#"{"taskId": "t2"}"#).await;
    let message = driven
        .until(
            "the console shows the handler's question",
            "const ask = document.querySelector('#ask'); return ask ? ask.textContent : ''",
        )
        .await;
    assert!(
        message
            .as_str()
            .unwrap()
            .contains("Who should take \"Record the demo video\"?"),
        "{message}"
    );
    let field = driven
        .client
        .find(Locator::Css("#ask input[name=assignee]"))
        .await
        .expect("a field for the assignee");
    assert_eq!(
        field.prop("value").await.unwrap().as_deref(),
        Some("Bo"),
        "its default"
    );
    field.clear().await.unwrap();
    field.send_keys("Zoe").await.unwrap();
    press(&driven, "accept").await;
    let result = newest_result(&driven, before).await;
    assert!(
        result.contains("\"assignee\": \"Zoe\""),
        "{kind:?}: {result}"
    );
    let closed = driven
        .eval("return document.querySelector('#ask') === null", vec![])
        .await;
    assert_eq!(closed, json!(true), "the form is gone once answered");
    // `assign_task` allows tasks and the console takes them: the question came through a task.
    let through_a_task = driven
        .eval(
            "return [...document.querySelectorAll('#log .entry-head')].some(h => h.textContent.startsWith('← task completed'))",
            vec![],
        )
        .await;
    assert_eq!(
        through_a_task,
        json!(true),
        "{kind:?}: the call became a task"
    );

    // Declined: the handler is told, and the task keeps its assignee.
    let before = results(&driven).await;
    call_from_console(&driven, "assign_task", r#"{"taskId": "t4"}"#).await;
    driven
        .until(
            "the console asks again",
            "return document.querySelector('#ask button[value=decline]') !== null",
        )
        .await;
    press(&driven, "decline").await;
    let result = newest_result(&driven, before).await;
    assert!(
        result.contains("t4 stays with Ana (decline)"),
        "{kind:?}: {result}"
    );
    // Each call this tab ran is listed once in the log: running, then its outcome in its place.
    calls_listed_once(&driven, kind, "assign_task", 2).await;

    // A picture of the board: the console shows the tool's image block as an image.
    let before = results(&driven).await;
    call_from_console(&driven, "board_snapshot", "{}").await;
    let result = newest_result(&driven, before).await;
    assert!(
        result.contains("\"mimeType\": \"image/png\""),
        "{kind:?}: {result}"
    );
    let size = driven
        .until(
            "the picture is decoded and shown",
            "const image = document.querySelector('#log .entry.result img.result-image');
             return image && image.complete && image.naturalWidth > 0
               ? [image.naturalWidth, image.naturalHeight] : null",
        )
        .await;
    assert_eq!(
        size[0],
        json!(660),
        "{kind:?}: three columns of 220 px, as drawn"
    );
    calls_listed_once(&driven, kind, "board_snapshot", 1).await;

    // The board as a resource (SPEC §11): the console lists it and reads it over `/api`, and what
    // it reads is the board as the calls above left it.
    let before = results(&driven).await;
    let read = driven
        .until(
            "the console lists the board resource",
            "return [...document.querySelectorAll('#resources li')]
               .find(li => li.textContent.includes('board://launch/tasks'))?.querySelector('button') ?? null",
        )
        .await;
    assert!(!read.is_null());
    driven
        .eval(
            "[...document.querySelectorAll('#resources li')]
               .find(li => li.textContent.includes('board://launch/tasks')).querySelector('button').click()",
            vec![],
        )
        .await;
    let result = newest_result(&driven, before).await;
    assert!(
        result.contains("board://launch/tasks") && result.contains(r#""assignee":"Zoe""#),
        "{kind:?}: {result}"
    );
    driven.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_answers_a_handlers_question_chromium() {
    the_console_answers_a_handlers_question(BrowserKind::Chromium).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_answers_a_handlers_question_firefox() {
    the_console_answers_a_handlers_question(BrowserKind::Firefox).await;
}
