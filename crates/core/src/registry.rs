//! The tools a page offers (SPEC §3): defined functions, handlers for agent-defined tools, and
//! (later) declarative forms, each under its unique normalized name.
//!
//! The registry is generic over the handler type `H`, so the wasm layer can keep JavaScript
//! functions in it while this module stays browser-free. Entries are handed out as `Arc`s: a caller
//! clones one out, drops its borrow of the registry, and only then runs page code (which may define
//! or remove tools while it runs).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::limits;
use crate::names::NameTable;
use crate::protocol::{self, meta};
use crate::validate::{self, CompiledSchema};
use crate::{CoreError, WarningCode};

pub use crate::limits::{DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolKind {
    /// Defined by the page with `defineFunction`: the page owns name, schemas and handler.
    Function,
    /// A handler for a tool the agent defines (`registerHandler`): schemas arrive with each call.
    Handler,
    /// A declarative `<form toolname>` (SPEC §8).
    Form,
    /// A tool other code registered with the browser's `modelContext`, adopted
    /// (`adoptBrowserTools`, SPEC §8): it runs through its own `execute`.
    Browser,
}

impl ToolKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ToolKind::Function => "function",
            ToolKind::Handler => "handler",
            ToolKind::Form => "form",
            ToolKind::Browser => "browser",
        }
    }
}

/// What the page declared, before checks and compilation.
#[derive(Debug, Clone, Default)]
pub struct Declaration {
    pub original_name: String,
    pub description: Option<String>,
    pub parameters: Option<Value>,
    pub output_schema: Option<Value>,
    pub annotations: Option<Value>,
    /// `Some(false)`: the page opts out of the confirmation its annotations would ask for.
    pub require_confirmation: Option<bool>,
    pub timeout_ms: Option<f64>,
    /// `taskSupport`; `None`: [`TaskSupport::default_for`].
    pub task_support: Option<TaskSupport>,
    /// `concurrency`: at most this many calls run at once, as written (checked by
    /// [`Registry::define`]); `None`: no bound.
    pub concurrency: Option<f64>,
}

/// Whether an agent that speaks the MCP tasks extension may run a tool's calls as tasks (SPEC §4
/// "Long calls as tasks"; MCP tool `execution.taskSupport`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskSupport {
    Forbidden,
    Optional,
    Required,
}

impl TaskSupport {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskSupport::Forbidden => "forbidden",
            TaskSupport::Optional => "optional",
            TaskSupport::Required => "required",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        [Self::Forbidden, Self::Optional, Self::Required]
            .into_iter()
            .find(|t| t.as_str() == text)
    }

    /// What a tool that says nothing gets: `optional` when its calls wait on a person (a form,
    /// which the person may submit; a confirmation), `forbidden` otherwise.
    pub fn default_for(kind: ToolKind, asks_first: bool) -> Self {
        match kind == ToolKind::Form || asks_first {
            true => TaskSupport::Optional,
            false => TaskSupport::Forbidden,
        }
    }

    /// The MCP tool's `execution` (`None` for `forbidden`, MCP's default).
    pub fn execution(self) -> Option<Value> {
        (self != TaskSupport::Forbidden)
            .then(|| serde_json::json!({ "taskSupport": self.as_str() }))
    }
}
/// A non-fatal problem with a declaration, reported to the page as a `warning` event.
#[derive(Debug, Clone, PartialEq)]
pub struct Warning {
    pub code: WarningCode,
    pub message: String,
    pub tool_name: Option<String>,
}

impl Warning {
    fn new(code: WarningCode, tool_name: &str, message: String) -> Self {
        Self {
            code,
            message,
            tool_name: Some(tool_name.to_owned()),
        }
    }
}

/// A registered tool with its compiled schemas and handler.
#[derive(Debug)]
pub struct RegisteredTool<H> {
    pub name: String,
    pub original_name: String,
    pub kind: ToolKind,
    pub description: Option<String>,
    /// `None` for agent-defined tools, whose schemas come with each call.
    pub input: Option<Arc<CompiledSchema>>,
    pub output: Option<Arc<CompiledSchema>>,
    pub annotations: Option<Value>,
    /// The tool's own policy ([`confirmation_policy`]); a call's `_meta` may still ask.
    pub require_confirmation: bool,
    pub timeout_ms: u64,
    /// `forbidden` for agent-defined tools: their policy is the agent's.
    pub task_support: TaskSupport,
    /// At most this many calls of the tool confirm or run at once; more wait, in arrival order
    /// (the page engine). `None`: no bound.
    pub concurrency: Option<usize>,
    pub handler: H,
}

