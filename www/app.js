// The task-board assistant demo: a small board whose tools an agent can call through the bridge.
import init, { ClientTools } from "/pkg/client_tools.js";

const STATUSES = ["todo", "in-progress", "done"];
const board = {
  id: "launch",
  tasks: [
    { id: "t1", title: "Write the launch post", status: "in-progress", assignee: "Ana" },
    { id: "t2", title: "Record the demo video", status: "todo", assignee: "Bo" },
    { id: "t3", title: "Fix the signup email", status: "done", assignee: "Cy" },
    { id: "t4", title: "Update pricing page", status: "todo", assignee: "Ana" },
  ],
};

const $ = (selector) => document.querySelector(selector);

function renderBoard(highlightId) {
  for (const status of STATUSES) {
    const column = document.querySelector(`.column[data-status="${status}"]`);
    const list = column.querySelector("ul");
    list.replaceChildren();
    const tasks = board.tasks.filter((t) => t.status === status);
    column.querySelector(".count").textContent = String(tasks.length);
    for (const task of tasks) {
      const card = document.createElement("li");
      card.className = "card" + (task.id === highlightId ? " new" : "");
      const title = document.createElement("span");
      title.className = "title";
      title.textContent = task.title;
      const who = document.createElement("span");
      who.className = "assignee";
      who.textContent = task.assignee || "unassigned";
      card.append(title, who);
      list.append(card);
    }
  }
}

await init();
const tools = new ClientTools({ endpoint: `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws` });

tools.defineFunction({
  name: "read_board_tasks",
  description: "Read the tasks on a board, optionally only those with a given status.",
  parameters: {
    type: "object",
    properties: {
      boardId: { type: "string", description: "The board to read (this page shows board \"launch\")" },
      status: { enum: STATUSES, description: "Only tasks with this status" },
    },
    required: ["boardId"],
    additionalProperties: false,
  },
  outputSchema: {
    type: "object",
    properties: {
      tasks: {
        type: "array",
        items: {
          type: "object",
          properties: {
            id: { type: "string" }, title: { type: "string" },
            status: { enum: STATUSES }, assignee: { type: "string" },
          },
          required: ["id", "title", "status", "assignee"],
        },
      },
    },
    required: ["tasks"],
  },
  annotations: { readOnlyHint: true },
  handler: async ({ boardId, status }) => {
    if (boardId !== board.id) throw new Error(`no board '${boardId}' on this page (try "${board.id}")`);
    return { tasks: board.tasks.filter((t) => !status || t.status === status) };
  },
});

tools.defineFunction({
  name: "create_task",
  description: "Create a task on the board shown on this page.",
  parameters: {
    type: "object",
    properties: {
      title: { type: "string", minLength: 1, maxLength: 120 },
      assignee: { type: "string" },
      status: { enum: STATUSES, default: "todo" },
    },
    required: ["title"],
    additionalProperties: false,
  },
  handler: ({ title, assignee = "", status = "todo" }) => {
    const task = { id: `t${board.tasks.length + 1}`, title, status, assignee };
    board.tasks.push(task);
    renderBoard(task.id);
    return task;
  },
});

// --- the console: what the bridge sees, and calls through it ------------------------------------

const log = $("#log");
function logEntry(kind, title, body) {
  const item = document.createElement("li");
  item.className = `entry ${kind}`;
  const head = document.createElement("div");
  head.className = "entry-head";
  head.textContent = title;
  const pre = document.createElement("pre");
  pre.textContent = body;
  item.append(head, pre);
  log.prepend(item);
}

tools.on("connectionchange", ({ state }) => {
  $("#connection").dataset.state = state;
  $("#connection-text").textContent = state;
  if (state === "connected") setTimeout(refreshTools, 150);
});
tools.on("toolschanged", () => setTimeout(refreshTools, 150));
tools.on("toolactivated", ({ toolName, callId }) => logEntry("activated", `▶ ${toolName} (call ${callId})`, "handler running in this tab"));
tools.on("toolresult", ({ toolName, isError, durationMs }) =>
  logEntry(isError ? "error" : "ok", `${isError ? "✖" : "✔"} ${toolName}`, `${durationMs.toFixed(1)} ms in the page`));
tools.on("warning", ({ message }) => logEntry("warning", "warning", message));

async function refreshTools() {
  const sessions = await (await fetch("/api/sessions")).json();
  const mine = sessions.find((s) => s.id === tools.sessionId);
  const list = $("#tools");
  const select = $("#call-name");
  list.replaceChildren();
  select.replaceChildren();
  if (!mine) {
    list.innerHTML = '<li class="muted">the bridge does not know this page yet</li>';
    return;
  }
  for (const tool of mine.tools) {
    const item = document.createElement("li");
    const name = document.createElement("code");
    name.textContent = tool.name;
    const description = document.createElement("span");
    description.textContent = tool.description || "";
    item.append(name, description);
    list.append(item);
    select.append(new Option(tool.name, tool.name, false, tool.name === "read_board_tasks"));
  }
}

$("#call-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const name = $("#call-name").value;
  let args;
  try {
    args = JSON.parse($("#call-args").value || "{}");
  } catch (error) {
    logEntry("error", "arguments are not JSON", String(error.message));
    return;
  }
  logEntry("request", `→ POST /api/sessions/${tools.sessionId}/call`, JSON.stringify({ name, arguments: args }, null, 2));
  const response = await fetch(`/api/sessions/${tools.sessionId}/call`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ name, arguments: args }),
  });
  const result = await response.json();
  logEntry(result.isError ? "error" : "result", `← result${result.isError ? " (isError)" : ""}`, JSON.stringify(result, null, 2));
});

$("#session-id").textContent = tools.sessionId;
renderBoard();
await tools.connect();
window.tools = tools;
