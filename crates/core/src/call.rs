//! The rules of one tool call (SPEC §5) that need no time: admission (allow-list, handler,
//! schemas, timeout and confirmation policy), a person's decision, and the result checks, with the
//! error results worded once. [`crate::page_engine`] applies them through a call's life.

use std::sync::Arc;

use serde_json::Value;

use crate::limits;
use crate::plain_object::PlainObject;
use crate::protocol::{content, meta, CallToolParams, CallToolResult};
use crate::registry::{is_allowed, RegisteredTool, ToolKind};
use crate::tape::DetachedTokens;
use crate::validate::CompiledSchema;

/// The error results of SPEC §5, worded once.
pub mod outcome {
    use super::CallToolResult;

    pub fn no_handler(name: &str) -> CallToolResult {
        let name = quoted(name);
        CallToolResult::error(format!(
            "no handler registered for tool '{name}' on this page"
        ))
    }

    pub fn not_allowed(name: &str) -> CallToolResult {
        let name = quoted(name);
        CallToolResult::error(format!("tool '{name}' is not allowed"))
    }

    /// A name a runtime sent, as an error quotes it: at most 128 characters (a tool's own name is
    /// at most 64; a longer one is cut, so an answer never grows with a hostile name).
    fn quoted(name: &str) -> std::borrow::Cow<'_, str> {
        match name.char_indices().nth(128) {
            Some((cut, _)) => format!("{}…", &name[..cut]).into(),
            None => name.into(),
        }
    }

    pub fn invalid_input(errors: &[String]) -> CallToolResult {
        CallToolResult::error(format!("invalid input:\n{}", errors.join("\n")))
    }

    pub fn handler_failed(message: &str) -> CallToolResult {
        CallToolResult::error(message.to_owned())
    }

    pub fn timed_out(timeout_ms: u64) -> CallToolResult {
        CallToolResult::error(format!("timed out after {timeout_ms} ms"))
    }

    pub fn rejected(reason: Option<&str>) -> CallToolResult {
        match reason.filter(|r| !r.is_empty()) {
            Some(reason) => CallToolResult::error(format!("rejected by the user: {reason}")),
            None => CallToolResult::error("rejected by the user"),
        }
    }

    /// The page cancelled the call (a form reset or removed while an agent filled it).
    pub fn withdrawn(reason: &str) -> CallToolResult {
        CallToolResult::error(format!("cancelled by the page: {reason}"))
    }

    /// What a cancelled call's caller learns when it still asks (a re-send, a page's `invoke`).
    pub fn cancelled() -> CallToolResult {
        CallToolResult::error("the call was cancelled")
    }

    pub fn user_cancelled() -> CallToolResult {
        CallToolResult::error("the user cancelled")
    }

    pub fn invalid_output(errors: &[String]) -> CallToolResult {
        CallToolResult::error(format!(
            "the tool's result does not match its output schema:\n{}",
            errors.join("\n")
        ))
    }

    pub fn not_serializable(detail: &str) -> CallToolResult {
        CallToolResult::error(format!(
            "the tool's result is not JSON-serializable: {detail}"
        ))
    }
}

/// A call that passed admission: everything needed to run it, owned (no registry borrow).
#[derive(Debug)]
pub struct PreparedCall<H> {
    pub tool: Arc<RegisteredTool<H>>,
    /// The input schema the call's arguments were checked against, when the call brought its own.
    pub call_input: Option<Arc<CompiledSchema>>,
    pub timeout_ms: u64,
    pub require_confirmation: bool,
    /// The call's own `_meta` asks for confirmation: the page's "allow for this session" does not
    /// skip it.
    pub confirmation_forced_by_call: bool,
    /// The output schema to check the result against (the tool's, or the call's for agent tools).
    pub output: Option<Arc<CompiledSchema>>,
    /// An agent-defined tool's title and description, from the call's `_meta`: what the dialog
    /// shows (a page-defined tool's own definition says it).
    pub call_title: Option<String>,
    pub call_description: Option<String>,
}

