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
export function handlerContext(callId, call, toolName, originalName, report, traceparent, tracestate) {
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
    traceparent,
    tracestate,
  };
  ctx.reportProgress = (progress, total, message) => report(call, "progress", progress, total, message);
  ctx.log = (level, data, logger) => report(call, "log", String(level), data === undefined ? null : data, logger);
  // Its JSON text, or why there is none (a cycle, a BigInt, `undefined`): never a throw.
  ctx.partial = (value) => {
    let text, why;
    try {
      text = JSON.stringify(value);
      if (text === undefined) why = `${typeof value} has no JSON form`;
    } catch (error) {
      why = String((error && error.message) || error);
    }
    report(call, "partial", text, why);
  };
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

// The dialog and the forms (`src/ui/ui.js`, SPEC §7): imported when a call first needs a person,
// not with the module every page loads at `init`. The path is this file's own place in the package
// (`snippets/<crate>-<hash>/src/js.js`) back to the package's root, where `cargo xtask build` puts
// `src/ui/ui.js` (the test runner serves the crate's own file there); bundlers see a plain
// `import()` of a file of the package and make it a chunk of its own. After a failed load the next
// request imports it again (a browser may keep the failure until the page reloads).
let ui;
export function loadUi() {
  ui ??= import("../../../src/ui/ui.js").catch((error) => {
    ui = undefined;
    throw error;
  });
  return ui;
}

// ---- the page server (SPEC §11; `src/page_server.rs` binds it) -----------------------------------

// The page's resources, prompts and completion (SPEC §11): what `defineResource` and
// `definePrompt` add, and the answers to `resources/*`, `prompts/*` and `completion/complete`.
// The page engine runs each of those requests like a call — its timeout, cancellation, and a
// `ctx` with `signal`, `log`, `reportProgress` and the rounds of `elicit`/`input` — with `serve`
// as its handler, and sends what `serve` answers: `{result}` or `{error: {code, message, data?}}`.
// Written here rather than in Rust: it only checks and calls the page's own functions, and costs
// the package a fraction of the same code compiled to wasm.

// A completion answers at most this many values (MCP: "must not exceed 100 items").
const MAX_VALUES = 100;
// Resources the runtime may watch at once; more is an error naming the bound.
const MAX_SUBSCRIPTIONS = 256;
// `resourceChanged` calls within this window send one `notifications/resources/updated` per URI.
const UPDATE_DEBOUNCE_MS = 50;
// MCP's codes: an unknown resource (2025-11-25 recommends -32002), invalid params, an internal error.
const NOT_FOUND = -32002, INVALID = -32602, INTERNAL = -32603;

// What a page's wrong definition throws: a TypeError with the SDK's stable code.
const misuse = (message) => Object.assign(new TypeError(message), { code: "INVALID_DEFINITION" });
const rpcError = (code, message, data) =>
  Object.assign(new Error(message), { rpc: data === undefined ? { code, message } : { code, message, data } });
const kind = (v) => (v === null ? "null" : Array.isArray(v) ? "an array" : typeof v);
const isObject = (v) => typeof v === "object" && v !== null && !Array.isArray(v);
const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*:/;

function check(definition, what, fn, keys) {
  if (!isObject(definition)) throw misuse(`${what}: not an object (${kind(definition)})`);
  if (typeof definition.name !== "string" || !definition.name)
    throw misuse(`${what}: "name" must be a non-empty string`);
  for (const key of ["title", "description", "mimeType", ...keys])
    if (definition[key] !== undefined && typeof definition[key] !== "string")
      throw misuse(`${what} '${definition.name}': "${key}" is ${kind(definition[key])}, not a string`);
  if (typeof definition[fn] !== "function")
    throw misuse(`${what} '${definition.name}': "${fn}" must be a function`);
  if (definition.annotations !== undefined && !isObject(definition.annotations))
    throw misuse(`${what} '${definition.name}': "annotations" must be an object`);
}

