//! The one schema-form renderer (SPEC §7): a JSON Schema and a value become form fields; the fields
//! become a value again; validation errors (by JSON Pointer) go to their fields.
//!
//! Which field a schema becomes is decided by the core ([`client_tools_core::form`]). Every control
//! carries `data-path`, its value's JSON Pointer; objects and arrays are `<fieldset data-group>`s.
//! Every text shown comes from `textContent` or an attribute: nothing supplied by an agent or a page
//! is ever parsed as markup.

use client_tools_core::schema_field::{classify, initial_value, pointer_step, Field};
use serde_json::{Number, Value};
use wasm_bindgen::JsCast;
use web_sys::{Element, HtmlElement};

use super::strings::{Strings, S};
use super::{el, is_local_date_time, local_to_iso};
use crate::js;

/// Errors of a form: the field's JSON Pointer and the message.
pub type FieldErrors = Vec<(String, String)>;

const CONTROLS: &str = "input[data-path],select[data-path],textarea[data-path]";

struct Render<'a> {
    strings: &'a Strings,
    editable: bool,
}

/// Fills `form` (emptied first) with the fields of `schema` showing `value`. Read-only fields stay
/// focusable and readable (text is `readonly`, choices and checkboxes `disabled`).
pub fn render(form: &Element, schema: &Value, value: &Value, editable: bool, strings: &Strings) {
    form.set_text_content(None);
    let render = Render { strings, editable };
    // The root is a group too: errors about the whole value show at the top of the form.
    group_error(form, "");
    let _ = form.set_attribute("data-group", "");
    match classify(schema) {
        Field::Object(properties) => render.properties(form, &properties, value, ""),
        _ => {
            let label = schema.get("title").and_then(Value::as_str).unwrap_or("");
            render.field(form, schema, value, "", label, true);
        }
    }
}

