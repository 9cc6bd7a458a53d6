// The JavaScript side of `src/js.rs`: a few functions that cost the package less here than the
// same calls made one by one through `web-sys`.
function strictStringify(value) {
  return JSON.stringify(value, function (key, v) {
    const t = typeof v;
    if (t === "function" || t === "symbol") {
      const where = key === "" ? "the value" : `the value of "${key}"`;
      throw new TypeError(`${where} is a ${t}`);
    }
    return v;
  });
}
function mayLoseData(v, seen) {
  const t = typeof v;
  if (t === "function" || t === "symbol") return true;
  if (t !== "object" || v === null) return false;
  if (typeof v.toJSON === "function" || seen.includes(v)) return true;
  seen.push(v);
  for (const k in v) if (mayLoseData(v[k], seen)) return true;
  seen.pop();
  return false;
}
export function jsonText(value) {
  try {
    if (!mayLoseData(value, [])) return JSON.stringify(value);
  } catch {}
  return strictStringify(value);
}
const controllers = new WeakMap();
// A handler's requests to the agent (SPEC §11): those made in one turn of the event loop
// (`Promise.all([ctx.elicit(a), ctx.elicit(b)])`) go as one round; those made while a round waits
// go in the next one. Per ctx: {send, waiting, next}, a round being {requests, waiters}; a waiter
// is {keys: {its key: the round's key}, resolve, reject} (two callers' equal keys get `#2`, …).
const rounds = new WeakMap();
const own = (object, key) => Object.prototype.hasOwnProperty.call(object, key);
function sendNextRound(ctx) {
  const state = rounds.get(ctx);
  if (!state || state.waiting || !state.next) return;
  state.waiting = state.next;
  state.next = null;
  state.send(state.waiting.requests);
}
function failure(message, code, extra) {
  return Object.assign(new Error(message), { code }, extra);
}
// `report(call, what, a, b, c)`: the one function through which every ctx reaches the page engine.
// `ctx.signal` is made when first read: most handlers never read it, and an AbortController per
// call was a tenth of a small call's cost (BENCHMARKS.md, issue 25). An abort before the first read
// is kept, and the signal is born aborted with it.
export function handlerContext(callId, call, toolName, originalName, report) {
  const abort = { controller: null, reason: null };
  const ctx = {
    get signal() {
      if (!abort.controller) {
        abort.controller = new AbortController();
        if (abort.reason) abort.controller.abort(abort.reason);
      }
      return abort.controller.signal;
    },
    // A handler may put a signal of its own there (`ctx.signal = AbortSignal.any([...])`), as
    // it could when `signal` was a plain property.
    set signal(value) {
      Object.defineProperty(ctx, "signal", { value, writable: true, enumerable: true, configurable: true });
    },
    callId,
    toolName,
    originalName,
  };
  ctx.reportProgress = (progress, total, message) => report(call, "progress", progress, total, message);
  ctx.log = (level, data, logger) => report(call, "log", String(level), data === undefined ? null : data, logger);
  ctx.input = (requests) => {
    if (typeof requests !== "object" || requests === null || Array.isArray(requests) || !Object.keys(requests).length)
      return Promise.reject(new TypeError("ctx.input(requests) takes {key: {method, params}, …}"));
    let state = rounds.get(ctx);
    if (!state) rounds.set(ctx, (state = { send: (all) => report(call, "ask", JSON.stringify(all)), waiting: null, next: null }));
    if (!state.next) {
      state.next = { requests: {}, waiters: [] };
      queueMicrotask(() => sendNextRound(ctx));
    }
    const batch = state.next;
    const keys = {};
    for (const key of Object.keys(requests)) {
      let batchKey = key;
      for (let n = 2; own(batch.requests, batchKey); n++) batchKey = `${key}#${n}`;
      batch.requests[batchKey] = requests[key];
      keys[key] = batchKey;
    }
    return new Promise((resolve, reject) => batch.waiters.push({ keys, resolve, reject }));
  };
  const one = (method) => (params) => ctx.input({ [method]: { method, params } }).then((r) => r[method]);
  ctx.elicit = one("elicitation/create");
  ctx.createMessage = one("sampling/createMessage");
  ctx.listRoots = () => one("roots/list")({});
  controllers.set(ctx, abort);
  return ctx;
}
export function abortHandlerContext(ctx, reason) {
  const abort = controllers.get(ctx);
  if (abort.controller) abort.controller.abort(new Error(reason));
  else abort.reason = abort.reason || new Error(reason);
  settleRound(ctx, { Err: { code: 0, message: reason } });
  const state = rounds.get(ctx);
  if (state && state.next) {
    for (const waiter of state.next.waiters) waiter.reject(failure(reason, "AGENT_FAILED", {}));
    state.next = null;
  }
}
// The agent's answer to the round: `{Ok: {inputResponses: {key: …}}}`, or `{Err: {code, message, data}}`.
// Each waiter gets its own keys' answers, or the error; then the next round, if any, is sent.
export function settleRound(ctx, { Ok: result, Err: error }) {
  const state = rounds.get(ctx);
  if (!state || !state.waiting) return;
  const round = state.waiting;
  state.waiting = null;
  const responses = (result && result.inputResponses) || {};
  for (const { keys, resolve, reject } of round.waiters) {
    const answers = {};
    let missing;
    for (const key of Object.keys(keys)) {
      if (own(responses, keys[key])) answers[key] = responses[keys[key]];
      else if (missing === undefined) missing = keys[key];
    }
    if (!error && missing === undefined) {
      resolve(answers);
      continue;
    }
    const { code, message, data } = error || { message: `the agent's answer has no "${missing}"` };
    if (code === -32021)
      reject(failure(message, "CAPABILITY_MISSING", { requiredCapabilities: (data && data.requiredCapabilities) || {} }));
    else reject(failure(message, "AGENT_FAILED", {}));
  }
  sendNextRound(ctx);
}
// What a handler that threw says of a missing capability: the agent's request fails with it.
export function requiredCapabilities(thrown) {
  if (thrown && thrown.code === "CAPABILITY_MISSING") return JSON.stringify(thrown.requiredCapabilities || {});
}
export function dispatchToolEvent(type, detail) {
  if (typeof window === "undefined") return;
  const modelContext = window.document && window.document.modelContext;
  const target = modelContext instanceof EventTarget ? modelContext : window;
  target.dispatchEvent(new CustomEvent(type, { detail }));
}
export function typeName(value) {
  return value === null ? "null" : typeof value;
}
export function errorMessage(thrown) {
  if (thrown instanceof Error) return String(thrown.message);
  if (typeof thrown === "string") return thrown;
  if (thrown === undefined || thrown === null) return `the handler threw ${typeName(thrown)}`;
  let text;
  try { text = JSON.stringify(thrown); } catch {}
  return typeof text === "string" ? `the handler threw ${text}` : `the handler threw a ${typeName(thrown)}`;
}
// Which of a person's tabs is in front (SPEC §13): the runtime sends an agent's call there.
export function watchActivity(changed) {
  if (typeof document === "undefined") return;
  document.addEventListener("visibilitychange", changed);
  addEventListener("focus", changed);
  addEventListener("blur", changed);
}
export function activityNow() {
  if (typeof document === "undefined") return 3;
  return (document.visibilityState === "visible" ? 1 : 0) | (document.hasFocus() ? 2 : 0);
}
