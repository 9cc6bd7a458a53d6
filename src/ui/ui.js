// The SDK's own user interface (SPEC §7): the confirmation dialog and the result form, built by one
// schema-form renderer, in a shadow root the page's CSS cannot reach. Not part of the module a page
// loads at `init`: `src/js.js` `loadUi` imports this file when a call first needs the person
// (docs/building.md, *The dialog, loaded on first use*).
//
// - the dialog: one `<client-tools-ui>` element appended to `document.body` on first use, with an
//   open shadow root holding the styles and one native `<dialog>` opened with `showModal()` (the
//   browser traps focus and makes the page inert). Requests wait in one queue — confirmations and
//   result forms of every `ClientTools` on the page — and are shown one at a time;
// - the schema form: a form plan (the field kind of each schema, decided by the core's
//   `schema_field::classify` and sent by `src/ui/mod.rs`) and a value become fields; the fields
//   become a value again; validation errors (by JSON Pointer) go to their fields.
//
// The DOM is a contract (docs/api.md, *The built-in dialog*): tests and screenshots select
// `[data-ct=…]`, `[data-action=…]` and `[data-path=…]`. Every text shown is `textContent` or an
// attribute: nothing supplied by an agent or a page is ever parsed as markup.
//
// A request (from `src/ui/mod.rs`): {kind: "confirm" | "result", title, description?, originalName,
// context?, value, plan, offerSession?, offerAlways?, strings: {key: text}}. An answer (to
// `answer(id, json)`): {approve: {allowSession, allowAlways}, value?} (`value`: the form read after
// Edit) | {reject: reason} | {result: value} | "cancelled". `validate(id, json)` gives the schema's errors [[pointer, message]].

const CSS =
  ":host{all:initial}dialog{--b:var(--ct-bg,#fff);--f:var(--ct-fg,#1b1b1f);--m:var(--ct-muted,#5e5e6a);--a:var(--ct-accent,#2456c9);--x:var(--ct-danger,#b3261e);--l:var(--ct-border,#8a8a96);--fc:var(--ct-focus,#2456c9);box-sizing:border-box;width:min(34rem,calc(100vw - 2rem));max-height:calc(100vh - 2rem);overflow:auto;padding:1.25rem;border:1px solid var(--l);border-radius:var(--ct-radius,.75rem);background:var(--b);color:var(--f);font:15px/1.45 var(--ct-font,system-ui,sans-serif);color-scheme:light dark}" +
  "@media (prefers-color-scheme:dark){dialog{--b:var(--ct-bg,#1e1f24);--f:var(--ct-fg,#ececf1);--m:var(--ct-muted,#a5a5b2);--a:var(--ct-accent,#8fb1ff);--x:var(--ct-danger,#ffb4ab);--l:var(--ct-border,#6b6b78);--fc:var(--ct-focus,#8fb1ff)}}" +
  "dialog::backdrop{background:#0008}*{box-sizing:border-box;font:inherit;color:inherit}h2{margin:0 0 .5rem;font-size:1.2rem;font-weight:600}p{margin:0 0 .5rem}" +
  ".meta,.help,[data-ct=intro],[data-ct=queue]{color:var(--m);font-size:.9em}code{font-family:ui-monospace,monospace;overflow-wrap:anywhere}.meta code{margin-inline-start:.35em}" +
  "form{margin:.75rem 0}fieldset{border:1px solid var(--l);border-radius:.5rem;margin:0 0 .75rem;padding:.5rem .75rem}legend{font-weight:600}.f{margin:0 0 .75rem}label{display:block;font-weight:500}.req:after{content:\" *\";color:var(--x)}" +
  "input,select,textarea{display:block;width:100%;margin-top:.25rem;padding:.4rem .5rem;border:1px solid var(--l);border-radius:.375rem;background:var(--b)}textarea{font-family:ui-monospace,monospace}" +
  "input[type=checkbox]{display:inline-block;width:auto;margin:0 .5rem 0 0;vertical-align:middle}[readonly],:disabled{background:transparent;border-style:dashed}[aria-invalid=true]{border-color:var(--x);border-width:2px}" +
  "[data-ct=error]{color:var(--x);margin:.25rem 0 0}[data-ct=error]:empty,[hidden]{display:none}.row{display:flex;gap:.5rem;align-items:end}.row>:first-child{flex:1}.check{margin:.5rem 0;font-weight:400}" +
  ".actions{display:flex;flex-wrap:wrap;justify-content:flex-end;gap:.5rem;margin-top:1rem}button{padding:.45rem .9rem;border:1px solid var(--l);border-radius:.375rem;background:var(--b);cursor:pointer}" +
  "[data-action=approve],[data-action=submit]{background:var(--a);border-color:var(--a);color:var(--b)}[data-action=reject]{border-color:var(--x);color:var(--x)}:focus-visible{outline:3px solid var(--fc);outline-offset:2px}" +
  "[data-ct=live]{position:absolute;width:1px;height:1px;overflow:hidden;clip-path:inset(50%)}";

