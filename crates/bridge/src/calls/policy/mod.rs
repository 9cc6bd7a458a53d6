//! Guardrails (`--policy FILE`, docs/guardrails.md): the operator's rules on tool calls, decided
//! here for every route — and on the page's prompts and resources (rules naming `prompts` or
//! `resources`: [`Target`]; the same moments, for `PageSession::serve`, in
//! crate::calls::policy_gate::serving and `served_answered`). Three moments of a call pass through this module, and nothing else decides:
//!
//! - before it goes to the page, [`Policy::check_input`] (from `PageSession::prepare`, which every
//!   route's call passes): `block` ends it, `confirm` makes it need the person's approval, `log`
//!   is noted; matching `limit` rules are counted when the call runs ([`Policy::admit`], on the node
//!   that holds the page's socket);
//! - while it runs, the `redact` rules that apply to it (`crate::calls::policy_gate::EventRedaction`, decided when it
//!   starts) replace in everything the page sends about it as it passes to the caller — its log
//!   and progress messages, its rounds — on every route (the session's waiter holds them);
//! - once the page answered, [`Policy::check_result`] (from `PageSession::call_tool`, which every
//!   result passes before any caller sees it): `redact` replaces, `block` withholds, `log` notes.
//!
//! A condition that cannot be decided (an error, a bound passed) fails closed: the call, or its
//! result, is blocked, with a message saying which rule and why. Every decision other than
//! "allowed" is one log event ([`audit`]); the result's `_meta["clienttools/policy"]` lists the
//! rules that acted on it (not `log` rules, which are for the operator alone).
//!
//! Sans-IO: time is a parameter ([`Policy::admit`] takes `now`).

mod condition;
mod detectors;
mod file;
mod limiter;
pub(crate) mod redact;

use std::path::Path;
use std::sync::Mutex;
use std::time::Instant;

use client_tools_core::protocol::CallToolResult;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use condition::{Evaluator, Facts};
use file::{Action, ActionName, Per, Rule};
pub(crate) use file::{Kind, Target};
use limiter::{Limiter, Refused};

/// The result's `_meta` key listing the rules that acted on the call: `[{"rule", "action"}]`.
pub const ACTED_META: &str = "clienttools/policy";

/// The operator's policy: its rules, compiled, and the counts of its `limit` rules.
pub struct Policy {
    rules: Vec<Rule>,
    digest: String,
    evaluator: Evaluator,
    limiter: Mutex<Limiter>,
    /// The limiter's clock starts here.
    epoch: Instant,
}

impl std::fmt::Debug for Policy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Policy")
            .field(
                "rules",
                &self.rules.iter().map(|r| &r.id).collect::<Vec<_>>(),
            )
            .field("digest", &self.digest)
            .finish()
    }
}

impl Default for Policy {
    /// No rules: every call is allowed as it is.
    fn default() -> Self {
        Self::from_rules(Vec::new(), "none".into())
    }
}

/// A call refused by a rule: the rule, and the error result the caller gets.
pub type Refusal = Box<(Acted, CallToolResult)>;

/// A rule that acted on a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Acted {
    pub rule: String,
    pub action: &'static str,
}

/// What the input rules decided for a call allowed to go on.
#[derive(Debug, Default, Clone)]
pub struct InputVerdict {
    /// Rules that acted (`confirm`, `log`), in file order.
    pub acted: Vec<Acted>,
    /// A `confirm` rule holds.
    pub confirm: bool,
    /// The `limit` rules whose condition holds (their index).
    limits: Vec<usize>,
    /// Some result rule covers the tool (the input is kept for it).
    pub has_result_rules: bool,
}

