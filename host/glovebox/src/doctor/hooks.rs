//! The check of permissive hooks: each broad hook run against a probe set.

use serde_json::{Value, json};

use super::findings::{Culprit, CulpritKind, Finding, Rule, Severity, quoted};
use crate::hooks::{DecisionKind, HookRequest, HookStatus};
use crate::host::Host;
use crate::manifest::Role;

/// Whether a trigger covers everything or a whole verb (`*`, `execute:*`).
fn broad(trigger: &str) -> bool {
    trigger == "*"
        || trigger
            .strip_suffix(":*")
            .is_some_and(|verb| !verb.is_empty() && !verb.contains([':', '*']))
}

/// The destructive-looking probe's action under a broad trigger.
fn destructive_action(trigger: &str) -> String {
    match trigger.strip_suffix(":*") {
        Some(verb) => format!("{verb}:database:drop"),
        None => "execute:database:drop".to_string(),
    }
}

/// A small input that fits `schema`: its required properties with a value of
/// their type.
fn probe_input(schema: &Value) -> Value {
    let mut input = serde_json::Map::new();
    let required = schema.get("required").and_then(Value::as_array);
    let properties = schema.get("properties").and_then(Value::as_object);
    for name in required.into_iter().flatten().filter_map(Value::as_str) {
        let prop = properties.and_then(|p| p.get(name));
        let ty = prop
            .and_then(|p| p.get("type"))
            .and_then(|t| t.as_str().or_else(|| t.get(0).and_then(Value::as_str)))
            .unwrap_or("string");
        let value = match ty {
            "integer" | "number" => json!(1),
            "boolean" => json!(false),
            "array" => json!([]),
            "object" => json!({}),
            "null" => Value::Null,
            _ => prop
                .and_then(|p| p.get("enum"))
                .and_then(|e| e.get(0))
                .cloned()
                .unwrap_or_else(|| json!("probe")),
        };
        input.insert(name.to_string(), value);
    }
    Value::Object(input)
}

/// Hooks with a broad trigger that allowed every probe call.
pub(super) async fn permissive_hooks(host: &Host) -> Vec<Finding> {
    let config = host.config();
    let chain = host.hooks();
    let mut findings = Vec::new();
    for info in chain.hooks() {
        if info.status != HookStatus::Ready {
            continue;
        }
        let broad_triggers: Vec<&String> = info.triggers.iter().filter(|t| broad(t)).collect();
        if broad_triggers.is_empty() {
            continue;
        }
        let mut probes: Vec<HookRequest> = host
            .tools()
            .iter()
            .map(|t| HookRequest {
                call_id: String::new(),
                tool: t.name.clone(),
                action: t.action.clone(),
                role: Role::Workagent.as_str().to_string(),
                session: "s-doctor-probe".into(),
                input: probe_input(&t.input_schema).to_string(),
                estimated_cost: t.cost.unwrap_or(0.0),
                destructive: t.destructive,
                tags: Vec::new(),
                principal: String::new(),
                project: None,
                http: None,
            })
            .collect();
        for trigger in &broad_triggers {
            probes.push(HookRequest {
                call_id: String::new(),
                tool: "doctor.drop-everything".into(),
                action: destructive_action(trigger),
                role: Role::Workagent.as_str().to_string(),
                session: "s-doctor-probe".into(),
                input: json!({
                    "query": "DROP TABLE users",
                    "command": "rm -rf /",
                    "path": "/",
                })
                .to_string(),
                estimated_cost: 1000.0,
                destructive: true,
                tags: Vec::new(),
                principal: String::new(),
                project: None,
                http: None,
            });
        }
        let mut consulted = 0;
        let mut allowed = 0;
        for (i, mut probe) in probes.into_iter().enumerate() {
            probe.call_id = format!("c-doctor-probe-{i}");
            // A hook run like any other: through the admission of hook runs.
            let Ok(_slot) = host.hook_gate().admit(&probe.session).await else {
                continue;
            };
            if let Some(decision) = chain.evaluate_one(&info.name, &probe).await {
                consulted += 1;
                if decision.decision == DecisionKind::Allow {
                    allowed += 1;
                }
            }
        }
        if consulted == 0 || allowed < consulted {
            continue;
        }
        let triggers: Vec<String> = broad_triggers.iter().map(|t| t.to_string()).collect();
        findings.push(Finding::new(
            Rule::PermissiveHook,
            Severity::Warning,
            Culprit {
                kind: CulpritKind::Hook,
                name: info.name.clone(),
                id: None,
                file: Some(config.path.clone()),
            },
            format!(
                "hook `{}` triggers on {} and allowed all {consulted} probe calls, a destructive `{}` with a cost of 1000 included: it judges nothing",
                info.name,
                quoted(&triggers),
                destructive_action(broad_triggers[0])
            ),
            format!(
                "narrow its triggers to the actions it really judges (e.g. `execute:database:*`) and make it deny or ask on what it should not allow (destructive calls, costs over a role's limit); or remove it from `{}`",
                config.path.display()
            ),
        ));
    }
    findings
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broad_triggers_cover_everything_or_a_whole_verb() {
        assert!(broad("*"));
        assert!(broad("execute:*"));
        assert!(!broad("execute:database:*"));
        assert!(!broad("execute:api"));
        assert_eq!(destructive_action("*"), "execute:database:drop");
        assert_eq!(destructive_action("write:*"), "write:database:drop");
    }

    #[test]
    fn probe_inputs_fill_the_required_properties() {
        let schema = json!({
            "type": "object",
            "required": ["text", "n", "mode", "flag"],
            "properties": {
                "text": {"type": "string"},
                "n": {"type": "integer"},
                "mode": {"type": "string", "enum": ["fast", "slow"]},
                "flag": {"type": ["boolean", "null"]},
                "optional": {"type": "string"},
            },
        });
        assert_eq!(
            probe_input(&schema),
            json!({"text": "probe", "n": 1, "mode": "fast", "flag": false})
        );
        assert_eq!(probe_input(&json!({})), json!({}));
    }
}
