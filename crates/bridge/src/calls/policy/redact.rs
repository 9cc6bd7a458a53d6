//! A `redact` rule's replacement of personal data in everything an agent reads from a call,
//! before it sees it: in the result, every string of its `content` blocks but their `type` and
//! binary data (images, audio, blobs: the core's block table, `protocol::content::BLOCKS`; a
//! block of a kind the table does not know has every string replaced: fail closed), of its
//! `structuredContent` and of its `_meta`, however deep; and as the page sends them while the call
//! runs, its log messages (every string but the level), its progress messages and the requests of
//! its rounds (elicitation messages and schemas, sampling prompts: every string but the binary
//! data of a message's content blocks). Object keys are text too; numbers are left alone.

use std::borrow::Cow;
use std::ops::Range;

use client_tools_core::protocol::content::{visit_strings, visit_text_mut};
use client_tools_core::protocol::{method, CallToolResult, Content, ProgressParams, RpcError};
use regex::Regex;
use serde_json::{Map, Value};

use super::detectors::Detector;
use crate::calls::served::method as served;

/// What one `redact` rule replaces, and with what.
#[derive(Debug)]
pub struct Redaction {
    pub detectors: Vec<Detector>,
    pub patterns: Vec<Regex>,
    pub replacement: String,
}

impl Redaction {
    /// Replaces every match in `result`; returns how many were replaced.
    pub fn apply(&self, result: &mut CallToolResult) -> usize {
        let mut count = 0;
        for block in &mut result.content {
            count += match block {
                Content::Text(text) => self.replace_in(&mut text.text),
                Content::Block(block) => self.in_block(block),
            };
        }
        if let Some(structured) = &mut result.structured_content {
            count += self.replace_in_value(structured);
        }
        if let Some(meta) = &mut result.meta {
            // As a whole object: its keys are text an agent reads too.
            let mut whole = serde_json::Value::Object(std::mem::take(meta));
            count += self.replace_in_value(&mut whole);
            if let serde_json::Value::Object(redacted) = whole {
                *meta = redacted;
            }
        }
        count
    }

    /// One content block: every string of it an agent reads as text (the core's block table).
    fn in_block(&self, block: &mut Map<String, Value>) -> usize {
        visit_text_mut(block, &mut |text| self.replace_in(text))
    }

    /// The params of one of the page's log messages (`notifications/message`): every string but
    /// the `level`, `data` however nested, `logger` and `_meta` too.
    pub fn in_log(&self, params: &mut Map<String, Value>) -> usize {
        params
            .iter_mut()
            .filter(|(key, _)| key.as_str() != "level")
            .map(|(_, value)| self.replace_in_value(value))
            .sum()
    }

    /// One of the page's progress reports: its message (its token is the bridge's own).
    pub fn in_progress(&self, progress: &mut ProgressParams) -> usize {
        progress
            .message
            .as_mut()
            .map_or(0, |message| self.replace_in(message))
    }

    /// The requests of one of the page's rounds (`inputRequests`: key → `{method, params}`): every
    /// string of their params, however deep; the content blocks of a sampling request's messages
    /// as in a result (their binary data left alone).
    pub fn in_round(&self, requests: &mut Map<String, Value>) -> usize {
        let mut count = 0;
        for request in requests.values_mut() {
            let sampling = request.get("method").and_then(Value::as_str)
                == Some(method::SAMPLING_CREATE_MESSAGE);
            let Some(Value::Object(params)) = request.get_mut("params") else {
                continue;
            };
            for (key, value) in params.iter_mut() {
                count += match (sampling, key.as_str(), value) {
                    (true, "messages", Value::Array(messages)) => messages
                        .iter_mut()
                        .map(|message| self.in_sampling_message(message))
                        .sum(),
                    (_, _, value) => self.replace_in_value(value),
                };
            }
        }
        count
    }

    /// `{role, content}`, the content one block or a list of them.
    fn in_sampling_message(&self, message: &mut Value) -> usize {
        let Value::Object(message) = message else {
            return self.replace_in_value(message);
        };
        let mut count = 0;
        for (key, value) in message.iter_mut() {
            count += match (key.as_str(), value) {
                ("content", Value::Object(block)) => self.in_block(block),
                ("content", Value::Array(blocks)) => blocks
                    .iter_mut()
                    .map(|block| match block {
                        Value::Object(block) => self.in_block(block),
                        other => self.replace_in_value(other),
                    })
                    .sum(),
                (_, value) => self.replace_in_value(value),
            };
        }
        count
    }

