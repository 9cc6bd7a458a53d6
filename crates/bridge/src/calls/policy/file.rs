//! The policy file (`--policy FILE`): TOML (with comments) or JSON, one list of rules. Every field
//! is checked when the bridge starts — an unknown field, a condition that does not compile, a
//! field that does not belong to the rule's action — and the error names the rule.

use std::collections::HashSet;

use regex::Regex;
use serde::{Deserialize, Serialize};

use super::condition::{bounded_regex, BadPattern, Condition};
use super::detectors::Detector;
use super::limiter::Window;
use super::redact::{default_replacement, Redaction};
use crate::limits::{
    MAX_LIMIT_CALLS, MAX_LIMIT_WINDOW_SECONDS, MAX_PATTERNS_PER_RULE, MAX_POLICY_FILE_BYTES,
    MAX_RULES, MAX_RULE_ID_BYTES, MAX_RULE_TEXT_BYTES, MAX_TOOL_PATTERN_BYTES,
};

/// The file as written (TOML `[[rule]]` tables, or JSON `{"rule": [...]}`).
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct File {
    #[serde(default)]
    pub rule: Vec<RuleText>,
}

/// One rule as written.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RuleText {
    pub id: String,
    /// Original tool names; `*` matches any run of characters.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
    /// The page's prompts, by name (`prompts/get`, a completion of one of their arguments); `*`
    /// as in `tools`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prompts: Vec<String>,
    /// The page's resources, by URI (`resources/read`, `resources/subscribe`, a completion of a
    /// template's variable: its `uriTemplate`); `*` as in `tools`, across `/` too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<String>,
    pub action: ActionName,
    /// A CEL condition; absent: always.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<String>,
    /// `block` and `limit`: the error the agent gets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// `redact`: the detectors whose matches are replaced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redact: Option<Vec<String>>,
    /// `redact`: regular expressions whose matches are replaced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patterns: Option<Vec<String>>,
    /// `redact`: what replaces a match (default `[redacted <kind>]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replacement: Option<String>,
    /// `limit`: calls allowed per window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calls: Option<u32>,
    /// `limit`: the window, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_seconds: Option<u64>,
    /// `limit`: what is counted together — `"session"` (default: each page session) or `"user"`
    /// (all the tabs of the session's user, SPEC §13).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per: Option<Per>,
}

/// What a `limit` rule counts calls by.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Per {
    /// Each page session alone.
    #[default]
    Session,
    /// All the sessions of one user (a session without a user counts alone).
    User,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ActionName {
    Block,
    Confirm,
    Redact,
    Limit,
    Log,
}

impl ActionName {
    pub fn as_str(self) -> &'static str {
        match self {
            ActionName::Block => "block",
            ActionName::Confirm => "confirm",
            ActionName::Redact => "redact",
            ActionName::Limit => "limit",
            ActionName::Log => "log",
        }
    }
}

/// What a rule does when its condition holds.
#[derive(Debug)]
pub enum Action {
    Block {
        message: String,
    },
    Confirm,
    Redact(Redaction),
    Limit {
        window: Window,
        message: String,
        per: Per,
    },
    Log,
}

/// What a rule decides on: a tool call, or a request the page serves as an MCP server
/// (SPEC §11: a prompt by name, a resource by URI).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A tool, by its original name.
    Tool,
    /// A prompt, by name.
    Prompt,
    /// A resource, by URI (or a resource template, by its `uriTemplate`).
    Resource,
}

/// A tool, a prompt or a resource, by its name (a resource's: its URI).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target<'a> {
    pub kind: Kind,
    /// What a condition's `tool` reads: the tool's or the prompt's name, the resource's URI.
    pub name: &'a str,
    /// What a condition's `annotations` reads: a tool's (crate::calls::tool_annotations); `None`
    /// (read as `{}`) for a tool without any, a prompt, a resource.
    pub annotations: Option<&'a serde_json::Value>,
}

impl<'a> Target<'a> {
    /// A tool by its original name, without annotations.
    pub fn tool(name: &'a str) -> Self {
        Self::of(Kind::Tool, name)
    }

