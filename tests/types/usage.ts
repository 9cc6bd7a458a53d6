// Every API of the package as a page writes it, type-checked with `tsc --strict` against the
// generated `pkg/client_tools.d.ts` (cargo xtask test). Lines marked `@ts-expect-error` must stay
// errors: they prove the types are not loose (`any`) where a mistake should be caught.
import init, {
  ClientTools,
  SchemaValidator,
  normalizeToolName,
  type CallToolResult,
  type ClientToolsError,
  type ConfirmDecision,
  type ConfirmRequest,
  type ConnectionState,
  type ErrorCode,
  type FunctionDeclaration,
  type ListedTool,
  type ToolContext,
  type WarningCode,
} from "client-tools";

async function main(): Promise<void> {
  await init();

  // Options may be left out, or given in full.
  const pageOnly = new ClientTools();
  const tools = new ClientTools({
    endpoint: "wss://agent.example/ws",
    token: "page-token",
    allow: ["Read Cart"],
    defaultTimeoutMs: 10_000,
    confirm: async (request: ConfirmRequest): Promise<ConfirmDecision> => {
      const id: string = request.callId;
      const original: string = request.originalName;
      return id && original ? { action: "approve" } : { action: "reject", reason: "no" };
    },
    allowForSession: true,
    allowAlways: true,
    strings: { approve: "Oui", reject: "Non", allowAlways: "Toujours autoriser {tool} sur ce site" },
    forms: true,
    exposeToBrowser: false,
    adoptBrowserTools: false,
    autoConnect: false,
  });
  // @ts-expect-error: an unknown option
  new ClientTools({ endpiont: "ws://x" });
  // @ts-expect-error: an unknown UI string key
  new ClientTools({ strings: { nope: "x" } });

  const declaration: FunctionDeclaration = {
    name: "Read Cart",
    description: "The items in the cart",
    parameters: { type: "object", properties: { limit: { type: "integer" } } },
    outputSchema: { type: "object" },
    annotations: { readOnlyHint: true, untrustedContentHint: true, title: "Read the cart" },
    requireConfirmation: false,
    timeoutMs: 5_000,
    concurrency: 1,
    handler: async (input: { limit?: number }, ctx: ToolContext) => {
      const id: string = ctx.callId;
      const names: string = ctx.toolName + ctx.originalName + id;
      ctx.reportProgress(1, 2, "halfway");
      ctx.log("info", { limit: input.limit }, "usage");
      ctx.partial({ rows: 1 });
      if (input.limit === 0) {
        const answer = await ctx.elicit({ message: "Which board?", requestedSchema: { type: "object", properties: {} } });
        const both = await ctx.input({ roots: { method: "roots/list" } });
        return `${answer.action} ${both.roots}`;
      }
      if (ctx.signal.aborted) return "stopped";
      return { items: [], limit: input.limit, names };
    },
  };
  const name: string = tools.defineFunction(declaration);
  // @ts-expect-error: a declaration needs a handler
  tools.defineFunction({ name: "x" });
  tools.registerHandler("read_board_tasks", (input: unknown) => ({ input }));
  // @ts-expect-error: a tool name is a string
  tools.registerHandler(5, () => null);
  const removed: boolean = tools.unregister(name);

  const listed: ListedTool[] = tools.list();
  const kinds: ("function" | "handler" | "form" | "browser")[] = listed.map((tool) => tool.kind);

  // Events are typed by their name.
  const off: () => void = tools.on("toolresult", (event) => {
    const ms: number = event.durationMs;
    const failed: boolean = event.isError;
    console.log(ms, failed);
  });
  tools.on("warning", (event) => {
    const code: WarningCode = event.code;
    const known: boolean = code === "output_invalid" || code === "parameters_type_assumed";
    // @ts-expect-error: not a warning code
    const unknown: boolean = event.code === "outputInvalid";
    console.log(known, unknown, event.message, event.toolName);
  });
  tools.on("connectionchange", (event) => {
    const state: ConnectionState = event.state;
    console.log(state);
  });
  tools.on("toolactivated", (event) => console.log(event.toolName, event.callId));
  tools.on("toolqueued", (event) => {
    const position: number = event.position;
    console.log(event.toolName, event.callId, position);
  });
  // @ts-expect-error: concurrency is a number
  tools.defineFunction({ ...declaration, concurrency: "1" });
  tools.on("toolcancel", (event) => console.log(event.reason, event.partial));
  tools.on("toolschanged", (event) => console.log(event.type));
  // @ts-expect-error: no such event
  tools.on("toolresults", () => {});
  // @ts-expect-error: a toolresult has no reason
  tools.on("toolresult", (event) => console.log(event.reason));
  off();

  const result: CallToolResult = await tools.invoke("read_cart", { limit: 3 });
  const untrusted: boolean = result._meta?.["clienttools/untrusted"] === true;
  console.log(untrusted);
  const noInput: CallToolResult = await tools.invoke("read_cart");
  console.log(noInput.isError);
  const first = result.content[0];
  // @ts-expect-error: a block is text only once its type says so (a handler may return images)
  console.log(first.text);
  const text: string = first.type === "text" ? first.text : first.type;
  const failed: boolean = result.isError;
  console.log(text, failed, result.structuredContent, kinds, removed);

  try {
    await tools.connect();
  } catch (error) {
    const code: ErrorCode = (error as ClientToolsError).code;
    if (code === "NOT_CONNECTED" || code === "CONNECTION_FAILED") console.log(code);
    // @ts-expect-error: not an error code
    if (code === "TIMEOUT") console.log(code);
  }
  const state: ConnectionState = tools.connectionState;
  const session: string | undefined = tools.sessionId;
  // "Always allow": the user's approvals, listed and revoked.
  for (const { name, approvedAt } of tools.approvals.list()) console.log(name, new Date(approvedAt));
  const revoked: number = tools.approvals.revoke("Read Cart") + tools.approvals.revoke();
  // @ts-expect-error: a tool's name is a string
  tools.approvals.revoke(1);
  tools.disconnect();

  // A transport of the page's own instead of the WebSocket.
  pageOnly.attachTransport((frame: string) => console.log(frame));
  pageOnly.receiveFrame('{"jsonrpc":"2.0","id":1,"method":"ping"}');

  // Resources, prompts and completion (SPEC §11).
  const removeBoard: () => boolean = pageOnly.defineResource({
    uri: "board://launch/tasks", name: "board", mimeType: "application/json",
    read: (uri: string, _vars: Record<string, string>, ctx: ToolContext) => JSON.stringify({ uri, call: ctx.callId }),
  });
  pageOnly.defineResource({
    uriTemplate: "board://launch/task/{id}", name: "task",
    read: async (uri, vars) => ({ contents: [{ uri, text: vars.id }] }),
    complete: { id: (value: string) => [value + "1"] },
  });
  pageOnly.defineResource({ uri: "board://logo", name: "logo", read: () => new Uint8Array([1]) });
  // @ts-expect-error: complete needs a uriTemplate
  pageOnly.defineResource({ uri: "a:b", name: "x", read: () => "", complete: {} });
  // @ts-expect-error: a resource needs read
  pageOnly.defineResource({ uri: "a:b", name: "x" });
  pageOnly.definePrompt({
    name: "Plan the day",
    arguments: [{ name: "focus", required: true }],
    get: async ({ focus }, ctx) => {
      await ctx.elicit({ message: "Mood?" });
      return { messages: [{ role: "user", content: { type: "text", text: focus } }] };
    },
    complete: { focus: async (value, { arguments: known }) => ({ values: [value, known.focus ?? ""], hasMore: false }) },
  });
  // @ts-expect-error: a message's role is user or assistant
  pageOnly.definePrompt({ name: "x", get: () => [{ role: "system", content: { type: "text", text: "" } }] });
  const watched: boolean = pageOnly.resourceChanged("board://launch/tasks");
  console.log(removeBoard(), watched);

  const validator = new SchemaValidator({ type: "object", required: ["a"] });
  const errors: string[] | undefined = validator.validate({});
  const normalized: string = normalizeToolName("Get Cart");
  console.log(state, session, errors, normalized);
  pageOnly.free();
}

main();
