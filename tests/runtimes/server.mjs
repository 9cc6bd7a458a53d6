// The agent runtimes' side, on one local HTTPS origin (the OpenAI Realtime client opens only
// `wss:` URLs): the test page and its bundle (the runtimes' client libraries and the package's
// adapters, bundled by esbuild for the browser), an AG-UI agent endpoint, an ElevenLabs ConvAI
// socket, an OpenAI Realtime socket, an AI SDK chat route and a UiPath conversational agents
// socket.io server (`/socket.io`), each replaying `fixtures.mjs`.
// `GET /record` returns what each runtime received. Prints `listening <url>` once ready.
//
// A self-signed certificate is made with `openssl` for 127.0.0.1; the browser under test accepts
// it (WebDriver `acceptInsecureCerts`).

import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:https";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { EventEncoder } from "@ag-ui/encoder";
import { convertToModelMessages, jsonSchema, simulateReadableStream, streamText, tool } from "ai";
import { MockLanguageModelV4 } from "ai/test";
import * as esbuild from "esbuild";
import { Server as SocketIoServer } from "socket.io";
import { WebSocketServer } from "ws";

import {
  agUiRun,
  aiSdkModelParts,
  CALLS,
  elevenLabs,
  LATE_CALL,
  realtime,
  UIPATH,
  UIPATH_CALLS,
  UIPATH_FINAL_INPUTS,
  UIPATH_INTERRUPTIONS,
  UIPATH_LATE_CALL,
  UIPATH_NO_GO_AHEAD,
  UIPATH_SERVER_TOOLS,
  uiPath,
} from "./fixtures.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const MAX_BODY = 1 << 20;

const certificate = (() => {
  const dir = mkdtempSync(join(tmpdir(), "runtimes-cert-"));
  const key = join(dir, "key.pem");
  const cert = join(dir, "cert.pem");
  execFileSync("openssl", [
    "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "1",
    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
  ], { stdio: "ignore" });
  const pair = { key: readFileSync(key), cert: readFileSync(cert) };
  rmSync(dir, { recursive: true });
  return pair;
})();

const bundle = await esbuild.build({
  entryPoints: [join(here, "page.mjs")],
  bundle: true,
  format: "esm",
  platform: "browser",
  write: false,
  logLevel: "error",
});
const files = {
  "/": ["text/html", readFileSync(join(here, "page.html"))],
  "/bundle.js": ["text/javascript", bundle.outputFiles[0].contents],
  // Where the bundled wasm-bindgen glue looks for the module (next to the bundle).
  "/client_tools_bg.wasm": [
    "application/wasm",
    readFileSync(join(here, "node_modules/client-tools/client_tools_bg.wasm")),
  ],
};

/** What each runtime received, in order (UiPath: both ways, and each socket's handshake). */
const record = { agUi: [], elevenLabs: [], realtime: [], realtimeRefused: [], aiSdk: [], uiPath: [] };

const has = (names, name) => names.includes(name);

async function readJson(request) {
  let size = 0;
  const chunks = [];
  for await (const chunk of request) {
    size += chunk.length;
    if (size > MAX_BODY) throw new Error("body too large");
    chunks.push(chunk);
  }
  return JSON.parse(Buffer.concat(chunks).toString("utf8"));
}

/** AG-UI: the first run asks for the three calls; the run with their results, for the late tool
 * (when the input lists it); then text. */
async function agUi(request, response) {
  const input = await readJson(request);
  record.agUi.push(input);
  const answered = new Set(input.messages.filter((m) => m.role === "tool").map((m) => m.toolCallId));
  const tools = input.tools.map((t) => t.name);
  let calls = [];
  if (answered.size === 0) calls = CALLS;
  else if (!answered.has(LATE_CALL[0]) && has(tools, LATE_CALL[1])) calls = [LATE_CALL];
  const encoder = new EventEncoder({ accept: request.headers.accept });
  response.writeHead(200, { "content-type": encoder.getContentType() });
  for (const event of agUiRun(input, calls)) response.write(encoder.encode(event));
  response.end();
}

