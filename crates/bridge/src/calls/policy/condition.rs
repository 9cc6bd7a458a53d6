//! A rule's condition: a CEL expression (cel-rust) over `input`, `result`, `tool`, `session`,
//! `user` (the session's user, SPEC §13: `""` without one) and `annotations` (the tool's, `{}`
//! without any),
//! with the detectors of personal data as functions, compiled once when the policy loads and
//! evaluated within bounds.
//!
//! CEL has no loops of its own and always ends, but a comprehension over a large input can still
//! take long (`input.items.all(x, x in input.items)` is quadratic). So, at load, an expression is
//! refused when it is longer than [`MAX_CONDITION_BYTES`], nests brackets deeper than
//! [`MAX_CONDITION_NESTING`] (before it is parsed: the parser recurses) or nests a comprehension in
//! another one; and, at evaluation, the data it sees is at most [`MAX_CONDITION_DATA_BYTES`] and
//! [`MAX_CONDITION_DATA_DEPTH`] deep, and every read of a variable and every call of the policy's
//! functions checks the time budget ([`CONDITION_BUDGET`]). Patterns, here and in `redact` rules,
//! are compiled by [`bounded_regex`]. Anything over a bound is an evaluation error, and the caller fails closed.

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use cel::common::ast::{Expr, LiteralValue};
use cel::common::value::CowVal;
use cel::context::VariableResolver;
use cel::extractors::This;
use cel::objects::{Key, Map as CelMap};
use cel::{Context, ExecutionError, IdedExpr, Program, Value};
use serde_json::Value as Json;

use super::detectors::Detector;
use crate::limits::{
    CONDITION_BUDGET, MAX_CACHED_PATTERNS, MAX_COMPILED_PATTERN_BYTES, MAX_CONDITION_BYTES,
    MAX_CONDITION_DATA_BYTES, MAX_CONDITION_DATA_DEPTH, MAX_CONDITION_NESTING, MAX_PATTERN_BYTES,
};

/// The variables a condition may read.
pub const VARIABLES: [&str; 6] = ["input", "result", "tool", "session", "user", "annotations"];

/// A compiled condition.
pub struct Condition {
    program: Program,
    source: String,
    reads_result: bool,
    /// Whether it reads `annotations` (converted for it alone: today's rules pay nothing).
    reads_annotations: bool,
    /// The patterns `matches` is called with as literals, compiled at load (an invalid one is a
    /// load error; none is compiled on the clock of a call).
    patterns: Vec<(String, regex::Regex)>,
}

impl std::fmt::Debug for Condition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.source)
    }
}

/// What a condition sees of one call.
pub struct Facts<'a> {
    pub tool: &'a str,
    pub session: &'a str,
    /// The session's user (SPEC §13); `""` without one.
    pub user: &'a str,
    pub input: &'a Json,
    /// The call's result as MCP writes it (`content`, `structuredContent`, `isError`); `None`
    /// before the call ran.
    pub result: Option<&'a Json>,
    /// The tool's annotations (crate::calls::tool_annotations); `None` is read as `{}` (a tool
    /// without any, a prompt, a resource).
    pub annotations: Option<&'a Json>,
}

impl Condition {
    /// Compiles `source`, or says what is wrong with it.
    pub fn compile(source: &str) -> Result<Self, String> {
        if source.len() > MAX_CONDITION_BYTES {
            return Err(format!(
                "the condition is {} bytes long, more than the {MAX_CONDITION_BYTES} allowed",
                source.len()
            ));
        }
        let nesting = nesting_of(source);
        if nesting > MAX_CONDITION_NESTING {
            return Err(format!(
                "the condition nests brackets {nesting} deep, more than the {MAX_CONDITION_NESTING} allowed"
            ));
        }
        let program = Program::compile(source).map_err(|error| error.to_string())?;
        let mut bound = Vec::new();
        let mut literals = Vec::new();
        inspect(program.expression(), false, &mut bound, &mut literals)?;
        let patterns = literals
            .into_iter()
            .map(|pattern| compile_pattern(&pattern).map(|compiled| (pattern, compiled)))
            .collect::<Result<Vec<_>, _>>()?;
        let references = program.references();
        for variable in references.variables() {
            if !VARIABLES.contains(&variable) && !bound.iter().any(|b| b == variable) {
                return Err(format!(
                    "the condition reads '{variable}', which is not one of {}",
                    VARIABLES.join(", ")
                ));
            }
        }
        for function in references.functions() {
            if !is_known_function(function) {
                return Err(format!(
                    "the condition calls '{function}', which CEL here does not have"
                ));
            }
        }
        let reads_result = references.has_variable("result");
        let reads_annotations = references.has_variable("annotations");
        Ok(Self {
            program,
            source: source.to_owned(),
            reads_result,
            reads_annotations,
            patterns,
        })
    }

