// The task-board assistant demo: a small board whose tools an agent can call through the bridge.
import init, { ClientTools } from "/pkg/client_tools.js";
import { startConsole } from "./console.js";

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

renderBoard();
await startConsole(tools, "read_board_tasks");