/** AI SDK: `streamText` with the page's tools from the body (no `execute`: the page runs them). */
async function aiSdk(request, response) {
  const body = await readJson(request);
  record.aiSdk.push(body);
  const parts = body.messages.flatMap((m) => (m.role === "assistant" ? m.parts : []));
  const answered = new Set(
    parts.filter((p) => p.toolCallId && p.state?.startsWith("output-")).map((p) => p.toolCallId),
  );
  const names = Object.keys(body.tools);
  let calls = [];
  if (answered.size === 0) calls = CALLS;
  else if (!answered.has(LATE_CALL[0]) && has(names, LATE_CALL[1])) calls = [LATE_CALL];
  const tools = Object.fromEntries(
    Object.entries(body.tools).map(([name, t]) => [
      name,
      tool({ description: t.description, inputSchema: jsonSchema(t.inputSchema) }),
    ]),
  );
  const model = new MockLanguageModelV4({
    doStream: async () => ({ stream: simulateReadableStream({ chunks: aiSdkModelParts(calls) }) }),
  });
  const result = streamText({ model, tools, messages: await convertToModelMessages(body.messages, { tools }) });
  const answer = result.toUIMessageStreamResponse();
  response.writeHead(answer.status, Object.fromEntries(answer.headers));
  for await (const chunk of answer.body) response.write(chunk);
  response.end();
}

const server = createServer(certificate, (request, response) => {
  const path = new URL(request.url, "https://127.0.0.1").pathname;
  const routes = { "/ag-ui": agUi, "/chat": aiSdk };
  if (request.method === "POST" && routes[path]) {
    routes[path](request, response).catch((error) => {
      console.error(path, error);
      if (!response.headersSent) response.writeHead(500);
      response.end(String(error));
    });
    return;
  }
  const running = path.match(/^\/uipath\/running\/([\w-]+)$/);
  if (request.method === "POST" && running) {
    uiPathInterrupt(running[1]);
    response.writeHead(204);
    response.end();
    return;
  }
  if (path === "/record") {
    response.writeHead(200, { "content-type": "application/json" });
    response.end(JSON.stringify(record));
    return;
  }
  const file = files[path];
  if (request.method !== "GET" || !file) {
    response.writeHead(404);
    response.end();
    return;
  }
  response.writeHead(200, { "content-type": file[0] });
  response.end(file[1]);
});

/** ElevenLabs ConvAI: metadata, the three calls, and the late one once the page says it is there
 * (a `contextual_update`). */
function elevenLabsSocket(socket) {
  let lateSent = false;
  socket.on("message", (data) => {
    const message = JSON.parse(String(data));
    record.elevenLabs.push(message);
    if (message.type === "conversation_initiation_client_data") {
      socket.send(JSON.stringify(elevenLabs.metadata));
      CALLS.forEach((call, n) => socket.send(JSON.stringify(elevenLabs.toolCall(call, n + 1))));
    } else if (message.type === "contextual_update" && message.text === "late_tool defined" && !lateSent) {
      lateSent = true;
      socket.send(JSON.stringify(elevenLabs.toolCall(LATE_CALL, 9)));
    }
  });
}

/** OpenAI Realtime, taking turns as the API does: one response at a time — a `response.create`
 * read while a response is active, or while an earlier one has not begun, is answered with the
 * API's `error` event (`conversation_already_has_active_response`, recorded as `(server) error`).
 * Once a `session.update` lists the page's tools: `resp_1` with two calls (`call_add`, `call_bad`),
 * whose `response.done` comes only after their two outputs (a `response.create` sent before it
 * would be recorded before the `(server) response.done` marker); right after it `resp_2`, begun by
 * the server itself as voice activity begins one, with `call_wipe`, done at once — it overlaps the
 * page's answer to `resp_1`. A `response.create` begins (`response.created`, the request's
 * `metadata` on the response as the API echoes it) once every call asked for has its output: the
 * model's latency, made deterministic, so a second `response.create` sent in that window is
 * refused. That response asks for the late call when the page's `session.update` listed
 * `late_tool` (its `response.done` after the output), else it is text.
 *
 * With model `gpt-realtime-busy` (the socket's `?model=`; recorded apart, `realtimeRefused`),
 * `resp_1` asks for the three calls, and `resp_2` is the server's own, with no call, begun as the
 * server reads the page's first `response.create`, before it answers it — as voice activity begins
 * a response while a client's request is on its way: that `response.create` is refused,
 * legitimately, and `resp_2` ends right after. Only the refusal leaves the page an answer owed. */
