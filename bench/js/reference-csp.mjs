// The JavaScript a page under a strict Content-Security-Policy (no 'unsafe-eval') would otherwise use
// for client tools, bundled into one browser module: the official MCP TypeScript SDK `Server` with
// the SDK's CSP-safe validator provider, `CfWorkerJsonSchemaValidator` (@cfworker/json-schema
// interprets schemas; ajv compiles them with `new Function`, which such a page cannot run).
//
// It is reference.mjs with another validator (both serve through frame-server.mjs). The low-level `Server` of the
// MCP SDK (1.32.2) does not validate tool input or output itself (its `jsonSchemaValidator` option
// serves elicitation results; `McpServer` validates tools with zod), so both references validate in
// their `tools/call` handler: here through the provider the `Server` is given, `getValidator(schema)`
// once per schema, the validator run on every input and every output.
//
// Bundled on its own (package.json `bundle`) with `ajv` and `ajv-formats` aliased to no-ajv.mjs:
// `server/index.js` imports the SDK's ajv provider for its default, which a page that passes
// `jsonSchemaValidator` never constructs; the alias keeps ajv's code generator out of this bundle.

import { serveTools } from "./frame-server.mjs";
import { CfWorkerJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/cfworker";

/** The SDK's cfworker provider for JSON Schema 2020-12, every error reported (as ajv's `allErrors`
 *  in reference.mjs; on a valid instance it changes nothing). */
export function newValidatorProvider() {
  return new CfWorkerJsonSchemaValidator({ draft: "2020-12", shortcircuit: false });
}

/** An MCP server doing the SDK's job, validating through the CSP-safe provider (frame-server.mjs),
 *  which the `Server` is given too. Returns its transport. */
export async function createReferenceServer(tools) {
  const validators = newValidatorProvider();
  const compile = (schema) => {
    const check = validators.getValidator(schema);
    return (value) => {
      const checked = check(value);
      return checked.valid ? null : checked.errorMessage;
    };
  };
  return serveTools(tools, compile, {
    name: "reference-csp",
    serverOptions: { jsonSchemaValidator: validators },
  });
}