    /// A tool by its original name, with its annotations.
    pub fn annotated(name: &'a str, annotations: Option<&'a serde_json::Value>) -> Self {
        Self {
            annotations,
            ..Self::tool(name)
        }
    }

    /// A tool, a prompt or a resource (annotations are a tool's: see [`Self::annotated`]).
    pub fn of(kind: Kind, name: &'a str) -> Self {
        Self {
            kind,
            name,
            annotations: None,
        }
    }

    /// How the audit names it: a tool by its name, `prompt:<name>`, `resource:<uri>`.
    pub fn audited(self) -> std::borrow::Cow<'a, str> {
        match self.kind {
            Kind::Tool => self.name.into(),
            Kind::Prompt => format!("prompt:{}", self.name).into(),
            Kind::Resource => format!("resource:{}", self.name).into(),
        }
    }
}

impl<'a> From<&'a str> for Target<'a> {
    /// A tool by its original name, without annotations.
    fn from(name: &'a str) -> Self {
        Self::tool(name)
    }
}

/// A rule, checked and compiled.
#[derive(Debug)]
pub struct Rule {
    pub id: String,
    pub tools: Vec<String>,
    pub prompts: Vec<String>,
    pub resources: Vec<String>,
    pub when: Option<Condition>,
    pub action: Action,
    /// Decided once the call ran (`redact`, and `block`/`log` rules reading `result`).
    pub on_result: bool,
}

impl Rule {
    /// What a `limit` rule counts `target`'s calls under: a tool alone (as every tool it covers);
    /// a prompt or a resource with every other one its first matching pattern covers
    /// (`resource:app://notes/*`: URIs and names are the agent's to choose, so counting each
    /// alone would let an agent step around the limit and fill the counts).
    pub fn counted_as<'a>(&'a self, target: Target<'a>) -> std::borrow::Cow<'a, str> {
        let (kind, patterns) = match target.kind {
            Kind::Tool => return target.name.into(),
            Kind::Prompt => ("prompt", &self.prompts),
            Kind::Resource => ("resource", &self.resources),
        };
        let pattern = patterns
            .iter()
            .find(|pattern| target.matches(pattern))
            .map_or("", String::as_str);
        format!("{kind}:{pattern}").into()
    }

    /// Whether the rule covers `target`: its `tools`, `prompts` or `resources` patterns.
    pub fn covers_target(&self, target: Target<'_>) -> bool {
        let patterns = match target.kind {
            Kind::Tool => &self.tools,
            Kind::Prompt => &self.prompts,
            Kind::Resource => &self.resources,
        };
        patterns.iter().any(|pattern| target.matches(pattern))
    }
}

impl Target<'_> {
    /// Whether `pattern` (one of a rule's) names this target: a tool or a prompt by its name; a
    /// resource by its URI as the agent sent it OR with every percent-encoding decoded (the page
    /// decodes its templates' variables: `app://%73ecrets/x` is read as `app://secrets/x`).
    pub fn matches(&self, pattern: &str) -> bool {
        if glob(pattern, self.name) {
            return true;
        }
        self.kind == Kind::Resource && {
            let decoded = crate::calls::served::percent_decoded(self.name);
            decoded != self.name && glob(pattern, &decoded)
        }
    }
}

