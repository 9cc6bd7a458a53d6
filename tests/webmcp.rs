//! WebMCP in the browser (SPEC §8), headless Chromium and Firefox: `<form toolname>` tools — the
//! schema their controls stand for, forms that come and go, the calls that fill and submit them —
//! and the registration of the page's tools with a `document.modelContext`.
#![cfg(target_arch = "wasm32")]

use client_tools::ClientTools;
use serde_json::{json, Value};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

#[wasm_bindgen(inline_js = r#"
export function addHtml(html) {
  const holder = document.createElement("div");
  holder.innerHTML = html;
  document.body.append(holder);
  return holder;
}
export function formIn(holder) { return holder.querySelector("form"); }
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
// What the page's own listeners see of the form an agent fills.
export function watchForm(form, responder) {
  const respond = { found: respondFound, sent: respondSent }[responder];
  const seen = { events: [], agentInvoked: [], activeDuringSubmit: null };
  for (const type of ["input", "change"]) form.addEventListener(type, (e) => seen.events.push(`${type}:${e.target.name}`));
  form.addEventListener("submit", (event) => {
    seen.agentInvoked.push(event.agentInvoked === true);
    seen.activeDuringSubmit = form.hasAttribute("data-tool-form-active");
    event.preventDefault();
    if (respond) event.respondWith(respond(new FormData(form)));
  });
  return seen;
}
export function respondFound(data) {
  return Promise.resolve({ found: 2, make: data.get("make"), fuel: data.get("fuel") });
}
export function respondSent(data) { return "sent: " + data.get("message"); }
export function resetForm(form) { form.reset(); }
export function nativeWebMcp() { return "respondWith" in SubmitEvent.prototype; }
export function cartHandler() { return (input) => ({ items: input.max }); }
// What the page does in its submit listener after an agent's submit (see the test of that name).
export function afterSubmit(form, behaviour) {
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (behaviour.startsWith("respond")) event.respondWith(Promise.resolve({ ok: true }));
    if (behaviour === "clear") form.querySelector("input").value = "";
    if (behaviour.endsWith("reset")) form.reset();
    if (behaviour.endsWith("remove")) form.remove();
  });
}
export function setAsyncRefusals(context) {
  const register = context.registerTool;
  context.registerTool = (tool, options) => {
    try { register(tool, options); return Promise.resolve(); } catch (error) { return Promise.reject(error); }
  };
}
export function abortable() {
  const controller = new AbortController();
  return { options: { signal: controller.signal }, abort: () => controller.abort() };
}
export function neverEnding() { return () => new Promise(() => {}); }
export function submitButton(form) { return form.querySelector("[type=submit],button:not([type])"); }
export function hasAttr(element, name) { return !!element && element.hasAttribute(name); }
export function recorder() {
  const seen = [];
  return { seen, listener: (e) => seen.push(e.reason || e.code || e.toolName) };
}
// A model context as the WebMCP draft describes it: registerTool(tool, {signal}), a duplicate name
// rejected with InvalidStateError, and the registration gone when its signal aborts.
export function fakeModelContext() {
  const context = new EventTarget();
  context.tools = new Map();
  context.registerTool = (tool, options) => {
    if (context.tools.has(tool.name)) throw new DOMException(`Duplicate tool name '${tool.name}'`, "InvalidStateError");
    context.tools.set(tool.name, tool);
    options.signal.addEventListener("abort", () => context.tools.delete(tool.name));
  };
  Object.defineProperty(document, "modelContext", { value: context, configurable: true });
  return context;
}
export function removeModelContext() { delete document.modelContext; }
export function toolOf(context, name) { return context.tools.get(name); }
export function names(context) { return Array.from(context.tools.keys()).sort().join(","); }
"#)]
extern "C" {
    #[wasm_bindgen(js_name = addHtml)]
    fn add_html(html: &str) -> web_sys::Element;
    #[wasm_bindgen(js_name = formIn)]
    fn form_in(holder: &web_sys::Element) -> web_sys::HtmlElement;
    fn until(check: &js_sys::Function, timeout_ms: u32) -> js_sys::Promise;
    #[wasm_bindgen(js_name = watchForm)]
    fn watch_form(form: &web_sys::HtmlElement, responder: Option<&str>) -> JsValue;
    #[wasm_bindgen(js_name = cartHandler)]
    fn cart_handler() -> js_sys::Function;
    #[wasm_bindgen(js_name = resetForm)]
    fn reset_form(form: &web_sys::HtmlElement);
    #[wasm_bindgen(js_name = nativeWebMcp)]
    fn native_webmcp() -> bool;
    #[wasm_bindgen(js_name = afterSubmit)]
    fn after_submit(form: &web_sys::HtmlElement, behaviour: &str);
    #[wasm_bindgen(js_name = setAsyncRefusals)]
    fn set_async_refusals(context: &JsValue);
    fn abortable() -> JsValue;
    #[wasm_bindgen(js_name = neverEnding)]
    fn never_ending() -> js_sys::Function;
    #[wasm_bindgen(js_name = submitButton)]
    fn submit_button(form: &web_sys::HtmlElement) -> web_sys::HtmlElement;
    #[wasm_bindgen(js_name = hasAttr)]
    fn has_attr(element: &JsValue, name: &str) -> bool;
    fn recorder() -> JsValue;
    #[wasm_bindgen(js_name = fakeModelContext)]
    fn fake_model_context() -> JsValue;
    #[wasm_bindgen(js_name = removeModelContext)]
    fn remove_model_context();
    #[wasm_bindgen(js_name = toolOf)]
    fn tool_of(context: &JsValue, name: &str) -> JsValue;
    fn names(context: &JsValue) -> String;
}