impl Policy {
    /// Reads and checks a policy file; the error names the file and the rule.
    pub fn load(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|error| format!("--policy {}: {error}", path.display()))?;
        Self::parse(&text).map_err(|error| format!("--policy {}: {error}", path.display()))
    }

    /// Checks a policy's text (TOML, or JSON when it starts with `{`).
    pub fn parse(text: &str) -> Result<Self, String> {
        let file = file::parse_text(text)?;
        let rules = file::compile(&file)?;
        let canonical = serde_json::to_string(&file).expect("a policy always prints");
        let mut hash = Sha256::new();
        hash.update(b"client-tools policy\0");
        hash.update(canonical.as_bytes());
        let digest: String = hash.finalize()[..16]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        Ok(Self::from_rules(rules, digest))
    }

    fn from_rules(rules: Vec<Rule>, digest: String) -> Self {
        let evaluator = Evaluator::default();
        for condition in rules.iter().filter_map(|r| r.when.as_ref()) {
            evaluator.keep_patterns(condition);
        }
        Self {
            rules,
            digest,
            evaluator,
            limiter: Mutex::default(),
            epoch: Instant::now(),
        }
    }

    /// A digest of the rules (not of comments or layout): cluster nodes must share it.
    pub fn digest(&self) -> &str {
        &self.digest
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The ids of the rules, in file order.
    pub fn rule_ids(&self) -> impl Iterator<Item = &str> {
        self.rules.iter().map(|r| r.id.as_str())
    }

    /// Whether any `limit` rule exists (a node relaying a call counts it then).
    pub fn has_limits(&self) -> bool {
        self.rules
            .iter()
            .any(|r| matches!(r.action, Action::Limit { .. }))
    }

    /// The input rules for a call of `tool` (its original name, and its annotations: a bare name
    /// has none) in `session`: `Err` with the blocking rule and its result when one blocks (or
    /// cannot be decided).
    pub fn check_input<'a, 't>(
        &self,
        tool: impl Into<Target<'t>>,
        who: impl Into<Who<'a>>,
        input: &Value,
    ) -> Result<InputVerdict, Refusal> {
        self.check_input_on(tool.into(), who.into(), input)
            .map_err(|refusal| {
                let (acted, message) = *refusal;
                Box::new((acted.clone(), blocked(&[acted], &message)))
            })
    }

    /// The input rules for `target` (a tool call, a prompt, a resource: `input` is the call's or
    /// the prompt's arguments, a resource's `{uri}`): `Err` with the blocking rule and the message
    /// the caller gets.
    pub(crate) fn check_input_on(
        &self,
        target: Target<'_>,
        who: Who<'_>,
        input: &Value,
    ) -> Result<InputVerdict, Box<(Acted, String)>> {
        let mut verdict = InputVerdict::default();
        let facts = Facts {
            tool: target.name,
            session: who.session,
            user: who.user.unwrap_or(""),
            input,
            result: None,
            annotations: target.annotations,
        };
        for (at, rule) in self.rules.iter().enumerate() {
            if !rule.covers_target(target) {
                continue;
            }
            if rule.on_result {
                verdict.has_result_rules = true;
                continue;
            }
            match self.holds(rule, &facts) {
                Ok(false) => continue,
                Ok(true) => {}
                Err(error) => return Err(Box::new((acted(rule, "block"), error))),
            }
            match &rule.action {
                Action::Block { message } => {
                    return Err(Box::new((acted(rule, "block"), message.clone())));
                }
                Action::Confirm => {
                    verdict.confirm = true;
                    verdict.acted.push(acted(rule, "confirm"));
                }
                Action::Limit { .. } => verdict.limits.push(at),
                Action::Log => verdict.acted.push(acted(rule, "log")),
                Action::Redact(_) => {}
            }
        }
        Ok(verdict)
    }

    /// Whether an unconditional `block` rule — or one whose condition holds on `input` — covers
    /// `target` (a list leaves such an entry out; a condition that cannot be decided does not:
    /// the request itself is decided when it is made).
    pub(crate) fn hides(&self, target: Target<'_>, who: Who<'_>, input: &Value) -> bool {
        let facts = Facts {
            tool: target.name,
            session: who.session,
            user: who.user.unwrap_or(""),
            input,
            result: None,
            annotations: target.annotations,
        };
        self.rules.iter().any(|rule| {
            matches!(rule.action, Action::Block { .. })
                && !rule.on_result
                && rule.covers_target(target)
                && self.holds(rule, &facts).unwrap_or(false)
        })
    }

    /// Counts a call against the `limit` rules `verdict` found, at `now`: the first full window
    /// refuses it (nothing is counted then), with the rule and the error result naming the limit.
    pub fn admit<'a>(
        &self,
        verdict: &InputVerdict,
        tool: &str,
        who: impl Into<Who<'a>>,
        now: Instant,
    ) -> Result<(), Refusal> {
        self.admit_on(verdict, Target::tool(tool), who.into(), now)
            .map_err(|refusal| {
                let (acted, message) = *refusal;
                Box::new((acted.clone(), blocked(&[acted], &message)))
            })
    }

    /// [`Self::admit`] for any target (each rule counts it as `Rule::counted_as` says), the
    /// refusal's message for the caller.
    pub(crate) fn admit_on(
        &self,
        verdict: &InputVerdict,
        target: Target<'_>,
        who: Who<'_>,
        now: Instant,
    ) -> Result<(), Box<(Acted, String)>> {
        if verdict.limits.is_empty() {
            return Ok(());
        }
        let now_ms = now.saturating_duration_since(self.epoch).as_millis() as u64;
        let mut limiter = self.limiter.lock().unwrap_or_else(|p| p.into_inner());
        // All or none: a call refused by one rule is not counted by another.
        let limits = verdict.limits.iter().filter_map(|&at| {
            let rule = &self.rules[at];
            match &rule.action {
                Action::Limit {
                    window,
                    message,
                    per,
                } => Some((rule, *window, message, who.limit_key(*per))),
                _ => None,
            }
        });
        for (rule, window, message, key) in limits.clone() {
            let counted = rule.counted_as(target);
            if let Err(refused) = limiter.check(&key, &rule.id, &counted, window, now_ms) {
                let text = match refused {
                    Refused::Over { retry_in_ms } => format!(
                        "{message} (the next call fits in {} s)",
                        retry_in_ms.div_ceil(1000)
                    ),
                    Refused::Full => {
                        format!("{message} (the bridge keeps too many counts at once: refused)")
                    }
                };
                return Err(Box::new((acted(rule, "limit"), text)));
            }
        }
        for (rule, _, _, key) in limits {
            limiter.record(&key, &rule.id, &rule.counted_as(target), now_ms);
        }
        Ok(())
    }

    /// The input rules of a call relayed from another cluster node (its `tools/call` params),
    /// counted against the limits here, where the page's socket is: `Err` with the result to
    /// answer instead of the page.
    pub fn admit_relayed<'a, 't>(
        &self,
        tool: impl Into<Target<'t>>,
        who: impl Into<Who<'a>>,
        input: &Value,
        now: Instant,
    ) -> Result<(), Refusal> {
        let (tool, who) = (tool.into(), who.into());
        let verdict = self.check_input(tool, who, input)?;
        self.admit(&verdict, tool.name, who, now)
    }

    /// [`Self::admit_relayed`] for a prompt or a resource: `Err` with the rule and the message.
    pub(crate) fn admit_relayed_on(
        &self,
        target: Target<'_>,
        who: Who<'_>,
        input: &Value,
        now: Instant,
    ) -> Result<(), Box<(Acted, String)>> {
        let verdict = self.check_input_on(target, who, input)?;
        self.admit_on(&verdict, target, who, now)
    }

    /// The result rules for a call's `result`, in file order: `redact` replaces, `block`
    /// withholds it (an error result instead), `log` notes. Returns the rules that acted.
    pub fn check_result<'a, 't>(
        &self,
        tool: impl Into<Target<'t>>,
        who: impl Into<Who<'a>>,
        input: &Value,
        result: &mut CallToolResult,
    ) -> Vec<Acted> {
        let (target, who) = (tool.into(), who.into());
        let mut acted_on = Vec::new();
        let mut as_json: Option<Value> = None;
        let covering = self
            .rules
            .iter()
            .filter(|r| r.on_result && r.covers_target(target));
        for rule in covering {
            if let Some(condition) = &rule.when {
                if condition.reads_result() && as_json.is_none() {
                    as_json = Some(serde_json::to_value(&*result).unwrap_or(Value::Null));
                }
                let facts = Facts {
                    tool: target.name,
                    session: who.session,
                    user: who.user.unwrap_or(""),
                    input,
                    result: as_json.as_ref(),
                    annotations: target.annotations,
                };
                match condition.holds(&facts, &self.evaluator) {
                    Ok(true) => {}
                    Ok(false) => continue,
                    Err(error) => {
                        acted_on.push(acted(rule, "block"));
                        *result = blocked(
                            &acted_on,
                            &format!(
                                "the result was withheld: rule '{}' could not be decided: {error}",
                                rule.id
                            ),
                        );
                        return acted_on;
                    }
                }
            }
            match &rule.action {
                Action::Redact(redaction) => {
                    if redaction.apply(result) > 0 {
                        acted_on.push(acted(rule, "redact"));
                        as_json = None;
                    }
                }
                Action::Block { message } => {
                    acted_on.push(acted(rule, "block"));
                    *result = blocked(&acted_on, &format!("the result was withheld: {message}"));
                    return acted_on;
                }
                Action::Log => acted_on.push(acted(rule, "log")),
                Action::Confirm | Action::Limit { .. } => {}
            }
        }
        if !acted_on.is_empty() {
            mark(result, &acted_on);
        }
        acted_on
    }

    /// The `redact` rules for what the page sends while a call of `tool` runs (its log and
    /// progress messages, its rounds: crate::calls::policy_gate::EventRedaction), in file order: those
    /// covering the tool whose condition holds on the call. The result does not exist yet, so a
    /// rule whose condition reads it, or one that cannot be decided, applies (fail closed).
    pub(crate) fn event_redactions<'a, 't>(
        &self,
        tool: impl Into<Target<'t>>,
        who: impl Into<Who<'a>>,
        input: &Value,
    ) -> Vec<usize> {
        self.event_redactions_on(tool.into(), who.into(), input)
    }

    /// [`Self::event_redactions`] for any target (a prompt, a resource).
    pub(crate) fn event_redactions_on(
        &self,
        target: Target<'_>,
        who: Who<'_>,
        input: &Value,
    ) -> Vec<usize> {
        let facts = Facts {
            tool: target.name,
            session: who.session,
            user: who.user.unwrap_or(""),
            input,
            result: None,
            annotations: target.annotations,
        };
        let redacts =
            |rule: &Rule| matches!(rule.action, Action::Redact(_)) && rule.covers_target(target);
        self.rules
            .iter()
            .enumerate()
            .filter(|(_, rule)| redacts(rule))
            .filter(|(_, rule)| match &rule.when {
                Some(condition) if !condition.reads_result() => {
                    condition.holds(&facts, &self.evaluator).unwrap_or(true)
                }
                _ => true,
            })
            .map(|(at, _)| at)
            .collect()
    }

    /// The result rules for the page's `answer` to a served request about `target` (`method`'s
    /// result: a prompt's messages, a resource's contents, a completion's values), in file order:
    /// `redact` replaces (crate::calls::policy::redact::Redaction::in_answer), `block` withholds it
    /// (`Err`: the rules that acted, the last the blocking one, and the message), `log` notes.
    /// The rules that acted (but `log`) are listed in the answer's `_meta` ([`ACTED_META`]).
    pub(crate) fn check_answer(
        &self,
        target: Target<'_>,
        who: Who<'_>,
        input: &Value,
        method: &str,
        answer: &mut Value,
    ) -> Result<Vec<Acted>, (Vec<Acted>, String)> {
        let mut acted_on = Vec::new();
        let covering = self
            .rules
            .iter()
            .filter(|r| r.on_result && r.covers_target(target));
        for rule in covering {
            if let Some(condition) = &rule.when {
                let facts = Facts {
                    tool: target.name,
                    session: who.session,
                    user: who.user.unwrap_or(""),
                    input,
                    result: Some(&*answer),
                    annotations: target.annotations,
                };
                match condition.holds(&facts, &self.evaluator) {
                    Ok(true) => {}
                    Ok(false) => continue,
                    Err(error) => {
                        acted_on.push(acted(rule, "block"));
                        let why = format!(
                            "the answer was withheld: rule '{}' could not be decided: {error}",
                            rule.id
                        );
                        return Err((acted_on, why));
                    }
                }
            }
            match &rule.action {
                Action::Redact(redaction) => {
                    if redaction.in_answer(method, answer) > 0 {
                        acted_on.push(acted(rule, "redact"));
                    }
                }
                Action::Block { message } => {
                    acted_on.push(acted(rule, "block"));
                    return Err((acted_on, format!("the answer was withheld: {message}")));
                }
                Action::Log => acted_on.push(acted(rule, "log")),
                Action::Confirm | Action::Limit { .. } => {}
            }
        }
        Ok(acted_on)
    }

    /// Rule `at`'s redaction (one [`Self::event_redactions`] named), and the rule as it acted.
    pub(crate) fn redaction(&self, at: usize) -> Option<(&redact::Redaction, Acted)> {
        let rule = self.rules.get(at)?;
        match &rule.action {
            Action::Redact(redaction) => Some((redaction, acted(rule, "redact"))),
            _ => None,
        }
    }

    fn holds(&self, rule: &Rule, facts: &Facts) -> Result<bool, String> {
        match &rule.when {
            None => Ok(true),
            Some(condition) => condition.holds(facts, &self.evaluator).map_err(|error| {
                format!(
                    "rule '{}' could not be decided, so the call is blocked: {error}",
                    rule.id
                )
            }),
        }
    }
}

