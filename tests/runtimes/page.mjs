// The test page: each runtime's own client library, given the page's tools by the package's
// adapter, against the local server (server.mjs). `window.scenarios.<runtime>()` runs one turn
// and resolves to what the library saw and what the runtime's server received.

import init, { ClientTools } from "client-tools";
import { agUiSubscriber, agUiTools } from "client-tools/ag-ui";
import { aiSdkOnToolCall, aiSdkTools } from "client-tools/ai-sdk";
import { elevenLabsClientTools } from "client-tools/elevenlabs";
import { realtimeHandler, realtimeTools } from "client-tools/openai-realtime";

import { HttpAgent } from "@ag-ui/client";
import { Conversation } from "@elevenlabs/client";
import { AbstractChat, DefaultChatTransport, lastAssistantMessageIsCompleteWithToolCalls } from "ai";
import OpenAI from "openai";
import { OpenAIRealtimeWebSocket } from "openai/realtime/websocket";

await init();

/** The page's tools: a sum, a tool the person must confirm (and rejects), and `late_tool`,
 * defined once the first call starts (a tool list that changes during the session). */
function pageTools() {
  const tools = new ClientTools({
    forms: false,
    exposeToBrowser: false,
    confirm: () => ({ action: "reject", reason: "not now" }),
  });
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

async function openAiRealtime() {
  const { tools, events } = pageTools();
  const client = new OpenAI({ apiKey: "sk-local", baseURL: `https://${location.host}/v1`, dangerouslyAllowBrowser: true });
  const rt = new OpenAIRealtimeWebSocket({ model: "gpt-realtime", dangerouslyAllowBrowser: true }, client);
  const failures = [];
  rt.on("error", (error) => failures.push(String(error?.message ?? error)));
  const handler = realtimeHandler(tools, (event) => rt.send(event));
  rt.on("event", handler);
  await new Promise((resolve) => rt.socket.addEventListener("open", resolve, { once: true }));
  rt.send({ type: "session.update", session: { type: "realtime", tools: realtimeTools(tools) } });
  const received = await until("four function_call_output and two response.create", async () => {
    const got = await recorded("realtime");
    const count = (type) => got.filter((m) => m.type === type).length;
    return count("conversation.item.create") >= 4 && count("response.create") >= 2 && got;
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

window.scenarios = { agUi, elevenLabs: elevenLabsTurn, openAiRealtime, aiSdk };
window.scenariosReady = true;
