//! Human in the loop (SPEC §7), as a person with a keyboard meets it: the built-in confirmation
//! dialog in real Chromium and Firefox under WebDriver, keys pressed through WebDriver's actions,
//! calls coming from the bridge.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use client_tools_bridge::{AgentTools, BridgeConfig, CallOptions, PageSession};
use client_tools_core::protocol::CallToolResult;
use client_tools_e2e::webdriver::{BrowserKind, Driven};
use client_tools_e2e::{python_steps, BridgeOnly};
use fantoccini::key::Key;
use serde_json::{json, Value};
use tokio::task::JoinHandle;

/// The hitl page open in one browser, connected to its own bridge.
struct Hitl {
    driven: Driven,
    page: Arc<PageSession>,
    served: BridgeOnly,
}

/// The agent-defined tools of these tests (`pick_slot`: no handler, the result form answers).
fn hitl_tools() -> AgentTools {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tools/hitl-tools.json");
    AgentTools::load(&path).expect("tools/hitl-tools.json")
}

const AGENT_TOKEN: &str = "hitl-agent-token";

fn hitl_config() -> BridgeConfig {
    BridgeConfig {
        tools: hitl_tools().into(),
        agent_token: Some(AGENT_TOKEN.into()),
        ..BridgeConfig::default()
    }
}

impl Hitl {
    async fn open(kind: BrowserKind) -> Hitl {
        Self::open_served(kind, BridgeOnly::serving_package(hitl_config()).await).await
    }

    async fn open_served(kind: BrowserKind, served: BridgeOnly) -> Hitl {
        let driven = Driven::start(kind).await;
        driven.goto(&format!("{}/hitl.html", served.base_url)).await;
        let status = driven
            .until(
                "the page has started (or failed)",
                "const s = document.getElementById('status').textContent;
                 return s === 'loading' ? null : s;",
            )
            .await;
        assert_eq!(status, "ready", "the hitl page did not start in {kind:?}");
        let page = served
            .bridge
            .wait_for_page(Duration::from_secs(60))
            .await
            .expect("the hitl page connected and listed its tools");
        driven
            .until(
                "the page is ready",
                "return document.getElementById('status').textContent === 'ready'",
            )
            .await;
        Hitl {
            driven,
            page,
            served,
        }
    }

    /// Starts a call through the bridge; the dialog decides how it ends.
    fn call(&self, name: &str, arguments: Value) -> JoinHandle<CallToolResult> {
        let page = self.page.clone();
        let name = name.to_owned();
        tokio::spawn(async move {
            page.call_tool(
                (&name, arguments),
                CallOptions::new().timeout(Duration::from_secs(60)),
            )
            .await
            .into_result()
        })
    }

    /// How often the page's handler for `tool` ran.
    async fn runs(&self, tool: &str) -> u64 {
        let value = self
            .driven
            .eval("return window.runs[arguments[0]] || 0", vec![json!(tool)])
            .await;
        value.as_u64().unwrap_or(0)
    }

    async fn focus_restored(&self) -> bool {
        self.driven
            .eval("return document.activeElement?.id === 'before'", vec![])
            .await
            == Value::Bool(true)
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
    approve_with_the_keyboard,
    edit_then_approve,
    reject_with_a_reason,
    escape_rejects,
    focus_stays_in_the_dialog,
    confirmations_queue,
    human_time_is_not_handler_time,
    hints_decide_who_asks,
    result_form_submit,
    result_form_cancel,
    an_mcp_client_waits_for_the_person,
    what_the_person_approves_is_what_they_saw,
    a_double_click_answers_one_request,
    a_forced_close_answers_one_request,
    the_dialog_that_cannot_load,
);

/// A copy of `from` without the file at `skip` (a path inside it).
fn copy_without(from: &std::path::Path, to: &std::path::Path, skip: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let target = to.join(path.file_name().unwrap());
        if path == skip {
            continue;
        } else if path.is_dir() {
            copy_without(&path, &target, skip);
        } else {
            std::fs::copy(&path, &target).unwrap();
        }
    }
}

