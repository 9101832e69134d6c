//! `[[hook]]` in `glovebox.toml`, and the rule that "no hooks" is stated.

use std::fs;
use std::time::Duration;

use serde_json::json;

use super::super::HookConfig;
use super::{Fixture, assert_error};

#[test]
fn hooks_parse_in_order_with_defaults_and_settings_as_json() {
    let fx = Fixture::new();
    let hash = "AB".repeat(32);
    let c = fx
        .host(&format!(
            r#"
[[hook]]
name = "cost-control"
component = "../plugins/hook_cost_control.wasm"
sha256 = "{hash}"
deadline = "250ms"
memory = "8 MiB"
fuel = 50_000_000
after = true

[hook.settings]
thresholds = {{ workagent = 5.0, supervisor = 25 }}
currency = "EUR"
strict = true
since = 2024-05-01T10:00:00Z
roles = ["workagent", "supervisor"]

[[hook]]
name = "role_allow-list2"
component = "./hooks/./roles.wasm"
fuel = "off"
"#
        ))
        .unwrap();
    assert!(!c.hooks_explicitly_none);
    let root = fs::canonicalize(fx.dir.path()).unwrap();
    assert_eq!(c.hooks.len(), 2);
    let cost = &c.hooks[0];
    assert_eq!(cost.name, "cost-control");
    // The component need not exist yet: a missing hook denies at call time.
    assert_eq!(
        cost.component,
        root.parent()
            .unwrap()
            .join("plugins/hook_cost_control.wasm")
    );
    assert_eq!(cost.sha256, Some("ab".repeat(32)));
    assert_eq!(cost.deadline, Duration::from_millis(250));
    assert_eq!(cost.memory, 8 << 20);
    assert_eq!(cost.fuel, Some(50_000_000));
    assert!(cost.after);
    assert_eq!(
        cost.settings,
        json!({
            "thresholds": { "workagent": 5.0, "supervisor": 25 },
            "currency": "EUR",
            "strict": true,
            "since": "2024-05-01T10:00:00Z",
            "roles": ["workagent", "supervisor"],
        })
    );
    let roles = &c.hooks[1];
    assert_eq!(
        roles,
        &HookConfig::new("role_allow-list2", root.join("hooks/roles.wasm"))
    );
    assert_eq!(roles.deadline, Duration::from_millis(100));
    assert_eq!(roles.memory, 16 << 20);
    assert_eq!(roles.settings, json!({}));
    assert!(!roles.after, "`after` is off unless the hook asks for it");
}

#[test]
fn a_config_without_hooks_must_say_so() {
    let fx = Fixture::new();
    let file = fx.path("glovebox.toml");
    let error = fx.host_error("data_dir = \"data\"\n");
    assert_eq!(
        error.to_string(),
        format!(
            "in `{}`: no permission hooks are configured (key `hooks`): add `[[hook]]` entries (each with `name` and `component`), or write `hooks = \"none\"` to state that calls run without permission hooks",
            file.display()
        )
    );
    assert_error(&error, &file, "hooks", &[]);
    let c = fx.host("hooks = \"none\"\n").unwrap();
    assert!(c.hooks_explicitly_none && c.hooks.is_empty());
}

#[test]
fn hooks_none_with_hook_entries_is_refused() {
    let fx = Fixture::new();
    let error = fx.host_error(
        "hooks = \"none\"\n[[hook]]\nname = \"a\"\ncomponent = \"a.wasm\"\n[[hook]]\nname = \"b\"\ncomponent = \"b.wasm\"\n",
    );
    assert_error(
        &error,
        &fx.path("glovebox.toml"),
        "hooks",
        &[
            "`hooks = \"none\"` contradicts the 2 `[[hook]]` entries below it",
            "at line 1",
            "remove `hooks = \"none\"` to run the listed hooks",
        ],
    );
}