function realtimeSocket(socket, request) {
  const busy = new URL(request.url, "https://127.0.0.1").searchParams.get("model") === "gpt-realtime-busy";
  const received = busy ? record.realtimeRefused : record.realtime;
  const calls = [];
  let listed = [];
  let active; // the id of the response under way
  let waiting; // a `response.create` read, its response not begun
  let responses = 0;
  const emit = (event) => {
    if (event.type === "response.done") received.push({ type: "(server) response.done", response: event.response.id });
    if (event.type === "error") received.push({ type: "(server) error", error: event.error });
    socket.send(JSON.stringify(event));
  };
  const outputs = () => received.filter((m) => m.type === "conversation.item.create").map((m) => m.item.call_id);
  const answered = (asked) => asked.every(([id]) => outputs().includes(id));
  // A response asking for `asked`: done at once, or (`held`) once their outputs are in.
  const begin = (asked, held, metadata) => {
    const id = `resp_${++responses}`;
    active = { id, asked, held };
    calls.push(...asked);
    emit(realtime.responseCreated(id, responses, metadata));
    asked.forEach((call, n) => emit(realtime.argumentsDone(call, 10 * responses + n, id)));
    if (!held) end();
  };
  const end = () => {
    const { id } = active;
    active = undefined;
    emit(realtime.responseDone(id, responses));
    if (id === "resp_1" && !busy) begin([CALLS[2]], false);
  };
  const step = () => {
    if (active?.held && answered(active.asked)) end();
    if (waiting && !active && answered(calls)) {
      const metadata = waiting.response?.metadata;
      waiting = undefined;
      const late = has(listed, LATE_CALL[1]) && !calls.includes(LATE_CALL);
      begin(late ? [LATE_CALL] : [], late, metadata);
    }
  };
  socket.send(JSON.stringify(realtime.sessionCreated));
  socket.on("message", (data) => {
    const message = JSON.parse(String(data));
    received.push(message);
    if (message.type === "session.update") {
      listed = (message.session?.tools ?? []).map((t) => t.name);
      if (responses === 0 && has(listed, "add_numbers")) begin(busy ? CALLS : CALLS.slice(0, 2), true);
    }
    if (message.type === "response.create") {
      if (busy && responses === 1 && !active) begin([], true);
      if (active || waiting) emit(realtime.activeResponseError(message.event_id, active?.id));
      else waiting = message;
    }
    step();
  });
}

const sockets = {
  // A runtime that never answers the page's connect (the page stays "connecting" for 10 s).
  "/silent": [new WebSocketServer({ noServer: true }), () => {}],
  "/elevenlabs": [new WebSocketServer({ noServer: true, handleProtocols: (p) => (p.has("convai") ? "convai" : false) }), elevenLabsSocket],
  "/v1/realtime": [new WebSocketServer({ noServer: true, handleProtocols: (p) => (p.has("realtime") ? "realtime" : false) }), realtimeSocket],
};
server.on("upgrade", (request, socket, head) => {
  const path = new URL(request.url, "https://127.0.0.1").pathname;
  if (path.startsWith("/socket.io/")) return; // socket.io's own (below)
  const entry = sockets[path];
  if (!entry) return socket.destroy();
  const [wss, serve] = entry;
  wss.handleUpgrade(request, socket, head, (ws) => serve(ws, request));
});

