//! The policy alone: loading and its errors, each action, conditions and their bounds, hostile
//! policies, and a fuzz of policy inputs.

use std::time::{Duration, Instant};

use client_tools_core::protocol::CallToolResult;
use proptest::prelude::*;
use serde_json::{json, Value};

use super::*;
use crate::limits::{
    MAX_CONDITION_BYTES, MAX_CONDITION_DATA_BYTES, MAX_CONDITION_NESTING, MAX_POLICY_FILE_BYTES,
    MAX_RULES,
};

/// The issue's four examples, and a log rule.
const EXAMPLE: &str = r#"
# Block task titles that look like a credential.
[[rule]]
id = "no-secrets-in-tasks"
tools = ["create_task"]
when = 'input.title.matches("(?i)(password|api[_-]?key|secret)\\s*[:=]")'
action = "block"
message = "a task title must not hold a credential"

[[rule]]
id = "mask-cart"
tools = ["read_cart"]
action = "redact"
redact = ["card", "email"]

[[rule]]
id = "big-transfers"
tools = ["transfer"]
when = "input.amount > 500"
action = "confirm"

[[rule]]
id = "search-rate"
tools = ["search*"]
action = "limit"
calls = 2
window_seconds = 60

[[rule]]
id = "audit-all"
tools = ["*"]
when = "tool != 'search'"
action = "log"
"#;

fn policy(text: &str) -> Policy {
    Policy::parse(text).unwrap_or_else(|error| panic!("{error}"))
}

fn refused(text: &str) -> String {
    Policy::parse(text).map(|_| ()).unwrap_err()
}

fn rule(fields: &str) -> String {
    format!("[[rule]]\nid = \"r1\"\ntools = [\"t\"]\n{fields}\n")
}

fn result_of(value: Value) -> CallToolResult {
    serde_json::from_value(value).unwrap()
}

#[test]
fn block_ends_the_call_with_the_rule_message_and_names_the_rule() {
    let p = policy(EXAMPLE);
    let (acted, result) = *p
        .check_input(
            "create_task",
            "s1",
            &json!({"title": "my password: hunter2"}),
        )
        .unwrap_err();
    assert_eq!(acted.rule, "no-secrets-in-tasks");
    assert!(result.is_error);
    assert_eq!(result.text(), "a task title must not hold a credential");
    assert_eq!(
        result.meta.unwrap()[ACTED_META],
        json!([{"rule": "no-secrets-in-tasks", "action": "block"}])
    );
    let fine = p
        .check_input("create_task", "s1", &json!({"title": "buy milk"}))
        .unwrap();
    assert!(!fine.confirm);
    assert_eq!(fine.acted, [acted_rule("audit-all", "log")]);
}

fn acted_rule(rule: &str, action: &'static str) -> Acted {
    Acted {
        rule: rule.into(),
        action,
    }
}

#[test]
fn confirm_holds_only_when_its_condition_does() {
    let p = policy(EXAMPLE);
    let big = p
        .check_input("transfer", "s1", &json!({"amount": 900}))
        .unwrap();
    assert!(big.confirm);
    assert_eq!(big.acted[0], acted_rule("big-transfers", "confirm"));
    let small = p
        .check_input("transfer", "s1", &json!({"amount": 20.5}))
        .unwrap();
    assert!(!small.confirm);
}

#[test]
fn an_undecidable_condition_fails_closed() {
    let p = policy(EXAMPLE);
    // No `amount`: CEL cannot compare, so the call is blocked, saying which rule and why.
    let (acted, result) = *p
        .check_input("transfer", "s1", &json!({"to": "bob"}))
        .unwrap_err();
    assert_eq!(acted, acted_rule("big-transfers", "block"));
    assert!(
        result
            .text()
            .contains("rule 'big-transfers' could not be decided"),
        "{}",
        result.text()
    );
    // A condition that is not a boolean.
    let p = policy(&rule("action = \"block\"\nwhen = \"input.n + 1\""));
    let (_, result) = *p.check_input("t", "s", &json!({"n": 1})).unwrap_err();
    assert!(
        result.text().contains("must be true or false"),
        "{}",
        result.text()
    );
}

