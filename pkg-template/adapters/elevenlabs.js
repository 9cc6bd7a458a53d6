// client-tools/elevenlabs: the page's tools as `clientTools` of `@elevenlabs/client`
// (docs/runtimes/elevenlabs.md in the repository).
import { invoke, listed, resultText } from "./shared.js";

/**
 * The `clientTools` of `Conversation.startSession`: one function per tool, by its name. The object
 * stays in step with the page's tools (`toolschanged`): a tool defined later is there for the next
 * `client_tool_call`. A failed call throws its error text, which the client sends with
 * `is_error: true`.
 */
export function elevenLabsClientTools(tools) {
  const clientTools = {};
  const follow = () => {
    const names = new Set(listed(tools).map((tool) => tool.name));
    for (const name of Object.keys(clientTools)) {
      if (!names.has(name)) delete clientTools[name];
    }
    for (const name of names) {
      clientTools[name] ??= async (parameters) => {
        const result = await invoke(tools, name, parameters);
        const text = resultText(result);
        if (result.isError) throw new Error(text);
        return text;
      };
    }
  };
  follow();
  tools.on("toolschanged", follow);
  return clientTools;
}
