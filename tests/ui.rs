//! Browser tests (wasm-bindgen-test, headless Chromium and Firefox) of the built-in UI (SPEC §7):
//! the schema-form renderer on its own (`src/ui/ui.js`'s exports, with the core's form plan and the
//! default strings), then the confirmation dialog and the result form driven from the DOM as a user
//! (or a WebDriver test) would, through the DOM contract of docs/api.md.
#![cfg(target_arch = "wasm32")]

use client_tools::ui::strings::Strings;
use client_tools::ClientTools;
use client_tools_core::schema_field::plan;
use client_tools_core::validate::CompiledSchema;
use serde_json::{json, Value};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

// One `inline_js` block per test file: each block is a file the test runner serves, and with more
// than four in flight its server can stall a page's load for minutes (tiny_http's thread pool;
// docs/building.md).
#[wasm_bindgen(inline_js = r#"
export function makeForm() {
  const form = document.createElement("form");
  document.body.append(form);
  return form;
}
export function ui() { const host = document.querySelector("client-tools-ui"); return host && host.shadowRoot; }
const at = (scope, sel) => (scope || ui()).querySelector(sel);
export function attr(scope, sel, name) { const e = at(scope, sel); return e ? e.getAttribute(name) : "<none>"; }
export function text(scope, sel) { const e = at(scope, sel); return e ? e.textContent : "<none>"; }
export function count(scope, sel) { return (scope || ui()).querySelectorAll(sel).length; }
export function texts(scope, sel) { return [...(scope || ui()).querySelectorAll(sel)].map((e) => e.textContent).join("|"); }
export function click(sel) { at(null, sel).click(); }
export function type(scope, sel, value) {
  const e = at(scope, sel);
  if (e.type === "checkbox") e.checked = value === "true"; else e.value = value;
  e.dispatchEvent(new Event("input", { bubbles: true }));
}
export function escape() { at(null, "dialog").dispatchEvent(new Event("cancel", { cancelable: true })); }
export function isOpen() { const d = ui() && at(null, "dialog"); return !!d && d.open; }
export function focused() {
  const e = ui() && ui().activeElement;
  return e ? (e.getAttribute("data-action") || e.getAttribute("data-path") || e.tagName) : "";
}
export function until(check, timeoutMs) {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const poll = () => {
      if (check()) resolve();
      else if (Date.now() - started > timeoutMs) reject(new Error("timed out waiting"));
      else setTimeout(poll, 10);
    };
    poll();
  });
}
export function frameRecorder() {
  const frames = [];
  return { frames, send: (frame) => frames.push(JSON.parse(frame)) };
}
export function pageButton() {
  const b = document.createElement("button");
  b.textContent = "page";
  document.body.append(b);
  b.focus();
  return b;
}
export function isActive(element) { return document.activeElement === element; }
export function echoDeclaration(name, extra) {
  return (Object.assign({
    name, description: "Delete a <b>board</b>", parameters: JSON.parse(extra.schema),
    handler: (input) => ({ got: input }),
  }, extra.decl));
}
export function uiRoot() { return document.querySelector('client-tools-ui').shadowRoot; }
// The renderer on its own: the module the SDK loads on first use (the test runner serves the
// crate's file at the address the SDK's snippet imports it from).
let form;
export async function loadForm() { form = await import("/src/ui/ui.js"); }
const parse = (text) => JSON.parse(text);
export function renderForm(f, plan, value, editable, strings) { form.render(f, parse(plan), parse(value), editable, parse(strings)); }
export function readForm(f, plan, strings) { return JSON.stringify(form.read(f, parse(plan), null, parse(strings))); }
export function changeRows(f, plan, path, remove, strings) { form.changeRows(f, parse(plan), path, remove ?? null, parse(strings)); }
export function showErrors(f, errors) { form.showErrors(f, parse(errors)); }
"#)]
extern "C" {
    #[wasm_bindgen(js_name = makeForm)]
    fn make_form() -> web_sys::Element;
    fn attr(scope: &JsValue, sel: &str, name: &str) -> Option<String>;
    fn text(scope: &JsValue, sel: &str) -> String;
    fn count(scope: &JsValue, sel: &str) -> u32;
    fn texts(scope: &JsValue, sel: &str) -> String;
    fn click(sel: &str);
    #[wasm_bindgen(js_name = type)]
    fn type_in(scope: &JsValue, sel: &str, value: &str);
    fn escape();
    #[wasm_bindgen(js_name = isOpen)]
    fn is_open() -> bool;
    fn focused() -> String;
    fn until(check: &js_sys::Function, timeout_ms: u32) -> js_sys::Promise;
    #[wasm_bindgen(js_name = frameRecorder)]
    fn frame_recorder() -> JsValue;
    #[wasm_bindgen(js_name = pageButton)]
    fn page_button() -> JsValue;
    #[wasm_bindgen(js_name = isActive)]
    fn is_active(element: &JsValue) -> bool;
    #[wasm_bindgen(js_name = echoDeclaration)]
    fn echo_declaration(name: &str, extra: JsValue) -> JsValue;
    #[wasm_bindgen(js_name = uiRoot)]
    fn ui_root() -> JsValue;
    #[wasm_bindgen(js_name = loadForm)]
    fn load_form() -> js_sys::Promise;
    #[wasm_bindgen(js_name = renderForm)]
    fn render_form(form: &web_sys::Element, plan: &str, value: &str, editable: bool, strings: &str);
    #[wasm_bindgen(js_name = readForm)]
    fn read_form(form: &web_sys::Element, plan: &str, strings: &str) -> String;
    #[wasm_bindgen(js_name = changeRows)]
    fn change_rows_js(
        form: &web_sys::Element,
        plan: &str,
        path: &str,
        remove: Option<u32>,
        strings: &str,
    );
    #[wasm_bindgen(js_name = showErrors)]
    fn show_errors_js(form: &web_sys::Element, errors: &str);
}

