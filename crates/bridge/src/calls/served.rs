//! What an agent asks a page besides calling its tools (SPEC §11 "Resources, prompts,
//! completion"): the page answers `resources/*`, `prompts/*` and `completion/complete` as an MCP
//! server does. Here, without any IO: the requests as the bridge sends them ([`ServedRequest`],
//! checked once for every route), what each is about ([`Subject`]: the allow-list and the policy
//! read it), the page's answers checked before an agent gets them ([`check_answer`]), and which
//! resource template a URI belongs to ([`template_matches`]).

use client_tools_core::protocol::{code, RpcError};
use serde_json::{json, Map, Value};

use crate::limits::{MAX_COMPLETION_VALUES, MAX_LISTED_ENTRIES, MAX_URI_BYTES};

/// The methods an agent asks a page, and the page's notifications about them (MCP's names).
pub mod method {
    pub const RESOURCES_LIST: &str = "resources/list";
    pub const RESOURCE_TEMPLATES_LIST: &str = "resources/templates/list";
    pub const RESOURCES_READ: &str = "resources/read";
    pub const RESOURCES_SUBSCRIBE: &str = "resources/subscribe";
    pub const RESOURCES_UNSUBSCRIBE: &str = "resources/unsubscribe";
    pub const PROMPTS_LIST: &str = "prompts/list";
    pub const PROMPTS_GET: &str = "prompts/get";
    pub const COMPLETION_COMPLETE: &str = "completion/complete";
    pub const RESOURCES_UPDATED: &str = "notifications/resources/updated";
    pub const RESOURCES_LIST_CHANGED: &str = "notifications/resources/list_changed";
    pub const PROMPTS_LIST_CHANGED: &str = "notifications/prompts/list_changed";
}

/// An agent's request the bridge refuses before the page sees it (`-32602`).
pub fn invalid_params(message: impl Into<String>) -> RpcError {
    RpcError::new(code::INVALID_PARAMS, message)
}

/// At most 80 characters of what an agent or a page sent, for an error message.
fn quoted(text: &str) -> String {
    let mut chars = text.chars();
    let short: String = chars.by_ref().take(80).collect();
    match chars.next() {
        Some(_) => format!("'{short}…'"),
        None => format!("'{short}'"),
    }
}

/// What a served request is about: the allow-list (by name) and the operator's policy (prompts by
/// name, resources by URI) read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subject {
    /// One of the lists: each entry is filtered instead.
    List,
    /// A prompt, by name (`prompts/get`; a completion of one of its arguments).
    Prompt(String),
    /// A resource, by URI (`resources/read`, `resources/subscribe`, `resources/unsubscribe`); a
    /// completion of a resource template's variable names the template.
    Resource(String),
}

/// A request for the page, checked: its method, the params it is sent with (no `_meta` of the
/// agent's: the bridge sets its own when it sends it), and what it is about.
#[derive(Debug, Clone, PartialEq)]
pub struct ServedRequest {
    method: &'static str,
    params: Map<String, Value>,
    subject: Subject,
}

impl ServedRequest {
    /// One of the lists: `resources/list`, `resources/templates/list`, `prompts/list` (one page:
    /// the page answers them whole, without a cursor).
    pub fn list(method: &'static str) -> Self {
        Self {
            method,
            params: Map::new(),
            subject: Subject::List,
        }
    }

    /// `resources/read {uri}`, the URI checked ([`check_uri`]).
    pub fn read(uri: &str) -> Result<Self, RpcError> {
        Self::about_uri(method::RESOURCES_READ, uri)
    }

    /// `resources/subscribe {uri}`.
    pub fn subscribe(uri: &str) -> Result<Self, RpcError> {
        Self::about_uri(method::RESOURCES_SUBSCRIBE, uri)
    }

    /// `resources/unsubscribe {uri}`.
    pub fn unsubscribe(uri: &str) -> Result<Self, RpcError> {
        Self::about_uri(method::RESOURCES_UNSUBSCRIBE, uri)
    }

    fn about_uri(method: &'static str, uri: &str) -> Result<Self, RpcError> {
        check_uri(uri)?;
        let mut params = Map::new();
        params.insert("uri".into(), uri.into());
        Ok(Self {
            method,
            params,
            subject: Subject::Resource(uri.to_owned()),
        })
    }

