// client-tools/uipath: the page's tools as client-side tools of UiPath conversational agents, in a
// session of `@uipath/uipath-typescript` (docs/runtimes/uipath.md in the repository).
//
// The adapter is the runtime of the `ClientTools` it is given (SPEC §6 over `attachTransport`): each
// call is an MCP `tools/call` whose `_meta` carries what the UiPath runtime asked (the person already
// confirmed, the agent's schemas, the result form), and a cancel aborts the handler's `ctx.signal`.
// A confirmation the runtime asks for is put to the person by a second, private `ClientTools` (the
// same dialog, or the `confirm` option) before the call runs.
import { failed, isUntrusted, resultText, UNTRUSTED } from "./shared.js";

/** How long a call waits for the runtime's go-ahead (`executingToolCall`) where the library has
 * it, from the start or from the person's approval: the runtime sends it at once then (no person
 * is waited for any more). A runtime that does not send it gets the call run by the adapter, with
 * the input it has, as on 1.3.8 — slower, never hanging. */
const GO_AHEAD_WAIT_MS = 5_000;
/** What the runtime reads, and the handler's `ctx.signal` says, of a call `stop()` ended. */
const STOPPED = "the page stopped client-tools/uipath";

/** The page's tools as an exchange's `clientSideTools`: name and schemas (a `registerHandler` tool
 * by name: the agent defines its schemas). */
export function uiPathClientSideTools(tools) {
  return tools.list().map(({ name, kind, inputSchema, outputSchema }) =>
    kind === "handler" ? { name } : { name, inputSchema, ...(outputSchema && { outputSchema }) },
  );
}

/**
 * Answers the session's client-side tool calls with the page's tools until `stop()`; its
 * `startExchange(args)` is the session's, the page's tools added to `args.clientSideTools`.
 */
