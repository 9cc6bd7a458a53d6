//! Browser tests (wasm-bindgen-test, headless Chromium and Firefox) of "Always allow" (the
//! `allowAlways` option, docs/api.md): an approval kept in `localStorage` for one declaration and
//! one user answers later calls — in this instance and a new one, as after a reload — without the
//! dialog; a changed declaration, another user, a confirmation the call forces and stored data that
//! is not what the SDK writes all ask again; `tools.approvals` lists and revokes.
#![cfg(target_arch = "wasm32")]

use client_tools::ClientTools;
use serde_json::{json, Value};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

// One `inline_js` block per test file (docs/building.md).
#[wasm_bindgen(inline_js = r#"
const KEY = "client-tools:approvals";
const root = () => document.querySelector("client-tools-ui")?.shadowRoot;
export function isOpen() { const d = root()?.querySelector("dialog"); return !!d && d.open; }
export function count(sel) { return root()?.querySelectorAll(sel).length ?? 0; }
export function texts(sel) { return [...(root()?.querySelectorAll(sel) ?? [])].map((e) => e.textContent).join("|"); }
export function click(sel) { root().querySelector(sel).click(); }
export function tick(sel) { root().querySelector(sel).checked = true; }
export function stored() { return localStorage.getItem(KEY); }
export function store(text) { text == null ? localStorage.removeItem(KEY) : localStorage.setItem(KEY, text); }
export function jwt(sub) { return "e30." + btoa(JSON.stringify({ sub, exp: 9e9 })).replace(/=+$/, "") + ".c2ln"; }
export function warnings(tools) {
  const seen = [];
  tools.on("warning", (e) => seen.push(`${e.code}: ${e.message}`));
  return seen;
}
export function declaration(name, description, extra) {
  return Object.assign({
    name, description, requireConfirmation: true,
    parameters: { type: "object", properties: { boardId: { type: "string" } } },
    handler: (input) => ({ got: input }),
  }, extra);
}
let saved;
export function noStorage() {
  saved = Object.getOwnPropertyDescriptor(window, "localStorage");
  Object.defineProperty(window, "localStorage", { get() { throw new DOMException("storage is blocked", "SecurityError"); }, configurable: true });
}
export function storageBack() { Object.defineProperty(window, "localStorage", saved); }
export function until(check, timeoutMs) {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const poll = () => check() ? resolve() : Date.now() - started > timeoutMs ? reject(new Error("timed out")) : setTimeout(poll, 10);
    poll();
  });
}
"#)]
extern "C" {
    #[wasm_bindgen(js_name = isOpen)]
    fn is_open() -> bool;
    fn count(sel: &str) -> u32;
    fn texts(sel: &str) -> String;
    fn click(sel: &str);
    fn tick(sel: &str);
    fn stored() -> Option<String>;
    fn store(text: Option<&str>);
    fn jwt(sub: &str) -> String;
    fn warnings(tools: JsValue) -> js_sys::Array;
    fn declaration(name: &str, description: &str, extra: JsValue) -> JsValue;
    #[wasm_bindgen(js_name = noStorage)]
    fn no_storage();
    #[wasm_bindgen(js_name = storageBack)]
    fn storage_back();
    fn until(check: &js_sys::Function, timeout_ms: u32) -> js_sys::Promise;
}

const ALWAYS: &str = "input[type=checkbox][data-ct=allow-always]";

fn get(value: &JsValue, key: &str) -> JsValue {
    js_sys::Reflect::get(value, &key.into()).unwrap()
}

fn js(value: &Value) -> JsValue {
    js_sys::JSON::parse(&value.to_string()).unwrap()
}

async fn wait(what: &str, check: impl Fn() -> bool + 'static) {
    let check = Closure::<dyn Fn() -> bool>::new(check);
    JsFuture::from(until(check.as_ref().unchecked_ref(), 5_000))
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for {what}"));
}

