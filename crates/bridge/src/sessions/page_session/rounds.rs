//! The page's rounds of requests to the agent for one of its calls (`clienttools/input`, SPEC §4
//! "Asking mid-call"): checked, handed to the caller waiting on the call, answered once.

use client_tools_core::protocol::{self, encode_error, encode_result, method, RequestId, RpcError};
use serde_json::{Map, Value};

use super::PageSession;
use crate::limits::{MAX_OPEN_ROUNDS_PER_SESSION, MAX_QUOTED_ID_CHARS, MAX_REQUESTS_PER_ROUND};
use crate::sessions::call_options::{CallEvent, InputRound};

/// The MCP client capabilities the requests of a round need (`requiredCapabilities` of a
/// `-32021`): `{"elicitation": {"form"|"url": {}}, "sampling": {}, "roots": {}}` as they apply.
pub fn required_capabilities(requests: &Map<String, Value>) -> Value {
    let mut required = Map::new();
    for request in requests.values() {
        match request.get("method").and_then(Value::as_str) {
            Some(method::ELICITATION_CREATE) => {
                let mode = request
                    .pointer("/params/mode")
                    .and_then(Value::as_str)
                    .filter(|mode| *mode == "url")
                    .unwrap_or("form");
                let entry = required
                    .entry("elicitation")
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Some(entry) = entry.as_object_mut() {
                    entry.insert(mode.to_owned(), Value::Object(Map::new()));
                }
            }
            Some(method::SAMPLING_CREATE_MESSAGE) => {
                required.insert("sampling".into(), Value::Object(Map::new()));
            }
            Some(method::ROOTS_LIST) => {
                required.insert("roots".into(), Value::Object(Map::new()));
            }
            _ => {}
        }
    }
    Value::Object(required)
}

/// The `-32021` error answering a round whose `requests` need what the caller lacks.
pub fn missing_capability_error(requests: &Map<String, Value>) -> RpcError {
    let required = required_capabilities(requests);
    let mut error = RpcError::new(
        protocol::code::MISSING_CAPABILITY,
        format!("the agent did not declare the capabilities these requests need: {required}"),
    );
    error.data = Some(serde_json::json!({ "requiredCapabilities": required }));
    error
}

/// The key of a page's request id among the open rounds: its JSON (`1` and `"1"` are two).
fn round_key(id: &RequestId) -> String {
    serde_json::to_string(id).unwrap_or_default()
}

/// At most [`MAX_QUOTED_ID_CHARS`] characters of an id the page sent, for an error message.
fn short_id(id: &str) -> String {
    id.chars().take(MAX_QUOTED_ID_CHARS).collect()
}

/// Removes `_meta["clienttools/callId"]` (a string) from `params` and returns it; an `_meta` left
/// empty goes too.
pub(super) fn take_call_id(params: &mut Map<String, Value>) -> Option<String> {
    let meta = params.get_mut("_meta")?.as_object_mut()?;
    let call = meta.remove(protocol::meta::CALL_ID)?;
    if meta.is_empty() {
        params.remove("_meta");
    }
    match call {
        Value::String(call) => Some(call),
        _ => None,
    }
}

/// Reads the params of a `clienttools/input` request: the call it is for and its
/// `inputRequests`, each checked (`{method, params}`; a known method; `params` an object, the
/// page's `clienttools/` `_meta` keys removed). An error says what is wrong.
fn read_round(params: Value) -> Result<(String, Map<String, Value>), String> {
    let Value::Object(mut params) = params else {
        return Err("clienttools/input params must be an object".into());
    };
    let call = take_call_id(&mut params)
        .ok_or("clienttools/input needs _meta['clienttools/callId'], a string")?;
    let Some(Value::Object(requests)) = params.remove("inputRequests") else {
        return Err("clienttools/input needs 'inputRequests', an object".into());
    };
    if requests.is_empty() {
        return Err("'inputRequests' is empty".into());
    }
    if requests.len() > MAX_REQUESTS_PER_ROUND {
        return Err(format!(
            "'inputRequests' has {} requests: at most {MAX_REQUESTS_PER_ROUND} in one round",
            requests.len()
        ));
    }
    let mut checked = Map::new();
    for (key, request) in requests {
        let Value::Object(mut request) = request else {
            return Err(format!("inputRequests['{key}'] must be an object"));
        };
        let method = match request.get("method").and_then(Value::as_str) {
            Some(
                method @ (method::ELICITATION_CREATE
                | method::SAMPLING_CREATE_MESSAGE
                | method::ROOTS_LIST),
            ) => method.to_owned(),
            _ => {
                return Err(format!(
                    "inputRequests['{key}'].method must be elicitation/create, \
                     sampling/createMessage or roots/list"
                ))
            }
        };
        let mut params = match request.remove("params") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(params)) => params,
            Some(_) => return Err(format!("inputRequests['{key}'].params must be an object")),
        };
        if let Some(Value::Object(meta)) = params.get_mut("_meta") {
            meta.retain(|name, _| !name.starts_with("clienttools/"));
            if meta.is_empty() {
                params.remove("_meta");
            }
        }
        let request = serde_json::json!({"method": method, "params": params});
        checked.insert(key, request);
    }
    Ok((call, checked))
}