/// Issue 36 point 3: `annotations` is the tool's (`{}` without any); `tool` stays its name.
#[test]
fn conditions_read_the_tools_annotations_beside_its_name() {
    let p = policy(
        r#"
[[rule]]
id = "no-untrusted-writes"
tools = ["*"]
when = 'has(annotations.untrustedContentHint) && annotations.untrustedContentHint && has(input.send)'
action = "block"
message = "a tool that reads others' content does not send"

[[rule]]
id = "mask-untrusted"
tools = ["*"]
when = 'has(annotations.untrustedContentHint) && annotations.untrustedContentHint == true'
action = "redact"
redact = ["email"]

[[rule]]
id = "strict"
tools = ["reviews_strict"]
when = "annotations.untrustedContentHint == true"
action = "confirm"

[[rule]]
id = "by-name"
tools = ["*"]
when = "tool == 'plain'"
action = "confirm"
"#,
    );
    let untrusted = json!({"readOnlyHint": true, "untrustedContentHint": true});
    let reviews = Target::annotated("reviews", Some(&untrusted));
    let (acted, result) = *p
        .check_input(reviews, "s1", &json!({"send": "x"}))
        .unwrap_err();
    assert_eq!(acted, acted_rule("no-untrusted-writes", "block"));
    assert_eq!(
        result.text(),
        "a tool that reads others' content does not send"
    );
    assert!(p.check_input(reviews, "s1", &json!({})).is_ok());
    // The same input for a tool without the hint, or with it false: allowed.
    let trusted = json!({"untrustedContentHint": false});
    for other in [
        Target::tool("reviews"),
        Target::annotated("reviews", Some(&trusted)),
    ] {
        let verdict = p.check_input(other, "s1", &json!({"send": "x"})).unwrap();
        assert!(!verdict.confirm, "{other:?}");
    }
    // Its results are redacted; another tool's are not.
    let mail = || CallToolResult::success(json!({"review": "write to eve@example.com"}));
    let mut marked = mail();
    let acted = p.check_result(reviews, "s1", &json!({}), &mut marked);
    assert_eq!(acted, [acted_rule("mask-untrusted", "redact")]);
    assert!(!marked.text().contains("eve@"), "{}", marked.text());
    let mut plain = mail();
    assert!(p
        .check_result(Target::tool("reviews"), "s1", &json!({}), &mut plain)
        .is_empty());
    assert!(plain.text().contains("eve@"));
    // A rule without `has` decides only tools that have the annotation: on any other, the key is
    // missing and the call is blocked (fail closed), as for `input`.
    let strict = Target::annotated("reviews_strict", Some(&untrusted));
    assert!(p.check_input(strict, "s1", &json!({})).unwrap().confirm);
    let (acted, result) = *p
        .check_input("reviews_strict", "s1", &json!({}))
        .unwrap_err();
    assert_eq!(acted, acted_rule("strict", "block"));
    assert!(
        result.text().contains("rule 'strict' could not be decided"),
        "{}",
        result.text()
    );
    // A hint the page wrote as a string is not `true`: `== true` decides it (not redacted).
    let stringly = json!({"untrustedContentHint": "true"});
    let mut kept = mail();
    let acted = p.check_result(
        Target::annotated("reviews", Some(&stringly)),
        "s1",
        &json!({}),
        &mut kept,
    );
    assert!(acted.is_empty(), "{acted:?}");
    assert!(kept.text().contains("eve@"), "{}", kept.text());
    // Today's rules on `tool` decide as before, with or without annotations.
    assert!(p.check_input("plain", "s1", &json!({})).unwrap().confirm);
    let annotated_plain = Target::annotated("plain", Some(&trusted));
    assert!(
        p.check_input(annotated_plain, "s1", &json!({}))
            .unwrap()
            .confirm
    );
    // A prompt or a resource has none: `{}`.
    let served = Target::of(Kind::Prompt, "reviews");
    assert!(p
        .check_input_on(served, Who::from("s1"), &json!({"send": "x"}))
        .is_ok());
    // Annotations count against a condition's data bound too.
    let huge = json!({"untrustedContentHint": true, "x": "a".repeat(MAX_CONDITION_DATA_BYTES)});
    let (_, result) = *p
        .check_input(Target::annotated("reviews", Some(&huge)), "s1", &json!({}))
        .unwrap_err();
    assert!(
        result.text().contains("'annotations' is too large"),
        "{}",
        result.text()
    );
    // An unknown variable names the ones there are.
    let error = refused(&rule("action = \"block\"\nwhen = \"annotation.x\""));
    assert!(
        error.contains("which is not one of input, result, tool, session, user, annotations"),
        "{error}"
    );
}

