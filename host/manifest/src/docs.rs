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
//!
//! Here: the page's sections and prose, and the order of every table's
//! keys (`declared_orders`); the rows are read from the schemas in
//! `docs/rows.rs`, named as `docs/place.rs` says, in the order
//! `docs/declared_keys.rs` asks serde for.

use std::collections::BTreeMap;

mod declared_keys;
mod place;
mod rows;

use super::approvals::RawApprovals;
use super::budgets::{RawBudgets, RawCaps, RawCeiling, RawPeriods};
use super::build::RawBuild;
use super::completion::RawCompletion;
use super::detector::{RawContext, RawDetector};
use super::handoffs::RawHandoffs;
use super::hooks::RawHook;
use super::host_config::{
    RawHostConfig, RawPluginEntry, RawRuntime, RawStorage, RawTrust, RawTrustKeys,
};
use super::limits::RawLimits;
use super::memory::{RawMemory, RawPropose};
use super::notify::RawNotify;
use super::oauth::{RawAuth, RawOAuth};
use super::plugin::{RawFs, RawHttp, RawHttpFields, RawInject, RawManifest, RawTool};
use super::principal::RawPrincipal;
use super::schedule::{RawSchedule, RawTrigger};
use super::schema::{host_config_schema, manifest_schema};
use super::secrets::RawSecret;
use super::toolset::{RawRoleTools, RawToolset};
use super::verify::RawVerify;
use super::workspace::RawWorkspace;
use super::{Gate, QuotasConfig};

use declared_keys::declared_keys;
use place::Place;
use rows::Schemas;

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
    Section {
        before: "Given by `toolsets` in a `[[principal]]` and in `[role.<role>]` (top level). A principal or\nrole with no toolsets is offered every tool; with some, only the tools one of them lists\n(built-in session tools always).\n",
        ..Section::of(
            "`[[toolset]]`: the tools an agent is offered ([`operators/principals.md`](operators/principals.md#toolsets-and-read-only-agents))",
            &["toolset"],
        )
    },
    Section::of(
        "`[auth.oauth]`: an identity provider's access tokens ([`operators/oauth.md`](operators/oauth.md))",
        &["auth"],
    ),
    Section {
        before: "A secret's value comes from exactly one of `file`, `env` and `command`, never from the\nconfig; plugins name it in an `[[http]]` grant's `inject` and never hold it.\n",
        ..Section::of(
            "`[[secret]]`: credentials injected at the egress ([`operators/secrets.md`](operators/secrets.md))",
            &["secret"],
        )
    },
    Section {
        after: "Hooks judge in the order they are listed ([`operators/hooks.md`](operators/hooks.md)).\n",
        ..Section::of("`[[plugin]]` and `[[hook]]`", &["plugin", "hook"])
    },
    Section {
        before: "With `[trust]`, a plugin (its component and its manifest) or a hook's component loads only\nwith a signature by one of the keys that cover it (`glovebox plugin sign`); without it, none\nis asked for.\n",
        ..Section::of(
            "`[trust]`: signed plugins and hooks ([`operators/trust.md`](operators/trust.md))",
            &["trust"],
        )
    },
    Section::of(
        "`[[completion]]` ([`operators/completion.md`](operators/completion.md))",
        &["completion"],
    ),
    Section::of(
        "`[[verify]]`: checks after each edit ([`operators/completion.md`](operators/completion.md#verification-after-each-edit))",
        &["verify"],
    ),
    Section::of(
        "`[[workspace]]`: a worktree per session ([`operators/workspaces.md`](operators/workspaces.md))",
        &["workspace"],
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
        ("RawToolset", declared_keys::<RawToolset>()),
        ("RawRoleTools", declared_keys::<RawRoleTools>()),
        ("RawAuth", declared_keys::<RawAuth>()),
        ("RawOAuth", declared_keys::<RawOAuth>()),
        ("RawPluginEntry", declared_keys::<RawPluginEntry>()),
        ("RawHook", declared_keys::<RawHook>()),
        ("RawTrust", declared_keys::<RawTrust>()),
        ("RawTrustKeys", declared_keys::<RawTrustKeys>()),
        ("RawCompletion", declared_keys::<RawCompletion>()),
        ("Gate", declared_keys::<Gate>()),
        ("RawNotify", declared_keys::<RawNotify>()),
        ("RawSchedule", declared_keys::<RawSchedule>()),
        ("RawTrigger", declared_keys::<RawTrigger>()),
        ("RawManifest", declared_keys::<RawManifest>()),
        ("RawFs", declared_keys::<RawFs>()),
        ("RawHttp", declared_keys::<RawHttp>()),
        ("RawInject", declared_keys::<RawInject>()),
        ("RawOnly", declared_keys::<crate::caller::RawOnly>()),
        ("RawSecret", declared_keys::<RawSecret>()),
        ("RawVerify", declared_keys::<RawVerify>()),
        ("RawWorkspace", declared_keys::<RawWorkspace>()),
        ("RawTool", declared_keys::<RawTool>()),
        ("RawHttpFields", declared_keys::<RawHttpFields>()),
        ("RawBuild", declared_keys::<RawBuild>()),
    ])
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
}
