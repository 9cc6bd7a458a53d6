import type { JsonSchema, PageTools } from "./shared.js";

/** An AG-UI `Tool` (`RunAgentInput.tools`). */
export interface AgUiTool {
  name: string;
  description: string;
  parameters: JsonSchema;
}

/** The parts of an AG-UI agent (`AbstractAgent`, `HttpAgent`) the subscriber uses. */
export interface AgUiAgentLike {
  addMessage(message: { id: string; role: "tool"; toolCallId: string; content: string; error?: string }): void;
  runAgent(parameters?: { tools?: AgUiTool[] }): Promise<unknown>;
}

/** The page's tools as AG-UI `Tool[]`, for `agent.runAgent({ tools })`. */
export function agUiTools(tools: PageTools): AgUiTool[];

/**
 * An `AgentSubscriber` for `agent.subscribe(…)`: runs each of the page's tool calls once
 * (`TOOL_CALL_END`), adds the `{role: "tool"}` messages when the run is over (`error` set on a
 * failed call) and runs the agent again with `agUiTools(tools)`.
 */
export function agUiSubscriber(tools: PageTools, agent: AgUiAgentLike): {
  onRunInitialized(): void;
  onToolCallEndEvent(params: { event: { toolCallId: string }; toolCallName: string; toolCallArgs: Record<string, any> }): void;
  onRunFailed(): void;
  onRunFinalized(): void;
};
