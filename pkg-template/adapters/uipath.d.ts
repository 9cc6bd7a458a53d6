import type { ClientTools, ClientToolsOptions, JsonSchema } from "../client_tools.js";
import type { PageTools } from "./shared.js";

/** One of an exchange's `clientSideTools` (`session.startExchange({clientSideTools})`). */
export interface UiPathClientSideTool {
  name: string;
  inputSchema?: JsonSchema;
  outputSchema?: JsonSchema;
}

/** What the adapter reads of a `startToolCall` (`ToolCallStartEvent`; `outputSchema` and
 * `isClientSideTool` from the releases after 1.3.8). */
export interface UiPathToolCallStart {
  toolName: string;
  input?: Record<string, unknown>;
  requireConfirmation?: boolean;
  inputSchema?: unknown;
  outputSchema?: unknown;
  isClientSideTool?: boolean;
}

/** What the adapter uses of `@uipath/uipath-typescript`'s `ToolCallStream`. */
export interface UiPathToolCall {
  readonly toolCallId: string;
  /** Undefined when the library saw another event of the call before its start. */
  readonly startEventMaybe?: UiPathToolCallStart;
  readonly ended: boolean;
  onErrorStart(cb: (error: { errorId: string; message: string }) => void): () => void;
  onToolCallEnd(cb: (endToolCall: unknown) => void): () => void;
  /** The releases after 1.3.8: the runtime's go-ahead, with the final input (waited for 5 s at
   * most, then the adapter runs the call itself). */
  onExecutingToolCall?(cb: (event: { input?: Record<string, unknown> }) => void): () => void;
  sendToolCallConfirm(confirmToolCall: { approved: true; input: any } | { approved: false; input?: any }): void;
  sendToolCallEnd(endToolCall?: { output?: unknown; isError?: boolean }): void;
}

/** What the adapter uses of a `MessageStream`. */
export interface UiPathMessage {
  onToolCallStart(cb: (toolCall: UiPathToolCall) => void): () => void;
}

/** What the adapter uses of an `ExchangeStream`. */
export interface UiPathExchange {
  onMessageStart(cb: (message: UiPathMessage) => void): () => void;
}

/** What the adapter uses of a `SessionStream` (`conversations.startSession(id)`). */
export interface UiPathSession {
  readonly ended: boolean;
  startExchange(args?: any): any;
  onExchangeStart(cb: (exchange: UiPathExchange) => void): () => void;
  onSessionEnding(cb: (event: unknown) => void): () => void;
  onSessionEnd(cb: (event: unknown) => void): () => void;
  onErrorStart(cb: (error: { errorId: string; message: string }) => void): () => void;
}

export interface UiPathToolCallsOptions {
  /** How the runtime's confirmations are put to the person; as `new ClientTools({confirm})`
   * (give it the same function). Default: the built-in dialog. */
  confirm?: ClientToolsOptions["confirm"];
  /** The dialog's words, as `new ClientTools({strings})`. */
  strings?: ClientToolsOptions["strings"];
}

export interface UiPathToolCalls<S extends UiPathSession> {
  /** `session.startExchange(args)`, the page's tools in `clientSideTools` (then those of `args`
   * the page has not: agent-defined tools answered by the result form); the exchange's tool calls
   * are answered. */
  startExchange(
    args?: NonNullable<Parameters<S["startExchange"]>[0]> & { clientSideTools?: UiPathClientSideTool[] },
  ): ReturnType<S["startExchange"]>;
  /** Stops answering: each running call ends with the error result "the page stopped
   * client-tools/uipath" (`sendToolCallEnd({isError: true})`) and its handler's `ctx.signal`
   * aborts with that reason; the `ClientTools` is detached. */
  stop(): void;
}

/** The page's tools as an exchange's `clientSideTools` (a `registerHandler` tool by name). */
export function uiPathClientSideTools(tools: PageTools): UiPathClientSideTool[];

/**
 * Answers the session's client-side tool calls with the page's tools (`sendToolCallEnd({output,
 * isError})`), after the person's confirmation when the runtime asks for one
 * (`sendToolCallConfirm({approved, input})`), on the runtime's `executingToolCall` where the library
 * has it; an agent-defined tool without a handler is answered by the person through the result form
 * from its `outputSchema`. Input the tool's schema rejects is the call's error result (the person is
 * not asked). `toolCallError`, `sessionEnding` and a disconnect abort the handler's `ctx.signal`.
 * The adapter is the runtime of `tools` (`attachTransport`): throws a `TypeError` when `tools` is
 * connected to another.
 */
export function uiPathToolCalls<S extends UiPathSession>(
  tools: ClientTools,
  session: S,
  options?: UiPathToolCallsOptions,
): UiPathToolCalls<S>;