impl<H> RegisteredTool<H> {
    /// The input schema shown to agents.
    pub fn input_schema(&self) -> Value {
        self.input
            .as_ref()
            .map(|s| s.schema().clone())
            .unwrap_or_else(|| serde_json::json!({ "type": "object" }))
    }

    pub fn output_schema(&self) -> Option<Value> {
        self.output.as_ref().map(|s| s.schema().clone())
    }

    /// What a person's "always allow" is given to: the tool as agents are offered it — its
    /// `tools/list` entry (name, description, input and output schemas, annotations, task support,
    /// `_meta`) — as JSON text. Natively each object's members come sorted; the browser package
    /// keeps them as written (`preserve_order`) and the SDK sorts them before it compares the text
    /// (`js.js`): the same declaration, however written, one text; any change, another. The page
    /// keeps the whole text beside the approval and compares it exactly (no digest to collide),
    /// so a changed tool is asked about again.
    pub fn declaration_text(&self) -> String {
        serde_json::to_string(&self.to_mcp_tool()).unwrap_or_default()
    }

    /// The `tools/list` entry, with the original name and kind in `_meta`.
    pub fn to_mcp_tool(&self) -> protocol::Tool {
        let mut extensions = Map::new();
        extensions.insert(
            meta::ORIGINAL_NAME.into(),
            self.original_name.clone().into(),
        );
        extensions.insert(meta::KIND.into(), self.kind.as_str().into());
        // Both ways for the page's own tools: `false` tells a runtime that asks at its side that
        // the page opted out (its hints alone would ask). An agent-defined tool's policy is the
        // agent's, so its entry says nothing.
        if self.kind != ToolKind::Handler {
            extensions.insert(
                meta::REQUIRE_CONFIRMATION.into(),
                self.require_confirmation.into(),
            );
        }
        protocol::Tool {
            name: self.name.clone(),
            description: self.description.clone(),
            input_schema: self.input_schema(),
            output_schema: self.output_schema(),
            annotations: self.annotations.clone(),
            execution: self.task_support.execution(),
            meta: Some(extensions),
        }
    }
}

/// Whether calls of a page tool ask the user first (SPEC §7): `requireConfirmation` when the page
/// says it either way, else `annotations.destructiveHint` or WebMCP's `consequentialHint`.
/// `readOnlyHint` alone never asks.
pub fn confirmation_policy(explicit: Option<bool>, annotations: Option<&Value>) -> bool {
    explicit.unwrap_or_else(|| {
        ["destructiveHint", "consequentialHint"]
            .iter()
            .any(|hint| annotations.and_then(|a| a.get(hint)) == Some(&Value::Bool(true)))
    })
}

/// Resolves a declared timeout ([`limits::call_timeout`] with no budget): default when absent,
/// error when not positive, clamped above the max with a warning.
pub fn resolve_timeout(
    tool_name: &str,
    requested: Option<f64>,
    default_ms: u64,
) -> Result<(u64, Option<Warning>), CoreError> {
    let asked = requested
        .map(|value| {
            limits::positive_ms(value).ok_or_else(|| CoreError::InvalidTimeout {
                tool: tool_name.to_owned(),
                value,
            })
        })
        .transpose()?;
    match limits::call_timeout(asked, None, default_ms) {
        Ok(ms) => Ok((ms, None)),
        Err(too_long) => {
            // As the page wrote it (`asked` is rounded up).
            let requested = requested.unwrap_or_default();
            let warning = Warning::new(
                WarningCode::TimeoutClamped,
                tool_name,
                format!("timeoutMs {requested} of tool '{tool_name}' is above the maximum; clamped to {MAX_TIMEOUT_MS}"),
            );
            Ok((too_long.limit, Some(warning)))
        }
    }
}

/// A declared `concurrency`: a whole number from 1 to [`limits::MAX_CONCURRENCY`], else an error
/// naming the tool, the field and the value (0, a negative or a fraction is no bound a page can
/// mean; a larger one could never be reached).
fn checked_concurrency(tool: &str, value: f64) -> Result<usize, CoreError> {
    let max = limits::MAX_CONCURRENCY;
    match value {
        v if v >= 1.0 && v <= max as f64 && v.fract() == 0.0 => Ok(v as usize),
        _ => Err(CoreError::InvalidOptions(format!(
            "declaration of tool '{tool}': concurrency must be a whole number from 1 to {max}, \
             got {value} (leave it out for no bound)"
        ))),
    }
}

