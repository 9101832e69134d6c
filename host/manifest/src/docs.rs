//! `docs/configuration.md`, made from the JSON Schemas of `glovebox.toml` and
//! of a plugin manifest ([`crate::schema`]): a section per table, a row per
//! key with its default and its meaning, both taken from the parser's own
//! types. A key added to the parser is on the page when the page is
//! rewritten, and the test below fails until it is
//! (`GLOVEBOX_WRITE_DOCS=1 cargo test -p glovebox-manifest docs`).
//!
//! What is not a key (the introduction, the conventions, a section's
//! heading and the prose around its table) is written here.
//!
//! How a key is shown: a key of the section's table by its name (with the
//! table's, `approvals.wait`, when a section shows several tables); a key
//! of a table inside it under that table's header (`[memory.propose]`,
//! `[[fs]]`, `[tools.<tool>]`, the placeholder being the map's `x-key`);
//! sibling tables of the same type and meaning share one header
//! (`[budgets.role.<role>.day|week|month]`); a table marked `x-one-row` is
//! one row naming its keys.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::approvals::RawApprovals;
use super::budgets::{RawBudgets, RawCaps, RawCeiling, RawPeriods};
use super::completion::RawCompletion;
use super::detector::{RawContext, RawDetector};
use super::handoffs::RawHandoffs;
use super::hooks::RawHook;
use super::host_config::{RawHostConfig, RawPluginEntry, RawRuntime, RawStorage};
use super::limits::RawLimits;
use super::memory::{RawMemory, RawPropose};
use super::notify::RawNotify;
use super::oauth::{RawAuth, RawOAuth};
use super::plugin::{RawFs, RawHttp, RawManifest, RawTool};
use super::principal::RawPrincipal;
use super::schedule::{RawSchedule, RawTrigger};
use super::schema::{host_config_schema, manifest_schema};
use super::{Gate, QuotasConfig};

/// The page, as `docs/configuration.md` holds it.
pub fn configuration_page() -> String {
    let orders = declared_orders();
    let config = host_config_schema().to_value();
    let manifest = manifest_schema().to_value();
    let claimed: Vec<&str> = SECTIONS.iter().flat_map(|s| s.tables).copied().collect();
    let mut page = String::from(INTRO);
    for section in SECTIONS {
        let schemas = Schemas::new(&config, "RawHostConfig", &orders);
        page.push_str(&render(section, &section_rows(&schemas, section, &claimed)));
    }
    let schemas = Schemas::new(&manifest, "RawManifest", &orders);
    page.push_str(&render(&MANIFEST, &section_rows(&schemas, &MANIFEST, &[])));
    page
}

const INTRO: &str = r#"<!-- Made by `configuration_page` in host/manifest/src/docs.rs from the config's JSON Schema:
edit the doc comments of the keys (host/manifest/src/), then run
`GLOVEBOX_WRITE_DOCS=1 cargo test -p glovebox-manifest docs` -->

# Configuration: every key

`glovebox.toml` is the operator's config: the plugins, the hooks, the limits, who may
connect and what the host does by itself. Each plugin has a manifest, a TOML file of its
own (last section). How the limits work together is in
[`operators/limits.md`](operators/limits.md). [`examples/glovebox.toml`](../examples/glovebox.toml)
and [`examples/plugins/files.toml`](../examples/plugins/files.toml) show the keys in use.

This page is made from the config's JSON Schema, which the parser's own types
(`host/manifest/`) describe: a key the parser takes is on the page, with its default.
`glovebox config schema` prints that schema (`--manifest`: a plugin manifest's) for an
editor to check a config as it is written, e.g. with taplo's
`#:schema ./glovebox.schema.json` directive at the top of the file.

Conventions: relative paths are resolved from the directory of the file that holds them.
Sizes are an integer number of bytes or a string with a unit (`"64 MiB"`, `"512KiB"`,
`"1 GB"`; KiB/MiB/GiB are powers of 1024, KB/MB/GB powers of 1000). Durations are a string
with a unit (`"5s"`, `"250ms"`, `"2m"`) or an integer number of milliseconds. A key left
out takes its default. An unknown key, a missing file or a bad value is an error naming
the file, the key and the fix; `glovebox reload` refuses such a config and the running one
keeps serving.
"#;

/// One section of the page: its heading, the prose before and after its
/// table, and the tables of `glovebox.toml` it shows (none: the top level).
struct Section {
    heading: &'static str,
    before: &'static str,
    tables: &'static [&'static str],
    /// The tables' rows merged by key, with a column saying which table
    /// has the key (`[[schedule]]` and `[[trigger]]` share their actions).
    merged: bool,
    after: &'static str,
}