/// The decision for a call that just arrived (or is retried after waiting for a handler).
#[derive(Debug)]
pub enum Admission<H> {
    Run(PreparedCall<H>),
    /// No handler yet: try again when one is registered or when the grace period ends.
    WaitForHandler,
    /// The call ends now with this result; the handler never runs.
    Reject(CallToolResult),
    /// No handler, but the call asks for the result form (`clienttools/fallback: "form"`, SPEC §7):
    /// the user supplies the result, which must satisfy `output`.
    ResultForm {
        output: Arc<CompiledSchema>,
    },
}

/// Decides what a call may do: allow-list, handler presence, input validation, timeout policy.
/// The arguments are validated as `arguments_text`, their JSON text as it stood in the frame (read
/// in place: no `Value` is built for them); the handler gets them from the same text.
pub fn admit_text<H>(
    tool: Option<Arc<RegisteredTool<H>>>,
    params: &CallToolParams,
    arguments_text: &str,
    allow: &[String],
    grace_over: bool,
) -> Admission<H> {
    admit_read(tool, params, arguments_text, None, allow, grace_over)
}

/// [`admit_text`] with the tokens the frame's reader made of `arguments_text` (then it is not
/// read again). Crate-internal: the tokens must be the ones cut for exactly this text.
pub(crate) fn admit_read<H>(
    tool: Option<Arc<RegisteredTool<H>>>,
    params: &CallToolParams,
    arguments_text: &str,
    arguments_tokens: Option<&DetachedTokens>,
    allow: &[String],
    grace_over: bool,
) -> Admission<H> {
    let Some(tool) = tool else {
        // An unknown name is checked against the allow-list as the agent spelled it.
        if !is_allowed(allow, &params.name) {
            return Admission::Reject(outcome::not_allowed(&params.name));
        }
        if !grace_over {
            return Admission::WaitForHandler;
        }
        return match result_form(params, arguments_text) {
            Some(admission) => admission,
            None => Admission::Reject(outcome::no_handler(&params.name)),
        };
    };
    if !is_allowed(allow, &tool.original_name) {
        return Admission::Reject(outcome::not_allowed(&params.name));
    }

    let call_schema = |key: &str| -> Result<Option<Arc<CompiledSchema>>, CallToolResult> {
        match params.meta_value(key) {
            None | Some(Value::Null) => Ok(None),
            Some(schema) => CompiledSchema::compile_cached(schema)
                .map(Some)
                .map_err(|message| {
                    CallToolResult::error(format!(
                        "the call's {key} is not a valid JSON Schema: {message}"
                    ))
                }),
        }
    };
    let (input_for_call, output) = if tool.kind == ToolKind::Handler {
        match (
            call_schema(meta::INPUT_SCHEMA),
            call_schema(meta::OUTPUT_SCHEMA),
        ) {
            (Ok(input), Ok(output)) => (input, output),
            (Err(result), _) | (_, Err(result)) => return Admission::Reject(result),
        }
    } else {
        (None, None)
    };
    let input_schema = input_for_call.as_deref().or(tool.input.as_deref());

    if let Some(schema) = input_schema {
        if let Err(errors) = schema.validate_read(arguments_text, arguments_tokens) {
            return Admission::Reject(outcome::invalid_input(&errors));
        }
    }
    let output = output.or_else(|| tool.output.clone());

    // The runtime's `clienttools/timeoutMs` is the timeout of an agent-defined tool, and bounded by
    // a page-defined one's own (the page knows how long its tool may take): `limits::call_timeout`
    // with the page tool's timeout as the budget, clamped.
    let runtime_timeout = params
        .meta_value(meta::TIMEOUT_MS)
        .and_then(Value::as_f64)
        .and_then(limits::positive_ms);
    let budget = (tool.kind != ToolKind::Handler).then_some(tool.timeout_ms);
    let timeout_ms = limits::call_timeout(runtime_timeout, budget, tool.timeout_ms)
        .unwrap_or_else(|too_long| too_long.limit);
    // The runtime sets `confirmedBy: "agent"` only once the person at the agent approved the call.
    let confirmed_by_agent = params
        .meta_value(meta::CONFIRMED_BY)
        .and_then(Value::as_str)
        == Some("agent");
    let forced_by_call = params
        .meta_value(meta::REQUIRE_CONFIRMATION)
        .and_then(Value::as_bool)
        == Some(true);
    let call_text = |key: &str| {
        (tool.kind == ToolKind::Handler)
            .then(|| {
                params
                    .meta_value(key)
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            })
            .flatten()
    };
    Admission::Run(PreparedCall {
        call_title: call_text(meta::TITLE),
        call_description: call_text(meta::DESCRIPTION),
        require_confirmation: (tool.require_confirmation || forced_by_call) && !confirmed_by_agent,
        confirmation_forced_by_call: forced_by_call,
        tool,
        call_input: input_for_call,
        timeout_ms,
        output,
    })
}