// `complete: {name: fn}` may only name what `names` lists.
function checkComplete(definition, what, names) {
  const complete = definition.complete;
  if (complete === undefined) return {};
  if (!isObject(complete)) throw misuse(`${what} '${definition.name}': "complete" is not an object`);
  for (const key of Object.keys(complete)) {
    if (!names.includes(key)) throw misuse(`${what} '${definition.name}': complete.${key} names no variable or argument of it`);
    if (typeof complete[key] !== "function") throw misuse(`${what} '${definition.name}': complete.${key} must be a function`);
  }
  return complete;
}

// RFC 6570 `{var}` (a value without `/`, `?` or `#`) and `{+var}` (any text), percent-decoded;
// no value may be `.` or `..` or hold such a path segment, so a template never reaches out of
// its own path. Other operators are refused when the resource is defined.
function compileTemplate(template, name) {
  const vars = [];
  let pattern = "^";
  let last = 0;
  for (const m of template.matchAll(/\{([^}]*)\}/g)) {
    const [, body] = m;
    const reserved = body.startsWith("+");
    const varName = reserved ? body.slice(1) : body;
    if (!/^[A-Za-z0-9_]+$/.test(varName) || vars.includes(varName))
      throw misuse(`resource '${name}': "{${body}}" is not {name} or {+name} used once`);
    vars.push(varName);
    pattern += template.slice(last, m.index).replace(/[.*+?^$()|[\]\\{}]/g, "\\$&") + (reserved ? "(.+?)" : "([^/?#]+)");
    last = m.index + m[0].length;
  }
  if (!vars.length || /[{}]/.test(template.slice(last))) throw misuse(`resource '${name}': its uriTemplate has no {variable}`);
  pattern += template.slice(last).replace(/[.*+?^$()|[\]\\{}]/g, "\\$&") + "$";
  return { regex: new RegExp(pattern), vars };
}

function matchTemplate(entry, uri) {
  const m = entry.template.regex.exec(uri);
  if (!m) return null;
  const vars = {};
  entry.template.vars.forEach((name, i) => {
    let value;
    try { value = decodeURIComponent(m[i + 1]); } catch {
      throw rpcError(INVALID, `'${uri}': {${name}} is not valid percent-encoding`, { uri });
    }
    if (value.split(/[/\\]/).some((segment) => segment === "." || segment === ".."))
      throw rpcError(INVALID, `'${uri}': {${name}} may not hold a '.' or '..' segment`, { uri });
    vars[name] = value;
  });
  return vars;
}

// SPEC §2: a prompt's name as agents see it.
function normalize(original) {
  let out = "";
  for (const c of original.toLowerCase()) out += /^[a-z0-9_-]$/.test(c) ? c : "_";
  return Array.from(out).slice(0, 64).join("");
}

function bytesToBase64(bytes) {
  let text = "";
  for (let i = 0; i < bytes.length; i += 0x8000) text += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  return btoa(text);
}

// What `read` answered, as `contents`: a string, bytes, or `{contents: [...]}`.
function contentsOf(value, uri, mimeType) {
  if (typeof value === "string") return [{ uri, mimeType: mimeType || "text/plain", text: value }];
  if (value instanceof ArrayBuffer) value = new Uint8Array(value);
  if (ArrayBuffer.isView(value))
    return [{ uri, mimeType: mimeType || "application/octet-stream", blob: bytesToBase64(new Uint8Array(value.buffer, value.byteOffset, value.byteLength)) }];
  if (isObject(value) && Array.isArray(value.contents)) {
    return value.contents.map((item, i) => {
      if (!isObject(item) || (typeof item.text !== "string") === (typeof item.blob !== "string"))
        throw rpcError(INTERNAL, `reading '${uri}': contents[${i}] needs one string "text" or "blob"`);
      const out = Object.assign({ uri }, item);
      if (!out.mimeType && mimeType) out.mimeType = mimeType;
      return out;
    });
  }
  throw rpcError(INTERNAL, `reading '${uri}' answered ${kind(value)}, not a string, bytes or {contents}`);
}

