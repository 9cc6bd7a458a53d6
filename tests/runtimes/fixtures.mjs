// What each runtime's server side says, recorded as the runtime's own documentation, types and
// tests give it. Every runtime asks for the same three calls of the page's tools in one turn —
// one that succeeds, one whose input the schema rejects, one the person rejects — then one call of
// a tool the page defined after the session began.

/** The calls every runtime makes: [call id, tool, arguments]. */
export const CALLS = [
  ["call_add", "add_numbers", { a: 2, b: 3 }],
  ["call_bad", "add_numbers", { a: "two" }],
  ["call_wipe", "wipe_board", {}],
];
export const LATE_CALL = ["call_late", "late_tool", { word: "hello" }];

/**
 * AG-UI: the events of a run that asks for frontend tool calls, as the AG-UI docs describe a tool
 * call ("Tools" and "Events": TOOL_CALL_START / TOOL_CALL_ARGS / TOOL_CALL_END inside
 * RUN_STARTED … RUN_FINISHED, arguments streamed as JSON text) and `@ag-ui/core`'s event schemas
 * type them; the stream is encoded by `@ag-ui/encoder`'s `EventEncoder`, the encoder AG-UI servers
 * use. A run whose input carries the tool messages answers with text.
 */
export function agUiRun(input, calls) {
  const messageId = `msg_${input.runId}`;
  const started = { type: "RUN_STARTED", threadId: input.threadId, runId: input.runId };
  const finished = { type: "RUN_FINISHED", threadId: input.threadId, runId: input.runId };
  if (calls.length === 0) {
    return [
      started,
      { type: "TEXT_MESSAGE_START", messageId, role: "assistant" },
      { type: "TEXT_MESSAGE_CONTENT", messageId, delta: "All done." },
      { type: "TEXT_MESSAGE_END", messageId },
      finished,
    ];
  }
  const events = [started];
  for (const [toolCallId, toolCallName, args] of calls) {
    const text = JSON.stringify(args);
    events.push(
      { type: "TOOL_CALL_START", toolCallId, toolCallName, parentMessageId: messageId },
      // The arguments arrive in pieces, as a model streams them.
      { type: "TOOL_CALL_ARGS", toolCallId, delta: text.slice(0, 4) },
      { type: "TOOL_CALL_ARGS", toolCallId, delta: text.slice(4) },
      { type: "TOOL_CALL_END", toolCallId },
    );
  }
  events.push(finished);
  return events;
}

/**
 * ElevenLabs ConvAI (WebSocket): the messages of `@elevenlabs/types` (its AsyncAPI types:
 * `ConversationInitiationMetadataEvent`, `ClientToolCallMessage`, `ClientToolResult`), in the order
 * `@elevenlabs/client`'s `WebSocketConnection` expects them (the first message the metadata).
 */
export const elevenLabs = {
  metadata: {
    type: "conversation_initiation_metadata",
    conversation_initiation_metadata_event: {
      conversation_id: "conv_local",
      agent_output_audio_format: "pcm_16000",
      user_input_audio_format: "pcm_16000",
    },
  },
  toolCall: ([tool_call_id, tool_name, parameters], event_id) => ({
    type: "client_tool_call",
    client_tool_call: { tool_name, tool_call_id, parameters, event_id },
  }),
};

/**
 * OpenAI Realtime (WebSocket): the server events of the `openai` package's types
 * (`resources/realtime/realtime.d.ts`: `SessionCreatedEvent`, `ResponseCreatedEvent`,
 * `ResponseFunctionCallArgumentsDoneEvent`, `ResponseDoneEvent`, `RealtimeErrorEvent`),
 * the arguments as the JSON text the model wrote.
 */
export const realtime = {
  sessionCreated: {
    type: "session.created",
    event_id: "event_0",
    session: { type: "realtime", object: "realtime.session", id: "sess_local", model: "gpt-realtime", tools: [] },
  },
  // `ResponseCreatedEvent` / `ResponseDoneEvent`: one response carries its function calls; its
  // `metadata` is the one its `response.create` gave (`null` for one the server began itself).
  responseCreated: (response_id, n, metadata = null) => ({
    type: "response.created",
    event_id: `event_created_${n}`,
    response: { id: response_id, object: "realtime.response", status: "in_progress", output: [], metadata },
  }),
  responseDone: (response_id, n) => ({
    type: "response.done",
    event_id: `event_done_${n}`,
    response: { id: response_id, object: "realtime.response", status: "completed", output: [] },
  }),
  // `RealtimeErrorEvent`: what the API answers a `response.create` while a response is under way
  // (or asked for and not begun), naming the client event it refuses (`error.event_id`).
  activeResponseError: (event_id, response_id) => ({
    type: "error",
    event_id: `event_error_${event_id}`,
    error: {
      type: "invalid_request_error",
      code: "conversation_already_has_active_response",
      message: `Conversation already has an active response in progress: ${response_id ?? "(not begun)"}. Wait until the response is finished before creating a new one.`,
      param: null,
      event_id: event_id ?? null,
    },
  }),
  argumentsDone: ([call_id, name, args], n, response_id = `resp_${n}`) => ({
    type: "response.function_call_arguments.done",
    event_id: `event_${n}`,
    response_id,
    item_id: `item_${n}`,
    output_index: 0,
    call_id,
    name,
    arguments: JSON.stringify(args),
  }),
};

