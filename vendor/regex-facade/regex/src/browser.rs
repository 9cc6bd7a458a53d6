//! `Regex` over the browser's `RegExp`.

use std::fmt;

use wasm_bindgen::prelude::*;

#[cfg(target_feature = "atomics")]
compile_error!("the RegExp-backed regex assumes single-threaded wasm (no `atomics`)");

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_name = RegExp)]
    #[derive(Clone)]
    type JsRegExp;

    /// `new RegExp(pattern, flags)`; a `SyntaxError` becomes `Err` instead of unwinding.
    #[wasm_bindgen(constructor, js_class = "RegExp", catch)]
    fn new(pattern: &str, flags: &str) -> Result<JsRegExp, JsValue>;

    #[wasm_bindgen(method, js_class = "RegExp")]
    fn test(this: &JsRegExp, text: &str) -> bool;
}

/// A compiled ECMA-262 pattern. Unanchored, like `regex::Regex::is_match`; no `g`/`y` flag, so
/// `test` keeps no state between calls.
#[derive(Clone)]
pub struct Regex {
    pattern: Box<str>,
    compiled: JsRegExp,
}

// SAFETY: wasm32 without the `atomics` target feature (checked above) has exactly one thread, so
// no value is ever sent to or shared with another; `jsonschema` only needs the bounds to compile.
unsafe impl Send for Regex {}
unsafe impl Sync for Regex {}

impl Regex {
    /// Compiles `pattern` with the `u` flag (JSON Schema patterns are Unicode-aware).
    ///
    /// # Errors
    ///
    /// `RegExp` rejects the pattern.
    pub fn new(pattern: &str) -> Result<Self, Error> {
        match JsRegExp::new(pattern, "u") {
            Ok(compiled) => Ok(Self {
                pattern: pattern.into(),
                compiled,
            }),
            Err(_) => Err(Error {
                pattern: pattern.into(),
            }),
        }
    }

    #[must_use]
    pub fn is_match(&self, text: &str) -> bool {
        self.compiled.test(text)
    }

    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.pattern
    }
}

impl fmt::Debug for Regex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Regex").field(&self.pattern).finish()
    }
}

/// Builds a [`Regex`]. `RegExp` has no size limits: the limits are accepted for API compatibility
/// and have no effect (client-tools never sets them).
#[derive(Debug, Clone)]
pub struct RegexBuilder {
    pattern: String,
}

impl RegexBuilder {
    #[must_use]
    pub fn new(pattern: &str) -> Self {
        Self {
            pattern: pattern.into(),
        }
    }

    pub fn size_limit(&mut self, _bytes: usize) -> &mut Self {
        self
    }

    pub fn dfa_size_limit(&mut self, _bytes: usize) -> &mut Self {
        self
    }

    /// # Errors
    ///
    /// `RegExp` rejects the pattern.
    pub fn build(&self) -> Result<Regex, Error> {
        Regex::new(&self.pattern)
    }
}

/// A pattern `RegExp` rejected.
#[derive(Debug, Clone)]
pub struct Error {
    pattern: Box<str>,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid ECMA-262 regular expression: {}", self.pattern)
    }
}

impl std::error::Error for Error {}
