//! Confirmation at the agent's side (SPEC §7, `--confirm-via agent`): the question put to the
//! person at the agent through MCP elicitation, what their answer means for the call, and the
//! single-use `requestState` of the 2026-07-28 multi-round-trip flow (sealed by
//! crate::agent::request_state).
//!
//! Pure logic: time is a parameter (unix milliseconds), the transport is crate::routes::mcp's.

use client_tools_core::call::outcome;
use client_tools_core::protocol::CallToolResult;
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction, InputRequest};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::agent::request_state::RequestStates;
use crate::calls::prepared_call::PreparedCall;
use crate::ids::{hex, random_hex};
use crate::limits::{MAX_SHOWN_ARGUMENTS_CHARS, REQUEST_STATE_TTL_MS};

/// The key of the one input request in an `InputRequiredResult`.
pub const INPUT_KEY: &str = "confirm";
/// The result of a confirmation the person cancelled (SPEC §7 words it so for the result form).
pub const CANCELLED: &str = "the user cancelled";

/// What the person at the agent decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Approve,
    Reject(Option<String>),
    Cancel,
}

impl Decision {
    /// Reads an elicitation answer: `accept` approves when its form's `approve` is absent or
    /// `true`, rejects when it is `false`; `decline` rejects (with the form's `reason`, if any);
    /// `cancel` cancels. A wrongly-typed field (`approve: "false"`, `reason: 3`) is an error naming
    /// it: an answer that does not clearly approve never approves.
    pub fn from_answer(answer: &ElicitResult) -> Result<Self, String> {
        let field = |name: &str| answer.content.as_ref().and_then(|c| c.get(name));
        let reason = match field("reason") {
            None | Some(Value::Null) => None,
            Some(Value::String(reason)) => Some(reason.trim())
                .filter(|r| !r.is_empty())
                .map(str::to_owned),
            Some(other) => {
                return Err(format!(
                    "the answer's 'reason' must be a string, not {}",
                    client_tools_core::validate::json_type_name(other)
                ))
            }
        };
        Ok(match answer.action {
            ElicitationAction::Accept => match field("approve") {
                None | Some(Value::Bool(true)) => Decision::Approve,
                Some(Value::Bool(false)) => Decision::Reject(reason),
                Some(other) => {
                    return Err(format!(
                    "the answer's 'approve' must be true or false, not {}: the call was not run",
                    client_tools_core::validate::json_type_name(other)
                ))
                }
            },
            ElicitationAction::Decline => Decision::Reject(reason),
            // Cancel, and any action a later revision adds: the call does not run.
            _ => Decision::Cancel,
        })
    }

    /// The call's result when it does not run (`None`: approved, it runs).
    pub fn refusal(&self) -> Option<CallToolResult> {
        match self {
            Decision::Approve => None,
            Decision::Reject(reason) => Some(outcome::rejected(reason.as_deref())),
            Decision::Cancel => Some(CallToolResult::error(CANCELLED)),
        }
    }
}

/// The question (form mode): the tool, its description and all the proposed arguments; the form
/// offers `approve` (default true) and an optional `reason` for the agent. `None` when the
/// arguments are longer than [`MAX_SHOWN_ARGUMENTS_CHARS`]: the person would approve what they
/// cannot see, so the page asks instead (it shows them whole).
pub fn question(call: &PreparedCall) -> Option<ElicitRequestParams> {
    let mut message = match call.title() {
        Some(title) => format!(
            "The agent wants to run the tool '{}' ({title})",
            call.name()
        ),
        None => format!("The agent wants to run the tool '{}'", call.name()),
    };
    if let Some(description) = call.description().filter(|d| !d.is_empty()) {
        message.push_str(&format!(": {description}"));
    }
    let arguments = serde_json::to_string_pretty(call.arguments()).unwrap_or_else(|_| "{}".into());
    if arguments.chars().nth(MAX_SHOWN_ARGUMENTS_CHARS).is_some() {
        return None;
    }
    message.push_str(&format!(
        "\n\nProposed arguments:\n{arguments}\n\nAllow it?"
    ));
    let params = json!({
        "mode": "form",
        "message": message,
        "requestedSchema": {
            "type": "object",
            "properties": {
                "approve": {
                    "type": "boolean",
                    "title": "Run the tool",
                    "description": "Leave on to run it; turn off (or decline) to reject it",
                    "default": true,
                },
                "reason": {
                    "type": "string",
                    "title": "Reason",
                    "description": "Optional: why, told to the agent",
                },
            },
        },
    });
    Some(serde_json::from_value(params).expect("a form elicitation with two primitive fields"))
}