/// Records the events of `event_type` (their reason, code or tool name).
fn events(tools: &ClientTools, event_type: &str) -> js_sys::Array {
    let recorder = recorder();
    let listener = get(&recorder, "listener");
    tools
        .on(
            JsValue::from(event_type).unchecked_into(),
            listener.unchecked_into(),
        )
        .unwrap();
    get(&recorder, "seen").unchecked_into()
}

fn json_of(value: &JsValue) -> Value {
    let text = js_sys::JSON::stringify(value).unwrap().as_string().unwrap();
    serde_json::from_str(&text).unwrap()
}

fn js_of(value: &Value) -> JsValue {
    js_sys::JSON::parse(&value.to_string()).unwrap()
}

fn get(value: &JsValue, key: &str) -> JsValue {
    js_sys::Reflect::get(value, &key.into()).unwrap()
}

/// Waits (10 ms polls, 5 s at most) until `check` holds.
async fn wait(what: &str, check: impl Fn() -> bool + 'static) {
    let check = Closure::<dyn Fn() -> bool>::new(check);
    let waited = JsFuture::from(until(check.as_ref().unchecked_ref(), 5_000)).await;
    assert!(waited.is_ok(), "timed out waiting for {what}");
}

fn listed(tools: &ClientTools, name: &str) -> Option<Value> {
    json_of(&tools.list().into())
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["originalName"] == name)
        .cloned()
}

fn new_tools(options: Value) -> ClientTools {
    ClientTools::new(Some(js_of(&options).unchecked_into())).unwrap()
}

async fn invoke(tools: &ClientTools, name: &str, input: Value) -> Value {
    json_of(
        &JsFuture::from(js_sys::Promise::from(JsValue::from(
            tools.invoke(name, Some(js_of(&input))),
        )))
        .await
        .unwrap(),
    )
}

#[wasm_bindgen_test]
async fn every_control_becomes_its_schema() {
    let holder = add_html(include_str!("fixtures/webmcp/every-control.html"));
    let tools = new_tools(json!({}));
    let tool = listed(&tools, "Every control").expect("the form is a tool");
    let expected: Value =
        serde_json::from_str(include_str!("fixtures/webmcp/every-control.schema.json")).unwrap();
    assert_eq!(tool["inputSchema"], expected);
    assert_eq!(tool["kind"], "form");
    assert_eq!(tool["name"], "every_control");
    assert_eq!(tool["description"], "One form with each kind of control");
    holder.remove();
}

