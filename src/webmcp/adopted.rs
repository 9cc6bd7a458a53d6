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

use client_tools_core::registry::{Declaration, ToolKind, Warning};
use client_tools_core::WarningCode;
use serde::Deserialize;
use serde_json::Value;
use wasm_bindgen::prelude::*;

use super::state::Adopted;
use crate::page::{now, Page};

/// A tool as `getTools()` describes it.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Descriptor {
    name: String,
    description: Option<String>,
    input_schema: Option<Value>,
    annotations: Option<Value>,
}

/// Starts following the browser's tools (once, at construction).
pub fn start(page: &Rc<Page>) {
    let Some(model_context) = super::model_context() else {
        return;
    };
    let model_context: JsValue = model_context.into();
    let weak = Rc::downgrade(page);
    let context = model_context.clone();
    let on_toolchange = Closure::<dyn Fn()>::new(move || {
        if let Some(page) = weak.upgrade() {
            wasm_bindgen_futures::spawn_local(sync(page, context.clone()));
        }
    });
    let watched =
        super::watch_browser_tools(&model_context, on_toolchange.as_ref().unchecked_ref());
    if watched {
        *page.browser_agent.on_toolchange.borrow_mut() = Some(on_toolchange);
    }
}

/// Lists the browser's tools and brings the adopted ones in step.
async fn sync(page: Rc<Page>, model_context: JsValue) {
    let listed = wasm_bindgen_futures::JsFuture::from(super::browser_tools(&model_context)).await;
    let Ok(listed) = listed else { return };
    let listed: js_sys::Array = listed.unchecked_into();
    let descriptors = listed.get(0).as_string().unwrap_or_default();
    let tools: js_sys::Array = listed.get(1).unchecked_into();
    let descriptors: Vec<Value> = serde_json::from_str(&descriptors).unwrap_or_default();
    let ours: Vec<String> = (page.browser_agent.registered.borrow().iter())
        .map(|registration| registration.name.clone())
        .collect();
    // Each with its JSON text, what tells a changed descriptor.
    let wanted: Vec<(String, Value, JsValue)> = descriptors
        .into_iter()
        .zip(tools.iter())
        .filter(|(descriptor, _)| {
            let name = descriptor["name"].as_str().unwrap_or_default();
            !ours.iter().any(|ours| ours == name)
        })
        .map(|(descriptor, tool)| (descriptor.to_string(), descriptor, tool))
        .collect();

    let now = now();
    let mut engine = page.engine.borrow_mut();
    let mut adopted = page.browser_agent.adopted.borrow_mut();
    adopted.retain(|known| {
        let kept = (wanted.iter()).any(|(text, ..)| *text == known.descriptor);
        if let (false, Some(name)) = (kept, &known.name) {
            engine.unregister(now, name);
        }
        kept
    });
    let mut warnings = Vec::new();
    for (text, descriptor, tool) in wanted {
        if adopted.iter().any(|known| known.descriptor == text) {
            continue;
        }
        let Ok(Descriptor {
            name,
            description,
            input_schema,
            annotations,
        }) = serde_json::from_value(descriptor)
        else {
            continue;
        };
        let taken = engine.registry().get(&name);
        let adopting = match taken {
            // The browser's own registration of a `<form toolname>` the page has as a tool.
            Some(tool) if tool.kind == ToolKind::Form => Err(None),
            Some(tool) => Err(Some(format!(
                "the page's tool '{}' has that name",
                tool.name
            ))),
            None => {
                let declaration = Declaration {
                    original_name: name.clone(),
                    description,
                    parameters: input_schema,
                    annotations,
                    ..Declaration::default()
                };
                let handler = super::adopted_handler(&model_context, &tool);
                (engine.define(now, declaration, ToolKind::Browser, handler))
                    .map_err(|error| Some(error.to_string()))
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
            descriptor: text,
        });
    }
    engine.report(warnings);
    drop((engine, adopted));
    page.drain();
}
