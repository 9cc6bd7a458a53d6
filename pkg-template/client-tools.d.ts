// Types of the script embed (`client-tools.js`, the package's `./embed` export): the globals it sets.
import type { ClientTools } from "./client_tools.js";

/** One queued command: a function called with the page's instance and the class, or `["method", ...args]`. */
export type ClientToolsCommand =
  | ((tools: ClientTools | null, ClientToolsClass: ClientToolsGlobal) => void)
  | [method: string, ...args: unknown[]];

/** `window.ClientTools` once the package has loaded. */
export type ClientToolsGlobal = typeof ClientTools & {
  /** The instance made from the script's `data-endpoint`, or `null` without one. */
  tools: ClientTools | null;
  /** Runs commands at once (before loading, `window.ClientTools` is the array that queues them). */
  push(...commands: ClientToolsCommand[]): void;
};

declare global {
  interface Window {
    /** The queue until the package has loaded, then the class; absent before the embed runs. */
    ClientTools?: ClientToolsGlobal | ClientToolsCommand[];
    /** Set by the embed as it starts loading. */
    clientToolsReady?: Promise<ClientToolsGlobal>;
  }
  interface WindowEventMap {
    "clienttools:ready": CustomEvent<{ ClientTools: ClientToolsGlobal; tools: ClientTools | null }>;
  }
}
