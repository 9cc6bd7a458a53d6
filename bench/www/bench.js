// The benchmark page. It connects to the bridge like any page, and exposes the in-page benchmarks
// as tools: `cargo xtask bench` calls them through the bridge and writes what they return into
// BENCHMARKS.md. `echo` is the trivial tool the round-trip benchmark calls.
//
// Every measurement runs the SDK (wasm) and the JavaScript reference on the same page, with the same
// inputs, one after the other. The per-call benchmark has a second reference, the CSP-safe one
// (csp.html: the MCP SDK `Server` with @cfworker/json-schema, in a same-origin frame that forbids
// eval), driven from this page by the same harness.

import init, { ClientTools, SchemaValidator } from "/pkg/client_tools.js";
import { createReferenceServer, newAjv } from "/vendor/reference.js";
import { CfworkerValidator } from "/vendor/cfworker.js";
import { callInputSchema, callOutputSchema, callSizes, boardOfSize, validationWorkloads } from "./workloads.js";

await init();

const LONG_MS = 300_000;
const tools = new ClientTools({ endpoint: `ws://${location.host}/ws` });

tools.defineFunction({
  name: "echo",
  description: "Returns { ok: true } at once (the round-trip benchmark's trivial handler).",
  parameters: { type: "object", properties: { text: { type: "string" } } },
  handler: () => ({ ok: true }),
});
tools.defineFunction({
  name: "bench_calls",
  description: "Per-call SDK overhead vs the MCP TypeScript SDK Server + ajv and + @cfworker/json-schema (CSP-safe), on this page.",
  parameters: { type: "object", properties: { iterations: { type: "integer", minimum: 10 } } },
  timeoutMs: LONG_MS,
  handler: ({ iterations = 2000 }) => benchCalls(iterations),
});
tools.defineFunction({
  name: "bench_validation",
  description: "Validation and compile time: the SDK's validator vs ajv vs @cfworker/json-schema.",
  parameters: { type: "object", properties: { minMs: { type: "integer", minimum: 10 } } },
  timeoutMs: LONG_MS,
  handler: ({ minMs = 300 }) => benchValidation(minMs),
});
tools.defineFunction({
  name: "bench_startup",
  description: "Start-up from module import to ready, cold and cached, SDK vs reference bundle.",
  parameters: { type: "object", properties: { runs: { type: "integer", minimum: 1 } } },
  timeoutMs: LONG_MS,
  handler: ({ runs = 10 }) => benchStartup(runs),
});
await tools.connect();

// --- timing helpers ---------------------------------------------------------------------------

function environment() {
  let resolution = Infinity;
  for (let i = 0, last = performance.now(); i < 100_000; i++) {
    const now = performance.now();
    if (now > last) resolution = Math.min(resolution, now - last);
    last = now;
  }
  return { userAgent: navigator.userAgent, crossOriginIsolated, timerResolutionUs: round(resolution * 1000) };
}

const round = (x, digits = 2) => Number(x.toFixed(digits));

/** p50 / p99 / mean of samples in milliseconds, reported in microseconds. */
function summarize(samplesMs) {
  const sorted = [...samplesMs].sort((a, b) => a - b);
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  const mean = sorted.reduce((a, b) => a + b, 0) / sorted.length;
  return { samples: sorted.length, p50Us: round(at(0.5) * 1000), p99Us: round(at(0.99) * 1000), meanUs: round(mean * 1000) };
}

/** Runs `fn` in rounds of 50 until `minMs` have passed; nanoseconds per call. */
function nsPerOp(fn, minMs) {
  for (let i = 0; i < 50; i++) fn(); // warm-up: let the JIT and the allocator settle
  let n = 0;
  const started = performance.now();
  let elapsed = 0;
  do {
    for (let i = 0; i < 50; i++) fn();
    n += 50;
    elapsed = performance.now() - started;
  } while (elapsed < minMs);
  return round((elapsed * 1e6) / n, 1);
}

// --- per-call overhead --------------------------------------------------------------------------

/** A server under test seen as frames: `receive(text)` in, a promise of the next `count` frames out
 *  (`last()`: the text of the latest). */
function framed(receive, attach) {
  let expected = 0;
  let received = 0;
  let done = () => {};
  let latest;
  attach((text) => {
    latest = text;
    received += 1;
    if (received === expected) done();
  });
  return {
    receive,
    last: () => latest,
    expect(count) {
      expected = count;
      received = 0;
      return new Promise((resolve) => (done = resolve));
    },
  };
}