    /// A JSON-RPC error the page ended the call with, which the agent gets as one: its message
    /// and every string of its data.
    pub fn in_error(&self, error: &mut RpcError) -> usize {
        let data = error.data.as_mut().map_or(0, |d| self.replace_in_value(d));
        self.replace_in(&mut error.message) + data
    }

    /// The page's answer to a served request (SPEC §11: `method`'s result), before an agent reads
    /// it. `resources/read`: every string of each of its `contents` (keys too) and a `blob`
    /// ([`Self::in_blob`]); `prompts/get`: each message's content block as a result's block is
    /// (an embedded resource's `blob` as a read's), every other string (the `description`, the
    /// `_meta`); anything else (a completion's values): every string.
    pub fn in_answer(&self, method: &str, answer: &mut Value) -> usize {
        let Value::Object(fields) = answer else {
            return self.replace_in_value(answer);
        };
        let mut count = 0;
        for (key, value) in fields.iter_mut() {
            count += match (method, key.as_str(), value) {
                (served::RESOURCES_READ, "contents", Value::Array(contents)) => contents
                    .iter_mut()
                    .map(|content| match content {
                        Value::Object(content) => self.in_resource(content),
                        other => self.replace_in_value(other),
                    })
                    .sum(),
                (served::PROMPTS_GET, "messages", Value::Array(messages)) => messages
                    .iter_mut()
                    .map(|message| self.in_prompt_message(message))
                    .sum(),
                (_, _, value) => self.replace_in_value(value),
            };
        }
        count
    }

    /// A prompt's message `{role, content}`: the content block as a result's, an embedded
    /// resource's `blob` as a read's.
    fn in_prompt_message(&self, message: &mut Value) -> usize {
        let mut count = self.in_sampling_message(message);
        let resource = message
            .get_mut("content")
            .filter(|block| block.get("type").and_then(Value::as_str) == Some("resource"))
            .and_then(|block| block.get_mut("resource"))
            .and_then(Value::as_object_mut);
        if let Some(resource) = resource {
            count += self.in_blob(resource);
        }
        count
    }

    /// One resource's contents (`{uri, mimeType?, text | blob}`): every string but the `blob`,
    /// keys too; then the `blob` ([`Self::in_blob`]).
    fn in_resource(&self, content: &mut Map<String, Value>) -> usize {
        let blob = content.remove("blob");
        let mut whole = Value::Object(std::mem::take(content));
        let mut count = self.replace_in_value(&mut whole);
        if let Value::Object(redacted) = whole {
            *content = redacted;
        }
        if let Some(blob) = blob {
            content.insert("blob".into(), blob);
            count += self.in_blob(content);
        }
        count
    }

    /// A resource's `blob`, which the bridge cannot read as it is: decoded (base64), UTF-8 text is
    /// redacted and encoded again; binary data is withheld — the contents become `{uri, mimeType:
    /// "text/plain", text: "<replacement> (binary data withheld by the bridge's policy)"}` (the
    /// bridge cannot tell what it holds: fail closed); a `blob` that is not base64 is text (a page
    /// may write anything there).
    fn in_blob(&self, resource: &mut Map<String, Value>) -> usize {
        use base64::Engine as _;
        let Some(Value::String(blob)) = resource.get_mut("blob") else {
            return 0;
        };
        let engines = [
            &base64::engine::general_purpose::STANDARD,
            &base64::engine::general_purpose::STANDARD_NO_PAD,
        ];
        let Some(bytes) = engines.iter().find_map(|e| e.decode(blob.as_bytes()).ok()) else {
            return self.replace_in(blob);
        };
        match String::from_utf8(bytes) {
            Ok(mut text) => {
                let count = self.replace_in(&mut text);
                if count > 0 {
                    *blob = base64::engine::general_purpose::STANDARD.encode(text);
                }
                count
            }
            Err(_) => {
                resource.remove("blob");
                resource.insert("mimeType".into(), "text/plain".into());
                resource.insert(
                    "text".into(),
                    format!(
                        "{} (binary data withheld by the bridge's policy)",
                        self.replacement
                    )
                    .into(),
                );
                1
            }
        }
    }

    /// Every string inside `value`, however deep, its object keys too.
    fn replace_in_value(&self, value: &mut Value) -> usize {
        visit_strings(value, &mut |text| self.replace_in(text))
    }

