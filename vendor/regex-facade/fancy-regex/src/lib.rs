//! The part of the `fancy-regex` API that `jsonschema` uses (client-tools patch, see
//! `vendor/README.md`).
//!
//! Natively this is the `fancy-regex` crate itself. On wasm32 it is the browser's own `RegExp`
//! (through `client-tools-regex`), which has look-around and backreferences built in.

#[cfg(not(target_arch = "wasm32"))]
pub use fancy_regex::*;

#[cfg(target_arch = "wasm32")]
mod browser;
#[cfg(target_arch = "wasm32")]
pub use browser::{Error, Regex, RegexBuilder};
