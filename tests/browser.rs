//! Browser tests (wasm-bindgen-test, headless Chromium and Firefox): the JavaScript API as a page
//! uses it — names, declaration checks, validation and `invoke`, with real handlers and events.
#![cfg(target_arch = "wasm32")]

use client_tools::{ClientTools, SchemaValidator};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

#[wasm_bindgen(inline_js = r#"
export function declaration(name, extra) {
  return Object.assign({
    name,
    description: "Read the tasks of a board",
    parameters: {
      type: "object",
      properties: { boardId: { type: "string" }, status: { enum: ["todo", "in-progress", "done"] } },
      required: ["boardId"],
    },
    handler: async ({ boardId, status }) => ({ tasks: [{ id: "t1", boardId, status: status || "todo" }] }),
  }, extra || {});
}
export function throwing(value) { return () => { throw value; }; }
export function rejecting(message) { return async () => { throw new Error(message); }; }
export function never() { return (_input, ctx) => new Promise((resolve) => { window.__lastSignal = ctx.signal; }); }
export function lastSignalAborted() { return window.__lastSignal.aborted; }
export function neverReadingSignal() { return (_input, ctx) => new Promise(() => { window.__unreadCtx = ctx; }); }
export function replacingSignal() {
  return (_input, ctx) => { const mine = new AbortController().signal; ctx.signal = mine; return { same: ctx.signal === mine }; };
}
export function lateSignalState() {
  const signal = window.__unreadCtx.signal;
  return signal instanceof AbortSignal && signal.aborted ? String(signal.reason && signal.reason.message) : "not aborted";
}
export function returning(value) { return () => value; }
// `ctx.partial` with a good value, then a cycle, a BigInt and 10 MB (each dropped), then never ends.
export function partialThenNever() {
  return (_input, ctx) => {
    ctx.partial({ rows: 1, last: "o-1" });
    const a = {}; a.self = a;
    ctx.partial(a);
    ctx.partial({ n: BigInt(10) });
    ctx.partial("x".repeat(10 * 1024 * 1024));
    return new Promise(() => {});
  };
}
export function cancelPartials() {
  const seen = [];
  return { seen, listener: (e) => seen.push(JSON.stringify(e.partial)) };
}
export function cyclic() { return () => { const a = {}; a.self = a; return a; }; }
export function recorder() {
  const seen = [];
  const listener = (e) => seen.push(e.type + ":" + (e.code || e.toolName || ""));
  return { seen, listener };
}
export function confirmWith(decision) {
  const seen = [];
  const confirm = async (request) => { seen.push(request); return typeof decision === "function" ? decision(request) : decision; };
  return { seen, options: { confirm } };
}
export function frameRecorder() {
  const frames = [];
  let waiting = null;
  const send = (frame) => { frames.push(JSON.parse(frame)); if (waiting) { waiting(); waiting = null; } };
  const next = () => frames.length ? Promise.resolve(frames.shift()) : new Promise((r) => { waiting = () => r(frames.shift()); });
  return { send, next };
}
export function domEvents(target) {
  const seen = [];
  const on = target === "modelContext" ? (document.modelContext = new EventTarget()) : window;
  const listener = (e) => seen.push(`${e.type}:${e.detail.toolName}`);
  on.addEventListener("toolactivated", listener);
  return { seen, stop() { on.removeEventListener("toolactivated", listener); delete document.modelContext; } };
}
export function contextRecorder() {
  const seen = [];
  const handler = (_input, ctx) => {
    seen.push({ callId: ctx.callId, toolName: ctx.toolName, originalName: ctx.originalName,
      signal: ctx.signal instanceof AbortSignal });
    return "ok";
  };
  return { seen, handler };
}
// What a handler's ctx says of its call's trace context (`_meta.traceparent`, `tracestate`).
export function traceSeen() {
  return (_input, ctx) => {
    if (ctx.traceparent === "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-02") throw new Error("failed");
    return { traceparent: String(ctx.traceparent), tracestate: String(ctx.tracestate) };
  };
}
export function shapeRecorder() {
  const seen = {};
  const keep = (name) => (value) => { if (!(name in seen)) seen[name] = value; };
  const handler = (_input, ctx) => { keep("ctx")(ctx); return { ok: true }; };
  const confirm = async (request) => { keep("confirmRequest")(request); return { action: "approve" }; };
  return { seen, keep, handler, options: { confirm } };
}
export function keysOf(value) { return Object.keys(value); }
export function selfCycle() { const a = {}; a.self = a; return a; }
export function errorInfo(error) {
  return [error instanceof Error, error instanceof TypeError, error.code || "", error.message];
}
export function returningHuge(bytes) { return () => "x".repeat(bytes); }
export function returningNested(levels) {
  return () => { let value = {}; for (let i = 1; i < levels; i++) value = { a: value }; return value; };
}
export function progressThen(message) {
  return (_input, ctx) => { ctx.reportProgress(1, 2, "halfway"); ctx.reportProgress(2, 2, message); return "done"; };
}
export function sessionIdOf(tools) { return tools.sessionId; }
export function hugeString(bytes) { return "d".repeat(bytes); }
// A handler that holds each call until the test releases it, and counts the calls it runs at once.
export function turnTaker() {
  const state = { running: 0, most: 0, held: [] };
  state.handler = (input) => new Promise((resolve) => {
    state.most = Math.max(state.most, ++state.running);
    state.held.push(() => { state.running--; resolve({ n: input.n }); });
  });
  state.release = (i) => state.held[i]();
  return state;
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
export function storage(key, value) {
  if (value !== undefined) sessionStorage.setItem(key, value);
  return sessionStorage.getItem(key);
}
export function clearSession() {
  for (const key of ["client-tools:session-id", "client-tools:resume-secret", "client-tools:running-calls"]) {
    sessionStorage.removeItem(key);
  }
}
// A runtime in the page: sockets opened at ws://fake-bridge.test/... are fakes that speak the
// connect handshake (client_tools_core::connect); every other URL gets the real WebSocket.
export function fakeBridge() {
  if (!window.__fakeBridge) {
    const Real = window.WebSocket;
    const bridge = (window.__fakeBridge = {});
    class FakeSocket extends EventTarget {
      constructor(url) {
        super();
        this.url = url;
        this.readyState = 0;
        this.binaryType = "blob";
        this.accepted = false;
        bridge.urls.push(url);
        setTimeout(() => {
          if (this.readyState !== 0) return;
          this.readyState = 1;
          this.dispatchEvent(new Event("open"));
        }, 0);
      }
      send(text) {
        if (this.readyState !== 1) throw new Error("the fake socket is not open");
        const frame = JSON.parse(text);
        if (this.accepted) { bridge.frames.push(frame); return; }
        bridge.connects.push(frame);
        const answer = bridge.answer(frame.params || {}, bridge.connects.length);
        setTimeout(() => {
          if (!answer.error) { this.accepted = true; bridge.socket = this; }
          this.receive(JSON.stringify(Object.assign({ jsonrpc: "2.0", id: frame.id }, answer)));
          if (answer.error) this.end(1008);
        }, 0);
      }
      receive(text) { if (this.readyState === 1) this.dispatchEvent(new MessageEvent("message", { data: text })); }
      end(code) {
        if (this.readyState === 3) return;
        this.readyState = 3;
        this.dispatchEvent(new CloseEvent("close", { code, reason: "", wasClean: true }));
      }
      close(code) { this.end(code || 1005); }
    }
    window.WebSocket = function (url, protocols) {
      return String(url).startsWith("ws://fake-bridge.test") ? new FakeSocket(url) : new Real(url, protocols);
    };
    bridge.deliver = (frame) => bridge.socket.receive(JSON.stringify(frame));
    bridge.drop = () => bridge.socket.end(1006);
    bridge.accept = (resumed) => (params, n) => ({
      result: { sessionId: `session-${n}`, resumeSecret: params.resumeSecret || `secret-${n}`, resumed: !!resumed },
    });
    bridge.refuse = (code, message) => () => ({ error: { code, message } });
  }
  const bridge = window.__fakeBridge;
  bridge.urls = [];
  bridge.connects = [];
  bridge.frames = [];
  bridge.socket = null;
  bridge.answer = bridge.accept(false);
  return bridge;
}
// Defines a board resource, a template, two prompts and their completions on `tools`, then asks
// through a transport the page supplies, as a runtime would: `[what, got, wanted]` for each check.
export async function exerciseServer(tools) {
  const sent = [];
  let waiting = null;
  tools.attachTransport((frame) => { sent.push(JSON.parse(frame)); if (waiting) waiting(); });
  let id = 100;
  const ask = async (method, params) => {
    const my = ++id;
    tools.receiveFrame(JSON.stringify({ jsonrpc: "2.0", id: my, method, params }));
    for (;;) {
      const found = sent.find((f) => f.id === my);
      if (found) return found;
      await new Promise((r) => { waiting = r; });
    }
  };
  const checks = [];
  const check = (what, got, wanted) => checks.push([what, JSON.stringify(got), JSON.stringify(wanted)]);
  const thrown = (f) => { try { f(); return null; } catch (e) { return [e.name, e.code]; } };

  let tasks = "3 tasks";
  tools.defineResource({ uri: "board://tasks", name: "tasks", description: "The board", read: () => tasks });
  tools.defineResource({ uri: "board://logo", name: "logo", mimeType: "image/png", read: () => new Uint8Array([137, 80, 78, 71]) });
  tools.defineResource({
    uriTemplate: "board://task/{id}", name: "task", mimeType: "application/json",
    read: (uri, vars) => ({ contents: [{ uri, text: JSON.stringify({ id: vars.id }) }] }),
    complete: { id: (value) => ["t1", "t2", "x9"].filter((t) => t.startsWith(value)) },
  });
  tools.defineResource({ uri: "board://slow", name: "slow", read: () => new Promise(() => {}) });
  tools.defineResource({ uri: "board://broken", name: "broken", read: () => { throw new Error("disk on fire"); } });
  tools.definePrompt({
    name: "Plan Day", description: "Plan the day",
    arguments: [{ name: "focus", required: true }, { name: "mood" }],
    get: (args) => `Plan around ${args.focus}`,
    complete: { focus: () => ({ values: Array.from({ length: 150 }, (_, i) => `f${i}`) }) },
  });
  const removeAsk = tools.definePrompt({
    name: "ask", get: async (_args, ctx) => {
      const answer = await ctx.elicit({ message: "Which?", requestedSchema: { type: "object", properties: {} } });
      return { messages: [{ role: "user", content: { type: "text", text: answer.action } }] };
    },
  });

  check("a definition with both uri and uriTemplate", thrown(() => tools.defineResource({ name: "x", uri: "a:b", uriTemplate: "a:{b}", read() {} })), ["TypeError", "INVALID_DEFINITION"]);
  check("a URI without a scheme", thrown(() => tools.defineResource({ name: "x", uri: "tasks", read() {} })), ["TypeError", "INVALID_DEFINITION"]);
  check("a template operator the page cannot match", thrown(() => tools.defineResource({ name: "x", uriTemplate: "a:{?q}", read() {} })), ["TypeError", "INVALID_DEFINITION"]);
  check("a prompt without get", thrown(() => tools.definePrompt({ name: "x" })), ["TypeError", "INVALID_DEFINITION"]);
  check("completing what the prompt does not have", thrown(() => tools.definePrompt({ name: "x", get() {}, complete: { nope() {} } })), ["TypeError", "INVALID_DEFINITION"]);

  const init = await ask("initialize", { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } });
  check("capabilities", init.result.capabilities.resources, { subscribe: true, listChanged: true });
  const list = await ask("resources/list", {});
  check("resources/list", list.result.resources.map((r) => r.uri), ["board://tasks", "board://logo", "board://slow", "board://broken"]);
  check("a listed resource", list.result.resources[0], { uri: "board://tasks", name: "tasks", description: "The board" });
  check("templates", (await ask("resources/templates/list", {})).result.resourceTemplates, [{ uriTemplate: "board://task/{id}", name: "task", mimeType: "application/json" }]);
  check("text", (await ask("resources/read", { uri: "board://tasks" })).result, { contents: [{ uri: "board://tasks", mimeType: "text/plain", text: "3 tasks" }] });
  check("bytes", (await ask("resources/read", { uri: "board://logo" })).result.contents[0].blob, "iVBORw==");
  check("a template", (await ask("resources/read", { uri: "board://task/t%201" })).result.contents[0], { uri: "board://task/t%201", text: '{"id":"t 1"}', mimeType: "application/json" });
  const escape = await ask("resources/read", { uri: "board://task/..%2F..%2Fsecret" });
  check("a variable reaching out", [escape.error.code, escape.error.data], [-32602, { uri: "board://task/..%2F..%2Fsecret" }]);
  const unknown = await ask("resources/read", { uri: "ftp://elsewhere/x" });
  check("an unknown URI", [unknown.error.code, unknown.error.data], [-32002, { uri: "ftp://elsewhere/x" }]);
  check("no URI", (await ask("resources/read", {})).error.code, -32602);
  const broken = await ask("resources/read", { uri: "board://broken" });
  check("a read that throws", [broken.error.code, broken.error.message.includes("disk on fire")], [-32603, true]);

  check("subscribe", (await ask("resources/subscribe", { uri: "board://tasks" })).result, {});
  const before = sent.length;
  tasks = "4 tasks";
  check("a watched change", [tools.resourceChanged("board://tasks"), tools.resourceChanged("board://tasks"), tools.resourceChanged("board://logo")], [true, true, false]);
  const updates = () => sent.slice(before).filter((f) => f.method === "notifications/resources/updated");
  while (!updates().length) await new Promise((r) => { waiting = r; });
  // A change made after the first update is sent after any update scheduled with it: once it is
  // here, a second update of the first change would be too.
  check("subscribe another", (await ask("resources/subscribe", { uri: "board://logo" })).result, {});
  tools.resourceChanged("board://logo");
  while (!updates().some((f) => f.params.uri === "board://logo")) await new Promise((r) => { waiting = r; });
  check("one update per URI", updates().filter((f) => f.params.uri === "board://tasks").length, 1);
  check("the update", updates().filter((f) => f.params.uri === "board://tasks"), [{ jsonrpc: "2.0", method: "notifications/resources/updated", params: { uri: "board://tasks" } }]);
  check("unsubscribe", (await ask("resources/unsubscribe", { uri: "board://tasks" })).result, {});
  check("unwatched", tools.resourceChanged("board://tasks"), false);

  const prompts = (await ask("prompts/list", {})).result.prompts;
  check("prompts/list", prompts[0], { name: "plan_day", description: "Plan the day", arguments: [{ name: "focus", required: true }, { name: "mood" }], _meta: { "clienttools/originalName": "Plan Day" } });
  check("prompts/get", (await ask("prompts/get", { name: "plan_day", arguments: { focus: "billing" } })).result, { messages: [{ role: "user", content: { type: "text", text: "Plan around billing" } }], description: "Plan the day" });
  const missing = await ask("prompts/get", { name: "plan_day", arguments: {} });
  check("a missing argument", [missing.error.code, missing.error.message], [-32602, "prompt 'plan_day' needs argument 'focus'"]);
  tools.definePrompt({ name: "proto", arguments: [{ name: "constructor", required: true }], get: () => "x" });
  check("a missing argument named as an Object property", (await ask("prompts/get", { name: "proto", arguments: {} })).error.code, -32602);
  const extra = await ask("prompts/get", { name: "plan_day", arguments: { focus: "a", budget: "b" } });
  check("an extra argument", [extra.error.code, extra.error.message], [-32602, "prompt 'plan_day' has no argument 'budget'"]);
  check("an unknown prompt", (await ask("prompts/get", { name: "nope" })).error.code, -32602);

  const many = (await ask("completion/complete", { ref: { type: "ref/prompt", name: "plan_day" }, argument: { name: "focus", value: "" } })).result.completion;
  check("at most 100 values", [many.values.length, many.total, many.hasMore], [100, 150, true]);
  check("a template's variable", (await ask("completion/complete", { ref: { type: "ref/resource", uri: "board://task/{id}" }, argument: { name: "id", value: "t" } })).result.completion, { values: ["t1", "t2"], total: 2, hasMore: false });
  check("nothing to complete with", (await ask("completion/complete", { ref: { type: "ref/prompt", name: "plan_day" }, argument: { name: "mood", value: "" } })).result.completion, { values: [], total: 0, hasMore: false });
  check("an argument that does not exist", (await ask("completion/complete", { ref: { type: "ref/prompt", name: "plan_day" }, argument: { name: "budget", value: "" } })).error.code, -32602);

  // A prompt that asks the agent: a `clienttools/input` round tied to the request, as for a call.
  tools.receiveFrame(JSON.stringify({ jsonrpc: "2.0", id: 900, method: "prompts/get", params: { name: "ask" } }));
  while (!sent.some((f) => f.method === "clienttools/input")) await new Promise((r) => { waiting = r; });
  const round = sent.find((f) => f.method === "clienttools/input");
  check("the round's call", round.params._meta["clienttools/callId"], "900");
  const key = Object.keys(round.params.inputRequests)[0];
  tools.receiveFrame(JSON.stringify({ jsonrpc: "2.0", id: round.id, result: { inputResponses: { [key]: { action: "accept", content: {} } } } }));
  while (!sent.some((f) => f.id === 900)) await new Promise((r) => { waiting = r; });
  check("answered after the round", sent.find((f) => f.id === 900).result.messages[0].content.text, "accept");

  // A cancelled read ends without an answer; removing a prompt tells the runtime.
  tools.receiveFrame(JSON.stringify({ jsonrpc: "2.0", id: 901, method: "resources/read", params: { uri: "board://slow" } }));
  tools.receiveFrame(JSON.stringify({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 901 } }));
  const changes = sent.length;
  check("removed", [removeAsk(), removeAsk()], [true, false]);
  while (!sent.slice(changes).some((f) => f.method === "notifications/prompts/list_changed")) await new Promise((r) => { waiting = r; });
  check("no answer to a cancelled read", sent.some((f) => f.id === 901), false);
  tools.disconnect();
  return checks;
}
"#)]
extern "C" {
    fn declaration(name: &str, extra: JsValue) -> JsValue;
    #[wasm_bindgen(js_name = exerciseServer)]
    async fn exercise_server(tools: ClientTools) -> JsValue;
    fn throwing(value: JsValue) -> JsValue;
    fn rejecting(message: &str) -> JsValue;
    fn never() -> JsValue;
    #[wasm_bindgen(js_name = lastSignalAborted)]
    fn last_signal_aborted() -> bool;
    #[wasm_bindgen(js_name = neverReadingSignal)]
    fn never_reading_signal() -> JsValue;
    #[wasm_bindgen(js_name = lateSignalState)]
    fn late_signal_state() -> String;
    #[wasm_bindgen(js_name = replacingSignal)]
    fn replacing_signal() -> JsValue;
    fn returning(value: JsValue) -> JsValue;
    fn cyclic() -> JsValue;
    fn recorder() -> JsValue;
    #[wasm_bindgen(js_name = confirmWith)]
    fn confirm_with(decision: JsValue) -> JsValue;
    #[wasm_bindgen(js_name = errorInfo)]
    fn error_info(error: JsValue) -> js_sys::Array;
    #[wasm_bindgen(js_name = frameRecorder)]
    fn frame_recorder() -> JsValue;
    #[wasm_bindgen(js_name = partialThenNever)]
    fn partial_then_never() -> JsValue;
    #[wasm_bindgen(js_name = cancelPartials)]
    fn cancel_partials() -> JsValue;
    #[wasm_bindgen(js_name = domEvents)]
    fn dom_events(target: &str) -> JsValue;
    #[wasm_bindgen(js_name = contextRecorder)]
    fn context_recorder() -> JsValue;
    #[wasm_bindgen(js_name = traceSeen)]
    fn trace_seen() -> JsValue;
    #[wasm_bindgen(js_name = shapeRecorder)]
    fn shape_recorder() -> JsValue;
    #[wasm_bindgen(js_name = keysOf)]
    fn keys_of(value: &JsValue) -> Vec<String>;
    #[wasm_bindgen(js_name = selfCycle)]
    fn self_cycle() -> JsValue;
    #[wasm_bindgen(js_name = returningHuge)]
    fn returning_huge(bytes: u32) -> JsValue;
    #[wasm_bindgen(js_name = returningNested)]
    fn returning_nested(levels: u32) -> JsValue;
    #[wasm_bindgen(js_name = progressThen)]
    fn progress_then(message: &str) -> JsValue;
    #[wasm_bindgen(js_name = sessionIdOf)]
    fn session_id_of(tools: &JsValue) -> JsValue;
    #[wasm_bindgen(js_name = hugeString)]
    fn huge_string(bytes: u32) -> String;
    #[wasm_bindgen(js_name = turnTaker)]
    fn turn_taker() -> JsValue;
    fn until(check: &js_sys::Function, timeout_ms: u32) -> js_sys::Promise;
    fn storage(key: &str, value: JsValue) -> Option<String>;
    #[wasm_bindgen(js_name = clearSession)]
    fn clear_session();
    #[wasm_bindgen(js_name = fakeBridge)]
    fn fake_bridge() -> JsValue;
}

