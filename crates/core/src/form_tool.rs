//! Declarative `<form toolname>` tools (SPEC §8): the input schema a form's controls stand for, the
//! control changes that fill it with a call's input, and the values it submits.
//!
//! The browser layer reads each submittable control into a [`Control`] (plain data, in document
//! order) and applies [`Assignment`]s; every decision about what a control means is made here.
//!
//! Decisions the SPEC leaves open (docs/webmcp.md): controls without a `name`, disabled ones, and
//! hidden / file / button-like inputs are not parameters; a second control of a name already taken
//! is ignored, except radios (one enum) and checkboxes (one boolean, or an array of the checked
//! values when several share the name); `<option value="">` is a placeholder, not a choice; a number
//! input is an integer unless its `step` or `min` is fractional or the step `any`; fields the input leaves out keep
//! what the form has.

use serde_json::{json, Map, Value};

/// One submittable control, as the browser layer reads it.
#[derive(Debug, Clone, Default)]
pub struct Control {
    /// Its index in `form.elements` (where an [`Assignment`] goes).
    pub index: usize,
    pub name: String,
    /// The DOM `type`: an input's type, `select-one`, `select-multiple` or `textarea`.
    pub kind: String,
    pub required: bool,
    pub pattern: Option<String>,
    pub min: Option<String>,
    pub max: Option<String>,
    pub step: Option<String>,
    pub minlength: Option<String>,
    pub maxlength: Option<String>,
    /// The `toolparamdescription` attribute.
    pub param_description: Option<String>,
    /// The text of its first `<label>` (without nested labelable elements).
    pub label: Option<String>,
    pub aria_description: Option<String>,
    /// What its `<fieldset>` says of its group (`toolparamdescription`, else the legend).
    pub group: Option<String>,
    /// A `<select>`'s options.
    pub options: Vec<Choice>,
    /// Its current value (a radio's or a checkbox's `value` attribute).
    pub value: String,
    pub checked: bool,
    /// A `<select multiple>`'s selected values.
    pub selected: Vec<String>,
}

#[derive(Debug, Clone, Default)]
pub struct Choice {
    pub value: String,
    pub label: String,
}

impl Control {
    /// Reads the controls the browser layer lists as JSON: an array of objects with the fields of
    /// [`Control`] in camelCase (`type` for `kind`); what is missing or mistyped reads as empty.
    /// (By hand rather than `serde::Deserialize`: the derived reader cost the package 4 KB.)
    pub fn list_from_json(list: &Value) -> Vec<Control> {
        let Some(list) = list.as_array() else {
            return Vec::new();
        };
        list.iter().map(Control::from_json).collect()
    }

    fn from_json(c: &Value) -> Control {
        let text = |key: &str| c.get(key).and_then(Value::as_str).map(str::to_owned);
        let strings = |key: &str| -> Vec<String> {
            let list = c.get(key).and_then(Value::as_array);
            list.into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        };
        let options = c.get("options").and_then(Value::as_array);
        Control {
            index: c.get("index").and_then(Value::as_u64).unwrap_or(u64::MAX) as usize,
            name: text("name").unwrap_or_default(),
            kind: text("type").unwrap_or_default(),
            required: c.get("required") == Some(&Value::Bool(true)),
            pattern: text("pattern"),
            min: text("min"),
            max: text("max"),
            step: text("step"),
            minlength: text("minlength"),
            maxlength: text("maxlength"),
            param_description: text("paramDescription"),
            label: text("label"),
            aria_description: text("ariaDescription"),
            group: text("group"),
            options: options
                .into_iter()
                .flatten()
                .map(|o| Choice {
                    value: o
                        .get("value")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    label: o
                        .get("label")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                })
                .collect(),
            value: text("value").unwrap_or_default(),
            checked: c.get("checked") == Some(&Value::Bool(true)),
            selected: strings("selected"),
        }
    }
}

/// Input types that are not parameters (SPEC §8).
const EXCLUDED: &[&str] = &["hidden", "file", "submit", "reset", "button", "image"];

/// ECMA-262 patterns for the date and time inputs' value formats.
const DATE: &str = r"\d{4,}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])";
const TIME: &str = r"([01]\d|2[0-3]):[0-5]\d(:[0-5]\d(\.\d{1,3})?)?";

/// One parameter: the controls of one name.
struct Field<'a> {
    name: &'a str,
    controls: Vec<&'a Control>,
}

impl Field<'_> {
    fn first(&self) -> &Control {
        self.controls[0]
    }

    fn kind(&self) -> &str {
        &self.first().kind
    }

    fn is_checkbox_group(&self) -> bool {
        self.kind() == "checkbox" && self.controls.len() > 1
    }
}

