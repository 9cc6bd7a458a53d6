//! Agent-defined tools (SPEC §3 `registerHandler`, issue 11): the tools the bridge's operator
//! declares in a JSON file (`--tools FILE`). The bridge lists them to MCP agents with their full
//! schemas, and sends their schemas and policy in the `_meta` of every call to one, so the page's
//! `registerHandler(name, fn)` (or its result form, `fallback: "form"`) can answer it.
//!
//! Everything is checked once, at start-up: a bad file stops the bridge with a message naming the
//! tool and the field.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use client_tools_core::limits::MAX_TIMEOUT_MS;
use client_tools_core::names;
use client_tools_core::protocol::{meta, Tool};
use client_tools_core::registry::{resolve_timeout, TaskSupport};
use client_tools_core::validate::{self, CompiledSchema};
use serde::Deserialize;
use serde_json::{Map, Value};

/// The one fallback there is: the page shows a form built from the output schema (SPEC §7).
pub const FALLBACK_FORM: &str = "form";

/// One tool of the file, checked and compiled.
#[derive(Debug)]
pub struct AgentTool {
    pub name: String,
    pub title: Option<String>,
    pub description: String,
    pub input: Arc<CompiledSchema>,
    pub output: Option<Arc<CompiledSchema>>,
    pub annotations: Option<Map<String, Value>>,
    /// `requireConfirmation`, or the annotations `destructiveHint` / `consequentialHint`.
    pub require_confirmation: bool,
    /// `fallback: "form"`.
    pub fallback_form: bool,
    /// The tool's own timeout (clamped to the core's `MAX_TIMEOUT_MS`), if it set one.
    pub timeout_ms: Option<u64>,
    /// `taskSupport`; by default `optional` when a person answers (`fallback: "form"`, or a
    /// confirmation), else `forbidden` (SPEC §4 "Long calls as tasks").
    pub task_support: TaskSupport,
}

/// The tools of `--tools FILE`, by name. Empty when there is no file.
#[derive(Debug, Default)]
pub struct AgentTools {
    tools: BTreeMap<String, Arc<AgentTool>>,
}

/// A tool entry as written in the file (unknown fields are an error: a typo must not pass).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Entry {
    name: String,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    input_schema: Option<Value>,
    #[serde(default)]
    output_schema: Option<Value>,
    #[serde(default)]
    require_confirmation: bool,
    #[serde(default)]
    fallback: Option<String>,
    #[serde(default)]
    annotations: Option<Value>,
    #[serde(default)]
    timeout_ms: Option<f64>,
    #[serde(default)]
    task_support: Option<String>,
}

impl AgentTools {
    /// Reads and checks `--tools FILE`.
    pub fn load(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|error| format!("--tools {}: {error}", path.display()))?;
        Self::parse(&text).map_err(|error| format!("--tools {}: {error}", path.display()))
    }

    /// Checks the file's text: a JSON array of tools, or `{"tools": [...]}` (a `tools/list`
    /// result's shape).
    pub fn parse(text: &str) -> Result<Self, String> {
        let document: Value =
            serde_json::from_str(text).map_err(|error| format!("not JSON: {error}"))?;
        let entries = match document {
            Value::Array(entries) => entries,
            Value::Object(mut object) => match (object.remove("tools"), object.keys().next()) {
                (Some(Value::Array(entries)), None) => entries,
                (_, Some(other)) => {
                    return Err(format!(
                        "unknown top-level field '{other}': the file is an array of tools or \
                         {{\"tools\": [...]}}"
                    ))
                }
                _ => {
                    return Err(
                        "the file must be an array of tools or {\"tools\": [...]}".to_owned()
                    )
                }
            },
            other => {
                return Err(format!(
                    "the file must be an array of tools or {{\"tools\": [...]}}, not {}",
                    validate::json_type_name(&other)
                ))
            }
        };
        let mut tools = BTreeMap::new();
        for (index, entry) in entries.into_iter().enumerate() {
            let label = match entry.get("name").and_then(Value::as_str) {
                Some(name) => format!("tool '{name}'"),
                None => format!("tool #{}", index + 1),
            };
            let tool = check(entry).map_err(|error| format!("{label}: {error}"))?;
            if tools.contains_key(&tool.name) {
                return Err(format!("{label}: defined twice"));
            }
            tools.insert(tool.name.clone(), Arc::new(tool));
        }
        Ok(Self { tools })
    }

    pub fn get(&self, name: &str) -> Option<&Arc<AgentTool>> {
        self.tools.get(name)
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Arc<AgentTool>> {
        self.tools.values()
    }

    /// The page's tools merged with these (SPEC §9, docs/api.md "Agent-defined tools"): a page
    /// entry of kind `handler` (what `registerHandler` lists, schema-less) is replaced by the file's
    /// definition; a page `function` or `form` of the same name is the page's own tool and stays,
    /// hiding the file's.
    pub fn merge(&self, page: &[Tool]) -> Vec<Tool> {
        let mut merged: Vec<Tool> = page
            .iter()
            .filter(|tool| !(self.tools.contains_key(&tool.name) && is_handler_entry(tool)))
            .cloned()
            .collect();
        for tool in self.tools.values() {
            if !merged.iter().any(|listed| listed.name == tool.name) {
                merged.push(tool.to_listed());
            }
        }
        merged
    }

    /// The file's tool a call to `name` runs, unless the page defines a function or form of that
    /// name itself (then the page's own definition is what runs).
    pub fn for_call(&self, name: &str, page: &[Tool]) -> Option<&Arc<AgentTool>> {
        let tool = self.tools.get(name)?;
        let shadowed = page
            .iter()
            .any(|listed| listed.name == name && !is_handler_entry(listed));
        (!shadowed).then_some(tool)
    }
}

