#!/usr/bin/env node
// MCP interop scenarios against the page-tools server, using the official TypeScript SDK
// (@modelcontextprotocol/sdk 1.x, Streamable HTTP only). SDK 1.x speaks up to 2025-11-25
// (initialize handshake); it has no 2026-07-28 / server/discover support.
// stdout carries only `PASS <name>` lines (and `CLOSE_TAB` for the harness); the rest goes to stderr.
import { parseArgs } from 'node:util';
import { createInterface } from 'node:readline';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const CLIENT = 'ts';
const log = (...a) => console.error(...a);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const check = (cond, msg) => { if (!cond) throw new Error(msg); };
const textOf = (r) => (r.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
// structuredContent, falling back to JSON in the text block (servers may send either)
const payload = (r) => { if (r.structuredContent) return r.structuredContent; try { return JSON.parse(textOf(r)); } catch { return null; } };
const cancelCount = (r) => (payload(r)?.events ?? []).filter((e) => e.type === 'toolcancel' && e.toolName === 'work').length;

const { values: opts } = parseArgs({
  options: { url: { type: 'string' }, token: { type: 'string' }, skip: { type: 'string', multiple: true, default: [] } },
});
if (!opts.url) { log('usage: node client.mjs --url URL [--token T] [--skip name[,name]]'); process.exit(2); }
const skip = new Set(opts.skip.flatMap((s) => s.split(',')));

// One line from our own stdin (the harness writes "closed\n" after closing the tab).
const stdinLines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const readLine = async () => (await stdinLines.next()).value ?? '';

const client = new Client({ name: `interop-${CLIENT}`, version: '0.1.0' });
// Registered before connect so no notification can slip past. (The constructor's `listChanged`
// option is the alternative, but it silently does nothing unless the server advertises tools.listChanged.)
let onToolsChanged = () => {};
client.setNotificationHandler(ToolListChangedNotificationSchema, () => { log('  <- notifications/tools/list_changed'); onToolsChanged(); });
client.onerror = (e) => log(`  client error: ${e?.message ?? e}`);

const scenarios = {
  async list() {
    const { tools } = await client.listTools();
    const t = tools.find((x) => x.name === 'read_board_tasks');
    check(t, `read_board_tasks missing from tools/list: ${tools.map((x) => x.name)}`);
    check(t._meta?.['clienttools/originalName'], `read_board_tasks._meta lacks clienttools/originalName: ${JSON.stringify(t._meta)}`);
    log(`  tools=${tools.map((x) => x.name)} _meta=${JSON.stringify(t._meta)}`);
  },
  async 'call-valid'() {
    const r = await client.callTool({ name: 'read_board_tasks', arguments: { boardId: 'main' } });
    check(!r.isError, `read_board_tasks returned isError: ${textOf(r)}`);
    check(Array.isArray(r.structuredContent?.tasks), `structuredContent.tasks is not an array: ${JSON.stringify(r.structuredContent)}`);
  },
  async 'call-invalid'() {
    const r = await client.callTool({ name: 'read_board_tasks', arguments: {} });
    check(r.isError, `expected isError for missing boardId, got ${JSON.stringify(r)}`);
    check(textOf(r).includes('boardId'), `error text does not mention boardId: ${textOf(r)}`);
  },
  async 'list-changed'() {
    const changed = new Promise((resolve) => { onToolsChanged = resolve; });
    await client.callTool({ name: 'add_tool', arguments: {} });
    let timer;
    const timeout = new Promise((_, rej) => { timer = setTimeout(() => rej(new Error('no tools/list_changed within 10 s')), 10_000); });
    await Promise.race([changed, timeout]).finally(() => clearTimeout(timer));
    const { tools } = await client.listTools();
    check(tools.some((t) => t.name === 'extra_tool'), `extra_tool not listed after list_changed: ${tools.map((t) => t.name)}`);
  },
  async cancel() {
    const before = cancelCount(await client.callTool({ name: 'events', arguments: {} }));
    // Aborting the signal makes the SDK send notifications/cancelled and reject the pending call.
    const ac = new AbortController();
    const call = client.callTool({ name: 'work', arguments: { waitMs: 20000, key: `cancel-${CLIENT}` } }, undefined, { signal: ac.signal });
    setTimeout(() => ac.abort('cancelled by interop test'), 500);
    const outcome = await call.then((r) => ({ r }), (e) => ({ e }));
    // NB: SDK 1.x rejects an aborted request with McpError code -32001 (RequestTimeout), message = abort reason.
    check(outcome.e, `work finished before it could be cancelled: ${JSON.stringify(outcome.r)}`);
    log(`  work rejected: ${outcome.e.message}`);
    for (const deadline = Date.now() + 5000; Date.now() < deadline; await sleep(250)) {
      const n = cancelCount(await client.callTool({ name: 'events', arguments: {} }));
      if (n > before) { log(`  toolcancel events ${before} -> ${n}`); return; }
    }
    throw new Error('no toolcancel event for work within 5 s after cancelling');
  },
  async 'tab-closed'() {
    process.stdout.write('CLOSE_TAB\n');
    log(`  harness said: ${JSON.stringify(await readLine())}`);
    let last = 'no call made';
    for (const deadline = Date.now() + 10_000; Date.now() < deadline; await sleep(500)) {
      const r = await client.callTool({ name: 'read_board_tasks', arguments: { boardId: 'main' } });
      last = textOf(r);
      if (r.isError) {
        check(/not connected|disconnected/i.test(last), `isError text lacks 'not connected'/'disconnected': ${last}`);
        return;
      }
    }
    throw new Error(`read_board_tasks still succeeds 10 s after tab close: ${last}`);
  },
};

let current = 'initialize';
try {
  const headers = opts.token ? { Authorization: `Bearer ${opts.token}` } : undefined;
  // requestInit headers are merged into every POST/GET/DELETE the transport makes.
  const transport = new StreamableHTTPClientTransport(new URL(opts.url), { requestInit: { headers } });
  await client.connect(transport);
  log(`negotiated protocol version: ${transport.protocolVersion} (server=${JSON.stringify(client.getServerVersion())})`);
  console.log('PASS initialize');
  for (const [name, run] of Object.entries(scenarios)) {
    current = name;
    if (skip.has(name)) { log(`SKIP ${name}`); continue; }
    await run();
    console.log(`PASS ${name}`);
  }
  await client.close();
  process.exit(0);
} catch (e) {
  log(`FAIL ${current}: ${e?.stack ?? e}`);
  process.exit(1);
}
