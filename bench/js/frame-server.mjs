// What both JavaScript references share (reference.mjs: ajv; reference-csp.mjs: the CSP-safe
// validator): the MCP TypeScript SDK `Server` doing the SDK's job behind a text-frame transport.
// Only the validator differs between them, so only it is a parameter. Imported, never an entry of
// its own: each reference is bundled with it (package.json `bundle`).

import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

/** A transport that speaks JSON-RPC text frames, like a WebSocket would: `receive(text)` in,
 *  `onframe(text)` out. */
class FrameTransport {
  onframe = () => {};
  async start() {}
  async close() {}
  async send(message) {
    this.onframe(JSON.stringify(message));
  }
  receive(text) {
    this.onmessage(JSON.parse(text));
  }
}

/** An MCP server doing the SDK's job: list, validate input, run the handler, validate output, answer.
 *  `tools`: [{ name, description, inputSchema, outputSchema?, handler }]; `compile(schema)` returns
 *  a check of one value: `null` when valid, else the errors as text; `options`: the `Server`'s
 *  (name, extra capabilities' options). Returns its transport. */
export async function serveTools(tools, compile, { name, serverOptions = {} }) {
  const byName = new Map(
    tools.map((tool) => [
      tool.name,
      { tool, input: compile(tool.inputSchema), output: tool.outputSchema && compile(tool.outputSchema) },
    ]),
  );
  const server = new Server(
    { name, version: "1.0.0" },
    { capabilities: { tools: { listChanged: true } }, ...serverOptions },
  );
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: tools.map(({ name, description, inputSchema, outputSchema }) => ({ name, description, inputSchema, outputSchema })),
  }));
  const error = (text) => ({ content: [{ type: "text", text }], isError: true });
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const entry = byName.get(request.params.name);
    if (!entry) return error(`no tool named '${request.params.name}'`);
    const input = request.params.arguments ?? {};
    const refused = entry.input(input);
    if (refused !== null) return error(`invalid input: ${refused}`);
    let result;
    try {
      result = await entry.tool.handler(input);
    } catch (thrown) {
      return error(String(thrown?.message ?? thrown));
    }
    const wrong = entry.output ? entry.output(result) : null;
    if (wrong !== null) return error(`invalid output: ${wrong}`);
    return { content: [{ type: "text", text: JSON.stringify(result) }], structuredContent: result };
  });
  const transport = new FrameTransport();
  await server.connect(transport);
  return transport;
}
