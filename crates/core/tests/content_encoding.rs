//! The patched `jsonschema` decodes `contentEncoding` (RFC 4648) on wasm with a small decoder of
//! its own instead of `data-encoding` (vendor/README.md). Its answers must be `data-encoding`'s
//! for every text: both are compared here, natively, where both are compiled.

use jsonschema::client_tools_rfc4648::{published, small, NAMES};
use proptest::prelude::*;

fn agree(input: &[u8]) -> Result<(), TestCaseError> {
    for name in NAMES {
        prop_assert_eq!(
            small(name, input),
            published(name, input),
            "{} of {:?}",
            name,
            String::from_utf8_lossy(input)
        );
    }
    Ok(())
}

#[test]
fn known_cases() {
    let cases: &[&str] = &[
        "",
        "Zm9vYmFy",
        "Zm9vYg==",
        "Zm9vYmE=",
        "Zm9v====",
        "Zm9vYg=",
        "Zm9vYh==",
        "Zm9vYmF=",
        "Zm9",
        "Zg",
        "Zg==",
        "PDw_Pz4-",
        "PDw/Pz4+",
        "MZXW6YTBOI======",
        "MZXW6YTBOI=====",
        "MZXW6===",
        "MZXW6YQ=",
        "MZXW6YR=",
        "CPNMUOJ1E8======",
        "666F6F626172",
        "666f6f626172",
        "666",
        "6G",
        "=",
        "====",
        "Zm9v\nYmFy",
        " Zm9v",
        "Zm=9v",
    ];
    for case in cases {
        agree(case.as_bytes()).unwrap();
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(20_000))]

    /// Any text over the alphabets' characters, padding and a few strangers.
    #[test]
    fn any_text(input in "[A-Za-z0-9+/_=\\-]{0,24}") {
        agree(input.as_bytes())?;
    }

    /// Encodings of real bytes, then one character changed.
    #[test]
    fn encoded_then_damaged(bytes in proptest::collection::vec(any::<u8>(), 0..20), at in any::<usize>(), to in "[A-Za-z0-9=+/]") {
        for encoding in [data_encoding::BASE64, data_encoding::BASE64URL, data_encoding::BASE32, data_encoding::BASE32HEX, data_encoding::HEXUPPER] {
            let mut text = encoding.encode(&bytes).into_bytes();
            agree(&text)?;
            if !text.is_empty() {
                let i = at % text.len();
                text[i] = to.as_bytes()[0];
                agree(&text)?;
            }
        }
    }
}
