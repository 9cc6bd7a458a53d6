//! Adopting the browser's tools (`adoptBrowserTools`, SPEC §8): the tools other code registers with
//! `document.modelContext` (a plain WebMCP page, MCP-B's `@mcp-b/global`, the browser itself) are
//! offered to the runtime's agents as tools of kind `browser`, and an agent's call runs through the
//! browser's `executeTool` — the tool's own `execute`, with the call's signal — after the same
//! validation, confirmation, timeout and exactly-once rules as any call of the page.
//!
//! The list follows the browser's: at each `toolchange` the tools are listed again
//! (`getTools()`); a tool that left (its registration aborted) leaves the registry, a changed one is
//! adopted again. Skipped: the page's own registrations (`exposeToBrowser`) and any name a tool of
//! the page already has (a warning says so).

use std::rc::Rc;

use client_tools_core::page_api;
use client_tools_core::registry::{ToolKind, Warning};
use client_tools_core::WarningCode;
use js_sys::Array;
use wasm_bindgen::prelude::*;

use super::state::Adopted;
use crate::page::{now, Page};

/// Starts following the browser's tools (once, at construction).
pub fn start(page: &Rc<Page>) {
    let Some(model_context) = super::model_context() else {
        return;
    };
    let model_context: JsValue = model_context.into();
    let weak = Rc::downgrade(page);
    let context = model_context.clone();
    let on_list = Closure::<dyn Fn(Array, Array, Array)>::new(move |names, declarations, tools| {
        if let Some(page) = weak.upgrade() {
            sync(&page, &context, &names, &declarations, &tools);
        }
    });
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

    let now = now();
    let mut engine = page.engine.borrow_mut();
    let mut adopted = page.browser_agent.adopted.borrow_mut();
    adopted.retain(|known| {
        let kept = (listed.iter()).any(|(_, declaration, _)| *declaration == known.declaration);
        if let (false, Some(name)) = (kept, &known.name) {
            engine.unregister(now, name);
        }
        kept
    });
    let mut warnings = Vec::new();
    for (name, declaration, tool) in listed {
        if adopted.iter().any(|known| known.declaration == declaration) {
            continue;
        }
        let adopting = match engine.registry().get(&name) {
            // The browser's own registration of a `<form toolname>` the page has as a tool.
            Some(tool) if tool.kind == ToolKind::Form => Err(None),
            Some(tool) => Err(Some(format!(
                "the page's tool '{}' has that name",
                tool.name
            ))),
            None => page_api::read_declaration(name.clone(), &declaration)
                .and_then(|read| {
                    let handler = super::adopted_handler(model_context, &tool);
                    engine.define(now, read, ToolKind::Browser, handler)
                })
                .map_err(|error| Some(error.to_string())),
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
    engine.report(warnings);
    drop((engine, adopted));
    page.drain();
}
