//! The `ClientTools` class (SPEC §4): the whole JavaScript API, each method a thin wrapper that
//! converts arguments and hands them to the page engine ([`crate::page`]).

use client_tools_core::WarningCode;
use std::rc::Rc;

use client_tools_core::call::outcome;
use client_tools_core::connection::Connection;
use client_tools_core::page_api;
use client_tools_core::page_engine::{Caller, PageEngine};
use client_tools_core::registry::ToolKind;
use client_tools_core::CoreError;
use wasm_bindgen::prelude::*;

use crate::options::Options;
use crate::page::{now, Drivers, Page};
use crate::page_server::{self, PageServer};
use crate::transport::{self, custom, websocket};
use crate::typescript::*;
use crate::{declaration, driver, errors, js, session};

/// Client tools of one page: define them, connect to the agent runtime, watch the calls.
/// (Cloning in Rust shares the same page state.)
#[wasm_bindgen]
#[derive(Clone)]
pub struct ClientTools {
    page: Rc<Page>,
    /// The page's resources and prompts (`pageServer` in `js.js`), which answer for themselves.
    server: PageServer,
}

#[wasm_bindgen]
impl ClientTools {
    /// `options` may be left out: a page-only instance (no runtime), forms and the browser's agent.
    #[wasm_bindgen(constructor)]
    pub fn new(options: Option<ClientToolsOptionsArg>) -> Result<ClientTools, JsValue> {
        let options = options.map_or(JsValue::UNDEFINED, JsValue::from);
        let options = Options::parse(&options).map_err(errors::to_js)?;
        let (resume_secret, kept) = if options.endpoint.is_some() {
            (session::resume_secret(), session::take_kept_calls())
        } else {
            (None, None)
        };
        let timeout_ms = options.default_timeout_ms;
        let mut engine = PageEngine::new(options.engine_config(), timeout_ms, Vec::new());
        if let Some(kept) = kept {
            engine.reloaded(&kept);
        }
        let seed = (js_sys::Math::random() * u64::MAX as f64) as u64;
        let endpoint = options.endpoint.clone();
        let mut connection = Connection::new(endpoint, options.token.clone(), resume_secret, seed);
        if options.token_function.is_some() {
            connection = connection.with_token_function();
        }
        let drivers = Drivers {
            perform: driver::perform,
            connection: websocket::feed,
        };
        let page = Page::new(options, engine, connection, drivers);
        let server = page_server::page_server(page.from_ctx_fn());
        page.engine.borrow_mut().serve_with(server.serve());
        // A lost connection ends what its runtime watched: the next one subscribes again.
        let _ = (page.events.listeners.borrow_mut())
            .subscribe("connectionchange", server.connection_changed());
        let tools = ClientTools { page, server };
        if tools.page.options.endpoint.is_some() {
            session::keep_running_calls_on_unload(&tools.page);
        }
        crate::webmcp::start(&tools.page);
        if tools.page.options.auto_connect && tools.page.options.endpoint.is_some() {
            let page = tools.page.clone();
            wasm_bindgen_futures::spawn_local(async move {
                if let Err(error) = websocket::connect(&page).await {
                    page.events
                        .warn(WarningCode::ConnectFailed, &error.to_string(), None);
                }
            });
        }
        Ok(tools)
    }

    /// Defines a tool; returns its normalized name (SPEC §3).
    #[wasm_bindgen(js_name = defineFunction)]
    pub fn define_function(&self, declaration: FunctionDeclarationArg) -> Result<String, JsValue> {
        let (declaration, handler) = declaration::parse(&declaration).map_err(errors::to_js)?;
        let kind = ToolKind::Function;
        let defined = (self.page.engine.borrow_mut()).define(now(), declaration, kind, handler);
        self.page.drain();
        defined.map_err(errors::to_js)
    }