    /// `prompts/get {name, arguments?}`. The page checks the arguments (a missing required one,
    /// an unknown one: its `-32602` reaches the agent as it is).
    pub fn get_prompt(name: &str, arguments: Option<Map<String, Value>>) -> Self {
        let mut params = Map::new();
        params.insert("name".into(), name.into());
        if let Some(arguments) = arguments {
            params.insert("arguments".into(), Value::Object(arguments));
        }
        Self {
            method: method::PROMPTS_GET,
            params,
            subject: Subject::Prompt(name.to_owned()),
        }
    }

    /// `completion/complete {ref, argument, context?}` as the agent sent it (its `_meta` left
    /// out): `ref` a `ref/prompt` with a `name` or a `ref/resource` with a `uri`, `argument`
    /// `{name, value}` strings.
    pub fn complete(mut params: Map<String, Value>) -> Result<Self, RpcError> {
        params.remove("_meta");
        let reference = params.get("ref").and_then(Value::as_object);
        let kind = reference
            .and_then(|r| r.get("type"))
            .and_then(Value::as_str);
        let subject =
            match (kind, reference) {
                (Some("ref/prompt"), Some(r)) => match r.get("name").and_then(Value::as_str) {
                    Some(name) => Subject::Prompt(name.to_owned()),
                    None => return Err(invalid_params("a ref/prompt needs 'name', a string")),
                },
                (Some("ref/resource"), Some(r)) => match r.get("uri").and_then(Value::as_str) {
                    Some(uri) if uri.len() <= MAX_URI_BYTES => Subject::Resource(uri.to_owned()),
                    Some(_) => return Err(uri_too_long()),
                    None => return Err(invalid_params("a ref/resource needs 'uri', a string")),
                },
                _ => return Err(invalid_params(
                    "'ref' must be {type: \"ref/prompt\", name} or {type: \"ref/resource\", uri}",
                )),
            };
        let argument = params.get("argument").and_then(Value::as_object);
        let named = argument.is_some_and(|a| {
            a.get("name").is_some_and(Value::is_string)
                && a.get("value").is_some_and(Value::is_string)
        });
        if !named {
            return Err(invalid_params(
                "'argument' must be {name, value}, both strings",
            ));
        }
        Ok(Self {
            method: method::COMPLETION_COMPLETE,
            params,
            subject,
        })
    }

    /// The same request about the prompt `name` (what the policy decides on: a prompt by the
    /// name the page defined it by).
    pub(crate) fn about_prompt(&self, name: String) -> Self {
        Self {
            subject: Subject::Prompt(name),
            ..self.clone()
        }
    }

    pub fn method(&self) -> &'static str {
        self.method
    }

    pub fn subject(&self) -> &Subject {
        &self.subject
    }

    pub fn params(&self) -> &Map<String, Value> {
        &self.params
    }

    pub(crate) fn into_params(self) -> Map<String, Value> {
        self.params
    }
}

fn uri_too_long() -> RpcError {
    invalid_params(format!(
        "the resource URI is longer than {MAX_URI_BYTES} bytes"
    ))
}

/// A URI an agent may ask a page for: at most [`MAX_URI_BYTES`], a scheme (`name:`), no control
/// characters and no `..` path segment (also percent-encoded). A scheme the page does not serve is
/// the page's to refuse (`-32002`).
pub fn check_uri(uri: &str) -> Result<(), RpcError> {
    let refuse = |why: &str| {
        let mut error = invalid_params(format!("invalid resource URI {}: {why}", quoted(uri)));
        error.data = Some(json!({ "uri": uri }));
        Err(error)
    };
    if uri.len() > MAX_URI_BYTES {
        return Err(uri_too_long());
    }
    let scheme = uri.split_once(':').map(|(scheme, _)| scheme);
    let scheme_ok = scheme.is_some_and(|s| {
        s.starts_with(|c: char| c.is_ascii_alphabetic())
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    });
    if !scheme_ok {
        return refuse("it needs a scheme (such as 'app:' or 'https:')");
    }
    if uri.chars().any(char::is_control) {
        return refuse("it has control characters");
    }
    // The raw path, and the whole URI with every percent-encoding decoded (`%2e%2E`, `..%2F..`,
    // `%252e`: the page decodes a template's variables, so a `..` hidden by encoding is one).
    let raw_path = uri.split(['?', '#']).next().unwrap_or_default();
    let decoded = percent_decoded(uri);
    let dot_dot = |text: &str| text.split(['/', '\\']).any(|segment| segment == "..");
    if dot_dot(raw_path) || dot_dot(&decoded) {
        return refuse("'..' segments are not allowed");
    }
    Ok(())
}

