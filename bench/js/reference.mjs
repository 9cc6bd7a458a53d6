// The JavaScript a page would otherwise use for client tools, bundled into one browser module:
// the official MCP TypeScript SDK `Server` validating with ajv (+ ajv-formats, as the MCP SDK's own
// validator does). Its size and start-up are measured against the SDK's package.

import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

/** ajv configured like the MCP TypeScript SDK's validator, for JSON Schema 2020-12. */
export function newAjv() {
  const ajv = new Ajv2020({ strict: false, validateFormats: true, validateSchema: false, allErrors: true });
  addFormats(ajv);
  return ajv;
}

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
 *  `tools`: [{ name, description, inputSchema, outputSchema?, handler }]. Returns its transport. */
export async function createReferenceServer(tools) {
  const ajv = newAjv();
  const byName = new Map(
    tools.map((tool) => [
      tool.name,
      { tool, input: ajv.compile(tool.inputSchema), output: tool.outputSchema && ajv.compile(tool.outputSchema) },
    ]),
  );
  const server = new Server(
    { name: "reference", version: "1.0.0" },
    { capabilities: { tools: { listChanged: true } } },
  );
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: tools.map(({ name, description, inputSchema, outputSchema }) => ({ name, description, inputSchema, outputSchema })),
  }));
  const error = (text) => ({ content: [{ type: "text", text }], isError: true });
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const entry = byName.get(request.params.name);
    if (!entry) return error(`no tool named '${request.params.name}'`);
    const input = request.params.arguments ?? {};
    if (!entry.input(input)) return error(`invalid input: ${ajv.errorsText(entry.input.errors)}`);
    let result;
    try {
      result = await entry.tool.handler(input);
    } catch (thrown) {
      return error(String(thrown?.message ?? thrown));
    }
    if (entry.output && !entry.output(result)) return error(`invalid output: ${ajv.errorsText(entry.output.errors)}`);
    return { content: [{ type: "text", text: JSON.stringify(result) }], structuredContent: result };
  });
  const transport = new FrameTransport();
  await server.connect(transport);
  return transport;
}
