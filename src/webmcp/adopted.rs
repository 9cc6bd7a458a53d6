//! Adopting the browser's tools (`adoptBrowserTools`, SPEC §8): the tools other code registers with
//! `document.modelContext` (a plain WebMCP page, MCP-B's `@mcp-b/global`, the browser itself) are
//! offered to the runtime's agents as tools of kind `browser`, and an agent's call runs through the
//! browser's `executeTool` — the tool's own `execute`, with the call's signal — after the same
//! validation, confirmation, timeout and exactly-once rules as any call of the page.
//!
//! The list follows the browser's: at each `toolchange` the tools are listed again
//! (`getTools()`); a tool that left (its registration aborted) leaves the registry, a changed one is
//! adopted again. Skipped: the page's own registrations (`exposeToBrowser`), any name a tool of the
//! page already has, a declaration over `MAX_ADOPTED_DECLARATION_BYTES` and tools beyond
//! `MAX_ADOPTED_TOOLS` (a warning says so: any script of the page may register tools there). A tool
//! that does not say it only reads (`readOnlyHint`) asks the person before it runs.

use std::rc::Rc;

use client_tools_core::page_api;
use client_tools_core::registry::{ToolKind, Warning};
use client_tools_core::WarningCode;
use js_sys::Array;
use wasm_bindgen::prelude::*;

use crate::webmcp_state::Adopted;
use client_tools_core::limits::{MAX_ADOPTED_DECLARATION_BYTES, MAX_ADOPTED_TOOLS};

use crate::page::{now, Page};

/// Starts following the browser's tools (once, at construction).
pub fn start(page: &Rc<Page>) {
    let Some(model_context) = super::model_context() else {
        return;
    };
    let weak = Rc::downgrade(page);
    let on_list = Closure::<dyn Fn(JsValue, JsValue, JsValue)>::new(
        move |names: JsValue, declarations: JsValue, handlers: JsValue| {
            let Some(page) = weak.upgrade() else { return };
            let (Ok(names), Some(listed)) =
                (names.dyn_into::<Array>(), declarations.dyn_ref::<Array>())
            else {
                let why = declarations.as_string().unwrap_or_default();
                let message = format!("the browser's modelContext did not list its tools: {why}");
                return report(&page, vec![message]);
            };
            sync(&page, &names, listed, &handlers.unchecked_into());
        },
    );
    if super::watch_browser_tools(&model_context, on_list.as_ref().unchecked_ref()) {
        *page.browser_agent.on_list.borrow_mut() = Some(on_list);
    }
}

/// Brings the adopted tools in step with what the browser lists.
fn sync(page: &Rc<Page>, names: &Array, declarations: &Array, handlers: &Array) {
    let ours = page.browser_agent.registered.borrow();
    let listed: Vec<(String, String, js_sys::Function)> = (0..names.length())
        .filter_map(|at| {
            let handler = handlers.get(at).dyn_into().ok()?;
            Some((
                names.get(at).as_string()?,
                declarations.get(at).as_string()?,
                handler,
            ))
        })
        .filter(|(name, ..)| !ours.iter().any(|ours| ours.name == *name))
        .collect();
    drop(ours);

    let mut engine = page.engine.borrow_mut();
    let mut adopted = page.browser_agent.adopted.borrow_mut();
    let mut warnings = Vec::new();
    engine.batch_tool_changes(now(), |engine| {
        // A record whose tool the page has taken over (or removed) is forgotten: the browser's
        // tool is considered again below, as a new one.
        adopted.retain(|known| match &known.name {
            Some(name) => (engine.registry().get(name)).is_some_and(|tool| {
                tool.kind == ToolKind::Browser && tool.original_name == known.browser_name
            }),
            None => true,
        });
        adopted.retain(|known| {
            let kept = (listed.iter()).any(|(_, declaration, _)| *declaration == known.declaration);
            if let (false, Some(name)) = (kept, &known.name) {
                engine.unregister(now(), name);
            }
            kept
        });
        for (name, declaration, handler) in listed {
            if adopted.iter().any(|known| known.declaration == declaration) {
                continue;
            }
            // Lasting refusals are kept (`None`); a taken name or a full list is tried again.
            let adopting = if adopted.iter().filter(|known| known.name.is_some()).count()
                >= MAX_ADOPTED_TOOLS
            {
                Err((
                    false,
                    format!("{MAX_ADOPTED_TOOLS} tools are adopted already"),
                ))
            } else if declaration.len() > MAX_ADOPTED_DECLARATION_BYTES {
                Err((
                    true,
                    format!("its declaration is over {MAX_ADOPTED_DECLARATION_BYTES} bytes"),
                ))
            } else {
                match engine.registry().get(&name) {
                    // The browser's own registration of a `<form toolname>` the page has as a tool.
                    Some(tool) if tool.kind == ToolKind::Form => continue,
                    Some(tool) => Err((
                        false,
                        format!("the page's tool '{}' has that name", tool.name),
                    )),
                    None => page_api::read_declaration(name.clone(), &declaration)
                        .and_then(|read| engine.define(now(), read, ToolKind::Browser, handler))
                        .map_err(|error| (true, error.to_string())),
                }
            };
            match adopting {
                Ok(registered) => adopted.push(Adopted {
                    name: Some(registered),
                    browser_name: name,
                    declaration,
                }),
                Err((lasting, why)) => {
                    warnings.push(format!("the browser's tool '{name}' is not adopted: {why}"));
                    if lasting {
                        adopted.push(Adopted {
                            name: None,
                            browser_name: name,
                            declaration,
                        });
                    }
                }
            }
        }
    });
    drop((engine, adopted));
    // Said once: a listing does not repeat what the previous one said.
    let before = page.browser_agent.adopt_warned.replace(warnings.clone());
    warnings.retain(|message| !before.contains(message));
    report(page, warnings);
}

/// Tells the page each message (a `warning` event) and performs what the engine asks.
fn report(page: &Rc<Page>, messages: Vec<String>) {
    let warnings = (messages.into_iter())
        .map(|message| Warning {
            code: WarningCode::BrowserToolNotAdopted,
            message,
            tool_name: None,
        })
        .collect();
    page.engine.borrow_mut().report(warnings);
    page.drain();
}