/// `uri` with every percent-encoding decoded, again until none is left (`%2573` → `%73` → `s`;
/// invalid UTF-8 replaced): what the policy and the allow-list also match a resource rule against,
/// since the page percent-decodes its templates' variables.
pub fn percent_decoded(uri: &str) -> std::borrow::Cow<'_, str> {
    let mut decoded = std::borrow::Cow::Borrowed(uri);
    // Each pass that changes the text makes it shorter: this ends.
    while decoded.contains('%') {
        let next = percent_encoding::percent_decode_str(&decoded)
            .decode_utf8_lossy()
            .into_owned();
        if next == *decoded {
            break;
        }
        decoded = std::borrow::Cow::Owned(next);
    }
    decoded
}

/// Whether `uri` is one `template` (RFC 6570, as MCP's resource templates use it) expands to:
/// `{var}` matches one or more characters without `/`, `?` or `#`; `{+var}` and `{#var}` one or
/// more of any; other operators (`{/var}`, `{?var}`, …) match what they may expand to, loosely
/// (any run without `#`, maybe empty). Literal text must match exactly.
///
/// Compiled to a regular expression (the `regex` crate: linear in the URI, whatever the
/// template — a page's `x:{+a}{+b}{+c}{+d}!` cannot make it backtrack), as the page matches.
pub fn template_matches(template: &str, uri: &str) -> bool {
    let mut pattern = String::from("^");
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else {
            break;
        };
        pattern.push_str(&regex::escape(&rest[..open]));
        let expression = &rest[open + 1..open + close];
        pattern.push_str(match expression.chars().next() {
            Some('+' | '#') => "(?s:.+?)",
            Some('/' | '?' | '&' | '.' | ';') => "[^#]*?",
            _ => "[^/?#]+?",
        });
        rest = &rest[open + close + 1..];
    }
    pattern.push_str(&regex::escape(rest));
    pattern.push('$');
    regex::RegexBuilder::new(&pattern)
        .size_limit(1 << 20)
        .build()
        .is_ok_and(|compiled| compiled.is_match(uri))
}

/// The page's answer to `request`, checked before an agent gets it: the shape its method's result
/// has (a malformed one is `-32603` saying what is wrong); a completion's values cut to
/// [`MAX_COMPLETION_VALUES`] (then `hasMore`); a list's entries to [`MAX_LISTED_ENTRIES`].
pub fn check_answer(method: &str, answer: Value) -> Result<Value, RpcError> {
    let malformed = |why: String| {
        RpcError::new(
            code::INTERNAL_ERROR,
            format!("the page sent a malformed {method} result: {why}"),
        )
    };
    let Value::Object(mut answer) = answer else {
        return Err(malformed("not an object".into()));
    };
    match method {
        method::RESOURCES_LIST | method::RESOURCE_TEMPLATES_LIST | method::PROMPTS_LIST => {
            let field = list_field(method);
            let key = match method {
                method::RESOURCE_TEMPLATES_LIST => "uriTemplate",
                method::RESOURCES_LIST => "uri",
                _ => "name",
            };
            let Some(Value::Array(entries)) = answer.get_mut(field) else {
                return Err(malformed(format!("'{field}' must be an array")));
            };
            if let Some(bad) = entries.iter().position(|entry| {
                !(entry.get(key).is_some_and(Value::is_string)
                    && entry.get("name").is_some_and(Value::is_string))
            }) {
                return Err(malformed(format!(
                    "{field}[{bad}] needs '{key}' and 'name', strings"
                )));
            }
            if entries.len() > MAX_LISTED_ENTRIES {
                tracing::warn!(
                    method,
                    count = entries.len(),
                    "a page listed more entries than the bridge keeps"
                );
                entries.truncate(MAX_LISTED_ENTRIES);
            }
        }
        method::RESOURCES_READ => {
            let Some(Value::Array(contents)) = answer.get("contents") else {
                return Err(malformed("'contents' must be an array".into()));
            };
            for (index, content) in contents.iter().enumerate() {
                let has_uri = content.get("uri").is_some_and(Value::is_string);
                let text = content.get("text").is_some_and(Value::is_string);
                let blob = content.get("blob").is_some_and(Value::is_string);
                if !has_uri || text == blob {
                    return Err(malformed(format!(
                        "contents[{index}] must be {{uri, text}} or {{uri, blob}}"
                    )));
                }
            }
        }
        method::PROMPTS_GET => {
            let Some(Value::Array(messages)) = answer.get("messages") else {
                return Err(malformed("'messages' must be an array".into()));
            };
            if let Some(bad) = messages.iter().position(|message| {
                !(message.get("role").is_some_and(Value::is_string)
                    && message.get("content").is_some_and(Value::is_object))
            }) {
                return Err(malformed(format!(
                    "messages[{bad}] must be {{role, content}}"
                )));
            }
        }
        method::COMPLETION_COMPLETE => {
            let Some(Value::Object(completion)) = answer.get_mut("completion") else {
                return Err(malformed("'completion' must be an object".into()));
            };
            let Some(Value::Array(values)) = completion.get_mut("values") else {
                return Err(malformed("'completion.values' must be an array".into()));
            };
            if !values.iter().all(Value::is_string) {
                return Err(malformed("'completion.values' must be strings".into()));
            }
            let given = values.len();
            if given > MAX_COMPLETION_VALUES {
                values.truncate(MAX_COMPLETION_VALUES);
                completion.insert("hasMore".into(), true.into());
            }
            // `total` is at least the number of values the page gave.
            let total = completion.get("total").and_then(Value::as_u64);
            let kept_total = given > MAX_COMPLETION_VALUES || completion.contains_key("total");
            if kept_total && total.is_none_or(|total| total < given as u64) {
                completion.insert("total".into(), given.into());
            }
        }
        _ => {}
    }
    Ok(Value::Object(answer))
}

