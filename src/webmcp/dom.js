// The DOM side of WebMCP (SPEC §8), kept to reading and writing: what the controls mean, and
// every other decision, is made in Rust (client-tools-core, form_tool.rs).

const LABELABLE = "button,input,meter,output,progress,select,textarea";

// An element's text without the controls nested in it (a label wrapping its input).
function textOf(node) {
  if (!node) return undefined;
  const copy = node.cloneNode(true);
  for (const nested of copy.querySelectorAll(LABELABLE)) nested.remove();
  return copy.textContent.replace(/\s+/g, " ").trim() || undefined;
}

// A form's own members, not the controls named like them (a control named `elements`, `contains`
// or `requestSubmit` shadows that member on its form).
const formElements = (form) =>
  Object.getOwnPropertyDescriptor(HTMLFormElement.prototype, "elements").get.call(form);
const contains = (node, other) => Node.prototype.contains.call(node, other);

function attribute(element, name) {
  const value = element.getAttribute(name);
  return value === null || value.trim() === "" ? undefined : value.trim();
}

function groupOf(element, form) {
  const fieldset = element.closest("fieldset");
  if (!fieldset || !contains(form, fieldset)) return undefined;
  const legend = Array.from(fieldset.children).find((child) => child.localName === "legend");
  return attribute(fieldset, "toolparamdescription") || textOf(legend);
}

// The type the page wrote, for the formats a browser may not have (Firefox reports a `month` or
// `week` input as `text`, but the page still expects that format).
function typeOf(element) {
  const written = (element.getAttribute("type") || "").trim().toLowerCase();
  return /^(date|time|datetime-local|month|week|color)$/.test(written) ? written : element.type;
}

// The form's enabled controls, in document order, as plain data (which are parameters is decided in
// Rust: not the nameless, hidden, file and button-like ones).
export function controlsOf(form) {
  const found = [];
  Array.from(formElements(form)).forEach((element, index) => {
    if (!/^(input|select|textarea)$/.test(element.localName)) return;
    // `:disabled` also holds inside a disabled fieldset: such a control is never submitted.
    if (element.matches(":disabled")) return;
    found.push({
      index,
      name: element.name,
      type: typeOf(element),
      required: element.required,
      pattern: htmlPattern(element),
      min: attribute(element, "min"),
      max: attribute(element, "max"),
      step: attribute(element, "step"),
      minlength: attribute(element, "minlength"),
      maxlength: attribute(element, "maxlength"),
      paramDescription: attribute(element, "toolparamdescription"),
      label: textOf(element.labels && element.labels[0]),
      ariaDescription: attribute(element, "aria-description"),
      group: groupOf(element, form),
      options: element.options
        ? Array.from(element.options, (option) => ({ value: option.value, label: option.label }))
        : [],
      value: element.value,
      checked: !!element.checked,
      selected: element.selectedOptions ? Array.from(element.selectedOptions, (o) => o.value) : [],
    });
  });
  return found;
}

// The `pattern` as the browser uses it: one that does not compile on its own (with the `v` flag, as
// HTML compiles it) is ignored by the browser, and so here.
function htmlPattern(element) {
  const pattern = attribute(element, "pattern");
  if (pattern === undefined) return undefined;
  try {
    new RegExp(pattern, "v");
    return pattern;
  } catch {
    return undefined;
  }
}

// Sets a property through its prototype's setter: frameworks (React) watch the element's own
// `value`, and only a change they did not make themselves reaches their `onChange`.
function setProperty(element, property, value) {
  let proto = Object.getPrototypeOf(element);
  while (proto && !Object.getOwnPropertyDescriptor(proto, property)) proto = Object.getPrototypeOf(proto);
  const descriptor = proto && Object.getOwnPropertyDescriptor(proto, property);
  if (descriptor && descriptor.set) descriptor.set.call(element, value);
  else element[property] = value;
}