// What `get` answered, as a GetPromptResult.
function promptResult(value, prompt) {
  if (typeof value === "string") value = { messages: [{ role: "user", content: { type: "text", text: value } }] };
  else if (Array.isArray(value)) value = { messages: value };
  if (!isObject(value) || !Array.isArray(value.messages))
    throw rpcError(INTERNAL, `prompt '${prompt.name}' answered ${kind(value)}, not {messages}, messages or a string`);
  value.messages.forEach((message, i) => {
    if (!isObject(message) || (message.role !== "user" && message.role !== "assistant") || !isObject(message.content) || typeof message.content.type !== "string")
      throw rpcError(INTERNAL, `prompt '${prompt.name}': messages[${i}] is not {role, content: {type}}`);
  });
  const result = { messages: value.messages };
  const description = value.description !== undefined ? value.description : prompt.definition.description;
  if (description !== undefined) result.description = description;
  return result;
}

function completionOf(value, where) {
  if (Array.isArray(value)) value = { values: value };
  if (!isObject(value) || !Array.isArray(value.values) || value.values.some((v) => typeof v !== "string"))
    throw rpcError(INTERNAL, `${where} answered ${kind(value)}, not strings or {values}`);
  const values = value.values.slice(0, MAX_VALUES);
  const total = Math.max(Number.isInteger(value.total) ? value.total : 0, value.values.length);
  return { completion: { values, total, hasMore: value.values.length > MAX_VALUES || total > values.length || value.hasMore === true } };
}

