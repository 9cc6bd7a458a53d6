//! A tool's annotations as the bridge reads them for a call (SPEC §7 "Calls that behave as their
//! tools say"): the page's declared ones for a page tool, the `--tools` file's for an
//! agent-defined one — what the operator's policy sees as `annotations` (crate::calls::policy),
//! and `untrustedContentHint`, which marks every result of the tool that reaches an agent
//! ([`mark_untrusted`], applied in `PageSession::call_tool`, which every route's call passes). The
//! rule and the mark are the core's, which the page applies to its own tools too.

use client_tools_core::protocol::{meta, Tool};
use serde_json::Value;

pub(crate) use client_tools_core::call::{is_untrusted, mark_untrusted};

use crate::calls::agent_tools::{AgentTool, AgentTools};

/// The result `_meta` key that says the result holds content the tool does not vouch for
/// (user-generated, third-party: its `annotations.untrustedContentHint` is `true`). Only ever
/// `true`: the bridge sets it, and a page cannot unset it.
pub const UNTRUSTED_META: &str = meta::UNTRUSTED;

/// The annotations of the tool a call runs: the `--tools` file's entry when `file_tool` is what
/// runs, else the page's `tools/list` entry's (`None` when it has none, or they are not an
/// object: a condition then sees `{}`).
pub(crate) fn of(file_tool: Option<&AgentTool>, page_entry: Option<&Tool>) -> Option<Value> {
    match file_tool {
        Some(tool) => tool.annotations.clone().map(Value::Object),
        None => page_entry
            .and_then(|tool| tool.annotations.as_ref())
            .filter(|annotations| annotations.is_object())
            .cloned(),
    }
}

/// [`of`] for the tool the canonical name `name` means (a call relayed from another cluster node
/// names it as listed).
pub(crate) fn of_listed(
    name: &str,
    agent_tools: &AgentTools,
    page_tools: &[Tool],
) -> Option<Value> {
    let file_tool = agent_tools.for_call(name, page_tools);
    let page_entry = page_tools.iter().find(|tool| tool.name == name);
    of(file_tool.map(AsRef::as_ref), page_entry)
}

#[cfg(test)]
mod tests {
    use client_tools_core::protocol::CallToolResult;
    use serde_json::json;

    use super::*;

    fn page_tool(name: &str, annotations: Option<Value>) -> Tool {
        Tool {
            name: name.into(),
            description: Some("page tool".into()),
            input_schema: json!({"type": "object"}),
            output_schema: None,
            annotations,
            execution: None,
            meta: None,
        }
    }

    #[test]
    fn only_a_true_hint_marks() {
        assert!(is_untrusted(Some(&json!({"untrustedContentHint": true}))));
        for other in [
            json!({"untrustedContentHint": false}),
            json!({"untrustedContentHint": "true"}),
            json!({"untrustedContentHint": 1}),
            json!({"readOnlyHint": true}),
            json!({}),
            json!(true),
        ] {
            assert!(!is_untrusted(Some(&other)), "{other}");
        }
        assert!(!is_untrusted(None));
    }

    #[test]
    fn a_page_cannot_unmark_and_its_other_keys_stay() {
        let mut result = CallToolResult::success(json!("hi"));
        result.meta = json!({"clienttools/untrusted": false, "app/x": 1})
            .as_object()
            .cloned();
        mark_untrusted(&mut result);
        let meta = result.meta.unwrap();
        assert_eq!(meta[UNTRUSTED_META], true);
        assert_eq!(meta["app/x"], 1);
        let mut bare = CallToolResult::error("boom");
        mark_untrusted(&mut bare);
        assert_eq!(bare.meta.unwrap()[UNTRUSTED_META], true);
    }

    #[test]
    fn the_file_decides_for_its_tools_the_page_for_its_own() {
        let file = AgentTools::parse(
            &json!([{"name": "reviews", "description": "Reviews", "inputSchema": {"type": "object"},
                     "annotations": {"untrustedContentHint": true}},
                    {"name": "plain", "description": "Plain", "inputSchema": {"type": "object"}}])
            .to_string(),
        )
        .unwrap();
        let handler = |name: &str| {
            let mut tool = page_tool(name, Some(json!({"untrustedContentHint": false})));
            tool.meta = json!({"clienttools/kind": "handler"}).as_object().cloned();
            tool
        };
        // The page's handler entry does not speak for a file tool.
        let page = [
            handler("reviews"),
            page_tool("own", Some(json!({"untrustedContentHint": true}))),
            page_tool("odd", Some(json!(5))),
        ];
        assert!(is_untrusted(of_listed("reviews", &file, &page).as_ref()));
        assert!(is_untrusted(of_listed("own", &file, &page).as_ref()));
        assert_eq!(of_listed("plain", &file, &page), None);
        assert_eq!(of_listed("odd", &file, &page), None);
        assert_eq!(of_listed("unknown", &file, &page), None);
        // A page function of a file tool's name is the page's own tool: its annotations.
        let shadowing = [page_tool("reviews", None)];
        assert_eq!(of_listed("reviews", &file, &shadowing), None);
    }
}
