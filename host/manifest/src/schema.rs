//! The JSON Schemas of `glovebox.toml` and of a plugin manifest, made from the
//! types they are parsed into: each key's doc comment is its `description`,
//! its default is `default` (or `x-default`, a phrase such as "`cache` in
//! `data_dir`"), so an editor can check a config as it is typed, and
//! `docs/configuration.md` is made from them ([`crate::docs`]) and cannot drift
//! from the parser.
//!
//! A schema says what TOML the parser takes, not everything it checks: a
//! value in range, a file that exists, a key only one backend reads, are
//! still refused at load with the file, the key and the fix. A key the
//! config refuses when it is missing is `required`, even where the parser
//! reads it as optional to word that refusal itself.
//!
//! Two keywords of our own serve the page: `x-key`, the placeholder a map's
//! keys are shown as (`[tools.<tool>]`), and `x-one-row`, a table shown as
//! one row naming its keys (a manifest's `[limits]`). The schemas are checked
//! against the examples with a validator by the CLI's test of
//! `glovebox config schema` (`tests/all/cli.rs`).

use schemars::generate::SchemaSettings;
use schemars::transform::RecursiveTransform;
use schemars::{JsonSchema, Schema};
use serde_json::Value;

use super::host_config::RawHostConfig;
use super::plugin::RawManifest;

/// The schema of `glovebox.toml`.
pub fn host_config_schema() -> Schema {
    schema_for::<RawHostConfig>("glovebox.toml")
}

/// The schema of a plugin's manifest.
pub fn manifest_schema() -> Schema {
    schema_for::<RawManifest>("A Glovebox plugin manifest")
}

fn schema_for<T: JsonSchema>(title: &str) -> Schema {
    let mut schema = SchemaSettings::draft2020_12()
        .with_transform(RecursiveTransform(as_toml_writes_it))
        .into_generator()
        .into_root_schema_for::<T>();
    schema.insert("title".into(), title.into());
    schema
}

/// TOML has no null: a key is left out to leave its value out. An optional
/// key's schema is its value's, without the `null` schemars adds to an
/// `Option` (`"type": ["string", "null"]`, or `anyOf` a null schema).
fn as_toml_writes_it(schema: &mut Schema) {
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    if let Some(Value::Array(types)) = object.get_mut("type") {
        types.retain(|t| t != "null");
        if let [only] = types.as_slice() {
            let only = only.clone();
            object.insert("type".into(), only);
        }
    }
    if let Some(Value::Array(words)) = object.get_mut("enum") {
        words.retain(|w| !w.is_null());
    }
    if object.get("default").is_some_and(Value::is_null) {
        object.remove("default");
    }
    let is_null = |s: &Value| s.get("type").and_then(Value::as_str) == Some("null");
    if let Some(Value::Array(any_of)) = object.get_mut("anyOf")
        && any_of.iter().any(is_null)
    {
        any_of.retain(|s| !is_null(s));
        if let [Value::Object(only)] = any_of.as_slice() {
            let only = only.clone();
            object.remove("anyOf");
            for (key, value) in only {
                object.entry(key).or_insert(value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nulls(value: &Value, at: &str, found: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                if map.get("type").is_some_and(|t| {
                    t == "null" || t.as_array().is_some_and(|a| a.iter().any(|t| t == "null"))
                }) {
                    found.push(at.to_string());
                }
                for (key, value) in map {
                    nulls(value, &format!("{at}/{key}"), found);
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    nulls(item, &format!("{at}/{i}"), found);
                }
            }
            _ => {}
        }
    }

    #[test]
    fn no_key_of_either_schema_takes_null() {
        for schema in [host_config_schema(), manifest_schema()] {
            let mut found = Vec::new();
            nulls(&schema.to_value(), "", &mut found);
            assert!(found.is_empty(), "{found:?}");
        }
    }

    #[test]
    fn every_top_level_key_of_the_examples_is_in_the_schemas() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
        for (file, schema) in [
            ("glovebox.toml", host_config_schema()),
            ("plugins/files.toml", manifest_schema()),
        ] {
            let text = std::fs::read_to_string(root.join(file)).unwrap();
            let value: toml::Value = toml::from_str(&text).unwrap();
            let json = serde_json::to_value(value).unwrap();
            let keys = json.as_object().unwrap().keys();
            let known = schema.get("properties").and_then(Value::as_object).unwrap();
            for key in keys {
                assert!(
                    known.contains_key(key),
                    "{file}: `{key}` is not in the schema"
                );
            }
        }
    }
}
