import type { ClientTools, JsonSchema } from "../client_tools.js";

/** What the adapters use of a `ClientTools`: its list, `invoke` and `toolschanged`. */
export type PageTools = Pick<ClientTools, "list" | "invoke" | "on">;
export type { JsonSchema };