fn acted(rule: &Rule, action: &'static str) -> Acted {
    Acted {
        rule: rule.id.clone(),
        action,
    }
}

/// The error result of a blocked call or result, its rules in `_meta`.
fn blocked(acted: &[Acted], message: &str) -> CallToolResult {
    let mut result = CallToolResult::error(message.to_owned());
    mark(&mut result, acted);
    result
}

/// Adds the rules that acted (but `log` ones) to `result`'s `_meta` ([`ACTED_META`]).
pub fn mark(result: &mut CallToolResult, acted: &[Acted]) {
    if shown(acted).is_empty() {
        return;
    }
    mark_meta(result.meta.get_or_insert_with(Map::new), acted);
}

/// The rules that acted (but `log` ones), as `_meta` lists them: `[{"rule", "action"}]`.
pub(crate) fn shown(acted: &[Acted]) -> Vec<Value> {
    acted
        .iter()
        .filter(|a| a.action != ActionName::Log.as_str())
        .map(|a| json!({"rule": a.rule, "action": a.action}))
        .collect()
}

/// Adds the rules that acted (but `log` ones) to the `_meta` of a served request's answer (an
/// object: a prompt's, a resource read's, a completion's result).
pub(crate) fn mark_answer(answer: &mut Value, acted: &[Acted]) {
    let Value::Object(answer) = answer else {
        return;
    };
    if shown(acted).is_empty() {
        return;
    }
    let meta = answer
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(meta) = meta {
        mark_meta(meta, acted);
    }
}