/// A page-only instance with "Always allow" (and `token`, when given) and the tool `wipe`.
fn page(token: Option<&str>, description: &str, extra: Value) -> (ClientTools, js_sys::Array) {
    let mut options = json!({"allowAlways": true, "exposeToBrowser": false, "forms": false});
    if let Some(token) = token {
        options["token"] = token.into();
    }
    let tools = ClientTools::new(Some(js(&options).unchecked_into())).expect("valid options");
    let seen = warnings(tools.clone().into());
    let wipe = declaration("wipe", description, js(&extra));
    tools.define_function(wipe.unchecked_into()).unwrap();
    (tools, seen)
}

fn start(tools: &ClientTools) -> JsFuture {
    let input = js(&json!({"boardId": "b1"}));
    let promise: js_sys::Promise =
        JsValue::from(tools.invoke("wipe", Some(input))).unchecked_into();
    JsFuture::from(promise)
}

/// Whether the call's result is an error (its handler ran: not an error).
async fn is_error(call: JsFuture) -> bool {
    let result = call.await.expect("invoke resolves");
    get(&result, "isError").as_bool().unwrap()
}

/// The dialog asks: the call is approved (ticking "always allow" when `always`), it runs.
async fn approve_in_dialog(tools: &ClientTools, always: bool) {
    let call = start(tools);
    wait("the dialog", is_open).await;
    if always {
        tick(ALWAYS);
    }
    click("button[data-action=approve]");
    assert!(!is_error(call).await);
    if always {
        wait("the approval kept", || {
            stored().is_some_and(|s| s.contains("wipe"))
        })
        .await;
    }
}

/// The call runs without the dialog (an approval kept answered).
async fn runs_without_dialog(tools: &ClientTools) {
    assert!(!is_error(start(tools)).await);
    assert!(!is_open(), "no dialog");
}

/// The dialog asks (the approval kept does not answer): rejected there.
async fn asks(tools: &ClientTools) {
    let call = start(tools);
    wait("the dialog", is_open).await;
    click("button[data-action=reject]");
    assert!(is_error(call).await, "rejected");
    wait("the dialog closed", || !is_open()).await;
}

fn seen(warnings: &js_sys::Array) -> Vec<String> {
    warnings.iter().filter_map(|w| w.as_string()).collect()
}

