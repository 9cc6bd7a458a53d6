// The demo's agent console: what the bridge sees of this page, and calls through it
// (`GET /api/sessions`, `POST /api/sessions/{id}/call`), as an agent or a script would. It declares
// form elicitation: when a handler asks (`ctx.elicit`), the call answers `input_required` and the
// console shows the question as a form, then calls again with the answer and the `requestState`
// (docs/api.md, *Rounds over `/api`*). It also declares the MCP tasks extension: a long call of a
// tool that allows it (one waiting on the page's dialog, a form, …) answers a task at once, which
// the console polls, answers and can cancel (docs/api.md, *Long calls as tasks*).
// Shared by the demo pages; each gives its ClientTools and the tool to preselect.

import { demoToken, demoUser } from "./demo_user.js";

const $ = (selector) => document.querySelector(selector);

export async function startConsole(tools, preselect) {
  // The console acts as an agent: `/api` wants the bridge's agent token (`Authorization: Bearer`).
  // `cargo xtask demo` prints `http://127.0.0.1:8787/#agent-token=<token>`: the token rides in the
  // URL fragment, which the browser never sends to a server. It is kept for this tab only (so a
  // reload works) and removed from the visible URL (screenshots, history, bookmarks).

  const AGENT_TOKEN_KEY = "taskboard-demo:agent-token";

  function takeAgentToken() {
    const fragment = new URLSearchParams(location.hash.slice(1));
    const given = fragment.get("agent-token");
    if (given === null) return sessionStorage.getItem(AGENT_TOKEN_KEY) || undefined;
    fragment.delete("agent-token");
    const rest = fragment.toString();
    history.replaceState(history.state, "", `${location.pathname}${location.search}${rest ? `#${rest}` : ""}`);
    if (given) sessionStorage.setItem(AGENT_TOKEN_KEY, given);
    return given || undefined;
  }
  // Opened as a user (`?user=alice`), the console acts for that user only: its agent token comes
  // from the demo's site backend (role "agent"), and the bridge shows it that user's tabs alone.
  const operatorToken = takeAgentToken();
  let agentToken = operatorToken;
  async function freshAgentToken() {
    if (demoUser) agentToken = await demoToken("agent");
    return agentToken;
  }

  const MISSING_TOKEN =
    "The bridge wants its agent token (401). Open the link `cargo xtask demo` printed " +
    "(http://127.0.0.1:8787/#agent-token=…); the token stays in this tab, never in a request URL.";

  /** A `/api` request as an agent; resolves to the parsed JSON, or throws a readable Error. */
  async function api(path, init = {}) {
    const headers = new Headers(init.headers);
    const token = await freshAgentToken();
    if (token) headers.set("authorization", `Bearer ${token}`);
    const response = await fetch(path, { ...init, headers });
    if (response.status === 401) {
      throw new Error(agentToken ? `the bridge refused the agent token (401): ${await response.text()}` : MISSING_TOKEN);
    }
    if (!response.ok) throw new Error(`${response.status} ${response.statusText}: ${await response.text()}`);
    return response.json();
  }

  const log = $("#log");
  function logEntry(kind, title, body, images = []) {
    const item = document.createElement("li");
    item.className = `entry ${kind}`;
    const head = document.createElement("div");
    head.className = "entry-head";
    head.textContent = title;
    const pre = document.createElement("pre");
    pre.textContent = body;
    item.append(head, ...images, pre);
    log.prepend(item);
    return item;
  }

  // Raster types only: a picture a tool returns is shown, never run (no SVG).
  const PICTURES = ["image/png", "image/jpeg", "image/gif", "image/webp"];

  /** The image blocks of an MCP result as `<img>` elements, and the result with their data cut
   *  short for the log's text. */
  function pictures(result) {
    const images = [];
    const content = (Array.isArray(result.content) ? result.content : []).map((block) => {
      if (block?.type !== "image" || !PICTURES.includes(block.mimeType) || typeof block.data !== "string") return block;
      const image = document.createElement("img");
      image.className = "result-image";
      image.alt = "an image the tool returned";
      image.src = `data:${block.mimeType};base64,${block.data}`;
      images.push(image);
      return { ...block, data: `(${block.data.length} base64 characters, shown above)` };
    });
    return { images, shown: images.length ? { ...result, content } : result };
  }

  function showAgentToken() {
    if (demoUser) $("#call-target-label").hidden = false;
    const status = $("#agent-token");
    status.dataset.state = agentToken || demoUser ? "present" : "missing";
    status.textContent = demoUser
      ? `Acting for ${demoUser}: an agent token the demo's site backend signed for ${demoUser} (it sees ${demoUser}'s tabs only).`
      : agentToken
      ? "Agent token: from the demo link (kept in this tab only)."
      : "Agent token: missing. If the bridge has one, open the link `cargo xtask demo` printed (…/#agent-token=…).";
  }

  function showSession() {
    $("#session-id").textContent = tools.sessionId ?? "…";
  }

  tools.on("connectionchange", ({ state }) => {
    $("#connection").dataset.state = state;
    $("#connection-text").textContent = state;
    showSession();
    if (state === "connected") setTimeout(refreshTools, 150);
  });
  tools.on("toolschanged", () => setTimeout(refreshTools, 150));
  // A call in this tab is listed once: its entry, by call id, is replaced in place as it goes on —
  // waiting for its turn (a tool's `concurrency`), running, then its outcome (a result, or a
  // cancel).
  const running = new Map();
  function callEntry(callId, kind, title, body) {
    const entry = running.get(callId);
    const now = logEntry(kind, title, body);
    if (entry?.isConnected) entry.replaceWith(now);
    return now;
  }
  function callEnded(callId, kind, title, body) {
    callEntry(callId, kind, title, body);
    running.delete(callId);
  }
  tools.on("toolqueued", ({ toolName, callId, position }) =>
    running.set(callId, callEntry(callId, "queued", `⏸ ${toolName} (call ${callId})`, `waiting for its turn: ${position} in line when it came`)));
  tools.on("toolactivated", ({ toolName, callId }) =>
    running.set(callId, callEntry(callId, "activated", `▶ ${toolName} (call ${callId})`, "handler running in this tab")));
  tools.on("toolresult", ({ toolName, callId, isError, durationMs }) =>
    callEnded(callId, isError ? "error" : "ok", `${isError ? "✖" : "✔"} ${toolName} (call ${callId})`, `${durationMs.toFixed(1)} ms in the page`));
  tools.on("toolcancel", ({ toolName, callId, reason }) =>
    callEnded(callId, "error", `⊘ ${toolName} (call ${callId}) cancelled`, String(reason ?? "")));
  tools.on("warning", ({ message }) => logEntry("warning", "warning", message));

  let reportedApiError = "";
  async function refreshTools() {
    const list = $("#tools");
    const select = $("#call-name");
    let sessions;
    try {
      sessions = await api("/api/sessions");
    } catch (error) {
      list.replaceChildren(muted(error.message));
      if (error.message !== reportedApiError) logEntry("error", "GET /api/sessions failed", error.message);
      reportedApiError = error.message;
      return;
    }
    reportedApiError = "";
    const mine = tools.sessionId && sessions.find((s) => s.id === tools.sessionId);
    list.replaceChildren();
    select.replaceChildren();
    if (demoUser) {
      const tabs = sessions.filter((s) => s.connected);
      $("#user-tabs").textContent = `${demoUser}'s open tabs the bridge shows this console: ${tabs.length}`;
    }
    if (!mine) {
      list.append(muted("the bridge does not know this page yet"));
      return;
    }
    for (const tool of mine.tools) {
      const item = document.createElement("li");
      const name = document.createElement("code");
      name.textContent = tool.name;
      const description = document.createElement("span");
      description.textContent = tool.description || "";
      item.append(name, description);
      list.append(item);
      select.append(new Option(tool.name, tool.name, false, tool.name === preselect));
    }
    await refreshResources(mine.id);
  }

  // The page's resources (SPEC §11), each with a button that reads it as an agent would.
  async function refreshResources(sessionId) {
    const list = $("#resources");
    if (!list) return;
    const base = `/api/sessions/${encodeURIComponent(sessionId)}/resources`;
    let listed;
    try {
      listed = await api(base);
    } catch (error) {
      list.replaceChildren(muted(error.message));
      return;
    }
    list.replaceChildren();
    if (!listed.resources.length) list.append(muted("this page offers no resources"));
    for (const resource of listed.resources) {
      const item = document.createElement("li");
      const read = document.createElement("button");
      read.type = "button";
      read.textContent = "Read";
      read.addEventListener("click", async () => {
        const body = { uri: resource.uri };
        logEntry("request", `→ POST ${base}/read`, JSON.stringify(body, null, 2));
        try {
          const result = await api(`${base}/read`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify(body),
          });
          if (result.error) throw new Error(`${result.error.code}: ${result.error.message}`);
          const text = result.contents.map((c) => c.text ?? `(${c.mimeType}, ${c.blob.length} base64 characters)`).join("\n");
          logEntry("result", `✔ ${resource.uri}`, text);
        } catch (error) {
          logEntry("error", `✖ ${resource.uri}`, error.message);
        }
      });
      const name = document.createElement("code");
      name.textContent = resource.uri;
      const description = document.createElement("span");
      description.textContent = resource.description || resource.name;
      item.append(name, description, read);
      list.append(item);
    }
  }

  function muted(text) {
    const item = document.createElement("li");
    item.className = "muted";
    item.textContent = text;
    return item;
  }

  $("#call-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const name = $("#call-name").value;
    let args;
    try {
      args = JSON.parse($("#call-args").value || "{}");
    } catch (error) {
      logEntry("error", "arguments are not JSON", String(error.message));
      return;
    }
    const sessionId = tools.sessionId;
    if (!sessionId) {
      logEntry("error", "not connected", "this page has no session with the bridge yet");
      return;
    }
    // As a user, "the tab in front" runs the call on whichever of the user's tabs offers the tool
    // and was in front last (SPEC §13): try it with two tabs open.
    const anyTab = demoUser && $("#call-target")?.value === "user";
    const path = anyTab
      ? `/api/users/${encodeURIComponent(demoUser)}/call`
      : `/api/sessions/${encodeURIComponent(sessionId)}/call`;
    let body = { name, arguments: args, capabilities: CAPABILITIES };
    try {
      for (;;) {
        logEntry("request", `→ POST ${path}`, JSON.stringify(body, null, 2));
        const result = await api(path, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(body),
        });
        if (result.resultType === "task") {
          await followTask(sessionId, result);
          return;
        }
        if (result.resultType !== "input_required") {
          showResult(result.isError ? "error" : "result", `← result${result.isError ? " (isError)" : ""}`, result);
          return;
        }
        logEntry("asked", "← input required: the handler asks", JSON.stringify(result.inputRequests, null, 2));
        const inputResponses = {};
        for (const [key, request] of Object.entries(result.inputRequests)) {
          inputResponses[key] = await answer(request);
        }
        body = { name, arguments: args, capabilities: CAPABILITIES, inputResponses, requestState: result.requestState };
      }
    } catch (error) {
      logEntry("error", `← POST ${path} failed`, error.message);
    }
  });

  /** The bridge's guardrails that acted on a call: `_meta["clienttools/policy"]` lists them. */
  function showPolicy(result) {
    const acted = result._meta?.["clienttools/policy"];
    if (!Array.isArray(acted) || acted.length === 0) return;
    const lines = acted.map(({ rule, action }) => `rule "${rule}": ${action}`);
    logEntry("policy", `⛨ the bridge's policy acted (${acted.length})`, lines.join("\n"));
  }

  /** A call's outcome in the log: its pictures shown, and the guardrails that acted on it. */
  function showResult(kind, title, result) {
    const { images, shown } = pictures(result);
    logEntry(kind, title, JSON.stringify(shown, null, 2), images);
    showPolicy(result);
  }

  // What the console can answer when a handler asks: form elicitation (a person at this console);
  // and it takes long calls as tasks.
  const CAPABILITIES = { elicitation: { form: {} }, extensions: { "io.modelcontextprotocol/tasks": {} } };

  /** Polls a task until it ends, answering what it waits on; a button cancels it. */
  async function followTask(sessionId, created) {
    const path = `/api/sessions/${encodeURIComponent(sessionId)}/tasks/${encodeURIComponent(created.taskId)}`;
    logEntry("asked", `← task ${created.taskId} (${created.status}): the call goes on without this request`, JSON.stringify(created, null, 2));
    const cancel = document.createElement("button");
    cancel.type = "button";
    cancel.id = "cancel-task";
    cancel.textContent = "Cancel the task";
    cancel.addEventListener("click", () => api(`${path}/cancel`, { method: "POST" }).catch((error) => logEntry("error", "cancel failed", error.message)));
    log.firstElementChild.append(cancel);
    // A request answered already, by key and text, until the task stops waiting: the same key may
    // ask again in a later round (every `ctx.elicit` is "elicitation/create").
    const answered = new Set();
    try {
      for (;;) {
        await new Promise((resolve) => setTimeout(resolve, created.pollIntervalMs ?? 500));
        const task = await api(path);
        if (["completed", "failed", "cancelled"].includes(task.status)) {
          const failed = task.status !== "completed" || task.result?.isError;
          showResult(failed ? "error" : "result", `← task ${task.status}`, task.result ?? task.error ?? task);
          return;
        }
        if (task.status !== "input_required") answered.clear();
        for (const [key, request] of Object.entries(task.inputRequests ?? {})) {
          const asked = `${key}\n${JSON.stringify(request)}`;
          if (answered.has(asked)) continue;
          answered.add(asked);
          logEntry("asked", "← the task waits for input", JSON.stringify({ [key]: request }, null, 2));
          const inputResponses = { [key]: await answer(request) };
          await api(`${path}/update`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ inputResponses }) });
        }
      }
    } finally {
      cancel.remove();
    }
  }

  /** The console's answer to one of a handler's requests: an elicitation as a form. */
  function answer(request) {
    if (request.method !== "elicitation/create") {
      // Not declared, so the bridge never asks; should it, the whole round is declined.
      return Promise.resolve({ action: "decline" });
    }
    return new Promise((resolve) => showQuestion(request.params ?? {}, resolve));
  }

  /** Shows an elicitation's message and a form from its `requestedSchema` (string, number,
   * integer, boolean and enum fields), resolving with `{action, content?}` once the person
   * accepts, declines or cancels. */
  function showQuestion(params, resolve) {
    const form = document.createElement("form");
    form.className = "ask";
    form.id = "ask";
    const message = document.createElement("p");
    message.className = "ask-message";
    message.textContent = params.message ?? "";
    form.append(message);
    const schema = params.requestedSchema ?? {};
    const required = new Set(schema.required ?? []);
    const fields = [];
    for (const [key, property] of Object.entries(schema.properties ?? {})) {
      const label = document.createElement("label");
      label.textContent = property.title ?? key;
      const field = fieldFor(property);
      field.name = key;
      field.required = required.has(key) && field.type !== "checkbox";
      label.append(field);
      if (property.description) label.title = property.description;
      form.append(label);
      fields.push([key, property, field]);
    }
    const buttons = document.createElement("div");
    buttons.className = "ask-buttons";
    for (const action of ["accept", "decline", "cancel"]) {
      const button = document.createElement("button");
      button.type = action === "accept" ? "submit" : "button";
      button.value = action;
      button.textContent = action[0].toUpperCase() + action.slice(1);
      if (action !== "accept") button.addEventListener("click", () => done({ action }));
      buttons.append(button);
    }
    form.append(buttons);
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const content = {};
      for (const [key, property, field] of fields) {
        const value = valueOf(property, field);
        if (value !== undefined) content[key] = value;
      }
      done({ action: "accept", content });
    });
    function done(result) {
      form.remove();
      logEntry("request", `→ answer: ${result.action}`, JSON.stringify(result, null, 2));
      resolve(result);
    }
    $("#call-form").after(form);
    (form.querySelector("input, select") ?? form.querySelector("button")).focus();
  }

  /** An input for one property of a `requestedSchema`. */
  function fieldFor(property) {
    const choices = property.enum ?? property.oneOf?.map((choice) => choice.const);
    if (Array.isArray(choices)) {
      const select = document.createElement("select");
      const titles = property.enumNames ?? property.oneOf?.map((choice) => choice.title);
      choices.forEach((choice, i) => select.append(new Option(titles?.[i] ?? String(choice), String(choice), false, choice === property.default)));
      return select;
    }
    const input = document.createElement("input");
    if (property.type === "boolean") {
      input.type = "checkbox";
      input.checked = property.default === true;
    } else if (property.type === "number" || property.type === "integer") {
      input.type = "number";
      input.step = property.type === "integer" ? "1" : "any";
      if (property.minimum !== undefined) input.min = property.minimum;
      if (property.maximum !== undefined) input.max = property.maximum;
      if (property.default !== undefined) input.value = property.default;
    } else {
      input.type = property.format === "email" ? "email" : "text";
      if (property.maxLength !== undefined) input.maxLength = property.maxLength;
      if (property.default !== undefined) input.value = property.default;
    }
    return input;
  }

  /** A field's value as its property's type; `undefined` for an empty optional field. */
  function valueOf(property, field) {
    if (field.type === "checkbox") return field.checked;
    if (field.value === "" && !field.required) return undefined;
    if (property.type === "number" || property.type === "integer") return Number(field.value);
    const choices = property.enum ?? property.oneOf?.map((choice) => choice.const);
    if (Array.isArray(choices)) return choices.find((choice) => String(choice) === field.value);
    return field.value;
  }

  showAgentToken();
  showSession();
  window.tools = tools;
  try {
    await tools.connect();
  } catch (error) {
    logEntry("error", "could not connect to the bridge", error.message);
  }
}