/// A call without handler that asks for the result form: `Some` when it does and brings an output
/// schema (the admission, or the error result when a schema is bad or the arguments fail theirs).
fn result_form<H>(params: &CallToolParams, arguments_text: &str) -> Option<Admission<H>> {
    if params.meta_value(meta::FALLBACK).and_then(Value::as_str) != Some("form") {
        return None;
    }
    let compile = |key: &str, schema: &Value| {
        CompiledSchema::compile_cached(schema).map_err(|message| {
            Admission::Reject(CallToolResult::error(format!(
                "the call's {key} is not a valid JSON Schema: {message}"
            )))
        })
    };
    let output = params.meta_value(meta::OUTPUT_SCHEMA)?;
    let admission = (|| {
        let output = compile(meta::OUTPUT_SCHEMA, output)?;
        if let Some(input) = params.meta_value(meta::INPUT_SCHEMA) {
            if let Err(errors) = compile(meta::INPUT_SCHEMA, input)?.validate_text(arguments_text) {
                return Err(Admission::Reject(outcome::invalid_input(&errors)));
            }
        }
        Ok(Admission::ResultForm { output })
    })();
    Some(admission.unwrap_or_else(|rejected| rejected))
}

impl<H> PreparedCall<H> {
    /// The schema the input must satisfy (the call's own, else the tool's).
    pub fn input_schema(&self) -> Option<&CompiledSchema> {
        self.call_input.as_deref().or(self.tool.input.as_deref())
    }

    /// [`Self::input_schema`], shared (the dialog keeps it while the user edits).
    pub fn input_schema_shared(&self) -> Option<Arc<CompiledSchema>> {
        self.call_input.clone().or_else(|| self.tool.input.clone())
    }
}

pub use crate::limits::HUMAN_WAIT_MAX_MS;

/// What the page's `confirm` callback decided (SPEC §7).
#[derive(Debug, Clone, PartialEq)]
pub enum ConfirmDecision {
    Approve,
    Modify { input: Value },
    Reject { reason: Option<String> },
}

impl ConfirmDecision {
    /// Reads a decision; the error says what was wrong with it.
    pub fn parse(value: Value) -> Result<Self, String> {
        Self::read(value).map_err(|e| {
            format!(
                "the confirm callback must return {{action: \"approve\" | \"modify\" | \"reject\", input?, reason?}}: {e}"
            )
        })
    }

