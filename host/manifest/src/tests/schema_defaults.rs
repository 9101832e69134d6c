//! The defaults the config's schema states (and `docs/configuration.md`
//! shows) are the parser's: a config that writes every one of them out
//! loads to the same thing as a config that leaves them out.

use serde_json::Value;

use super::Fixture;
use crate::schema::host_config_schema;

/// `value` as TOML writes it (the schema's defaults are strings, numbers,
/// booleans, arrays of strings and empty tables).
fn toml_value(value: &Value) -> String {
    match value {
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(toml_value).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Object(map) if map.is_empty() => "{}".to_string(),
        other => other.to_string(),
    }
}

/// Every key of `table` (its schema `object`) that has a `default`, as
/// `key = default` lines; `skip` names keys left out.
fn defaults_of(root: &Value, object: &Value, skip: &[&str]) -> String {
    let mut lines = String::new();
    for (key, schema) in object["properties"].as_object().unwrap() {
        let resolved = match schema.get("$ref").and_then(Value::as_str) {
            Some(target) => &root["$defs"][target.trim_start_matches("#/$defs/")],
            None => schema,
        };
        if skip.contains(&key.as_str()) || resolved.get("properties").is_some() {
            continue;
        }
        if let Some(default) = schema.get("default") {
            lines.push_str(&format!("{key} = {}\n", toml_value(default)));
        }
    }
    lines
}

fn table<'a>(root: &'a Value, key: &str) -> &'a Value {
    let schema = &root["properties"][key];
    let target = schema["$ref"]
        .as_str()
        .unwrap_or_else(|| panic!("`{key}` is not a table"));
    &root["$defs"][target.trim_start_matches("#/$defs/")]
}

fn items<'a>(root: &'a Value, key: &str) -> &'a Value {
    let target = root["properties"][key]["items"]["$ref"].as_str().unwrap();
    &root["$defs"][target.trim_start_matches("#/$defs/")]
}

#[test]
fn a_config_that_writes_out_every_default_loads_as_one_that_leaves_them_out() {
    let root = host_config_schema().to_value();
    // The nats keys are read only with `backend = "nats"`: both configs say it.
    let nats = "backend = \"nats\"\nurl = \"nats://127.0.0.1:4222\"\n";
    let hook = "name = \"gate\"\ncomponent = \"gate.wasm\"\n";
    let notify = "url = \"https://example.test/hook\"\nevents = [\"*\"]\n";
    let lean = format!("[storage]\n{nats}\n[[hook]]\n{hook}\n[[notify]]\n{notify}");
    let mut full = String::new();
    for key in [
        "defaults",
        "runtime",
        "storage",
        "quotas",
        "budgets",
        "detector",
        "approvals",
        "handoffs",
        "context",
        "memory",
    ] {
        full.push_str(&format!("[{key}]\n"));
        if key == "storage" {
            full.push_str(nats);
        }
        full.push_str(&defaults_of(&root, table(&root, key), &["backend"]));
        full.push('\n');
    }
    full.push_str(&format!(
        "[[hook]]\n{hook}{}\n",
        defaults_of(&root, items(&root, "hook"), &[])
    ));
    full.push_str(&format!(
        "[[notify]]\n{notify}{}\n",
        defaults_of(&root, items(&root, "notify"), &[])
    ));

    let fixture = Fixture::new();
    let mut lean = fixture.host(&lean).unwrap();
    let mut full = fixture
        .host(&full)
        .unwrap_or_else(|e| panic!("{e}\n{full}"));
    // Which quotas the config set is part of a refusal, not a value.
    lean.quotas.set.clear();
    full.quotas.set.clear();
    assert_eq!(format!("{full:#?}"), format!("{lean:#?}"));
}

#[test]
fn the_backend_the_schema_names_is_the_default() {
    let root = host_config_schema().to_value();
    let backend = &table(&root, "storage")["properties"]["backend"]["default"];
    assert_eq!(backend, crate::StorageBackend::DEFAULT.as_str());
}