async function sdkServer() {
  const sdk = new ClientTools({});
  sdk.defineFunction({
    name: "save_board", description: "Saves a board.",
    parameters: callInputSchema, outputSchema: callOutputSchema, handler: () => ({ ok: true }),
  });
  return framed((text) => sdk.receiveFrame(text), (onframe) => sdk.attachTransport(onframe));
}

async function referenceServer() {
  const transport = await createReferenceServer([{
    name: "save_board", description: "Saves a board.",
    inputSchema: callInputSchema, outputSchema: callOutputSchema, handler: () => ({ ok: true }),
  }]);
  return framed((text) => transport.receive(text), (onframe) => (transport.onframe = onframe));
}

/** The CSP-safe reference, loaded in its frame (csp.html, csp.js): its `window.cspReference`. */
function cspFrame() {
  return new Promise((resolve, reject) => {
    const frame = document.createElement("iframe");
    const timer = setTimeout(() => reject(new Error("csp.html did not report ready in 60 s")), 60_000);
    addEventListener("message", function onMessage(event) {
      if (event.source !== frame.contentWindow || !event.data?.cspReady) return;
      removeEventListener("message", onMessage);
      clearTimeout(timer);
      const reference = frame.contentWindow.cspReference;
      if (reference.error) reject(new Error(`the CSP-safe reference did not load: ${reference.error}`));
      else resolve(reference);
    });
    frame.src = "csp.html";
    document.body.append(frame);
  });
}

async function cspServer(reference) {
  const transport = await reference.createServer();
  return framed((text) => transport.receive(text), (onframe) => (transport.onframe = onframe));
}

/** One call's answer, which must be the handler's `{ ok: true }` (a benchmark of errors measures
 *  nothing). */
async function checkCall(name, server, argumentsText) {
  const answered = server.expect(1);
  server.receive(callFrame(argumentsText));
  await answered;
  const message = JSON.parse(server.last());
  if (message.result?.isError || message.result?.structuredContent?.ok !== true) {
    throw new Error(`${name} did not answer the call with { ok: true }: ${server.last().slice(0, 500)}`);
  }
}

let nextId = 1;
const callFrame = (argumentsText) =>
  `{"jsonrpc":"2.0","id":${nextId++},"method":"tools/call","params":{"name":"save_board","arguments":${argumentsText}}}`;

async function initialize(server) {
  const answered = server.expect(1);
  server.receive(`{"jsonrpc":"2.0","id":${nextId++},"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`);
  await answered;
  server.receive(`{"jsonrpc":"2.0","method":"notifications/initialized"}`);
}

/** Sequential calls (each timed from frame in to result frame out), then pipelined batches of 100. */
async function measureServer(server, argumentsText, iterations) {
  const one = async () => {
    const answered = server.expect(1);
    const started = performance.now();
    server.receive(callFrame(argumentsText));
    await answered;
    return performance.now() - started;
  };
  for (let i = 0; i < Math.min(300, iterations); i++) await one();
  const samples = [];
  for (let i = 0; i < iterations; i++) samples.push(await one());
  let calls = 0;
  const started = performance.now();
  while (performance.now() - started < 1000) {
    const answered = server.expect(100);
    for (let i = 0; i < 100; i++) server.receive(callFrame(argumentsText));
    await answered;
    calls += 100;
  }
  const seconds = (performance.now() - started) / 1000;
  return { samples, callsPerSec: calls / seconds };
}

/** Two rounds of a server's measurements as one entry of a row: all samples, the mean rate. */
function merged(first, second) {
  const callsPerSec = Math.round((first.callsPerSec + second.callsPerSec) / 2);
  return { ...summarize([...first.samples, ...second.samples]), callsPerSec };
}

