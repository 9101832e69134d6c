//! The rows of a table's keys, read from a JSON Schema: `$ref`s resolved,
//! keys in their declared order, tables inside a table under their own
//! header, each key's default and meaning as the page shows them.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::Row;
use super::place::Place;

/// A schema with its `$defs`, and the order each type declares its keys in
/// (a JSON object keeps none).
pub(super) struct Schemas<'a> {
    pub(super) root: &'a Value,
    /// The type the root schema is made from.
    pub(super) root_name: &'static str,
    orders: &'a BTreeMap<&'static str, Vec<String>>,
}

impl<'a> Schemas<'a> {
    pub(super) fn new(
        root: &'a Value,
        root_name: &'static str,
        orders: &'a BTreeMap<&'static str, Vec<String>>,
    ) -> Self {
        Schemas {
            root,
            root_name,
            orders,
        }
    }

    /// `schema` with a `$ref` replaced by what it names (the referring
    /// schema's own keys, its description and default, win), and that
    /// type's name when it is one of `$defs`.
    fn resolve(&self, schema: &Value) -> (Value, Option<String>) {
        let Some(target) = schema.get("$ref").and_then(Value::as_str) else {
            return (schema.clone(), None);
        };
        let name = target.trim_start_matches("#/$defs/").to_string();
        let mut resolved: Map<String, Value> = self.root["$defs"][&name]
            .as_object()
            .cloned()
            .unwrap_or_else(|| panic!("`{target}` names no definition"));
        for (key, value) in schema.as_object().into_iter().flatten() {
            if key != "$ref" {
                resolved.insert(key.clone(), value.clone());
            }
        }
        (Value::Object(resolved), Some(name))
    }

    pub(super) fn property(&self, object: &Value, key: &str) -> (Value, String) {
        let schema = &object["properties"][key];
        assert!(!schema.is_null(), "the schema has no `{key}`");
        let (schema, name) = self.resolve(schema);
        (schema, name.unwrap_or_default())
    }

    /// The items of an array of tables, and their type's name.
    pub(super) fn items_if_array(&self, schema: &Value) -> Option<(Value, String)> {
        let items = schema.get("items")?;
        let (items, name) = self.resolve(items);
        items.get("properties")?;
        Some((items, name.unwrap_or_default()))
    }

    /// The values of a map of tables (`[tools.<tool>]`) and their type's
    /// name, or of a map of plain values (`[detector.severity]`).
    fn values_if_map(&self, schema: &Value) -> Option<(Value, String)> {
        let values = schema.get("additionalProperties")?;
        if !values.is_object() {
            return None;
        }
        let (values, name) = self.resolve(values);
        Some((values, name.unwrap_or_default()))
    }