/// A [`question`] as the one input request of an `InputRequiredResult` (2026-07-28).
pub fn input_request(question: &ElicitRequestParams) -> InputRequest {
    let request = json!({"method": "elicitation/create", "params": question});
    serde_json::from_value(request).expect("an elicitation/create request")
}

/// SHA-256 of what a call forwards besides its arguments: the tool name, the `clienttools/` keys of
/// its `_meta` (schemas, policy, fallback; canonical JSON) and its timeout. A confirmation covers
/// exactly this: a `requestState` binds it, and a call prepared again after the person answered
/// must hash the same.
pub fn forwarded_digest(call: &PreparedCall) -> String {
    let mut canonical = String::new();
    write_canonical(&Value::Object(call.meta().clone()), &mut canonical);
    let mut hash = Sha256::new();
    hash.update(call.name().as_bytes());
    hash.update([0]);
    hash.update(canonical.as_bytes());
    hash.update([0]);
    hash.update(call.timeout().as_millis().to_string().as_bytes());
    hex(&hash.finalize())
}

/// What a `requestState` is bound to: the call it was issued for, on which sessions.
#[derive(Debug, Clone, Copy)]
pub struct Binding<'a> {
    pub tool: &'a str,
    pub arguments: &'a Value,
    /// [`forwarded_digest`] of the call.
    pub forwarded: &'a str,
    /// The page session the agent's calls go to.
    pub page_session: &'a str,
    /// The MCP session (`Mcp-Session-Id`), when the transport has one.
    pub mcp_session: Option<&'a str>,
}

impl<'a> Binding<'a> {
    /// The binding of `call` (`forwarded`: its [`forwarded_digest`]).
    pub fn of(
        call: &'a PreparedCall,
        forwarded: &'a str,
        page_session: &'a str,
        mcp_session: Option<&'a str>,
    ) -> Self {
        Self {
            tool: call.name(),
            arguments: call.arguments(),
            forwarded,
            page_session,
            mcp_session,
        }
    }

    fn page_hash(&self) -> String {
        hex(&Sha256::digest(self.page_session.as_bytes())[..16])
    }

    fn arguments_hash(&self) -> String {
        let mut canonical = String::new();
        write_canonical(self.arguments, &mut canonical);
        hex(&Sha256::digest(canonical.as_bytes()))
    }

    fn sessions_hash(&self) -> String {
        let mut hash = Sha256::new();
        hash.update(self.page_session.as_bytes());
        hash.update([0]);
        hash.update(self.mcp_session.unwrap_or("").as_bytes());
        hex(&hash.finalize()[..16])
    }
}

/// What a `requestState` says, in the clear (integrity-protected, not secret: it names no session,
/// only hashes).
#[derive(Serialize, Deserialize)]
struct Claims {
    /// Tool name.
    t: String,
    /// SHA-256 of the canonical arguments.
    a: String,
    /// [`forwarded_digest`]: the `_meta` and timeout the call carries.
    f: String,
    /// Hash of the page and MCP session ids.
    s: String,
    /// Hash of the page session id alone (the per-session bound on spent states).
    p: String,
    /// Expiry, unix milliseconds.
    e: u64,
    /// Nonce: what makes a state single-use.
    n: String,
}

/// A confirmation's `requestState` (crate::agent::request_state): its prefix.
const STATE_DOMAIN: &str = "v1";

/// A confirmation's states: issued for a call, redeemed once.
impl RequestStates {
    /// A state for the call of `binding`, valid until `now_ms` + [`REQUEST_STATE_TTL_MS`].
    pub fn issue(&self, binding: &Binding, now_ms: u64) -> String {
        let claims = Claims {
            t: binding.tool.to_owned(),
            a: binding.arguments_hash(),
            f: binding.forwarded.to_owned(),
            s: binding.sessions_hash(),
            p: binding.page_hash(),
            e: now_ms + REQUEST_STATE_TTL_MS,
            n: random_hex(16),
        };
        let payload = serde_json::to_vec(&claims).expect("strings and a number");
        self.seal(STATE_DOMAIN, &payload)
    }

