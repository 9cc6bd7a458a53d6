// The JavaScript side of `src/js.rs`: a few functions that cost the package less here than the
// same calls made one by one through `web-sys`.
function strictStringify(value) {
  return JSON.stringify(value, function (key, v) {
    const t = typeof v;
    if (t === "function" || t === "symbol") {
      const where = key === "" ? "the value" : `the value of "${key}"`;
      throw new TypeError(`${where} is a ${t}`);
    }
    return v;
  });
}
function mayLoseData(v, seen) {
  const t = typeof v;
  if (t === "function" || t === "symbol") return true;
  if (t !== "object" || v === null) return false;
  if (typeof v.toJSON === "function" || seen.includes(v)) return true;
  seen.push(v);
  for (const k in v) if (mayLoseData(v[k], seen)) return true;
  seen.pop();
  return false;
}
export function jsonText(value) {
  try {
    if (!mayLoseData(value, [])) return JSON.stringify(value);
  } catch {}
  return strictStringify(value);
}
const controllers = new WeakMap();
export function handlerContext(callId, call, toolName, originalName, report) {
  const controller = new AbortController();
  const reportProgress = (progress, total, message) => report(call, progress, total, message);
  const ctx = { signal: controller.signal, callId, toolName, originalName, reportProgress };
  controllers.set(ctx, controller);
  return ctx;
}
export function abortHandlerContext(ctx, reason) {
  controllers.get(ctx).abort(new Error(reason));
}
export function dispatchToolEvent(type, detail) {
  if (typeof window === "undefined") return;
  const modelContext = window.document && window.document.modelContext;
  const target = modelContext instanceof EventTarget ? modelContext : window;
  target.dispatchEvent(new CustomEvent(type, { detail }));
}