export function pageServer(report) {
  const resources = new Map(); // uri → definition
  const templates = []; // {definition, template, complete}
  const prompts = new Map(); // name → {name, definition, complete, args}
  const subscribed = new Set();
  const changed = new Set();
  let flush = null;
  let listsChanged = {};
  const notify = (method, params) => report(0, "notify", method, JSON.stringify(params));
  const listChanged = (which) => {
    if (!Object.keys(listsChanged).length)
      queueMicrotask(() => {
        for (const method of Object.keys(listsChanged)) notify(method, {});
        listsChanged = {};
      });
    listsChanged[`notifications/${which}/list_changed`] = true;
  };
  const listed = (definition, extra) => {
    const out = Object.assign({}, extra, { name: definition.name });
    for (const key of ["title", "description", "mimeType", "annotations"]) if (definition[key] !== undefined) out[key] = definition[key];
    return out;
  };
  const findTemplate = (uri) => {
    for (const entry of templates) {
      const vars = matchTemplate(entry, uri);
      if (vars) return { entry, vars };
    }
    return null;
  };
  const knownUri = (params) => {
    const uri = params.uri;
    if (typeof uri !== "string" || !SCHEME.test(uri)) throw rpcError(INVALID, `"uri" is not an absolute URI`);
    if (!resources.has(uri) && !findTemplate(uri)) throw rpcError(NOT_FOUND, `no resource '${uri}' on this page`, { uri });
    return uri;
  };
  const promptOf = (name) => {
    const prompt = typeof name === "string" && prompts.get(name);
    if (!prompt) throw rpcError(INVALID, `no prompt '${name}' on this page`);
    return prompt;
  };

  const methods = {
    "resources/list": () => ({ resources: Array.from(resources.values(), (d) => listed(d, { uri: d.uri })) }),
    "resources/templates/list": () => ({ resourceTemplates: templates.map((t) => listed(t.definition, { uriTemplate: t.definition.uriTemplate })) }),
    "resources/read": async (params, ctx) => {
      const uri = knownUri(params);
      const definition = resources.get(uri);
      const found = definition ? { entry: { definition }, vars: {} } : findTemplate(uri);
      const { read, mimeType } = found.entry.definition;
      return { contents: contentsOf(await read(uri, found.vars, ctx), uri, mimeType) };
    },
    "resources/subscribe": (params) => {
      const uri = knownUri(params);
      if (!subscribed.has(uri) && subscribed.size >= MAX_SUBSCRIPTIONS)
        throw rpcError(INVALID, `the page watches at most ${MAX_SUBSCRIPTIONS} resources at once`, { uri });
      subscribed.add(uri);
      return {};
    },
    "resources/unsubscribe": (params) => {
      subscribed.delete(params.uri);
      return {};
    },
    "prompts/list": () => ({
      prompts: Array.from(prompts.values(), (p) => {
        const out = listed(p.definition, {});
        out.name = p.name;
        if (p.args.length) out.arguments = p.args;
        out._meta = { "clienttools/originalName": p.definition.name };
        return out;
      }),
    }),
    "prompts/get": async (params, ctx) => {
      const prompt = promptOf(params.name);
      const args = params.arguments === undefined || params.arguments === null ? {} : params.arguments;
      if (!isObject(args)) throw rpcError(INVALID, `prompt '${prompt.name}': "arguments" is not an object`);
      for (const key of Object.keys(args)) {
        if (!prompt.args.some((a) => a.name === key)) throw rpcError(INVALID, `prompt '${prompt.name}' has no argument '${key}'`);
        if (typeof args[key] !== "string") throw rpcError(INVALID, `prompt '${prompt.name}': '${key}' is ${kind(args[key])}, not a string`);
      }
      for (const arg of prompt.args)
        if (arg.required && !Object.prototype.hasOwnProperty.call(args, arg.name)) throw rpcError(INVALID, `prompt '${prompt.name}' needs argument '${arg.name}'`);
      return promptResult(await prompt.definition.get(args, ctx), prompt);
    },
    "completion/complete": async (params, ctx) => {
      const ref = isObject(params.ref) ? params.ref : {};
      const argument = isObject(params.argument) ? params.argument : {};
      if (typeof argument.name !== "string" || typeof argument.value !== "string")
        throw rpcError(INVALID, `"argument" is not {name, value} (strings)`);
      let names, complete, where;
      if (ref.type === "ref/prompt") {
        const prompt = promptOf(ref.name);
        names = prompt.args.map((a) => a.name);
        complete = prompt.complete;
        where = `prompt '${prompt.name}'`;
      } else if (ref.type === "ref/resource") {
        const entry = templates.find((t) => t.definition.uriTemplate === ref.uri);
        if (!entry && !resources.has(ref.uri)) throw rpcError(NOT_FOUND, `no resource '${ref.uri}' on this page`, { uri: ref.uri });
        names = entry ? entry.template.vars : [];
        complete = entry ? entry.complete : {};
        where = `resource template '${ref.uri}'`;
      } else throw rpcError(INVALID, `"ref" is not ref/prompt or ref/resource`);
      if (!names.includes(argument.name)) throw rpcError(INVALID, `${where} has no argument '${argument.name}'`);
      const fn = complete[argument.name];
      if (!fn) return { completion: { values: [], total: 0, hasMore: false } };
      const context = isObject(params.context) && isObject(params.context.arguments) ? params.context.arguments : {};
      return completionOf(await fn(argument.value, { arguments: context, signal: ctx.signal }), `completing ${where}'s '${argument.name}'`);
    },
  };

  return {
    // The page engine's handler for the requests it serves.
    async serve(request, ctx) {
      const method = Object.prototype.hasOwnProperty.call(methods, request.method) && methods[request.method];
      try {
        if (!method) throw rpcError(-32601, `method not found: ${request.method}`);
        return { result: await method(isObject(request.params) ? request.params : {}, ctx) };
      } catch (thrown) {
        if (thrown && thrown.rpc) return { error: thrown.rpc };
        if (thrown && thrown.code === "CAPABILITY_MISSING")
          return { error: { code: -32021, message: thrown.message, data: { requiredCapabilities: thrown.requiredCapabilities || {} } } };
        const message = thrown instanceof Error ? thrown.message : String(thrown);
        return { error: { code: INTERNAL, message: `${request.method} failed on the page: ${message}` } };
      }
    },
    // The runtime's subscriptions belong to its connection (MCP: to its session): once it is
    // lost they end, and the runtime subscribes again on the next one.
    connectionChanged(event) {
      if (event.state !== "connected") {
        subscribed.clear();
        changed.clear();
      }
    },
    defineResource(definition) {
      check(definition, "defineResource", "read", ["uri", "uriTemplate"]);
      const { uri, uriTemplate } = definition;
      if ((uri === undefined) === (uriTemplate === undefined))
        throw misuse(`defineResource '${definition.name}': give "uri" or "uriTemplate"`);
      if (!SCHEME.test(uri || uriTemplate))
        throw misuse(`defineResource '${definition.name}': '${uri || uriTemplate}' has no scheme`);
      let remove;
      if (uri !== undefined) {
        if (definition.complete !== undefined) throw misuse(`defineResource '${definition.name}': "complete" needs a uriTemplate`);
        resources.set(uri, definition);
        remove = () => resources.get(uri) === definition && resources.delete(uri);
      } else {
        const template = compileTemplate(uriTemplate, definition.name);
        const entry = { definition, template, complete: checkComplete(definition, "defineResource", template.vars) };
        const at = templates.findIndex((t) => t.definition.uriTemplate === uriTemplate);
        if (at >= 0) templates[at] = entry;
        else templates.push(entry);
        remove = () => {
          const i = templates.indexOf(entry);
          return i >= 0 && templates.splice(i, 1).length > 0;
        };
      }
      listChanged("resources");
      return () => {
        const removed = remove();
        if (removed) listChanged("resources");
        return removed;
      };
    },
    definePrompt(definition) {
      check(definition, "definePrompt", "get", []);
      const args = definition.arguments === undefined ? [] : definition.arguments;
      if (!Array.isArray(args)) throw misuse(`definePrompt '${definition.name}': "arguments" must be an array`);
      const listedArgs = args.map((arg, i) => {
        if (!isObject(arg) || typeof arg.name !== "string" || !arg.name)
          throw misuse(`definePrompt '${definition.name}': arguments[${i}] has no name`);
        if (args.findIndex((a) => a.name === arg.name) !== i) throw misuse(`definePrompt '${definition.name}': argument '${arg.name}' listed twice`);
        const out = { name: arg.name };
        if (typeof arg.description === "string") out.description = arg.description;
        if (arg.required !== undefined) out.required = arg.required === true;
        return out;
      });
      const complete = checkComplete(definition, "definePrompt", listedArgs.map((a) => a.name));
      // SPEC §2, as for tools: the same original name replaces its prompt; another one that
      // normalizes alike gets the smallest free suffix.
      const base = normalize(definition.name);
      let name = base;
      for (const p of prompts.values()) if (p.definition.name === definition.name) name = p.name;
      for (let n = 2; prompts.has(name) && prompts.get(name).definition.name !== definition.name; n++)
        name = Array.from(base).slice(0, 64 - `_${n}`.length).join("") + `_${n}`;
      const prompt = { name, definition, complete, args: listedArgs };
      prompts.set(name, prompt);
      listChanged("prompts");
      return () => {
        const removed = prompts.get(name) === prompt && prompts.delete(name);
        if (removed) listChanged("prompts");
        return removed;
      };
    },
    resourceChanged(uri) {
      if (typeof uri !== "string") throw misuse(`resourceChanged: the URI is ${kind(uri)}`);
      if (!subscribed.has(uri)) return false;
      changed.add(uri);
      if (!flush)
        flush = setTimeout(() => {
          flush = null;
          for (const each of changed) notify("notifications/resources/updated", { uri: each });
          changed.clear();
        }, UPDATE_DEBOUNCE_MS);
      return true;
    },
  };
}