/// The controls grouped by name, in the order each name first appears.
fn fields(controls: &[Control]) -> Vec<Field<'_>> {
    let mut fields: Vec<Field> = Vec::new();
    for control in controls {
        if control.name.is_empty() || EXCLUDED.contains(&control.kind.as_str()) {
            continue;
        }
        match fields.iter_mut().find(|f| f.name == control.name) {
            Some(field) if matches!(field.kind(), "radio" | "checkbox") => {
                if control.kind == field.kind() {
                    field.controls.push(control);
                }
            }
            Some(_) => {}
            None => fields.push(Field {
                name: &control.name,
                controls: vec![control],
            }),
        }
    }
    fields
}

/// The input schema of a form whose controls are `controls`.
pub fn input_schema(controls: &[Control]) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for field in fields(controls) {
        if field.controls.iter().any(|c| c.required) {
            required.push(Value::from(field.name));
        }
        properties.insert(field.name.to_owned(), field_schema(&field));
    }
    let mut schema = json!({ "type": "object", "properties": properties });
    if !required.is_empty() {
        schema["required"] = Value::Array(required);
    }
    schema
}

fn field_schema(field: &Field) -> Value {
    let control = field.first();
    let mut schema = match control.kind.as_str() {
        "checkbox" if field.is_checkbox_group() => {
            let choices = field.controls.iter().map(|c| checkable_choice(c)).collect();
            json!({ "type": "array", "items": choices_schema(choices), "uniqueItems": true })
        }
        "checkbox" => json!({ "type": "boolean" }),
        "radio" => choices_schema(field.controls.iter().map(|c| checkable_choice(c)).collect()),
        "select-one" => choices_schema(select_choices(control)),
        "select-multiple" => json!({
            "type": "array",
            "items": choices_schema(select_choices(control)),
            "uniqueItems": true,
        }),
        "number" | "range" => number_schema(control),
        "date" => pattern_schema(DATE),
        "time" => pattern_schema(TIME),
        "datetime-local" => pattern_schema(&format!("{DATE}T{TIME}")),
        "month" => pattern_schema(r"\d{4,}-(0[1-9]|1[0-2])"),
        "week" => pattern_schema(r"\d{4,}-W(0[1-9]|[1-4]\d|5[0-3])"),
        "color" => pattern_schema("#[0-9a-fA-F]{6}"),
        // text, search, tel, password, email, url, textarea, and types a browser does not know.
        kind => text_schema(control, kind),
    };
    if let Some(description) = field_description(field) {
        schema["description"] = Value::String(description);
    }
    schema
}

/// `toolparamdescription`, else the label, else `aria-description`; a radio or checkbox group is
/// described by its fieldset first (each of its controls' labels titles a choice).
fn field_description(field: &Field) -> Option<String> {
    let control = field.first();
    let own = || {
        control
            .param_description
            .clone()
            .or_else(|| control.label.clone())
            .or_else(|| control.aria_description.clone())
    };
    let grouped = field.kind() == "radio" || field.is_checkbox_group();
    if grouped {
        control
            .group
            .clone()
            .or_else(|| control.param_description.clone())
            .or_else(|| control.aria_description.clone())
    } else {
        own()
    }
}

fn checkable_choice(control: &Control) -> Choice {
    Choice {
        value: control.value.clone(),
        label: control.label.clone().unwrap_or_default(),
    }
}

/// A select's options, without placeholders (`value=""`).
fn select_choices(control: &Control) -> Vec<Choice> {
    control
        .options
        .iter()
        .filter(|o| !o.value.is_empty())
        .cloned()
        .collect()
}

/// An enum of the choices' values, or titled constants when a label says more than its value.
fn choices_schema(choices: Vec<Choice>) -> Value {
    let titled = choices
        .iter()
        .any(|c| !c.label.is_empty() && c.label != c.value);
    if titled {
        let one_of: Vec<Value> = choices
            .into_iter()
            .map(|c| {
                let title = if c.label.is_empty() {
                    c.value.clone()
                } else {
                    c.label
                };
                json!({ "const": c.value, "title": title })
            })
            .collect();
        json!({ "type": "string", "oneOf": one_of })
    } else {
        let values: Vec<Value> = choices
            .into_iter()
            .map(|c| Value::String(c.value))
            .collect();
        json!({ "type": "string", "enum": values })
    }
}

fn pattern_schema(pattern: &str) -> Value {
    json!({ "type": "string", "pattern": format!("^(?:{pattern})$") })
}

fn text_schema(control: &Control, kind: &str) -> Value {
    let mut schema = json!({ "type": "string" });
    match kind {
        "email" => schema["format"] = "email".into(),
        "url" => schema["format"] = "uri".into(),
        _ => {}
    }
    if let Some(pattern) = control.pattern.as_deref().filter(|p| !p.is_empty()) {
        // An HTML pattern matches the whole value.
        schema["pattern"] = format!("^(?:{pattern})$").into();
    }
    let length = |text: &Option<String>| text.as_deref().and_then(|t| t.trim().parse::<u64>().ok());
    if let Some(min) = length(&control.minlength) {
        schema["minLength"] = min.into();
    }
    if let Some(max) = length(&control.maxlength) {
        schema["maxLength"] = max.into();
    }
    schema
}

