//! What a reload changed, as `glovebox dev` prints it: the tools added,
//! removed and changed (and in what), and the permission hooks likewise (a
//! hook's author sees the new component or settings taken, or why the hook
//! is broken and denies every call).

use std::collections::BTreeMap;

use glovebox::Host;
use glovebox::hooks::HookStatus;

/// What an agent sees of each tool, by `plugin.tool`, and what judges its
/// calls: each hook, by name.
pub(super) struct Snapshot {
    tools: BTreeMap<String, Seen>,
    hooks: BTreeMap<String, SeenHook>,
}

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

/// What judges calls of one hook.
#[derive(PartialEq)]
struct SeenHook {
    /// Its component's digest; `None` when it could not be loaded.
    digest: Option<String>,
    triggers: Vec<String>,
    settings: serde_json::Value,
    limits: (std::time::Duration, u64, Option<u64>),
    after: bool,
    /// Why it cannot judge (it denies every call), if it cannot.
    broken: Option<String>,
}

impl Snapshot {
    /// Every configured tool of `host`, held ones too, and its hooks.
    pub(super) fn of(host: &Host) -> Snapshot {
        let configured = &host.config().hooks;
        let hooks = host
            .hooks()
            .hooks()
            .into_iter()
            .map(|h| {
                let config = configured.iter().find(|c| c.name == h.name);
                let seen = SeenHook {
                    digest: h.digest,
                    triggers: h.triggers,
                    settings: config.map(|c| c.settings.clone()).unwrap_or_default(),
                    limits: config
                        .map(|c| (c.deadline, c.memory, c.fuel))
                        .unwrap_or_default(),
                    after: config.is_some_and(|c| c.after),
                    broken: match h.status {
                        HookStatus::Ready => None,
                        HookStatus::Broken(why) => Some(why),
                    },
                };
                (h.name, seen)
            })
            .collect();
        let tools = host
            .all_tools()
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
            .collect();
        Snapshot { tools, hooks }
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
        for (name, now) in &after.tools {
            match self.tools.get(name) {
                None => lines.push(format!("+ {name}{}", held_note(name))),
                Some(was) if was != now => lines.push(format!(
                    "~ {name}: {}{}",
                    what_changed(was, now).join(", "),
                    held_note(name)
                )),
                Some(_) => {}
            }
        }
        for name in self.tools.keys().filter(|n| !after.tools.contains_key(*n)) {
            lines.push(format!("- {name}"));
        }
        lines
    }

    /// The lines that say how the hooks of `after` differ from these:
    /// `+ hook name`, `- hook name`, `~ hook name: what changed`, a broken
    /// hook marked with why.
    pub(super) fn hook_changes(&self, after: &Snapshot) -> Vec<String> {
        let broken_note = |hook: &SeenHook| match &hook.broken {
            Some(why) => format!(" (broken, it denies every call: {why})"),
            None => String::new(),
        };
        let mut lines = Vec::new();
        for (name, now) in &after.hooks {
            match self.hooks.get(name) {
                None => lines.push(format!("+ hook {name}{}", broken_note(now))),
                Some(was) if was != now => lines.push(format!(
                    "~ hook {name}: {}{}",
                    what_changed_in_hook(was, now).join(", "),
                    broken_note(now)
                )),
                Some(_) => {}
            }
        }
        for name in self.hooks.keys().filter(|n| !after.hooks.contains_key(*n)) {
            lines.push(format!("- hook {name}"));
        }
        lines
    }

    pub(super) fn len(&self) -> usize {
        self.tools.len()
    }
}

/// The parts of a hook that differ between `was` and `now`.
fn what_changed_in_hook(was: &SeenHook, now: &SeenHook) -> Vec<&'static str> {
    let parts = [
        ("component", was.digest != now.digest),
        ("triggers", was.triggers != now.triggers),
        ("settings", was.settings != now.settings),
        ("limits", was.limits != now.limits),
        ("after", was.after != now.after),
        ("status", was.broken != now.broken),
    ];
    parts
        .into_iter()
        .filter(|(_, changed)| *changed)
        .map(|(part, _)| part)
        .collect()
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