// "Always allow" (docs/api.md): approvals this origin keeps in localStorage, each for one tool's
// declaration (its text, written by the core, every object's keys sorted here) and one user. Any
// script of the origin can write there: what is read is checked, and what is not as written here is
// never trusted.
const APPROVALS = "client-tools:approvals", MAX_APPROVALS = 100, MAX_APPROVALS_TEXT = 200000;
let unusableSaid;

// The `sub` of a signed page token, read without checking its signature (the bridge checks it):
// only to keep one person's approvals from another's on a shared browser. null: no user. (Its UTF-8
// bytes as characters: compared, never shown.)
function tokenUser(token) {
  try {
    const { sub } = JSON.parse(atob(token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/")));
    return typeof sub == "string" && sub ? sub : null;
  } catch {
    return null;
  }
}

const sortKeys = (text) =>
  JSON.stringify(JSON.parse(text), (_, v) => (isObject(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : 1))) : v));
const short = (s) => typeof s == "string" && s && s.length <= 1024;
const isApproval = (e) =>
  isObject(e) && short(e.name) && typeof e.declaration == "string" && (e.user === null || short(e.user)) &&
  Number.isFinite(e.at);

// [the entries that pass, why some or all did not].
function readApprovals() {
  let data, why;
  try {
    const text = localStorage.getItem(APPROVALS);
    if (text === null) return [[]];
    data = text.length <= MAX_APPROVALS_TEXT ? JSON.parse(text) : 0;
  } catch {
    why = "not JSON";
  }
  why ??= isObject(data) && data.v === 1 && Array.isArray(data.entries) && data.entries.length <= MAX_APPROVALS
    ? undefined : "not {v: 1, entries} or too big";
  const entries = why ? [] : data.entries.filter(isApproval), bad = !why && data.entries.length - entries.length;
  if (bad) why = `${bad} of its ${data.entries.length} entries malformed`;
  return [entries, why && `localStorage "${APPROVALS}" ignored: ${why}`];
}