/// All tools of one page.
#[derive(Debug)]
pub struct Registry<H> {
    names: NameTable,
    tools: BTreeMap<String, Arc<RegisteredTool<H>>>,
    default_timeout_ms: u64,
}

impl<H> Default for Registry<H> {
    fn default() -> Self {
        Self::new(DEFAULT_TIMEOUT_MS)
    }
}

impl<H> Registry<H> {
    /// The timeout of a tool that names none.
    pub fn default_timeout_ms(&self) -> u64 {
        self.default_timeout_ms
    }

    pub fn new(default_timeout_ms: u64) -> Self {
        Self {
            names: NameTable::new(),
            tools: BTreeMap::new(),
            default_timeout_ms,
        }
    }

    /// Checks and compiles a declaration, then adds it (or replaces the tool of the same original
    /// name). Returns the normalized name and the warnings to report.
    pub fn define(
        &mut self,
        declaration: Declaration,
        kind: ToolKind,
        handler: H,
    ) -> Result<(String, Vec<Warning>), CoreError> {
        let original = declaration.original_name;
        if original.is_empty() {
            return Err(CoreError::EmptyName);
        }
        let mut warnings = Vec::new();
        let (timeout_ms, clamp) =
            resolve_timeout(&original, declaration.timeout_ms, self.default_timeout_ms)?;
        warnings.extend(clamp);
        let concurrency = declaration
            .concurrency
            .map(|value| checked_concurrency(&original, value))
            .transpose()?;

        // A schema the page wrote is compiled as written first: an invalid one throws whatever
        // its type (`{"type": "objekt"}` included), before any fallback below could hide it.
        // (An object schema is used as written and compiled once, just below.)
        if let Some(schema) = declaration
            .parameters
            .as_ref()
            .filter(|schema| !validate::is_object_schema(schema))
        {
            compile(&original, "parameters", schema)?;
        }
        let input_schema = parameters_schema(&original, declaration.parameters, &mut warnings);
        let input = Arc::new(compile(&original, "parameters", &input_schema)?);
        let output = declaration
            .output_schema
            .as_ref()
            .map(|schema| compile(&original, "outputSchema", schema).map(Arc::new))
            .transpose()?;
        if declaration.description.as_deref().is_none_or(str::is_empty) {
            warnings.push(Warning::new(
                WarningCode::MissingDescription,
                &original,
                format!("tool '{original}' has no description: agents choose tools by their description"),
            ));
        }

        let name = self.take_name(&original, &mut warnings)?;
        let require_confirmation = confirmation_policy(
            declaration.require_confirmation,
            declaration.annotations.as_ref(),
        );
        let tool = RegisteredTool {
            name: name.clone(),
            original_name: original,
            kind,
            description: declaration.description.filter(|d| !d.is_empty()),
            input: Some(input),
            output,
            require_confirmation,
            annotations: declaration.annotations,
            timeout_ms,
            task_support: declaration
                .task_support
                .unwrap_or_else(|| TaskSupport::default_for(kind, require_confirmation)),
            concurrency,
            handler,
        };
        self.tools.insert(name.clone(), Arc::new(tool));
        Ok((name, warnings))
    }

    /// Attaches a handler to a tool the agent defines. Calls find it by the agent's name.
    pub fn register_handler(
        &mut self,
        agent_name: &str,
        handler: H,
    ) -> Result<(String, Vec<Warning>), CoreError> {
        let mut warnings = Vec::new();
        let name = self.take_name(agent_name, &mut warnings)?;
        let tool = RegisteredTool {
            name: name.clone(),
            original_name: agent_name.to_owned(),
            kind: ToolKind::Handler,
            description: None,
            input: None,
            output: None,
            annotations: None,
            require_confirmation: false,
            timeout_ms: self.default_timeout_ms,
            task_support: TaskSupport::Forbidden,
            concurrency: None,
            handler,
        };
        self.tools.insert(name.clone(), Arc::new(tool));
        Ok((name, warnings))
    }

    /// Removes a tool by normalized or original name; returns whether one was removed.
    pub fn unregister(&mut self, name: &str) -> bool {
        let Some(tool) = self.get(name) else {
            return false;
        };
        self.names.release(&tool.original_name);
        self.tools.remove(&tool.name).is_some()
    }