    /// Replaces the matches in one text; how many there were.
    pub fn replace_in(&self, text: &mut String) -> usize {
        let mut spans: Vec<Range<usize>> = Vec::new();
        for detector in &self.detectors {
            spans.extend(detector.spans(text));
        }
        for pattern in &self.patterns {
            spans.extend(
                pattern
                    .find_iter(text)
                    .map(|m| m.range())
                    .filter(|r| !r.is_empty()),
            );
        }
        if spans.is_empty() {
            return 0;
        }
        let merged = merge(spans);
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for span in &merged {
            out.push_str(&text[at..span.start]);
            out.push_str(&self.replacement);
            at = span.end;
        }
        out.push_str(&text[at..]);
        *text = out;
        merged.len()
    }

    /// Whether `text` holds anything this rule replaces.
    pub fn finds(&self, text: &str) -> bool {
        self.detectors.iter().any(|d| d.finds(text))
            || self.patterns.iter().any(|p| p.is_match(text))
    }
}

/// Overlapping spans (a card number inside a phone-looking run) become one.
fn merge(mut spans: Vec<Range<usize>>) -> Vec<Range<usize>> {
    spans.sort_by_key(|span| span.start);
    let mut merged: Vec<Range<usize>> = Vec::with_capacity(spans.len());
    for span in spans {
        match merged.last_mut() {
            Some(last) if span.start < last.end => last.end = last.end.max(span.end),
            _ => merged.push(span),
        }
    }
    merged
}

