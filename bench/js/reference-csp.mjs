// The JavaScript a page under a strict Content-Security-Policy (no 'unsafe-eval') would otherwise use
// for client tools, bundled into one browser module: the official MCP TypeScript SDK `Server` with
// the SDK's CSP-safe validator provider, `CfWorkerJsonSchemaValidator` (@cfworker/json-schema
// interprets schemas; ajv compiles them with `new Function`, which such a page cannot run).
//
// It mirrors reference.mjs line for line; only the validator differs. The low-level `Server` of the
// MCP SDK (1.32.2) does not validate tool input or output itself (its `jsonSchemaValidator` option
// serves elicitation results; `McpServer` validates tools with zod), so both references validate in
// their `tools/call` handler: here through the provider the `Server` is given, `getValidator(schema)`
// once per schema, the validator run on every input and every output.
//
// Bundled on its own (package.json `bundle`) with `ajv` and `ajv-formats` aliased to no-ajv.mjs:
// `server/index.js` imports the SDK's ajv provider for its default, which a page that passes
// `jsonSchemaValidator` never constructs; the alias keeps ajv's code generator out of this bundle.

import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { CfWorkerJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/cfworker";

/** The SDK's cfworker provider for JSON Schema 2020-12, every error reported (as ajv's `allErrors`
 *  in reference.mjs; on a valid instance it changes nothing). */
export function newValidatorProvider() {
  return new CfWorkerJsonSchemaValidator({ draft: "2020-12", shortcircuit: false });
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
  const validators = newValidatorProvider();
  const byName = new Map(
    tools.map((tool) => [
      tool.name,
      {
        tool,
        input: validators.getValidator(tool.inputSchema),
        output: tool.outputSchema && validators.getValidator(tool.outputSchema),
      },
    ]),
  );
  const server = new Server(
    { name: "reference-csp", version: "1.0.0" },
    { capabilities: { tools: { listChanged: true } }, jsonSchemaValidator: validators },
  );
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: tools.map(({ name, description, inputSchema, outputSchema }) => ({ name, description, inputSchema, outputSchema })),
  }));
  const error = (text) => ({ content: [{ type: "text", text }], isError: true });
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const entry = byName.get(request.params.name);
    if (!entry) return error(`no tool named '${request.params.name}'`);
    const input = request.params.arguments ?? {};
    const admitted = entry.input(input);
    if (!admitted.valid) return error(`invalid input: ${admitted.errorMessage}`);
    let result;
    try {
      result = await entry.tool.handler(input);
    } catch (thrown) {
      return error(String(thrown?.message ?? thrown));
    }
    if (entry.output) {
      const checked = entry.output(result);
      if (!checked.valid) return error(`invalid output: ${checked.errorMessage}`);
    }
    return { content: [{ type: "text", text: JSON.stringify(result) }], structuredContent: result };
  });
  const transport = new FrameTransport();
  await server.connect(transport);
  return transport;
}
