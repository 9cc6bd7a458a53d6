// The runtime adapters (SPEC §12) as a page writes them, type-checked with `tsc --strict` against
// the package's `adapters/*.d.ts` through its subpath exports (cargo xtask test). The runtimes'
// own libraries are not installed here: their objects are written in the shapes the adapters take.
import { ClientTools } from "client-tools";
import { agUiSubscriber, agUiTools, type AgUiTool } from "client-tools/ag-ui";
import { aiSdkOnToolCall, aiSdkTools, type AiSdkToolOutput } from "client-tools/ai-sdk";
import { elevenLabsClientTools } from "client-tools/elevenlabs";
import { realtimeHandler, realtimeTools, type RealtimeFunctionTool } from "client-tools/openai-realtime";
import {
  uiPathClientSideTools,
  uiPathToolCalls,
  type UiPathClientSideTool,
  type UiPathExchange,
  type UiPathToolCall,
} from "client-tools/uipath";

export function adapters(tools: ClientTools): void {
  // AG-UI: the tools for a run, and the subscriber that answers the page's tool calls.
  const agent = {
    messages: [] as unknown[],
    addMessage(message: { id: string; role: "tool"; toolCallId: string; content: string; error?: string }) {
      this.messages.push(message);
    },
    async runAgent(parameters?: { tools?: AgUiTool[] }) {
      return parameters;
    },
    subscribe(_subscriber: object) {},
  };
  const forRun: AgUiTool[] = agUiTools(tools);
  agent.subscribe(agUiSubscriber(tools, agent));
  void agent.runAgent({ tools: forRun });
  // @ts-expect-error an agent must be able to take the tool messages
  agUiSubscriber(tools, { runAgent: async () => undefined });

  // ElevenLabs: the `clientTools` of `Conversation.startSession`.
  const clientTools: Record<string, (parameters: any) => Promise<string>> = elevenLabsClientTools(tools);
  void clientTools["add_numbers"]?.({ a: 1, b: 2 });

  // OpenAI Realtime: tools for `session.update`, a handler for the server events.
  const socket = { send(_event: object) {} };
  const sessionTools: RealtimeFunctionTool[] = realtimeTools(tools);
  socket.send({ type: "session.update", session: { type: "realtime", tools: sessionTools } });
  const handler = realtimeHandler(tools, (event) => socket.send(event));
  void handler({ type: "response.function_call_arguments.done", call_id: "c1", name: "add_numbers", arguments: "{}" });
  handler.stop();
  // @ts-expect-error `send` takes the client events, not strings
  realtimeHandler(tools, (event: string) => socket.send({ event }));

  // AI SDK: definitions for the route, `onToolCall` for `useChat` / `Chat`.
  const definitions = aiSdkTools(tools);
  const schema = definitions["add_numbers"]?.inputSchema;
  const outputs: AiSdkToolOutput[] = [];
  const onToolCall = aiSdkOnToolCall(tools, (output) => {
    outputs.push(output);
    if (output.state === "output-error") {
      const text: string = output.errorText;
      void text;
    }
  });
  onToolCall({ toolCall: { toolCallId: "c1", toolName: "add_numbers", input: { a: 1, b: 2 } } });
  void schema;

  // UiPath: a `@uipath/uipath-typescript` session (its `SessionStream`, as far as the adapter uses
  // it); `startExchange` keeps the session's own signature.
  const toolCall: UiPathToolCall = {
    toolCallId: "t1",
    startEventMaybe: { toolName: "add_numbers", input: { a: 1, b: 2 }, isClientSideTool: true },
    ended: false,
    onErrorStart: () => () => {},
    onToolCallEnd: () => () => {},
    onExecutingToolCall: () => () => {},
    sendToolCallConfirm(_confirm) {},
    sendToolCallEnd(_end) {},
  };
  const exchange: UiPathExchange = {
    onMessageStart: (cb) => (cb({ onToolCallStart: (onStart) => (onStart(toolCall), () => {}) }), () => {}),
  };
  const session = {
    ended: false,
    startExchange(args?: { clientSideTools?: UiPathClientSideTool[] }) {
      return { clientSideTools: args?.clientSideTools, sendMessageWithContentPart: async (_m: { data: string }) => {} };
    },
    onExchangeStart: (cb: (exchange: UiPathExchange) => void) => (cb(exchange), () => {}),
    onSessionEnding: (_cb: (event: { timeToLiveMS: number }) => void) => () => {},
    onSessionEnd: (_cb: (event: object) => void) => () => {},
    onErrorStart: (_cb: (error: { errorId: string; message: string }) => void) => () => {},
  };
  const declared: UiPathClientSideTool[] = uiPathClientSideTools(tools);
  const calls = uiPathToolCalls(tools, session, { confirm: (call) => ({ action: "modify", input: call.input }) });
  void calls.startExchange({ clientSideTools: [...declared, { name: "approve_invoice" }] }).sendMessageWithContentPart({ data: "Hi" });
  calls.stop();
  // @ts-expect-error a session must say when its tool calls start (its exchanges)
  uiPathToolCalls(tools, { ended: false, startExchange() {} });
  // @ts-expect-error a confirmation carries the approved input
  toolCall.sendToolCallConfirm({ approved: true });
}
