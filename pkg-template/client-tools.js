// client-tools script embed: <script src=".../client-tools.js" defer></script>
//
// Loads the ES module next to this file, initializes the WebAssembly, and exposes the class as the
// global `ClientTools`. Because loading is asynchronous, wait for it with
// `await window.clientToolsReady` (a Promise of the class), or listen for the `clienttools:ready`
// event on `window`. Nothing here evaluates strings: it works under a strict CSP that allows
// 'wasm-unsafe-eval'.
(function () {
  "use strict";
  var script = document.currentScript;
  var base = script && script.src ? script.src : location.href;
  var moduleUrl = new URL("client_tools.js", base).href;
  window.clientToolsReady = import(moduleUrl).then(function (mod) {
    return mod.default().then(function () {
      window.ClientTools = mod.ClientTools;
      window.dispatchEvent(new CustomEvent("clienttools:ready", { detail: mod.ClientTools }));
      return mod.ClientTools;
    });
  });
  window.clientToolsReady.catch(function (error) {
    console.error("client-tools: failed to load", error);
  });
})();