    /// Checks a state a client sent back for the call of `binding`, and spends it. Every refusal
    /// says what was wrong.
    pub fn redeem(&self, state: &str, binding: &Binding, now_ms: u64) -> Result<(), String> {
        let forged = || {
            "requestState was not issued by this bridge, or was altered (or the bridge restarted \
             since): call the tool again"
                .to_owned()
        };
        let payload = self.open(STATE_DOMAIN, state).ok_or_else(forged)?;
        let claims: Claims = serde_json::from_slice(&payload).map_err(|_| forged())?;
        if claims.t != binding.tool {
            return Err(format!(
                "requestState was issued for tool '{}', not '{}'",
                claims.t, binding.tool
            ));
        }
        if claims.a != binding.arguments_hash() {
            return Err(
                "requestState was issued for other arguments: the retried call must send the \
                 arguments it was issued for"
                    .to_owned(),
            );
        }
        if claims.f != binding.forwarded {
            return Err(format!(
                "requestState was issued for another definition of tool '{}' (its schemas, \
                 policy or timeout changed since the question): call the tool again",
                binding.tool
            ));
        }
        if claims.s != binding.sessions_hash() {
            return Err("requestState was issued in another session".to_owned());
        }
        if now_ms >= claims.e {
            return Err(format!(
                "requestState expired (it is valid for {} s): call the tool again",
                REQUEST_STATE_TTL_MS / 1000
            ));
        }
        self.spend(claims.n, claims.p, claims.e, now_ms)
    }
}

