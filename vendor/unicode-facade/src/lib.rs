//! The part of the `unicode-general-category` API that `jsonschema` uses (client-tools patch, see
//! `vendor/README.md`): `get_general_category` and `GeneralCategory`, for the `idn-hostname` and
//! `idn-email` formats.
//!
//! Natively this is the crate itself. On wasm32 the browser answers: its `RegExp` knows every
//! code point's general category (`\p{gc=…}`), so the module does not carry the crate's 50 KB
//! table (`[GeneralCategory; 41728]` plus its offsets) for a question asked only of non-ASCII
//! host names.

#[cfg(not(target_arch = "wasm32"))]
pub use unicode_general_category::*;

#[cfg(target_arch = "wasm32")]
mod browser;
#[cfg(target_arch = "wasm32")]
pub use browser::{get_general_category, GeneralCategory};
