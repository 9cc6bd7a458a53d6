//! The part of the `regex` API that `jsonschema` uses (client-tools patch, see `vendor/README.md`).
//!
//! Natively this is the `regex` crate itself. On wasm32 it is the browser's own `RegExp` with the
//! `u` flag: JSON Schema's `pattern` dialect is ECMA-262, which is exactly what `RegExp` runs, and
//! the module carries no regex engine of its own.

#[cfg(not(target_arch = "wasm32"))]
pub use regex::*;

#[cfg(target_arch = "wasm32")]
mod browser;
#[cfg(target_arch = "wasm32")]
pub use browser::{Error, Regex, RegexBuilder};