/// JSON with object members sorted by name (whatever order they arrived in), numbers as
/// serde_json prints them: the same arguments always hash the same.
fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(object) => {
            let mut members: Vec<_> = object.iter().collect();
            members.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (name, member)) in members.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(name.clone()).to_string());
                out.push(':');
                write_canonical(member, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Map;

    use super::*;
    use crate::agent::request_state::Spent;
    use crate::limits::{MAX_SPENT_STATES, MAX_SPENT_STATES_PER_SESSION};

    const NOW: u64 = 1_800_000_000_000;

    fn binding<'a>(tool: &'a str, arguments: &'a Value, page: &'a str) -> Binding<'a> {
        Binding {
            tool,
            arguments,
            forwarded: "f1",
            page_session: page,
            mcp_session: Some("m1"),
        }
    }

    #[test]
    fn a_state_is_accepted_once_for_its_own_call() {
        let states = RequestStates::default();
        let arguments = json!({"id": "c1", "n": [1, 2]});
        let state = states.issue(&binding("delete_car", &arguments, "p1"), NOW);
        // Members in another order are the same arguments.
        let reordered = json!({"n": [1, 2], "id": "c1"});
        assert_eq!(
            states.redeem(&state, &binding("delete_car", &reordered, "p1"), NOW + 1),
            Ok(())
        );
        let again = states.redeem(&state, &binding("delete_car", &arguments, "p1"), NOW + 2);
        assert!(again.unwrap_err().contains("already used"));
    }

    #[test]
    fn every_mismatch_is_refused_with_its_reason() {
        let states = RequestStates::default();
        let arguments = json!({"id": "c1"});
        let state = states.issue(&binding("delete_car", &arguments, "p1"), NOW);
        let refused =
            |state: &str, b: Binding, now: u64| states.redeem(state, &b, now).unwrap_err();
        let other = json!({"id": "c2"});
        assert!(
            refused(&state, binding("wipe", &arguments, "p1"), NOW).contains("tool 'delete_car'")
        );
        assert!(
            refused(&state, binding("delete_car", &other, "p1"), NOW).contains("other arguments")
        );
        assert!(
            refused(&state, binding("delete_car", &arguments, "p2"), NOW)
                .contains("another session")
        );
        let other_mcp = Binding {
            mcp_session: None,
            ..binding("delete_car", &arguments, "p1")
        };
        assert!(refused(&state, other_mcp, NOW).contains("another session"));
        let redefined = Binding {
            forwarded: "f2",
            ..binding("delete_car", &arguments, "p1")
        };
        assert!(refused(&state, redefined, NOW).contains("another definition of tool 'delete_car'"));
        assert!(refused(
            &state,
            binding("delete_car", &arguments, "p1"),
            NOW + REQUEST_STATE_TTL_MS
        )
        .contains("expired"));
        // Altered: a flipped digit in the payload or the tag, another key, garbage.
        let mut altered = state.clone().into_bytes();
        let at = 10;
        altered[at] = if altered[at] == b'0' { b'1' } else { b'0' };
        let altered = String::from_utf8(altered).unwrap();
        assert!(
            refused(&altered, binding("delete_car", &arguments, "p1"), NOW).contains("not issued")
        );
        let foreign =
            RequestStates::with_key([7; 32]).issue(&binding("delete_car", &arguments, "p1"), NOW);
        assert!(
            refused(&foreign, binding("delete_car", &arguments, "p1"), NOW).contains("not issued")
        );
        for garbage in ["", "v1", "v1..", "v2.00.00", "v1.zz.00", "v1.00.00.00"] {
            assert!(
                refused(garbage, binding("delete_car", &arguments, "p1"), NOW)
                    .contains("not issued")
            );
        }
        // None of these spent it.
        assert_eq!(
            states.redeem(&state, &binding("delete_car", &arguments, "p1"), NOW),
            Ok(())
        );
    }

    #[test]
    fn the_forwarded_meta_is_bound() {
        let call = |meta: Value| {
            PreparedCall::for_test(
                "delete_car",
                json!({"id": "c1"}),
                meta.as_object().unwrap().clone(),
            )
        };
        let schema = call(json!({"clienttools/inputSchema": {"type": "object"}}));
        let same = call(json!({"clienttools/inputSchema": {"type": "object"}}));
        let other =
            call(json!({"clienttools/inputSchema": {"type": "object", "required": ["id"]}}));
        let form = call(
            json!({"clienttools/inputSchema": {"type": "object"}, "clienttools/fallback": "form"}),
        );
        assert_eq!(forwarded_digest(&schema), forwarded_digest(&same));
        assert_ne!(forwarded_digest(&schema), forwarded_digest(&other));
        assert_ne!(forwarded_digest(&schema), forwarded_digest(&form));
        let states = RequestStates::default();
        let digest = forwarded_digest(&schema);
        let state = states.issue(&Binding::of(&schema, &digest, "p1", None), NOW);
        let changed = forwarded_digest(&other);
        let refused = states.redeem(&state, &Binding::of(&other, &changed, "p1", None), NOW);
        assert!(refused.unwrap_err().contains("another definition"));
        assert_eq!(
            states.redeem(&state, &Binding::of(&same, &digest, "p1", None), NOW),
            Ok(())
        );
    }

    /// Defect: a global cap with a scan of all spent nonces on each redemption let one agent block
    /// every confirmation on the bridge.
    #[test]
    fn spent_states_are_bounded_per_page_session_and_forgotten_when_they_expire() {
        let states = RequestStates::default();
        let arguments = json!({});
        let spend = |page: &str, now: u64| {
            let state = states.issue(&binding("t", &arguments, page), now);
            states.redeem(&state, &binding("t", &arguments, page), now)
        };
        for _ in 0..MAX_SPENT_STATES_PER_SESSION {
            assert_eq!(spend("greedy", NOW), Ok(()));
        }
        let refused = spend("greedy", NOW).unwrap_err();
        assert!(
            refused
                .contains("too many confirmations in this page session: at most 1000 within 300 s"),
            "{refused}"
        );
        // Another page session is not blocked.
        assert_eq!(spend("other", NOW), Ok(()));
        // Once they expire, the greedy session may confirm again, and the expired are forgotten.
        assert_eq!(spend("greedy", NOW + REQUEST_STATE_TTL_MS), Ok(()));
        let spent = states.spent.lock().unwrap();
        assert_eq!(spent.nonces.len(), 1);
        assert_eq!(spent.by_expiry.len(), 1);
        assert_eq!(spent.per_session.len(), 1);
    }

    #[test]
    fn the_bridge_wide_bound_refuses_with_a_clear_error() {
        let mut spent = Spent::default();
        for n in 0..MAX_SPENT_STATES {
            spent
                .spend(n.to_string(), format!("page{}", n % 200), NOW + 1, NOW)
                .unwrap();
        }
        let refused = spent
            .spend("last".into(), "new".into(), NOW + 1, NOW)
            .unwrap_err();
        assert!(
            refused.contains("too many confirmations on this bridge"),
            "{refused}"
        );
        assert_eq!(
            spent.spend("last".into(), "new".into(), NOW + 2, NOW + 1),
            Ok(())
        );
        assert_eq!(spent.nonces.len(), 1);
    }

    #[test]
    fn answers_map_to_outcomes() {
        let answer = |action, content: Option<Value>| {
            let mut result = ElicitResult::new(action);
            result.content = content;
            Decision::from_answer(&result).unwrap()
        };
        assert_eq!(answer(ElicitationAction::Accept, None), Decision::Approve);
        assert_eq!(
            answer(ElicitationAction::Accept, Some(json!({"approve": true}))),
            Decision::Approve
        );
        assert_eq!(
            answer(
                ElicitationAction::Accept,
                Some(json!({"approve": false, "reason": "no"}))
            ),
            Decision::Reject(Some("no".into()))
        );
        assert_eq!(
            answer(ElicitationAction::Decline, None),
            Decision::Reject(None)
        );
        assert_eq!(answer(ElicitationAction::Cancel, None), Decision::Cancel);
        let rejected = answer(
            ElicitationAction::Decline,
            Some(json!({"reason": "too risky"})),
        );
        assert_eq!(
            rejected.refusal().unwrap().text(),
            "rejected by the user: too risky"
        );
        assert_eq!(Decision::Cancel.refusal().unwrap().text(), CANCELLED);
        assert!(Decision::Approve.refusal().is_none());
    }

    /// Defect: `accept` with `approve: "false"` or `0` approved.
    #[test]
    fn only_an_absent_or_true_approve_approves() {
        let answer = |content: Value| {
            let mut result = ElicitResult::new(ElicitationAction::Accept);
            result.content = Some(content);
            Decision::from_answer(&result)
        };
        for approve in [
            json!("false"),
            json!(0),
            json!("true"),
            json!(null),
            json!({}),
        ] {
            let error = answer(json!({ "approve": approve })).unwrap_err();
            assert!(
                error.contains("'approve' must be true or false"),
                "{approve}: {error}"
            );
        }
        let error = answer(json!({"approve": false, "reason": 3})).unwrap_err();
        assert!(error.contains("'reason' must be a string"), "{error}");
        assert_eq!(answer(json!({})), Ok(Decision::Approve));
        assert_eq!(answer(json!({"approve": true})), Ok(Decision::Approve));
    }

    #[test]
    fn the_question_names_the_tool_and_shows_the_arguments() {
        let call = PreparedCall::for_test("delete_car", json!({"id": "c1"}), Map::new());
        let question = question(&call).unwrap();
        let request = serde_json::to_value(input_request(&question)).unwrap();
        let question = serde_json::to_value(question).unwrap();
        let message = question["message"].as_str().unwrap();
        assert!(
            message.contains("'delete_car' (Delete a car): Deletes a car for good"),
            "{message}"
        );
        assert!(message.contains("\"id\": \"c1\""), "{message}");
        assert_eq!(
            question["requestedSchema"]["properties"]["reason"]["type"],
            "string"
        );
        assert_eq!(request["method"], "elicitation/create");
    }

    /// Defect: the question cut the arguments at 4 000 characters while the approval covered all.
    #[test]
    fn arguments_too_long_to_show_whole_are_not_asked_about() {
        let fits = "x".repeat(MAX_SHOWN_ARGUMENTS_CHARS - 20);
        let call = PreparedCall::for_test("t", json!({ "text": fits }), Map::new());
        let shown = serde_json::to_value(question(&call).unwrap()).unwrap();
        assert!(shown["message"].as_str().unwrap().contains(&fits));
        assert!(!shown["message"].as_str().unwrap().contains("cut short"));
        let long = "x".repeat(MAX_SHOWN_ARGUMENTS_CHARS);
        let call = PreparedCall::for_test("t", json!({ "text": long }), Map::new());
        assert!(question(&call).is_none());
    }
}