fn tools() -> ClientTools {
    ClientTools::new(Some(JsValue::UNDEFINED.unchecked_into())).expect("default options are valid")
}

fn json(text: &str) -> JsValue {
    js_sys::JSON::parse(text).unwrap()
}

fn get(value: &JsValue, key: &str) -> JsValue {
    js_sys::Reflect::get(value, &key.into()).unwrap()
}

/// `(first, second)` of each tool `list()` gives, e.g. `("name", "kind")`.
fn listed(tools: &ClientTools, first: &str, second: &str) -> Vec<(String, String)> {
    let listed: js_sys::Array = JsValue::from(tools.list()).unchecked_into();
    listed
        .iter()
        .map(|t| {
            (
                get(&t, first).as_string().unwrap(),
                get(&t, second).as_string().unwrap(),
            )
        })
        .collect()
}

/// A [`recorder`] listening to `warning` events; keep the unsubscribe function alive.
fn record_warnings(tools: &ClientTools) -> (JsValue, client_tools::typescript::Unsubscribe) {
    let record = recorder();
    let listener: js_sys::Function = get(&record, "listener").unchecked_into();
    let off = tools
        .on(
            JsValue::from("warning").unchecked_into(),
            listener.unchecked_into(),
        )
        .unwrap();
    (record, off)
}

