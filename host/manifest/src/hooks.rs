//! `[[hook]]` in `glovebox.toml`: the permission hooks, in the order they judge calls,
//! and the rule that running without hooks is stated, never implied.

use std::path::Path;

use serde::Deserialize;

use super::guest::{MemoryCap, normalize_sha256, valid_plugin_name};
use super::paths::normalize;
use super::source::{self, NAME_HINT, Source, join_key};
use super::units::{Fuel, Millis, Size};
use super::{ConfigError, HookConfig};

/// `[[hook]]`: one permission hook ([`operators/hooks.md`](operators/hooks.md)).
#[derive(Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub(super) struct RawHook {
    /// The hook's name in reasons and logs (lowercase letters, digits, `-`, `_`).
    name: String,
    /// The hook component (`hook-plugin` world); a missing one denies every
    /// call at call time.
    component: String,
    /// A pin: a component file that does not match is refused.
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "none")))]
    sha256: Option<String>,
    /// Wall-clock time per evaluation.
    #[cfg_attr(feature = "schemars", schemars(extend("default" = "100ms")))]
    deadline: Option<Millis>,
    /// Linear memory per evaluation.
    #[cfg_attr(feature = "schemars", schemars(extend("default" = "16 MiB")))]
    memory: Option<Size>,
    /// Optional instruction metering per evaluation.
    #[cfg_attr(feature = "schemars", schemars(extend("default" = "off")))]
    fuel: Option<Fuel>,
    /// Tell the hook how each call it allowed ended.
    #[cfg_attr(feature = "schemars", schemars(extend("default" = false)))]
    after: Option<bool>,
    /// Evaluations one instance may serve, for one principal's calls: above
    /// 1 declares the hook pure (nothing it keeps between evaluations changes
    /// a decision), and spares each evaluation an instance's setup and
    /// teardown ([`operators/hooks.md`](operators/hooks.md#reused-instances)).
    #[cfg_attr(feature = "schemars", schemars(extend("default" = 1)))]
    reuse: Option<u32>,
    /// Passed to the hook as JSON.
    #[cfg_attr(feature = "schemars", schemars(extend("default" = {})))]
    #[cfg_attr(
        feature = "schemars",
        schemars(with = "Option<serde_json::Map<String, serde_json::Value>>")
    )]
    settings: Option<toml::Table>,
}

/// The hooks of `raw`, checked; `dir` is the config file's directory.
pub(super) fn validate_hooks(
    src: &Source,
    dir: &Path,
    raw: &[RawHook],
    cap: &MemoryCap,
) -> Result<Vec<HookConfig>, ConfigError> {
    let mut hooks: Vec<HookConfig> = Vec::new();
    for (i, entry) in raw.iter().enumerate() {
        let key = |leaf: &str| format!("hook[{i}].{leaf}");
        if !valid_plugin_name(&entry.name) {
            return Err(src.invalid(
                &key("name"),
                format!("invalid hook name `{}`", entry.name),
                NAME_HINT,
            ));
        }
        if let Some(first) = hooks.iter().position(|h| h.name == entry.name) {
            return Err(src.invalid(
                &key("name"),
                format!(
                    "hook name `{}` is used twice (also `hook[{first}].name`)",
                    entry.name
                ),
                "give each `[[hook]]` a unique `name`: it names the hook in every decision",
            ));
        }
        if entry.component.trim().is_empty() {
            return Err(src.invalid(
                &key("component"),
                "the component path is empty",
                source::hint_for("component"),
            ));
        }
        // Not checked for existence: a missing hook denies every call at call time.
        let component = normalize(&dir.join(&entry.component));
        let sha256 = match &entry.sha256 {
            None => None,
            Some(text) => Some(normalize_sha256(text).ok_or_else(|| {
                src.invalid(
                    &key("sha256"),
                    format!("`{text}` is not a sha-256 digest"),
                    source::hint_for("sha256"),
                )
            })?),
        };
        let mut hook = HookConfig::new(entry.name.clone(), component);
        hook.sha256 = sha256;
        if let Some(Millis(deadline)) = entry.deadline {
            if deadline.is_zero() {
                return Err(src.invalid(
                    &key("deadline"),
                    "the deadline is zero",
                    "set a duration like `\"100ms\"`, or remove the key for the default of 100 ms",
                ));
            }
            hook.deadline = deadline;
        }
        if let Some(Size(memory)) = entry.memory {
            if memory == 0 {
                return Err(src.invalid(
                    &key("memory"),
                    "the memory limit is zero",
                    "set a size like `\"16 MiB\"`, or remove the key for the default of 16 MiB",
                ));
            }
            hook.memory = memory;
        }
        // The default too: a hook must fit in one of the engine's memory slots.
        if let Some((problem, hint)) = cap.check(hook.memory) {
            return Err(src.invalid(&key("memory"), problem, hint));
        }
        hook.fuel = match entry.fuel {
            None | Some(Fuel::Off) => None,
            Some(Fuel::Amount(0)) => {
                return Err(src.invalid(
                    &key("fuel"),
                    "fuel is zero",
                    "write a positive amount, or `\"off\"` (or no key) to turn fuel metering off",
                ));
            }
            Some(Fuel::Amount(fuel)) => Some(fuel),
        };
        hook.after = entry.after.unwrap_or(false);
        hook.reuse = match entry.reuse {
            None => 1,
            Some(n) if (1..=HookConfig::MAX_REUSE).contains(&n) => n,
            Some(n) => {
                return Err(src.invalid(
                    &key("reuse"),
                    format!("`reuse = {n}` is not between 1 and {}", HookConfig::MAX_REUSE),
                    "write 1 (the default: a fresh instance per evaluation) or more, for a hook that keeps nothing between evaluations",
                ));
            }
        };
        if let Some(settings) = &entry.settings {
            hook.settings = table_to_json(src, &key("settings"), settings)?;
        }
        hooks.push(hook);
    }
    Ok(hooks)
}

