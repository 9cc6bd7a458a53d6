// The inputs and schemas every benchmark uses, shared by the SDK and the JavaScript references so
// both do exactly the same job.

const STATUSES = ["todo", "in-progress", "done"];

/** The demo board's task list schema (the output of `read_board_tasks` in www/app.js). */
export const boardSchema = {
  type: "object",
  properties: {
    tasks: {
      type: "array",
      items: {
        type: "object",
        properties: {
          id: { type: "string" },
          title: { type: "string" },
          status: { enum: STATUSES },
          assignee: { type: "string" },
        },
        required: ["id", "title", "status", "assignee"],
      },
    },
  },
  required: ["tasks"],
};

/** A board of `count` tasks (about 60 bytes of JSON each). */
export function board(count) {
  const tasks = [];
  for (let i = 0; i < count; i++) {
    tasks.push({ id: `t${i}`, title: `Task number ${i}`, status: STATUSES[i % 3], assignee: "ana" });
  }
  return { tasks };
}

/** A board whose JSON text is as close to `bytes` as tasks allow (at least one task). */
export function boardOfSize(bytes) {
  let count = 1;
  while (JSON.stringify(board(count + 1)).length <= bytes) count++;
  return board(count);
}

/** A realistic ~2 KB schema: a checkout form with nested objects, arrays, enums, bounds, $defs. */
export const checkoutSchema = {
  type: "object",
  $defs: {
    address: {
      type: "object",
      properties: {
        line1: { type: "string", minLength: 1, maxLength: 200 },
        line2: { type: "string", maxLength: 200 },
        city: { type: "string", minLength: 1, maxLength: 100 },
        region: { type: "string", maxLength: 100 },
        postalCode: { type: "string", minLength: 3, maxLength: 12 },
        country: { type: "string", minLength: 2, maxLength: 2 },
      },
      required: ["line1", "city", "postalCode", "country"],
      additionalProperties: false,
    },
  },
  properties: {
    customer: {
      type: "object",
      properties: {
        name: { type: "string", minLength: 1, maxLength: 120 },
        email: { type: "string", minLength: 3 },
        phone: { type: "string" },
        marketingOptIn: { type: "boolean", default: false },
      },
      required: ["name", "email"],
    },
    shipping: { $ref: "#/$defs/address" },
    billing: { $ref: "#/$defs/address" },
    items: {
      type: "array",
      minItems: 1,
      maxItems: 100,
      items: {
        type: "object",
        properties: {
          sku: { type: "string", minLength: 1 },
          quantity: { type: "integer", minimum: 1, maximum: 99 },
          unitPrice: { type: "number", exclusiveMinimum: 0 },
          giftWrap: { type: "boolean" },
          options: { type: "object", additionalProperties: { type: "string" } },
        },
        required: ["sku", "quantity", "unitPrice"],
        additionalProperties: false,
      },
    },
    delivery: { enum: ["standard", "express", "pickup"] },
    couponCodes: { type: "array", items: { type: "string", maxLength: 32 }, uniqueItems: true },
    notes: { type: "string", maxLength: 1000 },
    total: { type: "number", minimum: 0 },
  },
  required: ["customer", "shipping", "items", "delivery"],
  additionalProperties: false,
};

export const checkout = {
  customer: { name: "Ana Lima", email: "ana@example.com", phone: "+351 912 345 678", marketingOptIn: false },
  shipping: { line1: "Rua Augusta 10", city: "Lisboa", postalCode: "1100-053", country: "PT" },
  billing: { line1: "Rua Augusta 10", line2: "3º Esq", city: "Lisboa", postalCode: "1100-053", country: "PT" },
  items: [
    { sku: "MUG-BLUE", quantity: 2, unitPrice: 9.5, options: { color: "blue" } },
    { sku: "TEE-M", quantity: 1, unitPrice: 19.99, giftWrap: true, options: { size: "M" } },
    { sku: "BOOK-42", quantity: 1, unitPrice: 24 },
  ],
  delivery: "express",
  couponCodes: ["WELCOME10"],
  notes: "Leave at the door",
  total: 63.49,
};

/** `pattern` and `format`: what regex and format engines cost. */
export const contactSchema = {
  type: "object",
  properties: {
    email: { type: "string", format: "email" },
    website: { type: "string", format: "uri" },
    birthday: { type: "string", format: "date" },
    updatedAt: { type: "string", format: "date-time" },
    phone: { type: "string", pattern: "^\\+?[0-9 ()-]{7,20}$" },
    sku: { type: "string", pattern: "^[A-Z]{3}-[0-9]{4}(-[A-Z]{2})?$" },
    tags: { type: "array", items: { type: "string", pattern: "^[a-z][a-z0-9-]*$" } },
  },
  required: ["email", "updatedAt", "phone", "sku"],
};

export const contact = {
  email: "ana.lima@example.com",
  website: "https://example.com/ana",
  birthday: "1990-04-12",
  updatedAt: "2026-11-30T05:00:00Z",
  phone: "+351 912 345 678",
  sku: "ABC-1234-PT",
  tags: ["customer", "vip", "lisbon-2026"],
};

/** Each validation workload: a schema, an instance that is valid and one that is not. */
export const validationWorkloads = [
  { name: "board (20 tasks)", schema: boardSchema, valid: board(20), invalid: { tasks: [{ id: "t1", title: "x", status: "later", assignee: "ana" }] } },
  { name: "checkout (~2 KB schema)", schema: checkoutSchema, valid: checkout, invalid: { ...checkout, items: [{ sku: "", quantity: 0, unitPrice: 1 }] } },
  { name: "contact (pattern + format)", schema: contactSchema, valid: contact, invalid: { ...contact, email: "not an email", updatedAt: "tomorrow" } },
];

/** The per-call workload: a tool taking a board of tasks (100 B, 4 KB, 64 KB of input). */
export const callInputSchema = boardSchema;
export const callOutputSchema = {
  type: "object",
  properties: { ok: { type: "boolean" } },
  required: ["ok"],
};
export const callSizes = [100, 4096, 65536];