// Applies `[{index, property, value}]` and fires `input` and `change` on each control changed.
// Returns the values a control dropped (a date that does not exist reads back as ""), as one
// "name: value, …" text, or undefined.
export function fill(form, assignments) {
  const elements = formElements(form);
  const targets = assignments.map((a) => [elements[a.index], a]);
  const refused = [];
  for (const [element, { property, value }] of targets) {
    if (!element) continue;
    if (property === "selected") {
      for (const option of element.options) option.selected = value.includes(option.value);
    } else {
      setProperty(element, property, value);
      // Dropped, not just normalized ("10:00:00" reads back as "10:00", "#FFF000" as "#fff000").
      if (property === "value" && value !== "" && element.value === "") {
        refused.push(`${element.name}: ${JSON.stringify(value)}`);
      }
    }
    element.dispatchEvent(new Event("input", { bubbles: true }));
    element.dispatchEvent(new Event("change", { bubbles: true }));
  }
  return refused.length ? refused.join(", ") : undefined;
}

// `form.requestSubmit()`, even when a control is named `requestSubmit`.
export function requestSubmit(form) {
  HTMLFormElement.prototype.requestSubmit.call(form);
}

// The form's first submit button (it may stand outside the form, with `form=`).
export function submitButtonOf(form) {
  return Array.from(formElements(form)).find((e) => e.type === "submit" || e.type === "image");
}

// Why the form would not submit (the browser's own messages), or undefined when it would.
export function invalidReason(form) {
  const invalid = Array.from(formElements(form)).filter((e) => e.willValidate && !e.checkValidity());
  if (invalid.length === 0) return undefined;
  return invalid.map((e) => `${e.name || e.type}: ${e.validationMessage}`).join("; ");
}

// Gives a `submit` event of a form an agent filled what WebMCP pages look for: `agentInvoked` and
// `respondWith(promise)` (after `preventDefault()`). Once every listener has run, `done(response)`
// reports what the page gave (undefined without `respondWith`).
export function agentSubmit(event, done) {
  let response;
  Object.defineProperty(event, "agentInvoked", { value: true, configurable: true });
  Object.defineProperty(event, "respondWith", {
    configurable: true,
    value(promise) {
      if (!event.defaultPrevented) {
        throw new DOMException("call preventDefault() before respondWith()", "InvalidStateError");
      }
      if (response) throw new DOMException("respondWith() was already called", "InvalidStateError");
      response = Promise.resolve(promise);
    },
  });
  setTimeout(() => done(response));
}

// Attributes whose change can change a form tool (the SDK's own data-tool-* marks are not here).
const WATCHED_ATTRIBUTES = ["toolname", "tooldescription", "toolparamdescription", "name", "type",
  "required", "pattern", "min", "max", "step", "minlength", "maxlength", "multiple", "disabled",
  "value", "label", "for", "form", "aria-description"];

export function observe(target, callback) {
  const observer = new MutationObserver(callback);
  observer.observe(target, { childList: true, subtree: true, attributes: true, attributeFilter: WATCHED_ATTRIBUTES });
  return observer;
}

// Whether DOM changes may have changed a form tool: a form or its controls added, removed or edited.
export function touchesForms(records) {
  const FORMISH = "form,input,select,textarea,label,fieldset,legend,option";
  // The changed element is (in) a form, a label or a control.
  const touched = (node) => node.nodeType === 1 && !!node.closest(FORMISH);
  // An added or removed subtree has one in it.
  const holds = (node) => node.nodeType === 1 && (node.matches(FORMISH) || !!node.querySelector(FORMISH));
  return records.some(
    (r) =>
      touched(r.target) ||
      Array.from(r.addedNodes).some(holds) ||
      Array.from(r.removedNodes).some(holds),
  );
}

// Registers one tool with the browser's agent (`document.modelContext`); aborting the returned
// controller unregisters it. A refusal (a duplicate name) is reported to `onError`, not thrown.
export function registerWithBrowser(modelContext, tool, execute, onError) {
  const controller = new AbortController();
  // `execute` resolves to the MCP result, or to nothing when the call was aborted or cancelled.
  tool.execute = async (input, options) => {
    const result = await execute(input, options && options.signal);
    if (result === undefined) throw new DOMException("the call was cancelled", "AbortError");
    return result;
  };
  try {
    const registered = modelContext.registerTool(tool, { signal: controller.signal });
    if (registered && typeof registered.then === "function") registered.then(undefined, onError);
  } catch (error) {
    onError(error);
  }
  return controller;
}