    /// What serde's derive for an internally tagged enum accepted, read by hand (a few KB less of
    /// the module): `approve` ignores other members; `modify` takes `input` (required, `null`
    /// allowed) and `reject` an optional `reason`, and each refuses any other member.
    fn read(value: Value) -> Result<Self, String> {
        let Value::Object(mut decision) = value else {
            return Err(format!(
                "expected an object, got {}",
                crate::validate::json_type_name(&value)
            ));
        };
        let action = match decision.remove("action") {
            Some(Value::String(action)) => action,
            Some(other) => {
                return Err(format!(
                    "'action': expected a string, got {}",
                    crate::validate::json_type_name(&other)
                ))
            }
            None => return Err("missing field `action`".into()),
        };
        let only = |decision: &serde_json::Map<String, Value>, allowed: &str| match decision
            .keys()
            .find(|key| *key != allowed)
        {
            Some(key) => Err(format!("unknown field `{key}`, expected `{allowed}`")),
            None => Ok(()),
        };
        match action.as_str() {
            "approve" => Ok(Self::Approve),
            "modify" => {
                only(&decision, "input")?;
                let input = decision.remove("input").ok_or("missing field `input`")?;
                Ok(Self::Modify { input })
            }
            "reject" => {
                only(&decision, "reason")?;
                let mut reason = PlainObject::from_value(Value::Object(decision), &["reason"])?;
                Ok(Self::Reject {
                    reason: reason.string("reason")?,
                })
            }
            other => Err(format!(
                "unknown variant `{other}`, expected one of `approve`, `modify`, `reject`"
            )),
        }
    }
}

/// After a confirmation: run the handler (on the call's own arguments, or on the input the user
/// modified), or end the call.
#[derive(Debug, PartialEq)]
pub enum Confirmed {
    Run { modified_input: Option<Value> },
    End(CallToolResult),
}

/// Applies a decision: a modified input is validated again, a rejection ends the call.
pub fn apply_decision<H>(prepared: &PreparedCall<H>, decision: ConfirmDecision) -> Confirmed {
    match decision {
        ConfirmDecision::Approve => Confirmed::Run {
            modified_input: None,
        },
        ConfirmDecision::Reject { reason } => Confirmed::End(outcome::rejected(reason.as_deref())),
        ConfirmDecision::Modify { input } => {
            if let Some(Err(errors)) = prepared.input_schema().map(|s| s.validate(&input)) {
                return Confirmed::End(outcome::invalid_input(&errors));
            }
            Confirmed::Run {
                modified_input: Some(input),
            }
        }
    }
}

/// Records in the result that the user changed the input (SPEC §5).
pub fn mark_modified(result: &mut CallToolResult, input: Value) {
    result
        .meta
        .get_or_insert_with(Default::default)
        .insert(meta::MODIFIED_INPUT.into(), input);
}

/// Whether a tool's annotations say its results hold untrusted content: `untrustedContentHint` is
/// `true` (anything else, absent included, is not).
pub fn is_untrusted(annotations: Option<&Value>) -> bool {
    annotations.and_then(|a| a.get("untrustedContentHint")) == Some(&Value::Bool(true))
}

/// Marks a result of such a tool (SPEC §7): `_meta["clienttools/untrusted"]: true`, whatever was
/// under that key (a handler may mark, never unmark).
pub fn mark_untrusted(result: &mut CallToolResult) {
    result
        .meta
        .get_or_insert_with(Default::default)
        .insert(meta::UNTRUSTED.into(), Value::Bool(true));
}

/// A handler's value, JSON text, as the call's result (SPEC §4): an MCP result the handler shaped
/// (`{content: [...], structuredContent?, isError?, _meta?}`) is sent as it is once its blocks are
/// checked, its `structuredContent` against the output schema (a tool with an output schema must
/// give one, unless the result is an error); any other value goes through [`complete_text`].
pub fn handler_result(text: &str, output: Option<&CompiledSchema>) -> CallToolResult {
    // Most results are plain values: only text that could be an MCP result is parsed here first.
    if !(text.starts_with('{') && text.contains("\"content\"")) {
        return complete_text(text, output);
    }
    let value: Value = match serde_json::from_str(text) {
        Ok(value) if content::is_mcp_result(&value) => value,
        _ => return complete_text(text, output),
    };
    let result = match content::read_mcp_result(value) {
        Ok(result) => result,
        Err(why) => return CallToolResult::error(format!("the tool's result is malformed: {why}")),
    };
    match (output, &result.structured_content) {
        (Some(_), None) if !result.is_error => outcome::invalid_output(&[
            "the result has no structuredContent, and the tool declares an output schema".into(),
        ]),
        (Some(schema), Some(structured)) if !result.is_error => match schema.validate(structured) {
            Ok(()) => result,
            Err(errors) => outcome::invalid_output(&errors),
        },
        _ => result,
    }
}