#[test]
fn hook_values_are_checked() {
    let fx = Fixture::new();
    let file = fx.path("glovebox.toml");
    let hook = |extra: &str| format!("[[hook]]\nname = \"h\"\ncomponent = \"h.wasm\"\n{extra}");
    let cases: &[(String, &str, &[&str])] = &[
        (
            "[[hook]]\nname = \"Cost\"\ncomponent = \"c.wasm\"\n".into(),
            "hook[0].name",
            &["invalid hook name `Cost`", "at line 2", "lowercase letters"],
        ),
        (
            format!("{}{}", hook(""), hook("")),
            "hook[1].name",
            &[
                "hook name `h` is used twice (also `hook[0].name`)",
                "at line 5",
                "unique `name`",
            ],
        ),
        (
            "[[hook]]\nname = \"h\"\ncomponent = \" \"\n".into(),
            "hook[0].component",
            &["the component path is empty", "at line 3"],
        ),
        (
            hook("sha256 = \"abc\"\n"),
            "hook[0].sha256",
            &[
                "`abc` is not a sha-256 digest",
                "at line 4",
                "64 hex digits",
            ],
        ),
        (
            hook("deadline = \"0s\"\n"),
            "hook[0].deadline",
            &["the deadline is zero", "\"100ms\""],
        ),
        (
            hook("deadline = \"soon\"\n"),
            "hook[0].deadline",
            &["invalid duration `soon`", "at line 4", "\"250ms\""],
        ),
        (
            hook("memory = 0\n"),
            "hook[0].memory",
            &["the memory limit is zero", "\"16 MiB\""],
        ),
        (
            hook("memory = \"8 GiB\"\n"),
            "hook[0].memory",
            &[
                "memory limit 8 GiB is above the host's `runtime.max_memory_per_instance` of 4 GiB",
                "at line 4",
            ],
        ),
        (
            hook("fuel = 0\n"),
            "hook[0].fuel",
            &["fuel is zero", "positive amount"],
        ),
        (
            hook("timeout = \"1s\"\n"),
            "hook[0].timeout",
            &["unknown key", "at line 4", "`deadline`"],
        ),
        (
            hook("settings = \"strict\"\n"),
            "hook[0].settings",
            &["invalid type", "at line 4", "[hook.settings]"],
        ),
        (
            hook("[hook.settings]\nlimits = { max = nan }\n"),
            "hook[0].settings.limits.max",
            &["`NaN` cannot be passed to a hook", "finite number"],
        ),
        (
            hook("[hook.settings]\nlist = [1.0, inf]\n"),
            "hook[0].settings.list[1]",
            &["`inf` cannot be passed to a hook"],
        ),
        (
            "[[hook]]\ncomponent = \"h.wasm\"\n".into(),
            "hook[0].name",
            &["missing key", "at line 1", "name = \"files\""],
        ),
        (
            "[[hook]]\nname = \"h\"\n".into(),
            "hook[0].component",
            &[
                "missing key",
                "at line 1",
                "component = \"path/to/plugin.wasm\"",
            ],
        ),
        (
            "hook = \"cost\"\n".into(),
            "hook",
            &[
                "invalid type",
                "at line 1",
                "one `[[hook]]` table per permission hook",
            ],
        ),
    ];
    for (text, key, parts) in cases {
        let error = fx.host_error(text);
        assert_error(&error, &file, key, parts);
    }
}

#[test]
fn the_default_hook_memory_must_fit_a_lowered_host_maximum() {
    let fx = Fixture::new();
    let error = fx.host_error(
        "[runtime]\nmax_memory_per_instance = \"8 MiB\"\n[defaults]\nmemory = \"8 MiB\"\n[[hook]]\nname = \"h\"\ncomponent = \"h.wasm\"\n",
    );
    assert_error(
        &error,
        &fx.path("glovebox.toml"),
        "hook[0].memory",
        &[
            "memory limit 16 MiB is above the host's `runtime.max_memory_per_instance` of 8 MiB",
            "lower the limit",
        ],
    );
}
