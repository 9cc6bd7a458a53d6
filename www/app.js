// The task-board assistant demo: a small board whose tools an agent can call through the bridge.
import init, { ClientTools } from "/pkg/client_tools.js";
import { startConsole } from "./console.js";
import { pageOptions } from "./demo_user.js";

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
const tools = new ClientTools(pageOptions(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws`));

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
    boardChanged();
    return task;
  },
});

// The board itself as an MCP resource (SPEC §11): an agent lists it, reads it, and may watch it;
// every change the page makes tells the watchers (`resourceChanged`).
const BOARD_URI = `board://${board.id}/tasks`;
tools.defineResource({
  uri: BOARD_URI,
  name: "board",
  title: `Board "${board.id}"`,
  description: "The tasks on the board shown on this page, as JSON.",
  mimeType: "application/json",
  read: () => JSON.stringify({ board: board.id, tasks: board.tasks }),
});
const boardChanged = () => tools.resourceChanged(BOARD_URI);

// Asks the person at the agent mid-call (MCP elicitation): who takes an unassigned task. It waits on
// a person, so an agent that takes tasks (the console does) gets a task at once and answers the
// question through it.
tools.defineFunction({
  name: "assign_task",
  description: "Assign a task; asks the person at the agent who should take it.",
  taskSupport: "optional",
  parameters: {
    type: "object",
    properties: { taskId: { type: "string", description: "The task's id, e.g. t2" } },
    required: ["taskId"],
    additionalProperties: false,
  },
  handler: async ({ taskId }, ctx) => {
    const task = board.tasks.find((t) => t.id === taskId);
    if (!task) throw new Error(`no task '${taskId}' on this board`);
    const answer = await ctx.elicit({
      message: `Who should take "${task.title}"?`,
      requestedSchema: {
        type: "object",
        properties: { assignee: { type: "string", title: "Assignee", default: task.assignee } },
        required: ["assignee"],
      },
    });
    if (answer.action !== "accept") return `${task.id} stays with ${task.assignee || "nobody"} (${answer.action})`;
    task.assignee = String(answer.content.assignee);
    ctx.log("info", { assigned: task.id, to: task.assignee }, "board");
    renderBoard(task.id);
    boardChanged();
    return task;
  },
});

// A picture of the board (MCP image content), drawn on a canvas.
tools.defineFunction({
  name: "board_snapshot",
  description: "A PNG picture of the board as the user sees it.",
  parameters: { type: "object", properties: {}, additionalProperties: false },
  annotations: { readOnlyHint: true },
  handler: () => {
    const canvas = document.createElement("canvas");
    canvas.width = 3 * 220;
    canvas.height = 60 + 34 * Math.max(...STATUSES.map((s) => board.tasks.filter((t) => t.status === s).length), 1);
    const g = canvas.getContext("2d");
    g.fillStyle = "#fff";
    g.fillRect(0, 0, canvas.width, canvas.height);
    g.font = "14px sans-serif";
    STATUSES.forEach((status, column) => {
      g.fillStyle = "#333";
      g.fillText(status, column * 220 + 10, 24);
      board.tasks.filter((t) => t.status === status).forEach((task, row) => {
        g.fillStyle = "#eef";
        g.fillRect(column * 220 + 8, 40 + row * 34, 204, 28);
        g.fillStyle = "#222";
        g.fillText(task.title.slice(0, 26), column * 220 + 14, 59 + row * 34);
      });
    });
    const data = canvas.toDataURL("image/png").split(",")[1];
    return {
      content: [
        { type: "text", text: `Board "${board.id}": ${board.tasks.length} tasks` },
        { type: "image", data, mimeType: "image/png" },
      ],
    };
  },
});

renderBoard();
await startConsole(tools, "read_board_tasks");