async function benchCalls(iterations) {
  const cspReference = await cspFrame();
  const servers = { sdk: await sdkServer(), reference: await referenceServer(), csp: await cspServer(cspReference) };
  for (const server of Object.values(servers)) await initialize(server);
  // Alternating rounds (SDK, ajv, CSP-safe, CSP-safe, ajv, SDK): none always runs on a fresher heap
  // or right after the same neighbour.
  const order = ["sdk", "reference", "csp", "csp", "reference", "sdk"];
  const rows = [];
  for (const size of callSizes) {
    const argumentsText = JSON.stringify(boardOfSize(size));
    for (const [name, server] of Object.entries(servers)) await checkCall(name, server, argumentsText);
    const n = size > 10_000 ? Math.max(100, iterations / 4) : iterations;
    const half = Math.ceil(n / 2);
    const rounds = { sdk: [], reference: [], csp: [] };
    for (const name of order) rounds[name].push(await measureServer(servers[name], argumentsText, half));
    rows.push({
      inputBytes: argumentsText.length,
      sdk: merged(...rounds.sdk),
      reference: merged(...rounds.reference),
      csp: merged(...rounds.csp),
    });
  }
  // What the frame's policy refused while the CSP-safe reference loaded and ran (zod's probe for
  // `new Function` is expected: refused, it takes its interpreted path), then proof it is in force.
  const violations = cspReference.violations.map((v) => ({ ...v }));
  const evalRefused = !cspReference.evalAllowed();
  return {
    environment: environment(),
    reference: "@modelcontextprotocol/sdk Server + ajv (ajv-formats)",
    csp: "@modelcontextprotocol/sdk Server + CfWorkerJsonSchemaValidator (@cfworker/json-schema)",
    cspCheck: { evalRefused, violations },
    rows,
  };
}

// --- validation -----------------------------------------------------------------------------------

async function benchValidation(minMs) {
  const ajv = newAjv();
  const rows = [];
  for (const { name, schema, valid, invalid } of validationWorkloads) {
    const ours = new SchemaValidator(schema);
    const ajvValidate = ajv.compile(structuredClone(schema));
    const cfworker = new CfworkerValidator(schema, "2020-12", false);
    const verdicts = {
      sdk: [ours.validate(valid) === undefined, ours.validate(invalid) === undefined],
      ajv: [ajvValidate(valid), ajvValidate(invalid)],
      cfworker: [cfworker.validate(valid).valid, cfworker.validate(invalid).valid],
    };
    const agree = Object.values(verdicts).every(([v, i]) => v === true && i === false);
    const clones = Array.from({ length: 200 }, () => structuredClone(schema));
    let c = 0;
    rows.push({
      workload: name,
      schemaBytes: JSON.stringify(schema).length,
      instanceBytes: JSON.stringify(valid).length,
      agree,
      verdicts,
      validNs: {
        sdk: nsPerOp(() => ours.validate(valid), minMs),
        ajv: nsPerOp(() => ajvValidate(valid), minMs),
        cfworker: nsPerOp(() => cfworker.validate(valid), minMs),
      },
      invalidNs: {
        sdk: nsPerOp(() => ours.validate(invalid), minMs),
        ajv: nsPerOp(() => ajvValidate(invalid), minMs),
        cfworker: nsPerOp(() => cfworker.validate(invalid), minMs),
      },
      compileNs: {
        sdk: nsPerOp(() => new SchemaValidator(schema).free(), minMs),
        ajv: nsPerOp(() => {
          const clone = clones[c++ % clones.length];
          ajv.compile(clone);
          ajv.removeSchema(clone);
        }, minMs),
        cfworker: nsPerOp(() => new CfworkerValidator(schema, "2020-12", false), minMs),
      },
    });
    ours.free();
  }
  return { environment: environment(), rows };
}

// --- start-up -------------------------------------------------------------------------------------

function startupOnce(which, key) {
  return new Promise((resolve, reject) => {
    const frame = document.createElement("iframe");
    const timer = setTimeout(() => reject(new Error(`start-up of ${which} did not report in 60 s`)), 60_000);
    addEventListener("message", function onMessage(event) {
      if (event.data?.which !== which || event.data?.key !== key) return;
      removeEventListener("message", onMessage);
      clearTimeout(timer);
      frame.remove();
      resolve(event.data.ms);
    });
    frame.src = `startup.html?which=${which}&v=${key}`;
    document.body.append(frame);
  });
}

async function benchStartup(runs) {
  const result = {};
  for (const which of ["sdk", "reference"]) {
    const cold = [];
    for (let i = 0; i < runs; i++) cold.push(await startupOnce(which, `cold-${Date.now()}-${i}`));
    const cachedKey = `cached-${Date.now()}`;
    await startupOnce(which, cachedKey); // the first load fills the caches
    const cached = [];
    for (let i = 0; i < runs; i++) cached.push(await startupOnce(which, cachedKey));
    result[which] = { cold: summarizeMs(cold), cached: summarizeMs(cached) };
  }
  return { environment: environment(), ...result };
}

function summarizeMs(samples) {
  const sorted = [...samples].sort((a, b) => a - b);
  return { runs: sorted.length, medianMs: round(sorted[Math.floor(sorted.length / 2)], 1), minMs: round(sorted[0], 1), maxMs: round(sorted[sorted.length - 1], 1) };
}