export function uiPathToolCalls(tools, session, options = {}) {
  const page = attach(tools);
  let asker; // The private `ClientTools` that asks the person, made when first needed.
  let stopped = false;
  let sessionErrors;
  const seen = new Set();
  const live = new Map(); // toolCallId → abort(reason)
  const watched = new WeakSet();
  const abortAll = (reason, tell) => [...live.values()].forEach((abort) => abort(reason, tell));
  const pageTool = (name) => tools.list().find((t) => t.name === name || t.originalName === name);

  // The socket's disconnect reaches the session as its error: listened to only while calls run,
  // since a listener makes the library count every session error as handled.
  const followErrors = () => {
    if (live.size > 0 && !sessionErrors) {
      sessionErrors = session.onErrorStart((error) => {
        if (error.errorId === "WEBSOCKET_DISCONNECTED") abortAll(error.message);
      });
    } else if (live.size === 0 && sessionErrors) {
      sessionErrors();
      sessionErrors = undefined;
    }
  };

  const confirmation = (id, start, input) => {
    asker ??= privateAsker(tools, options);
    const tool = pageTool(start.toolName);
    const name = tool?.originalName ?? start.toolName;
    if (!asker.names.has(name)) {
      asker.tools.registerHandler(name, (approved) => approved);
      asker.names.add(name);
    }
    const schema = tool && tool.kind !== "handler" ? tool.inputSchema : start.inputSchema;
    return asker.peer.call(id, name, input, {
      "clienttools/requireConfirmation": true,
      ...(schema && { "clienttools/inputSchema": schema }),
      ...(tool?.description && { "clienttools/description": tool.description }),
    });
  };

  async function answer(toolCall, start) {
    const id = toolCall.toolCallId;
    let over = false;
    let cut;
    const aborted = new Promise((resolve) => (cut = resolve));
    const stops = [];
    const finish = () => {
      over = true;
      live.delete(id);
      asker?.activated.delete(id);
      // After the event being dispatched, if any: the library counts an error as handled when a
      // listener is still there once its listeners ran (the one that aborts here included).
      queueMicrotask(() => {
        stops.forEach((stop) => stop());
        followErrors();
      });
    };
    const send = (what, event) => {
      if (!session.ended && !toolCall.ended) toolCall[what](event);
    };
    // `tell`: the runtime does not know (the page stopped the adapter), so it gets the error.
    const abort = (reason, tell) => {
      if (over) return;
      finish();
      page.cancel(id, reason);
      asker?.peer.cancel(id, reason);
      cut();
      if (tell) send("sendToolCallEnd", { output: reason, isError: true });
    };
    const end = (result) => {
      finish();
      const text = resultText(result);
      send("sendToolCallEnd", {
        output: result.isError ? text : (result.structuredContent ?? text),
        isError: result.isError,
        // A tool declared with `untrustedContentHint`: the event's own metadata says so.
        ...(isUntrusted(result) && { metaData: UNTRUSTED }),
      });
    };
    live.set(id, abort);
    followErrors();
    stops.push(
      toolCall.onErrorStart((error) => abort(`the UiPath runtime reported an error for the call: ${error.message}`)),
      toolCall.onToolCallEnd(() => abort("the UiPath runtime ended the call")),
    );
    // Releases with `onExecutingToolCall` run the call when the runtime says (`executingToolCall`,
    // with the final input); 1.3.8 has none, and the adapter runs it by itself.
    let goAhead;
    if (typeof toolCall.onExecutingToolCall === "function") {
      goAhead = new Promise((resolve) => stops.push(toolCall.onExecutingToolCall((e) => resolve(e.input))));
    }
    try {
      let input = start.input ?? {};
      if (start.requireConfirmation) {
        const asked = await Promise.race([confirmation(id, start, input), aborted]);
        if (over) return;
        if (asked.isError) {
          // Not asked (the call never activated): the input the schema rejects — the call's error
          // result, not a refusal.
          if (!asker.activated.has(id)) return end(asked);
          send("sendToolCallConfirm", { approved: false });
          // After a refusal the runtime goes on by itself; without `executingToolCall` the adapter
          // answers, with the reason.
          return goAhead ? finish() : end(asked);
        }
        input = asked._meta?.["clienttools/modifiedInput"] ?? input;
        send("sendToolCallConfirm", { approved: true, input });
      }
      if (goAhead) {
        const late = new Promise((resolve) => {
          const timer = setTimeout(resolve, GO_AHEAD_WAIT_MS);
          stops.push(() => clearTimeout(timer));
        });
        input = (await Promise.race([goAhead, late, aborted])) ?? input;
        if (over) return;
      }
      const result = await Promise.race([
        page.call(id, start.toolName, input, {
          // The person answered the runtime's confirmation here already: not asked again.
          ...(start.requireConfirmation && { "clienttools/confirmedBy": "agent" }),
          ...(start.inputSchema && { "clienttools/inputSchema": start.inputSchema }),
          // An agent-defined tool without a handler: the person fills in the result.
          ...(start.outputSchema && { "clienttools/outputSchema": start.outputSchema, "clienttools/fallback": "form" }),
        }),
        aborted,
      ]);
      if (!over) end(result);
    } catch (error) {
      if (!over) end(failed(`client-tools/uipath: ${error?.message ?? error}`));
    }
  }

  const onToolCall = (toolCall) => {
    // `startEventMaybe` is undefined when the first event the library saw of this id was not its
    // start: a late event of a call that ended (the library forgets ended calls).
    const start = toolCall.startEventMaybe;
    const id = toolCall.toolCallId;
    if (stopped || !start || seen.has(id)) return;
    // A runtime that says whose call it is (`isClientSideTool`) is followed; an older one's calls
    // are the page's when the page has the tool.
    if (!(start.isClientSideTool ?? pageTool(start.toolName) !== undefined)) return;
    seen.add(id);
    void answer(toolCall, start);
  };
  const watch = (exchange) => {
    if (watched.has(exchange)) return;
    watched.add(exchange);
    exchange.onMessageStart((message) => message.onToolCallStart(onToolCall));
  };
  const sessionStops = [
    session.onExchangeStart((exchange) => stopped || watch(exchange)),
    session.onSessionEnding(() => abortAll("the UiPath session is ending")),
    session.onSessionEnd(() => abortAll("the UiPath session ended")),
  ];
  for (const exchange of session.exchanges ?? []) watch(exchange);

  return {
    startExchange(args = {}) {
      const declared = uiPathClientSideTools(tools);
      const names = new Set(declared.map((tool) => tool.name));
      const extra = (args.clientSideTools ?? []).filter((tool) => !names.has(tool.name));
      const exchange = session.startExchange({ ...args, clientSideTools: [...declared, ...extra] });
      watch(exchange);
      return exchange;
    },
    stop() {
      if (stopped) return;
      stopped = true;
      abortAll(STOPPED, true);
      sessionStops.forEach((stop) => stop());
      if (asker) {
        asker.tools.disconnect();
        asker.tools.free();
      }
      page.release();
    },
  };
}

