//! Seed mutation for the proptest fuzzers (`crates/core/tests/fuzz.rs`, and
//! `crates/bridge/tests/fuzz.rs` through `#[path]`): character-level edits of corpus files.

use proptest::prelude::*;

/// A mutation of a seed: character-level edits (the text stays valid UTF-8, as WebSocket text
/// frames must be).
#[derive(Debug, Clone)]
pub enum Edit {
    Delete(usize),
    Insert(usize, char),
    Replace(usize, char),
    Truncate(usize),
    Duplicate(usize, usize),
}

pub fn apply(seed: &str, edits: &[Edit]) -> String {
    let mut chars: Vec<char> = seed.chars().collect();
    for edit in edits {
        let len = chars.len().max(1);
        match *edit {
            Edit::Delete(at) if !chars.is_empty() => {
                chars.remove(at % len);
            }
            Edit::Insert(at, c) => chars.insert(at % (chars.len() + 1), c),
            Edit::Replace(at, c) if !chars.is_empty() => chars[at % len] = c,
            Edit::Truncate(at) => chars.truncate(at % (chars.len() + 1)),
            Edit::Duplicate(from, n) if !chars.is_empty() => {
                let start = from % len;
                let piece: Vec<char> = chars[start..].iter().take(n % 64).copied().collect();
                chars.splice(start..start, piece);
            }
            _ => {}
        }
    }
    chars.into_iter().collect()
}

pub fn edit() -> impl Strategy<Value = Edit> {
    let interesting = prop_oneof![
        Just('{'),
        Just('}'),
        Just('['),
        Just(']'),
        Just('"'),
        Just(','),
        Just(':'),
        Just('\\'),
        Just('0'),
        Just('-'),
        Just('e'),
        Just('\u{0}'),
        Just('é'),
        any::<char>()
    ];
    prop_oneof![
        any::<usize>().prop_map(Edit::Delete),
        (any::<usize>(), interesting.clone()).prop_map(|(a, c)| Edit::Insert(a, c)),
        (any::<usize>(), interesting).prop_map(|(a, c)| Edit::Replace(a, c)),
        any::<usize>().prop_map(Edit::Truncate),
        (any::<usize>(), any::<usize>()).prop_map(|(a, n)| Edit::Duplicate(a, n)),
    ]
}
