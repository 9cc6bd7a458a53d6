//! The `ctx` object a handler receives (SPEC §4): `signal`, `callId`, `toolName`, `originalName`,
//! `reportProgress(progress, total?, message?)`.
//!
//! `reportProgress` calls one page-lifetime function with the call id (no Rust closure per call): it
//! looks the call up among the running ones, so once the call is over it quietly does nothing.

use crate::js;
use crate::page::Page;

pub struct HandlerContext {
    pub object: js_sys::Object,
}

impl HandlerContext {
    pub fn new(page: &Page, call_id: &str, tool_name: &str, original_name: &str) -> Self {
        let object =
            js::handler_context(call_id, tool_name, original_name, page.report_progress_fn());
        Self { object }
    }

    /// Aborts `ctx.signal` with an `Error` carrying `reason` (what `signal.reason` shows).
    pub fn abort(&self, reason: &str) {
        js::abort_handler_context(&self.object, reason);
    }
}
