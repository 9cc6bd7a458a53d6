//! Wire objects read by hand: the `params` and `error` members of frames the page receives, and
//! the runtime's answer to `clienttools/connect`.
//!
//! Hand-written rather than `serde_json::from_value` of a derived reader: each derived reader is
//! a few KB of wasm (BENCHMARKS.md, issue 25). They read objects as the derive reads them: unknown
//! members are ignored, an optional member may be `null`, and an error names the member at fault.
//! One difference, on purpose: the derive also filled a struct from an array of its members in
//! order (`"error": [-32600, "m"]`); these take objects only, as JSON-RPC and MCP define them.

use serde_json::{Map, Value};

use super::{CallToolParams, CancelledParams, RequestId, RpcError};
use crate::validate::json_type_name;

/// An object's members, taken out by name.
pub(crate) struct WireObject(Map<String, Value>);

impl WireObject {
    /// `value`, which must be an object (`what` names it in the error).
    pub(crate) fn new(value: Value, what: &str) -> Result<Self, String> {
        match value {
            Value::Object(object) => Ok(Self(object)),
            other => Err(format!(
                "invalid type: {}, expected {what}",
                json_type_name(&other)
            )),
        }
    }

    /// Member `key`, which must be present and give `Some` to `read` (`expected` names what).
    pub(crate) fn required<T>(
        &mut self,
        key: &str,
        expected: &str,
        read: impl FnOnce(Value) -> Option<T>,
    ) -> Result<T, String> {
        match self.0.remove(key) {
            None => Err(format!("missing field `{key}`")),
            Some(value) => Self::read(key, value, expected, read),
        }
    }

    /// Member `key` if present and not `null`, which must then give `Some` to `read`.
    pub(crate) fn optional<T>(
        &mut self,
        key: &str,
        expected: &str,
        read: impl FnOnce(Value) -> Option<T>,
    ) -> Result<Option<T>, String> {
        match self.0.remove(key) {
            None | Some(Value::Null) => Ok(None),
            Some(value) => Self::read(key, value, expected, read).map(Some),
        }
    }

    fn read<T>(
        key: &str,
        value: Value,
        expected: &str,
        read: impl FnOnce(Value) -> Option<T>,
    ) -> Result<T, String> {
        let got = json_type_name(&value);
        read(value).ok_or_else(|| format!("invalid type: {got} at `{key}`, expected {expected}"))
    }
}

pub(crate) fn string(value: Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text),
        _ => None,
    }
}

fn object(value: Value) -> Option<Map<String, Value>> {
    match value {
        Value::Object(object) => Some(object),
        _ => None,
    }
}

impl CallToolParams {
    /// The `params` of a `tools/call` request.
    pub fn from_value(params: Value) -> Result<Self, String> {
        let mut params = WireObject::new(params, "the params object")?;
        Ok(Self {
            name: params.required("name", "a string", string)?,
            arguments: params.optional("arguments", "any value", Some)?,
            meta: params.optional("_meta", "an object", object)?,
        })
    }
}

impl CancelledParams {
    /// The `params` of `notifications/cancelled`.
    pub fn from_value(params: Value) -> Result<Self, String> {
        let mut params = WireObject::new(params, "the params object")?;
        Ok(Self {
            request_id: params.required("requestId", "a string or an integer", |id| {
                serde_json::from_value::<RequestId>(id).ok()
            })?,
            reason: params.optional("reason", "a string", string)?,
            meta: params.optional("_meta", "an object", object)?,
        })
    }
}

impl RpcError {
    /// The `error` member of a JSON-RPC response.
    pub fn from_value(error: Value) -> Result<Self, String> {
        let mut error = WireObject::new(error, "an error object")?;
        Ok(Self {
            code: error.required("code", "an integer", |code| code.as_i64())?,
            message: error.required("message", "a string", string)?,
            data: error.optional("data", "any value", Some)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Each reader reads what the derived reader reads, and refuses what it refuses.
    #[test]
    fn hand_readers_agree_with_the_derived_ones() {
        let params = [
            json!({"name": "t"}),
            json!({"name": "t", "arguments": {"a": 1}, "_meta": {"k": 2}, "extra": true}),
            json!({"name": "t", "arguments": null, "_meta": null}),
            json!({"name": "t", "arguments": [1]}),
            json!({"name": 1}),
            json!({"arguments": {}}),
            json!({"name": "t", "_meta": []}),
            json!(null),
            json!("x"),
        ];
        for value in params {
            let derived = serde_json::from_value::<CallToolParams>(value.clone()).ok();
            assert_eq!(
                CallToolParams::from_value(value.clone()).ok(),
                derived,
                "{value}"
            );
        }
        let cancelled = [
            json!({"requestId": 1}),
            json!({"requestId": "a", "reason": "r", "x": 0}),
            json!({"requestId": 1, "reason": null}),
            json!({"requestId": 1.5}),
            json!({"requestId": null}),
            json!({"reason": "r"}),
            json!({"requestId": 1, "reason": 2}),
            json!({"requestId": 1, "_meta": {"clienttools/answer": true}}),
            json!({"requestId": 1, "_meta": true}),
            json!([]),
        ];
        for value in cancelled {
            let derived = serde_json::from_value::<CancelledParams>(value.clone()).ok();
            assert_eq!(
                CancelledParams::from_value(value.clone()).ok(),
                derived,
                "{value}"
            );
        }
        let errors = [
            json!({"code": -32600, "message": "m"}),
            json!({"code": 1, "message": "m", "data": {"d": 1}, "x": 0}),
            json!({"code": 1, "message": "m", "data": null}),
            json!({"code": 1.5, "message": "m"}),
            json!({"code": 18446744073709551615u64, "message": "m"}),
            json!({"code": 1}),
            json!({"message": "m"}),
            json!({"code": 1, "message": null}),
            json!("error"),
        ];
        // Arrays of the members in order: the derive took them, these do not (module doc).
        assert!(serde_json::from_value::<RpcError>(json!([-32600, "m"])).is_ok());
        assert!(RpcError::from_value(json!([-32600, "m"])).is_err());
        assert!(CallToolParams::from_value(json!(["t"])).is_err());
        for value in errors {
            let derived = serde_json::from_value::<RpcError>(value.clone()).ok();
            assert_eq!(RpcError::from_value(value.clone()).ok(), derived, "{value}");
        }
    }

    #[test]
    fn errors_name_the_member_at_fault() {
        let error = CallToolParams::from_value(json!({"name": 7})).unwrap_err();
        assert_eq!(error, "invalid type: number at `name`, expected a string");
        let error = RpcError::from_value(json!({"code": 1})).unwrap_err();
        assert_eq!(error, "missing field `message`");
        let error = CancelledParams::from_value(json!(3)).unwrap_err();
        assert_eq!(error, "invalid type: number, expected the params object");
    }
}