    /// Attaches a handler to a tool the agent defines; its schemas arrive with each call.
    #[wasm_bindgen(js_name = registerHandler)]
    pub fn register_handler(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] name: JsValue,
        handler: ToolHandlerArg,
    ) -> Result<String, JsValue> {
        let name = name.as_string().filter(|n| !n.is_empty());
        let name = name.ok_or_else(|| errors::to_js(CoreError::EmptyName))?;
        let handler: JsValue = handler.into();
        let Some(handler) = handler.dyn_ref::<js_sys::Function>().cloned() else {
            return Err(errors::to_js(CoreError::HandlerNotFunction(name)));
        };
        let registered = (self.page.engine.borrow_mut()).register_handler(now(), &name, handler);
        self.page.drain();
        registered.map_err(errors::to_js)
    }

    /// Adds a resource agents can list, read and watch (SPEC §11); returns the function that
    /// removes it again. Agents hear of both (`list_changed`).
    #[wasm_bindgen(js_name = defineResource)]
    pub fn define_resource(&self, definition: ResourceDefinitionArg) -> Result<Undefine, JsValue> {
        self.server.define_resource(&definition)
    }

    /// Adds a prompt agents can list and get (SPEC §11); returns the function that removes it.
    #[wasm_bindgen(js_name = definePrompt)]
    pub fn define_prompt(&self, definition: PromptDefinitionArg) -> Result<Undefine, JsValue> {
        self.server.define_prompt(&definition)
    }

    /// Tells agents that watch resource `uri` that it changed (`notifications/resources/updated`,
    /// at most one per URI within 50 ms); `false` when no agent watches it.
    #[wasm_bindgen(js_name = resourceChanged)]
    pub fn resource_changed(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] uri: JsValue,
    ) -> Result<bool, JsValue> {
        self.server.resource_changed(&uri)
    }

    /// Removes a tool (by normalized or original name); `false` when there was none.
    pub fn unregister(&self, name: &str) -> bool {
        let removed = self.page.engine.borrow_mut().unregister(now(), name);
        self.page.drain();
        removed
    }

    /// Every tool with its names, schemas and kind.
    pub fn list(&self) -> ListedTools {
        let listed = page_api::listing(self.page.engine.borrow().registry());
        js::to_plain(&listed).unchecked_into()
    }

    /// Connects to the agent runtime (`endpoint`); resolves once the runtime accepted the page
    /// (the token and resume secret go in the first frame, never in the URL).
    pub fn connect(&self) -> VoidPromise {
        let page = self.page.clone();
        wasm_bindgen_futures::future_to_promise(async move {
            websocket::connect(&page).await.map_err(errors::to_js)?;
            Ok(JsValue::UNDEFINED)
        })
        .unchecked_into()
    }

    /// Speaks SPEC §6 over a channel the page supplies instead of the WebSocket: `send(frame)` gets
    /// every frame for the runtime, and the runtime's frames go to [`Self::receive_frame`].
    #[wasm_bindgen(js_name = attachTransport)]
    pub fn attach_transport(&self, send: SendFrameArg) -> Result<(), JsValue> {
        let send: JsValue = send.into();
        let Some(send) = send.dyn_ref::<js_sys::Function>().cloned() else {
            return Err(errors::to_js(CoreError::InvalidOptions(
                "attachTransport(send): send must be a function taking a frame string".into(),
            )));
        };
        custom::attach(&self.page, send);
        Ok(())
    }

    /// One JSON-RPC frame from the runtime, over the transport given to `attachTransport`.
    #[wasm_bindgen(js_name = receiveFrame)]
    pub fn receive_frame(&self, frame: &str) -> Result<(), JsValue> {
        custom::receive(&self.page, frame).map_err(errors::to_js)
    }

    /// Closes the connection (or detaches the page's transport); no reconnect follows.
    pub fn disconnect(&self) {
        transport::disconnect(&self.page);
    }

    /// Subscribes to an event; returns the function that unsubscribes. Typed per event in
    /// `src/typescript.rs` (a generic signature wasm-bindgen cannot write).
    #[wasm_bindgen(skip_typescript)]
    pub fn on(
        &self,
        event_type: EventTypeArg,
        listener: ListenerArg,
    ) -> Result<Unsubscribe, JsValue> {
        let event_type = JsValue::from(event_type).as_string().unwrap_or_default();
        let listener: JsValue = listener.into();
        let Some(listener) = listener.dyn_ref::<js_sys::Function>().cloned() else {
            return Err(errors::to_js(CoreError::InvalidOptions(
                "an event listener must be a function".into(),
            )));
        };
        let subscribed = self
            .page
            .events
            .listeners
            .borrow_mut()
            .subscribe(&event_type, listener);
        let id = subscribed.map_err(|why| errors::to_js(CoreError::InvalidOptions(why)))?;
        let page = Rc::downgrade(&self.page);
        let unsubscribe = Closure::once_into_js(move || {
            if let Some(page) = page.upgrade() {
                page.events.listeners.borrow_mut().unsubscribe(id);
            }
        });
        Ok(unsubscribe.unchecked_into())
    }

    /// The page calls one of its tools itself: same validation, events and result as an agent call.
    /// Resolves to the MCP result; rejects with `UNKNOWN_TOOL` for a name that is not defined.
    /// Typed in `src/typescript.rs` (`input` may be left out, which wasm-bindgen cannot say with a
    /// type of our own).
    #[wasm_bindgen(skip_typescript)]
    pub fn invoke(&self, name: &str, input: Option<JsValue>) -> CallToolResultPromise {
        let input = input.unwrap_or(JsValue::UNDEFINED);
        let page = self.page.clone();
        let name = name.to_owned();
        wasm_bindgen_futures::future_to_promise(async move {
            if page.engine.borrow().registry().get(&name).is_none() {
                return Err(errors::to_js(CoreError::UnknownTool(name)));
            }
            let result = page.call(name, &input, Caller::Page, |_| {}).await;
            let result = result.map_err(|why| errors::to_js(CoreError::InvalidOptions(why)))?;
            // Stopped without a result (its form withdrawn, say): still exactly one outcome.
            let result = result.unwrap_or_else(outcome::cancelled);
            Ok(js::to_plain(&result))
        })
        .unchecked_into()
    }

    /// The id the runtime gave this page's session (agents name the page by it); `undefined` until
    /// the first successful `connect()`.
    #[wasm_bindgen(getter, js_name = sessionId, unchecked_return_type = "string | undefined")]
    pub fn session_id(&self) -> Option<String> {
        self.page.connection.borrow().session_id()
    }

    /// The "always allow" approvals this origin keeps for the page's user (the `allowAlways`
    /// option): `list()`, `revoke(name?)`.
    #[wasm_bindgen(getter, unchecked_return_type = "Approvals")]
    pub fn approvals(&self) -> JsValue {
        let user = crate::ask::approval_user(&self.page);
        let known = user.is_some();
        js::approvals_api(user.flatten().as_deref(), known)
    }

    /// `disconnected`, `connecting`, `connected` or `reconnecting`.
    #[wasm_bindgen(getter, js_name = connectionState, unchecked_return_type = "ConnectionState")]
    pub fn connection_state(&self) -> String {
        self.page.connection.borrow().state().as_str().to_owned()
    }
}