const writeApprovals = (entries) => localStorage.setItem(APPROVALS, JSON.stringify({ v: 1, entries }));

// Whether `token`'s user always allowed this declaration of tool `name`: {found, offer: true,
// warning} — or, where approvals cannot be kept (no localStorage), why (the first time): {warning}.
export function approvalFind(name, declaration, token) {
  try {
    localStorage.getItem(APPROVALS);
  } catch (e) {
    return { warning: unusableSaid ? undefined : (unusableSaid = `"Always allow" not offered: ${errorMessage(e)}`) };
  }
  const user = tokenUser(token), text = sortKeys(declaration);
  let [entries, warning] = readApprovals();
  const mine = entries.filter((e) => e.name === name && e.user === user);
  const found = mine.some((e) => e.declaration === text);
  if (!found && mine.length) warning ??= `approval kept for '${name}' is for another declaration`;
  return { found, offer: true, warning };
}

// Keeps the approval of this declaration of tool `name` for `token`'s user, what the call was asked
// about (replacing the tool's earlier one for that user; the oldest go past the bounds); one that
// cannot be written (quota) is said on the console.
export function approvalKeep(name, declaration, token) {
  try {
    const entry = { name, declaration: sortKeys(declaration), user: tokenUser(token), at: Date.now() };
    const entries = [...readApprovals()[0].filter((e) => e.name !== name || e.user !== entry.user), entry].slice(-MAX_APPROVALS);
    while (JSON.stringify(entries).length > 199e3) entries.shift();
    if (!entries.length) throw Error(`over ${MAX_APPROVALS_TEXT} characters`);
    writeApprovals(entries);
  } catch (e) {
    console.warn("client-tools: approval not kept:", e);
  }
}

// `tools.approvals` for `token`'s user (`known` false: a token function has given none yet, whose
// page it is is not known: nothing is listed or revoked).
export function approvalsApi(token, known) {
  const mine = (e) => known && e.user === tokenUser(token);
  return {
    list: () => readApprovals()[0].filter(mine).map((e) => ({ name: e.name, approvedAt: e.at })),
    revoke(name) {
      const entries = readApprovals()[0], kept = entries.filter((e) => !mine(e) || (name !== undefined && e.name !== name));
      if (kept.length < entries.length) writeApprovals(kept);
      return entries.length - kept.length;
    },
  };
}