/** UiPath conversational agents, by conversation id (`conv-<flavour>-main`, `-ending`, `-cut`,
 * `-stopped`): the session starts; each exchange's user message is answered by one assistant
 * message with the exchange's tool calls (the main conversation: `UIPATH_CALLS`, then the late tool
 * once the second exchange declares it; the others: one call of `wait_for_signal`, interrupted as
 * `UIPATH_INTERRUPTIONS` says once its handler runs). `executingToolCall` follows an approved
 * confirmation (with `UIPATH_FINAL_INPUTS`' input where it names one; never for
 * `UIPATH_NO_GO_AHEAD`), else comes `UIPATH.executingAfterMs` after the start — but for a
 * client-side call in a 1.3.8 conversation (`conv-1.3.8-…`): there it is held until the client's
 * `endToolCall` of the call, so the call can end only if the adapter runs it by itself, whatever
 * the machine's load (1.3.8 has no way to hand it on; it still comes, as a late event, and one
 * after an approval comes at once). A server-side tool's end is the runtime's own. Once every call of the first exchange is answered, the runtime sends
 * one of them again (start and `executingToolCall`), then ends the message and the exchange. After
 * `sessionEnding` the server disconnects the session's socket once `UIPATH.endingTtlMs` passed,
 * unless the client ended the session first. */
const conversations = new Map();
const uiPathCalls = new Map();

function uiPathEvent(socket, event) {
  record.uiPath.push({ client: event });
  const id = event.conversationId;
  if (event.startSession) {
    conversations.set(id, { socket, exchanges: 0, answered: new Set(), heldGoAheads: new Map() });
    return uiPathEmit(id, uiPath.sessionStarted(id));
  }
  const conversation = conversations.get(id);
  if (event.endSession) clearTimeout(conversation?.ending);
  const exchange = event.exchange;
  if (!conversation || !exchange) return;
  if (exchange.startExchange) {
    conversation.exchangeId = exchange.exchangeId;
    conversation.exchanges += 1;
    conversation.declared = (exchange.startExchange.clientSideTools ?? []).map((tool) => tool.name);
  }
  const message = exchange.message;
  if (message?.endMessage && message.messageId !== conversation.replyId) return uiPathReply(id, conversation);
  const toolCall = message?.toolCall;
  if (toolCall?.confirmToolCall) {
    const callId = toolCall.toolCallId;
    // A refusal is the client's answer; an approved call is answered by its end.
    if (!toolCall.confirmToolCall.approved) conversation.answered.add(callId);
    else if (!has(UIPATH_NO_GO_AHEAD, callId)) {
      uiPathSay(id, uiPath.executing(callId, UIPATH_FINAL_INPUTS[callId] ?? toolCall.confirmToolCall.input));
    }
  }
  if (toolCall?.endToolCall) {
    conversation.answered.add(toolCall.toolCallId);
    if (conversation.heldGoAheads.has(toolCall.toolCallId)) {
      const input = conversation.heldGoAheads.get(toolCall.toolCallId);
      conversation.heldGoAheads.delete(toolCall.toolCallId);
      uiPathSay(id, uiPath.executing(toolCall.toolCallId, input));
    }
  }
  if (conversation.waitingFor?.every((call) => conversation.answered.has(call))) {
    conversation.waitingFor = undefined;
    uiPathEndTurn(id, conversation);
  }
}

function uiPathEmit(id, event) {
  record.uiPath.push({ server: event });
  conversations.get(id)?.socket.emit("ConversationEvent", event);
}

/** One event of the conversation's assistant message. */
function uiPathSay(id, messageEvent) {
  const conversation = conversations.get(id);
  uiPathEmit(id, uiPath.inMessage(id, conversation.exchangeId, conversation.replyId, messageEvent));
}