/// What a [`recorder`] saw, as `type:code` strings.
fn seen_by(record: &JsValue) -> Vec<String> {
    js_sys::Array::from(&get(record, "seen"))
        .iter()
        .map(|v| v.as_string().unwrap())
        .collect()
}

fn define(tools: &ClientTools, name: &str, extra: JsValue) -> Result<String, JsValue> {
    tools.define_function(declaration(name, extra).unchecked_into())
}

/// `[isError, text]` of an `invoke` result.
async fn invoke(tools: &ClientTools, name: &str, input: &str) -> (bool, String, JsValue) {
    let promise: js_sys::Promise =
        JsValue::from(tools.invoke(name, Some(json(input)))).unchecked_into();
    let result = JsFuture::from(promise).await.expect("invoke resolves");
    let text = get(&get(&get(&result, "content"), "0"), "text")
        .as_string()
        .unwrap();
    (get(&result, "isError").as_bool().unwrap(), text, result)
}

/// `structuredContent.tasks[0].boardId` of a board tool's result.
fn first_task_board(result: &JsValue) -> JsValue {
    let tasks = get(&get(result, "structuredContent"), "tasks");
    get(&get(&tasks, "0"), "boardId")
}

/// `(instanceof Error, instanceof TypeError, code)` of a thrown value.
fn thrown(error: JsValue) -> (bool, bool, String, String) {
    let info = error_info(error);
    (
        info.get(0).as_bool().unwrap(),
        info.get(1).as_bool().unwrap(),
        info.get(2).as_string().unwrap(),
        info.get(3).as_string().unwrap(),
    )
}

#[wasm_bindgen_test]
fn spec_name_table_holds_in_the_browser() {
    use client_tools::normalize_tool_name as normalize;
    assert_eq!(normalize("Get Cart").unwrap(), "get_cart");
    assert_eq!(normalize("read_board_tasks").unwrap(), "read_board_tasks");
    assert_eq!(normalize("search-cars").unwrap(), "search-cars");
    assert_eq!(normalize("Créer tâche!").unwrap(), "cr_er_t_che_");
    assert_eq!(normalize(&"a".repeat(70)).unwrap(), "a".repeat(64));

    let tools = tools();
    assert_eq!(
        define(&tools, "read_board_tasks", JsValue::UNDEFINED).unwrap(),
        "read_board_tasks"
    );
    assert_eq!(
        define(&tools, "Read_board_tasks", JsValue::UNDEFINED).unwrap(),
        "read_board_tasks_2"
    );
    assert_eq!(
        define(&tools, &"a".repeat(70), JsValue::UNDEFINED).unwrap(),
        "a".repeat(64)
    );
    assert_eq!(
        define(&tools, &"a".repeat(65), JsValue::UNDEFINED).unwrap(),
        format!("{}_2", "a".repeat(62))
    );
    let mapping = listed(&tools, "name", "originalName");
    assert!(
        mapping.contains(&("read_board_tasks_2".into(), "Read_board_tasks".into())),
        "{mapping:?}"
    );
}