/// The name an entry of a list is allowed by: a prompt's original name (the page lists it with
/// `_meta["clienttools/originalName"]`, its `name` normalized as a tool's is), else its `name`.
pub fn entry_name(entry: &Value) -> &str {
    let original = entry
        .get("_meta")
        .and_then(|m| m.get(client_tools_core::protocol::meta::ORIGINAL_NAME))
        .and_then(Value::as_str);
    original
        .or_else(|| entry.get("name").and_then(Value::as_str))
        .unwrap_or_default()
}

/// The field of a list's answer that holds its entries.
pub fn list_field(method: &str) -> &'static str {
    match method {
        method::RESOURCE_TEMPLATES_LIST => "resourceTemplates",
        method::PROMPTS_LIST => "prompts",
        _ => "resources",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_need_a_scheme_and_no_dot_dot_segment() {
        for good in [
            "app://notes/1",
            "test://static-text",
            "file:///home/a.txt",
            "https://x.y/a..b",
            "urn:isbn:0451450523",
        ] {
            assert!(check_uri(good).is_ok(), "{good}");
        }
        for (bad, why) in [
            ("no-scheme", "scheme"),
            ("1app://x", "scheme"),
            ("app://notes/../secrets", "'..'"),
            ("app://notes/%2E%2E/secrets", "'..'"),
            ("app://notes/..", "'..'"),
            ("app://notes/..%2F..%2Fsecrets", "'..'"),
            ("app://notes/%2e%2E/secrets", "'..'"),
            ("app://notes%2F%2e%2e%2Fsecrets", "'..'"),
            ("app://notes/%252e%252e/secrets", "'..'"),
            ("app://notes/x%5C..%5Csecrets", "'..'"),
            ("app://a\u{0}b", "control"),
        ] {
            let error = check_uri(bad).unwrap_err();
            assert_eq!(error.code, code::INVALID_PARAMS);
            assert!(error.message.contains(why), "{bad}: {}", error.message);
            assert_eq!(error.data, Some(json!({ "uri": bad })));
        }
        let long = format!("app://{}", "a".repeat(MAX_URI_BYTES));
        assert!(check_uri(&long)
            .unwrap_err()
            .message
            .contains("longer than"));
    }

    #[test]
    fn templates_match_the_uris_they_expand_to() {
        assert!(template_matches(
            "test://template/{id}/data",
            "test://template/7/data"
        ));
        assert!(!template_matches(
            "test://template/{id}/data",
            "test://template/7/x/data"
        ));
        assert!(!template_matches(
            "test://template/{id}/data",
            "test://template//data"
        ));
        assert!(template_matches("file:///{+path}", "file:///a/b/c.txt"));
        assert!(template_matches("app://items{?page}", "app://items"));
        assert!(template_matches("app://items{?page}", "app://items?page=2"));
        assert!(!template_matches("app://notes/{id}", "other://notes/1"));
        assert!(template_matches("app://static", "app://static"));
        assert!(template_matches("app://a.b/{id}", "app://a.b/1"));
        assert!(!template_matches("app://a.b/{id}", "app://aXb/1"));
    }

    #[test]
    fn a_hostile_template_does_not_backtrack() {
        // Backtracking took minutes here (~n^4 steps): the test would not end. No timed assertion
        // (these machines are noisy): the regex crate's matching is linear by construction.
        let uri = format!("x:{}", "a".repeat(MAX_URI_BYTES - 2));
        for template in [
            "x:{+a}{+b}{+c}{+d}!",
            "x:{a}{b}{c}{d}{e}{f}!",
            "x:{+a}a{+b}a{+c}a{+d}!",
        ] {
            assert!(!template_matches(template, &uri), "{template}");
        }
        assert!(template_matches("x:{+a}{+b}{+c}{+d}", &uri));
    }

    #[test]
    fn completions_are_cut_to_the_mcp_bound_and_say_there_is_more() {
        let values: Vec<String> = (0..150).map(|n| n.to_string()).collect();
        let answer = json!({"completion": {"values": values}});
        let checked = check_answer(method::COMPLETION_COMPLETE, answer).unwrap();
        let completion = &checked["completion"];
        assert_eq!(
            completion["values"].as_array().unwrap().len(),
            MAX_COMPLETION_VALUES
        );
        assert_eq!(
            (completion["total"].clone(), completion["hasMore"].clone()),
            (json!(150), json!(true))
        );
        // A page's `total` below the values it gave is raised to their number.
        let values: Vec<String> = (0..150).map(|n| n.to_string()).collect();
        let answer = json!({"completion": {"values": values, "total": 3}});
        let checked = check_answer(method::COMPLETION_COMPLETE, answer).unwrap();
        assert_eq!(checked["completion"]["total"], json!(150));
        let answer = json!({"completion": {"values": ["a", "b"], "total": 1}});
        let checked = check_answer(method::COMPLETION_COMPLETE, answer).unwrap();
        assert_eq!(checked["completion"]["total"], json!(2));
        let answer = json!({"completion": {"values": ["a", "b"], "total": 9}});
        let checked = check_answer(method::COMPLETION_COMPLETE, answer).unwrap();
        assert_eq!(checked["completion"]["total"], json!(9));
        let few = json!({"completion": {"values": ["a"], "hasMore": false}});
        assert_eq!(
            check_answer(method::COMPLETION_COMPLETE, few.clone()).unwrap(),
            few
        );
    }

    #[test]
    fn malformed_answers_are_internal_errors_saying_what_is_wrong() {
        for (method, answer, why) in [
            (
                method::RESOURCES_READ,
                json!({"contents": [{"uri": "a:b"}]}),
                "contents[0]",
            ),
            (method::RESOURCES_READ, json!({}), "'contents'"),
            (
                method::PROMPTS_GET,
                json!({"messages": [{"role": "user"}]}),
                "messages[0]",
            ),
            (
                method::PROMPTS_LIST,
                json!({"prompts": [{"title": "x"}]}),
                "prompts[0]",
            ),
            (
                method::COMPLETION_COMPLETE,
                json!({"completion": {"values": [1]}}),
                "strings",
            ),
            (method::RESOURCES_LIST, json!([]), "not an object"),
        ] {
            let error = check_answer(method, answer).unwrap_err();
            assert_eq!(error.code, code::INTERNAL_ERROR);
            assert!(error.message.contains(why), "{method}: {}", error.message);
        }
        let read =
            json!({"contents": [{"uri": "a:b", "text": "t"}, {"uri": "a:c", "blob": "AA=="}]});
        assert_eq!(
            check_answer(method::RESOURCES_READ, read.clone()).unwrap(),
            read
        );
    }

    #[test]
    fn completion_requests_name_a_prompt_or_a_resource_and_an_argument() {
        let params = |value: Value| value.as_object().cloned().unwrap();
        let prompt = ServedRequest::complete(params(json!({
            "ref": {"type": "ref/prompt", "name": "greet"},
            "argument": {"name": "who", "value": "Al"},
            "_meta": {"progressToken": 1}
        })))
        .unwrap();
        assert_eq!(prompt.subject(), &Subject::Prompt("greet".into()));
        assert!(!prompt.params().contains_key("_meta"));
        for bad in [
            json!({"ref": {"type": "ref/tool", "name": "x"}, "argument": {"name": "a", "value": ""}}),
            json!({"ref": {"type": "ref/prompt"}, "argument": {"name": "a", "value": ""}}),
            json!({"ref": {"type": "ref/resource", "uri": "a:b"}, "argument": {"name": "a"}}),
        ] {
            let error = ServedRequest::complete(params(bad)).unwrap_err();
            assert_eq!(error.code, code::INVALID_PARAMS);
        }
    }
}
