//! `fancy_regex::Regex` over the browser's `RegExp`: a distinct type from `regex::Regex` (jsonschema
//! implements its engine trait for both), whose matching reports no run-time errors.

/// A pattern `RegExp` rejected.
pub use regex::Error;

/// A compiled ECMA-262 pattern.
#[derive(Debug, Clone)]
pub struct Regex(regex::Regex);

impl Regex {
    /// # Errors
    ///
    /// `RegExp` rejects the pattern.
    pub fn new(pattern: &str) -> Result<Self, Error> {
        regex::Regex::new(pattern).map(Self)
    }

    /// # Errors
    ///
    /// Never: `RegExp` has no backtrack limit to exceed.
    pub fn is_match(&self, text: &str) -> Result<bool, Error> {
        Ok(self.0.is_match(text))
    }

    /// [`Self::is_match`] without its `Result`, which is always `Ok` here: jsonschema's wasm
    /// engine uses it so that its code for unfinished matches compiles away (vendor/README.md).
    #[must_use]
    pub fn always_finishing_match(&self, text: &str) -> bool {
        self.0.is_match(text)
    }

    #[must_use]
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }
}

/// Builds a [`Regex`]. `RegExp` has no backtrack or size limits: they are accepted for API
/// compatibility and have no effect (client-tools never sets them).
#[derive(Debug, Clone)]
pub struct RegexBuilder(regex::RegexBuilder);

impl RegexBuilder {
    #[must_use]
    pub fn new(pattern: &str) -> Self {
        Self(regex::RegexBuilder::new(pattern))
    }

    pub fn backtrack_limit(&mut self, _limit: usize) -> &mut Self {
        self
    }

    pub fn delegate_size_limit(&mut self, _bytes: usize) -> &mut Self {
        self
    }

    pub fn delegate_dfa_size_limit(&mut self, _bytes: usize) -> &mut Self {
        self
    }

    /// # Errors
    ///
    /// `RegExp` rejects the pattern.
    pub fn build(&self) -> Result<Regex, Error> {
        self.0.build().map(Regex)
    }
}