#[test]
fn limit_counts_per_session_and_tool_and_names_the_limit() {
    let p = policy(EXAMPLE);
    let start = Instant::now();
    let call = |session: &str, tool: &str, at: Duration| {
        let verdict = p.check_input(tool, session, &json!({})).unwrap();
        p.admit(&verdict, tool, session, start + at)
    };
    call("s1", "search", Duration::ZERO).unwrap();
    call("s1", "search", Duration::from_secs(1)).unwrap();
    let (acted, result) = *call("s1", "search", Duration::from_secs(2)).unwrap_err();
    assert_eq!(acted, acted_rule("search-rate", "limit"));
    assert!(
        result.text().starts_with(
            "rate limit of rule 'search-rate': at most 2 calls in 60 s per page session"
        ),
        "{}",
        result.text()
    );
    assert!(result.text().contains("fits in 58 s"), "{}", result.text());
    // Another session, another tool under the same pattern: their own counts.
    call("s2", "search", Duration::from_secs(2)).unwrap();
    call("s1", "searchAll", Duration::from_secs(2)).unwrap();
    // A minute after the first call, one more fits.
    call("s1", "search", Duration::from_secs(60)).unwrap();
}

#[test]
fn redact_replaces_in_text_and_nested_structured_content_and_marks_the_result() {
    let p = policy(EXAMPLE);
    let mut result = result_of(json!({
        "content": [{"type": "text", "text": "{\"card\":\"4111 1111 1111 1111\",\"owner\":\"ada@example.com\"}"}],
        "structuredContent": {"items": [{"payment": {"card": "4111 1111 1111 1111"}}], "owner": "ada@example.com"},
    }));
    let acted = p.check_result("read_cart", "s1", &json!({}), &mut result);
    assert_eq!(acted, [acted_rule("mask-cart", "redact")]);
    let text = serde_json::to_string(&result).unwrap();
    assert!(!text.contains("4111"), "{text}");
    assert!(!text.contains("ada@"), "{text}");
    assert_eq!(
        result.structured_content.as_ref().unwrap()["items"][0]["payment"]["card"],
        "[redacted]"
    );
    assert_eq!(
        result.meta.unwrap()[ACTED_META],
        json!([{"rule": "mask-cart", "action": "redact"}])
    );
    // Nothing to replace: nothing acted, nothing marked.
    let mut clean = CallToolResult::success(json!({"items": []}));
    assert!(p
        .check_result("read_cart", "s1", &json!({}), &mut clean)
        .is_empty());
    assert!(clean.meta.is_none());
}

#[test]
fn result_rules_block_and_log_on_what_the_page_answered() {
    let p = policy(
        r#"
[[rule]]
id = "no-iban-out"
tools = ["export*"]
when = "has_iban(result.structuredContent) || result.content.exists(c, has_iban(c))"
action = "block"
message = "exports must not carry account numbers"

[[rule]]
id = "note-errors"
tools = ["*"]
when = "result.isError"
action = "log"
"#,
    );
    let mut leaking = CallToolResult::success(json!({"to": "DE89 3704 0044 0532 0130 00"}));
    let acted = p.check_result("export_csv", "s", &json!({}), &mut leaking);
    assert_eq!(acted, [acted_rule("no-iban-out", "block")]);
    assert!(leaking.is_error);
    assert_eq!(
        leaking.text(),
        "the result was withheld: exports must not carry account numbers"
    );
    let mut failed = CallToolResult::error("boom");
    let acted = p.check_result("other", "s", &json!({}), &mut failed);
    assert_eq!(acted, [acted_rule("note-errors", "log")]);
    // `log` rules are the operator's: not shown in the result.
    assert!(failed.meta.is_none());
    // The input checks see that these are result rules.
    assert!(
        p.check_input("export_csv", "s", &json!({}))
            .unwrap()
            .has_result_rules
    );
}

#[test]
fn the_detectors_are_functions_of_conditions() {
    let p = policy(&rule(
        "action = \"block\"\nwhen = \"has_card(input) || (has(input.notes) && has_email(input.notes)) || has_phone(input) || has_iban(input)\"",
    ));
    for (input, blocked) in [
        (json!({"n": "4242 4242 4242 4242"}), true),
        (json!({"n": "4242 4242 4242 4241"}), false),
        (json!({"n": 4_242_424_242_424_242u64}), false),
        (json!({"notes": ["x", {"y": "mail ada@example.com"}]}), true),
        (json!({"deep": {"phone": "+33 6 12 34 56 78"}}), true),
        (json!({"iban": "GB82WEST12345698765432"}), true),
        (json!({"plain": "nothing here 42"}), false),
    ] {
        assert_eq!(p.check_input("t", "s", &input).is_err(), blocked, "{input}");
    }
}