function uiPathReply(id, conversation) {
  conversation.replyId = `msg_${conversation.exchanges}`;
  let calls = [];
  if (id.endsWith("-main") && conversation.exchanges === 1) calls = UIPATH_CALLS;
  else if (id.endsWith("-main") && has(conversation.declared, UIPATH_LATE_CALL[1])) calls = [UIPATH_LATE_CALL];
  else if (id.endsWith("-ending")) calls = [["call_ending", "wait_for_signal", {}]];
  else if (id.endsWith("-cut")) calls = [["call_cut", "wait_for_signal", {}]];
  else if (id.endsWith("-stopped")) calls = [["call_stopped", "wait_for_signal", {}]];
  uiPathSay(id, uiPath.messageStart());
  for (const call of calls) {
    const [callId, , input, more] = call;
    uiPathCalls.set(callId, id);
    uiPathSay(id, uiPath.toolCallStart(call));
    const serverSide = has(UIPATH_SERVER_TOOLS, call[1]);
    if (!more?.requireConfirmation && id.startsWith("conv-1.3.8-") && !serverSide) {
      conversation.heldGoAheads.set(callId, input);
    } else if (!more?.requireConfirmation) {
      setTimeout(() => uiPathSay(id, uiPath.executing(callId, input)), UIPATH.executingAfterMs);
    }
    if (serverSide) {
      setTimeout(() => uiPathSay(id, uiPath.toolCallEnd(callId, "sunny")), 2 * UIPATH.executingAfterMs);
    }
  }
  // The calls the client answers (with its end, or a refused confirmation).
  const waitingFor = calls
    .filter(([callId, tool]) => !has(UIPATH_SERVER_TOOLS, tool) && !UIPATH_INTERRUPTIONS[callId])
    .map(([callId]) => callId);
  conversation.waitingFor = waitingFor.length > 0 ? waitingFor : undefined;
  if (calls.length === 0) uiPathEndTurn(id, conversation);
}

function uiPathEndTurn(id, conversation) {
  if (id.endsWith("-main") && conversation.exchanges === 1) {
    // A repeated start and a late `executingToolCall` of a call that ended.
    const [callId, , input] = UIPATH_CALLS[0];
    uiPathSay(id, uiPath.toolCallStart(UIPATH_CALLS[0]));
    uiPathSay(id, uiPath.executing(callId, input));
  }
  uiPathSay(id, uiPath.text(`text_${conversation.exchanges}`, "All done."));
  uiPathSay(id, uiPath.messageEnd());
  uiPathEmit(id, uiPath.exchangeEnd(id, conversation.exchangeId));
}

/** The page's `wait_for_signal` handler runs (it posts `/uipath/running/<call id>`). */
function uiPathInterrupt(callId) {
  const id = uiPathCalls.get(callId);
  const conversation = conversations.get(id);
  if (!conversation) return;
  switch (UIPATH_INTERRUPTIONS[callId]) {
    case "toolCallError":
      return uiPathSay(id, uiPath.toolCallError(callId));
    case "sessionEnding":
      uiPathEmit(id, uiPath.sessionEnding(id));
      conversation.ending = setTimeout(() => conversation.socket.disconnect(true), UIPATH.endingTtlMs);
      return;
    case "disconnect":
      record.uiPath.push({ server: { conversationId: id, disconnect: callId } });
      return conversation.socket.disconnect(true);
  }
}

const io = new SocketIoServer(server, {
  path: "/socket.io",
  transports: ["websocket"],
  serveClient: false,
  // The ElevenLabs and Realtime sockets share the server's upgrades.
  destroyUpgrade: false,
});
io.use((socket, next) => {
  const { auth, query } = socket.handshake;
  const handshake = { token: auth.token, org: query[UIPATH.orgParam], tenant: query[UIPATH.tenantParam] };
  record.uiPath.push({ handshake });
  const known = handshake.token === UIPATH.token && handshake.org === UIPATH.orgName && handshake.tenant === UIPATH.tenantName;
  next(known ? undefined : new Error("unknown token, organization or tenant"));
});
io.on("connection", (socket) => socket.on("ConversationEvent", (event) => uiPathEvent(socket, event)));

server.listen(0, "127.0.0.1", () => {
  console.log(`listening https://127.0.0.1:${server.address().port}`);
});
