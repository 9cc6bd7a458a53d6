// The agent runtimes' side, on one local HTTPS origin (the OpenAI Realtime client opens only
// `wss:` URLs): the test page and its bundle (the runtimes' client libraries and the package's
// adapters, bundled by esbuild for the browser), an AG-UI agent endpoint, an ElevenLabs ConvAI
// socket, an OpenAI Realtime socket and an AI SDK chat route, each replaying `fixtures.mjs`.
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
import { WebSocketServer } from "ws";

import { agUiRun, aiSdkModelParts, CALLS, elevenLabs, LATE_CALL, realtime } from "./fixtures.mjs";

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

/** What each runtime received, in order. */
const record = { agUi: [], elevenLabs: [], realtime: [], aiSdk: [] };

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

/** OpenAI Realtime: `session.created`; once a `session.update` lists the page's tools, one
 * response (`resp_1`) with the three calls, whose `response.done` comes only after their three
 * outputs (so a `response.create` sent before it would be recorded before the `(server)` marker);
 * then, as the model would once asked to go on (`response.create`) and told of `late_tool` (a
 * `session.update` listing it), a response of its own (`resp_9`) with the late call. */
function realtimeSocket(socket) {
  let callsSent = false;
  let lateListed = false;
  let createSeen = false;
  let lateSent = false;
  let firstDone = false;
  const emit = (event) => {
    if (event.type === "response.done") record.realtime.push({ type: "(server) response.done", response: event.response.id });
    socket.send(JSON.stringify(event));
  };
  socket.send(JSON.stringify(realtime.sessionCreated));
  socket.on("message", (data) => {
    const message = JSON.parse(String(data));
    record.realtime.push(message);
    const outputs = record.realtime.filter((m) => m.type === "conversation.item.create").map((m) => m.item.call_id);
    if (callsSent && !firstDone && CALLS.every(([id]) => outputs.includes(id))) {
      firstDone = true;
      emit(realtime.responseDone("resp_1", 1));
    }
    if (message.type === "session.update") {
      const names = (message.session?.tools ?? []).map((t) => t.name);
      lateListed ||= has(names, LATE_CALL[1]);
      if (!callsSent && has(names, "add_numbers")) {
        callsSent = true;
        emit(realtime.responseCreated("resp_1", 1));
        CALLS.forEach((call, n) => emit(realtime.argumentsDone(call, n + 1, "resp_1")));
      }
    }
    createSeen ||= message.type === "response.create";
    if (createSeen && lateListed && !lateSent) {
      lateSent = true;
      emit(realtime.responseCreated("resp_9", 9));
      emit(realtime.argumentsDone(LATE_CALL, 9, "resp_9"));
      emit(realtime.responseDone("resp_9", 9));
    }
  });
}

const sockets = {
  "/elevenlabs": [new WebSocketServer({ noServer: true, handleProtocols: (p) => (p.has("convai") ? "convai" : false) }), elevenLabsSocket],
  "/v1/realtime": [new WebSocketServer({ noServer: true, handleProtocols: (p) => (p.has("realtime") ? "realtime" : false) }), realtimeSocket],
};
server.on("upgrade", (request, socket, head) => {
  const entry = sockets[new URL(request.url, "https://127.0.0.1").pathname];
  if (!entry) return socket.destroy();
  const [wss, serve] = entry;
  wss.handleUpgrade(request, socket, head, (ws) => serve(ws));
});

server.listen(0, "127.0.0.1", () => {
  console.log(`listening https://127.0.0.1:${server.address().port}`);
});