/// The default replacement names what was removed.
pub fn default_replacement(detectors: &[Detector]) -> Cow<'static, str> {
    match detectors {
        [one] => Cow::Owned(format!("[redacted {}]", one.name())),
        _ => Cow::Borrowed("[redacted]"),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn all() -> Redaction {
        Redaction {
            detectors: Detector::ALL.to_vec(),
            patterns: vec![Regex::new("secret-[a-z]+").unwrap()],
            replacement: "[x]".into(),
        }
    }

    #[test]
    fn every_text_and_every_nested_string_is_redacted_binary_data_is_not() {
        let mut result: CallToolResult = serde_json::from_value(json!({
            "content": [
                {"type": "text", "text": "mail ada@example.com or call +44 20 7946 0958"},
                {"type": "text", "text": "card 4111 1111 1111 1111", "annotations": {"priority": 1}},
                {"type": "resource", "resource": {"uri": "cart:1", "text": "iban DE89 3704 0044 0532 0130 00"}},
                {"type": "image", "data": "QUJD", "mimeType": "image/png"},
            ],
            "structuredContent": {
                "owner": {"contact": ["x", {"deep": [["secret-abc and bob@example.org"]]}]},
                "count": 4111111111111111u64,
            },
        }))
        .unwrap();
        let replaced = all().apply(&mut result);
        let text = serde_json::to_value(&result).unwrap();
        assert_eq!(replaced, 6, "{text}");
        assert_eq!(text["content"][0]["text"], "mail [x] or call [x]");
        assert_eq!(text["content"][1]["text"], "card [x]");
        assert_eq!(text["content"][2]["resource"]["text"], "iban [x]");
        assert_eq!(text["content"][3]["data"], "QUJD");
        assert_eq!(
            text["structuredContent"]["owner"]["contact"][1]["deep"][0][0],
            "[x] and [x]"
        );
        // Numbers are data, not text: left alone (a condition can block on them).
        assert_eq!(text["structuredContent"]["count"], 4111111111111111u64);
    }

    /// The result's `_meta` keys are text an agent reads, as its values are.
    #[test]
    fn keys_of_the_results_meta_are_redacted() {
        let mut result: CallToolResult = serde_json::from_value(json!({
            "content": [],
            "_meta": {"ada@example.com": 3, "seen": {"bob@example.org": true}},
        }))
        .unwrap();
        assert_eq!(all().apply(&mut result), 2);
        let meta = serde_json::to_value(&result).unwrap()["_meta"].clone();
        assert_eq!(meta, json!({"[x]": 3, "seen": {"[x]": true}}));
    }

    /// A block of a kind the core's table does not know is all text (fail closed); the result's
    /// `_meta` and a block's `annotations` and `_meta` are read too.
    #[test]
    fn unknown_block_kinds_and_meta_are_redacted_as_text() {
        let mut result: CallToolResult = serde_json::from_value(json!({
            "content": [
                {"type": "video", "data": "clip of ada@example.com", "captions": [{"t": "4111111111111111"}]},
                {"type": "image", "data": "QUJD", "mimeType": "image/png", "_meta": {"alt": "ada@example.com"}},
                {"type": "resource_link", "uri": "mailto:ada@example.com", "name": "secret-abc"},
                {"type": "resource", "resource": {"uri": "blob:1", "blob": "QUJD"},
                 "annotations": {"audience": ["bob@example.org"]}},
            ],
            "_meta": {"trace": {"who": ["ada@example.com"]}, "count": 4111111111111111u64},
        }))
        .unwrap();
        let replaced = all().apply(&mut result);
        let text = serde_json::to_value(&result).unwrap();
        assert_eq!(replaced, 7, "{text}");
        assert_eq!(text["content"][0]["data"], "clip of [x]");
        assert_eq!(text["content"][0]["captions"][0]["t"], "[x]");
        assert_eq!(text["content"][1]["_meta"]["alt"], "[x]");
        assert_eq!(text["content"][1]["data"], "QUJD");
        assert_eq!(text["content"][2]["uri"], "mailto:[x]");
        assert_eq!(text["content"][2]["name"], "[x]");
        assert_eq!(text["content"][3]["resource"]["blob"], "QUJD");
        assert_eq!(text["content"][3]["annotations"]["audience"][0], "[x]");
        assert_eq!(text["_meta"]["trace"]["who"][0], "[x]");
        assert_eq!(text["_meta"]["count"], 4111111111111111u64);
    }

    #[test]
    fn log_progress_rounds_and_page_errors_are_redacted() {
        let rule = all();
        let mut log = json!({"level": "info", "logger": "ada@example.com",
            "data": {"msg": ["looking up ada@example.com", {"card": "4111 1111 1111 1111"}],
                "seen": {"dee@example.com": 3}},
            "_meta": {"who": "bob@example.org"}});
        let Value::Object(log) = &mut log else {
            unreachable!()
        };
        assert_eq!(rule.in_log(log), 5);
        assert_eq!(
            Value::Object(log.clone()),
            json!({"level": "info", "logger": "[x]",
                "data": {"msg": ["looking up [x]", {"card": "[x]"}], "seen": {"[x]": 3}},
                "_meta": {"who": "[x]"}}),
            "keys are text too"
        );

        let mut progress = ProgressParams {
            progress_token: json!("4111111111111111"),
            progress: 1.0,
            total: None,
            message: Some("card 4111111111111111 found".into()),
        };
        assert_eq!(rule.in_progress(&mut progress), 1);
        assert_eq!(progress.message.as_deref(), Some("card [x] found"));
        assert_eq!(
            progress.progress_token, "4111111111111111",
            "the bridge's own"
        );

        let mut requests = json!({
            "ask": {"method": "elicitation/create", "params": {"message": "Is ada@example.com yours?",
                "requestedSchema": {"type": "object", "properties": {"card": {"type": "string",
                    "description": "not 4111111111111111", "enum": ["secret-abc"]}}}}},
            "think": {"method": "sampling/createMessage", "params": {
                "systemPrompt": "mail bob@example.org",
                "messages": [
                    {"role": "user", "content": {"type": "text", "text": "card 4111111111111111"}},
                    {"role": "user", "content": [{"type": "image", "data": "QUJD", "mimeType": "image/png"},
                        {"type": "audio", "data": "secret-abc", "mimeType": "audio/wav"}]},
                ],
                "maxTokens": 10}},
        });
        let Value::Object(requests) = &mut requests else {
            unreachable!()
        };
        assert_eq!(rule.in_round(requests), 6);
        let requests = Value::Object(requests.clone());
        let ask = &requests["ask"]["params"];
        assert_eq!(ask["message"], "Is [x] yours?");
        assert_eq!(
            ask["requestedSchema"]["properties"]["card"],
            json!({"type": "string", "description": "not [x]", "enum": ["[x]"]})
        );
        let think = &requests["think"]["params"];
        assert_eq!(think["systemPrompt"], "mail [x]");
        assert_eq!(think["messages"][0]["content"]["text"], "card [x]");
        assert_eq!(think["messages"][1]["content"][0]["data"], "QUJD");
        assert_eq!(
            think["messages"][1]["content"][1]["data"], "[x]",
            "binary data that is not base64 is text (a page may write anything there)"
        );
        assert_eq!(requests["think"]["method"], "sampling/createMessage");

        let mut error = RpcError::new(-32021, "ada@example.com lacks sampling");
        error.data = Some(json!({"requiredCapabilities": {"sampling": {}}, "why": "secret-abc"}));
        assert_eq!(rule.in_error(&mut error), 2);
        assert_eq!(error.message, "[x] lacks sampling");
        assert_eq!(error.data.unwrap()["why"], "[x]");
    }

    #[test]
    fn overlapping_matches_are_replaced_once() {
        let mut text = "4111 1111 1111 1111".to_owned();
        assert_eq!(all().replace_in(&mut text), 1);
        assert_eq!(text, "[x]");
        assert_eq!(default_replacement(&[Detector::Email]), "[redacted email]");
    }
}
