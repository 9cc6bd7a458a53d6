//! A `redact` rule's replacement of personal data in a call's result, before any agent sees it:
//! in every text the result carries (`content` text blocks, embedded resources' `text`) and every
//! string of `structuredContent`, however deep. Binary data (images, audio, blobs) is left alone.

use std::borrow::Cow;
use std::ops::Range;

use client_tools_core::protocol::{CallToolResult, Content};
use regex::Regex;
use serde_json::Value;

use super::detectors::Detector;

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
            match block {
                Content::Text(text) => count += self.replace_in(&mut text.text),
                Content::Block(block) => {
                    if let Some(Value::String(text)) = block.get_mut("text") {
                        count += self.replace_in(text);
                    }
                    if let Some(Value::Object(resource)) = block.get_mut("resource") {
                        if let Some(Value::String(text)) = resource.get_mut("text") {
                            count += self.replace_in(text);
                        }
                    }
                }
            }
        }
        if let Some(structured) = &mut result.structured_content {
            count += self.replace_in_value(structured);
        }
        count
    }

    fn replace_in_value(&self, value: &mut Value) -> usize {
        match value {
            Value::String(text) => self.replace_in(text),
            Value::Array(items) => items.iter_mut().map(|v| self.replace_in_value(v)).sum(),
            Value::Object(object) => object.values_mut().map(|v| self.replace_in_value(v)).sum(),
            _ => 0,
        }
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

    #[test]
    fn overlapping_matches_are_replaced_once() {
        let mut text = "4111 1111 1111 1111".to_owned();
        assert_eq!(all().replace_in(&mut text), 1);
        assert_eq!(text, "[x]");
        assert_eq!(default_replacement(&[Detector::Email]), "[redacted email]");
    }
}