impl Section {
    const fn of(heading: &'static str, tables: &'static [&'static str]) -> Section {
        Section {
            heading,
            before: "",
            tables,
            merged: false,
            after: "",
        }
    }
}

const SECTIONS: &[Section] = &[
    Section::of("Top level", &[]),
    Section::of(
        "`[defaults]`: limits of every call (a manifest's `[limits]` overrides them)",
        &["defaults"],
    ),
    Section::of("`[runtime]`: host-wide capacity", &["runtime"]),
    Section {
        after: "The keys from `url` on are read only with `backend = \"nats\"`; elsewhere they are refused.\n",
        ..Section::of("`[storage]`", &["storage"])
    },
    Section {
        before: "A request past a quota is refused naming the key (`quotas.<key>`), its value and who set\nit, and nothing is written. Operators are held only to the per-session quotas and to the\ntransport's.\n",
        ..Section::of(
            "`[quotas]`: how much one agent principal, or one session, may hold",
            &["quotas"],
        )
    },
    Section::of(
        "`[budgets]`: caps per role ([`operators/budgets.md`](operators/budgets.md))",
        &["budgets"],
    ),
    Section::of(
        "`[detector]`: stuck agents ([`operators/rescues.md`](operators/rescues.md))",
        &["detector"],
    ),
    Section::of(
        "`[approvals]`, `[handoffs]`, `[context]`",
        &["approvals", "handoffs", "context"],
    ),
    Section::of(
        "`[memory]` ([`operators/memory.md`](operators/memory.md))",
        &["memory"],
    ),
    Section {
        before: "Written by `glovebox principal add`. With none, every connection is the built-in agent\n`local` and HTTP serves loopback only.\n",
        ..Section::of(
            "`[[principal]]` ([`operators/principals.md`](operators/principals.md))",
            &["principal"],
        )
    },
    Section::of(
        "`[auth.oauth]`: an identity provider's access tokens ([`operators/oauth.md`](operators/oauth.md))",
        &["auth"],
    ),
    Section {
        after: "Hooks judge in the order they are listed ([`operators/hooks.md`](operators/hooks.md)).\n",
        ..Section::of("`[[plugin]]` and `[[hook]]`", &["plugin", "hook"])
    },
    Section::of(
        "`[[completion]]` ([`operators/completion.md`](operators/completion.md))",
        &["completion"],
    ),
    Section::of(
        "`[[notify]]` ([`operators/notifications.md`](operators/notifications.md))",
        &["notify"],
    ),
    Section {
        merged: true,
        ..Section::of(
            "`[[schedule]]` and `[[trigger]]` ([`operators/schedules.md`](operators/schedules.md))",
            &["schedule", "trigger"],
        )
    },
];

const MANIFEST: Section = Section {
    before: "One file per tool plugin, named by a `[[plugin]] manifest`; [`examples/plugins/files.toml`](../examples/plugins/files.toml)\ndocuments every key. What the manifest says about a tool wins over what the plugin says\nof itself.\n",
    ..Section::of("A plugin's manifest", &[])
};

/// One key's row.
#[derive(Clone, Debug, PartialEq)]
struct Row {
    key: String,
    /// Which of a merged section's tables have the key.
    of: String,
    default: String,
    meaning: String,
}

/// The rows of `section`; a section of no tables has the root's keys that
/// no section `claimed`.
fn section_rows(schemas: &Schemas, section: &Section, claimed: &[&str]) -> Vec<Row> {
    if section.tables.is_empty() {
        let mut rows = Vec::new();
        let root = schemas.root;
        let unclaimed = |key: &str| !claimed.contains(&key);
        schemas.rows_of(
            root,
            schemas.root_name,
            &Place::top(""),
            &mut rows,
            &unclaimed,
        );
        return rows;
    }
    let several = section.tables.len() > 1 && !section.merged;
    let mut per_table = Vec::new();
    for table in section.tables {
        let (schema, name) = schemas.property(schemas.root, table);
        let place = Place::top(if several { table } else { "" }).under(table);
        let mut rows = Vec::new();
        match schemas.items_if_array(&schema) {
            Some((items, name)) => schemas.rows_of(&items, &name, &place, &mut rows, &|_| true),
            None => schemas.rows_of(&schema, &name, &place, &mut rows, &|_| true),
        }
        for row in &mut rows {
            row.of = (*table).to_string();
        }
        per_table.push(rows);
    }
    if !section.merged {
        return per_table.concat();
    }
    // Merged: a row every table has alike is one row of "both"; another
    // keeps its table, before the next row it shares.
    let mut merged: Vec<Row> = Vec::new();
    for rows in per_table {
        let mut pending: Vec<Row> = Vec::new();
        for row in rows {
            let same =
                |r: &Row| r.key == row.key && r.default == row.default && r.meaning == row.meaning;
            match merged.iter().position(same) {
                Some(i) => {
                    merged[i].of = "both".to_string();
                    merged.splice(i..i, pending.drain(..));
                }
                None => pending.push(row),
            }
        }
        merged.append(&mut pending);
    }
    merged
}

fn render(section: &Section, rows: &[Row]) -> String {
    let mut out = format!("\n## {}\n\n", section.heading);
    if !section.before.is_empty() {
        out.push_str(section.before);
        out.push('\n');
    }
    if section.merged {
        out.push_str("| key | of | default | meaning |\n|---|---|---|---|\n");
    } else {
        out.push_str("| key | default | meaning |\n|---|---|---|\n");
    }
    for row in rows {
        let cells = if section.merged {
            vec![&row.key, &row.of, &row.default, &row.meaning]
        } else {
            vec![&row.key, &row.default, &row.meaning]
        };
        let cells: Vec<String> = cells.into_iter().map(|c| c.replace('|', "\\|")).collect();
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    if !section.after.is_empty() {
        out.push('\n');
        out.push_str(section.after);
    }
    out
}

/// Where a key is: the header of the table it is in (none: the section's
/// own table) and the prefix of a key of the section's table.
#[derive(Clone)]
struct Place {
    /// `approvals.` in a section of several tables.
    prefix: String,
    /// The dotted path of the table the keys are in, from the file's root.
    path: String,
    /// The header of the table the keys are in, when it is not the
    /// section's: `[memory.propose]`, `[[fs]]`.
    header: Option<String>,
}

impl Place {
    fn top(table: &str) -> Place {
        Place {
            prefix: if table.is_empty() {
                String::new()
            } else {
                format!("{table}.")
            },
            path: String::new(),
            header: None,
        }
    }

    /// The section's own table, `table`.
    fn under(mut self, table: &str) -> Place {
        self.path = table.to_string();
        self
    }

    /// The table `key` inside this one (an array of tables if `array`).
    fn nested(&self, key: &str, array: bool) -> Place {
        let path = if self.path.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.path)
        };
        let header = if array {
            format!("[[{path}]]")
        } else {
            format!("[{path}]")
        };
        Place {
            prefix: String::new(),
            path,
            header: Some(header),
        }
    }