    /// Whether the condition reads `result` (it is then decided once the call has run).
    pub fn reads_result(&self) -> bool {
        self.reads_result
    }

    /// Whether the condition holds for `facts`; an error (a bound passed, a value of the wrong
    /// type, a missing field) says why it could not be decided.
    pub fn holds(&self, facts: &Facts, evaluator: &Evaluator) -> Result<bool, String> {
        let started = Instant::now();
        let deadline = started + CONDITION_BUDGET;
        let input = to_cel(facts.input, "input")?;
        let result = match facts.result {
            Some(result) => to_cel(result, "result")?,
            None => Value::Null,
        };
        let annotations = match (self.reads_annotations, facts.annotations) {
            (false, _) => Value::Null,
            (true, Some(annotations)) => to_cel(annotations, "annotations")?,
            (true, None) => Value::Map(CelMap {
                map: Arc::new(HashMap::new()),
            }),
        };
        let resolver = Variables {
            input: into_val(input)?,
            result: into_val(result)?,
            tool: into_val(Value::String(Arc::new(facts.tool.to_owned())))?,
            session: into_val(Value::String(Arc::new(facts.session.to_owned())))?,
            user: into_val(Value::String(Arc::new(facts.user.to_owned())))?,
            annotations: into_val(annotations)?,
            deadline,
            overran: AtomicBool::new(false),
        };
        let mut context = evaluator.base.new_inner_scope();
        context.set_variable_resolver(&resolver);
        DEADLINE.set(Some(deadline));
        let value = self.program.execute(&context);
        DEADLINE.set(None);
        if resolver.overran.load(Ordering::Relaxed) || Instant::now() > deadline {
            return Err(format!(
                "the condition ran longer than its budget of {} ms",
                CONDITION_BUDGET.as_millis()
            ));
        }
        match value {
            Ok(Value::Bool(holds)) => Ok(holds),
            Ok(other) => Err(format!(
                "the condition must be true or false, not {:?}",
                other.type_of()
            )),
            Err(error) => Err(error.to_string()),
        }
    }
}

/// The variables of one evaluation: every read checks the time budget.
struct Variables {
    input: Box<dyn cel::common::value::Val>,
    result: Box<dyn cel::common::value::Val>,
    tool: Box<dyn cel::common::value::Val>,
    session: Box<dyn cel::common::value::Val>,
    user: Box<dyn cel::common::value::Val>,
    annotations: Box<dyn cel::common::value::Val>,
    deadline: Instant,
    overran: AtomicBool,
}

impl VariableResolver for Variables {
    fn resolve<'b>(&'b self, variable: &str) -> Option<CowVal<'b, 'b>> {
        if Instant::now() > self.deadline {
            self.overran.store(true, Ordering::Relaxed);
            return None;
        }
        let value = match variable {
            "input" => &self.input,
            "result" => &self.result,
            "tool" => &self.tool,
            "session" => &self.session,
            "user" => &self.user,
            "annotations" => &self.annotations,
            _ => return None,
        };
        Some(CowVal::Borrowed(value.as_ref()))
    }
}

fn into_val(value: Value) -> Result<Box<dyn cel::common::value::Val>, String> {
    value
        .try_into()
        .map_err(|_| "a value CEL cannot hold".to_owned())
}

/// The compiled patterns of `matches`, shared by every evaluation of a policy.
#[derive(Default)]
struct Patterns(Mutex<HashMap<String, regex::Regex>>);

impl Patterns {
    fn is_match(&self, text: &str, pattern: &str) -> Result<bool, String> {
        let mut cache = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(compiled) = cache.get(pattern) {
            return Ok(compiled.is_match(text));
        }
        let compiled = compile_pattern(pattern)?;
        let found = compiled.is_match(text);
        if cache.len() < MAX_CACHED_PATTERNS {
            cache.insert(pattern.to_owned(), compiled);
        }
        Ok(found)
    }
}

/// A pattern `matches` is called with, compiled ([`bounded_regex`]).
fn compile_pattern(pattern: &str) -> Result<regex::Regex, String> {
    bounded_regex(pattern).map_err(|bad| match bad {
        BadPattern::Invalid(error) => format!("'{pattern}' is not a valid pattern: {error}"),
        too_long => too_long.to_string(),
    })
}