fn is_handler_entry(tool: &Tool) -> bool {
    tool.meta
        .as_ref()
        .and_then(|m| m.get(meta::KIND))
        .and_then(Value::as_str)
        == Some("handler")
}

impl AgentTool {
    /// The `tools/list` entry (without `title`, which [`Tool`] has no field for: the MCP listing
    /// adds it).
    pub fn to_listed(&self) -> Tool {
        let mut extensions = Map::new();
        extensions.insert(meta::ORIGINAL_NAME.into(), self.name.clone().into());
        extensions.insert(meta::KIND.into(), "handler".into());
        if self.require_confirmation {
            extensions.insert(meta::REQUIRE_CONFIRMATION.into(), true.into());
        }
        Tool {
            name: self.name.clone(),
            description: Some(self.description.clone()),
            input_schema: self.input.schema().clone(),
            output_schema: self.output.as_ref().map(|s| s.schema().clone()),
            annotations: self.annotations.clone().map(Value::Object),
            execution: self.task_support.execution(),
            meta: Some(extensions),
        }
    }

    /// What every call to this tool carries to the page in `_meta` (SPEC §6).
    pub fn call_meta(&self) -> Map<String, Value> {
        let mut extensions = Map::new();
        extensions.insert(meta::INPUT_SCHEMA.into(), self.input.schema().clone());
        if let Some(output) = &self.output {
            extensions.insert(meta::OUTPUT_SCHEMA.into(), output.schema().clone());
        }
        if self.require_confirmation {
            extensions.insert(meta::REQUIRE_CONFIRMATION.into(), true.into());
        }
        if self.fallback_form {
            extensions.insert(meta::FALLBACK.into(), FALLBACK_FORM.into());
        }
        if let Some(title) = &self.title {
            extensions.insert(meta::TITLE.into(), title.clone().into());
        }
        extensions.insert(meta::DESCRIPTION.into(), self.description.clone().into());
        extensions
    }
}

/// `annotations.destructiveHint` or `consequentialHint` set to `true` (SPEC §7).
pub fn annotations_ask(annotations: Option<&Map<String, Value>>) -> bool {
    annotations.is_some_and(|a| {
        ["destructiveHint", "consequentialHint"]
            .iter()
            .any(|hint| a.get(*hint).and_then(Value::as_bool) == Some(true))
    })
}