    fn key(&self, key: &str) -> String {
        match &self.header {
            None => format!("`{}{key}`", self.prefix),
            Some(header) => format!("`{header}` `{key}`"),
        }
    }

    fn keys(&self, keys: &[String]) -> String {
        let keys: Vec<String> = keys.iter().map(|k| format!("`{k}`")).collect();
        format!(
            "`{}` {}",
            self.header.clone().unwrap_or_default(),
            keys.join(", ")
        )
    }
}

/// A schema with its `$defs`, and the order each type declares its keys in
/// (a JSON object keeps none).
struct Schemas<'a> {
    root: &'a Value,
    /// The type the root schema is made from.
    root_name: &'static str,
    orders: &'a BTreeMap<&'static str, Vec<String>>,
}

impl<'a> Schemas<'a> {
    fn new(
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

    fn property(&self, object: &Value, key: &str) -> (Value, String) {
        let schema = &object["properties"][key];
        assert!(!schema.is_null(), "the schema has no `{key}`");
        let (schema, name) = self.resolve(schema);
        (schema, name.unwrap_or_default())
    }

    /// The items of an array of tables, and their type's name.
    fn items_if_array(&self, schema: &Value) -> Option<(Value, String)> {
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
    fn rows_of(
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

/// The keys of every table type in the order its struct declares them,
/// which a JSON object does not keep: serde names them to a deserializer,
/// in that order ([`declared_keys`]).
fn declared_orders() -> BTreeMap<&'static str, Vec<String>> {
    let mut quotas: Vec<String> = QuotasConfig::keys().map(str::to_string).collect();
    quotas.push("retain_finished".to_string());
    BTreeMap::from([
        ("RawHostConfig", declared_keys::<RawHostConfig>()),
        ("RawLimits", declared_keys::<RawLimits>()),
        ("RawRuntime", declared_keys::<RawRuntime>()),
        ("RawStorage", declared_keys::<RawStorage>()),
        ("RawQuotas", quotas),
        ("RawBudgets", declared_keys::<RawBudgets>()),
        ("RawCaps", declared_keys::<RawCaps>()),
        ("RawPeriods", declared_keys::<RawPeriods>()),
        ("RawCeiling", declared_keys::<RawCeiling>()),
        ("RawDetector", declared_keys::<RawDetector>()),
        ("RawApprovals", declared_keys::<RawApprovals>()),
        ("RawHandoffs", declared_keys::<RawHandoffs>()),
        ("RawContext", declared_keys::<RawContext>()),
        ("RawMemory", declared_keys::<RawMemory>()),
        ("RawPropose", declared_keys::<RawPropose>()),
        ("RawPrincipal", declared_keys::<RawPrincipal>()),
        ("RawAuth", declared_keys::<RawAuth>()),
        ("RawOAuth", declared_keys::<RawOAuth>()),
        ("RawPluginEntry", declared_keys::<RawPluginEntry>()),
        ("RawHook", declared_keys::<RawHook>()),
        ("RawCompletion", declared_keys::<RawCompletion>()),
        ("Gate", declared_keys::<Gate>()),
        ("RawNotify", declared_keys::<RawNotify>()),
        ("RawSchedule", declared_keys::<RawSchedule>()),
        ("RawTrigger", declared_keys::<RawTrigger>()),
        ("RawManifest", declared_keys::<RawManifest>()),
        ("RawFs", declared_keys::<RawFs>()),
        ("RawHttp", declared_keys::<RawHttp>()),
        ("RawTool", declared_keys::<RawTool>()),
    ])
}

/// The keys of struct `T` in declaration order: a deserializer that stops
/// at the struct serde asks it for, and keeps the field names it is given.
fn declared_keys<'de, T: Deserialize<'de>>() -> Vec<String> {
    use serde::de::{self, Visitor};

    #[derive(Debug)]
    struct Fields(Vec<String>);
    impl std::fmt::Display for Fields {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "fields {:?}", self.0)
        }
    }
    impl std::error::Error for Fields {}
    impl de::Error for Fields {
        fn custom<M: std::fmt::Display>(_: M) -> Self {
            Fields(Vec::new())
        }
    }
    struct Introspect;
    impl<'de> de::Deserializer<'de> for Introspect {
        type Error = Fields;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Fields> {
            Err(Fields(Vec::new()))
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Fields> {
            Err(Fields(fields.iter().map(|f| f.to_string()).collect()))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
            bytes byte_buf option unit unit_struct newtype_struct seq tuple
            tuple_struct map enum identifier ignored_any
        }
    }
    match T::deserialize(Introspect) {
        Err(Fields(fields)) if !fields.is_empty() => fields,
        _ => panic!(
            "{} is not a struct with named fields",
            std::any::type_name::<T>()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `docs/configuration.md` is what [`configuration_page`] makes:
    /// `GLOVEBOX_WRITE_DOCS=1 cargo test -p glovebox-manifest docs`
    /// rewrites it when a key, a default or a meaning changed.
    #[test]
    fn the_configuration_page_is_made_from_the_schema() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/configuration.md");
        let page = std::fs::read_to_string(&path).unwrap_or_default();
        let wanted = configuration_page();
        if std::env::var_os("GLOVEBOX_WRITE_DOCS").is_some() {
            std::fs::write(&path, &wanted).unwrap();
        }
        assert!(
            page == wanted,
            "docs/configuration.md is stale: run `GLOVEBOX_WRITE_DOCS=1 cargo test -p glovebox-manifest docs` to rewrite it; it should be:\n{wanted}"
        );
    }

    #[test]
    fn declared_keys_are_in_the_structs_order() {
        assert_eq!(
            declared_keys::<RawFs>(),
            ["host", "guest", "access"].map(String::from)
        );
    }
}
