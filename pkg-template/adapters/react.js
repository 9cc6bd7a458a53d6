// client-tools/react: the page's tools from React components (docs/runtimes/react.md in the
// repository). React is the app's own (a peer dependency); nothing here is in the wasm module.
import {
  createContext,
  createElement,
  useContext,
  useEffect,
  useLayoutEffect,
  useRef,
  useSyncExternalStore,
} from "react";

const Client = createContext(undefined);

/**
 * Gives the components under it `client`, a `ClientTools` — or none yet (`null`: before `init()`
 * resolved, on the server), and the hooks wait for it.
 */
export function ClientToolsProvider({ client, children }) {
  if (client) stateOf(client);
  return createElement(Client.Provider, { value: client ?? null }, children);
}

/** The `ClientTools` of the nearest `<ClientToolsProvider>` (`null` while it has none). */
export function useClientTools() {
  const client = useContext(Client);
  if (client === undefined) {
    throw new Error("client-tools/react: no <ClientToolsProvider client={tools}> above this component");
  }
  return client;
}

// The tools the hooks keep, per client: declared name → {client, name, key, owner, normalized,
// released}. `owner` is the hook instance that has it: `{declaration, calls, mounted}`, kept in a
// ref, so it lives as long as the component's state does.
const kept = new WeakMap();

function keptOf(client) {
  let tools = kept.get(client);
  if (!tools) kept.set(client, (tools = new Map()));
  return tools;
}

/**
 * Defines `declaration` (a `defineFunction` declaration) while the component is mounted: once,
 * however often React runs the effect again for the same tool (StrictMode's second mount, a Fast
 * Refresh). Calls run the latest render's handler. Defined again only when what agents are told
 * changes (the name, the description, a schema, …); a call still running when the component
 * unmounts ends at once with an error result, and its handler's `ctx.signal` aborts.
 */
export function useClientTool(declaration) {
  const client = useClientTools();
  const { handler, ...told } = declaration;
  const key = JSON.stringify(told, inOrder);
  const owner = useRef(null);
  owner.current ??= { declaration, calls: new Set(), mounted: false };
  // After the commit and before any effect or call: the handler a call runs is the last committed
  // render's, never one of a render React threw away.
  useLayoutEffect(() => {
    owner.current.declaration = declaration;
  });
  useEffect(() => {
    if (!client) return;
    const hook = owner.current;
    hook.mounted = true;
    const tool = claim(client, declaration, key, hook);
    return () => {
      hook.mounted = false;
      tool.released = true;
      // React runs a cleanup and the setup that follows it (StrictMode, Fast Refresh, a changed
      // declaration) in one go: only a tool nobody took back by then is removed.
      queueMicrotask(() => settle(tool, hook));
    };
  }, [client, key]);
}

/** A `JSON.stringify` replacer: each object's keys sorted, so a declaration (or schema) written
 * with its keys in another order is the same declaration. Arrays keep their order (an `enum`'s or
 * `required`'s order is what the agent reads). */
function inOrder(_key, value) {
  if (!value || typeof value !== "object" || Array.isArray(value)) return value;
  return Object.fromEntries(Object.keys(value).sort().map((name) => [name, value[name]]));
}

/** The kept tool `declaration` names for `hook`: the one released just now, or defined. */
function claim(client, declaration, key, hook) {
  const tools = keptOf(client);
  const held = tools.get(declaration.name);
  if (held?.released && held.key === key) {
    held.released = false;
    if (held.owner !== hook) adopt(hook, held);
    held.owner = hook;
    return held;
  }
  if (held?.released) remove(held);
  const tool = { client, name: declaration.name, key, owner: hook, released: false };
  tool.normalized = client.defineFunction({
    ...declaration,
    handler: (input, ctx) => run(tool, input, ctx),
  });
  tools.set(tool.name, tool);
  return tool;
}

/** A component remounted with the same tool (a Fast Refresh): its running calls go on in `hook`. */
function adopt(hook, tool) {
  for (const call of tool.owner.calls) {
    if (call.tool !== tool) continue;
    tool.owner.calls.delete(call);
    hook.calls.add(call);
    call.calls = hook.calls;
  }
}

function remove(tool) {
  keptOf(tool.client).delete(tool.name);
  tool.client.unregister(tool.normalized);
}

/** After a cleanup: removes the tool if nobody took it back; ends the calls of an unmounted hook. */
function settle(tool, hook) {
  if (tool.released && keptOf(tool.client).get(tool.name) === tool) remove(tool);
  if (hook.mounted) return;
  for (const call of hook.calls) call.end(unmounted(call.tool.name));
  hook.calls.clear();
}

const unmounted = (name) =>
  new Error(`the component that provides '${name}' unmounted during the call`);

/** One call: the owner's latest handler, its `ctx.signal` also aborted when the owner unmounts. */
function run(tool, input, ctx) {
  const hook = tool.owner;
  return new Promise((resolve, reject) => {
    if (!hook.mounted) return reject(unmounted(tool.name));
    const stop = new AbortController();
    const signal = ctx.signal;
    if (signal.aborted) stop.abort(signal.reason);
    else signal.addEventListener("abort", () => stop.abort(signal.reason), { once: true });
    ctx.signal = stop.signal;
    const call = {
      tool,
      calls: hook.calls,
      end(error) {
        stop.abort(error);
        reject(error);
      },
    };
    hook.calls.add(call);
    new Promise((answer) => answer(hook.declaration.handler(input, ctx)))
      .then(resolve, reject)
      .finally(() => call.calls.delete(call));
  });
}

// The state `useClientToolsState` reads, per client: followed from the first provider or hook
// that names the client on, for as long as the client lives.
const states = new WeakMap();

function stateOf(client) {
  let state = states.get(client);
  if (state) return state;
  const listeners = new Set();
  const running = new Map();
  let snapshot;
  const changed = () => {
    snapshot = { connectionState: client.connectionState, runningCalls: [...running.values()] };
    for (const listener of listeners) listener();
  };
  const ended = ({ callId }) => running.delete(callId) && changed();
  client.on("toolactivated", ({ callId, toolName }) => {
    running.set(callId, { callId, toolName });
    changed();
  });
  client.on("toolresult", ended);
  client.on("toolcancel", ended);
  client.on("connectionchange", changed);
  changed();
  state = {
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    snapshot: () => snapshot,
  };
  states.set(client, state);
  return state;
}

// A provider without a client yet: nothing to follow.
const idle = { connectionState: "disconnected", runningCalls: [] };
const waiting = { subscribe: () => () => {}, snapshot: () => idle };

/** `{connectionState, runningCalls: [{callId, toolName}]}` of the provider's client, kept current. */
export function useClientToolsState() {
  const client = useClientTools();
  const state = client ? stateOf(client) : waiting;
  return useSyncExternalStore(state.subscribe, state.snapshot, state.snapshot);
}