// ---- elements -------------------------------------------------------------------------------

/** A new element `<tag attrs…>text</tag>` appended to `parent`. Text is `textContent`, never markup. */
function el(parent, tag, attrs, text) {
  const element = document.createElement(tag);
  for (const name in attrs || {}) element.setAttribute(name, attrs[name]);
  if (text != null) element.textContent = text;
  parent.append(element);
  return element;
}

let nextId = 0;
/** A fresh element id (unique within the shadow root). */
const freshId = () => `c${++nextId}`;

const fill = (text, placeholder, value) => text.split(placeholder).join(value);

// ---- dates ----------------------------------------------------------------------------------

const pad = (n) => String(n).padStart(2, "0");
/** An RFC 3339 date-time as the local `YYYY-MM-DDTHH:MM:SS` a `datetime-local` input shows. */
function isoToLocal(v) {
  const d = new Date(v);
  return isNaN(d)
    ? v
    : `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}
/** Whether `text` is what a `datetime-local` input gives (`YYYY-MM-DDTHH:MM[:SS[.sss]]`). */
const isLocalDateTime = (text) => text.length >= 16 && text[10] === "T";

// ---- the schema form ------------------------------------------------------------------------

const CONTROLS = "input[data-path],select[data-path],textarea[data-path]";

/** A JSON Pointer one step further. */
const step = (path, name) => `${path}/${String(name).replace(/~/g, "~0").replace(/\//g, "~1")}`;
const own = (object, key) => Object.prototype.hasOwnProperty.call(object, key);
const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
const ANY = { t: "json" };

/** The keys of `value` (an object) that the plan's properties do not list. */
const unlisted = (properties, value) =>
  isObject(value) ? Object.keys(value).filter((k) => !properties.some(([n]) => n === k)) : [];

/** The element describing a group's errors (`id` + `e`) after its help text; returns what describes it. */
function groupError(group, help) {
  const id = freshId();
  group.setAttribute("id", id);
  let described = `${id}e`;
  if (help) {
    el(group, "p", { id: `${id}h`, class: "help" }, help);
    described = `${id}h ${described}`;
  }
  el(group, "p", { id: `${id}e`, "data-ct": "error" });
  return described;
}

/** Characters, as Rust counts them (code points). */
const chars = (text) => [...text].length;
/** Lines, as Rust's `str::lines` counts them. */
const lines = (text) => (text === "" ? 0 : text.split("\n").length - (text.endsWith("\n") ? 1 : 0));

class Render {
  constructor(strings, editable) {
    this.s = strings;
    this.editable = editable;
  }

  properties(parent, properties, value, path) {
    for (const [name, plan, required] of properties) {
      const v = isObject(value) && own(value, name) ? value[name] : null;
      this.field(parent, plan, v, step(path, name), plan.title ?? name, required);
    }
    // What the value holds beyond the listed properties is shown too (as JSON text): a person
    // never approves input they cannot see.
    for (const name of unlisted(properties, value)) {
      this.field(parent, ANY, value[name], step(path, name), name, false);
    }
  }

  field(parent, plan, value, path, label, required) {
    const help = plan.help;
    if (plan.t === "object" || plan.t === "array") {
      const set = el(parent, "fieldset", { "data-group": path });
      el(set, "legend", null, label);
      set.setAttribute("aria-describedby", groupError(set, help || ""));
      if (plan.t === "object") {
        this.properties(set, plan.properties, value, path);
      } else {
        this.rows(el(set, "div", { class: "rows" }), plan.items, value, path);
        if (this.editable) {
          el(set, "button", { type: "button", "data-action": "add", "data-path": path }, this.s.add);
        }
      }
      return;
    }
    const wrap = el(parent, "div", { class: "f" });
    const id = freshId();
    const labelElement = el(wrap, "label", { for: id }, label);
    if (required) labelElement.setAttribute("class", "req");
    // A JSON field shows JSON text (a string in quotes), so it reads back as it was.
    const text =
      value === null || value === undefined
        ? ""
        : typeof value === "string" && plan.t !== "json"
          ? value
          : JSON.stringify(value);
    let control;
    if (plan.t === "text" && plan.input === "text" && (text.includes("\n") || chars(text) > 60)) {
      // Plain text that would not show whole in one line: a textarea keeps every line.
      const rows = Math.min(12, Math.max(2, lines(text) + Math.floor(chars(text) / 60)));
      control = el(wrap, "textarea", { rows: String(rows) }, text);
    } else if (plan.t === "text") {
      const shown =
        plan.input === "datetime-local" ? isoToLocal(text) : plan.input === "time" ? text.slice(0, 8) : text;
      control = el(wrap, "input", { type: plan.input, value: shown });
    } else if (plan.t === "number") {
      control = el(wrap, "input", { type: "number", step: plan.step, value: text });
      if (plan.min != null) control.setAttribute("min", plan.min);
      if (plan.max != null) control.setAttribute("max", plan.max);
    } else if (plan.t === "boolean") {
      control = el(wrap, "input", { type: "checkbox" });
      if (value === true) control.setAttribute("checked", "");
    } else if (plan.t === "choice") {
      control = el(wrap, "select");
      const same = (choice) => JSON.stringify(choice) === JSON.stringify(value);
      if (!required || !plan.choices.some(([choice]) => same(choice))) {
        el(control, "option", { value: "" }, this.s.none);
      }
      plan.choices.forEach(([choice, choiceLabel], index) => {
        const option = el(control, "option", { value: String(index) }, choiceLabel);
        if (same(choice)) option.setAttribute("selected", "");
      });
    } else {
      control = el(wrap, "textarea", { rows: "3", spellcheck: "false" }, text);
    }
    let described = `${id}e`;
    if (help != null) {
      el(wrap, "p", { id: `${id}h`, class: "help" }, help);
      described = `${id}h ${id}e`;
    }
    el(wrap, "p", { id: `${id}e`, "data-ct": "error" });
    control.setAttribute("id", id);
    control.setAttribute("data-path", path);
    control.setAttribute("aria-describedby", described);
    if (required && plan.t !== "boolean") control.setAttribute("required", "");
    if (!this.editable) {
      const frozen = plan.t === "boolean" || plan.t === "choice";
      control.setAttribute(frozen ? "disabled" : "readonly", "");
    }
  }

  /** The rows of an array (replacing any there were), each with its Remove button. */
  rows(rows, items, value, path) {
    rows.textContent = "";
    const values = Array.isArray(value) ? value : [];
    values.forEach((item, index) => {
      const row = el(rows, "div", { class: "row" });
      const itemPath = step(path, index);
      const label = fill(this.s.item, "{n}", String(index + 1));
      this.field(row, items, item, itemPath, label, true);
      if (this.editable) {
        const attrs = { type: "button", "data-action": "remove", "data-path": itemPath };
        attrs["aria-label"] = `${this.s.remove} ${label}`;
        el(row, "button", attrs, this.s.remove);
      }
    });
    rows.setAttribute("data-n", String(values.length));
  }
}

/** Fills `form` (emptied first) with the fields of `plan` showing `value`. Read-only fields stay
 * focusable and readable (text is `readonly`, choices and checkboxes `disabled`). */
export function render(form, plan, value, editable, strings) {
  form.textContent = "";
  const r = new Render(strings, editable);
  // The root is a group too: errors about the whole value show at the top of the form.
  groupError(form, "");
  form.setAttribute("data-group", "");
  if (plan.t === "object") r.properties(form, plan.properties, value, "");
  else r.field(form, plan, value, "", plan.title ?? "", true);
}

/** The form's controls and groups by JSON Pointer. */
function controlsOf(form) {
  const byPath = (selector, attribute) => {
    const found = new Map();
    for (const element of form.querySelectorAll(selector)) {
      const path = element.getAttribute(attribute);
      if (path !== null && !found.has(path)) found.set(path, element);
    }
    return found;
  };
  const groups = byPath("[data-group]", "data-group");
  if (!groups.has("")) groups.set("", form);
  return { controls: byPath(CONTROLS, "data-path"), groups };
}

// What a read starts from: `FRESH` (a result form: every field is read), or `{value}`, the value
// the form was shown with (an edited confirmation: what the person did not touch stays exactly as
// it was — its text, its time zone, the keys the schema does not list — and only touched fields
// are read).
const FRESH = null;
const baseAt = (base, key) => {
  if (base === FRESH) return FRESH;
  const v = base.value;
  if (Array.isArray(v)) return { value: /^\d+$/.test(key) ? v[Number(key)] : undefined };
  return { value: isObject(v) && own(v, key) ? v[key] : undefined };
};

/** The value the form shows for `plan`, and the fields whose text could not be read (JSON that
 * does not parse). Empty optional fields are left out. */
export function read(form, plan, base, strings, path = "") {
  const errors = [];
  const value = readField(controlsOf(form), plan, path, true, base, strings, errors);
  return [value === undefined ? null : value, errors];
}

/** Whether the person changed anything in the form (typed, picked, added or removed a row). */
export const touched = (form) => form.querySelector("[data-dirty]") !== null;

function readField(controls, plan, path, required, base, strings, errors) {
  if (plan.t === "object") {
    const original = base !== FRESH && base.value !== undefined ? base.value : null;
    const object = isObject(original) ? { ...original } : {};
    const extras = unlisted(plan.properties, original);
    const fields = plan.properties.map(([name, p, r]) => [name, p, r]).concat(extras.map((n) => [n, ANY, false]));
    for (const [name, p, r] of fields) {
      const value = readField(controls, p, step(path, name), r, baseAt(base, name), strings, errors);
      if (value === undefined) delete object[name];
      else object[name] = value;
    }
    return object;
  }
  if (plan.t === "array") {
    const group = controls.groups.get(path);
    const rows = group && group.querySelector(".rows");
    const count = Number.parseInt((rows && rows.getAttribute("data-n")) || "0", 10) || 0;
    // Rows added or removed: their places moved, so every row is read as shown.
    const moved = !!group && group.hasAttribute("data-dirty");
    const values = [];
    for (let index = 0; index < count; index++) {
      const b = moved ? FRESH : baseAt(base, String(index));
      const value = readField(controls, plan.items, step(path, index), true, b, strings, errors);
      values.push(value === undefined ? null : value);
    }
    return values;
  }
  const control = controls.controls.get(path);
  if (base !== FRESH && !(control && control.hasAttribute("data-dirty"))) return base.value;
  if (!control) return undefined;
  if (plan.t === "boolean") return control.checked === true;
  const text = control.value;
  if (text === "" && !(required && plan.t === "text")) return undefined;
  switch (plan.t) {
    case "text":
      if (plan.input === "datetime-local" && isLocalDateTime(text)) return new Date(text).toISOString();
      if (plan.input === "time" && text.length <= 8) return `${text}${text.length === 5 ? ":00" : ""}Z`;
      return text;
    case "number": {
      const number = Number(text.trim() === "" ? NaN : text);
      return Number.isFinite(number) ? number : undefined;
    }
    case "choice": {
      const index = /^\d+$/.test(text) ? Number(text) : -1;
      return index >= 0 && index < plan.choices.length ? plan.choices[index][0] : undefined;
    }
    default:
      try {
        return JSON.parse(text);
      } catch {
        errors.push([path, strings.invalidJson]);
        return undefined;
      }
  }
}

/** Shows `errors` on their fields (`aria-invalid`, the error text the control's `aria-describedby`
 * names) and clears the others; an error whose path has no field goes to the nearest enclosing
 * group (the form itself at the top). Returns the first invalid control, to focus. */
export function showErrors(form, errors) {
  const found = controlsOf(form);
  for (const control of found.controls.values()) control.removeAttribute("aria-invalid");
  for (const error of form.querySelectorAll("[data-ct=error]")) error.textContent = "";
  let first = null;
  for (const [path, message] of errors) {
    let at = path;
    let holder;
    for (;;) {
      const control = found.controls.get(at);
      if (control) {
        control.setAttribute("aria-invalid", "true");
        first ??= control;
        holder = control;
        break;
      }
      holder = found.groups.get(at);
      if (holder) break;
      at = at.slice(0, Math.max(0, at.lastIndexOf("/")));
    }
    const id = holder.getAttribute("id");
    const error = id && form.querySelector(`[id='${id}e']`);
    if (error) error.textContent = error.textContent ? `${error.textContent} ${message}` : message;
  }
  return first;
}

/** The plan of the value at `path` inside `plan` (through properties and array items). */
function planAt(plan, path) {
  for (const raw of path.split("/").slice(1)) {
    const name = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    if (plan.t === "object") {
      const found = plan.properties.find(([n]) => n === name);
      if (!found) return null;
      plan = found[1];
    } else if (plan.t === "array") {
      plan = plan.items;
    } else {
      return null;
    }
  }
  return plan;
}

/** Adds a row (`remove` = null) to, or removes row `remove` from, the array at `path`, keeping
 * what the other rows hold; returns the element to focus next. */
export function changeRows(form, root, path, remove, strings) {
  const plan = planAt(root, path);
  if (!plan || plan.t !== "array") return null;
  const [list] = read(form, plan, FRESH, strings, path);
  const group = controlsOf(form).groups.get(path);
  const rows = group && group.querySelector(".rows");
  if (!rows) return null;
  // The rows moved: the whole array is read as shown from now on (see `readField`).
  group.setAttribute("data-dirty", "");
  if (remove === null) list.push(structuredClone(plan.initial));
  else if (remove < list.length) list.splice(remove, 1);
  else return null;
  new Render(strings, true).rows(rows, plan.items, list, path);
  return remove === null
    ? rows.lastElementChild && rows.lastElementChild.querySelector(`${CONTROLS},button`)
    : rows.parentElement.querySelector("[data-action=add]");
}

// ---- the dialog -----------------------------------------------------------------------------

/** How long the dialog ignores clicks, Enter and Esc after one request replaced another (and says
 * `aria-busy` meanwhile), so an answer meant for the previous request cannot land on the next. */
const ARMING_MS = 400;

/** What Tab can reach in the dialog. */
const FOCUSABLE =
  "button:not([disabled]),input:not([disabled]),select:not([disabled]),textarea:not([disabled])";

// {id, request, validate, answer}: the request shown first; the others wait.
const queue = [];
let ui = null;
// The form is editable (always for a result form; after Edit for a confirmation).
let editing = false;
// Where focus was before the dialog opened: it goes back there when the dialog closes.
let restore = null;
// Activations before this time (page clock, ms) are ignored: see ARMING_MS.
let armedUntil = 0;

/** Shows `request` (now, or after those already waiting); `answer(id, json)` gets the answer,
 * `validate(id, json)` checks an edited value. Throws when the page has no `document.body`. */
export function ask(id, request, validate, answer) {
  if (!ui) ui = create();
  queue.push({ id, request, validate, answer });
  if (queue.length === 1) show();
  else countWaiting();
}

/** Takes a request away unanswered (the runtime cancelled the call, or the wait ran out). */
export function withdraw(id) {
  const index = queue.findIndex((p) => p.id === id);
  if (index < 0) return;
  queue.splice(index, 1);
  if (index === 0) show();
  else countWaiting();
}

/** The UI's styles as a constructed stylesheet: a page whose Content-Security-Policy refuses inline
 * styles (`style-src 'self'`) still gets a styled, visibly focused dialog (a `<style>` element
 * would be refused there). A `<style>` element only where constructed sheets do not exist. */
function adoptStyles(root) {
  try {
    const sheet = new CSSStyleSheet();
    sheet.replaceSync(CSS);
    root.adoptedStyleSheets = [sheet];
  } catch {
    el(root, "style", null, CSS);
  }
}

function create() {
  if (!document.body) throw new Error("this page has no document body to show the dialog in");
  const host = document.createElement("client-tools-ui");
  const root = host.attachShadow({ mode: "open" });
  adoptStyles(root);
  const dialog = el(root, "dialog", { "aria-labelledby": "t", "aria-describedby": "d" });
  document.body.append(host);
  // The dialog lives as long as the page: its listeners do too.
  for (const type of ["click", "cancel", "submit", "close", "keydown", "input", "change"]) {
    dialog.addEventListener(type, (event) => onEvent(type, event));
  }
  return { host, dialog };
}

const find = (selector) => ui.dialog.querySelector(selector);
const isConfirm = (request) => request.kind === "confirm";

function onEvent(type, event) {
  const current = queue[0];
  if (!current) return;
  const dismiss = isConfirm(current.request) ? "reject" : "cancel";
  // Just after one request replaced another, activations are ignored: a double click or a held
  // Enter meant for the previous request must not answer the new one unseen.
  const arming = performance.now() < armedUntil;
  if ((type === "click" || type === "cancel") && arming) {
    event.preventDefault();
  } else if (type === "input" || type === "change") {
    // The person changed this field: it is read from the form (the rest stays as proposed).
    if (event.target instanceof Element) event.target.setAttribute("data-dirty", "");
  } else if (type === "click") {
    const button = event.target instanceof Element && event.target.closest("button[data-action]");
    if (button) act(button.getAttribute("data-action"), button.getAttribute("data-path") || "");
  } else if (type === "cancel" && event.cancelable) {
    // Esc: the least consequential answer. (A `cancel` the page cannot stop — Esc without a user
    // activation in Chromium — is followed by the dialog closing: `close` answers then, once.)
    event.preventDefault();
    act(dismiss, "");
  } else if (type === "submit") {
    // Never a navigation; Enter in a result form submits it.
    event.preventDefault();
    if (!isConfirm(current.request)) act("submit", "");
  } else if (type === "keydown") {
    trapFocus(event);
  } else if (!ui.dialog.open && arming) {
    // Closed by the browser with a request just put in front of the person: shown again.
    ui.dialog.showModal();
    focus("[data-action]");
  } else if (!ui.dialog.open) {
    // Closed by the browser with a request still shown: as Esc.
    act(dismiss, "");
  }
}

/** Shows the first request, or closes the dialog when none waits. */
function show() {
  const current = queue[0];
  const { dialog, host } = ui;
  if (!current) {
    dialog.close();
    if (restore) restore.focus();
    restore = null;
    return;
  }
  const request = current.request;
  const s = request.strings;
  const confirm = isConfirm(request);
  editing = !confirm;
  dialog.textContent = "";
  el(dialog, "h2", { id: "t", "data-ct": "title" }, request.title);
  const intro = confirm ? s.confirmIntro : s.resultIntro;
  if (request.description != null) el(dialog, "p", { "data-ct": "intro" }, intro);
  el(dialog, "p", { id: "d", "data-ct": "description" }, request.description ?? intro);
  const name = el(dialog, "p", { class: "meta" }, s.tool);
  el(name, "code", { "data-ct": "original-name" }, request.originalName);
  if (request.context != null) {
    const input = el(dialog, "p", { class: "meta" }, s.input);
    el(input, "code", { "data-ct": "input" }, request.context);
  }
  const form = el(dialog, "form", { "data-ct": "form", novalidate: "" });
  render(form, request.plan, request.value, editing, s);
  let buttons = [
    ["cancel", s.cancel],
    ["submit", s.submit],
  ];
  if (confirm) {
    el(dialog, "label", { for: "r" }, s.reason);
    el(dialog, "textarea", { id: "r", "data-ct": "reason", rows: "2" });
    for (const [offered, ct, key] of [
      [request.offerSession, "allow-session", "allowSession"],
      [request.offerAlways, "allow-always", "allowAlways"],
    ]) {
      if (!offered) continue;
      const label = el(dialog, "label", { class: "check" });
      el(label, "input", { type: "checkbox", "data-ct": ct });
      el(label, "span", null, fill(s[key], "{tool}", request.originalName));
    }
    buttons = [
      ["edit", s.edit],
      ["reject", s.reject],
      ["approve", s.approve],
    ];
  }
  const actions = el(dialog, "div", { class: "actions" });
  for (const [action, text] of buttons) el(actions, "button", { type: "button", "data-action": action }, text);
  el(dialog, "p", { "data-ct": "queue" });
  el(dialog, "div", { "data-ct": "live", role: "status" });
  countWaiting();

  if (dialog.open) {
    // One request replaced another under the person's eyes: arm after a moment.
    armedUntil = performance.now() + ARMING_MS;
    dialog.setAttribute("aria-busy", "true");
    setTimeout(() => {
      // Only the last replacement's timer disarms.
      if (performance.now() + 1 >= armedUntil) dialog.removeAttribute("aria-busy");
    }, ARMING_MS);
  } else {
    // (Reopened after a forced close, it keeps where focus was before the first request.)
    restore ??= host.ownerDocument.activeElement;
    if (!host.isConnected) document.body.append(host);
    dialog.showModal();
  }
  // Confirmations start on Reject (least destructive), result forms on their first field.
  focus(confirm ? "[data-action=reject]" : "form [data-path],[data-action=submit]");
}

/** Keeps Tab and Shift+Tab inside the dialog: a modal `<dialog>` makes the page inert, but the
 * browsers still let Tab leave the last control (to the browser's own UI, or nowhere in a headless
 * one); from the last control Tab goes to the first, and Shift+Tab the other way. */
function trapFocus(event) {
  if (event.key !== "Tab") return;
  const focusable = ui.dialog.querySelectorAll(FOCUSABLE);
  if (!focusable.length) return;
  const first = focusable[0];
  const last = focusable[focusable.length - 1];
  const active = ui.host.shadowRoot.activeElement;
  const [edge, wrapTo] = event.shiftKey ? [first, last] : [last, first];
  if (active === edge || !active) {
    event.preventDefault();
    wrapTo.focus();
  }
}

function focus(selector) {
  const element = find(selector);
  if (element) element.focus();
}

/** "N more waiting", hidden when none waits. */
function countWaiting() {
  const counter = find("[data-ct=queue]");
  if (!counter || !queue.length) return;
  const waiting = queue.length - 1;
  counter.textContent = waiting === 0 ? "" : fill(queue[0].request.strings.queue, "{n}", String(waiting));
  counter.toggleAttribute("hidden", waiting === 0);
}

const checked = (ct) => {
  const box = find(`[data-ct=${ct}]`);
  return !!box && box.checked === true;
};

function act(action, path) {
  const form = find("form");
  const current = queue[0];
  if (!form || !current) return;
  const { request } = current;
  const s = request.strings;
  const approve = () => ({ approve: { allowSession: checked("allow-session"), allowAlways: checked("allow-always") } });
  let answer;
  if (action === "edit") {
    editing = true;
    render(form, request.plan, request.value, true, s);
    const edit = find("[data-action=edit]");
    if (edit) edit.remove();
    // An edited input is approved for this call alone: what would be allowed for the session or
    // always is the tool, and a changed input is not what the agent proposed.
    for (const ct of ["allow-session", "allow-always"]) {
      const box = find(`[data-ct=${ct}]`);
      if (box) Object.assign(box, { checked: false, disabled: true });
    }
    focus("form [data-path]");
    return;
  } else if (action === "add" || action === "remove") {
    const cut = path.lastIndexOf("/");
    const next =
      action === "add"
        ? changeRows(form, request.plan, path, null, s)
        : /^\d+$/.test(path.slice(cut + 1)) && changeRows(form, request.plan, path.slice(0, Math.max(0, cut)), Number(path.slice(cut + 1)), s);
    if (next) next.focus();
    return;
  } else if (action === "reject") {
    const reason = find("[data-ct=reason]");
    answer = { reject: reason && reason.value !== "" ? reason.value : null };
  } else if (action === "cancel") {
    answer = "cancelled";
  } else if (action === "approve" && (!editing || !touched(form))) {
    // (Edit pressed but nothing touched: exactly the proposed input, approved.)
    answer = approve();
  } else if (action === "approve" || action === "submit") {
    const base = action === "approve" ? { value: request.value } : FRESH;
    const [value, readErrors] = read(form, request.plan, base, s);
    const text = JSON.stringify(value);
    const errors = readErrors.length ? readErrors : current.validate(current.id, text);
    if (errors.length) {
      invalid(form, errors, s);
      return;
    }
    // (An approval carries the value read: unchanged, it is the proposed input approved.)
    answer = action === "submit" ? { result: value } : { ...approve(), value };
  } else {
    return;
  }
  queue.shift();
  current.answer(current.id, JSON.stringify(answer));
  show();
}

/** Errors on their fields, announced in the live region; focus goes to the first invalid field. */
function invalid(form, errors, s) {
  const first = showErrors(form, errors);
  const live = find("[data-ct=live]");
  if (live) {
    live.textContent = "";
    live.textContent = s.invalid;
  }
  if (first) first.focus();
}
