// The test page: each runtime's own client library, given the page's tools by the package's
// adapter, against the local server (server.mjs). `window.scenarios.<runtime>()` runs one turn
// and resolves to what the library saw and what the runtime's server received.

import init, { ClientTools } from "client-tools";
import { agUiSubscriber, agUiTools } from "client-tools/ag-ui";
import { aiSdkOnToolCall, aiSdkTools } from "client-tools/ai-sdk";
import { elevenLabsClientTools } from "client-tools/elevenlabs";
import { realtimeHandler, realtimeTools } from "client-tools/openai-realtime";
import { uiPathToolCalls } from "client-tools/uipath";

import { HttpAgent } from "@ag-ui/client";
import { Conversation } from "@elevenlabs/client";
import { AbstractChat, DefaultChatTransport, lastAssistantMessageIsCompleteWithToolCalls } from "ai";
import OpenAI from "openai";
import { OpenAIRealtimeWebSocket } from "openai/realtime/websocket";
import { UiPath } from "@uipath/uipath-typescript/core";
import {
  ConversationalAgent,
  ToolCallEventHelper,
  ToolCallEventHelperImpl,
} from "@uipath/uipath-typescript/conversational-agent";

import { UIPATH } from "./fixtures.mjs";

await init();

/** What went wrong on the page outside any scenario's own reporting: uncaught exceptions and
 * unhandled rejections (where `@uipath/uipath-typescript` reports a session error no listener
 * handled). Each scenario returns those of its run; none may happen. */
const pageErrors = [];
window.pageErrors = pageErrors;
const described = (error) => (error?.stack?.includes(error.message) ? error.stack : `${error?.message ?? error}\n${error?.stack ?? ""}`);
window.addEventListener("error", (e) => pageErrors.push(`uncaught: ${described(e.error ?? e.message)}`));
/** The rejections `reported()` makes, each with what resolves its wait. */
const markers = new Map();
window.addEventListener("unhandledrejection", (e) => {
  const reported = markers.get(e.reason);
  if (reported) {
    e.preventDefault();
    markers.delete(e.reason);
    return reported();
  }
  pageErrors.push(`unhandled rejection: ${described(e.reason)}`);
});
/** Resolves once every promise rejected so far and not handled has had its `unhandledrejection`
 * (in `pageErrors`): it rejects one of its own, unhandled, and waits for that one's event. The
 * browser fires them in the order the promises were rejected (HTML, "notify about rejected
 * promises": one list, in order, its tasks on one task source), so the others' came first. A
 * timer is no such wait: the browser may run it first (Chromium does, for a promise rejected in
 * the same turn). */
const reported = () =>
  new Promise((resolve) => {
    const marker = new Error("client-tools test: every rejection reported");
    markers.set(marker, resolve);
    void Promise.reject(marker);
  });
window.reported = reported;

/** The page's tools: a sum, a tool the person must confirm (and rejects), and `late_tool`,
 * defined once the first call starts (a tool list that changes during the session). */
function pageTools(
  tools = new ClientTools({
    forms: false,
    exposeToBrowser: false,
    confirm: () => ({ action: "reject", reason: "not now" }),
  }),
) {
  tools.defineFunction({
    name: "add_numbers",
    description: "Adds two numbers",
    parameters: {
      type: "object",
      properties: { a: { type: "number" }, b: { type: "number" } },
      required: ["a", "b"],
    },
    handler: ({ a, b }) => ({ sum: a + b }),
  });
  tools.defineFunction({
    name: "wipe_board",
    description: "Clears the board",
    parameters: { type: "object", properties: {} },
    requireConfirmation: true,
    handler: () => "wiped",
  });
  const events = [];
  for (const type of ["toolactivated", "toolresult"]) tools.on(type, (e) => events.push(`${e.type} ${e.toolName}`));
  const stop = tools.on("toolactivated", () => {
    stop();
    tools.defineFunction({
      name: "late_tool",
      description: "Echoes a word",
      parameters: { type: "object", properties: { word: { type: "string" } }, required: ["word"] },
      // Its results are marked (`_meta["clienttools/untrusted"]`): the adapters pass the mark on
      // where their runtime has a place for it (AG-UI's message metadata, UiPath's metaData).
      annotations: { untrustedContentHint: true },
      handler: ({ word }) => `echo ${word}`,
    });
  });
  return { tools, events };
}

