//! The SDK's own user interface (SPEC §7): the confirmation dialog and the result form, built by one
//! schema-form renderer, in a shadow root the page's CSS cannot reach.
//!
//! - [`schema_form`]: schema + value → fields; fields → value; errors → fields;
//! - the result form (an agent tool with no handler, answered by the user) is [`dialog`] with
//!   `Kind::Result`, asked by `crate::ask`;
//! - [`dialog`]: the `<client-tools-ui>` host, its `<dialog>`, the queue of requests, focus;
//! - [`strings`]: the words shown, overridable with the `strings` option.

pub mod dialog;
pub mod schema_form;
pub mod strings;

use std::cell::Cell;

use wasm_bindgen::prelude::*;
use web_sys::{Element, Node};

#[wasm_bindgen(inline_js = r#"
const p = (n) => String(n).padStart(2, "0");
export function isoToLocal(v) {
  const d = new Date(v);
  return isNaN(d) ? v : `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}
export function localToIso(v) { return new Date(v).toISOString(); }
"#)]
extern "C" {
    /// An RFC 3339 date-time as the local `YYYY-MM-DDTHH:MM:SS` a `datetime-local` input shows
    /// (unchanged when it is not a date).
    #[wasm_bindgen(js_name = isoToLocal)]
    fn iso_to_local(value: &str) -> String;
    /// A `datetime-local` value (local time) as an RFC 3339 date-time in UTC.
    #[wasm_bindgen(js_name = localToIso)]
    fn local_to_iso(value: &str) -> String;
}

/// Whether `text` is what a `datetime-local` input gives (`YYYY-MM-DDTHH:MM[:SS[.sss]]`).
fn is_local_date_time(text: &str) -> bool {
    text.len() >= 16 && text.as_bytes()[10] == b'T'
}

/// A new element `<tag attrs…>text</tag>` appended to `parent`. Text is `textContent`, never markup.
pub fn el(parent: &Node, tag: &str, attrs: &[(&str, &str)], text: Option<&str>) -> Element {
    let element = crate::js::window()
        .and_then(|w| w.document())
        .expect_throw("a document")
        .create_element(tag)
        .expect_throw("a valid tag");
    for (name, value) in attrs {
        let _ = element.set_attribute(name, value);
    }
    if text.is_some() {
        element.set_text_content(text);
    }
    let _ = parent.append_child(&element);
    element
}

thread_local! {
    static NEXT_ID: Cell<u32> = const { Cell::new(0) };
}

/// A fresh element id (unique within the shadow root).
fn next_id() -> String {
    let id = NEXT_ID.with(|n| {
        n.set(n.get() + 1);
        n.get()
    });
    format!("c{id}")
}
