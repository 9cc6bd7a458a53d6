//! The runtime's `tools/call` request frame, printed straight from its parts.
//!
//! It is the runtime's most frequent frame. Built as a `serde_json::Value` (the params as a tree,
//! `_meta` inserted, the tree copied into the envelope, the envelope printed) it cost a tenth of the
//! bridge's CPU per call; printed from borrowed parts, the frame text is the only allocation. The
//! JSON is the request [`encode_request`](super::encode_request) would write, keys in another order
//! (the fuzzer, `tests/fuzz.rs`, reads it back with [`decode_call`](super::decode_call)).

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value};

use super::{meta, method};

/// The request `id` calling tool `name`; `_meta` carries `extensions` (the `clienttools/` keys the
/// runtime forwards; a `clienttools/timeoutMs` or `progressToken` among them is replaced), the
/// call's timeout (the page's handler budget) and the id as `progressToken`, so the page's progress
/// reports name the call they extend.
pub fn encode_tool_call(
    id: &str,
    name: &str,
    arguments: &Value,
    timeout_ms: u64,
    extensions: &Map<String, Value>,
) -> String {
    let frame = Frame {
        id,
        params: Params {
            name,
            arguments,
            timeout_ms,
            progress_token: id,
            extensions,
        },
    };
    serde_json::to_string(&frame).expect("strings, a number and a JSON value always print")
}

struct Frame<'a> {
    id: &'a str,
    params: Params<'a>,
}

struct Params<'a> {
    name: &'a str,
    arguments: &'a Value,
    timeout_ms: u64,
    progress_token: &'a str,
    extensions: &'a Map<String, Value>,
}

struct Meta<'a>(&'a Params<'a>);

impl Serialize for Frame<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(4))?;
        map.serialize_entry("jsonrpc", "2.0")?;
        map.serialize_entry("id", self.id)?;
        map.serialize_entry("method", method::TOOLS_CALL)?;
        map.serialize_entry("params", &self.params)?;
        map.end()
    }
}

impl Serialize for Params<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(3))?;
        map.serialize_entry("name", self.name)?;
        map.serialize_entry("arguments", self.arguments)?;
        map.serialize_entry("_meta", &Meta(self))?;
        map.end()
    }
}

impl Serialize for Meta<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(2 + self.0.extensions.len()))?;
        for (key, value) in self.0.extensions {
            if key != meta::TIMEOUT_MS && key != "progressToken" {
                map.serialize_entry(key, value)?;
            }
        }
        map.serialize_entry(meta::TIMEOUT_MS, &self.0.timeout_ms)?;
        map.serialize_entry("progressToken", self.0.progress_token)?;
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::protocol::{encode_request, CallToolParams, RequestId};

    #[test]
    fn the_same_request_as_the_generic_encoder_writes() {
        let arguments = json!({"text": "a \"quoted\" é", "n": [1, 2.5, null]});
        let mut extensions = Map::new();
        extensions.insert(meta::INPUT_SCHEMA.into(), json!({"type": "object"}));
        let written = encode_tool_call("b1-7", "echo", &arguments, 1500, &extensions);
        extensions.insert(meta::TIMEOUT_MS.into(), 1500.into());
        extensions.insert("progressToken".into(), "b1-7".into());
        let params = CallToolParams {
            name: "echo".into(),
            arguments: Some(arguments.clone()),
            meta: Some(extensions),
        };
        let expected = encode_request(
            &RequestId::String("b1-7".into()),
            method::TOOLS_CALL,
            &params,
        );
        let parse = |text: &str| serde_json::from_str::<Value>(text).unwrap();
        assert_eq!(parse(&written), parse(&expected));
    }
}
