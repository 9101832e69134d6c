//! The tool list's changes across a reload: the tools added, removed and
//! changed (and in what), as `glovebox dev` prints them.

use std::collections::BTreeMap;

use glovebox::Host;

/// What an agent sees of each tool, by `plugin.tool`.
pub(super) struct Snapshot(BTreeMap<String, Seen>);

/// What an agent sees of one tool, and whether it is held for its text.
#[derive(PartialEq)]
struct Seen {
    description: String,
    input_schema: serde_json::Value,
    action: String,
    destructive: bool,
    idempotent: bool,
    read_only: bool,
    cost: Option<f64>,
}

impl Snapshot {
    /// Every configured tool of `host`, held ones too.
    pub(super) fn of(host: &Host) -> Snapshot {
        Snapshot(
            host.all_tools()
                .into_iter()
                .map(|t| {
                    let seen = Seen {
                        description: t.description.clone(),
                        input_schema: t.input_schema.clone(),
                        action: t.action.clone(),
                        destructive: t.destructive,
                        idempotent: t.idempotent,
                        read_only: t.read_only,
                        cost: t.cost,
                    };
                    (t.name.clone(), seen)
                })
                .collect(),
        )
    }

    /// The lines that say how `after` differs from this: `+ tool`, `- tool`,
    /// `~ tool: what changed`, a held tool marked with how to serve it.
    pub(super) fn changes(&self, after: &Snapshot, host: &Host) -> Vec<String> {
        let held = host.held();
        let held_note = |name: &str| match (held.contains_key(name), name.split_once('.')) {
            (true, Some((plugin, _))) => format!(
                " (held: agents do not see it until `glovebox plugin accept {plugin}`; `glovebox doctor` says why)"
            ),
            _ => String::new(),
        };
        let mut lines = Vec::new();
        for (name, now) in &after.0 {
            match self.0.get(name) {
                None => lines.push(format!("+ {name}{}", held_note(name))),
                Some(was) if was != now => lines.push(format!(
                    "~ {name}: {}{}",
                    what_changed(was, now).join(", "),
                    held_note(name)
                )),
                Some(_) => {}
            }
        }
        for name in self.0.keys().filter(|n| !after.0.contains_key(*n)) {
            lines.push(format!("- {name}"));
        }
        lines
    }

    pub(super) fn len(&self) -> usize {
        self.0.len()
    }
}

/// The parts of a tool that differ between `was` and `now`.
fn what_changed(was: &Seen, now: &Seen) -> Vec<&'static str> {
    let parts = [
        ("description", was.description != now.description),
        ("input schema", was.input_schema != now.input_schema),
        ("action", was.action != now.action),
        ("destructive", was.destructive != now.destructive),
        ("idempotent", was.idempotent != now.idempotent),
        ("read_only", was.read_only != now.read_only),
        ("cost", was.cost != now.cost),
    ];
    parts
        .into_iter()
        .filter(|(_, changed)| *changed)
        .map(|(part, _)| part)
        .collect()
}
