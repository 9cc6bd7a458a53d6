// The JavaScript a page would otherwise use for client tools, bundled into one browser module:
// the official MCP TypeScript SDK `Server` validating with ajv (+ ajv-formats, as the MCP SDK's own
// validator does). Its size and start-up are measured against the SDK's package.

import { serveTools } from "./frame-server.mjs";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

/** ajv configured like the MCP TypeScript SDK's validator, for JSON Schema 2020-12. */
export function newAjv() {
  const ajv = new Ajv2020({ strict: false, validateFormats: true, validateSchema: false, allErrors: true });
  addFormats(ajv);
  return ajv;
}

/** An MCP server doing the SDK's job, validating with ajv (frame-server.mjs).
 *  `tools`: [{ name, description, inputSchema, outputSchema?, handler }]. Returns its transport. */
export async function createReferenceServer(tools) {
  const ajv = newAjv();
  const compile = (schema) => {
    const check = ajv.compile(schema);
    return (value) => (check(value) ? null : ajv.errorsText(check.errors));
  };
  return serveTools(tools, compile, { name: "reference" });
}
