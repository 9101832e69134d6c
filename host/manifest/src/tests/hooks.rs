//! `[[hook]]` in `glovebox.toml`, and the rule that "no hooks" is stated.

use std::fs;
use std::time::Duration;

use serde_json::json;

use super::super::HookConfig;
use super::Fixture;

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
