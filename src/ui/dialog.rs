//! The dialog (SPEC §7): one `<client-tools-ui>` element appended to `document.body` on first use,
//! with an open shadow root holding the styles and one native `<dialog>` opened with `showModal()`
//! (the browser traps focus and makes the page inert). Requests wait in one queue — confirmations and
//! result forms of every `ClientTools` on the page — and are shown one at a time.
//!
//! The DOM is a contract (docs/api.md, *The built-in dialog*): tests and screenshots select
//! `[data-ct=…]`, `[data-action=…]` and `[data-path=…]`.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use crate::oneshot;
use client_tools_core::page_engine::Question;
use client_tools_core::validate::CompiledSchema;
use serde_json::Value;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{Element, Event, HtmlDialogElement, HtmlElement, ShadowRootInit, ShadowRootMode};

use super::el;
use super::schema_form::{self, FieldErrors};
use super::strings::{Strings, S};
use crate::js;

pub use client_tools_core::page_engine::{Answer, QuestionKind as Kind};

/// What the user is asked (the engine's question), and the words to ask it with.
pub struct Request {
    pub question: Question,
    pub strings: Rc<Strings>,
}

impl std::ops::Deref for Request {
    type Target = Question;

    fn deref(&self) -> &Question {
        &self.question
    }
}

struct Pending {
    id: u32,
    request: Request,
    reply: oneshot::Sender<Answer>,
}

struct Ui {
    host: Element,
    dialog: HtmlDialogElement,
    /// The request shown first; the others wait.
    queue: Vec<Pending>,
    /// The form is editable (always for a result form; after Edit for a confirmation).
    editing: bool,
    /// Where focus was before the dialog opened: it goes back there when the dialog closes.
    restore: Option<HtmlElement>,
    /// Activations before this time (page clock, ms) are ignored: see [`ARMING_MS`].
    armed_until: f64,
}

/// How long the dialog ignores clicks, Enter and Esc after one request replaced another (and says
/// `aria-busy` meanwhile), so an answer meant for the previous request cannot land on the next.
const ARMING_MS: u32 = 400;

thread_local! {
    static UI: RefCell<Option<Ui>> = const { RefCell::new(None) };
    static NEXT_REQUEST: Cell<u32> = const { Cell::new(0) };
}

/// Shows `request` (now, or after those already waiting). The id withdraws it ([`withdraw`]); the
/// receiver gets the answer. An error when the page has no `document.body` to show it in.
pub fn ask(request: Request) -> Result<(u32, oneshot::Receiver<Answer>), String> {
    let (reply, answer) = oneshot::channel();
    let id = NEXT_REQUEST.with(|n| {
        n.set(n.get() + 1);
        n.get()
    });
    UI.with_borrow_mut(|ui| {
        if ui.is_none() {
            *ui = create();
        }
        let ui = ui
            .as_mut()
            .ok_or("this page has no document body to show the dialog in")?;
        ui.queue.push(Pending { id, request, reply });
        if ui.queue.len() == 1 {
            ui.show();
        } else {
            ui.count_waiting();
        }
        Ok((id, answer))
    })
}

/// Takes a request away unanswered (the runtime cancelled the call, or the wait ran out).
pub fn withdraw(id: u32) {
    UI.with_borrow_mut(|ui| {
        let Some(ui) = ui else { return };
        let Some(index) = ui.queue.iter().position(|p| p.id == id) else {
            return;
        };
        ui.queue.remove(index);
        if index == 0 {
            ui.show();
        } else {
            ui.count_waiting();
        }
    });
}

/// What Tab can reach in the dialog.
const FOCUSABLE: &str =
    "button:not([disabled]),input:not([disabled]),select:not([disabled]),textarea:not([disabled])";

/// The UI's styles as a constructed stylesheet: a page whose Content-Security-Policy refuses inline
/// styles (`style-src 'self'`) still gets a styled, visibly focused dialog (a `<style>` element
/// would be refused there). A `<style>` element only where constructed sheets do not exist.
fn adopt_styles(root: &web_sys::ShadowRoot) {
    const CSS: &str = include_str!("styles.css");
    let constructed = web_sys::CssStyleSheet::new().and_then(|sheet| {
        sheet.replace_sync(CSS)?;
        root.set_adopted_style_sheets(&js_sys::Array::of1(&sheet));
        Ok(())
    });
    if constructed.is_err() {
        el(root, "style", &[], Some(CSS));
    }
}

