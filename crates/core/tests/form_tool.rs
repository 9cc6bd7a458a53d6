//! Declarative form tools (SPEC §8) decided natively: what the controls mean as a schema, how a
//! call's input fills them, and what a submitted form gives back. (The browser tests check the same
//! against real forms: tests/webmcp.rs and tests/fixtures/webmcp/.)

use client_tools_core::form_tool::{assignments, input_schema, submitted_values, Choice, Control};
use client_tools_core::validate::CompiledSchema;
use serde_json::{json, Value};

fn control(index: usize, name: &str, kind: &str) -> Control {
    Control {
        index,
        name: name.into(),
        kind: kind.into(),
        ..Control::default()
    }
}

fn radio(index: usize, name: &str, value: &str, label: &str) -> Control {
    Control {
        value: value.into(),
        label: Some(label.into()),
        ..control(index, name, "radio")
    }
}

fn number(min: Option<&str>, step: Option<&str>) -> Value {
    let control = Control {
        min: min.map(Into::into),
        step: step.map(Into::into),
        ..control(0, "n", "number")
    };
    input_schema(&[control])["properties"]["n"].clone()
}

#[test]
fn numbers_are_integers_unless_the_step_says_otherwise() {
    assert_eq!(number(None, None), json!({ "type": "integer" }));
    assert_eq!(number(None, Some("any")), json!({ "type": "number" }));
    assert_eq!(
        number(None, Some("0.25")),
        json!({ "type": "number", "multipleOf": 0.25 })
    );
    assert_eq!(
        number(Some("0"), Some("5")),
        json!({ "type": "integer", "minimum": 0, "multipleOf": 5 })
    );
    // Steps count from `min`: 1, 3, 5… is no multiple of 2.
    assert_eq!(
        number(Some("1"), Some("2")),
        json!({ "type": "integer", "minimum": 1 })
    );
    assert_eq!(
        number(Some("x"), Some("-3")),
        json!({ "type": "integer" }),
        "junk is ignored"
    );
}

#[test]
fn controls_are_parameters_only_with_a_name_and_a_submittable_type() {
    let controls = [
        control(0, "", "text"),
        control(1, "token", "hidden"),
        control(2, "photo", "file"),
        control(3, "go", "submit"),
        control(4, "kept", "text"),
        control(5, "kept", "number"),
    ];
    let schema = input_schema(&controls);
    assert_eq!(
        schema,
        json!({ "type": "object", "properties": { "kept": { "type": "string" } } })
    );
}

#[test]
fn radios_of_one_name_are_one_choice_and_an_html_pattern_matches_the_whole_value() {
    let controls = [
        radio(0, "size", "s", "s"),
        Control {
            required: true,
            ..radio(1, "size", "m", "m")
        },
        Control {
            pattern: Some("[a-z]+|x".into()),
            ..control(2, "code", "text")
        },
    ];
    let schema = input_schema(&controls);
    assert_eq!(
        schema["properties"]["size"],
        json!({ "type": "string", "enum": ["s", "m"] })
    );
    assert_eq!(schema["required"], json!(["size"]));
    let compiled = CompiledSchema::compile(&schema).unwrap();
    assert!(compiled
        .validate(&json!({ "size": "m", "code": "abc" }))
        .is_ok());
    assert!(
        compiled
            .validate(&json!({ "size": "m", "code": "abc1" }))
            .is_err(),
        "anchored"
    );
    assert!(compiled.validate(&json!({ "size": "l" })).is_err());
}

#[test]
fn a_select_without_placeholders_and_with_titles_where_labels_say_more() {
    let select = Control {
        options: vec![
            Choice {
                value: "".into(),
                label: "Choose…".into(),
            },
            Choice {
                value: "ev".into(),
                label: "Electric".into(),
            },
            Choice {
                value: "petrol".into(),
                label: "petrol".into(),
            },
        ],
        ..control(0, "fuel", "select-one")
    };
    let schema = input_schema(&[select]);
    assert_eq!(
        schema["properties"]["fuel"]["oneOf"],
        json!([{ "const": "ev", "title": "Electric" }, { "const": "petrol", "title": "petrol" }])
    );
}

#[test]
fn input_fills_each_kind_of_control_and_leaves_the_rest() {
    let controls = [
        control(0, "who", "text"),
        control(1, "nights", "number"),
        control(2, "breakfast", "checkbox"),
        radio(3, "room", "single", "Single"),
        radio(4, "room", "double", "Double"),
        Control {
            value: "gps".into(),
            ..control(5, "extras", "checkbox")
        },
        Control {
            value: "seat".into(),
            ..control(6, "extras", "checkbox")
        },
        control(7, "colors", "select-multiple"),
        control(8, "untouched", "text"),
    ];
    let input = json!({
        "who": "Ada", "nights": 3, "breakfast": true, "room": "double",
        "extras": ["seat"], "colors": ["red"],
    });
    let changes: Vec<(usize, &str, Value)> = assignments(&controls, &input)
        .into_iter()
        .map(|a| (a.index, a.property, a.value))
        .collect();
    assert_eq!(
        changes,
        vec![
            (0, "value", json!("Ada")),
            (1, "value", json!("3")),
            (2, "checked", json!(true)),
            (3, "checked", json!(false)),
            (4, "checked", json!(true)),
            (5, "checked", json!(false)),
            (6, "checked", json!(true)),
            (7, "selected", json!(["red"])),
        ]
    );
}

#[test]
fn submitted_values_are_typed_as_the_schema_says() {
    let controls = [
        Control {
            value: "Ada".into(),
            ..control(0, "who", "text")
        },
        Control {
            value: "2.5".into(),
            ..control(1, "price", "number")
        },
        Control {
            value: "".into(),
            ..control(2, "empty", "number")
        },
        Control {
            checked: true,
            ..control(3, "news", "checkbox")
        },
        radio(4, "room", "single", "Single"),
        Control {
            checked: true,
            ..radio(5, "room", "double", "Double")
        },
        Control {
            selected: vec!["red".into(), "blue".into()],
            ..control(6, "colors", "select-multiple")
        },
        control(7, "make", "select-one"),
    ];
    assert_eq!(
        submitted_values(&controls),
        json!({ "who": "Ada", "price": 2.5, "news": true, "room": "double", "colors": ["red", "blue"] })
    );
}
