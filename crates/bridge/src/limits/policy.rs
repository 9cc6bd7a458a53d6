//! The operator's guardrails (`--policy FILE`): the file, its rules' conditions and patterns, and
//! the counts of `limit` rules.

use std::time::Duration;

/// The largest policy file read.
pub const MAX_POLICY_FILE_BYTES: usize = 1024 * 1024;

/// The most rules in one policy.
pub const MAX_RULES: usize = 512;

/// The most tool patterns in one rule; and the most detectors, and redaction patterns, in one
/// `redact` rule.
pub const MAX_PATTERNS_PER_RULE: usize = 64;

/// The longest rule `id`, in bytes.
pub const MAX_RULE_ID_BYTES: usize = 64;

/// The longest tool pattern of a rule's `tools`, in bytes.
pub const MAX_TOOL_PATTERN_BYTES: usize = 256;

/// The longest `message` (`block`, `limit`) and `replacement` (`redact`), in bytes.
pub const MAX_RULE_TEXT_BYTES: usize = 1_024;

/// The longest regular expression, in bytes: a `redact` rule's `patterns`, and what a condition's
/// `matches` is called with (a literal at load, or a value at run time).
pub const MAX_PATTERN_BYTES: usize = 1_024;

/// The most memory one compiled pattern may take (the regex engine's size limit).
pub const MAX_COMPILED_PATTERN_BYTES: usize = 1 << 20;

/// Patterns `matches` is called with at run time kept compiled at once (the literals of the
/// policy's conditions are kept whatever this bound).
pub const MAX_CACHED_PATTERNS: usize = 256;

/// The longest condition (`when`), in bytes.
pub const MAX_CONDITION_BYTES: usize = 2_048;

/// The deepest nesting of `(`, `[` and `{` in a condition.
pub const MAX_CONDITION_NESTING: usize = 24;

/// The most bytes of JSON a condition sees in `input` or `result` (each): more is an error (the
/// call fails closed).
pub const MAX_CONDITION_DATA_BYTES: usize = 256 * 1024;

/// The deepest JSON a condition sees.
pub const MAX_CONDITION_DATA_DEPTH: usize = 64;

/// How long one condition may run; over it, it is an error (the call fails closed).
pub const CONDITION_BUDGET: Duration = Duration::from_millis(50);

/// The most calls a `limit` rule may allow in its window (each is remembered until it leaves it).
pub const MAX_LIMIT_CALLS: u32 = 10_000;

/// The longest window of a `limit` rule, in seconds (a day).
pub const MAX_LIMIT_WINDOW_SECONDS: u64 = 86_400;

/// The most (session, rule, tool) counts of `limit` rules kept at once: past it, stale ones are
/// dropped, and a new one that still does not fit is refused (fails closed).
pub const MAX_LIMIT_COUNTS: usize = 100_000;
