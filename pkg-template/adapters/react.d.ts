import type { ReactElement, ReactNode } from "react";
import type { ClientTools, ConnectionState, FunctionDeclaration } from "../client_tools.js";

export interface ClientToolsProviderProps {
  /** `null` (or `undefined`) while there is none yet: the hooks wait for it. */
  client: ClientTools | null | undefined;
  children?: ReactNode;
}

/** Gives the components under it `client`. */
export function ClientToolsProvider(props: ClientToolsProviderProps): ReactElement;

/** The `ClientTools` of the nearest `<ClientToolsProvider>`, `null` while it has none (throws without a provider). */
export function useClientTools(): ClientTools | null;

/**
 * Defines the tool while the component is mounted: one registration under StrictMode and Fast
 * Refresh; calls run the latest render's `handler`; defined again only when the rest of the
 * declaration changes (name, description, schemas, …). A call still running when the component
 * unmounts ends with an error result, and its `ctx.signal` aborts.
 */
export function useClientTool(declaration: FunctionDeclaration): void;

/** A call whose handler runs now (from `toolactivated` to its `toolresult` or `toolcancel`). */
export interface RunningCall {
  callId: string;
  toolName: string;
}

export interface ClientToolsState {
  connectionState: ConnectionState;
  runningCalls: readonly RunningCall[];
}

/**
 * The client's connection state and running calls; the component renders again when they change.
 * `disconnected` and none while the provider has no client.
 */
export function useClientToolsState(): ClientToolsState;