/// Whether the config states "no hooks" (`hooks = "none"`); refuses a config that
/// neither lists hooks nor says so, and one that does both.
pub(super) fn hooks_none(
    src: &Source,
    setting: Option<&str>,
    listed: usize,
) -> Result<bool, ConfigError> {
    match (setting, listed) {
        (Some("none"), 0) => Ok(true),
        (Some("none"), n) => Err(src.invalid(
            "hooks",
            format!(
                "`hooks = \"none\"` contradicts the {n} `[[hook]]` {} below it",
                if n == 1 { "entry" } else { "entries" }
            ),
            "remove `hooks = \"none\"` to run the listed hooks, or remove the `[[hook]]` entries to run calls without permission hooks",
        )),
        (Some(other), _) => Err(src.invalid(
            "hooks",
            format!("`hooks = \"{other}\"` is not a hooks setting"),
            source::hint_for("hooks"),
        )),
        (None, 0) => Err(src.invalid(
            "hooks",
            "no permission hooks are configured",
            "add `[[hook]]` entries (each with `name` and `component`), or write `hooks = \"none\"` to state that calls run without permission hooks",
        )),
        (None, _) => Ok(false),
    }
}

/// `[hook.settings]` as JSON. TOML has values JSON lacks: datetimes become strings
/// (as written), and a float that is not finite is refused rather than turned into
/// `null` behind the operator's back.
fn table_to_json(
    src: &Source,
    key: &str,
    table: &toml::Table,
) -> Result<serde_json::Value, ConfigError> {
    let mut object = serde_json::Map::new();
    for (name, value) in table {
        let key = join_key(key, name);
        object.insert(name.clone(), value_to_json(src, &key, value)?);
    }
    Ok(serde_json::Value::Object(object))
}

fn value_to_json(
    src: &Source,
    key: &str,
    value: &toml::Value,
) -> Result<serde_json::Value, ConfigError> {
    use serde_json::Value as Json;
    Ok(match value {
        toml::Value::String(s) => Json::String(s.clone()),
        toml::Value::Integer(n) => Json::from(*n),
        toml::Value::Float(f) => match serde_json::Number::from_f64(*f) {
            Some(n) => Json::Number(n),
            None => {
                return Err(src.invalid(
                    key,
                    format!("`{f}` cannot be passed to a hook: JSON has no such number"),
                    "write a finite number",
                ));
            }
        },
        toml::Value::Boolean(b) => Json::Bool(*b),
        toml::Value::Datetime(d) => Json::String(d.to_string()),
        toml::Value::Array(items) => Json::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, item)| value_to_json(src, &format!("{key}[{i}]"), item))
                .collect::<Result<_, _>>()?,
        ),
        toml::Value::Table(table) => table_to_json(src, key, table)?,
    })
}