// Whether `signal` (if it is one) has aborted already.
export function signalAborted(signal) {
  return signal instanceof AbortSignal && signal.aborted;
}

// `stop(call)` when `signal` (if it is one) aborts.
export function watchAbort(signal, call, stop) {
  if (signal instanceof AbortSignal) signal.addEventListener("abort", () => stop(call), { once: true });
}

export function modelContext() {
  const found = [globalThis.document && document.modelContext, globalThis.navigator && navigator.modelContext];
  return found.find((context) => context && typeof context === "object") || undefined;
}

// Whether the browser implements declarative WebMCP itself (its submit events respond).
export function browserHasWebMcp() {
  return typeof SubmitEvent === "function" && "respondWith" in SubmitEvent.prototype;
}

// A form tool's handler in the registry: the function that gives its form.
export function formHandle(form) {
  return () => form;
}

// `adoptBrowserTools`: `onList(names, declarations, handlers)` with what `modelContext` lists, now
// and after every `toolchange`: each tool's name, its declaration as `defineFunction` reads it (JSON
// text of `{name, description, parameters, annotations, requireConfirmation?}`: a tool that does
// not say it only reads asks the person first; one that says so is left to its annotations, so a
// `destructiveHint` still asks) and its handler ([`adoptedHandler`]). A tool whose declaration has
// no JSON form is left out. One listing at a time (changes meanwhile list once more after it); a
// listing that fails calls `onList(null, why)`, once until one succeeds. False when it cannot list
// its tools (nothing to adopt).
export function watchBrowserTools(modelContext, onList) {
  let asObject;
  try {
    if (typeof modelContext.getTools !== "function" || typeof modelContext.executeTool !== "function")
      return false;
    asObject = browserOwnExecute(modelContext);
  } catch {
    return false;
  }
  let listing = false;
  let again = false;
  let failed = false;
  const list = async () => {
    if (listing) return void (again = true);
    listing = true;
    do {
      again = false;
      let tools;
      try {
        tools = Array.from(await modelContext.getTools());
      } catch (error) {
        if (!failed) onList(null, String((error && error.message) || error));
        failed = true;
        continue;
      }
      failed = false;
      const names = [];
      const declarations = [];
      const handlers = [];
      for (const tool of tools) {
        try {
          let { name, description, inputSchema, annotations } = tool;
          // A schema may be listed as its JSON text.
          if (typeof inputSchema === "string") {
            try {
              inputSchema = JSON.parse(inputSchema);
            } catch {
              inputSchema = undefined;
            }
          }
          const requireConfirmation = annotations && annotations.readOnlyHint === true ? undefined : true;
          declarations.push(JSON.stringify({ name, description, parameters: inputSchema, annotations, requireConfirmation }));
          names.push(String(name));
          handlers.push(adoptedHandler(modelContext, tool, asObject));
        } catch {
          declarations.length = names.length;
        }
      }
      onList(names, declarations, handlers);
    } while (again);
    listing = false;
  };
  try {
    modelContext.addEventListener("toolchange", list);
  } catch {
    return false;
  }
  list();
  return true;
}

// Whether `executeTool` is the browser's own (Chromium 156's takes the input as an object) rather
// than a polyfill's (WebMCP's `inputArgsJson`, as MCP-B takes it), read from the context's class
// once, before any call, so that no tool runs twice. The assumption: a polyfill defines its methods
// in JavaScript on its own class, and does not install them over a browser's own.
function browserOwnExecute(modelContext) {
  const execute = Object.getPrototypeOf(modelContext).executeTool;
  return typeof execute === "function" && /\{\s*\[native code\]\s*\}\s*$/.test(Function.prototype.toString.call(execute));
}

// An adopted tool's handler: the call runs through the browser (`executeTool`, the tool's own
// `execute`) with the call's signal; the result the browser serialized is read back (an MCP result
// passes through as it is).
function adoptedHandler(modelContext, tool, asObject) {
  return async (input, ctx) => {
    input = input ?? {};
    const text = await modelContext.executeTool(tool, asObject ? input : JSON.stringify(input), { signal: ctx.signal });
    if (typeof text !== "string") return text;
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  };
}
