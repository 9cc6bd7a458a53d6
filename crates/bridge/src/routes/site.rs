//! The static site: the built package at `/pkg/` and the `--www` folder at `/`.

use std::path::Path;

use axum::Router;
use tower_http::services::ServeDir;

/// `/pkg/…` from `pkg_dir`, everything else from `www_dir`.
pub fn router<S: Clone + Send + Sync + 'static>(pkg_dir: &Path, www_dir: &Path) -> Router<S> {
    Router::new()
        .nest_service("/pkg", ServeDir::new(pkg_dir))
        .fallback_service(ServeDir::new(www_dir))
}