/** The private `ClientTools` that puts the runtime's confirmations to the person: one handler per
 * tool that answers the approved (maybe edited) input. */
function privateAsker(tools, { confirm, strings }) {
  const asker = new tools.constructor({
    forms: false,
    exposeToBrowser: false,
    ...(confirm && { confirm }),
    ...(strings && { strings }),
  });
  // The calls put to the person (activated: their input passed the schema).
  const activated = new Set();
  asker.on("toolactivated", ({ callId }) => activated.add(callId));
  return { tools: asker, peer: runtime(asker), names: new Set(), activated };
}

/** Each `ClientTools` has one runtime, shared by the sessions answered with its tools. */
const runtimes = new WeakMap();

function attach(tools) {
  let shared = runtimes.get(tools);
  if (!shared) {
    if (tools.connectionState !== "disconnected") {
      throw new TypeError(
        `client-tools/uipath: this ClientTools is ${tools.connectionState} to a runtime, which the ` +
          "adapter would disconnect (it is the instance's runtime itself): give it a ClientTools of its own",
      );
    }
    shared = { ...runtime(tools), users: 0 };
    shared.release = () => {
      if (--shared.users > 0) return;
      runtimes.delete(tools);
      tools.disconnect();
    };
    runtimes.set(tools, shared);
  }
  shared.users += 1;
  return shared;
}

/** The MCP client side of `tools`, over `attachTransport`: `call` resolves with the
 * `CallToolResult`, `cancel` aborts the call (`notifications/cancelled`: no result follows). */
function runtime(tools) {
  const waiting = new Map();
  const receive = (message) => tools.receiveFrame(JSON.stringify({ jsonrpc: "2.0", ...message }));
  tools.attachTransport((frame) => {
    const message = JSON.parse(frame);
    if (message.method === undefined) {
      const resolve = waiting.get(message.id);
      waiting.delete(message.id);
      resolve?.(message.result ?? failed(`the page refused the call: ${message.error?.message}`));
    } else if (message.id !== undefined) {
      // The page's one request here: a handler's round (`ctx.elicit`, `createMessage`,
      // `listRoots`), which UiPath's runtime cannot answer (the handler's `CAPABILITY_MISSING`).
      const needs = { "elicitation/create": "elicitation", "sampling/createMessage": "sampling", "roots/list": "roots" };
      const requests = Object.values(message.params?.inputRequests ?? {});
      receive({
        id: message.id,
        error: {
          code: -32021,
          message: "the UiPath runtime cannot answer a handler's requests",
          data: { requiredCapabilities: Object.fromEntries(requests.map((r) => [needs[r.method] ?? r.method, {}])) },
        },
      });
    }
  });
  return {
    call: (id, name, input, meta) =>
      new Promise((resolve) => {
        waiting.set(id, resolve);
        receive({ id, method: "tools/call", params: { name, arguments: input, _meta: meta } });
      }),
    cancel(id, reason) {
      if (waiting.delete(id)) receive({ method: "notifications/cancelled", params: { requestId: id, reason } });
    },
  };
}