/// `min`/`max` become bounds (a range defaults to 0–100); the step and its base decide integer or
/// number.
fn number_schema(control: &Control) -> Value {
    let number = |text: &Option<String>| {
        text.as_deref()
            .and_then(|t| t.trim().parse::<f64>().ok())
            .filter(|n| n.is_finite())
    };
    let range = control.kind == "range";
    let min = number(&control.min).or(range.then_some(0.0));
    let max = number(&control.max).or(range.then_some(100.0));
    let any_step = control
        .step
        .as_deref()
        .is_some_and(|s| s.trim().eq_ignore_ascii_case("any"));
    let step = number(&control.step).filter(|s| *s > 0.0).unwrap_or(1.0);
    // Steps count from `min` (HTML's step base; without one, from 0 here): the allowed values are
    // whole only when the step and its base are.
    let base = min.unwrap_or(0.0);
    let whole = !any_step && step.fract() == 0.0 && base.fract() == 0.0;
    let mut schema = if whole {
        json!({ "type": "integer" })
    } else {
        json!({ "type": "number" })
    };
    if let Some(min) = min {
        schema["minimum"] = json_number(min);
    }
    if let Some(max) = max {
        schema["maximum"] = json_number(max);
    }
    // Only a step counted from a multiple of it is a `multipleOf`; other steps (1, 3, 5… from
    // `min="1" step="2"`) the form's own validation checks when it is submitted.
    if !any_step && step != 1.0 && (base / step).fract() == 0.0 {
        schema["multipleOf"] = json_number(step);
    }
    schema
}

fn json_number(n: f64) -> Value {
    if n.fract() == 0.0 && n.abs() < 9e15 {
        Value::from(n as i64)
    } else {
        Value::from(n)
    }
}

/// One change to a control: its `property` (`value`, `checked`, or `selected` — the values to
/// select in a `<select multiple>`) gets `value`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Assignment {
    pub index: usize,
    pub property: &'static str,
    pub value: Value,
}

/// The changes that fill the form with `input` (already valid against [`input_schema`]). Fields the
/// input does not name are left as they are.
pub fn assignments(controls: &[Control], input: &Value) -> Vec<Assignment> {
    let mut changes = Vec::new();
    for field in fields(controls) {
        let Some(given) = input.get(field.name) else {
            continue;
        };
        let set = |control: &Control, property, value| Assignment {
            index: control.index,
            property,
            value,
        };
        match field.kind() {
            "checkbox" if field.is_checkbox_group() => {
                for control in &field.controls {
                    let on = given
                        .as_array()
                        .is_some_and(|a| a.iter().any(|v| v.as_str() == Some(&control.value)));
                    changes.push(set(control, "checked", on.into()));
                }
            }
            "checkbox" => changes.push(set(
                field.first(),
                "checked",
                given.as_bool().unwrap_or(false).into(),
            )),
            "radio" => {
                for control in &field.controls {
                    let on = given.as_str() == Some(control.value.as_str());
                    changes.push(set(control, "checked", on.into()));
                }
            }
            "select-multiple" => changes.push(set(field.first(), "selected", given.clone())),
            _ => {
                let text = match given {
                    Value::String(text) => text.clone(),
                    other => other.to_string(),
                };
                changes.push(set(field.first(), "value", text.into()));
            }
        }
    }
    changes
}

/// What the form submits, typed as its schema says: strings, numbers, booleans, arrays. An empty
/// number or an unchosen radio / select is left out.
pub fn submitted_values(controls: &[Control]) -> Value {
    let mut values = Map::new();
    for field in fields(controls) {
        let control = field.first();
        let value = match field.kind() {
            "checkbox" if field.is_checkbox_group() => Some(
                field
                    .controls
                    .iter()
                    .filter(|c| c.checked)
                    .map(|c| Value::from(c.value.as_str()))
                    .collect(),
            ),
            "checkbox" => Some(control.checked.into()),
            "radio" => field
                .controls
                .iter()
                .find(|c| c.checked)
                .map(|c| c.value.as_str().into()),
            "select-multiple" => Some(
                control
                    .selected
                    .iter()
                    .map(|s| Value::from(s.as_str()))
                    .collect(),
            ),
            "select-one" => {
                Some(control.value.as_str().into()).filter(|_| !control.value.is_empty())
            }
            "number" | "range" => control.value.trim().parse::<f64>().ok().map(json_number),
            _ => Some(control.value.as_str().into()),
        };
        if let Some(value) = value {
            values.insert(field.name.to_owned(), value);
        }
    }
    Value::Object(values)
}
