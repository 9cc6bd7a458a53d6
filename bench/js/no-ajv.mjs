// Stands in for `ajv` and `ajv-formats` in the CSP-safe bundle (reference-csp.mjs, esbuild
// `--alias`): the MCP SDK's `Server` imports its ajv provider for the default validator, which is
// never constructed when `jsonSchemaValidator` is given. Should anything reach for ajv, it throws.
export default function noAjv() {
  throw new Error("ajv is not in the CSP-safe bundle (reference-csp.js)");
}