const DIALOG: JsValue = JsValue::NULL;

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

/// A schema with one field of every kind the renderer knows.
fn every_kind() -> Value {
    json!({
        "type": "object",
        "required": ["name", "count"],
        "properties": {
            "name": {"type": "string", "title": "Name", "description": "Who it is for", "minLength": 2},
            "email": {"type": "string", "format": "email"},
            "site": {"type": "string", "format": "uri"},
            "day": {"type": "string", "format": "date"},
            "at": {"type": "string", "format": "time"},
            "count": {"type": "integer", "minimum": 1, "maximum": 9},
            "price": {"type": "number", "multipleOf": 0.5},
            "urgent": {"type": "boolean", "default": true},
            "status": {"enum": ["todo", "done"]},
            "size": {"oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}]},
            "tags": {"type": "array", "items": {"type": "string"}},
            "lines": {"type": "array", "items": {"type": "object", "properties": {
                "sku": {"type": "string"}, "qty": {"type": "integer"}}}},
            "address": {"type": "object", "title": "Address", "properties": {"city": {"type": "string"}}},
            "extra": {"$ref": "#/$defs/x"}
        },
        "$defs": {"x": {"type": "string"}}
    })
}

/// The default strings, as the dialog gets them.
fn strings() -> String {
    Value::Object(Strings::default().table()).to_string()
}

/// A form of `schema` showing `value` (the renderer's module loaded first).
async fn render(schema: &Value, value: &Value, editable: bool) -> web_sys::Element {
    JsFuture::from(load_form())
        .await
        .expect("src/ui/ui.js loads");
    let form = make_form();
    let plan = plan(schema).to_string();
    render_form(&form, &plan, &value.to_string(), editable, &strings());
    form
}

/// The value the form shows for `schema`, and the fields it could not read.
fn read(form: &web_sys::Element, schema: &Value) -> (Value, Vec<(String, String)>) {
    let text = read_form(form, &plan(schema).to_string(), &strings());
    serde_json::from_str(&text).unwrap()
}

fn change_rows(form: &web_sys::Element, schema: &Value, path: &str, remove: Option<u32>) {
    change_rows_js(form, &plan(schema).to_string(), path, remove, &strings());
}

fn show_errors(form: &web_sys::Element, errors: &[(String, String)]) {
    show_errors_js(form, &serde_json::to_string(errors).unwrap());
}

#[wasm_bindgen_test]
async fn the_renderer_builds_a_field_for_every_kind() {
    let schema = every_kind();
    let value = client_tools_core::schema_field::initial_value(&schema);
    let form = render(&schema, &value, true).await;
    let scope: &JsValue = &form;
    let a = |sel: &str, name: &str| attr(scope, sel, name).unwrap_or_default();
    for (path, input_type) in [
        ("/name", "text"),
        ("/email", "email"),
        ("/site", "url"),
        ("/day", "date"),
        ("/at", "time"),
        ("/count", "number"),
    ] {
        assert_eq!(
            a(&format!("[data-path='{path}']"), "type"),
            input_type,
            "{path}"
        );
    }
    // Labels, required, help text and the error element, all tied to the control.
    let id = a("[data-path='/name']", "id");
    assert_eq!(text(scope, &format!("label[for={id}]")), "Name");
    assert_eq!(a(&format!("label[for={id}]"), "class"), "req");
    assert!(attr(scope, "[data-path='/name']", "required").is_some());
    let described = a("[data-path='/name']", "aria-describedby");
    assert_eq!(described, format!("{id}h {id}e"));
    assert_eq!(text(scope, &format!("[id={id}h]")), "Who it is for");
    assert_eq!(a(&format!("[id={id}e]"), "data-ct"), "error");
    let email = a("[data-path='/email']", "id");
    assert_eq!(
        text(scope, &format!("label[for={email}]")),
        "email",
        "no title: the property name"
    );
    // Numbers carry their bounds and step.
    assert_eq!(a("[data-path='/count']", "min"), "1");
    assert_eq!(a("[data-path='/count']", "max"), "9");
    assert_eq!(a("[data-path='/count']", "step"), "1");
    assert_eq!(a("[data-path='/price']", "step"), "0.5");
    // The default shows; choices are selects with their titles.
    assert_eq!(a("[data-path='/urgent']", "type"), "checkbox");
    assert!(attr(scope, "[data-path='/urgent']", "checked").is_some());
    assert_eq!(texts(scope, "[data-path='/status'] option"), "—|todo|done");
    assert_eq!(texts(scope, "[data-path='/size'] option"), "—|Small|Large");
    // Arrays have Add buttons; objects are fieldsets with legends; $ref degrades to JSON text.
    assert_eq!(count(scope, "[data-action=add][data-path='/tags']"), 1);
    assert_eq!(
        text(scope, "fieldset[data-group='/address'] > legend"),
        "Address"
    );
    assert_eq!(a("[data-path='/address/city']", "type"), "text");
    assert_eq!(count(scope, "textarea[data-path='/extra']"), 1);
    form.remove();
}

#[wasm_bindgen_test]
async fn the_renderer_reads_back_what_it_shows_and_what_is_typed() {
    let schema = every_kind();
    let value = json!({
        "name": "Ada", "email": "ada@example.com", "day": "2026-12-01", "at": "10:30:00Z",
        "count": 3, "price": 2.5, "urgent": false, "status": "done", "size": "l",
        "tags": ["a", "b"], "lines": [{"sku": "x", "qty": 2}], "address": {"city": "Paris"},
        "extra": {"free": [1, 2]}
    });
    let form = render(&schema, &value, true).await;
    let (read, errors) = read(&form, &schema);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(read, value);

    let scope: &JsValue = &form;
    type_in(scope, "[data-path='/count']", "7");
    type_in(scope, "[data-path='/tags/1']", "c");
    type_in(scope, "[data-path='/email']", "");
    type_in(scope, "[data-path='/urgent']", "true");
    type_in(scope, "[data-path='/extra']", "{not json");
    let (read, errors) = self::read(&form, &schema);
    assert_eq!(read["count"], 7);
    assert_eq!(read["tags"], json!(["a", "c"]));
    assert_eq!(
        read.get("email"),
        None,
        "an empty optional field is left out"
    );
    assert_eq!(read["urgent"], true);
    assert_eq!(errors, [("/extra".to_owned(), "Not valid JSON".to_owned())]);
    form.remove();
}

#[wasm_bindgen_test]
async fn fields_follow_the_schemas_property_order() {
    // On wasm serde_json keeps members in the order written (`preserve_order`, Cargo.toml): the
    // form shows a schema's properties in its own order, not sorted by name, and reads them back
    // in that order.
    let schema = json!({"type": "object", "properties": {
        "zone": {"type": "string"}, "amount": {"type": "number"}, "memo": {"type": "string"}}});
    let value = json!({"zone": "eu", "amount": 2.5, "memo": "m"});
    let form = render(&schema, &value, true).await;
    assert_eq!(texts(&form, "label"), "zone|amount|memo");
    let (read, _) = read(&form, &schema);
    assert_eq!(read.to_string(), r#"{"zone":"eu","amount":2.5,"memo":"m"}"#);
    form.remove();
}

#[wasm_bindgen_test]
async fn array_rows_are_added_and_removed_keeping_the_others() {
    let schema = every_kind();
    let form = render(
        &schema,
        &json!({"name": "n", "count": 1, "lines": [{"sku": "a"}, {"sku": "b"}]}),
        true,
    )
    .await;
    let scope: &JsValue = &form;
    type_in(scope, "[data-path='/lines/1/sku']", "B");
    change_rows(&form, &schema, "/lines", None);
    assert_eq!(count(scope, "[data-action=remove]"), 3);
    change_rows(&form, &schema, "/lines", Some(0));
    let (read, _) = read(&form, &schema);
    assert_eq!(read["lines"], json!([{"sku": "B"}, {}]));
    assert_eq!(
        attr(scope, "[data-action=remove]", "data-path").unwrap(),
        "/lines/0"
    );
    form.remove();
}

#[wasm_bindgen_test]
async fn errors_go_to_their_fields() {
    let schema = every_kind();
    let compiled = CompiledSchema::compile(&schema).unwrap();
    let form = render(&schema, &json!({"name": "A", "count": 1}), true).await;
    let scope: &JsValue = &form;
    let (mut value, _) = read(&form, &schema);
    value.as_object_mut().unwrap().remove("count");
    let mut errors = compiled.field_errors(&value);
    errors.push((String::new(), "whole form".into()));
    show_errors(&form, &errors);
    for path in ["/name", "/count"] {
        let sel = format!("[data-path='{path}']");
        assert_eq!(
            attr(scope, &sel, "aria-invalid").as_deref(),
            Some("true"),
            "{path}"
        );
        let id = attr(scope, &sel, "id").unwrap();
        assert!(!text(scope, &format!("[id={id}e]")).is_empty(), "{path}");
    }
    let form_error = attr(scope, ":scope > [data-ct=error]", "id").unwrap();
    assert_eq!(text(scope, &format!("[id={form_error}]")), "whole form");
    assert_eq!(attr(scope, "[data-path='/email']", "aria-invalid"), None);
    show_errors(&form, &[]);
    assert_eq!(count(scope, "[aria-invalid]"), 0);
    form.remove();
}

#[wasm_bindgen_test]
async fn unsupported_schemas_degrade_to_json_text() {
    for schema in [
        json!({"$ref": "#/x", "$defs": {"x": {}}}),
        json!({"type": ["string", "null"]}),
        json!(true),
    ] {
        let form = render(&schema, &json!({"a": 1}), true).await;
        let scope: &JsValue = &form;
        assert_eq!(count(scope, "textarea[data-path='']"), 1, "{schema}");
        assert_eq!(text(scope, "textarea"), r#"{"a":1}"#);
        form.remove();
    }
}

// ---- The dialog, driven from the DOM ----

fn with_options(options: Value) -> ClientTools {
    ClientTools::new(Some(js(&options).unchecked_into())).expect("valid options")
}

const BOARD: &str = r#"{"type": "object", "properties": {"boardId": {"type": "string", "minLength": 2}}, "required": ["boardId"]}"#;

fn define(tools: &ClientTools, name: &str, declaration: Value) {
    let extra = js(&json!({"schema": BOARD, "decl": declaration}));
    tools
        .define_function(echo_declaration(name, extra).unchecked_into())
        .unwrap();
}

fn start(tools: &ClientTools, name: &str, input: Value) -> JsFuture {
    let promise: js_sys::Promise =
        JsValue::from(tools.invoke(name, Some(js(&input)))).unchecked_into();
    JsFuture::from(promise)
}

async fn outcome(call: JsFuture) -> (bool, String, JsValue) {
    let result = call.await.expect("invoke resolves");
    let text = get(&get(&get(&result, "content"), "0"), "text")
        .as_string()
        .unwrap();
    (get(&result, "isError").as_bool().unwrap(), text, result)
}

async fn opened() {
    wait("the dialog", is_open).await;
}

/// Waits until the dialog takes input again after a request replaced another (`aria-busy` gone).
async fn armed() {
    wait("the dialog to take input", || {
        is_open() && attr(&DIALOG, "dialog", "aria-busy").is_none()
    })
    .await;
}

#[wasm_bindgen_test]
async fn approve_from_the_dialog_and_focus_comes_back() {
    let tools = with_options(json!({}));
    define(
        &tools,
        "Delete board",
        json!({"annotations": {"destructiveHint": true, "title": "Delete a board"}}),
    );
    let before = page_button();
    let call = start(&tools, "delete_board", json!({"boardId": "b1"}));
    opened().await;
    assert_eq!(text(&DIALOG, "[data-ct=title]"), "Delete a board");
    assert_eq!(
        text(&DIALOG, "[data-ct=description]"),
        "Delete a <b>board</b>"
    );
    assert_eq!(
        count(&DIALOG, "b, img, script"),
        0,
        "no markup from strings"
    );
    assert_eq!(text(&DIALOG, "[data-ct=original-name]"), "Delete board");
    assert_eq!(
        attr(&DIALOG, "dialog", "aria-labelledby").unwrap(),
        attr(&DIALOG, "[data-ct=title]", "id").unwrap()
    );
    assert_eq!(
        attr(&DIALOG, "dialog", "aria-describedby").unwrap(),
        attr(&DIALOG, "[data-ct=description]", "id").unwrap()
    );
    assert_eq!(
        attr(&DIALOG, "[data-ct=live]", "role").as_deref(),
        Some("status")
    );
    assert_eq!(
        focused(),
        "reject",
        "initial focus on the least destructive button"
    );
    assert!(attr(
        &DIALOG,
        "form[data-ct=form] [data-path='/boardId']",
        "readonly"
    )
    .is_some());
    assert_eq!(count(&DIALOG, "[data-ct=allow-session]"), 0);
    assert_eq!(
        attr(&DIALOG, "[data-ct=queue]", "hidden").as_deref(),
        Some("")
    );
    click("button[data-action=approve]");
    let (is_error, text, result) = outcome(call).await;
    assert!(!is_error, "{text}");
    assert!(get(&result, "_meta").is_undefined(), "approved unchanged");
    assert!(!is_open());
    assert!(is_active(&before), "focus returns where it was");
}

#[wasm_bindgen_test]
async fn reject_with_a_reason_and_esc_rejects() {
    let tools = with_options(json!({}));
    define(
        &tools,
        "wipe",
        json!({"annotations": {"consequentialHint": true}}),
    );
    let call = start(&tools, "wipe", json!({"boardId": "b1"}));
    opened().await;
    type_in(&DIALOG, "textarea[data-ct=reason]", "wrong board");
    click("button[data-action=reject]");
    assert_eq!(outcome(call).await.1, "rejected by the user: wrong board");

    let call = start(&tools, "wipe", json!({"boardId": "b1"}));
    opened().await;
    escape();
    let (is_error, text, _) = outcome(call).await;
    assert!(is_error);
    assert_eq!(text, "rejected by the user");
    assert!(!is_open());
}

#[wasm_bindgen_test]
async fn edit_then_approve_is_a_validated_modification() {
    let tools = with_options(json!({}));
    define(&tools, "move", json!({"requireConfirmation": true}));
    let call = start(&tools, "move", json!({"boardId": "b1"}));
    opened().await;
    click("button[data-action=edit]");
    assert_eq!(count(&DIALOG, "[data-action=edit]"), 0);
    assert_eq!(attr(&DIALOG, "[data-path='/boardId']", "readonly"), None);
    assert_eq!(focused(), "/boardId");
    type_in(&DIALOG, "[data-path='/boardId']", "x");
    click("button[data-action=approve]");
    assert!(is_open(), "an invalid edit keeps the dialog open");
    assert_eq!(
        attr(&DIALOG, "[data-path='/boardId']", "aria-invalid").as_deref(),
        Some("true")
    );
    let id = attr(&DIALOG, "[data-path='/boardId']", "id").unwrap();
    assert!(!text(&DIALOG, &format!("[id={id}e]")).is_empty());
    assert!(!text(&DIALOG, "[data-ct=live]").is_empty());
    type_in(&DIALOG, "[data-path='/boardId']", "b2");
    click("button[data-action=approve]");
    let (is_error, text, result) = outcome(call).await;
    assert!(!is_error, "{text}");
    assert_eq!(
        get(&get(&get(&result, "structuredContent"), "got"), "boardId"),
        "b2"
    );
    let modified = get(&get(&result, "_meta"), "clienttools/modifiedInput");
    assert_eq!(get(&modified, "boardId"), "b2");
}

#[wasm_bindgen_test]
async fn confirmations_queue_one_at_a_time() {
    let tools = with_options(json!({}));
    define(&tools, "wipe", json!({"requireConfirmation": true}));
    let first = start(&tools, "wipe", json!({"boardId": "b1"}));
    let second = start(&tools, "wipe", json!({"boardId": "b2"}));
    let third = start(&tools, "wipe", json!({"boardId": "b3"}));
    opened().await;
    wait("the queue", || {
        text(&DIALOG, "[data-ct=queue]") == "2 more waiting"
    })
    .await;
    click("button[data-action=approve]");
    // The click meant for the first request, repeated (a double click) on the next one: ignored
    // while the dialog is busy showing it.
    click("button[data-action=approve]");
    assert!(!outcome(first).await.0);
    assert!(is_open());
    assert_eq!(text(&DIALOG, "[data-ct=queue]"), "1 more waiting");
    assert_eq!(js_value(&DIALOG, "[data-path='/boardId']"), "b2");
    armed().await;
    click("button[data-action=reject]");
    assert!(outcome(second).await.0);
    assert_eq!(
        attr(&DIALOG, "[data-ct=queue]", "hidden").as_deref(),
        Some("")
    );
    armed().await;
    click("button[data-action=approve]");
    assert!(!outcome(third).await.0);
    assert!(!is_open());
}

fn js_value(scope: &JsValue, sel: &str) -> String {
    let root = if scope.is_null() {
        ui_root()
    } else {
        scope.clone()
    };
    let element = js_sys::Reflect::get(&root, &"querySelector".into()).unwrap();
    let element: js_sys::Function = element.unchecked_into();
    let found = element.call1(&root, &sel.into()).unwrap();
    get(&found, "value").as_string().unwrap_or_default()
}

#[wasm_bindgen_test]
async fn strings_are_overridable_and_checked() {
    let tools = with_options(json!({"strings": {"approve": "Genehmigen", "queue": "{n} weitere"}}));
    define(&tools, "wipe", json!({"requireConfirmation": true}));
    let call = start(&tools, "wipe", json!({"boardId": "b1"}));
    opened().await;
    assert_eq!(text(&DIALOG, "[data-action=approve]"), "Genehmigen");
    assert_eq!(text(&DIALOG, "[data-action=reject]"), "Reject");
    click("button[data-action=approve]");
    assert!(!outcome(call).await.0);

    for bad in [
        json!({"strings": {"aprove": "x"}}),
        json!({"strings": {"approve": 1}}),
        json!({"strings": "x"}),
    ] {
        let error = ClientTools::new(Some(js(&bad).unchecked_into()))
            .err()
            .expect("refused");
        let message = get(&error, "message").as_string().unwrap();
        assert!(message.contains("strings"), "{message}");
        assert_eq!(get(&error, "code"), "INVALID_OPTIONS");
    }
    let error = ClientTools::new(Some(
        js(&json!({"strings": {"nope": "x"}})).unchecked_into(),
    ))
    .err()
    .unwrap();
    assert!(get(&error, "message")
        .as_string()
        .unwrap()
        .contains("approve, reject"));
}

#[wasm_bindgen_test]
async fn allow_for_the_session_skips_the_tools_own_policy_only() {
    let tools = with_options(json!({"allowForSession": true}));
    define(
        &tools,
        "wipe",
        json!({"annotations": {"destructiveHint": true}}),
    );
    define(
        &tools,
        "quiet",
        json!({"annotations": {"destructiveHint": true}, "requireConfirmation": false}),
    );
    assert!(
        !outcome(start(&tools, "quiet", json!({"boardId": "b1"})))
            .await
            .0,
        "opted out: no dialog"
    );

    let call = start(&tools, "wipe", json!({"boardId": "b1"}));
    opened().await;
    assert_eq!(
        text(&DIALOG, "label.check"),
        "Allow wipe for the rest of this session"
    );
    type_in(
        &DIALOG,
        "input[type=checkbox][data-ct=allow-session]",
        "true",
    );
    click("button[data-action=approve]");
    assert!(!outcome(call).await.0);
    let (is_error, text, _) = outcome(start(&tools, "wipe", json!({"boardId": "b2"}))).await;
    assert!(!is_error && !is_open(), "{text}");
}

/// A `tools/call` frame from the runtime, delivered through a page transport.
fn deliver(tools: &ClientTools, id: u32, name: &str, meta: Value) {
    let frame = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": name, "arguments": {"question": "When?"}, "_meta": meta}});
    tools.receive_frame(&frame.to_string()).unwrap();
}

fn answer(recorder: &JsValue, id: u32) -> Option<JsValue> {
    js_sys::Array::from(&get(recorder, "frames"))
        .iter()
        .find(|f| get(f, "id") == id)
}

#[wasm_bindgen_test]
async fn the_result_form_submits_a_valid_result_or_cancels() {
    let tools = with_options(json!({}));
    let recorder = frame_recorder();
    tools
        .attach_transport(get(&recorder, "send").unchecked_into())
        .unwrap();
    let meta = json!({"clienttools/fallback": "form", "clienttools/outputSchema": {
        "type": "object", "title": "Pick a day", "required": ["day"],
        "properties": {"day": {"type": "string", "format": "date"}, "note": {"type": "string", "default": "ok"}}}});
    deliver(&tools, 1, "pick_day", meta.clone());
    wait("the result form", is_open).await;
    assert_eq!(text(&DIALOG, "[data-ct=title]"), "Pick a day");
    assert_eq!(text(&DIALOG, "[data-ct=input]"), r#"{"question":"When?"}"#);
    assert_eq!(focused(), "/day", "the first field has focus");
    assert_eq!(js_value(&DIALOG, "[data-path='/note']"), "ok");
    click("button[data-action=submit]");
    assert!(is_open(), "a missing required field keeps the form open");
    assert_eq!(
        attr(&DIALOG, "[data-path='/day']", "aria-invalid").as_deref(),
        Some("true")
    );
    type_in(&DIALOG, "[data-path='/day']", "2026-12-24");
    click("button[data-action=submit]");
    let rec = recorder.clone();
    wait("the answer", move || answer(&rec, 1).is_some()).await;
    let result = get(&answer(&recorder, 1).unwrap(), "result");
    assert_eq!(get(&result, "isError"), false);
    assert_eq!(get(&get(&result, "structuredContent"), "day"), "2026-12-24");

    deliver(&tools, 2, "pick_day", meta);
    wait("the result form", is_open).await;
    escape();
    let rec = recorder.clone();
    wait("the answer", move || answer(&rec, 2).is_some()).await;
    let result = get(&answer(&recorder, 2).unwrap(), "result");
    assert_eq!(get(&result, "isError"), true);
    assert_eq!(
        get(&get(&get(&result, "content"), "0"), "text"),
        "the user cancelled"
    );
    tools.disconnect();
}

#[wasm_bindgen_test]
async fn a_runtime_cancel_closes_the_dialog_and_agent_confirmed_calls_skip_it() {
    let tools = with_options(json!({}));
    define(&tools, "wipe", json!({"requireConfirmation": true}));
    let recorder = frame_recorder();
    tools
        .attach_transport(get(&recorder, "send").unchecked_into())
        .unwrap();
    let frame = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "wipe", "arguments": {"boardId": "b1"}}});
    tools.receive_frame(&frame.to_string()).unwrap();
    opened().await;
    let cancel =
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}});
    tools.receive_frame(&cancel.to_string()).unwrap();
    wait("the dialog to close", || !is_open()).await;
    assert!(
        answer(&recorder, 7).is_none(),
        "no result for a cancelled call"
    );

    let frame = json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call",
        "params": {"name": "wipe", "arguments": {"boardId": "b1"}, "_meta": {"clienttools/confirmedBy": "agent"}}});
    tools.receive_frame(&frame.to_string()).unwrap();
    let rec = recorder.clone();
    wait("the answer", move || answer(&rec, 8).is_some()).await;
    assert_eq!(
        get(&get(&answer(&recorder, 8).unwrap(), "result"), "isError"),
        false
    );
    assert!(!is_open());
    tools.disconnect();
}
