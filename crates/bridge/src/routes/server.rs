//! The HTTP server around a [`Bridge`]: its routes, in the parts an embedding runtime picks from,
//! each behind its access checks (crate::routes::auth, crate::routes::route_check).

use axum::routing::{get, post};
use axum::serve::ListenerExt;
use axum::Router;
use tokio::net::TcpListener;

use crate::bridge::Bridge;
use crate::routes::auth;
use crate::routes::route_check::Guard;
use crate::routes::{agent, api, api_served, page, site};

impl Bridge {
    /// Every route: [`Self::page_router`], [`Self::agent_router`] and [`Self::site_router`], all
    /// behind the `Host` check (DNS rebinding).
    pub fn router(&self) -> Router {
        self.page_router()
            .merge(self.agent_router())
            .merge(self.site_router())
    }

    /// `GET /ws`: where pages connect (`Origin`, page token, connection limit).
    pub fn page_router(&self) -> Router {
        self.guarded(Router::new().route("/ws", get(page::upgrade)))
    }

    /// `/mcp` and `/api/…`: what agents call (same-origin browsers only, agent token).
    pub fn agent_router(&self) -> Router {
        let routes = Router::new()
            .nest_service("/mcp", agent::mcp_route(self))
            .route("/api/sessions", get(api::list_sessions))
            .route("/api/sessions/{id}/call", post(api::call_tool))
            .route("/api/users/{sub}/sessions", get(api::list_user_sessions))
            .route("/api/users/{sub}/call", post(api::call_user_tool))
            .route("/api/sessions/{id}/tasks/{task}", get(api::get_task))
            .route(
                "/api/sessions/{id}/tasks/{task}/update",
                post(api::update_task),
            )
            .route(
                "/api/sessions/{id}/tasks/{task}/cancel",
                post(api::cancel_task),
            )
            .route("/api/sessions/{id}/prompts", get(api_served::list_prompts))
            .route(
                "/api/sessions/{id}/prompts/get",
                post(api_served::get_prompt),
            )
            .route(
                "/api/sessions/{id}/resources",
                get(api_served::list_resources),
            )
            .route(
                "/api/sessions/{id}/resources/templates",
                get(api_served::list_resource_templates),
            )
            .route(
                "/api/sessions/{id}/resources/read",
                post(api_served::read_resource),
            )
            .route("/api/sessions/{id}/complete", post(api_served::complete))
            .route_layer(Guard::new(self, auth::require_agent));
        self.guarded(routes)
    }

    /// `/pkg/…` (the built package) and `/` (the `--www` site, the demo by default).
    pub fn site_router(&self) -> Router {
        let config = self.config();
        self.guarded(site::router(&config.pkg_dir, &config.www_dir))
    }

    fn guarded(&self, routes: Router<Bridge>) -> Router {
        routes
            .layer(Guard::new(self, auth::require_known_host))
            .with_state(self.clone())
    }

    /// Serves until the process ends (TCP_NODELAY on: tool calls are small, latency matters).
    pub async fn serve(&self, listener: TcpListener) -> std::io::Result<()> {
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        axum::serve(listener, self.router()).await
    }
}