async function recorded(key) {
  return (await (await fetch("/record")).json())[key];
}

async function until(what, condition, ms = 15000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await condition();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function agUi() {
  const { tools, events } = pageTools();
  const agent = new HttpAgent({ url: "/ag-ui" });
  agent.subscribe(agUiSubscriber(tools, agent));
  await agent.runAgent({ tools: agUiTools(tools) });
  // The subscriber runs the agent again on its own: wait for the run that ends in text.
  const runs = await until("three runs", async () => {
    const got = await recorded("agUi");
    return got.length >= 3 && agent.messages.some((m) => m.role === "assistant" && m.content === "All done.") && got;
  });
  return { messages: agent.messages, runs, events };
}

async function elevenLabsTurn() {
  const { tools, events } = pageTools();
  const clientTools = elevenLabsClientTools(tools);
  const errors = [];
  const conversation = await Conversation.startSession({
    signedUrl: `wss://${location.host}/elevenlabs`,
    connectionType: "websocket",
    textOnly: true,
    clientTools,
    onError: (message) => errors.push(message),
  });
  const results = () =>
    recorded("elevenLabs").then((got) => got.filter((m) => m.type === "client_tool_result"));
  await until("three client_tool_result", async () => (await results()).length >= 3);
  conversation.sendContextualUpdate("late_tool defined");
  const received = await until("four client_tool_result", async () => {
    const got = await results();
    return got.length >= 4 && got;
  });
  await conversation.endSession();
  return { received, errors, events, clientTools: Object.keys(clientTools).sort() };
}

/** OpenAI Realtime; `model` "gpt-realtime-busy": the server begins a response of its own as it
 * reads the handler's first `response.create`, and refuses that one (server.mjs). */
async function openAiRealtime(model = "gpt-realtime") {
  const { tools, events } = pageTools();
  const client = new OpenAI({ apiKey: "sk-local", baseURL: `https://${location.host}/v1`, dangerouslyAllowBrowser: true });
  const rt = new OpenAIRealtimeWebSocket({ model, dangerouslyAllowBrowser: true }, client);
  const failures = [];
  rt.on("error", (error) => failures.push(String(error?.message ?? error)));
  const handler = realtimeHandler(tools, (event) => rt.send(event));
  rt.on("event", handler);
  const ended = [];
  rt.on("response.done", (event) => ended.push(event.response.id));
  await new Promise((resolve) => rt.socket.addEventListener("open", resolve, { once: true }));
  rt.send({ type: "session.update", session: { type: "realtime", tools: realtimeTools(tools) } });
  // The fourth response is the text after the late call's output: once it ended (the handler saw
  // its `response.done` first), a last client event goes out, and when the server has it, it has
  // everything the handler sent before.
  await until("the fourth response", () => ended.includes("resp_4"));
  rt.send({ type: "input_audio_buffer.clear" });
  const received = await until("the last client event", async () => {
    const got = await recorded(model === "gpt-realtime-busy" ? "realtimeRefused" : "realtime");
    return got.some((m) => m.type === "input_audio_buffer.clear") && got;
  });
  handler.stop();
  rt.close();
  return { received, failures, events };
}

/** The AI SDK's `ChatState`, kept in plain fields (what `ai`'s own chat tests do; the framework
 * packages keep it in React, Vue or Svelte state). */
class PlainState {
  status = "ready";
  error = undefined;
  messages = [];
  pushMessage = (message) => void (this.messages = [...this.messages, message]);
  popMessage = () => void (this.messages = this.messages.slice(0, -1));
  replaceMessage = (index, message) =>
    void (this.messages = this.messages.map((m, i) => (i === index ? message : m)));
  snapshot = (thing) => structuredClone(thing);
}
class Chat extends AbstractChat {
  constructor(init) {
    super({ ...init, state: new PlainState() });
  }
}

async function aiSdk() {
  const { tools, events } = pageTools();
  const errors = [];
  const chat = new Chat({
    transport: new DefaultChatTransport({ api: "/chat", body: () => ({ tools: aiSdkTools(tools) }) }),
    onToolCall: aiSdkOnToolCall(tools, (output) => chat.addToolOutput(output)),
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithToolCalls,
    onError: (error) => errors.push(String(error)),
  });
  await chat.sendMessage({ text: "Add 2 and 3, and clear the board" });
  const requests = await until("the answer in text", async () => {
    const got = await recorded("aiSdk");
    const last = chat.messages.at(-1);
    return (
      chat.status === "ready" &&
      last?.role === "assistant" &&
      last.parts.some((p) => p.type === "text" && p.text === "All done.") &&
      got
    );
  });
  return { messages: chat.messages, requests, errors, events };
}

/** What the person decides, in the `confirm` callback (1.3.8) or the dialog (the later releases):
 * the page's own question about `wipe_board` is rejected; of the runtime's confirmations of
 * `add_numbers`, the one with `a: 1` is approved with `b` changed to 41, those with `a: 10` and
 * `a: 6` approved as they are, the other refused. Each question is noted in `asked`. */
const asked = [];
function decide(toolName, input) {
  asked.push(`${toolName} ${JSON.stringify(input)}`);
  if (toolName === "wipe_board") return { action: "reject", reason: "not now" };
  if (input.a === 1) return { action: "modify", input: { ...input, b: 41 } };
  if (input.a === 10 || input.a === 6) return { action: "approve" };
  return { action: "reject", reason: "not this one" };
}

/** The page's tools for UiPath: `pageTools()`'s, and `wait_for_signal`, whose handler runs until
 * its `ctx.signal` aborts (and tells the runtime's server it runs). */
function uiPathPage(options) {
  const { tools, events } = pageTools(new ClientTools({ forms: false, exposeToBrowser: false, ...options }));
  tools.on("toolcancel", (e) => events.push(`toolcancel ${e.toolName}: ${e.reason}`));
  const aborts = {};
  const running = new Set();
  tools.defineFunction({
    name: "wait_for_signal",
    description: "Runs until it is stopped",
    parameters: { type: "object", properties: {} },
    handler: (_input, ctx) =>
      new Promise((resolve) => {
        running.add(ctx.callId);
        ctx.signal.addEventListener("abort", () => {
          aborts[ctx.callId] = ctx.signal.reason.message;
          resolve("stopped");
        });
        void fetch(`/uipath/running/${ctx.callId}`, { method: "POST" });
      }),
  });
  return { tools, events, aborts, running };
}

/** The person at the built-in dialog: answers each request as `decide` says (`confirmations`
 * false: result forms only), fills the invoice's result form, until `done()`. */
async function personAtTheDialog(done, confirmations) {
  const answered = new WeakSet();
  const root = () => document.querySelector("client-tools-ui")?.shadowRoot;
  const input = (form, path, value) => {
    const field = form.querySelector(`[data-path="${path}"]`);
    if (field.type === "checkbox") field.checked = value;
    else field.value = String(value);
    field.dispatchEvent(new Event("input", { bubbles: true }));
  };
  while (!done()) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    const dialog = root()?.querySelector("dialog");
    const form = dialog?.querySelector('form[data-ct="form"]');
    if (!dialog?.open || !form || answered.has(form) || dialog.getAttribute("aria-busy") === "true") continue;
    const click = (action) => dialog.querySelector(`button[data-action="${action}"]`).click();
    if (dialog.querySelector('button[data-action="submit"]')) {
      answered.add(form);
      input(form, "/approved", true);
      input(form, "/note", "ok");
      click("submit");
      continue;
    }
    if (!confirmations) continue;
    answered.add(form);
    const name = dialog.querySelector('[data-ct="original-name"]').textContent;
    const a = Number(form.querySelector('[data-path="/a"]')?.value);
    const decision = decide(name, { a });
    if (decision.action === "modify") {
      click("edit");
      input(dialog.querySelector('form[data-ct="form"]'), "/b", decision.input.b);
      click("approve");
    } else if (decision.action === "approve") {
      click("approve");
    } else {
      dialog.querySelector('textarea[data-ct="reason"]').value = decision.reason;
      click("reject");
    }
  }
}

