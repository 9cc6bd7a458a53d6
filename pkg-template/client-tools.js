// client-tools script embed: <script src=".../client-tools.js" defer></script>
//
// Works as a classic script and as a module (`type="module"`), from any folder or host: the
// package's ES module and its WebAssembly are loaded from next to this file, resolved from the
// script's own `src`. Nothing here evaluates strings: a page whose Content-Security-Policy allows
// scripts from itself and 'wasm-unsafe-eval' (no 'unsafe-eval', no 'unsafe-inline') works.
//
// When it has loaded:
// - `window.ClientTools` is the class, and `window.clientToolsReady` a Promise of it;
// - with `data-endpoint` (and optionally `data-token`, `data-allow="a, b"`) on the script element,
//   an instance is made and connected for the page: `ClientTools.tools` (the no-code case);
// - commands queued before (`window.ClientTools = window.ClientTools || []; ClientTools.push(...)`)
//   have run in order, and later pushes run at once: a function is called with `(tools, ClientTools)`
//   (`tools`: the page's instance, or null without `data-endpoint`); an array `["method", ...args]`
//   calls that method of the page's instance;
// - `clienttools:ready` is dispatched on `window`, its `detail` `{ ClientTools, tools }`.
(function () {
  "use strict";
  if (window.clientToolsReady) return; // included twice: the first one loads, with its data- attributes
  if (typeof window.ClientTools === "function") {
    console.warn("client-tools: window.ClientTools is already a class (the page loaded the package itself): the embed does nothing");
    return;
  }
  var script = document.currentScript || findOwnScript();
  if (!script) {
    console.error("client-tools: mark its <script> element data-client-tools: it was not found");
    return;
  }
  // The queue stays on `window` until the package has loaded: scripts that run after this one but
  // before then (`window.ClientTools = window.ClientTools || []`) push onto the same array.
  if (!Array.isArray(window.ClientTools)) window.ClientTools = [];
  var moduleUrl = new URL("client_tools.js", script.src).href;

  window.clientToolsReady = import(moduleUrl)
    .then(function (mod) {
      return mod.default().then(function () {
        return mod.ClientTools;
      });
    })
    .then(function (ClientTools) {
      var tools = null;
      var endpoint = script.getAttribute("data-endpoint");
      if (endpoint) {
        var options = { endpoint: endpoint };
        var token = script.getAttribute("data-token");
        var allow = script.getAttribute("data-allow");
        if (token) options.token = token;
        if (allow) {
          options.allow = allow.split(",").map(function (name) {
            return name.trim();
          }).filter(Boolean);
        }
        try {
          tools = new ClientTools(options);
        } catch (error) {
          console.error("client-tools: data- attributes refused:", error);
        }
      }
      ClientTools.tools = tools;
      ClientTools.push = function () {
        for (var i = 0; i < arguments.length; i++) runCommand(arguments[i], tools, ClientTools);
      };
      var queued = Array.isArray(window.ClientTools) ? window.ClientTools : [];
      window.ClientTools = ClientTools;
      // Queued commands define the tools first, so that the connection lists them at once.
      ClientTools.push.apply(null, queued);
      if (tools) {
        tools
          .connect().catch(function (error) {
          console.error("client-tools: could not connect to " + endpoint + ":", error);
        });
      }
      window.dispatchEvent(
        new CustomEvent("clienttools:ready", { detail: { ClientTools: ClientTools, tools: tools } })
      );
      return ClientTools;
    });
  window.clientToolsReady.catch(function (error) {
    var hint = /unsafe-eval|Content Security Policy|CSP/i.test(String(error))
      ? " (the page's Content-Security-Policy must allow 'wasm-unsafe-eval' in script-src)"
      : "";
    console.error("client-tools: failed to load from " + moduleUrl + hint + ":", error);
  });

  // One command of the queue; a failing one is reported and the others still run.
  function runCommand(command, tools, ClientTools) {
    try {
      if (typeof command === "function") {
        command(tools, ClientTools);
      } else if (Array.isArray(command) && typeof command[0] === "string") {
        if (!tools) throw new Error("no instance: the script has no data-endpoint");
        if (typeof tools[command[0]] !== "function") throw new Error("no method '" + command[0] + "'");
        tools[command[0]].apply(tools, command.slice(1));
      } else {
        throw new TypeError("not a function or [\"method\", ...args]");
      }
    } catch (error) {
      console.error("client-tools: a queued command failed:", command, error);
    }
  }

  // A module script has no `document.currentScript`: the element marked data-client-tools, else
  // the last module script whose file is client-tools.js, else the last such script.
  function findOwnScript() {
    var marked = document.querySelector("script[data-client-tools][src]");
    if (marked) return marked;
    var found = null;
    var scripts = document.querySelectorAll("script[src]");
    for (var i = scripts.length - 1; i >= 0; i--) {
      if (!/\/client-tools(\.min)?\.js([?#]|$)/.test(scripts[i].src)) continue;
      if (scripts[i].type === "module") return scripts[i];
      found = found || scripts[i];
    }
    return found;
  }
})();