#[wasm_bindgen_test]
fn declaration_checks_throw_real_errors_with_codes() {
    let tools = tools();
    let (is_error, is_type_error, code, _) =
        thrown(define(&tools, "", JsValue::UNDEFINED).unwrap_err());
    assert!(is_error && is_type_error);
    assert_eq!(code, "INVALID_NAME");

    let no_handler = json(r#"{"handler": 5}"#);
    let (_, is_type_error, code, message) = thrown(define(&tools, "x", no_handler).unwrap_err());
    assert!(is_type_error);
    assert_eq!(code, "INVALID_HANDLER");
    assert!(message.contains("'x'"), "{message}");

    let bad_schema =
        json(r#"{"parameters": {"type": "object", "properties": {"a": {"type": "strin"}}}}"#);
    let (is_error, is_type_error, code, message) =
        thrown(define(&tools, "y", bad_schema).unwrap_err());
    assert!(is_error && !is_type_error);
    assert_eq!(code, "INVALID_SCHEMA");
    assert!(message.contains("strin"), "{message}");

    let (_, _, code, _) = thrown(define(&tools, "z", json(r#"{"timeoutMs": 0}"#)).unwrap_err());
    assert_eq!(code, "INVALID_TIMEOUT");

    let (_, _, code, message) =
        thrown(define(&tools, "w", json(r#"{"parameter": {}}"#)).unwrap_err());
    assert_eq!(code, "INVALID_OPTIONS");
    assert!(message.contains("parameter"), "{message}");

    let (_, is_type_error, code, _) = thrown(
        ClientTools::new(Some(json(r#"{"endpiont": "ws://x"}"#).unchecked_into()))
            .err()
            .expect("unknown option rejected"),
    );
    assert!(is_type_error);
    assert_eq!(code, "INVALID_OPTIONS");
}

#[wasm_bindgen_test]
fn declaration_problems_that_are_not_fatal_warn() {
    let tools = tools();
    let (record, _off) = record_warnings(&tools);
    define(
        &tools,
        "no_params",
        json(r#"{"parameters": null, "description": null}"#),
    )
    .unwrap();
    define(&tools, "long", json(r#"{"timeoutMs": 400000}"#)).unwrap();
    define(&tools, "long", json(r#"{"timeoutMs": 1000}"#)).unwrap();
    let seen = seen_by(&record);
    assert_eq!(
        seen,
        [
            "warning:parameters_not_object",
            "warning:missing_description",
            "warning:timeout_clamped",
            "warning:tool_replaced"
        ]
    );
    let listed: js_sys::Array = JsValue::from(tools.list()).unchecked_into();
    let no_params = listed
        .iter()
        .find(|t| get(t, "name") == "no_params")
        .unwrap();
    let schema = get(&no_params, "inputSchema");
    assert_eq!(get(&schema, "type"), "object");
    let properties: js_sys::Object = get(&schema, "properties").unchecked_into();
    assert_eq!(js_sys::Object::keys(&properties).length(), 0);
}

/// The members of an `interface` (or of one `ClientToolsEvents` entry) in the package's TypeScript:
/// `(name, optional)`.
fn typescript_members(interface: &str, event: Option<&str>) -> Vec<(String, bool)> {
    let ts = client_tools::typescript::TYPES;
    let start = ts
        .find(&format!("export interface {interface} {{"))
        .unwrap_or_else(|| panic!("no interface {interface}"));
    let body = &ts[start..];
    let body = &body[body.find('{').unwrap() + 1..body.find("\n}").unwrap()];
    let body = match event {
        None => body.to_owned(),
        Some(event) => {
            let line = body
                .lines()
                .find(|l| l.trim_start().starts_with(&format!("{event}: {{")))
                .unwrap_or_else(|| panic!("no event {event}"));
            line[line.find('{').unwrap() + 1..line.rfind('}').unwrap()].replace(';', "\n")
        }
    };
    body.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('/') && !l.starts_with('*'))
        .filter_map(|l| l.split([':', '(']).next())
        .map(|name| (name.trim_end_matches('?').to_owned(), name.ends_with('?')))
        .collect()
}

/// A real object has every required member of its TypeScript shape and nothing the shape lacks.
fn assert_shape(what: &str, value: &JsValue, members: &[(String, bool)]) {
    let keys = keys_of(value);
    for (name, optional) in members {
        assert!(
            *optional || keys.contains(name),
            "{what}: required '{name}' missing from {keys:?}"
        );
    }
    for key in &keys {
        assert!(
            members.iter().any(|(name, _)| name == key),
            "{what}: '{key}' is not in its TypeScript shape {members:?}"
        );
    }
}

/// The events the shapes test makes happen (`connectionchange` needs a runtime).
const SHAPED_EVENTS: [&str; 5] = [
    "toolactivated",
    "toolcancel",
    "toolresult",
    "toolschanged",
    "warning",
];

/// The shapes `src/typescript.rs` declares are those of the objects pages really get: a listed
/// tool, a handler's context, a confirmation request, a result, each event.
#[wasm_bindgen_test]
async fn typescript_shapes_are_what_pages_get() {
    let record = shape_recorder();
    let keep = |name: &str| -> JsValue {
        let keep: js_sys::Function = get(&record, "keep").unchecked_into();
        keep.call1(&JsValue::NULL, &name.into()).unwrap()
    };
    let tools = ClientTools::new(Some(get(&record, "options").unchecked_into())).unwrap();
    for event in SHAPED_EVENTS {
        std::mem::forget(
            tools
                .on(
                    JsValue::from(event).unchecked_into(),
                    keep(event).unchecked_into(),
                )
                .unwrap(),
        );
    }
    let extra = json(
        r#"{"outputSchema": {"type": "object"}, "requireConfirmation": true, "annotations": {"title": "Board"}}"#,
    );
    js_sys::Reflect::set(&extra, &"handler".into(), &get(&record, "handler")).unwrap();
    define(&tools, "Read Board", extra).unwrap();
    let (is_error, text, result) = invoke(&tools, "read_board", r#"{"boardId": "b"}"#).await;
    assert!(!is_error, "{text}");
    let slow = json(r#"{"timeoutMs": 30, "parameters": null}"#); // warning: parameters_not_object
    js_sys::Reflect::set(&slow, &"handler".into(), &never()).unwrap();
    define(&tools, "slow", slow).unwrap();
    invoke(&tools, "slow", "{}").await; // toolcancel (timed out)

    let seen = get(&record, "seen");
    let listed: js_sys::Array = JsValue::from(tools.list()).unchecked_into();
    assert_shape(
        "ListedTool",
        &listed.get(0),
        &typescript_members("ListedTool", None),
    );
    assert_shape(
        "ToolContext",
        &get(&seen, "ctx"),
        &typescript_members("ToolContext", None),
    );
    assert_shape(
        "ConfirmRequest",
        &get(&seen, "confirmRequest"),
        &typescript_members("ConfirmRequest", None),
    );
    assert_shape(
        "CallToolResult",
        &result,
        &typescript_members("CallToolResult", None),
    );
    for event in SHAPED_EVENTS {
        let value = get(&seen, event);
        assert!(!value.is_undefined(), "no '{event}' event was seen");
        assert_shape(
            event,
            &value,
            &typescript_members("ClientToolsEvents", Some(event)),
        );
    }
}

/// SPEC §3 as pages write declarations: an invalid schema throws whatever its type; a schema with
/// `properties` but no `type` is the object schema it was meant to be (with a warning), not a tool
/// whose parameters are silently dropped.
#[wasm_bindgen_test]
async fn declarations_as_users_write_them() {
    let tools = tools();
    let (record, _off) = record_warnings(&tools);

    let misspelt = json(r#"{"parameters": {"type": "objekt"}}"#);
    let (is_error, _, code, message) = thrown(define(&tools, "misspelt", misspelt).unwrap_err());
    assert!(is_error);
    assert_eq!(code, "INVALID_SCHEMA");
    assert!(
        message.contains("objekt") && message.contains("misspelt"),
        "{message}"
    );

    // A value of the wrong type is named by its key.
    let (_, _, code, message) =
        thrown(define(&tools, "typed", json(r#"{"timeoutMs": "5 s"}"#)).unwrap_err());
    assert_eq!(code, "INVALID_OPTIONS");
    assert!(
        message.contains("'timeoutMs'") && message.contains("typed"),
        "{message}"
    );

    let untyped = json(
        r#"{"parameters": {"properties": {"boardId": {"type": "string"}}, "required": ["boardId"]}}"#,
    );
    define(&tools, "untyped", untyped).unwrap();
    let seen = seen_by(&record);
    assert_eq!(seen, ["warning:parameters_type_assumed"]);
    let listed: js_sys::Array = JsValue::from(tools.list()).unchecked_into();
    let schema = get(&listed.get(0), "inputSchema");
    assert_eq!(get(&schema, "type"), "object");
    assert_eq!(get(&get(&schema, "required"), "0"), "boardId");
    let (is_error, text, _) = invoke(&tools, "untyped", "{}").await;
    assert!(is_error && text.contains("boardId"), "{text}");
    let (is_error, text, result) = invoke(&tools, "untyped", r#"{"boardId": "b7"}"#).await;
    assert!(!is_error, "{text}");
    assert_eq!(first_task_board(&result), "b7");
}

/// `defaultTimeoutMs` applies to tools that set no timeout of their own, not to those that do.
#[wasm_bindgen_test]
async fn default_timeout_applies_where_the_tool_sets_none() {
    let tools =
        ClientTools::new(Some(json(r#"{"defaultTimeoutMs": 40}"#).unchecked_into())).unwrap();
    let handler = json("{}");
    js_sys::Reflect::set(&handler, &"handler".into(), &never()).unwrap();
    define(&tools, "uses_default", handler.clone()).unwrap();
    let (is_error, text, _) = invoke(&tools, "uses_default", r#"{"boardId": "b"}"#).await;
    assert!(is_error);
    assert_eq!(text, "timed out after 40 ms");

    js_sys::Reflect::set(&handler, &"timeoutMs".into(), &80.into()).unwrap();
    define(&tools, "own_timeout", handler).unwrap();
    let (is_error, text, _) = invoke(&tools, "own_timeout", r#"{"boardId": "b"}"#).await;
    assert!(is_error);
    assert_eq!(text, "timed out after 80 ms");

    for bad in ["0", "-5", r#""soon""#] {
        let options = json(&format!(r#"{{"defaultTimeoutMs": {bad}}}"#));
        let (_, _, code, message) = thrown(
            ClientTools::new(Some(options.unchecked_into()))
                .err()
                .unwrap(),
        );
        assert_eq!(code, "INVALID_OPTIONS");
        assert!(message.contains("defaultTimeoutMs"), "{message}");
    }
}

/// An output that breaks the tool's `outputSchema` is an error result for the agent and an
/// `output_invalid` warning for the page (whose handler is at fault).
#[wasm_bindgen_test]
async fn invalid_output_is_an_error_result_and_a_warning() {
    let tools = tools();
    let (record, _off) = record_warnings(&tools);
    let extra = json(r#"{"outputSchema": {"type": "object", "required": ["count"]}}"#);
    js_sys::Reflect::set(
        &extra,
        &"handler".into(),
        &returning(json(r#"{"total": 3}"#)),
    )
    .unwrap();
    define(&tools, "counted", extra).unwrap();
    let (is_error, text, _) = invoke(&tools, "counted", r#"{"boardId": "b"}"#).await;
    assert!(is_error);
    assert!(text.contains("count"), "{text}");
    let seen = seen_by(&record);
    assert_eq!(seen, ["warning:output_invalid"]);
}

/// The handler's `ctx` names the call and the tool both ways; `list()` says each tool's kind.
#[wasm_bindgen_test]
async fn handler_context_and_listed_kinds() {
    let tools = tools();
    let record = context_recorder();
    let extra = json("{}");
    js_sys::Reflect::set(&extra, &"handler".into(), &get(&record, "handler")).unwrap();
    let name = define(&tools, "Read Board", extra).unwrap();
    assert_eq!(name, "read_board");
    invoke(&tools, "read_board", r#"{"boardId": "b"}"#).await;
    invoke(&tools, "read_board", r#"{"boardId": "b"}"#).await;
    let seen = js_sys::Array::from(&get(&record, "seen"));
    assert_eq!(seen.length(), 2);
    let first = seen.get(0);
    assert_eq!(get(&first, "toolName"), "read_board");
    assert_eq!(get(&first, "originalName"), "Read Board");
    assert_eq!(get(&first, "signal"), true);
    let ids: Vec<String> = seen
        .iter()
        .map(|ctx| get(&ctx, "callId").as_string().unwrap())
        .collect();
    assert!(!ids[0].is_empty() && ids[0] != ids[1], "{ids:?}");

    tools
        .register_handler(
            "Agent Tool".into(),
            get(&record, "handler").unchecked_into(),
        )
        .unwrap();
    let kinds = listed(&tools, "name", "kind");
    assert!(
        kinds.contains(&("read_board".into(), "function".into())),
        "{kinds:?}"
    );
    assert!(
        kinds.contains(&("agent_tool".into(), "handler".into())),
        "{kinds:?}"
    );
}

#[wasm_bindgen_test]
async fn invoke_validates_input_and_returns_structured_results() {
    let tools = tools();
    define(&tools, "read_board_tasks", JsValue::UNDEFINED).unwrap();
    let (is_error, text, result) = invoke(&tools, "read_board_tasks", r#"{"boardId": "b1"}"#).await;
    assert!(!is_error, "{text}");
    assert_eq!(first_task_board(&result), "b1");

    let (is_error, text, _) = invoke(&tools, "read_board_tasks", r#"{"status": "later"}"#).await;
    assert!(is_error);
    assert!(
        text.contains("boardId") && text.contains("/status"),
        "{text}"
    );

    let promise: js_sys::Promise = JsValue::from(tools.invoke("nope", None)).unchecked_into();
    let (_, _, code, _) = thrown(JsFuture::from(promise).await.unwrap_err());
    assert_eq!(code, "UNKNOWN_TOOL");
}

#[wasm_bindgen_test]
async fn handler_failures_become_error_results() {
    let tools = tools();
    let any_input = r#"{"parameters": {"type": "object"}}"#;
    let with = |handler: JsValue| {
        let extra = json(any_input);
        js_sys::Reflect::set(&extra, &"handler".into(), &handler).unwrap();
        extra
    };
    define(
        &tools,
        "throws",
        with(throwing(js_sys::Error::new("sync boom").into())),
    )
    .unwrap();
    define(&tools, "rejects", with(rejecting("async boom"))).unwrap();
    define(
        &tools,
        "throws_string",
        with(throwing("plain string".into())),
    )
    .unwrap();
    define(&tools, "cycle", with(cyclic())).unwrap();
    define(&tools, "text", with(returning("hello".into()))).unwrap();

    assert_eq!(invoke(&tools, "throws", "{}").await.1, "sync boom");
    assert_eq!(invoke(&tools, "rejects", "{}").await.1, "async boom");
    assert_eq!(
        invoke(&tools, "throws_string", "{}").await.1,
        "plain string"
    );
    let (is_error, text, _) = invoke(&tools, "cycle", "{}").await;
    assert!(is_error && text.contains("not JSON-serializable"), "{text}");
    let (is_error, text, result) = invoke(&tools, "text", "{}").await;
    assert!(!is_error);
    assert_eq!(text, "hello");
    assert!(get(&result, "structuredContent").is_undefined());
}

#[wasm_bindgen_test]
async fn a_slow_handler_times_out_aborts_its_signal_and_fires_toolcancel() {
    let tools = tools();
    let extra = json(r#"{"parameters": {"type": "object"}, "timeoutMs": 50}"#);
    js_sys::Reflect::set(&extra, &"handler".into(), &never()).unwrap();
    define(&tools, "slow", extra).unwrap();
    let record = recorder();
    let listener: js_sys::Function = get(&record, "listener").unchecked_into();
    for event in ["toolactivated", "toolcancel", "toolresult"] {
        tools
            .on(
                JsValue::from(event).unchecked_into(),
                listener.clone().unchecked_into(),
            )
            .unwrap();
    }
    let (is_error, text, _) = invoke(&tools, "slow", "{}").await;
    assert!(is_error);
    assert_eq!(text, "timed out after 50 ms");
    assert!(last_signal_aborted());
    let seen = seen_by(&record);
    assert_eq!(
        seen,
        ["toolactivated:slow", "toolcancel:slow", "toolresult:slow"]
    );
}

/// `ctx.partial` (issue 36 point 4): the call that times out ends with an error result carrying
/// the last good value (text and `structuredContent`), and `toolcancel` carries it; a cycle, a
/// BigInt and 10 MB are one `partial_dropped` warning each, never a throw into the handler.
#[wasm_bindgen_test]
async fn a_timed_out_call_carries_its_partial_value_and_bad_values_are_warnings() {
    let tools = tools();
    let extra = json(r#"{"parameters": {"type": "object"}, "timeoutMs": 50}"#);
    js_sys::Reflect::set(&extra, &"handler".into(), &partial_then_never()).unwrap();
    define(&tools, "export", extra).unwrap();
    let (warned, _off) = record_warnings(&tools);
    let cancels = cancel_partials();
    let listener: js_sys::Function = get(&cancels, "listener").unchecked_into();
    let _off_cancel = tools
        .on(
            JsValue::from("toolcancel").unchecked_into(),
            listener.unchecked_into(),
        )
        .unwrap();
    let (is_error, text, result) = invoke(&tools, "export", "{}").await;
    assert!(is_error);
    assert_eq!(text, "timed out after 50 ms");
    let carried = r#"{"partial":{"rows":1,"last":"o-1"}}"#;
    let structured = js_sys::JSON::stringify(&get(&result, "structuredContent")).unwrap();
    assert_eq!(String::from(structured), carried);
    let second = get(&get(&get(&result, "content"), "1"), "text");
    assert_eq!(second.as_string().unwrap(), carried);
    assert_eq!(
        seen_by(&warned),
        [
            "warning:partial_dropped",
            "warning:partial_dropped",
            "warning:partial_dropped"
        ]
    );
    assert_eq!(seen_by(&cancels), [r#"{"rows":1,"last":"o-1"}"#]);
}

/// `ctx.signal` is made when first read: read only after the call timed out, it is already
/// aborted, with the reason; and a handler may replace it.
#[wasm_bindgen_test]
async fn a_signal_first_read_after_the_timeout_is_already_aborted() {
    let tools = tools();
    let extra = json(r#"{"parameters": {"type": "object"}, "timeoutMs": 30}"#);
    js_sys::Reflect::set(&extra, &"handler".into(), &never_reading_signal()).unwrap();
    define(&tools, "unread", extra).unwrap();
    let (is_error, text, _) = invoke(&tools, "unread", "{}").await;
    assert!(is_error);
    assert_eq!(text, "timed out after 30 ms");
    assert!(
        late_signal_state().contains("timed out"),
        "{}",
        late_signal_state()
    );
    // A handler may still put a signal of its own in its place.
    let extra = json(r#"{"parameters": {"type": "object"}}"#);
    js_sys::Reflect::set(&extra, &"handler".into(), &replacing_signal()).unwrap();
    define(&tools, "replacing", extra).unwrap();
    let (is_error, text, _) = invoke(&tools, "replacing", "{}").await;
    assert!(!is_error, "{text}");
    assert_eq!(text, r#"{"same":true}"#);
}

#[wasm_bindgen_test]
async fn unsubscribe_stops_events_and_handlers_may_define_tools() {
    let tools = tools();
    let record = recorder();
    let listener: js_sys::Function = get(&record, "listener").unchecked_into();
    let off: js_sys::Function = JsValue::from(
        tools
            .on(
                JsValue::from("toolschanged").unchecked_into(),
                listener.unchecked_into(),
            )
            .unwrap(),
    )
    .unchecked_into();
    define(&tools, "first", JsValue::UNDEFINED).unwrap();
    off.call0(&JsValue::NULL).unwrap();
    define(&tools, "second", JsValue::UNDEFINED).unwrap();
    assert_eq!(js_sys::Array::from(&get(&record, "seen")).length(), 1);

    // A handler that calls back into the SDK while it runs (no borrow may be held across it).
    let inner = tools.clone();
    let defining = Closure::<dyn Fn() -> JsValue>::new(move || {
        define(&inner, "defined_inside", JsValue::UNDEFINED).unwrap();
        JsValue::from("ok")
    });
    let extra = json(r#"{"parameters": {"type": "object"}}"#);
    js_sys::Reflect::set(&extra, &"handler".into(), defining.as_ref()).unwrap();
    define(&tools, "definer", extra).unwrap();
    let (is_error, text, _) = invoke(&tools, "definer", "{}").await;
    assert!(!is_error, "{text}");
    assert!(tools.unregister("defined_inside"));
}

#[wasm_bindgen_test]
fn proto_keys_in_input_stay_plain_data() {
    let value = client_tools::js::to_plain(&serde_json::json!({"__proto__": {"polluted": true}}));
    assert!(get(&js_sys::Object::new(), "polluted").is_undefined());
    assert!(get(&value, "polluted").is_undefined());
}

/// A page with a `confirm` callback answering `decision`, and one tool that needs confirmation.
fn confirming_tools(decision: &str) -> (ClientTools, JsValue) {
    let setup = confirm_with(json(decision));
    let tools = ClientTools::new(Some(get(&setup, "options").unchecked_into())).unwrap();
    define(
        &tools,
        "delete_board",
        json(r#"{"requireConfirmation": true}"#),
    )
    .unwrap();
    (tools, get(&setup, "seen"))
}

#[wasm_bindgen_test]
async fn confirmation_approve_modify_reject() {
    let (tools, seen) = confirming_tools(r#"{"action": "approve"}"#);
    let (is_error, text, _) = invoke(&tools, "delete_board", r#"{"boardId": "b1"}"#).await;
    assert!(!is_error, "{text}");
    let request = js_sys::Array::from(&seen).get(0);
    assert_eq!(get(&request, "toolName"), "delete_board");
    assert_eq!(get(&get(&request, "input"), "boardId"), "b1");
    assert_eq!(get(&get(&request, "inputSchema"), "type"), "object");

    let (tools, _) = confirming_tools(r#"{"action": "modify", "input": {"boardId": "b2"}}"#);
    let (is_error, text, result) = invoke(&tools, "delete_board", r#"{"boardId": "b1"}"#).await;
    assert!(!is_error, "{text}");
    assert_eq!(first_task_board(&result), "b2");
    let modified = get(&get(&result, "_meta"), "clienttools/modifiedInput");
    assert_eq!(get(&modified, "boardId"), "b2");

    let (tools, _) = confirming_tools(r#"{"action": "modify", "input": {"boardId": 7}}"#);
    let (is_error, text, _) = invoke(&tools, "delete_board", r#"{"boardId": "b1"}"#).await;
    assert!(is_error && text.contains("/boardId"), "{text}");

    let (tools, _) = confirming_tools(r#"{"action": "reject", "reason": "wrong board"}"#);
    let (is_error, text, _) = invoke(&tools, "delete_board", r#"{"boardId": "b1"}"#).await;
    assert!(is_error);
    assert_eq!(text, "rejected by the user: wrong board");

    let (tools, _) = confirming_tools(r#"{"action": "perhaps"}"#);
    let (is_error, text, _) = invoke(&tools, "delete_board", r#"{"boardId": "b1"}"#).await;
    assert!(is_error && text.contains("approve"), "{text}");
}

#[wasm_bindgen_test]
async fn a_page_may_opt_out_of_the_confirmation_its_annotations_ask_for() {
    // With `confirm` and without it (the built-in dialog, tests/ui.rs), nothing is asked.
    let (tools, seen) = confirming_tools(r#"{"action": "reject"}"#);
    define(
        &tools,
        "wipe",
        json(r#"{"annotations": {"destructiveHint": true}, "requireConfirmation": false}"#),
    )
    .unwrap();
    let (is_error, text, _) = invoke(&tools, "wipe", r#"{"boardId": "b1"}"#).await;
    assert!(!is_error, "{text}");
    assert_eq!(js_sys::Array::from(&seen).length(), 0);
}

/// The next frame the page sent through a `frameRecorder` transport, parsed.
async fn next_frame(recorder: &JsValue) -> JsValue {
    let next: js_sys::Function = get(recorder, "next").unchecked_into();
    let promise: js_sys::Promise = next.call0(&JsValue::NULL).unwrap().unchecked_into();
    JsFuture::from(promise).await.unwrap()
}

#[wasm_bindgen_test]
async fn a_page_supplied_transport_carries_the_protocol() {
    let tools = tools();
    let (_, _, code, _) = thrown(tools.receive_frame("{}").unwrap_err());
    assert_eq!(code, "NOT_CONNECTED");

    define(&tools, "read_board_tasks", JsValue::UNDEFINED).unwrap();
    let recorder = frame_recorder();
    tools
        .attach_transport(get(&recorder, "send").unchecked_into())
        .unwrap();
    assert_eq!(tools.connection_state(), "connected");
    let connecting: js_sys::Promise = JsValue::from(tools.connect()).unchecked_into();
    let (_, _, code, message) = thrown(JsFuture::from(connecting).await.unwrap_err());
    assert_eq!(code, "NOT_CONNECTED");
    assert!(message.contains("attachTransport"), "{message}");

    tools
        .receive_frame(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#)
        .unwrap();
    let listed = next_frame(&recorder).await;
    let first = get(&get(&get(&listed, "result"), "tools"), "0");
    assert_eq!(get(&first, "name"), "read_board_tasks");

    tools
        .receive_frame(
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_board_tasks","arguments":{"boardId":"b7"}}}"#,
        )
        .unwrap();
    let answered = next_frame(&recorder).await;
    assert_eq!(get(&answered, "id"), 2);
    assert_eq!(first_task_board(&get(&answered, "result")), "b7");

    tools.receive_frame("not json").unwrap();
    let refused = next_frame(&recorder).await;
    assert_eq!(get(&get(&refused, "error"), "code"), -32700);

    tools.disconnect();
    let (_, _, code, _) = thrown(tools.receive_frame("{}").unwrap_err());
    assert_eq!(code, "NOT_CONNECTED");
}

#[wasm_bindgen_test]
fn schema_validator_checks_values_and_asserts_formats() {
    let schema = r#"{"type":"object","properties":{"status":{"enum":["todo","done"]},
        "due":{"type":"string","format":"date-time"}},"required":["status"]}"#;
    let validator = SchemaValidator::new(json(schema).unchecked_into()).unwrap();
    let errors = |value: JsValue| -> Vec<String> {
        let found: JsValue = validator.validate(value).into();
        if found.is_undefined() {
            return vec![];
        }
        js_sys::Array::from(&found)
            .iter()
            .map(|e| e.as_string().unwrap())
            .collect()
    };
    assert!(errors(json(r#"{"status":"todo","due":"2026-11-30T05:00:00Z"}"#)).is_empty());
    let wrong = errors(json(r#"{"status":"later","due":"tomorrow"}"#)).join("\n");
    assert!(
        wrong.contains("/status") && wrong.contains("/due"),
        "{wrong}"
    );
    assert!(errors(self_cycle()).join("").contains("not JSON"));

    let bad = SchemaValidator::new(json(r#"{"type": 12}"#).unchecked_into())
        .err()
        .unwrap();
    let (is_error, _, code, message) = thrown(bad);
    assert!(is_error);
    assert_eq!(code, "INVALID_SCHEMA");
    assert!(message.contains("invalid JSON Schema"), "{message}");
}

/// A Punycode label of a `hostname` is judged by each code point's general category (RFC 5892),
/// which on wasm32 the browser's Unicode data answers (vendor/unicode-facade: the module carries no
/// table of its own). The same cases and answers are checked natively in
/// `crates/core/tests/hostname_labels.rs`.
#[wasm_bindgen_test]
fn punycode_hostnames_use_the_browsers_unicode_data() {
    let cases: Vec<(String, bool, String)> =
        serde_json::from_str(include_str!("fixtures/punycode-hostnames.json")).unwrap();
    let validator =
        SchemaValidator::new(json(r#"{"format":"hostname"}"#).unchecked_into()).unwrap();
    for (hostname, valid, why) in cases {
        let found: JsValue = validator.validate(JsValue::from_str(&hostname)).into();
        assert_eq!(found.is_undefined(), valid, "{hostname} ({why})");
    }
}

/// `pattern` is ECMA-262 and runs on the browser's own `RegExp` (the patched jsonschema, see
/// vendor/README.md): look-behind, named back-references and Unicode property escapes work, `\d` is
/// ASCII only, and a pattern `RegExp` rejects is an invalid schema.
#[wasm_bindgen_test]
fn patterns_are_ecma_262_run_by_the_browser() {
    let schema = r#"{"type":"object","properties":{
        "price":{"type":"string","pattern":"(?<=\\$)\\d+$"},
        "twice":{"type":"string","pattern":"^(?<word>[a-z]+)-\\k<word>$"},
        "greek":{"type":"string","pattern":"^\\p{Script=Greek}+$"},
        "digits":{"type":"string","pattern":"^\\d+$"}},
        "patternProperties":{"^x-(?!secret)":{"type":"integer"}}}"#;
    let validator = SchemaValidator::new(json(schema).unchecked_into()).unwrap();
    let errors = |instance: &str| -> String {
        let found: JsValue = validator.validate(json(instance)).into();
        if found.is_undefined() {
            return String::new();
        }
        js_sys::Array::from(&found)
            .iter()
            .map(|e| e.as_string().unwrap())
            .collect::<Vec<_>>()
            .join("\n")
    };
    let valid = r#"{"price":"$12","twice":"ab-ab","greek":"αβγ","digits":"042","x-count":1,"x-secret":"s"}"#;
    assert_eq!(errors(valid), "");
    for (instance, field) in [
        (r#"{"price":"12"}"#, "/price"),
        (r#"{"twice":"ab-ba"}"#, "/twice"),
        (r#"{"greek":"abc"}"#, "/greek"),
        // Arabic-Indic digits: `\d` is [0-9] in ECMA-262.
        (r#"{"digits":"٤٢"}"#, "/digits"),
        (r#"{"x-count":"one"}"#, "/x-count"),
    ] {
        assert!(
            errors(instance).contains(field),
            "{instance}: {}",
            errors(instance)
        );
    }

    for invalid in [
        r#"{"pattern":"(unclosed"}"#,
        r#"{"pattern":"\\p{NoSuchProperty}"}"#,
    ] {
        let (_, _, code, message) = thrown(
            SchemaValidator::new(json(invalid).unchecked_into())
                .err()
                .unwrap(),
        );
        assert_eq!(code, "INVALID_SCHEMA", "{invalid}: {message}");
    }
}

#[wasm_bindgen_test]
async fn toolactivated_is_a_dom_event_on_model_context_else_window() {
    let tools = tools();
    define(&tools, "read_board_tasks", JsValue::UNDEFINED).unwrap();
    for target in ["window", "modelContext"] {
        let events = dom_events(target);
        invoke(&tools, "read_board_tasks", r#"{"boardId": "b1"}"#).await;
        let stop: js_sys::Function = get(&events, "stop").unchecked_into();
        stop.call0(&JsValue::NULL).unwrap();
        let seen: Vec<String> = js_sys::Array::from(&get(&events, "seen"))
            .iter()
            .map(|e| e.as_string().unwrap())
            .collect();
        assert_eq!(seen, ["toolactivated:read_board_tasks"], "on {target}");
    }
}

// --- the connect handshake (client_tools_core::connect), against a fake runtime in the page -----

const FAKE_ENDPOINT: &str = "ws://fake-bridge.test/ws";

fn endpoint_options(token: Option<&str>) -> JsValue {
    let options = js_sys::Object::new();
    js_sys::Reflect::set(&options, &"endpoint".into(), &FAKE_ENDPOINT.into()).unwrap();
    if let Some(token) = token {
        js_sys::Reflect::set(&options, &"token".into(), &token.into()).unwrap();
    }
    options.into()
}

/// Makes the fake runtime answer connects with `bridge.<how>(...args)` (`accept`, `refuse`).
fn answer_with(bridge: &JsValue, how: &str, args: &[JsValue]) {
    let make: js_sys::Function = get(bridge, how).unchecked_into();
    let answer = make
        .apply(bridge, &args.iter().collect::<js_sys::Array>())
        .unwrap();
    js_sys::Reflect::set(bridge, &"answer".into(), &answer).unwrap();
}

fn count(bridge: &JsValue, list: &str) -> u32 {
    js_sys::Array::from(&get(bridge, list)).length()
}

fn nth(bridge: &JsValue, list: &str, index: u32) -> JsValue {
    js_sys::Array::from(&get(bridge, list)).get(index)
}

fn stringify(value: &JsValue) -> String {
    js_sys::JSON::stringify(value).unwrap().into()
}

async fn wait_until(what: &str, check: impl Fn() -> bool + 'static) {
    let check = Closure::<dyn Fn() -> bool>::new(check);
    if JsFuture::from(until(check.as_ref().unchecked_ref(), 5_000))
        .await
        .is_err()
    {
        panic!("timed out waiting for {what}");
    }
}

async fn connect(tools: &ClientTools) -> Result<JsValue, JsValue> {
    JsFuture::from(JsValue::from(tools.connect()).unchecked_into::<js_sys::Promise>()).await
}

/// The frame the page sent for request `id`, once it is there.
async fn answer_to(bridge: &JsValue, id: u32) -> JsValue {
    let frames = get(bridge, "frames");
    let find = move || {
        js_sys::Array::from(&frames)
            .iter()
            .find(|frame| get(frame, "id") == id)
    };
    let found = find.clone();
    wait_until(&format!("the answer to request {id}"), move || {
        found().is_some()
    })
    .await;
    find().unwrap()
}

fn deliver(bridge: &JsValue, frame: &str) {
    let deliver: js_sys::Function = get(bridge, "deliver").unchecked_into();
    deliver.call1(bridge, &json(frame)).unwrap();
}

#[wasm_bindgen_test]
async fn connect_sends_credentials_in_the_first_frame_never_in_the_url() {
    let bridge = fake_bridge();
    clear_session();
    let tools =
        ClientTools::new(Some(endpoint_options(Some("page-s3cret")).unchecked_into())).unwrap();
    assert_eq!(tools.session_id(), None, "unknown before the first connect");
    let from_js = JsValue::from(tools.clone());
    assert!(
        session_id_of(&from_js).is_undefined(),
        "undefined in JavaScript"
    );
    connect(&tools).await.expect("the fake runtime accepts");
    assert_eq!(session_id_of(&from_js), "session-1");

    assert_eq!(
        stringify(&get(&bridge, "urls")),
        format!(r#"["{FAKE_ENDPOINT}"]"#)
    );
    let first = nth(&bridge, "connects", 0);
    assert_eq!(get(&first, "jsonrpc"), "2.0");
    assert_eq!(get(&first, "id"), "clienttools-connect");
    assert_eq!(get(&first, "method"), "clienttools/connect");
    assert_eq!(
        stringify(&get(&first, "params")),
        r#"{"token":"page-s3cret"}"#
    );
    assert_eq!(tools.session_id().as_deref(), Some("session-1"));
    assert_eq!(tools.connection_state(), "connected");
    let kept = |key: &str| storage(&format!("client-tools:{key}"), JsValue::UNDEFINED);
    assert_eq!(kept("session-id").as_deref(), Some("session-1"));
    assert_eq!(kept("resume-secret").as_deref(), Some("secret-1"));

    // MCP runs once the runtime accepted the page.
    deliver(&bridge, r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
    assert_eq!(
        stringify(&get(&answer_to(&bridge, 1).await, "result")),
        "{}"
    );

    // After a drop the page reconnects and resumes with the secret (in the frame, not the URL).
    answer_with(&bridge, "accept", &[true.into()]);
    let drop_socket: js_sys::Function = get(&bridge, "drop").unchecked_into();
    drop_socket.call0(&bridge).unwrap();
    let watched = bridge.clone();
    wait_until("the reconnect", move || count(&watched, "connects") == 2).await;
    // The members' order is not part of the frame's meaning (on wasm serde_json keeps the order
    // they are written in, Cargo.toml): compare the JSON, not its text.
    let params: serde_json::Value =
        serde_json::from_str(&stringify(&get(&nth(&bridge, "connects", 1), "params"))).unwrap();
    assert_eq!(
        params,
        serde_json::json!({"resumeSecret": "secret-1", "token": "page-s3cret"})
    );
    let page = tools.clone();
    wait_until("connected again", move || {
        page.connection_state() == "connected"
    })
    .await;
    assert_eq!(tools.session_id().as_deref(), Some("session-2"));
    tools.disconnect();

    // The next page of the tab (a reload) resumes the stored session.
    let reloaded =
        ClientTools::new(Some(endpoint_options(Some("page-s3cret")).unchecked_into())).unwrap();
    connect(&reloaded).await.unwrap();
    let resumed = get(&nth(&bridge, "connects", 2), "params");
    assert_eq!(get(&resumed, "resumeSecret"), "secret-1");
    reloaded.disconnect();
    assert!(js_sys::Array::from(&get(&bridge, "urls"))
        .iter()
        .all(|url| url == FAKE_ENDPOINT));
}

#[wasm_bindgen_test]
async fn a_refused_connect_rejects_with_the_bridges_reason_and_never_the_token() {
    let bridge = fake_bridge();
    clear_session();
    for reason in ["missing or wrong page token", "wrong token 'page-s3cret'"] {
        answer_with(&bridge, "refuse", &[(-32001).into(), reason.into()]);
        let tools =
            ClientTools::new(Some(endpoint_options(Some("page-s3cret")).unchecked_into())).unwrap();
        let (is_error, _, code, message) = thrown(connect(&tools).await.unwrap_err());
        assert!(is_error);
        assert_eq!(code, "CONNECTION_FAILED");
        assert!(
            message.contains("the bridge refused the connection: "),
            "{message}"
        );
        assert!(!message.contains("page-s3cret"), "{message}");
        assert_eq!(tools.session_id(), None);
        assert_eq!(tools.connection_state(), "disconnected");
    }
    answer_with(
        &bridge,
        "refuse",
        &[(-32001).into(), "missing or wrong page token".into()],
    );
    let tools = ClientTools::new(Some(endpoint_options(None).unchecked_into())).unwrap();
    let (_, _, _, message) = thrown(connect(&tools).await.unwrap_err());
    assert!(
        message.ends_with("the bridge refused the connection: missing or wrong page token"),
        "{message}"
    );
    assert_eq!(
        stringify(&get(&nth(&bridge, "connects", 2), "params")),
        "{}",
        "no token, no secret"
    );
}

#[wasm_bindgen_test]
async fn a_refused_reconnect_keeps_backing_off_and_warns_once() {
    let bridge = fake_bridge();
    clear_session();
    let tools =
        ClientTools::new(Some(endpoint_options(Some("page-s3cret")).unchecked_into())).unwrap();
    let record = recorder();
    tools
        .on(
            JsValue::from("warning").unchecked_into(),
            get(&record, "listener").unchecked_into(),
        )
        .unwrap();
    connect(&tools).await.unwrap();
    answer_with(
        &bridge,
        "refuse",
        &[(-32003).into(), "too many sessions".into()],
    );
    let drop_socket: js_sys::Function = get(&bridge, "drop").unchecked_into();
    drop_socket.call0(&bridge).unwrap();
    let watched = bridge.clone();
    wait_until("two refused reconnects", move || {
        count(&watched, "connects") >= 3
    })
    .await;
    assert_eq!(tools.connection_state(), "reconnecting");
    let warnings: Vec<String> = js_sys::Array::from(&get(&record, "seen"))
        .iter()
        .map(|v| v.as_string().unwrap())
        .collect();
    assert_eq!(
        warnings,
        ["warning:connect_failed"],
        "one warning per reason"
    );

    answer_with(&bridge, "accept", &[true.into()]);
    let page = tools.clone();
    wait_until("connected again", move || {
        page.connection_state() == "connected"
    })
    .await;
    tools.disconnect();
}

/// A call to `read_board_tasks` with id 7 after connecting with `resumed`; its result text.
async fn call_seven_after_connect(resumed: bool) -> String {
    let bridge = fake_bridge();
    clear_session();
    storage("client-tools:resume-secret", "old-secret".into());
    storage("client-tools:running-calls", r#"["7"]"#.into());
    answer_with(&bridge, "accept", &[resumed.into()]);
    let tools = ClientTools::new(Some(endpoint_options(None).unchecked_into())).unwrap();
    define(&tools, "read_board_tasks", JsValue::UNDEFINED).unwrap();
    connect(&tools).await.unwrap();
    assert_eq!(
        get(&get(&nth(&bridge, "connects", 0), "params"), "resumeSecret"),
        "old-secret"
    );
    deliver(
        &bridge,
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"read_board_tasks","arguments":{"boardId":"b1"}}}"#,
    );
    let answer = answer_to(&bridge, 7).await;
    tools.disconnect();
    get(&get(&get(&get(&answer, "result"), "content"), "0"), "text")
        .as_string()
        .unwrap()
}

#[wasm_bindgen_test]
async fn a_new_session_forgets_the_calls_interrupted_in_the_old_one() {
    let resumed = call_seven_after_connect(true).await;
    assert!(resumed.contains("was not run again"), "{resumed}");
    let fresh = call_seven_after_connect(false).await;
    assert!(fresh.contains("\"boardId\":\"b1\""), "{fresh}");
}

// --- the page never sends a frame the runtime would refuse (protocol::check_outgoing) -----------

/// A page with the tools `define` adds, then a recording transport attached and its `warning` codes
/// recorded.
fn page_with_recorded_frames(define: impl FnOnce(&ClientTools)) -> (ClientTools, JsValue, JsValue) {
    let tools = tools();
    define(&tools);
    let frames = frame_recorder();
    tools
        .attach_transport(get(&frames, "send").unchecked_into())
        .unwrap();
    let warnings = recorder();
    tools
        .on(
            JsValue::from("warning").unchecked_into(),
            get(&warnings, "listener").unchecked_into(),
        )
        .unwrap();
    (tools, frames, get(&warnings, "seen"))
}

fn define_with_handler(tools: &ClientTools, name: &str, handler: JsValue) {
    let extra = json(r#"{"parameters": {"type": "object"}}"#);
    js_sys::Reflect::set(&extra, &"handler".into(), &handler).unwrap();
    define(tools, name, extra).unwrap();
}

#[wasm_bindgen_test]
async fn a_result_over_the_frame_limit_becomes_one_error_result_naming_it() {
    let (tools, frames, warnings) = page_with_recorded_frames(|tools| {
        define_with_handler(tools, "huge", returning_huge(1_100_000));
        define_with_handler(tools, "deep", returning_nested(126));
    });
    let call = |id: u32, name: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{name}"}}}}"#
        )
    };

    tools.receive_frame(&call(3, "huge")).unwrap();
    let answer = next_frame(&frames).await;
    let first = stringify(&answer);
    assert_eq!(get(&answer, "id"), 3);
    let result = get(&answer, "result");
    assert_eq!(get(&result, "isError"), true);
    let text = get(&get(&get(&result, "content"), "0"), "text")
        .as_string()
        .unwrap();
    assert!(text.contains("1048576"), "{text}");
    assert!(text.len() < 1_000, "the error result is small");

    tools.receive_frame(&call(4, "deep")).unwrap();
    let answer = next_frame(&frames).await;
    assert_eq!(get(&answer, "id"), 4, "exactly one answer to call 3");
    let text = get(&get(&get(&get(&answer, "result"), "content"), "0"), "text")
        .as_string()
        .unwrap();
    assert!(text.contains("levels deep"), "{text}");

    // A re-send of the call gets the same (small) answer, without running the handler again.
    tools.receive_frame(&call(3, "huge")).unwrap();
    assert_eq!(stringify(&next_frame(&frames).await), first);

    tools
        .receive_frame(r#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#)
        .unwrap();
    assert_eq!(get(&next_frame(&frames).await, "id"), 5);
    let seen: Vec<String> = js_sys::Array::from(&warnings)
        .iter()
        .map(|v| v.as_string().unwrap())
        .collect();
    assert_eq!(seen, ["warning:frame_limit", "warning:frame_limit"]);
}

/// A call's W3C trace context (MCP 2026-07-28 `_meta.traceparent`, `tracestate`) reaches its
/// handler (`ctx.traceparent`, `ctx.tracestate`) and comes back in the result's `_meta`, an error
/// result's too; a malformed one is dropped with a `trace_context_invalid` warning and the call
/// goes on.
#[wasm_bindgen_test]
async fn a_calls_trace_context_reaches_its_handler_and_comes_back() {
    const PARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01";
    let (tools, frames, warnings) = page_with_recorded_frames(|tools| {
        define_with_handler(tools, "traced", trace_seen());
    });
    let call = |id: u32, meta: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"traced","_meta":{meta}}}}}"#
        )
    };
    let seen_and_sent = |answer: &JsValue| {
        let result = get(answer, "result");
        let seen = get(&result, "structuredContent");
        let meta = get(&result, "_meta");
        let sent = |key| match meta.is_undefined() {
            true => "none".to_owned(),
            false => get(&meta, key).as_string().unwrap_or("none".into()),
        };
        (
            get(&seen, "traceparent").as_string().unwrap_or_default(),
            get(&seen, "tracestate").as_string().unwrap_or_default(),
            sent("traceparent"),
            sent("tracestate"),
        )
    };

    let meta = format!(r#"{{"traceparent":"{PARENT}","tracestate":"congo=t61rcWkgMzE"}}"#);
    tools.receive_frame(&call(1, &meta)).unwrap();
    let answer = next_frame(&frames).await;
    let (parent, state) = (PARENT.to_owned(), "congo=t61rcWkgMzE".to_owned());
    let expected = (parent.clone(), state.clone(), parent.clone(), state.clone());
    assert_eq!(seen_and_sent(&answer), expected);

    // A traceparent alone: `ctx.tracestate` is undefined, the result has none.
    tools
        .receive_frame(&call(2, &format!(r#"{{"traceparent":"{PARENT}"}}"#)))
        .unwrap();
    let answer = next_frame(&frames).await;
    let undefined = "undefined".to_owned();
    let expected = (parent.clone(), undefined.clone(), parent, "none".to_owned());
    assert_eq!(seen_and_sent(&answer), expected);

    // An error result carries it too.
    let failing = PARENT.replace("-01", "-02");
    tools
        .receive_frame(&call(3, &format!(r#"{{"traceparent":"{failing}"}}"#)))
        .unwrap();
    let answer = next_frame(&frames).await;
    let result = get(&answer, "result");
    assert_eq!(get(&result, "isError"), true);
    assert_eq!(get(&get(&result, "_meta"), "traceparent"), failing.as_str());
    assert!(js_sys::Array::from(&warnings).length() == 0);

    // Malformed: dropped with a warning; the handler runs without it.
    let upper = PARENT.to_uppercase();
    let meta = format!(r#"{{"traceparent":"{upper}","tracestate":"a=b"}}"#);
    tools.receive_frame(&call(4, &meta)).unwrap();
    let answer = next_frame(&frames).await;
    assert_eq!(get(&get(&answer, "result"), "isError"), false);
    let none = "none".to_owned();
    let expected = (undefined.clone(), undefined, none.clone(), none);
    assert_eq!(seen_and_sent(&answer), expected);
    let seen: Vec<String> = js_sys::Array::from(&warnings)
        .iter()
        .map(|v| v.as_string().unwrap())
        .collect();
    assert_eq!(seen, ["warning:trace_context_invalid"]);
}

#[wasm_bindgen_test]
async fn a_tool_list_over_the_frame_limit_is_an_error_response() {
    let (tools, frames, warnings) = page_with_recorded_frames(|tools| {
        let extra = js_sys::Object::new();
        js_sys::Reflect::set(
            &extra,
            &"description".into(),
            &huge_string(1_100_000).into(),
        )
        .unwrap();
        define(tools, "verbose", extra.into()).unwrap();
    });
    tools
        .receive_frame(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#)
        .unwrap();
    let answer = next_frame(&frames).await;
    assert_eq!(get(&answer, "id"), 1);
    assert!(get(&answer, "result").is_undefined());
    let error = get(&answer, "error");
    assert_eq!(get(&error, "code"), -32603);
    let message = get(&error, "message").as_string().unwrap();
    assert!(message.contains("1048576"), "{message}");
    assert_eq!(js_sys::Array::from(&warnings).get(0), "warning:frame_limit");
}

#[wasm_bindgen_test]
async fn progress_over_the_frame_limit_is_dropped_with_a_warning() {
    let (tools, frames, warnings) = page_with_recorded_frames(|tools| {
        define_with_handler(tools, "chatty", progress_then(&huge_string(1_100_000)));
    });
    tools
        .receive_frame(
            r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"chatty","_meta":{"progressToken":"p9"}}}"#,
        )
        .unwrap();
    let progress = next_frame(&frames).await;
    assert_eq!(get(&progress, "method"), "notifications/progress");
    assert_eq!(get(&get(&progress, "params"), "message"), "halfway");
    let answer = next_frame(&frames).await;
    assert_eq!(
        get(&answer, "id"),
        9,
        "the over-limit progress was not sent"
    );
    assert_eq!(get(&get(&answer, "result"), "isError"), false);
    assert_eq!(js_sys::Array::from(&warnings).get(0), "warning:frame_limit");
}

#[wasm_bindgen_test]
async fn a_new_session_cancels_the_calls_still_running_for_the_old_one() {
    let bridge = fake_bridge();
    clear_session();
    let tools = ClientTools::new(Some(endpoint_options(None).unchecked_into())).unwrap();
    define_with_handler(&tools, "slow", never());
    let record = recorder();
    for event in ["toolactivated", "toolcancel"] {
        tools
            .on(
                JsValue::from(event).unchecked_into(),
                get(&record, "listener").unchecked_into(),
            )
            .unwrap();
    }
    // Two connect() calls at once: both resolve when the one attempt succeeds.
    let (first, second) = futures::join!(connect(&tools), connect(&tools));
    assert!(first.is_ok() && second.is_ok());
    assert_eq!(count(&bridge, "connects"), 1);
    assert_eq!(tools.session_id().as_deref(), Some("session-1"));
    deliver(
        &bridge,
        r#"{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"slow"}}"#,
    );
    let seen = get(&record, "seen");
    let activated = seen.clone();
    wait_until("the call to start", move || {
        js_sys::Array::from(&activated).includes(&"toolactivated:slow".into(), 0)
    })
    .await;

    // The runtime lost the session (restarted, or the session expired): a new one begins.
    answer_with(&bridge, "accept", &[false.into()]);
    let drop_socket: js_sys::Function = get(&bridge, "drop").unchecked_into();
    drop_socket.call0(&bridge).unwrap();
    let cancelled = seen.clone();
    wait_until("the old call to be cancelled", move || {
        js_sys::Array::from(&cancelled).includes(&"toolcancel:slow".into(), 0)
    })
    .await;
    assert!(last_signal_aborted());
    assert_eq!(tools.session_id().as_deref(), Some("session-2"));

    // Its id is never answered: it means nothing to the new session.
    deliver(&bridge, r#"{"jsonrpc":"2.0","id":12,"method":"ping"}"#);
    answer_to(&bridge, 12).await;
    let answered_eleven = js_sys::Array::from(&get(&bridge, "frames"))
        .iter()
        .any(|frame| get(&frame, "id") == 11);
    assert!(!answered_eleven);
    tools.disconnect();
}

/// A connected page needs no reference of its own to stay alive: a page that keeps none (`new
/// ClientTools(...)` in a module whose top level has run) still answers its agents until
/// `disconnect()`.
#[wasm_bindgen_test]
async fn a_connected_page_lives_without_a_reference_to_it() {
    let bridge = fake_bridge();
    clear_session();
    let tools = ClientTools::new(Some(endpoint_options(None).unchecked_into())).unwrap();
    connect(&tools).await.expect("the fake runtime accepts");
    drop(tools);
    deliver(&bridge, r#"{"jsonrpc":"2.0","id":41,"method":"ping"}"#);
    assert_eq!(
        stringify(&get(&answer_to(&bridge, 41).await, "result")),
        "{}"
    );
}

// --- resources, prompts and completion: the page answers for itself (SPEC §11) ------------------

#[wasm_bindgen_test]
async fn the_page_serves_its_resources_prompts_and_completions() {
    let checks = exercise_server(tools()).await;
    let checks = js_sys::Array::from(&checks);
    assert!(checks.length() > 30);
    for check in checks.iter() {
        let check = js_sys::Array::from(&check);
        let what = check.get(0).as_string().unwrap();
        assert_eq!(check.get(1).as_string(), check.get(2).as_string(), "{what}");
    }
}

#[wasm_bindgen_test]
async fn a_lost_connection_ends_what_its_runtime_watched() {
    let bridge = fake_bridge();
    clear_session();
    answer_with(&bridge, "accept", &[false.into()]);
    let tools = ClientTools::new(Some(endpoint_options(None).unchecked_into())).unwrap();
    let definition = json(r#"{"uri": "board://tasks", "name": "tasks"}"#);
    let read = js_sys::Function::new_no_args("return 'three tasks'");
    js_sys::Reflect::set(&definition, &"read".into(), &read).unwrap();
    tools.define_resource(definition.unchecked_into()).unwrap();
    connect(&tools).await.unwrap();
    deliver(
        &bridge,
        r#"{"jsonrpc":"2.0","id":5,"method":"resources/subscribe","params":{"uri":"board://tasks"}}"#,
    );
    assert_eq!(
        stringify(&get(&answer_to(&bridge, 5).await, "result")),
        "{}"
    );
    assert!(tools.resource_changed("board://tasks".into()).unwrap());

    answer_with(&bridge, "accept", &[true.into()]);
    let drop_socket: js_sys::Function = get(&bridge, "drop").unchecked_into();
    drop_socket.call0(&bridge).unwrap();
    // From the drop on, until the runtime subscribes again on the next connection.
    assert!(!tools.resource_changed("board://tasks".into()).unwrap());
    let page = tools.clone();
    wait_until("connected again", move || {
        page.connection_state() == "connected"
    })
    .await;
    assert!(!tools.resource_changed("board://tasks".into()).unwrap());
    deliver(
        &bridge,
        r#"{"jsonrpc":"2.0","id":6,"method":"resources/subscribe","params":{"uri":"board://tasks"}}"#,
    );
    answer_to(&bridge, 6).await;
    assert!(tools.resource_changed("board://tasks".into()).unwrap());
    tools.disconnect();
}

/// `concurrency: 1` (docs/api.md, *Calls that must not overlap*): two `invoke`s of the tool never
/// run at once — the second waits (`toolqueued`), then runs once the first ended; a tool without
/// it runs both at once. A bad `concurrency` throws naming it.
#[wasm_bindgen_test]
async fn a_tool_of_concurrency_one_runs_its_calls_one_after_the_other() {
    let tools = tools();
    let queued = recorder();
    let listener: js_sys::Function = get(&queued, "listener").unchecked_into();
    let mut events = Vec::new();
    for event in ["toolqueued", "toolactivated", "toolresult"] {
        let on = tools.on(
            JsValue::from(event).unchecked_into(),
            listener.clone().unchecked_into(),
        );
        events.push(on.unwrap());
    }
    let details = js_sys::Array::new();
    let keep = Closure::<dyn Fn(JsValue)>::new({
        let details = details.clone();
        move |event: JsValue| {
            details.push(&event);
        }
    });
    events.push(
        tools
            .on(
                JsValue::from("toolqueued").unchecked_into(),
                keep.as_ref().clone().unchecked_into(),
            )
            .unwrap(),
    );
    for (name, concurrency) in [("save", "1"), ("read", "null")] {
        let taker = turn_taker();
        let extra = json(&format!(
            r#"{{"parameters": null, "concurrency": {concurrency}}}"#
        ));
        js_sys::Reflect::set(&extra, &"handler".into(), &get(&taker, "handler")).unwrap();
        define(&tools, name, extra).unwrap();
        let call = |n: u32| -> js_sys::Promise {
            JsValue::from(tools.invoke(name, Some(json(&format!(r#"{{"n": {n}}}"#)))))
                .unchecked_into()
        };
        let (first, second) = (call(1), call(2));
        let held = get(&taker, "held");
        let count = move || js_sys::Array::from(&held).length();
        let started = count.clone();
        wait_until("the first call to start", move || started() >= 1).await;
        let release: js_sys::Function = get(&taker, "release").unchecked_into();
        if concurrency == "1" {
            // The second waits: it is queued, its handler not started, until the first ends.
            let seen = queued.clone();
            wait_until("the second call to be queued", move || {
                seen_by(&seen).contains(&"toolqueued:save".to_owned())
            })
            .await;
            assert_eq!(count(), 1, "the second call started while the first ran");
            release.call1(&JsValue::NULL, &0.into()).unwrap();
            let started = count.clone();
            wait_until("the second call to start", move || started() == 2).await;
        } else {
            let started = count.clone();
            wait_until("both calls to start", move || started() == 2).await;
            release.call1(&JsValue::NULL, &0.into()).unwrap();
        }
        release.call1(&JsValue::NULL, &1.into()).unwrap();
        for (n, promise) in [(1, first), (2, second)] {
            let result = JsFuture::from(promise).await.unwrap();
            assert_eq!(get(&get(&result, "structuredContent"), "n"), n, "{name}");
        }
        let most = get(&taker, "most").as_f64().unwrap();
        assert_eq!(most, if concurrency == "1" { 1.0 } else { 2.0 }, "{name}");
    }
    assert_eq!(
        seen_by(&queued),
        [
            "toolactivated:save",
            "toolqueued:save",
            "toolresult:save",
            "toolactivated:save",
            "toolresult:save",
            "toolactivated:read",
            "toolactivated:read",
            "toolresult:read",
            "toolresult:read",
        ]
    );
    assert_eq!(details.length(), 1);
    let detail = details.get(0);
    assert_eq!(get(&detail, "position"), 1);
    assert_eq!(get(&detail, "callId"), "local-2");
    assert_shape(
        "toolqueued",
        &detail,
        &typescript_members("ClientToolsEvents", Some("toolqueued")),
    );

    // Bad values throw at definition, naming the field; none defines a tool.
    for (bad, says) in [
        (
            "0",
            "concurrency must be a whole number from 1 to 4096, got 0",
        ),
        ("-2", "got -2"),
        ("1.5", "got 1.5"),
        ("1e9", "got 1000000000"),
        ("\"2\"", "'concurrency': expected a number, got string"),
    ] {
        let extra = json(&format!(r#"{{"concurrency": {bad}}}"#));
        let (_, type_error, code, message) = thrown(define(&tools, "bad", extra).unwrap_err());
        assert!(type_error && code == "INVALID_OPTIONS", "{bad}: {code}");
        assert!(
            message.contains("tool 'bad'") && message.contains(says),
            "{message}"
        );
    }
    let infinite = declaration("bad", JsValue::UNDEFINED);
    js_sys::Reflect::set(&infinite, &"concurrency".into(), &f64::INFINITY.into()).unwrap();
    let (_, _, _, message) = thrown(
        tools
            .define_function(infinite.unchecked_into())
            .unwrap_err(),
    );
    assert!(
        message.contains("'concurrency' must be a finite number"),
        "{message}"
    );
    assert!(!listed(&tools, "name", "kind")
        .iter()
        .any(|(name, _)| name == "bad"));
    drop(events);
}

/// `untrustedContentHint` (docs/api.md, *Results from content the tool does not vouch for*): what
/// `invoke` resolves with for a tool declared with it carries `_meta["clienttools/untrusted"]:
/// true`, even when its handler shaped the result with `false` there; another tool's result is
/// not marked, and a handler's own mark on it is kept.
#[wasm_bindgen_test]
async fn invoke_gives_the_untrusted_mark_of_a_tool_declared_so() {
    let tools = tools();
    let unmarking = json(
        r#"{"content": [{"type": "text", "text": "Loved it!"}],
            "_meta": {"clienttools/untrusted": false, "app/own": 1}}"#,
    );
    let self_marked = json(
        r#"{"content": [{"type": "text", "text": "a post"}],
            "_meta": {"clienttools/untrusted": true}}"#,
    );
    let cases = [
        (
            "reviews",
            r#"{"untrustedContentHint": true}"#,
            unmarking.clone(),
        ),
        ("plain", r#"{"untrustedContentHint": false}"#, unmarking),
        ("posts", r#"{"readOnlyHint": true}"#, self_marked),
    ];
    for (name, annotations, value) in cases {
        let extra = json(&format!(
            r#"{{"parameters": null, "annotations": {annotations}}}"#
        ));
        js_sys::Reflect::set(&extra, &"handler".into(), &returning(value)).unwrap();
        define(&tools, name, extra).unwrap();
    }
    let mark = |result: &JsValue| get(&get(result, "_meta"), "clienttools/untrusted");
    let (is_error, text, result) = invoke(&tools, "reviews", "{}").await;
    assert_eq!((is_error, text.as_str()), (false, "Loved it!"));
    assert_eq!(mark(&result), true);
    assert_eq!(get(&get(&result, "_meta"), "app/own"), 1);
    let (_, _, result) = invoke(&tools, "plain", "{}").await;
    assert_eq!(
        mark(&result),
        false,
        "the page's own value on a tool not declared so"
    );
    let (_, _, result) = invoke(&tools, "posts", "{}").await;
    assert_eq!(mark(&result), true);
}