fn create() -> Option<Ui> {
    let document = js::window()?.document()?;
    let body = document.body()?;
    let host = document.create_element("client-tools-ui").ok()?;
    let root = host
        .attach_shadow(&ShadowRootInit::new(ShadowRootMode::Open))
        .ok()?;
    adopt_styles(&root);
    let dialog: HtmlDialogElement = el(
        &root,
        "dialog",
        &[("aria-labelledby", "t"), ("aria-describedby", "d")],
        None,
    )
    .unchecked_into();
    body.append_child(&host).ok()?;
    // The dialog lives as long as the page: its listeners do too.
    for event in [
        "click", "cancel", "submit", "close", "keydown", "input", "change",
    ] {
        let listener = Closure::<dyn Fn(Event)>::new(move |e: Event| on_event(event, &e));
        let _ = dialog.add_event_listener_with_callback(event, listener.as_ref().unchecked_ref());
        listener.forget();
    }
    Some(Ui {
        host,
        dialog,
        queue: Vec::new(),
        editing: false,
        restore: None,
        armed_until: 0.0,
    })
}

fn on_event(kind: &str, event: &Event) {
    UI.with(|ui| {
        let Ok(mut ui) = ui.try_borrow_mut() else {
            return;
        };
        let Some(ui) = ui.as_mut() else { return };
        let Some(current) = ui.queue.first() else {
            return;
        };
        let confirm = matches!(current.request.kind, Kind::Confirm { .. });
        let dismiss = if confirm { "reject" } else { "cancel" };
        // Just after one request replaced another, activations are ignored: a double click or a
        // held Enter meant for the previous request must not answer the new one unseen.
        let arming = js::now_ms() < ui.armed_until;
        match kind {
            "click" | "cancel" if arming => {
                event.prevent_default();
            }
            // The person changed this field: it is read from the form (the rest stays as proposed).
            "input" | "change" => {
                if let Some(target) = event.target().and_then(|t| t.dyn_into::<Element>().ok()) {
                    let _ = target.set_attribute("data-dirty", "");
                }
            }
            "click" => {
                let button = event
                    .target()
                    .and_then(|t| t.dyn_into::<Element>().ok())
                    .and_then(|t| t.closest("button[data-action]").ok().flatten());
                if let Some(button) = button {
                    let action = button.get_attribute("data-action").unwrap_or_default();
                    let path = button.get_attribute("data-path").unwrap_or_default();
                    ui.act(&action, &path);
                }
            }
            // Esc: the least consequential answer.
            // (A `cancel` the page cannot stop — Esc without a user activation in Chromium — is
            // followed by the dialog closing: the `close` below answers then, once.)
            "cancel" if event.cancelable() => {
                event.prevent_default();
                ui.act(dismiss, "");
            }
            // Never a navigation; Enter in a result form submits it.
            "submit" => {
                event.prevent_default();
                if !confirm {
                    ui.act("submit", "");
                }
            }
            "keydown" => ui.trap_focus(event),
            // Closed by the browser with a request still shown: as Esc — unless that request was
            // just put in front of the person (then it is shown again).
            _ if !ui.dialog.open() && arming => {
                let _ = ui.dialog.show_modal();
                ui.focus("[data-action]");
            }
            _ if !ui.dialog.open() => ui.act(dismiss, ""),
            _ => {}
        }
    });
}

impl Ui {
    fn form(&self) -> Option<Element> {
        self.dialog.query_selector("form").ok().flatten()
    }

    fn find(&self, selector: &str) -> Option<Element> {
        self.dialog.query_selector(selector).ok().flatten()
    }