/// Checks a handler's result, JSON text (its value as `JSON.stringify` gave it), against the output
/// schema as text, and parses it once for the answer.
pub fn complete_text(text: &str, output: Option<&CompiledSchema>) -> CallToolResult {
    if let Some(schema) = output {
        if let Err(errors) = schema.validate_text(text) {
            return outcome::invalid_output(&errors);
        }
    }
    match serde_json::from_str(text) {
        Ok(value) => CallToolResult::success(value),
        Err(error) => outcome::not_serializable(&error.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::MAX_TIMEOUT_MS;

    /// [`admit_text`] with the arguments serialized from `params` (no arguments: `{}`).
    fn admit<H>(
        tool: Option<Arc<RegisteredTool<H>>>,
        params: &CallToolParams,
        allow: &[String],
        grace_over: bool,
    ) -> Admission<H> {
        let text = params
            .arguments
            .as_ref()
            .map_or_else(|| "{}".to_owned(), Value::to_string);
        admit_text(tool, params, &text, allow, grace_over)
    }
    use crate::registry::{Declaration, Registry};
    use serde_json::json;

    fn params(name: &str, arguments: Value) -> CallToolParams {
        CallToolParams {
            name: name.into(),
            arguments: Some(arguments),
            meta: None,
        }
    }

    fn board_registry() -> Registry<&'static str> {
        let mut registry = Registry::default();
        registry
            .define(
                Declaration {
                    original_name: "read_board_tasks".into(),
                    description: Some("Read tasks".into()),
                    parameters: Some(json!({
                        "type": "object",
                        "properties": {
                            "boardId": {"type": "string"},
                            "status": {"enum": ["todo", "in-progress", "done"]}
                        },
                        "required": ["boardId"]
                    })),
                    output_schema: Some(json!({"type": "object", "required": ["tasks"]})),
                    ..Declaration::default()
                },
                ToolKind::Function,
                "read",
            )
            .unwrap();
        registry
    }

    fn reject_text<H: std::fmt::Debug>(admission: Admission<H>) -> String {
        match admission {
            Admission::Reject(result) => {
                assert!(result.is_error);
                result.text().to_owned()
            }
            other => panic!("expected a rejection, got {other:?}"),
        }
    }

    #[test]
    fn valid_input_runs_with_the_tool_timeout() {
        let registry = board_registry();
        let call = params("read_board_tasks", json!({"boardId": "b1"}));
        let Admission::Run(prepared) = admit(registry.get(&call.name), &call, &[], false) else {
            panic!("should run")
        };
        assert_eq!(prepared.timeout_ms, 30_000);
        assert_eq!(prepared.tool.handler, "read");

        // The runtime's timeout bounds a page tool's, never extends it.
        let mut bounded = call.clone();
        bounded.meta = Some(
            json!({ meta::TIMEOUT_MS: 5_000 })
                .as_object()
                .unwrap()
                .clone(),
        );
        let Admission::Run(prepared) = admit(registry.get(&call.name), &bounded, &[], false) else {
            panic!("should run")
        };
        assert_eq!(prepared.timeout_ms, 5_000);
        bounded.meta = Some(
            json!({ meta::TIMEOUT_MS: 90_000 })
                .as_object()
                .unwrap()
                .clone(),
        );
        let Admission::Run(prepared) = admit(registry.get(&call.name), &bounded, &[], false) else {
            panic!("should run")
        };
        assert_eq!(prepared.timeout_ms, 30_000);
    }

    #[test]
    fn missing_field_and_bad_enum_are_named() {
        let registry = board_registry();
        let call = params("read_board_tasks", json!({"status": "later"}));
        let text = reject_text(admit(registry.get(&call.name), &call, &[], false));
        assert!(text.contains("boardId"), "{text}");
        assert!(text.contains("/status"), "{text}");
    }

    #[test]
    fn unknown_tool_waits_for_the_grace_then_fails() {
        let registry = board_registry();
        let call = params("nope", json!({}));
        assert!(matches!(
            admit(registry.get("nope"), &call, &[], false),
            Admission::WaitForHandler
        ));
        assert_eq!(
            reject_text(admit(registry.get("nope"), &call, &[], true)),
            "no handler registered for tool 'nope' on this page"
        );
    }

    #[test]
    fn allow_list_rejects_before_anything_runs() {
        let registry = board_registry();
        let call = params("read_board_tasks", json!({"boardId": "b1"}));
        let text = reject_text(admit(
            registry.get(&call.name),
            &call,
            &["other".into()],
            false,
        ));
        assert_eq!(text, "tool 'read_board_tasks' is not allowed");
    }

    #[test]
    fn agent_tools_use_the_schemas_and_policy_of_the_call() {
        let mut registry = Registry::default();
        registry.register_handler("search", "h").unwrap();
        let mut call = params("search", json!({"q": 1}));
        call.meta = Some(
            json!({
                meta::INPUT_SCHEMA: {"type": "object", "properties": {"q": {"type": "string"}}},
                meta::TIMEOUT_MS: 999_999,
                meta::REQUIRE_CONFIRMATION: true
            })
            .as_object()
            .unwrap()
            .clone(),
        );
        let text = reject_text(admit(registry.get("search"), &call, &[], false));
        assert!(text.contains("/q"), "{text}");
        call.arguments = Some(json!({"q": "cars"}));
        let Admission::Run(prepared) = admit(registry.get("search"), &call, &[], false) else {
            panic!("should run")
        };
        assert_eq!(prepared.timeout_ms, MAX_TIMEOUT_MS);
        assert!(prepared.require_confirmation);
    }

    #[test]
    fn policy_confirmed_by_agent_and_forced_by_call() {
        let mut registry = Registry::default();
        let mut wipe = Declaration {
            original_name: "wipe".into(),
            annotations: Some(json!({"destructiveHint": true})),
            ..Declaration::default()
        };
        registry
            .define(wipe.clone(), ToolKind::Function, 1)
            .unwrap();
        wipe.original_name = "wipe_quietly".into();
        wipe.require_confirmation = Some(false);
        registry.define(wipe, ToolKind::Function, 2).unwrap();
        let run = |name: &str, meta: Value| {
            let mut call = params(name, json!({}));
            call.meta = meta.as_object().cloned();
            match admit(registry.get(name), &call, &[], false) {
                Admission::Run(p) => (p.require_confirmation, p.confirmation_forced_by_call),
                other => panic!("{other:?}"),
            }
        };
        assert_eq!(run("wipe", json!(null)), (true, false));
        assert_eq!(
            run("wipe", json!({meta::CONFIRMED_BY: "agent"})),
            (false, false)
        );
        assert_eq!(run("wipe_quietly", json!(null)), (false, false));
        assert_eq!(
            run("wipe_quietly", json!({meta::REQUIRE_CONFIRMATION: true})),
            (true, true)
        );
    }

    #[test]
    fn result_form_for_a_call_without_handler_that_asks_for_it() {
        let registry = Registry::<()>::default();
        let mut call = params("pick_date", json!({"hint": 1}));
        let output = json!({"type": "object", "properties": {"date": {"type": "string"}}});
        call.meta = json!({meta::FALLBACK: "form", meta::OUTPUT_SCHEMA: output})
            .as_object()
            .cloned();
        assert!(matches!(
            admit(registry.get("pick_date"), &call, &[], false),
            Admission::WaitForHandler
        ));
        let Admission::ResultForm { output: schema } =
            admit(registry.get("pick_date"), &call, &[], true)
        else {
            panic!("expected the result form")
        };
        assert_eq!(schema.schema(), &output);
        let meta = call.meta.as_mut().unwrap();
        meta.insert(
            meta::INPUT_SCHEMA.into(),
            json!({"properties": {"hint": {"type": "string"}}}),
        );
        assert!(reject_text(admit(registry.get("pick_date"), &call, &[], true)).contains("/hint"));
        let meta = call.meta.as_mut().unwrap();
        meta.remove(meta::OUTPUT_SCHEMA);
        assert!(
            reject_text(admit(registry.get("pick_date"), &call, &[], true))
                .starts_with("no handler")
        );
        assert_eq!(outcome::user_cancelled().text(), "the user cancelled");
    }

    #[test]
    fn output_schema_is_checked() {
        let registry = board_registry();
        let tool = registry.get("read_board_tasks").unwrap();
        let bad = complete_text(r#"{"nope": 1}"#, tool.output.as_deref());
        assert!(
            bad.is_error && bad.text().contains("tasks"),
            "{}",
            bad.text()
        );
        let good = complete_text(r#"{"tasks": []}"#, tool.output.as_deref());
        assert!(!good.is_error);
    }

    #[test]
    fn confirmation_decisions() {
        let registry = board_registry();
        let call = params("read_board_tasks", json!({"boardId": "b1"}));
        let Admission::Run(prepared) = admit(registry.get(&call.name), &call, &[], false) else {
            panic!("should run")
        };
        let approve = ConfirmDecision::parse(json!({"action": "approve"})).unwrap();
        assert_eq!(
            apply_decision(&prepared, approve),
            Confirmed::Run {
                modified_input: None
            }
        );
        let modify =
            ConfirmDecision::parse(json!({"action": "modify", "input": {"boardId": "b2"}}))
                .unwrap();
        assert_eq!(
            apply_decision(&prepared, modify),
            Confirmed::Run {
                modified_input: Some(json!({"boardId": "b2"}))
            }
        );
        let bad_modify =
            ConfirmDecision::parse(json!({"action": "modify", "input": {"status": 1}})).unwrap();
        let Confirmed::End(result) = apply_decision(&prepared, bad_modify) else {
            panic!()
        };
        assert!(result.text().contains("boardId"), "{}", result.text());
        let reject =
            ConfirmDecision::parse(json!({"action": "reject", "reason": "not now"})).unwrap();
        assert_eq!(
            apply_decision(&prepared, reject),
            Confirmed::End(outcome::rejected(Some("not now")))
        );
        let error = ConfirmDecision::parse(json!({"action": "maybe"})).unwrap_err();
        assert!(error.contains("approve"), "{error}");
        // As serde's derive read them: `approve` ignores other members (`ok ? "approve" :
        // "reject"` with a reason either way), `modify` and `reject` take only their own.
        let approve = json!({"action": "approve", "reason": "fine", "input": null});
        assert_eq!(
            ConfirmDecision::parse(approve),
            Ok(ConfirmDecision::Approve)
        );
        assert_eq!(
            ConfirmDecision::parse(json!({"action": "modify", "input": null})),
            Ok(ConfirmDecision::Modify { input: Value::Null })
        );
        assert_eq!(
            ConfirmDecision::parse(json!({"action": "reject", "reason": null})),
            Ok(ConfirmDecision::Reject { reason: None })
        );
        for refused in [
            json!({"action": "modify"}),
            json!({"action": "modify", "input": {}, "reason": "x"}),
            json!({"action": "reject", "input": null}),
            json!({"action": "reject", "reason": 5}),
            json!({"action": 1}),
            json!({"reason": "no action"}),
            json!("approve"),
        ] {
            let error = ConfirmDecision::parse(refused.clone()).unwrap_err();
            assert!(
                error.starts_with("the confirm callback must return"),
                "{refused}: {error}"
            );
        }

        let mut result = CallToolResult::success(json!({"ok": true}));
        mark_modified(&mut result, json!({"boardId": "b2"}));
        assert_eq!(
            result.meta.unwrap()[meta::MODIFIED_INPUT],
            json!({"boardId": "b2"})
        );
    }

    #[test]
    fn outcome_wording() {
        assert_eq!(outcome::timed_out(50).text(), "timed out after 50 ms");
        assert_eq!(
            outcome::rejected(Some("no")).text(),
            "rejected by the user: no"
        );
        assert_eq!(outcome::rejected(None).text(), "rejected by the user");
    }
}