fn check(entry: Value) -> Result<AgentTool, String> {
    if !entry.is_object() {
        return Err(format!(
            "must be an object, not {}",
            validate::json_type_name(&entry)
        ));
    }
    let entry: Entry = serde_json::from_value(entry).map_err(|error| error.to_string())?;
    if !names::is_normalized(&entry.name) {
        let suggestion = names::normalize(&entry.name)
            .map(|n| format!(" (e.g. '{n}')"))
            .unwrap_or_default();
        return Err(format!(
            "name must be 1 to {} characters of a-z, 0-9, _ and - (the names agents accept){suggestion}",
            names::MAX_NAME_LEN
        ));
    }
    let description = match entry.description {
        Some(d) if !d.trim().is_empty() => d,
        _ => return Err("description is missing (agents choose tools by it)".to_owned()),
    };
    let input_schema = entry
        .input_schema
        .ok_or("inputSchema is missing (an object schema)")?;
    let input = object_schema("inputSchema", &input_schema)?;
    let output = entry
        .output_schema
        .map(|schema| object_schema("outputSchema", &schema))
        .transpose()?;
    let fallback_form = match entry.fallback.as_deref() {
        None => false,
        Some(FALLBACK_FORM) if output.is_some() => true,
        Some(FALLBACK_FORM) => {
            return Err(
                "fallback \"form\" needs an outputSchema (the page builds the form from it)"
                    .to_owned(),
            )
        }
        Some(other) => return Err(format!("fallback must be \"form\", not \"{other}\"")),
    };
    let timeout_ms = match entry.timeout_ms {
        None => None,
        Some(ms) => {
            let (ms, clamped) =
                resolve_timeout(&entry.name, Some(ms), MAX_TIMEOUT_MS).map_err(|_| {
                    format!("timeoutMs must be a positive number of milliseconds, not {ms}")
                })?;
            if let Some(warning) = clamped {
                tracing::warn!("--tools: {}", warning.message);
            }
            Some(ms)
        }
    };
    let annotations = entry.annotations.map(check_annotations).transpose()?;
    let require_confirmation = entry.require_confirmation || annotations_ask(annotations.as_ref());
    let task_support = match entry.task_support.as_deref() {
        None => TaskSupport::default_for(
            client_tools_core::registry::ToolKind::Handler,
            require_confirmation || fallback_form,
        ),
        Some(text) => TaskSupport::parse(text).ok_or_else(|| {
            format!(
                "taskSupport must be \"forbidden\", \"optional\" or \"required\", not \"{text}\""
            )
        })?,
    };
    Ok(AgentTool {
        name: entry.name,
        title: entry.title,
        description,
        input: Arc::new(input),
        output: output.map(Arc::new),
        annotations,
        require_confirmation,
        fallback_form,
        timeout_ms,
        task_support,
    })
}

/// The hints the bridge and the page act on are booleans (MCP's and WebMCP's), `title` a string:
/// a hint written as `"true"` would silently not act (no confirmation, results not marked).
/// Other keys are the file's own and pass as written.
fn check_annotations(annotations: Value) -> Result<Map<String, Value>, String> {
    let Value::Object(annotations) = annotations else {
        return Err(format!(
            "annotations must be an object, not {}",
            validate::json_type_name(&annotations)
        ));
    };
    const HINTS: [&str; 6] = [
        "readOnlyHint",
        "destructiveHint",
        "idempotentHint",
        "openWorldHint",
        "consequentialHint",
        "untrustedContentHint",
    ];
    for (key, value) in &annotations {
        let wrong = match key.as_str() {
            "title" => (!value.is_string()).then_some("a string"),
            hint if HINTS.contains(&hint) => (!value.is_boolean()).then_some("true or false"),
            _ => None,
        };
        if let Some(what) = wrong {
            return Err(format!("annotations.{key} must be {what}, not {value}"));
        }
    }
    Ok(annotations)
}