#[wasm_bindgen_test]
async fn forms_added_renamed_changed_and_removed_follow_the_dom() {
    let tools = new_tools(json!({}));
    let changes = events(&tools, "toolschanged");
    let holder = add_html(r#"<form toolname="Late form"><input name="a"></form>"#);
    let probe = tools.clone();
    wait("the added form", move || {
        listed(&probe, "Late form").is_some()
    })
    .await;
    assert!(changes.length() >= 1, "toolschanged fired");

    let form = form_in(&holder);
    let input = web_sys::window()
        .unwrap()
        .document()
        .unwrap()
        .create_element("input")
        .unwrap();
    input.set_attribute("name", "b").unwrap();
    input.set_attribute("required", "").unwrap();
    form.append_child(&input).unwrap();
    let probe = tools.clone();
    wait("the new control in the schema", move || {
        listed(&probe, "Late form").is_some_and(|t| t["inputSchema"]["required"] == json!(["b"]))
    })
    .await;

    form.set_attribute("toolname", "Renamed form").unwrap();
    let probe = tools.clone();
    wait("the rename", move || {
        listed(&probe, "Late form").is_none() && listed(&probe, "Renamed form").is_some()
    })
    .await;

    holder.remove();
    let probe = tools.clone();
    wait("the removal", move || {
        listed(&probe, "Renamed form").is_none()
    })
    .await;
    let disabled = new_tools(json!({ "forms": false }));
    let again = add_html(r#"<form toolname="Not for everyone"><input name="a"></form>"#);
    assert!(
        listed(&disabled, "Not for everyone").is_none(),
        "forms: false finds no forms"
    );
    again.remove();
}

#[wasm_bindgen_test]
async fn a_form_that_cannot_be_a_tool_is_a_warning_and_the_others_stay() {
    let watcher = new_tools(json!({}));
    let watcher_warnings = events(&watcher, "warning");
    let holder = add_html(
        r#"<form toolname="Broken pattern"><input name="code" pattern="("></form>
           <form toolname="Twice"><input name="a"></form>
           <form toolname="Twice"><input name="b"></form>
           <form toolname="   "><input name="c"></form>"#,
    );
    let probe = watcher.clone();
    wait("the good form", move || listed(&probe, "Twice").is_some()).await;
    let twice = listed(&watcher, "Twice").unwrap();
    assert_eq!(
        twice["inputSchema"]["properties"],
        json!({ "a": { "type": "string" } }),
        "the first form of a name wins"
    );
    // As the browser does, a pattern that does not compile is ignored (the form is still a tool).
    let broken = listed(&watcher, "Broken pattern").expect("a tool without the pattern");
    assert_eq!(
        broken["inputSchema"]["properties"]["code"],
        json!({ "type": "string" })
    );
    let recorded = watcher_warnings.clone();
    let taken = move || {
        let seen: Vec<String> = recorded.iter().filter_map(|w| w.as_string()).collect();
        seen.iter().filter(|w| *w == "form_tool_name_taken").count()
    };
    assert_eq!(taken(), 1);
    // Changes to the refused form and to another one rescan: the warning is not repeated.
    let forms = holder.query_selector_all("form").unwrap();
    let input = web_sys::window()
        .unwrap()
        .document()
        .unwrap()
        .create_element("input")
        .unwrap();
    input.set_attribute("name", "z").unwrap();
    forms.get(2).unwrap().append_child(&input).unwrap();
    let first: web_sys::Element = forms.get(0).unwrap().unchecked_into();
    first
        .set_attribute("tooldescription", "now described")
        .unwrap();
    let probe = watcher.clone();
    wait("the rescan", move || {
        listed(&probe, "Broken pattern").is_some_and(|t| t["description"] == "now described")
    })
    .await;
    assert_eq!(taken(), 1, "warned once");
    holder.remove();
}

#[wasm_bindgen_test]
async fn an_autosubmit_call_fills_submits_and_gets_what_the_page_responds() {
    let holder = add_html(
        r#"<form toolname="Find cars" toolautosubmit>
             <input name="make" required><input name="seats" type="number">
             <label><input type="checkbox" name="electric"> Electric</label>
             <select name="fuel"><option>petrol</option><option>diesel</option></select>
             <button>Search</button></form>"#,
    );
    let form = form_in(&holder);
    let seen = watch_form(&form, Some("found"));
    let tools = new_tools(json!({}));
    let result = invoke(
        &tools,
        "find_cars",
        json!({ "make": "Audi", "seats": 5, "electric": true, "fuel": "diesel" }),
    )
    .await;
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(
        result["structuredContent"],
        json!({ "found": 2, "make": "Audi", "fuel": "diesel" })
    );
    let seen_now = json_of(&seen);
    assert_eq!(seen_now["agentInvoked"], json!([true]));
    assert_eq!(seen_now["activeDuringSubmit"], true);
    for event in [
        "input:make",
        "change:make",
        "input:seats",
        "change:electric",
        "change:fuel",
    ] {
        let fired = seen_now["events"]
            .as_array()
            .unwrap()
            .contains(&json!(event));
        assert!(fired, "{event} in {seen_now}");
    }
    assert!(
        !has_attr(&form, "data-tool-form-active"),
        "the mark goes when the call ends"
    );

    // Input the schema refuses never reaches the form.
    let refused = invoke(&tools, "find_cars", json!({ "seats": "many" })).await;
    assert_eq!(refused["isError"], true);
    assert_eq!(
        json_of(&seen)["agentInvoked"],
        json!([true]),
        "no second submit"
    );
    holder.remove();
}

#[wasm_bindgen_test]
async fn without_respond_with_the_result_is_what_the_form_submitted() {
    let holder = add_html(
        r#"<form toolname="Book" toolautosubmit>
             <input name="who"><input name="nights" type="number" value="1">
             <fieldset><legend>Room</legend>
               <label><input type="radio" name="room" value="single"> Single</label>
               <label><input type="radio" name="room" value="double"> Double</label></fieldset>
             <select name="extras" multiple><option>breakfast</option><option>parking</option></select>
           </form>"#,
    );
    let form = form_in(&holder);
    let seen = watch_form(&form, None);
    let tools = new_tools(json!({}));
    let input = json!({ "who": "Ada", "nights": 3, "room": "double", "extras": ["parking"] });
    let result = invoke(&tools, "book", input.clone()).await;
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(result["structuredContent"], input);
    assert_eq!(json_of(&seen)["agentInvoked"], json!([true]));
    holder.remove();
}

#[wasm_bindgen_test]
async fn without_autosubmit_the_user_submits_and_the_button_is_marked() {
    let holder = add_html(
        r#"<form toolname="Contact"><input name="message" required><button>Send</button></form>"#,
    );
    let form = form_in(&holder);
    let seen = watch_form(&form, Some("sent"));
    let tools = new_tools(json!({}));
    let call = JsFuture::from(js_sys::Promise::from(JsValue::from(
        tools.invoke("contact", Some(js_of(&json!({ "message": "hello" })))),
    )));
    let button = submit_button(&form);
    let probe = button.clone();
    wait("the submit button's mark", move || {
        has_attr(&probe, "data-tool-submit-active")
    })
    .await;
    assert!(has_attr(&form, "data-tool-form-active"));
    assert_eq!(
        json_of(&seen)["agentInvoked"],
        json!([]),
        "nothing submitted yet"
    );
    button.click();
    let result = json_of(&call.await.unwrap());
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(result["content"][0]["text"], "sent: hello");
    assert_eq!(json_of(&seen)["agentInvoked"], json!([true]));
    assert!(!has_attr(&button, "data-tool-submit-active"));
    assert!(!has_attr(&form, "data-tool-form-active"));
    holder.remove();
}

#[wasm_bindgen_test]
async fn a_reset_or_a_removal_cancels_the_call_with_an_error_result() {
    let html = r#"<form toolname="Survey"><input name="answer"><button>Send</button></form>"#;
    let tools = new_tools(json!({}));
    let cancels = events(&tools, "toolcancel");
    for (ending, expected) in [
        ("reset", "the form was reset"),
        ("remove", "the form was removed"),
    ] {
        let holder = add_html(html);
        let form = form_in(&holder);
        let probe = tools.clone();
        wait("the form tool", move || listed(&probe, "Survey").is_some()).await;
        let call = JsFuture::from(js_sys::Promise::from(JsValue::from(
            tools.invoke("survey", Some(js_of(&json!({ "answer": "yes" })))),
        )));
        let probe = form.clone();
        wait("the call to fill the form", move || {
            has_attr(&probe, "data-tool-form-active")
        })
        .await;
        match ending {
            "reset" => reset_form(&form),
            "rename" => form.set_attribute("toolname", "Survey renamed").unwrap(),
            _ => holder.remove(),
        }
        let result = json_of(&call.await.unwrap());
        assert_eq!(result["isError"], true, "{result}");
        assert_eq!(
            result["content"][0]["text"],
            format!("cancelled by the page: {expected}")
        );
        assert!(
            cancels.includes(&expected.into(), 0),
            "toolcancel says why: {expected}"
        );
        holder.remove();
        let probe = tools.clone();
        wait("the tool to go", move || listed(&probe, "Survey").is_none()).await;
    }
}

#[wasm_bindgen_test]
async fn defined_tools_are_registered_with_the_model_context_and_run_the_same_pipeline() {
    let context = fake_model_context();
    let tools = new_tools(json!({ "forms": false }));
    let warnings = events(&tools, "warning");
    let declaration = js_of(&json!({
        "name": "Get Cart",
        "description": "The cart's items",
        "parameters": { "type": "object", "properties": { "max": { "type": "integer" } } },
        "annotations": { "readOnlyHint": true },
    }));
    js_sys::Reflect::set(&declaration, &"handler".into(), &cart_handler()).unwrap();
    tools.define_function(declaration.unchecked_into()).unwrap();
    let registered = tool_of(&context, "get_cart");
    assert!(registered.is_object(), "registered as {}", names(&context));
    assert_eq!(get(&registered, "title"), "Get Cart");
    assert_eq!(get(&registered, "description"), "The cart's items");
    assert_eq!(
        json_of(&get(&registered, "annotations")),
        json!({ "readOnlyHint": true })
    );
    assert_eq!(
        json_of(&get(&registered, "inputSchema"))["properties"]["max"]["type"],
        "integer"
    );

    let execute: js_sys::Function = get(&registered, "execute").unchecked_into();
    let run = |input: Value| {
        let promise: js_sys::Promise = execute
            .call2(&JsValue::NULL, &js_of(&input), &js_sys::Object::new())
            .unwrap()
            .unchecked_into();
        JsFuture::from(promise)
    };
    let ok = json_of(&run(json!({ "max": 2 })).await.unwrap());
    assert_eq!(ok["structuredContent"], json!({ "items": 2 }));
    let refused = json_of(&run(json!({ "max": "two" })).await.unwrap());
    assert_eq!(
        refused["isError"], true,
        "validated like any call: {refused}"
    );

    // The same name again is refused by the context: a warning, not a crash.
    let other = new_tools(json!({ "forms": false }));
    let other_warnings = events(&other, "warning");
    let again = js_of(&json!({ "name": "Get Cart", "description": "again" }));
    js_sys::Reflect::set(&again, &"handler".into(), &cart_handler()).unwrap();
    other.define_function(again.unchecked_into()).unwrap();
    assert!(
        other_warnings.includes(&"browser_register_failed".into(), 0),
        "warnings: {:?}",
        other_warnings.to_vec()
    );

    assert!(tools.unregister("get_cart"));
    assert!(
        tool_of(&context, "get_cart").is_undefined(),
        "aborting the signal unregisters"
    );
    assert_eq!(warnings.length(), 0, "{:?}", warnings.to_vec());
    remove_model_context();
}

#[wasm_bindgen_test]
async fn form_tools_are_offered_to_a_model_context_that_is_not_native() {
    let context = fake_model_context();
    let holder = add_html(r#"<form toolname="Subscribe"><input name="email" type="email"></form>"#);
    let _tools = new_tools(json!({}));
    let registered = tool_of(&context, "subscribe");
    // A browser with WebMCP of its own registers the page's forms itself.
    assert_eq!(
        registered.is_object(),
        !native_webmcp(),
        "registered: {}",
        names(&context)
    );
    holder.remove();
    let probe = context.clone();
    wait("the removed form's registration to go", move || {
        tool_of(&probe, "subscribe").is_undefined()
    })
    .await;
    remove_model_context();
}

#[wasm_bindgen_test]
async fn a_page_that_clears_resets_or_removes_its_form_after_the_submit_keeps_its_answer() {
    let tools = new_tools(json!({}));
    // The page answers, then resets (respondWith) — or clears the fields (plain submit), or
    // removes the form: the agent still gets the answer, or the values as they were submitted.
    for (behaviour, expected) in [
        ("respond-then-reset", json!({ "ok": true })),
        ("clear", json!({ "q": "tea" })),
        ("respond-then-remove", json!({ "ok": true })),
    ] {
        let holder = add_html(r#"<form toolname="Ask" toolautosubmit><input name="q"></form>"#);
        let form = form_in(&holder);
        after_submit(&form, behaviour);
        let probe = tools.clone();
        wait("the form tool", move || listed(&probe, "Ask").is_some()).await;
        let result = invoke(&tools, "ask", json!({ "q": "tea" })).await;
        assert_eq!(result["isError"], false, "{behaviour}: {result}");
        assert_eq!(result["structuredContent"], expected, "{behaviour}");
        holder.remove();
        let probe = tools.clone();
        wait("the tool to go", move || listed(&probe, "Ask").is_none()).await;
    }
}

#[wasm_bindgen_test]
async fn controls_named_like_form_members_and_values_a_control_drops() {
    let holder = add_html(
        r#"<form toolname="Odd names" toolautosubmit>
             <fieldset><legend>Group</legend><input name="contains"></fieldset>
             <input name="elements"><input name="requestSubmit"><input name="day" type="date">
           </form>"#,
    );
    let form = form_in(&holder);
    let _seen = watch_form(&form, None);
    let tools = new_tools(json!({}));
    let tool = listed(&tools, "Odd names").expect("a tool despite the names");
    let names: Vec<&String> = tool["inputSchema"]["properties"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(names, ["contains", "elements", "requestSubmit", "day"]);
    let input =
        json!({ "contains": "a", "elements": "b", "requestSubmit": "c", "day": "2026-12-24" });
    let result = invoke(&tools, "odd_names", input.clone()).await;
    assert_eq!(result["structuredContent"], input, "{result}");
    // A date that does not exist passes the pattern but the input drops it: an error, not a
    // silently empty field.
    let dropped = invoke(&tools, "odd_names", json!({ "day": "2026-02-31" })).await;
    assert_eq!(dropped["isError"], true, "{dropped}");
    let text = dropped["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("did not take") && text.contains("day"),
        "{text}"
    );
    holder.remove();
}

#[wasm_bindgen_test]
async fn the_browser_agents_abort_and_an_asynchronous_refusal() {
    let context = fake_model_context();
    set_async_refusals(&context);
    let tools = new_tools(json!({ "forms": false }));
    let declaration = js_of(&json!({ "name": "Wait", "description": "never ends" }));
    js_sys::Reflect::set(&declaration, &"handler".into(), &never_ending()).unwrap();
    tools.define_function(declaration.unchecked_into()).unwrap();
    let execute: js_sys::Function = get(&tool_of(&context, "wait"), "execute").unchecked_into();
    let abortable = abortable();
    let options = get(&abortable, "options");
    let running: js_sys::Promise = execute
        .call2(&JsValue::NULL, &js_of(&json!({})), &options)
        .unwrap()
        .unchecked_into();
    let abort: js_sys::Function = get(&abortable, "abort").unchecked_into();
    abort.call0(&JsValue::NULL).unwrap();
    let rejected = JsFuture::from(running).await.unwrap_err();
    assert_eq!(get(&rejected, "name"), "AbortError");
    // A signal aborted before the call: it never starts.
    let started: js_sys::Promise = execute
        .call2(&JsValue::NULL, &js_of(&json!({})), &options)
        .unwrap()
        .unchecked_into();
    assert_eq!(
        get(&JsFuture::from(started).await.unwrap_err(), "name"),
        "AbortError"
    );

    // Chromium refuses a duplicate asynchronously (a rejected promise): still a warning.
    let other = new_tools(json!({ "forms": false }));
    let warnings = events(&other, "warning");
    let again = js_of(&json!({ "name": "Wait", "description": "again" }));
    js_sys::Reflect::set(&again, &"handler".into(), &never_ending()).unwrap();
    other.define_function(again.unchecked_into()).unwrap();
    let probe = warnings.clone();
    wait("the asynchronous refusal", move || {
        probe.includes(&"browser_register_failed".into(), 0)
    })
    .await;
    remove_model_context();
}