/// `*` matches any run of characters (none included); everything else matches itself.
pub fn glob(pattern: &str, name: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// Reads a policy file's text: TOML unless it starts with `{` (JSON).
pub fn parse_text(text: &str) -> Result<File, String> {
    if text.len() > MAX_POLICY_FILE_BYTES {
        return Err(format!(
            "the file is {} bytes, more than the {MAX_POLICY_FILE_BYTES} allowed",
            text.len()
        ));
    }
    if text.trim_start().starts_with('{') {
        serde_json::from_str(text).map_err(|error| format!("not a valid policy (JSON): {error}"))
    } else {
        toml::from_str(text).map_err(|error| format!("not a valid policy (TOML): {error}"))
    }
}

/// A rule's error: which rule, and what is wrong.
pub fn rule_error(id: &str, message: impl std::fmt::Display) -> String {
    format!("rule '{id}': {message}")
}

/// Checks and compiles every rule.
pub fn compile(file: &File) -> Result<Vec<Rule>, String> {
    if file.rule.len() > MAX_RULES {
        return Err(format!(
            "{} rules, more than the {MAX_RULES} allowed",
            file.rule.len()
        ));
    }
    let mut ids = HashSet::new();
    file.rule
        .iter()
        .enumerate()
        .map(|(at, rule)| {
            let name = if rule.id.is_empty() {
                format!("#{}", at + 1)
            } else {
                rule.id.clone()
            };
            let compiled = compile_rule(rule).map_err(|error| rule_error(&name, error))?;
            if !ids.insert(rule.id.clone()) {
                return Err(rule_error(&name, "another rule has the same id"));
            }
            Ok(compiled)
        })
        .collect()
}

fn compile_rule(text: &RuleText) -> Result<Rule, String> {
    let id = &text.id;
    let id_ok = !id.is_empty()
        && id.len() <= MAX_RULE_ID_BYTES
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.:".contains(c));
    if !id_ok {
        return Err(format!(
            "'id' must be 1 to {MAX_RULE_ID_BYTES} letters, digits, '-', '_', '.' or ':'"
        ));
    }
    let lists = [
        ("tools", &text.tools),
        ("prompts", &text.prompts),
        ("resources", &text.resources),
    ];
    if lists.iter().all(|(_, list)| list.is_empty()) {
        return Err(format!(
            "a rule names what it covers: 'tools' (original tool names), 'prompts' (prompt names) \
             or 'resources' (resource URIs), 1 to {MAX_PATTERNS_PER_RULE} each, '*' for any run \
             of characters"
        ));
    }
    for (field, list) in lists {
        if list.len() > MAX_PATTERNS_PER_RULE {
            return Err(format!(
                "'{field}' must list at most {MAX_PATTERNS_PER_RULE} patterns"
            ));
        }
        if let Some(bad) = list
            .iter()
            .find(|t| t.is_empty() || t.len() > MAX_TOOL_PATTERN_BYTES)
        {
            return Err(format!(
                "'{field}' entry {bad:?} must be 1 to {MAX_TOOL_PATTERN_BYTES} characters"
            ));
        }
    }
    let action = text.action;
    if action == ActionName::Confirm && !(text.prompts.is_empty() && text.resources.is_empty()) {
        return Err(
            "a confirm rule covers tool calls only (the page's dialog confirms a call): \
             'prompts' and 'resources' belong to block, redact, limit and log rules"
                .into(),
        );
    }
    let belongs = |field: &str, set: bool, to: &[ActionName]| {
        if set && !to.contains(&action) {
            let names: Vec<&str> = to.iter().map(|a| a.as_str()).collect();
            Err(format!(
                "'{field}' belongs to {} rules, not to a {} rule",
                names.join(" and "),
                action.as_str()
            ))
        } else {
            Ok(())
        }
    };
    use ActionName::*;
    belongs("message", text.message.is_some(), &[Block, Limit])?;
    belongs("redact", text.redact.is_some(), &[Redact])?;
    belongs("patterns", text.patterns.is_some(), &[Redact])?;
    belongs("replacement", text.replacement.is_some(), &[Redact])?;
    belongs("calls", text.calls.is_some(), &[Limit])?;
    belongs("window_seconds", text.window_seconds.is_some(), &[Limit])?;
    belongs("per", text.per.is_some(), &[Limit])?;
    if let Some(message) = &text.message {
        if message.is_empty() || message.len() > MAX_RULE_TEXT_BYTES {
            return Err(format!(
                "'message' must be 1 to {MAX_RULE_TEXT_BYTES} bytes"
            ));
        }
    }
    let when = text
        .when
        .as_deref()
        .map(|source| Condition::compile(source).map_err(|error| format!("'when': {error}")))
        .transpose()?;
    let reads_result = when.as_ref().is_some_and(Condition::reads_result);
    if reads_result && matches!(action, Confirm | Limit) {
        return Err(format!(
            "a {} rule is decided before the call runs: its 'when' cannot read 'result'",
            action.as_str()
        ));
    }
    let action = match action {
        Block => Action::Block {
            message: text
                .message
                .clone()
                .unwrap_or_else(|| format!("blocked by the bridge's policy (rule '{id}')")),
        },
        Confirm => Action::Confirm,
        Log => Action::Log,
        Redact => Action::Redact(redaction(text)?),
        Limit => {
            let calls = text.calls.ok_or("a limit rule needs 'calls'")?;
            let seconds = text
                .window_seconds
                .ok_or("a limit rule needs 'window_seconds'")?;
            if !(1..=MAX_LIMIT_CALLS).contains(&calls) {
                return Err(format!("'calls' must be 1 to {MAX_LIMIT_CALLS}"));
            }
            if !(1..=MAX_LIMIT_WINDOW_SECONDS).contains(&seconds) {
                return Err(format!(
                    "'window_seconds' must be 1 to {MAX_LIMIT_WINDOW_SECONDS}"
                ));
            }
            let per = text.per.unwrap_or_default();
            let counted = match per {
                Per::Session => "page session",
                Per::User => "user",
            };
            let message = text.message.clone().unwrap_or_else(|| {
                format!(
                    "rate limit of rule '{id}': at most {calls} calls in {seconds} s per {counted}"
                )
            });
            Action::Limit {
                window: Window {
                    calls,
                    window_ms: seconds * 1000,
                },
                message,
                per,
            }
        }
    };
    let on_result = matches!(action, Action::Redact(_)) || reads_result;
    Ok(Rule {
        id: id.clone(),
        tools: text.tools.clone(),
        prompts: text.prompts.clone(),
        resources: text.resources.clone(),
        when,
        action,
        on_result,
    })
}

fn redaction(text: &RuleText) -> Result<Redaction, String> {
    let names = text.redact.as_deref().unwrap_or_default();
    let detectors = names
        .iter()
        .map(|name| {
            Detector::from_name(name).ok_or_else(|| {
                let known: Vec<&str> = Detector::ALL.iter().map(|d| d.name()).collect();
                format!(
                    "'redact' entry {name:?} is not a detector (they are {})",
                    known.join(", ")
                )
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let sources = text.patterns.as_deref().unwrap_or_default();
    if names.len() > MAX_PATTERNS_PER_RULE || sources.len() > MAX_PATTERNS_PER_RULE {
        return Err(format!(
            "at most {MAX_PATTERNS_PER_RULE} detectors and patterns"
        ));
    }
    let patterns = sources
        .iter()
        .map(|source| {
            let pattern = bounded_regex(source).map_err(|bad| match bad {
                BadPattern::Invalid(error) => format!("'patterns' entry {source:?}: {error}"),
                too_long => too_long.to_string(),
            })?;
            if pattern.is_match("") {
                return Err(format!(
                    "'patterns' entry {source:?} matches the empty text: it would replace nothing \
                     or everything"
                ));
            }
            Ok::<Regex, String>(pattern)
        })
        .collect::<Result<Vec<_>, _>>()?;
    if detectors.is_empty() && patterns.is_empty() {
        return Err("a redact rule needs 'redact' (detectors) or 'patterns'".into());
    }
    let replacement = match &text.replacement {
        Some(replacement) if replacement.len() > MAX_RULE_TEXT_BYTES => {
            return Err(format!(
                "'replacement' must be at most {MAX_RULE_TEXT_BYTES} bytes"
            ))
        }
        Some(replacement) => replacement.clone(),
        None if patterns.is_empty() => default_replacement(&detectors).into_owned(),
        None => "[redacted]".to_owned(),
    };
    if text.replacement.is_some() {
        let probe = Redaction {
            detectors: detectors.clone(),
            patterns: patterns.clone(),
            replacement: String::new(),
        };
        if probe.finds(&replacement) {
            return Err("'replacement' is itself something this rule replaces".into());
        }
    }
    Ok(Redaction {
        detectors,
        patterns,
        replacement,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob("search", "search"));
        assert!(!glob("search", "searchAll"));
        assert!(glob("search*", "searchAll"));
        assert!(glob("*", ""));
        assert!(glob("*_cart", "read_cart"));
        assert!(!glob("*_cart", "read_carts"));
        assert!(glob("a*b*c", "aXbYc"));
        assert!(glob("a*b*c", "abc"));
        assert!(!glob("a*b*c", "acb"));
        assert!(!glob("ab*ab", "ab"));
    }
}
