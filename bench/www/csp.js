// The CSP-safe JavaScript reference (vendor/reference-csp.js: the MCP TypeScript SDK `Server` with
// its @cfworker/json-schema provider) in a same-origin frame whose page forbids eval (csp.html), so
// that what it would do under a strict Content-Security-Policy is what it does here: zod (which the
// SDK parses every message with) finds `new Function` refused and takes its interpreted path, as it
// would on such a page. bench.js drives it from the benchmark page with the same harness as the
// other two: frames in through `receive(text)`, out through `onframe(text)`.
//
// Violations of the policy are counted from before the bundle loads and reported with the results.

import { callInputSchema, callOutputSchema } from "./workloads.js";

const violations = [];
addEventListener("securitypolicyviolation", (event) => {
  violations.push({
    directive: event.effectiveDirective || event.violatedDirective,
    blocked: event.blockedURI,
    // The path alone: the port changes from run to run.
    source: `${event.sourceFile ? new URL(event.sourceFile, location.href).pathname : "?"}:${event.lineNumber}:${event.columnNumber}`,
  });
});

let loaded;
try {
  loaded = { reference: await import("/vendor/reference-csp.js") };
} catch (error) {
  loaded = { error: String(error?.stack ?? error) };
}

window.cspReference = {
  error: loaded.error,
  violations,
  evalAllowed() {
    try {
      new Function("");
      return true;
    } catch {
      return false;
    }
  },
  /** The same tool as the other two servers on the benchmark page: same schemas, same handler. */
  createServer() {
    return loaded.reference.createReferenceServer([{
      name: "save_board", description: "Saves a board.",
      inputSchema: callInputSchema, outputSchema: callOutputSchema, handler: () => ({ ok: true }),
    }]);
  },
};
parent.postMessage({ cspReady: true }, location.origin);