#[test]
fn every_mistake_in_a_file_is_refused_naming_the_rule() {
    for (text, says) in [
        ("[[rule]]\nid = \"a\"\ntools = [\"t\"]\naction = \"block\"\nwhen = \"input.\"", "rule 'a': 'when':"),
        (&rule("action = \"block\"\ncolour = \"red\""), "unknown field `colour`"),
        (&rule("action = \"explode\""), "unknown variant `explode`"),
        (&rule("action = \"limit\""), "rule 'r1': a limit rule needs 'calls'"),
        (&rule("action = \"limit\"\ncalls = 0\nwindow_seconds = 1"), "'calls' must be 1 to"),
        (&rule("action = \"block\"\ncalls = 3"), "'calls' belongs to limit rules, not to a block rule"),
        (&rule("action = \"redact\""), "needs 'redact' (detectors) or 'patterns'"),
        (&rule("action = \"redact\"\nredact = [\"ssn\"]"), "\"ssn\" is not a detector"),
        (&rule("action = \"redact\"\npatterns = [\"x*\"]"), "matches the empty text"),
        (&rule("action = \"redact\"\npatterns = [\"(\"]"), "'patterns' entry \"(\""),
        (&rule("action = \"redact\"\nredact = [\"email\"]\nreplacement = \"a@b.example.com\""), "itself something this rule replaces"),
        (&rule("action = \"confirm\"\nwhen = \"result.isError\""), "cannot read 'result'"),
        (&rule("action = \"block\"\nwhen = \"request.x == 1\""), "reads 'request'"),
        (&rule("action = \"block\"\nwhen = \"has_ssn(input)\""), "calls 'has_ssn'"),
        (&rule("action = \"block\"\nwhen = \"input.t.matches('(')\""), "rule 'r1': 'when': '(' is not a valid pattern"),
        ("[[rule]]\nid = \"bad id!\"\ntools = [\"t\"]\naction = \"log\"", "'id' must be"),
        ("[[rule]]\nid = \"a\"\ntools = []\naction = \"log\"", "rule 'a': a rule names what it covers: 'tools'"),
        ("[[rule]]\nid = \"a\"\nprompts = [\"p\"]\naction = \"confirm\"", "rule 'a': a confirm rule covers tool calls only"),
        ("[[rule]]\nid = \"a\"\nresources = [\"\"]\naction = \"log\"", "rule 'a': 'resources' entry \"\" must be 1 to"),
        ("[[rule]]\nid = \"a\"\ntools = [\"t\"]\naction = \"log\"\n[[rule]]\nid = \"a\"\ntools = [\"u\"]\naction = \"log\"", "rule 'a': another rule has the same id"),
        ("{\"rule\": [{\"id\": \"j\", \"tools\": [\"t\"], \"action\": \"log\", \"extra\": 1}]}", "unknown field `extra`"),
        ("{\"rules\": []}", "unknown field `rules`"),
        ("not toml at all [", "not a valid policy (TOML)"),
    ] {
        let error = refused(text);
        assert!(error.contains(says), "{text}\n→ {error}\n(expected {says})");
    }
    // JSON works as well as TOML.
    let json = policy(r#"{"rule": [{"id": "j", "tools": ["t"], "action": "log"}]}"#);
    assert_eq!(json.rule_ids().collect::<Vec<_>>(), ["j"]);
}

#[test]
fn hostile_policies_are_refused_at_load() {
    // Too long.
    let long = format!("input.a == '{}'", "x".repeat(MAX_CONDITION_BYTES));
    assert!(
        refused(&rule(&format!("action = \"block\"\nwhen = \"{long}\""))).contains("bytes long")
    );
    // Too deep (refused before the parser recurses).
    let deep = format!(
        "{}true{}",
        "(".repeat(MAX_CONDITION_NESTING + 1),
        ")".repeat(MAX_CONDITION_NESTING + 1)
    );
    assert!(
        refused(&rule(&format!("action = \"block\"\nwhen = \"{deep}\"")))
            .contains("nests brackets")
    );
    let deeper = format!("{}true{}", "[".repeat(1000), "]".repeat(1000));
    assert!(
        refused(&rule(&format!("action = \"block\"\nwhen = \"{deeper}\"")))
            .contains("nests brackets")
    );
    // Quadratic: a comprehension inside another.
    let nested = "input.items.all(x, input.items.exists(y, x == y))";
    assert!(
        refused(&rule(&format!("action = \"block\"\nwhen = \"{nested}\"")))
            .contains("nests a comprehension")
    );
    // Too many rules, too large a file.
    let many: String = (0..=MAX_RULES)
        .map(|n| format!("[[rule]]\nid = \"r{n}\"\ntools = [\"t\"]\naction = \"log\"\n"))
        .collect();
    assert!(refused(&many).contains("rules, more than"));
    let huge = format!("# {}\n", "x".repeat(MAX_POLICY_FILE_BYTES));
    assert!(refused(&huge).contains("more than the"));
}

#[test]
fn slow_conditions_and_large_inputs_are_bounded_and_fail_closed() {
    // Each iteration reads `input` (the budget is checked) and does work that grows with it.
    let p = policy(&rule(
        "action = \"log\"\nwhen = \"!input.items.all(x, input.items.size() > 0 && x in input.items)\"",
    ));
    let items: Vec<Value> = (0..20_000).map(Value::from).collect();
    let (acted, result) = *p
        .check_input("t", "s", &json!({"items": items}))
        .unwrap_err();
    assert_eq!(acted.action, "block");
    assert!(
        result.text().contains("longer than its budget"),
        "{}",
        result.text()
    );
    // `matches` in a loop: patterns are compiled once, and the budget is checked at each call.
    let p = policy(&rule(
        "action = \"log\"\nwhen = \"input.items.exists(x, string(x).matches('^(a|b|c|d)+[0-9]{3}$'))\"",
    ));
    // No timing is asserted (the machine may be loaded): the check ends, and if it ran out of its
    // budget it says so and blocks.
    let items: Vec<Value> = (0..20_000).map(|n| Value::from(format!("{n}"))).collect();
    if let Err(refused) = p.check_input("t", "s", &json!({"items": items})) {
        let (acted, result) = *refused;
        assert_eq!(acted.action, "block");
        assert!(
            result.text().contains("longer than its budget"),
            "{}",
            result.text()
        );
    }
    // More data than a condition sees: blocked, naming the bound.
    let p = policy(&rule("action = \"log\"\nwhen = \"size(input) > 0\""));
    let big = json!({"blob": "x".repeat(MAX_CONDITION_DATA_BYTES)});
    let (_, result) = *p.check_input("t", "s", &big).unwrap_err();
    assert!(
        result.text().contains("too large for a condition"),
        "{}",
        result.text()
    );
    // A pattern an agent sends is compiled within bounds, never a panic.
    let p = policy(&rule(
        "action = \"block\"\nwhen = \"'abc'.matches(input.re)\"",
    ));
    let (_, result) = *p.check_input("t", "s", &json!({"re": "("})).unwrap_err();
    assert!(
        result.text().contains("not a valid pattern"),
        "{}",
        result.text()
    );
    let (_, result) = *p
        .check_input("t", "s", &json!({"re": "x{1000}{1000}{1000}"}))
        .unwrap_err();
    // Refused by the regex engine's size limit, or (slow debug builds) by the time budget.
    assert!(
        result.text().contains("not a valid pattern") || result.text().contains("budget"),
        "{}",
        result.text()
    );
}

#[test]
fn the_demo_policy_loads_and_acts_as_its_comments_say() {
    let p = policy(include_str!("../../../../../demo/policy.toml"));
    let (acted, _) = *p
        .check_input("create_task", "s", &json!({"title": "api_key: abc"}))
        .unwrap_err();
    assert_eq!(acted.rule, "no-secrets-in-tasks");
    let verdict = p
        .check_input("create_task", "s", &json!({"title": "Delete the old logs"}))
        .unwrap();
    assert!(verdict.confirm);
    assert!(
        !p.check_input("create_task", "s", &json!({"title": "Write the docs"}))
            .unwrap()
            .confirm
    );
    let mut tasks = CallToolResult::success(json!({"tasks": [{"title": "call +1 415 555 0100"}]}));
    p.check_result("read_board_tasks", "s", &json!({}), &mut tasks);
    assert_eq!(
        tasks.structured_content.unwrap()["tasks"][0]["title"],
        "call [redacted]"
    );
}

#[test]
fn rules_cover_tools_by_original_name_with_patterns() {
    let p = policy(EXAMPLE);
    // `search*` covers `searchAll`; the log rule `*` every tool but the one its condition skips.
    assert_eq!(
        p.check_input("search", "s", &json!({})).unwrap().limits,
        [3]
    );
    assert_eq!(
        p.check_input("searchAll", "s", &json!({})).unwrap().limits,
        [3]
    );
    assert!(p
        .check_input("Search", "s", &json!({}))
        .unwrap()
        .limits
        .is_empty());
    assert!(Policy::default().is_empty());
    assert_ne!(p.digest(), Policy::default().digest());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    /// Any text as a policy: an answer (a policy or an error), never a panic.
    #[test]
    fn any_policy_text_loads_or_is_refused(text in ".{0,400}") {
        let _ = Policy::parse(&text);
    }

    /// Any condition built from CEL's pieces: it compiles or is refused, and when it compiles any
    /// input gets a decision (allowed, or blocked with a message), never a panic.
    #[test]
    fn any_condition_over_any_input_is_decided(
        condition in condition_strategy(),
        input in json_strategy(),
    ) {
        let text = format!("[[rule]]\nid = \"f\"\ntools = [\"*\"]\naction = \"block\"\nwhen = '''{condition}'''\n");
        if let Ok(p) = Policy::parse(&text) {
            match p.check_input("t", "s", &input) {
                Ok(_) => {}
                Err(refusal) => {
                    let (acted, result) = *refusal;
                    prop_assert_eq!(acted.rule, "f");
                    prop_assert!(result.is_error);
                    prop_assert!(!result.text().is_empty());
                }
            }
            let mut result = CallToolResult::success(input.clone());
            let _ = p.check_result("t", "s", &input, &mut result);
        }
    }

    /// Redaction leaves no detected value behind, whatever surrounds it.
    #[test]
    fn redaction_leaves_nothing_it_detects(prefix in "[a-z ]{0,20}", suffix in "[a-z ]{0,20}") {
        let p = policy("[[rule]]\nid = \"m\"\ntools = [\"*\"]\naction = \"redact\"\nredact = [\"card\", \"email\", \"iban\", \"phone\"]");
        let text = format!("{prefix} 4111 1111 1111 1111 {suffix} ada@example.com DE89 3704 0044 0532 0130 00 +1 415 555 0100");
        let mut result = CallToolResult::success(json!({"deep": [{"t": text.clone()}]}));
        p.check_result("t", "s", &json!({}), &mut result);
        let out = result.structured_content.as_ref().unwrap()["deep"][0]["t"].as_str().unwrap();
        for detector in detectors::Detector::ALL {
            prop_assert!(!detector.finds(out), "{}", out);
        }
    }
}

fn condition_strategy() -> impl Strategy<Value = String> {
    let atoms = prop::sample::select(vec![
        "input",
        "input.a",
        "input.items",
        "result",
        "tool",
        "session",
        "1",
        "'x'",
        "true",
        "null",
        "[1, 2]",
        "{'k': 1}",
        "input.a.b",
        "size(input)",
        "has(input.a)",
    ]);
    let ops = prop::sample::select(vec![
        " == ", " != ", " < ", " > ", " && ", " || ", " + ", " in ", " - ", " * ", " / ",
    ]);
    let wraps = prop::sample::select(vec![
        "{}",
        "!({})",
        "({})",
        "has_email({})",
        "has_card({})",
        "string({}).matches('a+')",
        "{}.exists(x, x == 1)",
        "{}.all(x, true)",
        "size({}) > 0",
        "{}.map(x, x)",
    ]);
    (atoms.clone(), ops, atoms, wraps)
        .prop_map(|(a, op, b, wrap)| wrap.replace("{}", &format!("{a}{op}{b}")))
}

fn json_strategy() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        ".{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::from),
            prop::collection::btree_map("[a-z]{1,3}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// The cost of the policy per call, in release mode:
/// `cargo test -p client-tools-bridge --release --lib policy::tests::cost_per_call -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement: run in release mode"]
fn cost_per_call() {
    let p = policy(EXAMPLE);
    let input = json!({"title": "buy milk and eggs", "board": "home", "tags": ["a", "b"]});
    let rounds = 20_000u32;
    let measure = |what: &str, run: &dyn Fn()| {
        for _ in 0..1_000 {
            run();
        }
        let started = Instant::now();
        for _ in 0..rounds {
            run();
        }
        let each = started.elapsed() / rounds;
        println!("{what}: {:.2} µs", each.as_nanos() as f64 / 1000.0);
    };
    // One rule with a condition (the regex) and the `log` rule's condition: two evaluated rules.
    measure("check_input, create_task (2 conditions evaluated)", &|| {
        p.check_input("create_task", "s1", &input).unwrap();
    });
    let one = policy(&rule("action = \"block\"\nwhen = \"input.amount > 500\""));
    measure("check_input, one rule `input.amount > 500`", &|| {
        one.check_input("t", "s1", &json!({"amount": 20})).unwrap();
    });
    measure("check_input, no rule covers the tool", &|| {
        one.check_input("other", "s1", &input).unwrap();
    });
    let cart = json!({"items": [{"sku": "A1", "payment": {"card": "4111 1111 1111 1111"}}],
                      "owner": {"contacts": ["ada@example.com"]}});
    measure("check_result, redact card+email in a small cart", &|| {
        let mut result = CallToolResult::success(cart.clone());
        p.check_result("read_cart", "s1", &input, &mut result);
    });
    let verdict = p.check_input("search", "s1", &input).unwrap();
    let start = Instant::now();
    measure("admit, one limit rule", &|| {
        let _ = p.admit(&verdict, "search", "s1", start);
    });
}

/// Alice's two tabs and Bob's one (SPEC §13).
fn tab<'a>(session: &'a str, user: &'a str) -> Who<'a> {
    Who {
        session,
        user: Some(user),
    }
}

#[test]
fn user_in_a_condition_is_the_sessions_user_and_empty_without_one() {
    let p = policy(
        r#"
[[rule]]
id = "not-for-alice"
tools = ["*"]
when = 'user == "alice"'
action = "block"

[[rule]]
id = "signed-in-only"
tools = ["pay"]
when = 'user == ""'
action = "block"
"#,
    );
    let input = json!({});
    let (acted, _) = *p
        .check_input("read", tab("a1", "alice"), &input)
        .unwrap_err();
    assert_eq!(acted, acted_rule("not-for-alice", "block"));
    assert!(p.check_input("read", tab("b1", "bob"), &input).is_ok());
    // `session` is still the session id: a user named like a session changes nothing.
    assert!(p.check_input("read", tab("alice", "bob"), &input).is_ok());
    let (acted, _) = *p.check_input("pay", "s-without-user", &input).unwrap_err();
    assert_eq!(acted, acted_rule("signed-in-only", "block"));
    assert!(p.check_input("pay", tab("b1", "bob"), &input).is_ok());
}

#[test]
fn a_per_user_limit_counts_a_users_tabs_together_and_others_apart() {
    let p = policy(
        r#"
[[rule]]
id = "orders"
tools = ["order"]
action = "limit"
calls = 2
window_seconds = 60
per = "user"
"#,
    );
    let start = Instant::now();
    let call = |who: Who<'_>| {
        let verdict = p.check_input("order", who, &json!({})).unwrap();
        p.admit(&verdict, "order", who, start)
    };
    call(tab("a1", "alice")).unwrap();
    call(tab("a2", "alice")).unwrap();
    // Alice's third order, from either tab: refused, naming the user.
    let (_, result) = *call(tab("a1", "alice")).unwrap_err();
    assert!(result.text().contains("per user"), "{}", result.text());
    assert!(call(tab("a3", "alice")).is_err());
    // Bob has his own count; a session without a user counts alone.
    call(tab("b1", "bob")).unwrap();
    call("lone".into()).unwrap();
    call("lone".into()).unwrap();
    call("other".into()).unwrap();
    // `per` belongs to limit rules only.
    let error = Policy::parse(
        r#"
[[rule]]
id = "x"
tools = ["*"]
action = "block"
per = "user"
"#,
    )
    .unwrap_err();
    assert!(error.contains("per"), "{error}");
}

/// Rules name prompts by name and resources by URI (`prompts`, `resources`, `*` as in `tools`),
/// beside or instead of tools; each kind is matched alone (a prompt named like a tool is not the
/// tool).
#[test]
fn rules_cover_prompts_by_name_and_resources_by_uri() {
    use super::{Kind, Target};
    let policy = policy(
        r#"
[[rule]]
id = "no-secrets"
resources = ["app://secrets/*", "file:///etc/*"]
action = "block"

[[rule]]
id = "no-admin-prompt"
prompts = ["admin_*"]
tools = ["admin_*"]
action = "block"
message = "admin is off limits"

[[rule]]
id = "lang"
prompts = ["greet"]
when = "has(input.lang) && input.lang == 'xx'"
action = "block"
"#,
    );
    let who = Who::from("s1");
    let resource = |uri| Target::of(Kind::Resource, uri);
    let prompt = |name| Target::of(Kind::Prompt, name);
    let input = |uri: &str| json!({ "uri": uri });
    let refused = policy
        .check_input_on(
            resource("app://secrets/a/b"),
            who,
            &input("app://secrets/a/b"),
        )
        .unwrap_err();
    assert_eq!(refused.0, acted_rule("no-secrets", "block"));
    assert!(refused.1.contains("rule 'no-secrets'"), "{}", refused.1);
    assert!(policy
        .check_input_on(resource("app://notes/1"), who, &input("app://notes/1"))
        .is_ok());
    let admin = policy
        .check_input_on(prompt("admin_reset"), who, &json!({}))
        .unwrap_err();
    assert_eq!(admin.1, "admin is off limits");
    // A prompt's rule reads its arguments as `input`.
    assert!(policy
        .check_input_on(prompt("greet"), who, &json!({"lang": "xx"}))
        .is_err());
    assert!(policy
        .check_input_on(prompt("greet"), who, &json!({"lang": "en"}))
        .is_ok());
    // A prompt pattern does not cover a resource of the same name, nor the reverse.
    assert!(policy
        .check_input_on(resource("admin_reset"), who, &json!({}))
        .is_ok());
    // Lists leave out what a block rule decides on without the request's arguments.
    assert!(policy.hides(resource("app://secrets/x"), who, &input("app://secrets/x")));
    assert!(policy.hides(prompt("admin_x"), who, &json!({})));
    assert!(
        !policy.hides(prompt("greet"), who, &json!({})),
        "undecided without arguments: listed"
    );
}

/// What an agent reads of a served request is redacted: a resource's text and `uri`, a blob of
/// text (decoded, redacted, encoded again), a binary blob withheld; a prompt's description and
/// every content block of its messages (an embedded resource's text and blob too); a completion's
/// values.
#[test]
fn redact_covers_resource_contents_prompt_messages_and_completions() {
    use base64::Engine as _;

    use super::redact::Redaction;
    use crate::calls::served::method;
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    let redaction = Redaction {
        detectors: vec![super::detectors::Detector::from_name("email").unwrap()],
        patterns: Vec::new(),
        replacement: "[x]".into(),
    };
    let mut read = json!({"contents": [
        {"uri": "app://a", "mimeType": "text/plain", "text": "mail ada@example.com"},
        {"uri": "app://b", "mimeType": "text/csv", "blob": b64(b"name,mail\nada,ada@example.com")},
        {"uri": "app://c", "mimeType": "image/png", "blob": b64(&[0x89, 0x50, 0xff, 0xfe, 0x00])},
        {"uri": "app://d", "mimeType": "text/plain", "blob": b64(b"nothing here")},
    ], "_meta": {"by": "ada@example.com"}});
    let replaced = redaction.in_answer(method::RESOURCES_READ, &mut read);
    assert_eq!(replaced, 4, "{read}");
    assert_eq!(read["contents"][0]["text"], "mail [x]");
    assert_eq!(read["contents"][1]["blob"], b64(b"name,mail\nada,[x]"));
    assert_eq!(read["contents"][2].get("blob"), None, "binary: withheld");
    assert_eq!(
        read["contents"][2]["text"],
        "[x] (binary data withheld by the bridge's policy)"
    );
    assert_eq!(read["contents"][2]["mimeType"], "text/plain");
    assert_eq!(read["contents"][3]["blob"], b64(b"nothing here"));
    assert_eq!(read["_meta"]["by"], "[x]");

    let mut prompt = json!({"description": "for ada@example.com", "messages": [
        {"role": "user", "content": {"type": "text", "text": "hi ada@example.com"}},
        {"role": "user", "content": {"type": "image", "data": "QUJD", "mimeType": "image/png",
                                     "annotations": {"note": "ada@example.com"}}},
        {"role": "user", "content": {"type": "resource", "resource":
            {"uri": "app://ada@example.com", "text": "ada@example.com"}}},
        {"role": "user", "content": {"type": "resource", "resource":
            {"uri": "app://z", "blob": b64(b"to ada@example.com")}}},
        {"role": "assistant", "content": {"type": "resource_link", "uri": "app://l",
                                          "name": "ada@example.com"}},
    ]});
    redaction.in_answer(method::PROMPTS_GET, &mut prompt);
    assert!(!prompt.to_string().contains("ada@example.com"), "{prompt}");
    assert_eq!(prompt["messages"][1]["content"]["data"], "QUJD");
    assert_eq!(
        prompt["messages"][3]["content"]["resource"]["blob"],
        b64(b"to [x]")
    );
    assert_eq!(prompt["messages"][0]["role"], "user");

    let mut completion =
        json!({"completion": {"values": ["ada@example.com", "bob"], "hasMore": false}});
    redaction.in_answer(method::COMPLETION_COMPLETE, &mut completion);
    assert_eq!(completion["completion"]["values"], json!(["[x]", "bob"]));
}
