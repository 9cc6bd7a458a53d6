//! The `hostname` format on Punycode labels (`xn--…`), natively, on the same cases the browser
//! test checks (`tests/browser.rs`, `punycode_hostnames_use_the_browsers_unicode_data`): a decoded
//! label is judged by the general category of each code point (RFC 5892), which on wasm32 comes
//! from the browser's `RegExp` (vendor/unicode-facade) and natively from the
//! `unicode-general-category` crate. Both must give the answers written here.

use client_tools_core::validate::CompiledSchema;
use serde_json::{json, Value};

#[test]
fn punycode_labels_are_judged_by_general_category() {
    let cases: Vec<(String, bool, String)> = serde_json::from_str(include_str!(
        "../../../tests/fixtures/punycode-hostnames.json"
    ))
    .unwrap();
    let schema = CompiledSchema::compile(&json!({"format": "hostname"})).unwrap();
    for (hostname, valid, why) in cases {
        assert_eq!(
            schema.validate(&Value::String(hostname.clone())).is_ok(),
            valid,
            "{hostname} ({why})"
        );
    }
}