/** The releases after 1.3.8 (1.5.1 to 1.6.2), applied to 1.3.8's tool call helper for `run`: what
 * `UiPath/uipath-typescript` commit c3a1a9d9a (PR #508, "add client-side tool support") adds to
 * `src/services/conversational-agent/helpers/tool-call-event-helper.ts`, unchanged since —
 * `onExecutingToolCall(cb)`, and in `dispatch` the `executingToolCall` handlers, after the
 * confirmation's and before the end's. */
async function withExecutingToolCall(run) {
  const base = ToolCallEventHelper.prototype;
  const impl = ToolCallEventHelperImpl.prototype;
  const dispatch = impl.dispatch;
  base.onExecutingToolCall = function (cb) {
    (this._executingHandlers ??= []).push(cb);
    return () => {
      const index = this._executingHandlers.indexOf(cb);
      if (index >= 0) this._executingHandlers.splice(index, 1);
    };
  };
  impl.dispatch = function (toolCallEvent) {
    const { executingToolCall, endToolCall, ...before } = toolCallEvent;
    if (toolCallEvent.toolCallId !== this.toolCallId || this._eventBuffer || !executingToolCall) {
      return dispatch.call(this, toolCallEvent);
    }
    dispatch.call(this, before);
    (this._executingHandlers ?? []).forEach((cb) => cb(executingToolCall));
    if (endToolCall) dispatch.call(this, { toolCallId: toolCallEvent.toolCallId, endToolCall });
  };
  try {
    return await run();
  } finally {
    delete base.onExecutingToolCall;
    impl.dispatch = dispatch;
  }
}