    /// The tool a call names ([`lookup`]): by normalized name, else by original name.
    pub fn get(&self, name: &str) -> Option<Arc<RegisteredTool<H>>> {
        let by_original = |original: &str| {
            self.names
                .normalized_of(original)
                .and_then(|n| self.tools.get(n))
        };
        lookup(name, |listed| self.tools.get(listed), by_original).cloned()
    }

    pub fn tools(&self) -> impl Iterator<Item = &Arc<RegisteredTool<H>>> {
        self.tools.values()
    }

    pub fn len(&self) -> usize {
        self.tools.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The `tools/list` answer, filtered by an allow-list of original names (empty = all).
    pub fn to_mcp_tools(&self, allow: &[String]) -> Vec<protocol::Tool> {
        self.tools()
            .filter(|tool| is_allowed(allow, &tool.original_name))
            .map(|tool| tool.to_mcp_tool())
            .collect()
    }

    fn take_name(
        &mut self,
        original: &str,
        warnings: &mut Vec<Warning>,
    ) -> Result<String, CoreError> {
        if let Some(existing) = self.names.normalized_of(original) {
            warnings.push(Warning::new(
                WarningCode::ToolReplaced,
                existing,
                format!("tool '{original}' was defined again: the new definition replaces the earlier one"),
            ));
        }
        self.names.assign(original)
    }
}

/// The input schema a tool is exposed with (SPEC §3): the page's object schema; one that lists
/// `properties` or `required` but no `type` taken as the object schema it was meant to be; anything
/// else (none, another type) as taking no arguments. Each fallback is a warning.
fn parameters_schema(
    original: &str,
    parameters: Option<Value>,
    warnings: &mut Vec<Warning>,
) -> Value {
    let why = match parameters {
        Some(schema) if validate::is_object_schema(&schema) => return schema,
        Some(Value::Object(mut schema))
            if !schema.contains_key("type")
                && (schema.contains_key("properties") || schema.contains_key("required")) =>
        {
            warnings.push(Warning::new(
                WarningCode::ParametersTypeAssumed,
                original,
                format!(
                    "tool '{original}' parameters have properties or required but no type: \
                     taken as an object schema (\"type\": \"object\")"
                ),
            ));
            schema.insert("type".to_owned(), Value::from("object"));
            return Value::Object(schema);
        }
        None => "has no parameters".to_owned(),
        Some(schema) => format!(
            "parameters are not an object schema (type {})",
            schema
                .get("type")
                .map_or("missing".to_owned(), Value::to_string)
        ),
    };
    warnings.push(Warning::new(
        WarningCode::ParametersNotObject,
        original,
        format!("tool '{original}' {why}: it is exposed as taking no arguments"),
    ));
    validate::empty_object_schema()
}

/// Which tool a call's `name` means (SPEC §2), the one rule of the page ([`Registry::get`]) and the
/// runtime ([`find_listed`]): the tool listed under `name`, else the tool whose original name
/// `name` is (agents may use either; a listed name wins).
pub fn lookup<T>(
    name: &str,
    by_listed: impl FnOnce(&str) -> Option<T>,
    by_original: impl FnOnce(&str) -> Option<T>,
) -> Option<T> {
    by_listed(name).or_else(|| by_original(name))
}

/// [`lookup`] in a page's `tools/list` answer (as the runtime holds it): the entry named `name`,
/// else the entry whose `clienttools/originalName` is `name`.
pub fn find_listed<'a>(tools: &'a [protocol::Tool], name: &str) -> Option<&'a protocol::Tool> {
    lookup(
        name,
        |listed| tools.iter().find(|tool| tool.name == listed),
        |original| tools.iter().find(|tool| tool.original_name() == original),
    )
}

/// Allow-lists match the original name; an empty list allows everything (SPEC §2).
pub fn is_allowed(allow: &[String], original_name: &str) -> bool {
    allow.is_empty() || allow.iter().any(|a| a == original_name)
}