#[wasm_bindgen_test]
async fn always_allow_answers_later_calls_and_new_instances_until_revoked() {
    store(None);
    let (tools, warnings) = page(None, "Wipe the board", json!({}));
    let call = start(&tools);
    wait("the dialog", is_open).await;
    assert_eq!(count(ALWAYS), 1);
    assert!(texts("label.check").contains("Always allow wipe on this site"));
    tick(ALWAYS);
    click("button[data-action=approve]");
    assert!(!is_error(call).await);
    wait("the approval kept", || stored().is_some()).await;
    let kept: Value = serde_json::from_str(&stored().unwrap()).unwrap();
    assert_eq!(kept["v"], 1);
    assert_eq!(kept["entries"][0]["name"], "wipe");
    assert_eq!(kept["entries"][0]["user"], Value::Null);
    let text = kept["entries"][0]["declaration"].as_str().unwrap();
    assert!(text.contains(r#""description":"Wipe the board""#), "{text}");
    runs_without_dialog(&tools).await;

    // A new instance on this page, as after a reload: still allowed.
    let (again, _) = page(None, "Wipe the board", json!({}));
    runs_without_dialog(&again).await;
    let approvals = get(&again.approvals(), "list");
    let list = approvals
        .unchecked_ref::<js_sys::Function>()
        .call0(&again.approvals());
    let list = js_sys::JSON::stringify(&list.unwrap()).unwrap();
    let list: Value = serde_json::from_str(&String::from(list)).unwrap();
    assert_eq!(list.as_array().unwrap().len(), 1);
    assert_eq!(list[0]["name"], "wipe");
    assert!(list[0]["approvedAt"].as_f64().unwrap() > 1.7e12);

    let revoke = |tools: &ClientTools, name: Option<&str>| {
        let api = tools.approvals();
        let revoke: js_sys::Function = get(&api, "revoke").unchecked_into();
        let name = name.map_or(JsValue::UNDEFINED, JsValue::from);
        revoke.call1(&api, &name).unwrap().as_f64().unwrap()
    };
    assert_eq!(revoke(&again, Some("other")), 0.0);
    assert_eq!(revoke(&again, Some("wipe")), 1.0);
    assert_eq!(stored().as_deref(), Some(r#"{"v":1,"entries":[]}"#));
    asks(&again).await;
    approve_in_dialog(&again, true).await;
    assert_eq!(revoke(&again, None), 1.0, "revoke() forgets them all");
    asks(&again).await;
    assert!(seen(&warnings).is_empty(), "{:?}", seen(&warnings));
}

#[wasm_bindgen_test]
async fn another_declaration_another_user_or_a_forced_confirmation_asks_again() {
    store(None);
    let alice = jwt("alice");
    let (tools, _) = page(Some(&alice), "Wipe the board", json!({}));
    approve_in_dialog(&tools, true).await;
    runs_without_dialog(&tools).await;

    // Another person on this browser: not theirs.
    let (bob, bob_warnings) = page(Some(&jwt("bob")), "Wipe the board", json!({}));
    asks(&bob).await;
    assert!(seen(&bob_warnings).is_empty());
    let list = js_sys::Function::from(get(&bob.approvals(), "list"));
    let list = js_sys::Array::from(&list.call0(&bob.approvals()).unwrap());
    assert_eq!(list.length(), 0, "bob has none");
    // No token: no user, not alice either.
    asks(&page(None, "Wipe the board", json!({})).0).await;

    // The tool changed (its description, its schema): asked again, and said why.
    for (description, extra) in [
        ("Wipe the whole board", json!({})),
        ("Wipe the board", json!({"parameters": {"type": "object"}})),
        (
            "Wipe the board",
            json!({"annotations": {"openWorldHint": true}}),
        ),
    ] {
        let (changed, warnings) = page(Some(&alice), description, extra);
        asks(&changed).await;
        let seen = seen(&warnings);
        assert_eq!(seen.len(), 1, "{seen:?}");
        assert!(
            seen[0].starts_with(
                "stored_data_ignored: approval kept for 'wipe' is for another declaration"
            ),
            "{seen:?}"
        );
    }

    // The same declaration with its keys in another order: still allowed.
    let reordered =
        json!({"parameters": {"properties": {"boardId": {"type": "string"}}, "type": "object"}});
    runs_without_dialog(&page(Some(&alice), "Wipe the board", reordered).0).await;

    // The same tool, for alice, but the runtime's _meta forces the confirmation: no "always".
    let (same, _) = page(Some(&alice), "Wipe the board", json!({}));
    let sent = js_sys::Array::new();
    let record = Closure::<dyn Fn(JsValue)>::new({
        let sent = sent.clone();
        move |frame: JsValue| {
            sent.push(&frame);
        }
    });
    same.attach_transport(record.as_ref().clone().unchecked_into())
        .unwrap();
    let frame = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "wipe", "arguments": {"boardId": "b"},
        "_meta": {"clienttools/requireConfirmation": true}}});
    same.receive_frame(&frame.to_string()).unwrap();
    wait("the dialog", is_open).await;
    assert_eq!(count(ALWAYS), 0, "not offered");
    click("button[data-action=approve]");
    wait("the answer", move || sent.length() > 0).await;
    runs_without_dialog(&same).await;
}

#[wasm_bindgen_test]
async fn stored_data_not_as_written_is_ignored_with_one_warning_and_the_person_asked() {
    let forged = json!({"name": "wipe", "declaration": "{}", "user": null, "at": 1});
    let fine = json!({"name": "other", "declaration": "{}", "user": null, "at": 1});
    let many: Vec<Value> = (0..101).map(|_| fine.clone()).collect();
    let hostile = [
        ("{not json".to_owned(), "not JSON"),
        ("x".repeat(300_000), "or too big"),
        (json!([1, 2]).to_string(), "not {v: 1, entries}"),
        (
            json!({"v": 2, "entries": []}).to_string(),
            "not {v: 1, entries}",
        ),
        (
            json!({"v": 1, "entries": "wipe"}).to_string(),
            "not {v: 1, entries}",
        ),
        (
            json!({"v": 1, "entries": many}).to_string(),
            "or too big",
        ),
        (
            json!({"v": 1, "entries": [fine, {"name": "wipe", "declaration": 5, "user": null, "at": 1},
                {"name": "wipe", "declaration": "{}", "user": {"sub": "x"}, "at": 1},
                {"name": "", "declaration": "{}", "user": null, "at": 2}, null]})
            .to_string(),
            "4 of its 5 entries malformed",
        ),
        (
            json!({"v": 1, "entries": [forged]}).to_string(),
            "approval kept for 'wipe' is for another declaration",
        ),
    ];
    for (text, why) in hostile {
        store(Some(&text));
        let (tools, warnings) = page(None, "Wipe the board", json!({}));
        asks(&tools).await;
        let seen = seen(&warnings);
        assert_eq!(seen.len(), 1, "{why}: {seen:?}");
        assert!(
            seen[0].starts_with("stored_data_ignored: ") && seen[0].contains(why),
            "{why}: {seen:?}"
        );
        // What is not as written is not even listed (a forged declaration is: it answers nothing).
        let list = js_sys::Function::from(get(&tools.approvals(), "list"));
        let list = js_sys::Array::from(&list.call0(&tools.approvals()).unwrap());
        let forged = why.starts_with("approval kept");
        assert!(forged || list.iter().all(|e| get(&e, "name") != "wipe"));
    }
    // What the person allows then replaces it: written as the SDK writes.
    store(Some("{not json"));
    let (tools, _) = page(None, "Wipe the board", json!({}));
    approve_in_dialog(&tools, true).await;
    runs_without_dialog(&tools).await;
    assert!(stored()
        .unwrap()
        .starts_with(r#"{"v":1,"entries":[{"name":"wipe""#));
    store(None);
}

#[wasm_bindgen_test]
async fn without_local_storage_always_allow_is_not_offered_and_said_once() {
    store(None);
    no_storage();
    let (tools, warnings) = page(None, "Wipe the board", json!({}));
    for _ in 0..2 {
        let call = start(&tools);
        wait("the dialog", is_open).await;
        assert_eq!(count(ALWAYS), 0, "not offered");
        click("button[data-action=approve]");
        assert!(!is_error(call).await);
        wait("the dialog closed", || !is_open()).await;
    }
    storage_back();
    let seen = seen(&warnings);
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert!(
        seen[0].starts_with("always_allow_unavailable: \"Always allow\" not offered: "),
        "{seen:?}"
    );
}

/// Two instances on one page ask at once (each numbers its calls from 1; they share the dialog):
/// the approval kept is for the tool the person saw and ticked, never the other one's.
#[wasm_bindgen_test]
async fn two_instances_asking_at_once_keep_the_approval_of_the_tool_the_person_saw() {
    store(None);
    let (wipe, _) = page(None, "Wipe the board", json!({}));
    let options = json!({"allowAlways": true, "exposeToBrowser": false, "forms": false});
    let bank = ClientTools::new(Some(js(&options).unchecked_into())).expect("valid options");
    let transfer = declaration("transfer", "Transfer money", js(&json!({})));
    bank.define_function(transfer.unchecked_into()).unwrap();

    let first = start(&wipe);
    wait("the dialog", is_open).await;
    let input = js(&json!({"boardId": "b2"}));
    let second: js_sys::Promise =
        JsValue::from(bank.invoke("transfer", Some(input))).unchecked_into();
    let second = JsFuture::from(second);
    wait("the second request waiting", || {
        texts("[data-ct=queue]").contains('1')
    })
    .await;
    tick(ALWAYS);
    click("button[data-action=approve]");
    assert!(!is_error(first).await);
    // The transfer is shown next (its buttons armed after a moment): rejected.
    wait("the transfer rejected", || {
        if is_open() {
            click("button[data-action=reject]");
        }
        !is_open()
    })
    .await;
    assert!(is_error(second).await, "rejected");

    let kept: Value = serde_json::from_str(&stored().expect("an approval kept")).unwrap();
    let entries = kept["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 1, "{kept}");
    assert_eq!(entries[0]["name"], "wipe");
    let text = entries[0]["declaration"].as_str().unwrap();
    assert!(
        text.contains("Wipe the board") && !text.contains("transfer"),
        "{text}"
    );
    runs_without_dialog(&wipe).await;
    store(None);
}