/** A session of a conversation with its own `ConversationalAgent` (its own socket), the SDK pointed
 * at this server (a loopback `baseUrl`: socket.io at `/socket.io`, no HTTP for `startSession`). */
async function uiPathSession(conversationId) {
  const sdk = new UiPath({
    baseUrl: location.origin,
    orgName: UIPATH.orgName,
    tenantName: UIPATH.tenantName,
    secret: UIPATH.token,
  });
  const agent = new ConversationalAgent(sdk);
  // No error listener of the test's own: one would make the library count every session error as
  // handled, and hide whether the adapter handles those it says it does (the unhandled ones are
  // the page's unhandled rejections).
  const session = agent.conversations.startSession(conversationId);
  await new Promise((resolve) => session.onSessionStarted(resolve));
  return { agent, session };
}

/** Ends the session, then closes the agent's socket: once the server has the `endSession` (the
 * library sends it asynchronously, and a session still open when its socket closes gets the
 * library's disconnect error). */
async function endSession(agent, conversationId) {
  agent.conversations.endSession(conversationId);
  await until(`the end of ${conversationId} on the server`, async () =>
    (await recorded("uiPath")).some((e) => e.client?.conversationId === conversationId && e.client.endSession),
  );
  agent.conversations.disconnect();
}

/** One exchange through the adapter: the user's message, then until the runtime ends it. */
async function uiPathExchange(calls, text) {
  const exchange = calls.startExchange();
  const ended = new Promise((resolve) => exchange.onExchangeEnd(resolve));
  await exchange.sendMessageWithContentPart({ data: text });
  await ended;
}

/** UiPath with `flavour` "1.3.8" (the library as installed, the person answering through the
 * `confirm` callback) or "later" (`withExecutingToolCall`, the person at the dialog): the main
 * conversation's two exchanges, then a call stopped by `sessionEnding`, one stopped by the
 * socket's disconnect, and one running when the page stops the adapter. */
