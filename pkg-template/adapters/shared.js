// What every adapter shares: which of the page's tools a runtime is told about, and the text a
// runtime reads for an MCP result. Each call goes through `tools.invoke`, so the registry's
// validation, confirmation, timeout, events and one outcome per call hold for every runtime.

/** The tools a runtime can be told about: not bare handlers, whose schema comes with each call. */
export function listed(tools) {
  return tools.list().filter((tool) => tool.kind !== "handler");
}

/** Whether `name` is one of those (by its normalized or its original name). */
export function isListed(tools, name) {
  return listed(tools).some((tool) => tool.name === name || tool.originalName === name);
}

/** `tools.invoke`, a rejection (an unknown tool) becoming an error result like any other. */
export async function invoke(tools, name, input) {
  try {
    return await tools.invoke(name, input ?? {});
  } catch (error) {
    return failed(error?.message ?? String(error));
  }
}

/** Whether `result` is marked as holding content the tool does not vouch for (its tool's
 * `annotations.untrustedContentHint`: the page sets `_meta["clienttools/untrusted"]: true`). */
export function isUntrusted(result) {
  return result?._meta?.["clienttools/untrusted"] === true;
}

/** The mark itself, for a runtime's own metadata field. */
export const UNTRUSTED = { "clienttools/untrusted": true };

/** An error result with `text`. */
export function failed(text) {
  return { content: [{ type: "text", text }], isError: true };
}

/** The text of a result: its text blocks, or all its content as JSON when it has other blocks. */
export function resultText(result) {
  const blocks = result.content ?? [];
  return blocks.every((block) => block.type === "text")
    ? blocks.map((block) => block.text).join("\n")
    : JSON.stringify(blocks);
}