fn compile(tool: &str, field: &'static str, schema: &Value) -> Result<CompiledSchema, CoreError> {
    CompiledSchema::compile(schema).map_err(|message| CoreError::InvalidSchema {
        tool: tool.to_owned(),
        field,
        message,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn board(name: &str) -> Declaration {
        Declaration {
            original_name: name.into(),
            description: Some("Read the tasks of a board".into()),
            parameters: Some(json!({
                "type": "object",
                "properties": { "boardId": { "type": "string" } },
                "required": ["boardId"]
            })),
            ..Declaration::default()
        }
    }

    #[test]
    fn define_normalizes_and_lists_with_the_mapping() {
        let mut registry = Registry::default();
        let (name, warnings) = registry
            .define(board("Read Board"), ToolKind::Function, 1)
            .unwrap();
        assert_eq!(name, "read_board");
        assert!(warnings.is_empty(), "{warnings:?}");
        let tools = registry.to_mcp_tools(&[]);
        assert_eq!(tools.len(), 1);
        assert_eq!(tools[0].original_name(), "Read Board");
        assert_eq!(tools[0].meta.as_ref().unwrap()[meta::KIND], "function");
    }

    #[test]
    fn redefining_the_same_original_name_replaces_with_a_warning() {
        let mut registry = Registry::default();
        registry
            .define(board("Read Board"), ToolKind::Function, 1)
            .unwrap();
        let (name, warnings) = registry
            .define(board("Read Board"), ToolKind::Function, 2)
            .unwrap();
        assert_eq!(name, "read_board");
        assert_eq!(warnings[0].code, WarningCode::ToolReplaced);
        assert_eq!(registry.len(), 1);
        assert_eq!(registry.get("read_board").unwrap().handler, 2);
        let (other, _) = registry
            .define(board("read board"), ToolKind::Function, 3)
            .unwrap();
        assert_eq!(other, "read_board_2");
    }

    #[test]
    fn declaration_checks() {
        let mut registry = Registry::<()>::default();
        let mut no_params = board("x");
        no_params.parameters = None;
        no_params.description = None;
        let (_, warnings) = registry.define(no_params, ToolKind::Function, ()).unwrap();
        let codes: Vec<_> = warnings.iter().map(|w| w.code.as_str()).collect();
        assert_eq!(codes, ["parameters_not_object", "missing_description"]);
        assert_eq!(
            registry.get("x").unwrap().input_schema(),
            validate::empty_object_schema()
        );

        let mut bad_schema = board("y");
        bad_schema.parameters = Some(json!({"type": "object", "properties": {"a": {"type": 5}}}));
        let error = registry
            .define(bad_schema, ToolKind::Function, ())
            .unwrap_err();
        assert!(
            matches!(
                error,
                CoreError::InvalidSchema {
                    field: "parameters",
                    ..
                }
            ),
            "{error}"
        );

        // An invalid schema throws whatever its type, not only object schemas.
        let mut misspelt = board("misspelt");
        misspelt.parameters = Some(json!({"type": "objekt"}));
        assert!(matches!(
            registry.define(misspelt, ToolKind::Function, ()),
            Err(CoreError::InvalidSchema {
                field: "parameters",
                ..
            })
        ));
        let mut invalid_untyped = board("invalid_untyped");
        invalid_untyped.parameters = Some(json!({"properties": {"a": {"minLength": -1}}}));
        assert!(registry
            .define(invalid_untyped, ToolKind::Function, ())
            .is_err());

        // properties/required without a type: taken as the object schema it was meant to be.
        let mut untyped = board("untyped");
        untyped.parameters = Some(json!({
            "properties": { "boardId": { "type": "string" } },
            "required": ["boardId"]
        }));
        let (_, warnings) = registry.define(untyped, ToolKind::Function, ()).unwrap();
        let codes: Vec<_> = warnings.iter().map(|w| w.code.as_str()).collect();
        assert_eq!(codes, ["parameters_type_assumed"]);
        let tool = registry.get("untyped").unwrap();
        assert_eq!(
            tool.input_schema(),
            json!({
                "type": "object",
                "properties": { "boardId": { "type": "string" } },
                "required": ["boardId"]
            })
        );
        assert!(tool.input.as_ref().unwrap().validate(&json!({})).is_err());

        // A schema of another type is valid, but an agent could pass nothing to it.
        let mut string_schema = board("string_schema");
        string_schema.parameters = Some(json!({"type": "string"}));
        let (_, warnings) = registry
            .define(string_schema, ToolKind::Function, ())
            .unwrap();
        assert_eq!(warnings[0].code, WarningCode::ParametersNotObject);
        assert!(
            warnings[0].message.contains("type \"string\""),
            "{}",
            warnings[0].message
        );

        let mut zero = board("z");
        zero.timeout_ms = Some(0.0);
        assert!(matches!(
            registry.define(zero, ToolKind::Function, ()),
            Err(CoreError::InvalidTimeout { .. })
        ));
        let mut long = board("long");
        long.timeout_ms = Some(400_000.0);
        let (_, warnings) = registry.define(long, ToolKind::Function, ()).unwrap();
        assert_eq!(warnings[0].code, WarningCode::TimeoutClamped);
        assert_eq!(registry.get("long").unwrap().timeout_ms, MAX_TIMEOUT_MS);
        assert!(registry.define(board(""), ToolKind::Function, ()).is_err());
    }

    #[test]
    fn handlers_are_found_by_agent_name_and_unregister_frees_names() {
        let mut registry = Registry::default();
        let (name, _) = registry.register_handler("Search Cars", 1).unwrap();
        assert_eq!(name, "search_cars");
        assert_eq!(registry.get("Search Cars").unwrap().kind, ToolKind::Handler);
        assert_eq!(registry.get("search_cars").unwrap().handler, 1);
        assert!(registry.unregister("Search Cars"));
        assert!(registry.get("search_cars").is_none());
        assert!(!registry.unregister("search_cars"));
    }

    #[test]
    fn confirmation_policy_and_its_list_entry() {
        let destructive = json!({"destructiveHint": true});
        assert!(confirmation_policy(None, Some(&destructive)));
        assert!(confirmation_policy(
            None,
            Some(&json!({"consequentialHint": true}))
        ));
        assert!(!confirmation_policy(Some(false), Some(&destructive)));
        assert!(confirmation_policy(Some(true), None));
        assert!(!confirmation_policy(
            None,
            Some(&json!({"readOnlyHint": true}))
        ));
        assert!(!confirmation_policy(None, None));

        let mut registry = Registry::default();
        let mut wipe = board("wipe");
        wipe.annotations = Some(destructive);
        registry.define(wipe, ToolKind::Function, 1).unwrap();
        registry
            .define(board("read"), ToolKind::Function, 2)
            .unwrap();
        let listed = registry.to_mcp_tools(&[]);
        let asks = |i: usize| {
            listed[i]
                .meta
                .as_ref()
                .unwrap()
                .get(meta::REQUIRE_CONFIRMATION)
                .cloned()
        };
        assert_eq!(asks(0), Some(json!(false)), "read");
        assert_eq!(asks(1), Some(json!(true)), "wipe");
        let mut opted_out = board("wipe quietly");
        opted_out.annotations = Some(json!({"destructiveHint": true}));
        opted_out.require_confirmation = Some(false);
        registry.define(opted_out, ToolKind::Function, 3).unwrap();
        let listed = registry.to_mcp_tools(&[]);
        let entry = listed.iter().find(|t| t.name == "wipe_quietly").unwrap();
        assert_eq!(
            entry.meta.as_ref().unwrap().get(meta::REQUIRE_CONFIRMATION),
            Some(&json!(false)),
            "the page's opt-out is listed"
        );
    }

    #[test]
    fn allow_list_matches_original_names() {
        let mut registry = Registry::default();
        registry
            .define(board("Read Board"), ToolKind::Function, 1)
            .unwrap();
        registry
            .define(board("Write Board"), ToolKind::Function, 2)
            .unwrap();
        let tools = registry.to_mcp_tools(&["Read Board".into()]);
        assert_eq!(tools.len(), 1);
        assert_eq!(tools[0].name, "read_board");
        assert!(registry.to_mcp_tools(&["read_board".into()]).is_empty());
    }

    /// The page's registry and the runtime's copy of its `tools/list` resolve a name alike.
    #[test]
    fn a_name_means_the_same_tool_in_the_registry_and_in_its_listing() {
        let mut registry = Registry::default();
        registry
            .define(board("Read Board"), ToolKind::Function, 1)
            .unwrap();
        registry
            .define(board("read_board"), ToolKind::Function, 2)
            .unwrap();
        let listed = registry.to_mcp_tools(&[]);
        for name in ["Read Board", "read_board", "read_board_2", "Nope"] {
            assert_eq!(
                registry.get(name).map(|tool| tool.name.clone()),
                find_listed(&listed, name).map(|tool| tool.name.clone()),
                "{name}"
            );
        }
        // A listed name wins over an original name: "read_board" is the name of "Read Board".
        assert_eq!(
            find_listed(&listed, "read_board").unwrap().original_name(),
            "Read Board"
        );
    }
}