    /// Keys of `object` (a table of type `name`) in their declared order.
    fn ordered_keys(&self, object: &Value, name: &str) -> Vec<String> {
        let properties = object["properties"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        let order = self.orders.get(name).unwrap_or_else(|| {
            panic!("the keys of `{name}` have no declared order: add it to `declared_orders` in host/manifest/src/docs.rs")
        });
        let keys: Vec<String> = order
            .iter()
            .filter(|k| properties.contains_key(*k))
            .cloned()
            .collect();
        let missing: Vec<&String> = properties.keys().filter(|k| !keys.contains(k)).collect();
        assert!(
            missing.is_empty(),
            "`{name}`'s declared keys lack {missing:?}"
        );
        keys
    }

    /// What key `key` (its schema `raw`, resolved `schema`) holds when it
    /// holds tables, or a map.
    fn inner(&self, key: &str, raw: &Value, schema: &Value) -> Option<Inner> {
        if let Some((items, name)) = self.items_if_array(schema) {
            return Some(Inner {
                schema: items,
                name,
                array: true,
                placeholder: String::new(),
            });
        }
        if schema.get("properties").is_some() {
            let name = self.resolve(raw).1.unwrap_or_default();
            return Some(Inner {
                schema: schema.clone(),
                name,
                array: false,
                placeholder: String::new(),
            });
        }
        let (values, name) = self.values_if_map(schema)?;
        let placeholder = schema["x-key"]
            .as_str()
            .unwrap_or_else(|| panic!("the map `{key}` has no `x-key` placeholder"));
        Some(Inner {
            schema: values,
            name,
            array: false,
            placeholder: format!(".{placeholder}"),
        })
    }

    /// The rows of the keys of `object` (of type `name`) at `place`, the
    /// keys `wanted` only.
    pub(super) fn rows_of(
        &self,
        object: &Value,
        name: &str,
        place: &Place,
        rows: &mut Vec<Row>,
        wanted: &dyn Fn(&str) -> bool,
    ) {
        let required: Vec<&str> = object["required"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let keys = self.ordered_keys(object, name);
        let mut done: Vec<&String> = Vec::new();
        for key in &keys {
            if done.contains(&key) || !wanted(key) {
                continue;
            }
            let raw = &object["properties"][key];
            let (schema, _) = self.resolve(raw);
            let default = default_of(&schema, required.contains(&key.as_str()));
            let row = |shown: String| Row {
                key: shown,
                of: String::new(),
                default: default.clone(),
                meaning: meaning_of(&schema),
            };
            let inner = self.inner(key, raw, &schema);
            if schema.get("x-one-row").is_some() {
                let inner = inner.expect("`x-one-row` marks a table");
                let keys = self.ordered_keys(&inner.schema, &inner.name);
                rows.push(Row {
                    key: place.nested(key, inner.array).keys(&keys),
                    ..row(String::new())
                });
            } else if let Some(inner) = inner
                .as_ref()
                .filter(|i| i.schema.get("properties").is_none())
            {
                // A map of plain values: `[detector.severity]` `<rule>`.
                let placeholder = inner.placeholder.trim_start_matches('.');
                rows.push(row(place.nested(key, false).key(placeholder)));
            } else if let Some(inner) = inner {
                // Sibling tables alike (type and meaning) share a header.
                let alike: Vec<&String> = keys
                    .iter()
                    .filter(|other| object["properties"][other.as_str()] == *raw)
                    .collect();
                done.extend(alike.iter().copied());
                let joined: Vec<&str> = alike.iter().map(|k| k.as_str()).collect();
                let at = place.nested(
                    &format!("{}{}", joined.join("|"), inner.placeholder),
                    inner.array,
                );
                rows.push(Row {
                    key: format!("`{}`", at.header.clone().unwrap_or_default()),
                    ..row(String::new())
                });
                self.rows_of(&inner.schema, &inner.name, &at, rows, &|_| true);
            } else {
                rows.push(row(place.key(key)));
            }
        }
    }
}

/// What a key holds when it holds tables: a table, an array of tables, or
/// a map (of tables, or of plain values).
struct Inner {
    /// The schema of the table (of one item, of one value).
    schema: Value,
    /// Its type's name, for the order of its keys.
    name: String,
    /// `[[...]]`.
    array: bool,
    /// What the header adds after the key: `.<tool>` for a map.
    placeholder: String,
}

/// A key's default as the page shows it: `x-default` as written, `default`
/// as TOML writes it, else whether the key is required.
fn default_of(schema: &Value, required: bool) -> String {
    if let Some(phrase) = schema.get("x-default").and_then(Value::as_str) {
        return phrase.to_string();
    }
    match schema.get("default") {
        Some(value) => format!("`{}`", as_toml(value)),
        None if required => "(required)".to_string(),
        None => "none".to_string(),
    }
}

fn as_toml(value: &Value) -> String {
    match value {
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(as_toml).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Object(map) if map.is_empty() => "{}".to_string(),
        other => other.to_string(),
    }
}

/// A key's description on one line.
fn meaning_of(schema: &Value) -> String {
    let text = schema
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or_default();
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