    /// Shows the first request, or closes the dialog when none waits.
    fn show(&mut self) {
        let Some(current) = self.queue.first() else {
            self.dialog.close();
            if let Some(element) = self.restore.take() {
                let _ = element.focus();
            }
            return;
        };
        let request = &current.request;
        let strings = &request.strings;
        let confirm = matches!(request.kind, Kind::Confirm { .. });
        self.editing = !confirm;
        let dialog = &self.dialog;
        dialog.set_text_content(None);
        el(
            dialog,
            "h2",
            &[("id", "t"), ("data-ct", "title")],
            Some(&request.title),
        );
        let intro = strings.get(if confirm {
            S::ConfirmIntro
        } else {
            S::ResultIntro
        });
        if request.description.is_some() {
            el(dialog, "p", &[("data-ct", "intro")], Some(intro));
        }
        let description = request.description.as_deref().unwrap_or(intro);
        el(
            dialog,
            "p",
            &[("id", "d"), ("data-ct", "description")],
            Some(description),
        );
        let name = el(
            dialog,
            "p",
            &[("class", "meta")],
            Some(strings.get(S::Tool)),
        );
        el(
            &name,
            "code",
            &[("data-ct", "original-name")],
            Some(&request.original_name),
        );
        if let Some(context) = &request.context {
            let input = el(
                dialog,
                "p",
                &[("class", "meta")],
                Some(strings.get(S::Input)),
            );
            el(&input, "code", &[("data-ct", "input")], Some(context));
        }
        let form = el(
            dialog,
            "form",
            &[("data-ct", "form"), ("novalidate", "")],
            None,
        );
        schema_form::render(&form, self.schema(), &request.value, self.editing, strings);
        let mut buttons: Vec<(&str, S)> = vec![("cancel", S::Cancel), ("submit", S::Submit)];
        if let Kind::Confirm {
            offer_session,
            offer_always,
        } = request.kind
        {
            el(
                dialog,
                "label",
                &[("for", "r")],
                Some(strings.get(S::Reason)),
            );
            el(
                dialog,
                "textarea",
                &[("id", "r"), ("data-ct", "reason"), ("rows", "2")],
                None,
            );
            let checks = [
                (offer_session, "allow-session", S::AllowSession),
                (offer_always, "allow-always", S::AllowAlways),
            ];
            for (_, key, words) in checks.into_iter().filter(|check| check.0) {
                let label = el(dialog, "label", &[("class", "check")], None);
                el(
                    &label,
                    "input",
                    &[("type", "checkbox"), ("data-ct", key)],
                    None,
                );
                let text = strings.fill(words, "{tool}", &request.original_name);
                el(&label, "span", &[], Some(&text));
            }
            buttons = vec![
                ("edit", S::Edit),
                ("reject", S::Reject),
                ("approve", S::Approve),
            ];
        }
        let actions = el(dialog, "div", &[("class", "actions")], None);
        for (action, text) in buttons {
            el(
                &actions,
                "button",
                &[("type", "button"), ("data-action", action)],
                Some(strings.get(text)),
            );
        }
        el(dialog, "p", &[("data-ct", "queue")], None);
        el(
            dialog,
            "div",
            &[("data-ct", "live"), ("role", "status")],
            None,
        );
        self.count_waiting();

        if self.dialog.open() {
            // One request replaced another under the person's eyes: arm after a moment.
            self.armed_until = js::now_ms() + f64::from(ARMING_MS);
            let _ = self.dialog.set_attribute("aria-busy", "true");
            let disarm = Closure::once_into_js(|| {
                UI.with(|ui| {
                    let Ok(ui) = ui.try_borrow() else { return };
                    // Only the last replacement's timer disarms.
                    if let Some(ui) = ui
                        .as_ref()
                        .filter(|ui| js::now_ms() + 1.0 >= ui.armed_until)
                    {
                        let _ = ui.dialog.remove_attribute("aria-busy");
                    }
                });
            });
            if let Some(window) = js::window() {
                let _ = window.set_timeout_with_callback_and_timeout_and_arguments_0(
                    disarm.unchecked_ref(),
                    ARMING_MS as i32,
                );
            }
        } else {
            // (Reopened after a forced close, it keeps where focus was before the first request.)
            if self.restore.is_none() {
                let document = self.host.owner_document();
                self.restore = document
                    .and_then(|d| d.active_element())
                    .map(JsCast::unchecked_into);
            }
            if !self.host.is_connected() {
                if let Some(body) = js::window()
                    .and_then(|w| w.document())
                    .and_then(|d| d.body())
                {
                    let _ = body.append_child(&self.host);
                }
            }
            let _ = self.dialog.show_modal();
        }
        // Confirmations start on Reject (least destructive), result forms on their first field.
        let first = if confirm {
            "[data-action=reject]"
        } else {
            "form [data-path],[data-action=submit]"
        };
        self.focus(first);
    }

    /// Keeps Tab and Shift+Tab inside the dialog: a modal `<dialog>` makes the page inert, but the
    /// browsers still let Tab leave the last control (to the browser's own UI, or nowhere in a
    /// headless one); from the last control Tab goes to the first, and Shift+Tab the other way.
    fn trap_focus(&self, event: &Event) {
        if js::get(event, "key").as_string().as_deref() != Some("Tab") {
            return;
        }
        let Ok(focusable) = self.dialog.query_selector_all(FOCUSABLE) else {
            return;
        };
        let count = focusable.length();
        let (Some(first), Some(last)) = (
            focusable.item(0),
            count.checked_sub(1).and_then(|i| focusable.item(i)),
        ) else {
            return;
        };
        let active = js::get(&self.host, "shadowRoot");
        let active = js::get(&active, "activeElement");
        let backwards = js::get(event, "shiftKey").is_truthy();
        let (edge, wrap_to) = if backwards {
            (first, last)
        } else {
            (last, first)
        };
        let at_edge = JsValue::from(edge) == active || active.is_null() || active.is_undefined();
        if at_edge {
            event.prevent_default();
            let _ = wrap_to.unchecked_into::<HtmlElement>().focus();
        }
    }

