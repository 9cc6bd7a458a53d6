// A page's own code using the global class once the embed has loaded (no data-endpoint).
window.embedLog = [];
window.clientToolsReady.then(async function (ClientTools) {
  window.embedLog.push("global is the class " + (window.ClientTools === ClientTools) + ", instance " + ClientTools.tools);
  const endpoint = document.querySelector('meta[name="bridge"]').content;
  const token = document.querySelector('meta[name="bridge-token"]').content;
  const tools = new ClientTools({ endpoint, token });
  tools.defineFunction({
    name: "Greet",
    description: "Greets a person by name",
    parameters: { type: "object", properties: { name: { type: "string" } }, required: ["name"] },
    handler: ({ name }) => "Hello, " + name,
  });
  await tools.connect();
  window.embedLog.push("connected");
});
