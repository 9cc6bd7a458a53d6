//! A page's answer to one of the runtime's requests, read without building a JSON tree.
//!
//! Answers are most of what a page sends (one per call). [`decode`] parses a frame into a
//! `serde_json::Value` tree (an allocation per string, per object entry), and the waiting call then
//! converted the tree into its result type. Here a plain answer is checked, then read in place: its
//! `result` stays JSON text until the waiting request parses it into the type it expects. Every
//! other frame — an error answer, a request, anything malformed — is left to [`decode`], and so is
//! every frame it would refuse: what is accepted, and every error, are [`decode`]'s (the fuzzer,
//! `tests/fuzz.rs`, holds the two to it).
//!
//! [`decode`]: super::decode

use std::fmt;

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use super::RequestId;
use crate::limits::MAX_FRAME_BYTES;

/// `Some((id, result))` when `text` is a well-formed successful answer, as [`decode`] reads it
/// (`Message::Response { id, result: Ok(result) }`); `None` for anything else, which is
/// [`decode`]'s to read.
///
/// [`decode`]: super::decode
pub fn read_answer(text: &str) -> Option<(RequestId, Box<RawValue>)> {
    if text.len() > MAX_FRAME_BYTES {
        return None;
    }
    // The same parser with the same rules (escapes, surrogates, number range, nesting limit) as a
    // `Value`, without keeping anything: only JSON that `decode` could parse goes on.
    serde_json::from_str::<Valid>(text).ok()?;
    let answer = serde_json::from_str::<Answer>(text).ok()?;
    if answer.jsonrpc != Some("2.0") || answer.method.0 || answer.error.0 {
        return None;
    }
    Some((answer.id.0, answer.result.to_owned()))
}

/// The fields of a JSON-RPC answer that decide what it is; others are ignored, as by `decode`.
/// A repeated field fails here, and the frame goes to `decode`.
#[derive(serde::Deserialize)]
struct Answer<'a> {
    #[serde(default, borrow)]
    jsonrpc: Option<&'a str>,
    id: Id,
    #[serde(borrow)]
    result: &'a RawValue,
    /// Present at all (even `null`): a request, or a malformed frame.
    #[serde(default)]
    method: Present,
    #[serde(default)]
    error: Present,
}

/// Whether a field is there, whatever its value.
#[derive(Default)]
struct Present(bool);

impl<'de> Deserialize<'de> for Present {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        IgnoredAny::deserialize(deserializer).map(|_| Present(true))
    }
}

/// A [`RequestId`], read by its own `Deserialize`.
struct Id(RequestId);

impl<'de> Deserialize<'de> for Id {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        RequestId::deserialize(deserializer).map(Id)
    }
}

/// Any JSON a `Value` accepts, parsed in full and dropped.
struct Valid;

impl<'de> Deserialize<'de> for Valid {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(Valid)
    }
}

impl<'de> Visitor<'de> for Valid {
    type Value = Valid;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Valid, E> {
        Ok(Valid)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Valid, E> {
        Ok(Valid)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Valid, E> {
        Ok(Valid)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Valid, E> {
        Ok(Valid)
    }

    fn visit_str<E>(self, _: &str) -> Result<Valid, E> {
        Ok(Valid)
    }

    fn visit_unit<E>(self) -> Result<Valid, E> {
        Ok(Valid)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Valid, A::Error> {
        while seq.next_element::<Valid>()?.is_some() {}
        Ok(Valid)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Valid, A::Error> {
        while map.next_entry::<Valid, Valid>()?.is_some() {}
        Ok(Valid)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;
    use crate::protocol::{decode, Message};

    /// What `decode` makes of a frame, in `read`'s terms.
    fn decoded(text: &str) -> Option<(RequestId, Value)> {
        match decode(text) {
            Ok(Message::Response {
                id,
                result: Ok(result),
            }) => Some((id, result)),
            _ => None,
        }
    }

    #[test]
    fn reads_exactly_the_answers_decode_reads() {
        let deep = format!("{}1{}", "[".repeat(126), "]".repeat(126));
        let too_deep = format!("{}1{}", "[".repeat(127), "]".repeat(127));
        let frames = [
            r#"{"jsonrpc":"2.0","id":"b-1","result":{"content":[{"type":"text","text":"hi"}]}}"#,
            r#"{"result":null,"id":7,"jsonrpc":"2.0","extra":{"a":[1,2]}}"#,
            r#"{"jsonrpc":"2.0","id":"b-1","result":{"a":1},"result":{"a":2}}"#,
            r#"{"jsonrpc":"2.0","id":"b-1","result":"\ud800"}"#,
            r#"{"jsonrpc":"2.0","id":"b-1","result":1e999}"#,
            r#"{"jsonrpc":"2.0","id":"b-1","result":1,"other":"\u00zz"}"#,
            r#"{"jsonrpc":"2.0","id":"b-1","result":1,"method":null}"#,
            r#"{"jsonrpc":"2.0","id":"b-1","result":1,"error":null}"#,
            r#"{"jsonrpc":"2.0","id":null,"result":1}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"result":1}"#,
            r#"{"jsonrpc":"2.0","id":-3,"result":1}"#,
            r#"{"jsonrpc":"2.0","id":9223372036854775808,"result":1}"#,
            r#"{"jsonrpc":"2.0","id":"\u00e9","result":1}"#,
            r#"{"jsonrpc":"2.0","id":true,"result":1}"#,
            r#"{"jsonrpc":"1.0","id":"b-1","result":1}"#,
            r#"{"jsonrpc":"2\u002e0","id":"b-1","result":1}"#,
            r#"{"id":"b-1","result":1}"#,
            r#"{"jsonrpc":"2.0","id":"b-1","error":{"code":1,"message":"no"}}"#,
            r#"{"jsonrpc":"2.0","id":"b-1","result":1} x"#,
            r#"[{"jsonrpc":"2.0","id":"b-1","result":1}]"#,
            &format!(r#"{{"jsonrpc":"2.0","id":"b-1","result":{deep}}}"#),
            &format!(r#"{{"jsonrpc":"2.0","id":"b-1","result":{too_deep}}}"#),
        ];
        for frame in frames {
            let read = read_answer(frame)
                .map(|(id, raw)| (id, serde_json::from_str::<Value>(raw.get()).unwrap()));
            // What `read` takes it reads as `decode` does; the rest (here: a repeated key, an
            // escaped "2.0") it leaves to `decode`.
            if read.is_some() {
                assert_eq!(read, decoded(frame), "{frame}");
            }
        }
        // Plain answers: string and number ids, an escaped id, other fields, a deep result.
        for plain in [frames[0], frames[1], frames[10], frames[12], frames[20]] {
            assert!(read_answer(plain).is_some(), "{plain}");
        }
    }
}
