//! The `ctx` object a handler receives (SPEC §4): `signal`, `callId`, `toolName`, `originalName`,
//! `reportProgress(progress, total?, message?)`.
//!
//! `reportProgress` is one page-lifetime function bound to the call id (no closure per call): it
//! looks the call up among the running ones, so once the call is over it quietly does nothing.

use wasm_bindgen::prelude::*;

use crate::js;
use crate::page::Page;

pub struct HandlerContext {
    pub object: js_sys::Object,
    controller: web_sys::AbortController,
}

impl HandlerContext {
    pub fn new(
        page: &Page,
        call_id: &str,
        tool_name: &str,
        original_name: &str,
    ) -> Result<Self, JsValue> {
        let controller = web_sys::AbortController::new()?;
        let report_progress = page
            .report_progress_fn()
            .bind1(&JsValue::NULL, &call_id.into());
        let object = js::handler_context(
            &controller.signal(),
            call_id,
            tool_name,
            original_name,
            &report_progress.into(),
        );
        Ok(Self { object, controller })
    }

    /// Aborts `ctx.signal` with an `Error` carrying `reason` (what `signal.reason` shows).
    pub fn abort(&self, reason: &str) {
        self.controller
            .abort_with_reason(&js_sys::Error::new(reason).into());
    }
}