    fn focus(&self, selector: &str) {
        if let Some(element) = self.find(selector) {
            let _ = element.unchecked_into::<HtmlElement>().focus();
        }
    }

    fn schema(&self) -> &Value {
        const ANY: &Value = &Value::Bool(true);
        self.queue
            .first()
            .and_then(|p| p.request.schema.as_deref())
            .map_or(ANY, CompiledSchema::schema)
    }

    /// "N more waiting", hidden when none waits.
    fn count_waiting(&self) {
        let (Some(counter), Some(current)) = (self.find("[data-ct=queue]"), self.queue.first())
        else {
            return;
        };
        let waiting = self.queue.len() - 1;
        let text = current
            .request
            .strings
            .fill(S::Queue, "{n}", &waiting.to_string());
        counter.set_text_content(Some(if waiting == 0 { "" } else { &text }));
        counter
            .toggle_attribute_with_force("hidden", waiting == 0)
            .ok();
    }

    fn act(&mut self, action: &str, path: &str) {
        let Some(form) = self.form() else { return };
        let Some(current) = self.queue.first() else {
            return;
        };
        let strings = current.request.strings.clone();
        let answer = match action {
            "edit" => {
                self.editing = true;
                schema_form::render(&form, self.schema(), &current.request.value, true, &strings);
                if let Some(edit) = self.find("[data-action=edit]") {
                    edit.remove();
                }
                self.focus("form [data-path]");
                return;
            }
            "add" | "remove" => {
                let (array, remove) = match action {
                    "add" => (path, None),
                    _ => {
                        let cut = path.rfind('/').unwrap_or(0);
                        (&path[..cut], path[cut + 1..].parse().ok())
                    }
                };
                let next = schema_form::change_rows(&form, self.schema(), array, remove, &strings);
                if let Some(element) = next {
                    let _ = element.focus();
                }
                return;
            }
            "reject" => {
                let reason = self.find("[data-ct=reason]").map(|r| js::get(&r, "value"));
                Answer::Reject(reason.and_then(|r| r.as_string()).filter(|r| !r.is_empty()))
            }
            "cancel" => Answer::Cancelled,
            "approve" if !self.editing => self.approve(),
            // Edit pressed but nothing touched: exactly the proposed input, approved.
            "approve" if !schema_form::touched(&form) => self.approve(),
            "approve" | "submit" => {
                let base = match action {
                    "approve" => schema_form::Base::Original(Some(&current.request.value)),
                    _ => schema_form::Base::Fresh,
                };
                let (value, mut errors) = schema_form::read(&form, self.schema(), base, &strings);
                if errors.is_empty() {
                    if let Some(schema) = &current.request.schema {
                        errors = schema.field_errors(&value);
                    }
                }
                if !errors.is_empty() {
                    self.invalid(&form, &errors, &strings);
                    return;
                }
                match action {
                    "submit" => Answer::Result(value),
                    _ if value == current.request.value => self.approve(),
                    _ => Answer::Modify(value),
                }
            }
            _ => return,
        };
        if !self.queue.is_empty() {
            let _ = self.queue.remove(0).reply.send(answer);
        }
        self.show();
    }

    /// Approve, with what the person ticked: for the rest of this session, always.
    fn approve(&self) -> Answer {
        let ticked = |check: &str| {
            self.find(check)
                .is_some_and(|c| js::get(&c, "checked").as_bool() == Some(true))
        };
        Answer::Approve {
            allow_session: ticked("[data-ct=allow-session]"),
            allow_always: ticked("[data-ct=allow-always]"),
        }
    }

    /// Errors on their fields, announced in the live region; focus goes to the first invalid field.
    fn invalid(&self, form: &Element, errors: &FieldErrors, strings: &Strings) {
        let first = schema_form::show_errors(form, errors);
        if let Some(live) = self.find("[data-ct=live]") {
            live.set_text_content(None);
            live.set_text_content(Some(strings.get(S::Invalid)));
        }
        if let Some(first) = first {
            let _ = first.focus();
        }
    }
}
