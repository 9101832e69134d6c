//! The built-ins' derived schemas against what clients were told.

mod expected;

use super::*;
use expected::{SHAPES, pins};
use glovebox::manifest::{Completion, Gate, MAX_GATES};
use glovebox::operations::input_schema;

fn schemas() -> Vec<(String, Value)> {
    builtin_tools()
        .into_iter()
        .map(|t| (t.name.to_string(), Value::Object((*t.input_schema).clone())))
        .collect()
}

#[test]
fn every_builtin_has_a_derived_schema() {
    let mut builtins = BUILTINS.to_vec();
    builtins.sort();
    let mut names: Vec<String> = schemas().into_iter().map(|(name, _)| name).collect();
    names.sort();
    assert_eq!(names, builtins, "one tool per built-in");
    let mut shaped = SHAPES.map(|(name, _, _)| name);
    shaped.sort();
    assert_eq!(shaped, *builtins, "a built-in without its shape here");
}

#[test]
fn every_operation_for_agents_is_a_listed_builtin_served_from_the_registry() {
    let tools = builtin_tools();
    for entry in glovebox::operations::all() {
        let Some(tool) = entry.mcp else { continue };
        assert!(
            BUILTINS.contains(&tool),
            "`{}` is MCP `{tool}`, which BUILTINS leaves out",
            entry.name
        );
        let listed = tools.iter().find(|t| t.name == tool).unwrap();
        assert_eq!(*listed.input_schema, entry.input_schema(), "{tool}");
        assert!(
            listed
                .description
                .as_deref()
                .unwrap_or("")
                .starts_with(entry.summary),
            "{tool}: {:?}",
            listed.description
        );
    }
}

#[test]
fn schemas_keep_the_properties_and_required_fields_clients_had() {
    let schemas = schemas();
    for (name, properties, required) in SHAPES {
        let (_, schema) = schemas.iter().find(|(n, _)| n == name).unwrap();
        let mut have: Vec<String> = schema["properties"]
            .as_object()
            .unwrap_or_else(|| panic!("{name}: no properties: {schema}"))
            .iter()
            .map(|(field, s)| format!("{field}:{}", s["type"].as_str().unwrap_or("?")))
            .collect();
        have.sort();
        let mut want: Vec<String> = properties.iter().map(|p| p.to_string()).collect();
        want.sort();
        assert_eq!(have, want, "{name}: properties (name:type)");
        let mut have: Vec<&str> = schema["required"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        have.sort();
        let mut want = required.to_vec();
        want.sort();
        assert_eq!(have, want, "{name}: required");
    }
}

#[test]
fn schemas_keep_the_words_limits_and_defaults_clients_had() {
    let schemas = schemas();
    for (name, pointer, want) in pins() {
        let (_, schema) = schemas.iter().find(|(n, _)| n == name).unwrap();
        let have = schema
            .pointer(pointer)
            .unwrap_or_else(|| panic!("{name}: `{pointer}` is gone: {schema}"));
        if pointer.ends_with("/enum") {
            for word in want.as_array().unwrap() {
                assert!(
                    have.as_array().unwrap().contains(word),
                    "{name}: `{pointer}` lost {word}: {have}"
                );
            }
        } else {
            assert_eq!(have, &want, "{name}: `{pointer}`");
        }
    }
}

/// What MCP requires of an input schema and what the clients without
/// `$ref` (or `null`, or schemars' number formats) need, everywhere in
/// every schema.
#[test]
fn schemas_are_closed_inlined_objects() {
    fn walk(name: &str, at: &str, v: &Value) {
        let Value::Object(o) = v else {
            if let Value::Array(items) = v {
                for (i, item) in items.iter().enumerate() {
                    walk(name, &format!("{at}/{i}"), item);
                }
            }
            return;
        };
        for key in ["$ref", "$defs", "$schema", "title", "anyOf", "oneOf"] {
            assert!(!o.contains_key(key), "{name}: `{key}` at `{at}`: {v}");
        }
        if let Some(t) = o.get("type") {
            assert!(t.is_string() && t != "null", "{name}: type {t} at `{at}`");
            if t == "integer" || t == "number" {
                assert!(!o.contains_key("format"), "{name}: a format at `{at}`");
            }
        }
        if let Some(d) = o.get("description") {
            let d = d.as_str().unwrap();
            assert!(!d.is_empty() && !d.contains('\n'), "{name}: `{at}`: {d:?}");
        }
        if let Some(properties) = o.get("properties") {
            assert_eq!(o["type"], "object", "{name}: `{at}`");
            assert_eq!(
                o.get("additionalProperties"),
                Some(&json!(false)),
                "{name}: `{at}` takes unknown fields, which the parse refuses"
            );
            for field in o
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let field = field.as_str().unwrap();
                assert!(
                    properties.get(field).is_some(),
                    "{name}: `{at}` requires {field}"
                );
            }
        }
        for (key, sub) in o {
            walk(name, &format!("{at}/{key}"), sub);
        }
    }
    for (name, schema) in schemas() {
        assert_eq!(
            schema["type"], "object",
            "{name}: MCP wants an object schema"
        );
        assert!(schema.get("description").is_none(), "{name}");
        walk(&name, "", &schema);
    }
}

/// The MCP input takes every field of the config's completion condition
/// (one type, `Completion`, parsed by both), and its schema says so.
#[test]
fn the_mcp_input_takes_the_configs_completion_condition() {
    let full = Completion {
        gates: vec![Gate {
            tool: "p.t".into(),
            input: json!({"a": 1}),
            expect: json!({"ok": true}).as_object().unwrap().clone(),
        }],
        judge: true,
    };
    let full = serde_json::to_value(&full).unwrap();
    let schema = input_schema::<StartArgs>();
    let completion = &schema["properties"]["completion"];
    for field in full.as_object().unwrap().keys() {
        assert!(completion["properties"].get(field).is_some(), "{field}");
    }
    for field in full["gates"][0].as_object().unwrap().keys() {
        let gate = &completion["properties"]["gates"]["items"]["properties"];
        assert!(gate.get(field).is_some(), "gates[].{field}");
    }
    let start = json!({"role": "workagent", "project": "p", "completion": full});
    let parsed: StartArgs = serde_json::from_value(start).unwrap();
    assert_eq!(serde_json::to_value(parsed.completion).unwrap(), full);
    assert_eq!(completion["properties"]["gates"]["maxItems"], MAX_GATES);
    let input = &completion["properties"]["gates"]["items"]["properties"]["input"];
    assert_eq!(input["type"], "object", "{input}");
}