fn mark_meta(meta: &mut Map<String, Value>, acted: &[Acted]) {
    let shown = shown(acted);
    match meta.get_mut(ACTED_META) {
        Some(Value::Array(list)) => list.extend(shown),
        _ => {
            meta.insert(ACTED_META.into(), Value::Array(shown));
        }
    }
}

/// One structured log event per decision other than "allowed" (`info`): the rule, the action, the
/// tool, the page session and the call. The payload (the input, or the result once rules acted on
/// it) only with `--log-payloads`, in a second event at `debug`, as the call trace does.
pub fn audit<'a>(
    acted: &Acted,
    tool: &str,
    who: impl Into<Who<'a>>,
    call: &str,
    payload: Option<&Value>,
) {
    let who = who.into();
    tracing::info!(
        target: "client_tools_bridge::policy",
        rule = %acted.rule,
        action = acted.action,
        tool,
        session = who.session,
        user = who.user.unwrap_or(""),
        call,
        "policy rule acted"
    );
    if let Some(payload) = payload {
        tracing::debug!(
            target: "client_tools_bridge::policy",
            rule = %acted.rule,
            call,
            %payload,
            "policy rule acted on"
        );
    }
}

/// Whose call a rule decides on: the page session, and the user it serves (SPEC §13: `user` in
/// conditions, `per = "user"` limits). A bare session id is a session with no user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Who<'a> {
    pub session: &'a str,
    pub user: Option<&'a str>,
}

impl<'a> From<&'a str> for Who<'a> {
    fn from(session: &'a str) -> Self {
        Who {
            session,
            user: None,
        }
    }
}

impl<'a> Who<'a> {
    /// What a `limit` rule counts by: the session, or with `per = "user"` the user (a session
    /// without one counts alone, as its own user).
    fn limit_key(&self, per: Per) -> std::borrow::Cow<'a, str> {
        match (per, self.user) {
            (Per::User, Some(user)) => format!("user\0{user}").into(),
            _ => self.session.into(),
        }
    }
}

#[cfg(test)]
mod event_tests;
#[cfg(test)]
mod tests;