/// A regular expression of the policy (what a condition's `matches` is called with, a `redact`
/// rule's `patterns`), compiled within its bounds: at most [`MAX_PATTERN_BYTES`] long and
/// [`MAX_COMPILED_PATTERN_BYTES`] compiled. The regex engine matches in linear time.
pub(super) fn bounded_regex(source: &str) -> Result<regex::Regex, BadPattern> {
    if source.len() > MAX_PATTERN_BYTES {
        return Err(BadPattern::TooLong(source.len()));
    }
    regex::RegexBuilder::new(source)
        .size_limit(MAX_COMPILED_PATTERN_BYTES)
        .build()
        .map_err(BadPattern::Invalid)
}

/// Why [`bounded_regex`] refused a pattern.
#[derive(Debug)]
pub(super) enum BadPattern {
    /// Its length in bytes, over [`MAX_PATTERN_BYTES`].
    TooLong(usize),
    Invalid(regex::Error),
}

impl std::fmt::Display for BadPattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BadPattern::TooLong(bytes) => write!(
                f,
                "a pattern of {bytes} bytes is longer than the {MAX_PATTERN_BYTES} allowed"
            ),
            BadPattern::Invalid(error) => error.fmt(f),
        }
    }
}

thread_local! {
    /// The deadline of the evaluation running on this thread (evaluations are synchronous).
    static DEADLINE: Cell<Option<Instant>> = const { Cell::new(None) };
}

fn within_budget() -> Result<(), ExecutionError> {
    match DEADLINE.get() {
        Some(deadline) if Instant::now() > deadline => Err(ExecutionError::function_error(
            "budget",
            "the condition ran longer than its budget",
        )),
        _ => Ok(()),
    }
}

/// The context every condition of a policy runs in: CEL's standard library, `matches` (cached,
/// bounded patterns) and one function per detector (`has_email(x)`, …: any string inside `x`).
pub struct Evaluator {
    base: Context<'static, 'static>,
    patterns: Arc<Patterns>,
}

impl Evaluator {
    /// Keeps a condition's literal patterns compiled (whatever the cache's bound).
    pub fn keep_patterns(&self, condition: &Condition) {
        let mut cache = self.patterns.0.lock().unwrap_or_else(|p| p.into_inner());
        for (pattern, compiled) in &condition.patterns {
            cache.insert(pattern.clone(), compiled.clone());
        }
    }
}

impl Default for Evaluator {
    fn default() -> Self {
        let patterns = Arc::new(Patterns::default());
        let shared = patterns.clone();
        let mut base = Context::default();
        base.add_function(
            "matches",
            move |This(text): This<Arc<String>>, pattern: Arc<String>| {
                within_budget()?;
                patterns
                    .is_match(&text, &pattern)
                    .map_err(|error| ExecutionError::function_error("matches", error))
            },
        )
        .expect("matches is not a standard function without the regex feature");
        for detector in Detector::ALL {
            base.add_function(detector.function(), move |value: Value| {
                within_budget()?;
                Ok::<_, ExecutionError>(any_string(&value, &|text| detector.finds(text)))
            })
            .expect("detector names are not standard functions");
        }
        Self {
            base,
            patterns: shared,
        }
    }
}

fn is_known_function(name: &str) -> bool {
    name == "matches"
        || Detector::ALL.iter().any(|d| d.function() == name)
        || !name.starts_with("has_")
}

/// Whether any string in `value` (keys excluded) satisfies `test`.
fn any_string(value: &Value, test: &dyn Fn(&str) -> bool) -> bool {
    match value {
        Value::String(text) => test(text),
        Value::List(items) => items.iter().any(|item| any_string(item, test)),
        Value::Map(map) => map.map.values().any(|item| any_string(item, test)),
        _ => false,
    }
}

