//! Handler timeouts of all running calls, behind one page timer.
//!
//! A `setTimeout` per call (and the closure it needs) is a fixed cost on every call, though almost
//! every call ends long before its timeout. Instead the page keeps the deadlines and arms a
//! single timer for the earliest one. A call that ends withdraws its deadline (the timer stays: when
//! it fires with nothing due it just arms itself for the next deadline).

use std::cell::RefCell;
use std::rc::Weak;

use wasm_bindgen::prelude::*;

use crate::call_runner;
use crate::js;
use crate::page::{Page, Stop};

#[wasm_bindgen]
extern "C" {
    // The global functions (a window's or a worker's).
    #[wasm_bindgen(js_name = setTimeout)]
    fn set_timeout(handler: &js_sys::Function, ms: f64) -> JsValue;
    #[wasm_bindgen(js_name = clearTimeout)]
    fn clear_timeout(id: &JsValue);
}

/// Browsers treat a longer `setTimeout` delay as 0.
const MAX_DELAY_MS: f64 = i32::MAX as f64;

pub struct Deadlines {
    /// Unordered: a page runs few calls at once, and a `Vec` costs the package less than a map.
    due: RefCell<Vec<Due>>,
    /// The time the page timer is armed for (ms), and the timer's id.
    armed: RefCell<Option<(f64, JsValue)>>,
    on_timer: Closure<dyn Fn()>,
}

struct Due {
    at_ms: f64,
    call_id: String,
}

/// A running call's deadline: when it is reached the call is stopped with [`Stop::TimedOut`];
/// dropping it withdraws the deadline.
pub struct Deadline<'a> {
    deadlines: &'a Deadlines,
    call_id: &'a str,
}

impl Drop for Deadline<'_> {
    fn drop(&mut self) {
        let mut due = self.deadlines.due.borrow_mut();
        if let Some(index) = due.iter().position(|d| d.call_id == self.call_id) {
            due.swap_remove(index);
        }
    }
}

impl Deadlines {
    pub fn new(page: Weak<Page>) -> Self {
        Self {
            due: RefCell::default(),
            armed: RefCell::new(None),
            on_timer: Closure::new(move || {
                if let Some(page) = page.upgrade() {
                    page.deadlines.sweep(&page);
                }
            }),
        }
    }

    /// A deadline `timeout_ms` from now for running call `call_id`.
    pub fn start<'a>(&'a self, call_id: &'a str, timeout_ms: u64) -> Deadline<'a> {
        let at_ms = js::now_ms() + timeout_ms as f64;
        self.due.borrow_mut().push(Due {
            at_ms,
            call_id: call_id.to_owned(),
        });
        let sooner = self
            .armed
            .borrow()
            .as_ref()
            .is_none_or(|(armed, _)| at_ms < *armed);
        if sooner {
            self.arm(at_ms);
        }
        Deadline {
            deadlines: self,
            call_id,
        }
    }

    /// Arms the page timer for `at_ms`, replacing the one armed before.
    fn arm(&self, at_ms: f64) {
        let delay = (at_ms - js::now_ms()).clamp(0.0, MAX_DELAY_MS);
        let id = set_timeout(self.on_timer.as_ref().unchecked_ref(), delay.ceil());
        if let Some((_, earlier)) = self.armed.replace(Some((at_ms, id))) {
            clear_timeout(&earlier);
        }
    }

    /// The timer fired: stops the calls that are due, then arms the timer for the next deadline.
    fn sweep(&self, page: &Page) {
        self.armed.replace(None);
        let now = js::now_ms();
        let mut next = f64::INFINITY;
        let all = std::mem::take(&mut *self.due.borrow_mut());
        for due in all {
            if due.at_ms <= now {
                // Only queues the call's task: nothing runs while `due` is borrowed.
                call_runner::stop(page, &due.call_id, Stop::TimedOut);
            } else {
                next = next.min(due.at_ms);
                self.due.borrow_mut().push(due);
            }
        }
        if next.is_finite() {
            self.arm(next);
        }
    }
}

impl Drop for Deadlines {
    fn drop(&mut self) {
        if let Some((_, id)) = self.armed.take() {
            clear_timeout(&id);
        }
    }
}