async function uiPathScenario(flavour) {
  const confirm = (call) => decide(call.toolName, call.input);
  asked.length = 0;
  const { tools, events, aborts, running } = uiPathPage(flavour === "1.3.8" ? { confirm } : {});
  const options = flavour === "1.3.8" ? { confirm } : {};
  let finished = false;
  const person = personAtTheDialog(() => finished, flavour !== "1.3.8");
  // An instance on its way to another runtime is refused, not disconnected.
  let refused;
  const elsewhere = new ClientTools({ endpoint: `wss://${location.host}/silent`, forms: false, exposeToBrowser: false });
  elsewhere.connect().catch(() => {});
  await until("the other instance connecting", () => elsewhere.connectionState === "connecting");
  try {
    uiPathToolCalls(elsewhere, { onExchangeStart: () => () => {} });
  } catch (error) {
    refused = `${error.name}: ${error.message}`;
  }
  elsewhere.disconnect();
  try {
    const main = await uiPathSession(`conv-${flavour}-main`);
    const calls = uiPathToolCalls(tools, main.session, options);
    // The adapter is the instance's runtime: `connect()` is refused while it is attached.
    const connectRefused = await tools.connect().then(
      () => "connected",
      (error) => `${error.code}: ${error.message}`,
    );
    await uiPathExchange(calls, "Add 2 and 3, clear the board, approve the invoice");
    await uiPathExchange(calls, "Now echo a word");
    calls.stop();
    await endSession(main.agent, `conv-${flavour}-main`);

    // Each interrupted call: what its handler's signal said, and what went wrong on the page
    // meanwhile (a session error nobody handled would be there).
    const interrupted = {};
    for (const [part, callId] of [["ending", "call_ending"], ["cut", "call_cut"], ["stopped", "call_stopped"]]) {
      const before = pageErrors.length;
      const conversationId = `conv-${flavour}-${part}`;
      const { agent, session } = await uiPathSession(conversationId);
      const partCalls = uiPathToolCalls(tools, session, options);
      const exchange = partCalls.startExchange();
      await exchange.sendMessageWithContentPart({ data: "Wait for a signal" });
      await until(`${callId} running`, () => running.has(callId));
      if (part === "stopped") partCalls.stop();
      await until(`the abort of ${callId}`, () => aborts[callId]);
      partCalls.stop();
      // The cut one's socket is closed already (by the server).
      if (part === "cut") agent.conversations.disconnect();
      else await endSession(agent, conversationId);
      await reported();
      interrupted[part] = { aborted: aborts[callId], pageErrors: pageErrors.slice(before) };
    }
    await until("the abort of call_error", () => aborts.call_error);
    const received = await until("the end of call_stopped on the server", async () => {
      const got = await recorded("uiPath");
      const stopped = (e) =>
        e.client?.conversationId === `conv-${flavour}-stopped` &&
        e.client.exchange?.message?.toolCall?.endToolCall;
      return got.some(stopped) && got;
    });
    return { received, events, aborts, interrupted, refused, connectRefused, asked: [...asked] };
  } finally {
    finished = true;
    await person;
  }
}

/** A scenario's outcome with the page errors of its run. */
const withPageErrors = (run) => async () => {
  const before = pageErrors.length;
  const outcome = await run();
  await reported();
  return { ...outcome, pageErrors: pageErrors.slice(before) };
};

/** The check itself: a promise rejected, not handled, in the same turn as the check begins is in
 * the check's errors (and taken out of the page's). */
async function plantedRejection() {
  const before = pageErrors.length;
  void Promise.reject(new Error("planted by the test"));
  await reported();
  return { caught: pageErrors.splice(before) };
}

window.scenarios = Object.fromEntries(
  Object.entries({
    agUi,
    elevenLabs: elevenLabsTurn,
    openAiRealtime: () => openAiRealtime(),
    openAiRealtimeRefused: () => openAiRealtime("gpt-realtime-busy"),
    aiSdk,
    uiPath: () => uiPathScenario("1.3.8"),
    uiPathLater: () => withExecutingToolCall(() => uiPathScenario("later")),
  }).map(([name, run]) => [name, withPageErrors(run)]),
);
window.scenarios.plantedRejection = plantedRejection;
window.scenariosReady = true;
