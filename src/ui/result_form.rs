//! The result form (SPEC §7): a call for an agent-defined tool with no handler, whose `_meta` asks
//! for `clienttools/fallback: "form"`, is answered by the user through a form built from its output
//! schema. Submit → the value (already valid for the schema) as the result; Cancel or Esc → the
//! error result "the user cancelled".

use std::sync::Arc;

use client_tools_core::call::{self, outcome, HUMAN_WAIT_MAX_MS};
use client_tools_core::form::initial_value;
use client_tools_core::protocol::{meta, CallToolParams, CallToolResult};
use client_tools_core::validate::CompiledSchema;
use futures::channel::oneshot;
use serde_json::Value;

use super::dialog::{self, Answer, Kind, Request};
use crate::confirmation::{wait_for_human, Waited};
use crate::page::{Page, Stop};

/// The user's result for the call, or `Err` with the runtime's reason when it cancelled the call.
pub async fn ask(
    page: &Page,
    call_id: &str,
    params: &CallToolParams,
    arguments_text: &str,
    output: Arc<CompiledSchema>,
    stop_rx: &mut oneshot::Receiver<Stop>,
) -> Result<CallToolResult, String> {
    let schema = output.schema();
    // Who asks: the tool's title and description from the call (an agent-defined tool), else the
    // output schema's.
    let text = |key: &str, meta_key: &str| {
        params
            .meta_value(meta_key)
            .or_else(|| schema.get(key))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let shows_arguments = !matches!(arguments_text.trim(), "" | "{}" | "null");
    let request = Request {
        kind: Kind::Result,
        title: text("title", meta::TITLE).unwrap_or_else(|| params.name.clone()),
        description: text("description", meta::DESCRIPTION),
        original_name: params.name.clone(),
        value: initial_value(schema),
        schema: Some(output.clone()),
        context: shows_arguments.then(|| arguments_text.to_owned()),
        strings: page.options.strings.clone(),
    };
    let (id, answer) = match dialog::ask(request) {
        Ok(asked) => asked,
        Err(why) => return Ok(CallToolResult::error(why)),
    };
    let waiting = "waiting for the user to fill in the result";
    let result = match wait_for_human(page, call_id, answer, stop_rx, waiting).await {
        Waited::Done(Ok(Answer::Result(value))) => {
            return Ok(call::complete_text(&value.to_string(), Some(&output)))
        }
        Waited::Done(_) => return Ok(outcome::user_cancelled()),
        Waited::Cancelled(reason) => Err(reason),
        Waited::TimedOut => Ok(CallToolResult::error(format!(
            "no result from the user within {HUMAN_WAIT_MAX_MS} ms"
        ))),
    };
    dialog::withdraw(id);
    result
}