impl Render<'_> {
    fn properties(
        &self,
        parent: &Element,
        properties: &[(&str, &Value, bool)],
        value: &Value,
        path: &str,
    ) {
        for (name, schema, required) in properties {
            let label = schema.get("title").and_then(Value::as_str).unwrap_or(name);
            let value = value.get(name).unwrap_or(&Value::Null);
            self.field(
                parent,
                schema,
                value,
                &pointer_step(path, name),
                label,
                *required,
            );
        }
        // What the value holds beyond the listed properties is shown too (as JSON text): a person
        // never approves input they cannot see.
        for (name, extra) in unlisted(properties, value) {
            let path = pointer_step(path, name);
            self.field(parent, &Value::Bool(true), extra, &path, name, false);
        }
    }

    fn field(
        &self,
        parent: &Element,
        schema: &Value,
        value: &Value,
        path: &str,
        label: &str,
        required: bool,
    ) {
        let kind = classify(schema);
        let help = schema.get("description").and_then(Value::as_str);
        if let Field::Object(_) | Field::Array(_) = kind {
            let set = el(parent, "fieldset", &[("data-group", path)], None);
            el(&set, "legend", &[], Some(label));
            let id = group_error(&set, help.unwrap_or(""));
            let _ = set.set_attribute("aria-describedby", &id);
            match kind {
                Field::Object(properties) => self.properties(&set, &properties, value, path),
                Field::Array(items) => {
                    let rows = el(&set, "div", &[("class", "rows")], None);
                    self.rows(&rows, items, value, path);
                    if self.editable {
                        let add = self.strings.get(S::Add);
                        el(
                            &set,
                            "button",
                            &[
                                ("type", "button"),
                                ("data-action", "add"),
                                ("data-path", path),
                            ],
                            Some(add),
                        );
                    }
                }
                _ => {}
            }
            return;
        }
        let wrap = el(parent, "div", &[("class", "f")], None);
        let id = super::next_id();
        let label_el = el(&wrap, "label", &[("for", &id)], Some(label));
        if required {
            let _ = label_el.set_attribute("class", "req");
        }
        let text = match value {
            Value::Null => String::new(),
            // A JSON field shows JSON text (a string in quotes), so it reads back as it was.
            Value::String(s) if !matches!(kind, Field::Json) => s.clone(),
            other => other.to_string(),
        };
        let control = match &kind {
            // Plain text that would not show whole in one line: a textarea keeps every line.
            Field::Text("text") if text.contains('\n') || text.chars().count() > 60 => {
                let rows = (text.lines().count() + text.chars().count() / 60).clamp(2, 12);
                el(
                    &wrap,
                    "textarea",
                    &[("rows", &rows.to_string())],
                    Some(&text),
                )
            }
            Field::Text(input_type) => {
                let shown = match *input_type {
                    "datetime-local" => super::iso_to_local(&text),
                    "time" => text.get(..8).unwrap_or(&text).to_owned(),
                    _ => text,
                };
                el(
                    &wrap,
                    "input",
                    &[("type", input_type), ("value", &shown)],
                    None,
                )
            }
            Field::Number { integer } => {
                let step = schema.get("multipleOf").map(Value::to_string);
                let step = step
                    .as_deref()
                    .unwrap_or(if *integer { "1" } else { "any" });
                let input = el(
                    &wrap,
                    "input",
                    &[("type", "number"), ("step", step), ("value", &text)],
                    None,
                );
                for (keyword, attribute) in [("minimum", "min"), ("maximum", "max")] {
                    if let Some(bound) = schema.get(keyword) {
                        let _ = input.set_attribute(attribute, &bound.to_string());
                    }
                }
                input
            }
            Field::Boolean => {
                let input = el(&wrap, "input", &[("type", "checkbox")], None);
                if value == &Value::Bool(true) {
                    let _ = input.set_attribute("checked", "");
                }
                input
            }
            Field::Choice(choices) => {
                let select = el(&wrap, "select", &[], None);
                if !required || !choices.iter().any(|(v, _)| *v == value) {
                    el(
                        &select,
                        "option",
                        &[("value", "")],
                        Some(self.strings.get(S::None)),
                    );
                }
                for (index, (choice, label)) in choices.iter().enumerate() {
                    let option = el(
                        &select,
                        "option",
                        &[("value", &index.to_string())],
                        Some(label),
                    );
                    if *choice == value {
                        let _ = option.set_attribute("selected", "");
                    }
                }
                select
            }
            _ => el(
                &wrap,
                "textarea",
                &[("rows", "3"), ("spellcheck", "false")],
                Some(&text),
            ),
        };
        let described = match help {
            Some(help) => {
                el(
                    &wrap,
                    "p",
                    &[("id", &format!("{id}h")), ("class", "help")],
                    Some(help),
                );
                format!("{id}h {id}e")
            }
            None => format!("{id}e"),
        };
        el(
            &wrap,
            "p",
            &[("id", &format!("{id}e")), ("data-ct", "error")],
            None,
        );
        for (name, value) in [
            ("id", id.as_str()),
            ("data-path", path),
            ("aria-describedby", &described),
        ] {
            let _ = control.set_attribute(name, value);
        }
        if required && !matches!(kind, Field::Boolean) {
            let _ = control.set_attribute("required", "");
        }
        if !self.editable {
            let frozen = matches!(kind, Field::Boolean | Field::Choice(_));
            let _ = control.set_attribute(if frozen { "disabled" } else { "readonly" }, "");
        }
    }

    /// The rows of an array (replacing any there were), each with its Remove button.
    fn rows(&self, rows: &Element, items: &Value, value: &Value, path: &str) {
        rows.set_text_content(None);
        let values = value.as_array().map(Vec::as_slice).unwrap_or_default();
        for (index, item) in values.iter().enumerate() {
            let row = el(rows, "div", &[("class", "row")], None);
            let item_path = pointer_step(path, &index.to_string());
            let label = self.strings.fill(S::Item, "{n}", &(index + 1).to_string());
            self.field(&row, items, item, &item_path, &label, true);
            if self.editable {
                let remove = format!("{} {label}", self.strings.get(S::Remove));
                let attrs = [
                    ("type", "button"),
                    ("data-action", "remove"),
                    ("data-path", &item_path),
                    ("aria-label", &remove),
                ];
                el(&row, "button", &attrs, Some(self.strings.get(S::Remove)));
            }
        }
        let _ = rows.set_attribute("data-n", &values.len().to_string());
    }
}

/// The error element of a group (`id` + `e`) after its help text; returns what describes it.
fn group_error(group: &Element, help: &str) -> String {
    let id = super::next_id();
    let _ = group.set_attribute("id", &id);
    let mut described = format!("{id}e");
    if !help.is_empty() {
        el(
            group,
            "p",
            &[("id", &format!("{id}h")), ("class", "help")],
            Some(help),
        );
        described = format!("{id}h {described}");
    }
    el(
        group,
        "p",
        &[("id", &format!("{id}e")), ("data-ct", "error")],
        None,
    );
    described
}

/// Elements by JSON Pointer (a list: forms are small, and a map costs code size on wasm).
struct ByPath(Vec<(String, Element)>);

impl ByPath {
    fn get(&self, path: &str) -> Option<&Element> {
        self.0.iter().find(|(p, _)| p == path).map(|(_, e)| e)
    }
}

/// The form's controls and groups by JSON Pointer.
struct Controls {
    controls: ByPath,
    groups: ByPath,
}