/// MCP lists object schemas only (`"type": "object"`); the schema must compile.
fn object_schema(field: &str, schema: &Value) -> Result<CompiledSchema, String> {
    if !validate::is_object_schema(schema) {
        return Err(format!(
            "{field} must be a JSON Schema with \"type\": \"object\" (MCP lists no other)"
        ));
    }
    CompiledSchema::compile(schema)
        .map_err(|error| format!("{field} is not a valid JSON Schema: {error}"))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn parse(value: Value) -> Result<AgentTools, String> {
        AgentTools::parse(&value.to_string())
    }

    fn search() -> Value {
        json!({
            "name": "search_cars",
            "description": "Search the cars",
            "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
            "outputSchema": {"type": "object", "properties": {"cars": {"type": "array"}}},
            "fallback": "form",
        })
    }

    #[test]
    fn both_shapes_are_read_and_calls_carry_schemas_and_policy() {
        let tools = parse(json!([search()])).unwrap();
        let same = parse(json!({"tools": [search()]})).unwrap();
        assert_eq!(same.iter().count(), 1);
        let tool = tools.get("search_cars").unwrap();
        let call = tool.call_meta();
        assert_eq!(call[meta::INPUT_SCHEMA], search()["inputSchema"]);
        assert_eq!(call[meta::OUTPUT_SCHEMA], search()["outputSchema"]);
        assert_eq!(call[meta::FALLBACK], "form");
        assert!(!call.contains_key(meta::REQUIRE_CONFIRMATION));
    }

    #[test]
    fn every_mistake_names_the_tool_and_the_field() {
        let with = |patch: Value| {
            let mut tool = search();
            for (k, v) in patch.as_object().unwrap() {
                if v.is_null() {
                    tool.as_object_mut().unwrap().remove(k);
                } else {
                    tool[k] = v.clone();
                }
            }
            parse(json!([tool])).unwrap_err()
        };
        let error = with(json!({"name": "Search Cars"}));
        assert!(
            error.contains("tool 'Search Cars'") && error.contains("search_cars"),
            "{error}"
        );
        let error = with(json!({"description": null}));
        assert!(error.contains("tool 'search_cars': description"), "{error}");
        let error = with(json!({"inputSchema": null}));
        assert!(error.contains("inputSchema is missing"), "{error}");
        let error = with(json!({"inputSchema": {"type": "string"}}));
        assert!(error.contains("inputSchema must be"), "{error}");
        let error = with(json!({"inputSchema": {"type": "object", "minProperties": -1}}));
        assert!(
            error.contains("inputSchema is not a valid JSON Schema"),
            "{error}"
        );
        let error = with(json!({"outputSchema": null}));
        assert!(
            error.contains("fallback \"form\" needs an outputSchema"),
            "{error}"
        );
        let error = with(json!({"fallback": "dialog"}));
        assert!(error.contains("fallback must be \"form\""), "{error}");
        let error = with(json!({"timeoutMs": 0}));
        assert!(error.contains("timeoutMs must be a positive"), "{error}");
        let error = with(json!({"requireConfirmaton": true}));
        assert!(
            error.contains("unknown field `requireConfirmaton`"),
            "{error}"
        );
        let error = parse(json!([search(), search()])).unwrap_err();
        assert!(
            error.contains("tool 'search_cars': defined twice"),
            "{error}"
        );
        let error = parse(json!([{"description": "x"}])).unwrap_err();
        assert!(error.starts_with("tool #1:"), "{error}");
        let error = parse(json!({"tool": []})).unwrap_err();
        assert!(error.contains("unknown top-level field 'tool'"), "{error}");
        assert!(AgentTools::parse("[").unwrap_err().starts_with("not JSON"));
    }

    #[test]
    fn destructive_annotations_require_confirmation() {
        let mut tool = search();
        tool["annotations"] = json!({"destructiveHint": true});
        let tools = parse(json!([tool])).unwrap();
        let tool = tools.get("search_cars").unwrap();
        assert!(tool.require_confirmation);
        assert_eq!(tool.call_meta()[meta::REQUIRE_CONFIRMATION], true);
    }

    #[test]
    fn hints_are_booleans_and_the_untrusted_one_is_kept() {
        let with = |annotations: Value| {
            let mut tool = search();
            tool["annotations"] = annotations;
            parse(json!([tool]))
        };
        let tools = with(json!({"untrustedContentHint": true, "x-own": "kept"})).unwrap();
        let tool = tools.get("search_cars").unwrap();
        let annotations = tool.annotations.as_ref().unwrap();
        assert_eq!(annotations["untrustedContentHint"], true);
        assert_eq!(annotations["x-own"], "kept");
        assert_eq!(
            tool.to_listed().annotations.unwrap()["untrustedContentHint"],
            true
        );
        let error = with(json!({"untrustedContentHint": "yes"})).unwrap_err();
        assert_eq!(
            error,
            "tool 'search_cars': annotations.untrustedContentHint must be true or false, not \"yes\""
        );
        let error = with(json!({"destructiveHint": 1})).unwrap_err();
        assert!(
            error.contains("annotations.destructiveHint must be true or false, not 1"),
            "{error}"
        );
        let error = with(json!({"title": false})).unwrap_err();
        assert!(
            error.contains("annotations.title must be a string, not false"),
            "{error}"
        );
        let error = with(json!(["untrustedContentHint"])).unwrap_err();
        assert!(
            error.ends_with("annotations must be an object, not array"),
            "{error}"
        );
    }

    #[test]
    fn merging_replaces_handler_entries_and_keeps_the_pages_own_tools() {
        let tools = parse(json!([search(), {
            "name": "read_board_tasks", "description": "file's",
            "inputSchema": {"type": "object"},
        }]))
        .unwrap();
        let entry = |name: &str, kind: &str| Tool {
            name: name.into(),
            description: Some("page's".into()),
            input_schema: json!({"type": "object"}),
            output_schema: None,
            annotations: None,
            execution: None,
            meta: Some(Map::from_iter([(meta::KIND.into(), kind.into())])),
        };
        let page = [
            entry("search_cars", "handler"),
            entry("read_board_tasks", "function"),
        ];
        let merged = tools.merge(&page);
        assert_eq!(merged.len(), 2);
        let search = merged.iter().find(|t| t.name == "search_cars").unwrap();
        assert_eq!(search.description.as_deref(), Some("Search the cars"));
        let board = merged
            .iter()
            .find(|t| t.name == "read_board_tasks")
            .unwrap();
        assert_eq!(board.description.as_deref(), Some("page's"));
        assert!(tools.for_call("search_cars", &page).is_some());
        assert!(tools.for_call("read_board_tasks", &page).is_none());
        assert!(tools.for_call("search_cars", &[]).is_some());
    }
}