/// The dialog's module is loaded when a call first needs the person (SPEC §7); where it cannot be
/// (a package served without it: a 404, as offline), the call ends with one error result that
/// names what failed, at once — never a hang — and the page goes on.
async fn the_dialog_that_cannot_load(kind: BrowserKind) {
    let package = client_tools_e2e::pkg_dir();
    let broken = std::env::temp_dir().join(format!(
        "client-tools-e2e-no-dialog-{}-{kind:?}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&broken);
    copy_without(&package, &broken, &package.join("src/ui/ui.js"));
    let config = BridgeConfig {
        pkg_dir: broken.clone(),
        ..hitl_config()
    };
    let hitl = Hitl::open_served(kind, BridgeOnly::start(config).await).await;
    let result = outcome(hitl.call("delete_task", json!({"taskId": "t2"}))).await;
    assert!(result.is_error, "{result:?}");
    let text = result.text();
    assert!(
        text.contains("could not be loaded") && text.contains("src/ui/ui.js"),
        "{text}"
    );
    assert_eq!(hitl.runs("delete_task").await, 0, "nothing ran unapproved");
    // The page goes on: a call that asks nobody still runs.
    let read = outcome(hitl.call("read_board", json!({"boardId": "b1"}))).await;
    assert_eq!(read.text(), "read");
    hitl.quit().await;
    let _ = std::fs::remove_dir_all(&broken);
}

async fn approve_with_the_keyboard(kind: BrowserKind) {
    let hitl = Hitl::open(kind).await;
    let call = hitl.call("delete_task", json!({"taskId": "t2"}));
    hitl.driven.wait_for_dialog("Delete Task").await;
    // The least destructive choice has focus first: an Enter pressed by habit rejects.
    assert_eq!(hitl.driven.focused_in_ui().await, "reject");
    assert!(hitl
        .driven
        .ui_text("[data-ct=\"description\"]")
        .await
        .contains("Delete a task from the board"));
    // The proposed input is shown, read-only until the user chooses Edit.
    let read_only = hitl
        .driven
        .eval(
            "const c = document.querySelector('client-tools-ui').shadowRoot
               .querySelector('[data-path=\"/taskId\"]');
             return [c.value, c.readOnly || c.disabled];",
            vec![],
        )
        .await;
    assert_eq!(read_only, json!(["t2", true]));
    assert_eq!(
        hitl.runs("delete_task").await,
        0,
        "nothing runs before approval"
    );

    hitl.driven.tab_to("approve").await;
    hitl.driven.press(&[Key::Enter]).await;
    let result = outcome(call).await;
    assert!(!result.is_error, "{result:?}");
    assert_eq!(result.structured_content, Some(json!({"deleted": "t2"})));
    assert_eq!(hitl.runs("delete_task").await, 1);
    assert!(hitl.driven.dialog_closed().await);
    assert!(hitl.focus_restored().await, "focus returns to the page");
    hitl.quit().await;
}

async fn edit_then_approve(kind: BrowserKind) {
    let hitl = Hitl::open(kind).await;
    let call = hitl.call("delete_task", json!({"taskId": "t2"}));
    hitl.driven.wait_for_dialog("Delete Task").await;
    hitl.driven.tab_to("edit").await;
    hitl.driven.press(&[Key::Enter]).await;
    hitl.driven.tab_to("/taskId").await;
    // An edit that breaks the schema is refused on the field, and the dialog stays open.
    hitl.driven.replace_text("nope").await;
    hitl.driven.tab_to("approve").await;
    hitl.driven.press(&[Key::Enter]).await;
    hitl.driven
        .until(
            "the edited field is marked invalid, with its error",
            "const root = document.querySelector('client-tools-ui').shadowRoot;
             const c = root.querySelector('[data-path=\"/taskId\"]');
             const ids = (c.getAttribute('aria-describedby') || '').split(' ');
             const described = ids.map((id) => root.getElementById(id)?.textContent || '').join(' ');
             return c.getAttribute('aria-invalid') === 'true' && described.includes('^t[0-9]+$');",
        )
        .await;
    assert!(!hitl.driven.dialog_closed().await);
    // Announced: the live region speaks, and focus moves to the field its error describes.
    assert!(!hitl.driven.ui_text("[data-ct=\"live\"]").await.is_empty());
    assert_eq!(hitl.driven.focused_in_ui().await, "/taskId");
    assert_eq!(hitl.runs("delete_task").await, 0);

    hitl.driven.tab_to("/taskId").await;
    hitl.driven.replace_text("t7").await;
    hitl.driven.tab_to("approve").await;
    hitl.driven.press(&[Key::Enter]).await;
    let result = outcome(call).await;
    assert!(!result.is_error, "{result:?}");
    assert_eq!(result.structured_content, Some(json!({"deleted": "t7"})));
    let modified = result
        .meta
        .as_ref()
        .and_then(|m| m.get("clienttools/modifiedInput"))
        .cloned();
    assert_eq!(
        modified.as_ref().and_then(|m| m.get("taskId")),
        Some(&json!("t7"))
    );
    let ran_on = hitl
        .driven
        .eval("return window.inputs.delete_task[0].taskId", vec![])
        .await;
    assert_eq!(ran_on, json!("t7"), "the handler ran on the edited input");
    hitl.quit().await;
}

async fn reject_with_a_reason(kind: BrowserKind) {
    let hitl = Hitl::open(kind).await;
    let call = hitl.call("delete_task", json!({"taskId": "t3"}));
    hitl.driven.wait_for_dialog("Delete Task").await;
    hitl.driven.tab_to("reason").await;
    hitl.driven.type_text("not this one").await;
    hitl.driven.tab_to("reject").await;
    hitl.driven.press(&[Key::Enter]).await;
    let result = outcome(call).await;
    assert!(result.is_error);
    assert!(result.text().contains("rejected by the user"), "{result:?}");
    assert!(result.text().contains("not this one"), "{result:?}");
    assert_eq!(hitl.runs("delete_task").await, 0);
    assert!(hitl.focus_restored().await);
    hitl.quit().await;
}

async fn escape_rejects(kind: BrowserKind) {
    let hitl = Hitl::open(kind).await;
    let call = hitl.call("delete_task", json!({"taskId": "t1"}));
    hitl.driven.wait_for_dialog("Delete Task").await;
    hitl.driven.press(&[Key::Escape]).await;
    let result = outcome(call).await;
    assert!(result.is_error);
    assert!(result.text().contains("rejected by the user"), "{result:?}");
    assert_eq!(hitl.runs("delete_task").await, 0);
    assert!(hitl.driven.dialog_closed().await);
    assert!(hitl.focus_restored().await);
    hitl.quit().await;
}

async fn focus_stays_in_the_dialog(kind: BrowserKind) {
    let hitl = Hitl::open(kind).await;
    let call = hitl.call("delete_task", json!({"taskId": "t1"}));
    hitl.driven.wait_for_dialog("Delete Task").await;
    // Around the dialog more than once, both ways: focus never reaches the page behind it.
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..16 {
        hitl.driven.press(&[Key::Tab]).await;
        let focused = hitl.driven.focused_in_ui().await;
        assert_ne!(focused, "outside", "Tab left the dialog in {kind:?}");
        seen.insert(focused);
    }
    for _ in 0..16 {
        hitl.driven.shift_tab().await;
        let focused = hitl.driven.focused_in_ui().await;
        assert_ne!(focused, "outside", "Shift+Tab left the dialog in {kind:?}");
    }
    for expected in ["approve", "reject", "edit", "reason"] {
        assert!(
            seen.contains(expected),
            "Tab never reached {expected}: {seen:?}"
        );
    }
    hitl.driven.tab_to("approve").await;
    hitl.driven.press(&[Key::Enter]).await;
    assert!(!outcome(call).await.is_error);
    hitl.quit().await;
}

async fn confirmations_queue(kind: BrowserKind) {
    let hitl = Hitl::open(kind).await;
    let first = hitl.call("delete_task", json!({"taskId": "t1"}));
    hitl.driven.wait_for_dialog("Delete Task").await;
    let second = hitl.call("archive_board", json!({"boardId": "b1"}));
    hitl.driven
        .until(
            "the dialog says one more confirmation waits",
            "return document.querySelector('client-tools-ui').shadowRoot
               .querySelector('[data-ct=\"queue\"]')?.textContent.includes('1')",
        )
        .await;
    hitl.driven.tab_to("approve").await;
    hitl.driven.press(&[Key::Enter]).await;
    assert!(!outcome(first).await.is_error);

    hitl.driven.wait_for_dialog("archive_board").await;
    assert!(
        !hitl
            .driven
            .ui_text("[data-ct=\"queue\"]")
            .await
            .contains('1'),
        "nothing waits behind the last one"
    );
    hitl.driven.press(&[Key::Escape]).await;
    let rejected = outcome(second).await;
    assert!(rejected.text().contains("rejected by the user"));
    assert_eq!(hitl.runs("delete_task").await, 1);
    assert_eq!(hitl.runs("archive_board").await, 0);
    hitl.quit().await;
}

async fn human_time_is_not_handler_time(kind: BrowserKind) {
    let hitl = Hitl::open(kind).await;
    let progress_before = hitl.page.progress_notifications();
    let call = hitl.call("quick_confirmed", json!({}));
    hitl.driven.wait_for_dialog("quick_confirmed").await;
    // The person takes longer than the handler's 300 ms: the page reports progress every second
    // while it waits, so two reports prove at least a second of human time went by.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while hitl.page.progress_notifications() < progress_before + 2 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no progress while waiting"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    hitl.driven.tab_to("approve").await;
    hitl.driven.press(&[Key::Enter]).await;
    let result = outcome(call).await;
    assert!(
        !result.is_error,
        "human time counted against the timeout: {result:?}"
    );
    assert_eq!(result.text(), "done in time");
    hitl.quit().await;
}

async fn hints_decide_who_asks(kind: BrowserKind) {
    let hitl = Hitl::open(kind).await;
    // readOnlyHint: runs at once, no dialog.
    let read = outcome(hitl.call("read_board", json!({"boardId": "b1"}))).await;
    assert_eq!(read.text(), "read");
    assert!(hitl.driven.dialog_closed().await);
    // destructiveHint: asks. "Allow for this session" then lets the next call through unasked.
    let first = hitl.call("archive_board", json!({"boardId": "b1"}));
    hitl.driven.wait_for_dialog("archive_board").await;
    hitl.driven.tab_to("allow-session").await;
    hitl.driven.press(&[Key::Space]).await;
    hitl.driven.tab_to("approve").await;
    hitl.driven.press(&[Key::Enter]).await;
    assert_eq!(outcome(first).await.text(), "archived");
    let second = outcome(hitl.call("archive_board", json!({"boardId": "b2"}))).await;
    assert_eq!(second.text(), "archived");
    assert!(hitl.driven.dialog_closed().await);
    assert_eq!(hitl.runs("archive_board").await, 2);
    // The allowance is for that tool only.
    let other = hitl.call("delete_task", json!({"taskId": "t1"}));
    hitl.driven.wait_for_dialog("Delete Task").await;
    hitl.driven.press(&[Key::Escape]).await;
    assert!(outcome(other).await.is_error);
    hitl.quit().await;
}

async fn result_form_submit(kind: BrowserKind) {
    let hitl = Hitl::open(kind).await;
    // An agent-defined tool the page has no handler for: after the grace for a late handler, the
    // person answers through a form built from the output schema.
    let call = hitl.call("pick_slot", json!({"order": "o-17"}));
    hitl.driven.wait_for_dialog("pick_slot").await;
    assert_eq!(
        hitl.driven.focused_in_ui().await,
        "/date",
        "the first field has focus"
    );
    // A date input takes the digits in the locale's order (en-US, both browsers: month, day, year).
    hitl.driven.type_text("12142026").await;
    hitl.driven.tab_to("/window").await;
    // A select follows typed letters: "a" picks "afternoon".
    hitl.driven.type_text("a").await;
    hitl.driven.tab_to("/floor").await;
    // Out of range first: refused on the field, the form stays open.
    hitl.driven.replace_text("120").await;
    hitl.driven.tab_to("submit").await;
    hitl.driven.press(&[Key::Enter]).await;
    hitl.driven
        .until(
            "the out-of-range floor is marked invalid",
            "return document.querySelector('client-tools-ui').shadowRoot
               .querySelector('[data-path=\"/floor\"]').getAttribute('aria-invalid') === 'true'",
        )
        .await;
    assert!(!hitl.driven.dialog_closed().await);
    hitl.driven.tab_to("/floor").await;
    hitl.driven.replace_text("3").await;
    hitl.driven.tab_to("submit").await;
    hitl.driven.press(&[Key::Enter]).await;
    let result = outcome(call).await;
    assert!(!result.is_error, "{result:?}");
    let answer = result.structured_content.expect("the form's answer");
    assert_eq!(answer["window"], "afternoon", "{answer}");
    assert_eq!(answer["floor"], 3, "{answer}");
    assert_eq!(answer["date"], "2026-12-14", "{answer}");
    assert_eq!(
        answer["leaveAtDoor"], false,
        "the default is kept: {answer}"
    );
    assert!(hitl.driven.dialog_closed().await);
    assert!(hitl.focus_restored().await);
    hitl.quit().await;
}

async fn result_form_cancel(kind: BrowserKind) {
    let hitl = Hitl::open(kind).await;
    let call = hitl.call("pick_slot", json!({}));
    hitl.driven.wait_for_dialog("pick_slot").await;
    hitl.driven.tab_to("cancel").await;
    hitl.driven.press(&[Key::Enter]).await;
    let result = outcome(call).await;
    assert!(result.is_error);
    assert!(result.text().contains("the user cancelled"), "{result:?}");
    // Esc cancels as well.
    let call = hitl.call("pick_slot", json!({}));
    hitl.driven.wait_for_dialog("pick_slot").await;
    hitl.driven.press(&[Key::Escape]).await;
    let result = outcome(call).await;
    assert!(result.text().contains("the user cancelled"), "{result:?}");
    hitl.quit().await;
}

async fn an_mcp_client_waits_for_the_person(kind: BrowserKind) {
    let hitl = Hitl::open(kind).await;
    // The official Python SDK client (no elicitation: the page's dialog asks) calls a confirming
    // tool and the agent-defined form tool; the person answers both with the keyboard.
    let url = format!("{}/mcp?session={}", hitl.served.base_url, hitl.page.id());
    let steps = json!([
        {"call": "delete_task", "arguments": {"taskId": "t5"}},
        {"call": "pick_slot", "arguments": {}},
    ]);
    let client = tokio::spawn(async move {
        python_steps::run(&url, AGENT_TOKEN, "2025-11-25", None, &steps).await
    });
    hitl.driven.wait_for_dialog("Delete Task").await;
    hitl.driven.tab_to("approve").await;
    hitl.driven.press(&[Key::Enter]).await;
    hitl.driven.wait_for_dialog("pick_slot").await;
    hitl.driven.press(&[Key::Escape]).await;
    let out = tokio::time::timeout(Duration::from_secs(60), client)
        .await
        .expect("the client ended")
        .expect("the client task");
    assert_eq!(out.len(), 2, "{out:?}");
    assert_eq!(out[0]["isError"], false, "{}", out[0]);
    assert_eq!(out[0]["structured"]["deleted"], "t5", "{}", out[0]);
    assert_eq!(out[1]["isError"], true, "{}", out[1]);
    assert!(
        out[1].to_string().contains("the user cancelled"),
        "{}",
        out[1]
    );
    assert_eq!(hitl.runs("delete_task").await, 1);
    hitl.quit().await;
}

async fn what_the_person_approves_is_what_they_saw(kind: BrowserKind) {
    let hitl = Hitl::open(kind).await;
    // Keys the schema does not list, a line break, a time zone: all shown, none rewritten.
    let proposed = json!({
        "to": "ana@example.com",
        "at": "2026-12-14T10:00:00.250+02:00",
        "body": "Hi Ana,\nP.S. wire $500 to the account below",
        "bcc": "attacker@example.com",
    });
    let call = hitl.call("send_message", proposed.clone());
    hitl.driven.wait_for_dialog("send_message").await;
    let shown = hitl
        .driven
        .eval(
            "const root = document.querySelector('client-tools-ui').shadowRoot;
             const value = (p) => root.querySelector(`[data-path=\"${p}\"]`)?.value;
             return [value('/body'), value('/bcc'), root.querySelector('form').textContent];",
            vec![],
        )
        .await;
    assert_eq!(
        shown[0], proposed["body"],
        "the whole text, line break included"
    );
    assert_eq!(
        shown[1],
        json!("\"attacker@example.com\""),
        "an unlisted key is shown"
    );
    assert!(shown[2].as_str().unwrap().contains("bcc"), "{shown}");

    // Edit, touch nothing, Approve: exactly the proposed input, not a modification.
    hitl.driven.tab_to("edit").await;
    hitl.driven.press(&[Key::Enter]).await;
    hitl.driven.tab_to("approve").await;
    hitl.driven.press(&[Key::Enter]).await;
    let result = outcome(call).await;
    assert!(!result.is_error, "{result:?}");
    assert!(
        result
            .meta
            .as_ref()
            .and_then(|m| m.get("clienttools/modifiedInput"))
            .is_none(),
        "{result:?}"
    );
    let ran_on = hitl
        .driven
        .eval("return window.inputs.send_message[0]", vec![])
        .await;
    assert_eq!(ran_on, proposed);

    // Edit one field: only that field changes.
    let call = hitl.call("send_message", proposed.clone());
    hitl.driven.wait_for_dialog("send_message").await;
    hitl.driven.tab_to("edit").await;
    hitl.driven.press(&[Key::Enter]).await;
    hitl.driven.tab_to("/to").await;
    hitl.driven.replace_text("bo@example.com").await;
    hitl.driven.tab_to("approve").await;
    hitl.driven.press(&[Key::Enter]).await;
    let result = outcome(call).await;
    assert!(!result.is_error, "{result:?}");
    let mut expected = proposed.clone();
    expected["to"] = json!("bo@example.com");
    let modified = result
        .meta
        .as_ref()
        .and_then(|m| m.get("clienttools/modifiedInput"));
    assert_eq!(modified, Some(&expected));
    hitl.quit().await;
}

async fn a_double_click_answers_one_request(kind: BrowserKind) {
    let hitl = Hitl::open(kind).await;
    let first = hitl.call("delete_task", json!({"taskId": "t1"}));
    hitl.driven.wait_for_dialog("Delete Task").await;
    let second = hitl.call("archive_board", json!({"boardId": "b1"}));
    hitl.driven
        .until(
            "the second request waits",
            "return document.querySelector('client-tools-ui').shadowRoot
               .querySelector('[data-ct=\"queue\"]')?.textContent.includes('1')",
        )
        .await;
    // The second click lands on the next request's Approve: it must not answer it unseen.
    hitl.driven.double_click("[data-action=\"approve\"]").await;
    assert!(!outcome(first).await.is_error);
    hitl.driven.wait_for_dialog("archive_board").await;
    assert_eq!(
        hitl.runs("archive_board").await,
        0,
        "the second request was not approved"
    );
    assert!(!second.is_finished());
    hitl.driven.press(&[Key::Escape]).await;
    assert!(outcome(second).await.is_error);
    hitl.quit().await;
}

async fn a_forced_close_answers_one_request(kind: BrowserKind) {
    let hitl = Hitl::open(kind).await;
    let first = hitl.call("delete_task", json!({"taskId": "t1"}));
    hitl.driven.wait_for_dialog("Delete Task").await;
    let second = hitl.call("archive_board", json!({"boardId": "b1"}));
    hitl.driven
        .until(
            "the second request waits",
            "return document.querySelector('client-tools-ui').shadowRoot
               .querySelector('[data-ct=\"queue\"]')?.textContent.includes('1')",
        )
        .await;
    // What Chromium does on Esc without a user activation: a `cancel` the page cannot stop, then
    // the dialog closes. That answers the request shown, and only that one.
    hitl.driven
        .eval(
            "const dialog = document.querySelector('client-tools-ui').shadowRoot.querySelector('dialog');
             dialog.dispatchEvent(new Event('cancel', { cancelable: false }));
             dialog.close();",
            vec![],
        )
        .await;
    let rejected = outcome(first).await;
    assert!(
        rejected.text().contains("rejected by the user"),
        "{rejected:?}"
    );
    hitl.driven.wait_for_dialog("archive_board").await;
    assert!(!second.is_finished(), "the next request is still asked");
    hitl.driven.tab_to("approve").await;
    hitl.driven.press(&[Key::Enter]).await;
    assert_eq!(outcome(second).await.text(), "archived");
    hitl.quit().await;
}