impl Controls {
    fn of(form: &Element) -> Self {
        let by_path = |selector: &str, attribute: &str| {
            let mut found = Vec::new();
            if let Ok(list) = form.query_selector_all(selector) {
                for node in (0..list.length()).filter_map(|i| list.get(i)) {
                    let element: Element = node.unchecked_into();
                    if let Some(path) = element.get_attribute(attribute) {
                        found.push((path, element));
                    }
                }
            }
            ByPath(found)
        };
        let mut groups = by_path("[data-group]", "data-group");
        groups.0.push((String::new(), form.clone()));
        Self {
            controls: by_path(CONTROLS, "data-path"),
            groups,
        }
    }
}

/// What a read starts from: nothing (a result form: every field is read), or the value the form
/// was shown with (an edited confirmation: what the person did not touch stays exactly as it was —
/// its text, its time zone, the keys the schema does not list — and only touched fields are read).
#[derive(Clone, Copy)]
pub enum Base<'a> {
    Fresh,
    Original(Option<&'a Value>),
}

impl<'a> Base<'a> {
    fn at(self, key: &str) -> Self {
        match self {
            Base::Fresh => Base::Fresh,
            Base::Original(value) => Base::Original(value.and_then(|v| match v {
                Value::Array(items) => key.parse::<usize>().ok().and_then(|i| items.get(i)),
                _ => v.get(key),
            })),
        }
    }
}

/// The value the form shows for `schema`, and the fields whose text could not be read (JSON that
/// does not parse). Empty optional fields are left out.
pub fn read(form: &Element, schema: &Value, base: Base, strings: &Strings) -> (Value, FieldErrors) {
    read_at(form, schema, "", base, strings)
}

/// [`read`] of the part of the form at `path` (`schema` being that part's schema).
pub fn read_at(
    form: &Element,
    schema: &Value,
    path: &str,
    base: Base,
    strings: &Strings,
) -> (Value, FieldErrors) {
    let controls = Controls::of(form);
    let mut errors = Vec::new();
    let value = read_field(&controls, schema, path, true, base, strings, &mut errors);
    (value.unwrap_or(Value::Null), errors)
}

/// Whether the person changed anything in the form (typed, picked, added or removed a row).
pub fn touched(form: &Element) -> bool {
    form.query_selector("[data-dirty]").ok().flatten().is_some()
}

/// The keys of `value` (an object) that `properties` does not list.
fn unlisted<'v>(
    properties: &[(&str, &Value, bool)],
    value: &'v Value,
) -> Vec<(&'v String, &'v Value)> {
    value
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(name, _)| {
            !properties
                .iter()
                .any(|(listed, _, _)| *listed == name.as_str())
        })
        .collect()
}

#[allow(clippy::too_many_arguments)]
fn read_field(
    controls: &Controls,
    schema: &Value,
    path: &str,
    required: bool,
    base: Base,
    strings: &Strings,
    errors: &mut FieldErrors,
) -> Option<Value> {
    let kind = classify(schema);
    match kind {
        Field::Object(properties) => {
            let original = match base {
                Base::Original(Some(value)) => value,
                _ => &Value::Null,
            };
            let mut object = original.as_object().cloned().unwrap_or_default();
            for (name, schema, required) in &properties {
                let path = pointer_step(path, name);
                let base = base.at(name);
                match read_field(controls, schema, &path, *required, base, strings, errors) {
                    Some(value) => object.insert((*name).to_owned(), value),
                    None => object.remove(*name),
                };
            }
            let extras: Vec<String> = unlisted(&properties, original)
                .into_iter()
                .map(|(k, _)| k.clone())
                .collect();
            for name in extras {
                let path = pointer_step(path, &name);
                let base = base.at(&name);
                match read_field(
                    controls,
                    &Value::Bool(true),
                    &path,
                    false,
                    base,
                    strings,
                    errors,
                ) {
                    Some(value) => object.insert(name, value),
                    None => object.remove(&name),
                };
            }
            return Some(Value::Object(object));
        }
        Field::Array(items) => {
            let group = controls.groups.get(path);
            let count = group
                .and_then(|g| g.query_selector(".rows").ok().flatten())
                .and_then(|rows| rows.get_attribute("data-n"))
                .and_then(|n| n.parse().ok())
                .unwrap_or(0usize);
            // Rows added or removed: their places moved, so every row is read as shown.
            let moved = group.is_some_and(|g| g.has_attribute("data-dirty"));
            let values = (0..count).map(|index| {
                let path = pointer_step(path, &index.to_string());
                let base = if moved {
                    Base::Fresh
                } else {
                    base.at(&index.to_string())
                };
                read_field(controls, items, &path, true, base, strings, errors)
                    .unwrap_or(Value::Null)
            });
            return Some(Value::Array(values.collect()));
        }
        _ => {}
    }
    let control = controls.controls.get(path);
    if let (Base::Original(original), false) =
        (base, control.is_some_and(|c| c.has_attribute("data-dirty")))
    {
        return original.cloned();
    }
    let control = control?;
    if let Field::Boolean = kind {
        return Some(
            js::get(control, "checked")
                .as_bool()
                .unwrap_or(false)
                .into(),
        );
    }
    let text = js::get(control, "value").as_string().unwrap_or_default();
    if text.is_empty() && !(required && matches!(kind, Field::Text(_))) {
        return None;
    }
    match kind {
        Field::Text("datetime-local") if is_local_date_time(&text) => {
            Some(local_to_iso(&text).into())
        }
        Field::Text("time") if text.len() <= 8 => {
            let seconds = if text.len() == 5 { ":00" } else { "" };
            Some(format!("{text}{seconds}Z").into())
        }
        Field::Text(_) => Some(text.into()),
        Field::Number { integer } => {
            let number: f64 = text.parse().ok()?;
            if integer && number.fract() == 0.0 && number.abs() < 9.0e15 {
                Some((number as i64).into())
            } else {
                Number::from_f64(number).map(Value::Number)
            }
        }
        Field::Choice(choices) => {
            let index: usize = text.parse().ok()?;
            choices.get(index).map(|(value, _)| (*value).clone())
        }
        _ => match serde_json::from_str(&text) {
            Ok(value) => Some(value),
            Err(_) => {
                errors.push((path.to_owned(), strings.get(S::InvalidJson).to_owned()));
                None
            }
        },
    }
}

