//! The page's resources, prompts and completion (SPEC §11), kept by `pageServer` at the end of
//! `js.js` (one script file with the rest of the SDK's JavaScript: a test page's runner stalls with
//! more files in flight, docs/building.md): the page engine runs the requests for them like calls,
//! with [`PageServer::serve`] as their handler.

use wasm_bindgen::prelude::*;

use crate::typescript::Undefine;

#[wasm_bindgen(module = "/src/js.js")]
extern "C" {
    /// What `defineResource` and `definePrompt` added, and the function that answers for them.
    #[derive(Clone)]
    pub type PageServer;

    /// `report` is the handlers' way to the engine (`Page::from_ctx_fn`): the server's
    /// notifications go through it as `(0, "notify", method, paramsJson)`.
    #[wasm_bindgen(js_name = pageServer)]
    pub fn page_server(report: &js_sys::Function) -> PageServer;

    #[wasm_bindgen(method, getter)]
    pub fn serve(this: &PageServer) -> js_sys::Function;

    /// The `connectionchange` listener that forgets the watched resources of a lost connection.
    #[wasm_bindgen(method, getter, js_name = connectionChanged)]
    pub fn connection_changed(this: &PageServer) -> js_sys::Function;

    #[wasm_bindgen(method, catch, js_name = defineResource)]
    pub fn define_resource(this: &PageServer, definition: &JsValue) -> Result<Undefine, JsValue>;

    #[wasm_bindgen(method, catch, js_name = definePrompt)]
    pub fn define_prompt(this: &PageServer, definition: &JsValue) -> Result<Undefine, JsValue>;

    #[wasm_bindgen(method, catch, js_name = resourceChanged)]
    pub fn resource_changed(this: &PageServer, uri: &JsValue) -> Result<bool, JsValue>;
}