impl PageSession {
    /// The page's `clienttools/input` request `id` (a round of requests to the agent for one of
    /// its calls, SPEC §4 "Asking mid-call"): handed to the caller waiting on that call, who
    /// answers it with [`Self::answer_round`]. `Some(error)`: the page is to be answered with it
    /// now (malformed, a call nobody waits on, a bound, or — the caller takes no rounds — the
    /// capabilities it lacks).
    pub(crate) fn page_input(&self, id: RequestId, params: Value) -> Option<RpcError> {
        let (call, mut requests) = match read_round(params) {
            Ok(round) => round,
            Err(why) => return Some(RpcError::new(protocol::code::INVALID_PARAMS, why)),
        };
        if let Some(redact) = self.redaction_of(&call) {
            redact.round(&mut requests);
        }
        let key = round_key(&id);
        let mut state = self.lock();
        let Some(waiter) = state.waiters.get(&call) else {
            return Some(RpcError::new(
                protocol::code::INVALID_PARAMS,
                format!(
                    "no call '{}' of this bridge is waiting for the page (it ended, or was never \
                     made here)",
                    short_id(&call)
                ),
            ));
        };
        let Some(events) = waiter.events.clone() else {
            return Some(missing_capability_error(&requests));
        };
        if state.rounds.contains_key(&key) {
            return Some(RpcError::new(
                protocol::code::INVALID_REQUEST,
                "a round with this request id is already waiting",
            ));
        }
        if state.rounds.values().any(|open| *open == call) {
            return Some(RpcError::new(
                protocol::code::INVALID_REQUEST,
                "this call already has a round waiting for the agent: one round at a time",
            ));
        }
        if state.rounds.len() >= MAX_OPEN_ROUNDS_PER_SESSION {
            return Some(RpcError::new(
                protocol::code::INVALID_REQUEST,
                format!(
                    "too many rounds waiting for agents in this page session (limit \
                     {MAX_OPEN_ROUNDS_PER_SESSION})"
                ),
            ));
        }
        let round = InputRound {
            id: id.clone(),
            requests,
        };
        if events.try_send(CallEvent::Input(round)).is_err() {
            return Some(RpcError::new(
                protocol::code::INTERNAL_ERROR,
                "the agent's side of this call is not taking requests (it is busy or gone)",
            ));
        }
        state.rounds.insert(key, call);
        None
    }

    /// Answers the page's round `id` (its `{inputResponses}`, or a JSON-RPC error for the whole
    /// round), once: `false` when it is not waiting (answered, or its call ended).
    pub fn answer_round(&self, id: &RequestId, answer: Result<Value, RpcError>) -> bool {
        let mut state = self.lock();
        if state.rounds.remove(&round_key(id)).is_none() {
            return false;
        }
        let frame = match answer {
            Ok(result) => encode_result(id, &result),
            Err(error) => encode_error(Some(id), &error),
        };
        if let Err(limit) = protocol::check_outgoing(&frame) {
            let error = RpcError::new(
                protocol::code::INTERNAL_ERROR,
                format!("the agent's answers cannot be sent to the page: {limit}"),
            );
            let frame = encode_error(Some(id), &error);
            state.drive(|engine| engine.notify(frame));
            return true;
        }
        state.drive(|engine| engine.notify(frame));
        true
    }

    /// A frame the page sent about a call another cluster node relayed to it (a round, a log
    /// message: `frame`, with `params`) goes back to that node, whose caller waits on the call
    /// and answers the round (its answer comes back to the page through here like any frame of
    /// that node). `false` when the call is not one relayed here (then it is this node's, or
    /// nobody's).
    pub(crate) fn relay_call_event(&self, params: &Value, frame: &str) -> bool {
        let call = params
            .get("_meta")
            .and_then(|meta| meta.get(protocol::meta::CALL_ID))
            .and_then(Value::as_str);
        let Some(call) = call else {
            return false;
        };
        let route = {
            let state = self.lock();
            if state.waiters.contains_key(call) {
                return false;
            }
            state.routes.get(call)
        };
        match (route, &self.relay_replies) {
            (Some(route), Some(replies)) => {
                replies.send_back(route, None, frame.to_owned());
                true
            }
            _ => false,
        }
    }

    /// Answers a request the page sent (a round relayed from the node holding its socket) with
    /// `error`, through this session's connection.
    pub(crate) fn refuse_page_request(&self, id: &RequestId, error: &RpcError) {
        let frame = encode_error(Some(id), error);
        self.lock().drive(|engine| engine.notify(frame));
    }
}