/// The deepest nesting of brackets in `source`, outside string literals.
fn nesting_of(source: &str) -> usize {
    let (mut depth, mut deepest, mut quote, mut escaped) = (0usize, 0usize, None, false);
    for c in source.chars() {
        if let Some(q) = quote {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                _ if c == q => quote = None,
                _ => {}
            }
            continue;
        }
        match c {
            '"' | '\'' => quote = Some(c),
            '(' | '[' | '{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// Refuses a comprehension (`all`, `exists`, `map`, `filter`) inside another one's step.
/// Walks a condition: refuses a comprehension in another's step, collects the variables
/// comprehensions bind (`x` in `all(x, …)`) into `bound` and the literal patterns of `matches`.
fn inspect(
    expression: &IdedExpr,
    inside: bool,
    bound: &mut Vec<String>,
    patterns: &mut Vec<String>,
) -> Result<(), String> {
    if let Expr::Call(call) = &expression.expr {
        if call.func_name == "matches" {
            let pattern = match (&call.target, call.args.as_slice()) {
                (Some(_), [pattern]) | (None, [_, pattern]) => Some(pattern),
                _ => None,
            };
            if let Some(IdedExpr {
                expr: Expr::Literal(LiteralValue::String(pattern)),
                ..
            }) = pattern
            {
                patterns.push(pattern.inner().to_owned());
            }
        }
    }
    let mut walk = |e: &IdedExpr| inspect(e, inside, bound, patterns);
    match &expression.expr {
        Expr::Comprehension(comprehension) => {
            if inside {
                return Err(
                    "the condition nests a comprehension (all, exists, map, filter) in another: \
                     its cost would grow with the square of the input"
                        .to_owned(),
                );
            }
            bound.push(comprehension.iter_var.clone());
            bound.extend(comprehension.iter_var2.clone());
            bound.push(comprehension.accu_var.clone());
            inspect(&comprehension.iter_range, false, bound, patterns)?;
            inspect(&comprehension.accu_init, false, bound, patterns)?;
            inspect(&comprehension.loop_cond, true, bound, patterns)?;
            inspect(&comprehension.loop_step, true, bound, patterns)?;
            inspect(&comprehension.result, false, bound, patterns)
        }
        Expr::Call(call) => {
            if let Some(target) = &call.target {
                walk(target)?;
            }
            call.args.iter().try_for_each(walk)
        }
        Expr::List(list) => list.elements.iter().try_for_each(walk),
        Expr::Map(map) => map.entries.iter().try_for_each(|entry| match &entry.expr {
            cel::common::ast::EntryExpr::MapEntry(entry) => {
                walk(&entry.key)?;
                walk(&entry.value)
            }
            cel::common::ast::EntryExpr::StructField(field) => walk(&field.value),
        }),
        Expr::Select(select) => walk(&select.operand),
        Expr::Struct(structure) => {
            structure
                .entries
                .iter()
                .try_for_each(|entry| match &entry.expr {
                    cel::common::ast::EntryExpr::MapEntry(entry) => {
                        walk(&entry.key)?;
                        walk(&entry.value)
                    }
                    cel::common::ast::EntryExpr::StructField(field) => walk(&field.value),
                })
        }
        _ => Ok(()),
    }
}

/// `value` as CEL sees it, within [`MAX_CONDITION_DATA_BYTES`] and [`MAX_CONDITION_DATA_DEPTH`].
fn to_cel(value: &Json, name: &str) -> Result<Value, String> {
    let mut budget = MAX_CONDITION_DATA_BYTES;
    convert(value, 0, &mut budget).ok_or_else(|| {
        format!(
            "'{name}' is too large for a condition (at most {MAX_CONDITION_DATA_BYTES} bytes, \
             {MAX_CONDITION_DATA_DEPTH} levels deep)"
        )
    })
}

fn convert(value: &Json, depth: usize, budget: &mut usize) -> Option<Value> {
    if depth > MAX_CONDITION_DATA_DEPTH {
        return None;
    }
    let spend = |budget: &mut usize, bytes: usize| {
        *budget = budget.checked_sub(bytes.max(1))?;
        Some(())
    };
    Some(match value {
        Json::Null => {
            spend(budget, 4)?;
            Value::Null
        }
        Json::Bool(b) => {
            spend(budget, 4)?;
            Value::Bool(*b)
        }
        Json::Number(number) => {
            spend(budget, 8)?;
            match (number.as_i64(), number.as_u64(), number.as_f64()) {
                (Some(i), _, _) => Value::Int(i),
                (None, Some(u), _) => Value::UInt(u),
                (_, _, Some(f)) => Value::Float(f),
                _ => Value::Null,
            }
        }
        Json::String(text) => {
            spend(budget, text.len() + 2)?;
            Value::String(Arc::new(text.clone()))
        }
        Json::Array(items) => {
            spend(budget, 2)?;
            let items = items
                .iter()
                .map(|item| convert(item, depth + 1, budget))
                .collect::<Option<Vec<_>>>()?;
            Value::List(Arc::new(items))
        }
        Json::Object(object) => {
            spend(budget, 2)?;
            let mut map = HashMap::with_capacity(object.len());
            for (key, item) in object {
                spend(budget, key.len() + 3)?;
                map.insert(
                    Key::String(Arc::new(key.clone())),
                    convert(item, depth + 1, budget)?,
                );
            }
            Value::Map(CelMap { map: Arc::new(map) })
        }
    })
}
