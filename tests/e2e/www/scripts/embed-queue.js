// Runs before the package has loaded (before or after the embed's own script element, whatever
// their kinds): what it queues must be kept and replayed in order.
window.embedLog = window.embedLog || [];
window.addEventListener("clienttools:ready", function (e) {
  window.embedLog.push("ready: class " + typeof e.detail.ClientTools + ", instance " + (e.detail.tools !== null));
});

window.ClientTools = window.ClientTools || [];
// Proof the commands below were queued (the package not loaded yet), not run at once.
window.queuedBeforeLoad = Array.isArray(window.ClientTools);
ClientTools.push([
  "defineFunction",
  {
    name: "Read Cart",
    description: "The items in the shopping cart",
    parameters: { type: "object", properties: {} },
    handler: function () {
      return { items: ["tea", "scones"] };
    },
  },
]);
ClientTools.push(["noSuchMethod"]); // refused and reported; the commands after it still run
ClientTools.push(function (tools, ClientTools) {
  window.embedLog.push("queued function: instance " + (tools instanceof ClientTools));
  tools.defineFunction({
    name: "Greet",
    description: "Greets a person by name",
    parameters: { type: "object", properties: { name: { type: "string" } }, required: ["name"] },
    handler: function (input) {
      return "Hello, " + input.name;
    },
  });
});
ClientTools.push(["defineFunction", {
  name: "Empty Cart",
  description: "Removes every item from the cart",
  parameters: { type: "object", properties: {} },
  requireConfirmation: true,
  handler: function () { return { items: [] }; },
}]);
ClientTools.push(["defineFunction", {
  name: "Not Allowed",
  description: "Defined, but not in the script's data-allow list",
  parameters: { type: "object", properties: {} },
  handler: function () { return "never"; },
}]);