/**
 * AI SDK: the route is the AI SDK's own `streamText` … `toUIMessageStreamResponse()`, with the
 * language model of `ai/test` (`MockLanguageModelV4`, the model the AI SDK's tests use) streaming
 * these `LanguageModelV4StreamPart`s (`@ai-sdk/provider`): tool calls, then, once the tool outputs
 * are in the messages, text.
 */
export function aiSdkModelParts(calls) {
  const usage = {
    inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
    outputTokens: { total: 1, text: 1, reasoning: 0 },
  };
  if (calls.length === 0) {
    return [
      { type: "text-start", id: "t1" },
      { type: "text-delta", id: "t1", delta: "All done." },
      { type: "text-end", id: "t1" },
      { type: "finish", finishReason: { unified: "stop", raw: "stop" }, usage },
    ];
  }
  return [
    ...calls.map(([toolCallId, toolName, args]) => ({
      type: "tool-call",
      toolCallId,
      toolName,
      input: JSON.stringify(args),
    })),
    { type: "finish", finishReason: { unified: "tool-calls", raw: "tool_calls" }, usage },
  ];
}

/**
 * UiPath conversational agents (`@uipath/uipath-typescript`'s `ConversationalAgent`, socket.io
 * event `ConversationEvent`): the events as 1.3.8's `dist/conversational-agent/index.d.ts` types
 * them (`ConversationEvent` → `ExchangeEvent` → `MessageEvent` → `ToolCallEvent`: `startToolCall`,
 * `toolCallError`, `endToolCall`; `sessionStarted`, `sessionEnding`) and its event helpers read them
 * (`MessageEventHelperImpl.dispatch`, `ToolCallEventHelperImpl.dispatch`), with what the releases
 * after it add in the repository's
 * `src/models/conversational-agent/conversations/types/events/protocol.types.ts` (1.5.1 to 1.6.2:
 * `clientSideTools` on `startExchange`, `isClientSideTool` and `outputSchema` on `startToolCall`,
 * `executingToolCall` with the final input, "emitted for both server-side and client-side tools").
 * The runtime sends `executingToolCall` once a confirmation was approved, else a moment after the
 * start (a 1.3.8 conversation's client-side call: once it ended, server.mjs). What the client sends is what 1.3.8's helpers emit: `startSession`, `startExchange`, the
 * user's message, `confirmToolCall` (`sendToolCallConfirm`), `endToolCall` (`sendToolCallEnd`).
 */
export const UIPATH = {
  // The SDK's `secret`, sent as socket.io `auth: {token}`; the org and tenant as query parameters
  // (its `WEBSOCKET_QUERY_PARAMS`).
  token: "uipath-local-secret",
  orgName: "local-org",
  tenantName: "local-tenant",
  orgParam: "x-uipath-internal-accountid",
  tenantParam: "x-uipath-internal-tenantid",
  // How long after a start the runtime sends `executingToolCall` (no confirmation asked).
  executingAfterMs: 300,
  // How long a session lives after `sessionEnding` unless the client ends it (then the server
  // disconnects it).
  endingTtlMs: 10_000,
};

const ADD_SCHEMA = {
  type: "object",
  properties: { a: { type: "number" }, b: { type: "number" } },
  required: ["a", "b"],
};

/** The agent's calls in the first exchange: [toolCallId, toolName, input, more of `startToolCall`]
 * (`isClientSideTool: true` unless said; `undefined`: the field left out, as a runtime of 1.3.8's
 * time sends a start). A sum; input the page's schema rejects; a tool the page asks the person
 * about itself (rejected); the runtime asking for confirmation, approved with an edit, refused,
 * approved as it is (the runtime's `executingToolCall` then carries another final input,
 * `UIPATH_FINAL_INPUTS`), approved and never followed by `executingToolCall`
 * (`UIPATH_NO_GO_AHEAD`), and asked with input the schema rejects; an agent-defined tool the page
 * has no handler for (its result form); a tool no one defined; a call the runtime reports an error
 * for while it runs; a server-side tool; and without the field, a page tool and a server-side
 * tool. */
