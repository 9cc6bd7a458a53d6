// One start-up measurement, in its own document: from module import to a ready instance (fetch +
// compile + instantiate + init), then reported to the parent page. `?which=sdk|reference&v=<key>`:
// a fresh key is a cold load (nothing cached), a repeated key a cached one.

const query = new URLSearchParams(location.search);
const which = query.get("which");
const key = query.get("v");

const started = performance.now();
if (which === "sdk") {
  const sdk = await import(`/pkg/client_tools.js?v=${key}`);
  await sdk.default({ module_or_path: `/pkg/client_tools_bg.wasm?v=${key}` });
  new sdk.ClientTools({});
} else {
  const reference = await import(`/vendor/reference.js?v=${key}`);
  await reference.createReferenceServer([]);
}
parent.postMessage({ which, key, ms: performance.now() - started }, location.origin);
