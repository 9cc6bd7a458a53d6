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

use super::state::Adopted;
use client_tools_core::limits::{MAX_ADOPTED_DECLARATION_BYTES, MAX_ADOPTED_TOOLS};

use crate::page::{now, Page};

/// Starts following the browser's tools (once, at construction).
pub fn start(page: &Rc<Page>) {
    let Some(model_context) = super::model_context() else {
        return;
    };
    let model_context: JsValue = model_context.into();
    let weak = Rc::downgrade(page);
    let context = model_context.clone();
    let on_list = Closure::<dyn Fn(JsValue, JsValue, JsValue)>::new(
        move |names: JsValue, declarations: JsValue, tools: JsValue| {
            let Some(page) = weak.upgrade() else { return };
            match (names.dyn_into::<Array>(), declarations.dyn_into::<Array>()) {
                (Ok(names), Ok(declarations)) => sync(
                    &page,
                    &context,
                    &names,
                    &declarations,
                    &tools.unchecked_into(),
                ),
                (_, Err(why)) => {
                    let why = why.as_string().unwrap_or_default();
                    let warning = Warning {
                        code: WarningCode::BrowserToolNotAdopted,
                        message: format!(
                            "the browser's modelContext did not list its tools: {why}"
                        ),
                        tool_name: None,
                    };
                    page.engine.borrow_mut().report(vec![warning]);
                    page.drain();
                }
                _ => {}
            }
        },
    );
    if super::watch_browser_tools(&model_context, on_list.as_ref().unchecked_ref()) {
        *page.browser_agent.on_list.borrow_mut() = Some(on_list);
    }
}

/// Brings the adopted tools in step with what the browser lists.
fn sync(
    page: &Rc<Page>,
    model_context: &JsValue,
    names: &Array,
    declarations: &Array,
    tools: &Array,
) {
    let ours = page.browser_agent.registered.borrow();
    let listed: Vec<(String, String, JsValue)> = (0..names.length())
        .filter_map(|at| {
            Some((
                names.get(at).as_string()?,
                declarations.get(at).as_string()?,
                tools.get(at),
            ))
        })
        .filter(|(name, ..)| !ours.iter().any(|ours| ours.name == *name))
        .collect();
    drop(ours);

    let mut engine = page.engine.borrow_mut();
    let mut adopted = page.browser_agent.adopted.borrow_mut();
    let mut warnings = Vec::new();
    engine.batch_tool_changes(now(), |engine| {
        adopted.retain(|known| {
            let kept = (listed.iter()).any(|(_, declaration, _)| *declaration == known.declaration);
            // Only while the name is still the adopted tool's: the page may have taken it since.
            let still_ours = |name: &String| {
                (engine.registry().get(name)).is_some_and(|tool| tool.kind == ToolKind::Browser)
            };
            if let (false, Some(name)) = (kept, known.name.as_ref().filter(|n| still_ours(n))) {
                engine.unregister(now(), name);
            }
            kept
        });
        for (name, declaration, tool) in listed {
            if adopted.iter().any(|known| known.declaration == declaration) {
                continue;
            }
            let adopting = if adopted.iter().filter(|known| known.name.is_some()).count()
                >= MAX_ADOPTED_TOOLS
            {
                Err(Some(format!(
                    "{MAX_ADOPTED_TOOLS} tools are adopted already"
                )))
            } else if declaration.len() > MAX_ADOPTED_DECLARATION_BYTES {
                Err(Some(format!(
                    "its declaration is over {MAX_ADOPTED_DECLARATION_BYTES} bytes"
                )))
            } else {
                match engine.registry().get(&name) {
                    // The browser's own registration of a `<form toolname>` the page has as a tool.
                    Some(tool) if tool.kind == ToolKind::Form => Err(None),
                    Some(tool) => Err(Some(format!(
                        "the page's tool '{}' has that name",
                        tool.name
                    ))),
                    None => page_api::read_declaration(name.clone(), &declaration)
                        .and_then(|read| {
                            let handler = super::adopted_handler(model_context, &tool);
                            engine.define(now(), read, ToolKind::Browser, handler)
                        })
                        .map_err(|error| Some(error.to_string())),
                }
            };
            if let Err(Some(why)) = &adopting {
                warnings.push(Warning {
                    code: WarningCode::BrowserToolNotAdopted,
                    message: format!("the browser's tool '{name}' is not adopted: {why}"),
                    tool_name: None,
                });
            }
            adopted.push(Adopted {
                name: adopting.ok(),
                declaration,
            });
        }
    });
    engine.report(warnings);
    drop((engine, adopted));
    page.drain();
}