export const UIPATH_CALLS = [
  ["call_add", "add_numbers", { a: 2, b: 3 }],
  ["call_bad", "add_numbers", { a: "two" }],
  ["call_wipe", "wipe_board", {}],
  ["call_confirm", "add_numbers", { a: 1, b: 1 }, { requireConfirmation: true, inputSchema: ADD_SCHEMA }],
  ["call_refuse", "add_numbers", { a: 5, b: 5 }, { requireConfirmation: true, inputSchema: ADD_SCHEMA }],
  ["call_final", "add_numbers", { a: 10, b: 10 }, { requireConfirmation: true, inputSchema: ADD_SCHEMA }],
  ["call_no_go", "add_numbers", { a: 6, b: 6 }, { requireConfirmation: true, inputSchema: ADD_SCHEMA }],
  ["call_confirm_bad", "add_numbers", { a: "two", b: 1 }, { requireConfirmation: true, inputSchema: ADD_SCHEMA }],
  [
    "call_form",
    "approve_invoice",
    { invoice: "INV-7" },
    {
      outputSchema: {
        type: "object",
        title: "Approve the invoice",
        properties: { approved: { type: "boolean" }, note: { type: "string" } },
        required: ["approved"],
      },
    },
  ],
  ["call_unknown", "no_such_tool", {}],
  ["call_error", "wait_for_signal", {}],
  ["call_server", "search_web", { query: "weather" }, { isClientSideTool: false }],
  ["call_old", "add_numbers", { a: 4, b: 4 }, { isClientSideTool: undefined }],
  ["call_old_server", "search_web", { query: "news" }, { isClientSideTool: undefined }],
];
/** The final input the runtime's `executingToolCall` carries after an approval, where it is not
 * the one the person approved (later releases: "the final tool input, reflecting any modifications
 * made during tool-call confirmation"). */
export const UIPATH_FINAL_INPUTS = { call_final: { a: 10, b: 20 } };
/** The calls whose approval the runtime never follows with `executingToolCall`. */
export const UIPATH_NO_GO_AHEAD = ["call_no_go"];
/** The tools the runtime runs itself (it sends their `endToolCall`). */
export const UIPATH_SERVER_TOOLS = ["search_web"];
/** The second exchange, when its `clientSideTools` name the tool the page defined meanwhile. */
export const UIPATH_LATE_CALL = ["call_late", "late_tool", { word: "hello" }];
/** What the runtime does to a running call of `wait_for_signal`, by call id, once its handler runs
 * (`call_stopped`: nothing; the page stops the adapter). */
export const UIPATH_INTERRUPTIONS = {
  call_error: "toolCallError",
  call_ending: "sessionEnding",
  call_cut: "disconnect",
};

/** The runtime's events, each wrapped as the `ConversationEvent` of one exchange's message. */
export const uiPath = {
  sessionStarted: (conversationId) => ({ conversationId, sessionStarted: {} }),
  sessionEnding: (conversationId) => ({ conversationId, sessionEnding: { timeToLiveMS: UIPATH.endingTtlMs } }),
  inMessage: (conversationId, exchangeId, messageId, message) => ({
    conversationId,
    exchange: { exchangeId, message: { messageId, ...message } },
  }),
  messageStart: () => ({ startMessage: { role: "assistant" } }),
  text: (contentPartId, data) => ({
    contentPart: { contentPartId, startContentPart: { mimeType: "text/markdown" }, chunk: { data }, endContentPart: {} },
  }),
  messageEnd: () => ({ endMessage: {} }),
  exchangeEnd: (conversationId, exchangeId) => ({ conversationId, exchange: { exchangeId, endExchange: {} } }),
  toolCallStart: ([toolCallId, toolName, input, more]) => ({
    toolCall: { toolCallId, startToolCall: { toolName, input, isClientSideTool: true, ...more } },
  }),
  executing: (toolCallId, input) => ({ toolCall: { toolCallId, executingToolCall: { input } } }),
  toolCallError: (toolCallId) => ({
    toolCall: {
      toolCallId,
      toolCallError: { errorId: `error_${toolCallId}`, startError: { message: "the tool call timed out on the runtime" } },
    },
  }),
  // A server-side tool's result, sent by the runtime itself.
  toolCallEnd: (toolCallId, output) => ({ toolCall: { toolCallId, endToolCall: { output, isError: false } } }),
};
