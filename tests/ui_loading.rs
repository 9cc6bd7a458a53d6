//! Browser test (wasm-bindgen-test, headless Chromium and Firefox) of when the built-in UI is loaded
//! (SPEC §7, last point): the dialog and the forms (`src/ui/ui.js`) are not fetched with the module
//! a page loads at `init`, nor for calls that ask nobody, and are fetched once, by the first call
//! that needs a person. A file of its own: its one test must be the first thing on its page to show
//! a dialog. (A module that cannot be loaded: tests/e2e hitl::the_dialog_that_cannot_load.)
#![cfg(target_arch = "wasm32")]

use client_tools::ClientTools;
use serde_json::{json, Value};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

// One `inline_js` block per test file (docs/building.md, the test runner's server).
#[wasm_bindgen(inline_js = r#"
export function uiFetches() {
  return performance.getEntriesByType("resource").filter((e) => new URL(e.name).pathname === "/src/ui/ui.js").length;
}
export function declaration(name, confirm) {
  return { name, description: "Echo", parameters: { type: "object" }, requireConfirmation: confirm, handler: (input) => ({ got: input }) };
}
export function approveWhenShown() {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const poll = () => {
      const root = document.querySelector("client-tools-ui")?.shadowRoot;
      const dialog = root && root.querySelector("dialog");
      if (dialog && dialog.open) {
        root.querySelector("button[data-action=approve]").click();
        resolve();
      } else if (Date.now() - started > 5000) reject(new Error("the dialog did not open"));
      else setTimeout(poll, 10);
    };
    poll();
  });
}
"#)]
extern "C" {
    #[wasm_bindgen(js_name = uiFetches)]
    fn ui_fetches() -> u32;
    fn declaration(name: &str, confirm: bool) -> JsValue;
    #[wasm_bindgen(js_name = approveWhenShown)]
    fn approve_when_shown() -> js_sys::Promise;
}

fn js(value: &Value) -> JsValue {
    js_sys::JSON::parse(&value.to_string()).unwrap()
}

/// Starts a call (at once: the dialog may then open).
fn call(tools: &ClientTools, name: &str) -> JsFuture {
    let promise: js_sys::Promise =
        JsValue::from(tools.invoke(name, Some(js(&json!({"a": 1}))))).unchecked_into();
    JsFuture::from(promise)
}

async fn is_error(call: JsFuture) -> bool {
    let result = call.await.expect("invoke resolves");
    js_sys::Reflect::get(&result, &"isError".into()).unwrap() == true
}

#[wasm_bindgen_test]
async fn the_dialog_is_fetched_by_the_first_call_that_asks_not_at_init() {
    let tools = ClientTools::new(Some(js(&json!({})).unchecked_into())).unwrap();
    tools
        .define_function(declaration("quiet", false).unchecked_into())
        .unwrap();
    tools
        .define_function(declaration("asks", true).unchecked_into())
        .unwrap();
    assert!(!is_error(call(&tools, "quiet")).await);
    assert_eq!(ui_fetches(), 0, "the module loaded at init holds no dialog");

    let asked = call(&tools, "asks");
    JsFuture::from(approve_when_shown()).await.unwrap();
    assert!(!is_error(asked).await, "approved in the dialog");
    assert_eq!(
        ui_fetches(),
        1,
        "the dialog fetched for the first confirmation"
    );

    let asked = call(&tools, "asks");
    JsFuture::from(approve_when_shown()).await.unwrap();
    assert!(!is_error(asked).await);
    assert_eq!(ui_fetches(), 1, "and only once");
}
