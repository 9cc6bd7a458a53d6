//! On wasm32 (client-tools patch): patterns are ECMA-262, and so is the browser's own `RegExp`, so
//! nothing is translated and no Rust regex engine, parser or Unicode table is compiled in.
//!
//! The optimizations the native build gets from parsing a pattern (`search_form`, `Sequence`,
//! `pattern_witness`) report "not applicable" here, which every caller already handles by falling
//! back to the engine; their types are uninhabited.

use std::borrow::Cow;

/// The pattern itself, when the browser's `RegExp` (with the `u` flag, as JSON Schema requires)
/// accepts it; `Err(())` for an invalid pattern, as the native translation reports it.
///
/// # Errors
///
/// `RegExp` rejects the pattern.
#[allow(clippy::result_unit_err)]
pub fn to_rust_regex(pattern: &str) -> Result<Cow<'_, str>, ()> {
    match regex::Regex::new(pattern) {
        Ok(_) => Ok(Cow::Borrowed(pattern)),
        Err(_) => Err(()),
    }
}

/// Never found without a parser: callers fall back to the engine.
#[must_use]
pub fn search_form(_pattern: &str, _translated: &str) -> Option<Search> {
    None
}

/// Never found without a parser: callers skip the candidates it would give.
#[must_use]
pub fn pattern_witness(_pattern: &str) -> Option<String> {
    None
}

/// A cheaper form of a pattern (native builds only).
#[derive(Debug, PartialEq, Eq)]
pub enum Search {
    RepeatedClass(RepeatedClass),
    Collapsed(String),
}

/// A counted character class (native builds only): never built here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RepeatedClass {}

impl RepeatedClass {
    #[must_use]
    pub fn is_match(&self, _text: &str) -> bool {
        match *self {}
    }
}

/// A compiled literal sequence (native builds only): never built here.
#[derive(Debug, Clone)]
pub enum Sequence {}

impl Sequence {
    #[must_use]
    pub fn compile(_translated: &str) -> Option<Sequence> {
        None
    }

    #[must_use]
    pub fn is_match(&self, _text: &[u8]) -> Option<bool> {
        match *self {}
    }
}