/// Shows `errors` on their fields (`aria-invalid`, the error text the control's `aria-describedby`
/// names) and clears the others; an error whose path has no field goes to the nearest enclosing
/// group (the form itself at the top). Returns the first invalid control, to focus.
pub fn show_errors(form: &Element, errors: &FieldErrors) -> Option<HtmlElement> {
    let found = Controls::of(form);
    for (_, control) in &found.controls.0 {
        let _ = control.remove_attribute("aria-invalid");
    }
    if let Ok(list) = form.query_selector_all("[data-ct=error]") {
        for node in (0..list.length()).filter_map(|i| list.get(i)) {
            node.set_text_content(None);
        }
    }
    let mut first = None;
    for (path, message) in errors {
        let mut at = path.as_str();
        let holder = loop {
            if let Some(control) = found.controls.get(at) {
                let _ = control.set_attribute("aria-invalid", "true");
                first.get_or_insert_with(|| control.clone());
                break control;
            }
            if let Some(group) = found.groups.get(at) {
                break group;
            }
            at = at.rfind('/').map_or("", |cut| &at[..cut]);
        };
        let Some(id) = holder.get_attribute("id") else {
            continue;
        };
        if let Ok(Some(error)) = form.query_selector(&format!("[id='{id}e']")) {
            let shown = error.text_content().unwrap_or_default();
            let text = if shown.is_empty() {
                message.clone()
            } else {
                format!("{shown} {message}")
            };
            error.set_text_content(Some(&text));
        }
    }
    first.map(JsCast::unchecked_into)
}

/// The schema of the value at `path` inside `schema` (through properties and array items).
pub fn schema_at<'a>(schema: &'a Value, path: &str) -> Option<&'a Value> {
    let mut schema = schema;
    for step in path.split('/').skip(1) {
        let step = step.replace("~1", "/").replace("~0", "~");
        schema = match classify(schema) {
            Field::Object(properties) => properties.into_iter().find(|(n, ..)| *n == step)?.1,
            Field::Array(items) => items,
            _ => return None,
        };
    }
    Some(schema)
}

/// Adds a row (`remove` = `None`) to, or removes row `remove` from, the array at `path`, keeping
/// what the other rows hold; returns the element to focus next.
pub fn change_rows(
    form: &Element,
    root: &Value,
    path: &str,
    remove: Option<usize>,
    strings: &Strings,
) -> Option<HtmlElement> {
    let Some(Field::Array(items)) = schema_at(root, path).map(classify) else {
        return None;
    };
    let schema = schema_at(root, path)?;
    let (mut value, _) = read_at(form, schema, path, Base::Fresh, strings);
    let group = Controls::of(form).groups.get(path)?.clone();
    // The rows moved: the whole array is read as shown from now on (see `read_field`).
    let _ = group.set_attribute("data-dirty", "");
    let rows_of = group.query_selector(".rows").ok()??;
    let list = value.as_array_mut()?;
    match remove {
        Some(index) if index < list.len() => {
            list.remove(index);
        }
        Some(_) => return None,
        None => list.push(initial_value(items)),
    }
    let render = Render {
        strings,
        editable: true,
    };
    render.rows(&rows_of, items, &value, path);
    let focus = match remove {
        None => rows_of.last_element_child().and_then(|row| {
            row.query_selector(&format!("{CONTROLS},button"))
                .ok()
                .flatten()
        }),
        Some(_) => rows_of
            .parent_element()
            .and_then(|set| set.query_selector("[data-action=add]").ok().flatten()),
    };
    focus.map(JsCast::unchecked_into)
}
