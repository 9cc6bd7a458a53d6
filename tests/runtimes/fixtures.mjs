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
 * (`resources/realtime/realtime.d.ts`: `SessionCreatedEvent`, `ResponseFunctionCallArgumentsDoneEvent`),
 * the arguments as the JSON text the model wrote.
 */
export const realtime = {
  sessionCreated: {
    type: "session.created",
    event_id: "event_0",
    session: { type: "realtime", object: "realtime.session", id: "sess_local", model: "gpt-realtime", tools: [] },
  },
  // `ResponseCreatedEvent` / `ResponseDoneEvent`: one response carries its function calls.
  responseCreated: (response_id, n) => ({
    type: "response.created",
    event_id: `event_created_${n}`,
    response: { id: response_id, object: "realtime.response", status: "in_progress", output: [] },
  }),
  responseDone: (response_id, n) => ({
    type: "response.done",
    event_id: `event_done_${n}`,
    response: { id: response_id, object: "realtime.response", status: "completed", output: [] },
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
