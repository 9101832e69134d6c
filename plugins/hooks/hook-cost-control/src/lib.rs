//! Permission hook: cost control. Denies a call whose estimated cost (from the tool
//! manifest's cost model, `request.estimated-cost`) exceeds the per-call limit of the
//! calling session's role.
//!
//! Settings (all optional):
//!
//! ```json
//! {"thresholds": {"workagent": 5.0, "supervisor": 25.0, "orchestrator": 100.0}}
//! ```
//!
//! Those are the defaults; a role named in `thresholds` replaces its default, other roles
//! may be added, and a role with no threshold gets the `workagent` one. A cost equal to
//! the limit is allowed. Settings of the wrong shape, and a cost that is not a finite,
//! non-negative number, are denied (fail closed).

#![cfg_attr(target_arch = "wasm32", no_std)]

extern crate alloc;

use glovebox_hook_sdk::prelude::*;

/// Per-call limits when the settings name none.
const DEFAULT_THRESHOLDS: [(&str, f64); 3] = [
    ("workagent", 5.0),
    ("supervisor", 25.0),
    ("orchestrator", 100.0),
];

/// The role whose limit applies to roles without a threshold of their own.
const FALLBACK_ROLE: &str = "workagent";

struct CostControl;

impl Guest for CostControl {
    fn triggers() -> Vec<String> {
        vec!["*".to_owned()]
    }

    fn validate(settings: String, req: Request) -> Decision {
        judge(&settings, &req)
    }

    fn after(_settings: String, _req: Request, _ok: bool, _summary: String) {}
}

glovebox_hook_sdk::export!(CostControl);

/// Role → per-call limit: the defaults, overridden and extended by the settings.
fn thresholds(settings: &str) -> Result<Vec<(String, f64)>, String> {
    let settings = Settings::parse(settings, &["thresholds"])?;
    let mut limits: Vec<(String, f64)> = DEFAULT_THRESHOLDS
        .iter()
        .map(|(role, limit)| ((*role).to_owned(), *limit))
        .collect();
    if let Some(given) = settings.opt_object("thresholds")? {
        for (role, value) in given {
            let limit = match value.as_f64() {
                Some(n) if n.is_finite() && n >= 0.0 => n,
                _ => {
                    let got = match value {
                        Value::Number(n) => format!("`{n}`"),
                        other => kind_of(other).to_owned(),
                    };
                    return Err(format!(
                        "settings key `thresholds.{role}` must be a non-negative number, got {got}"
                    ));
                }
            };
            match limits.iter_mut().find(|(r, _)| r == role) {
                Some(entry) => entry.1 = limit,
                None => limits.push((role.clone(), limit)),
            }
        }
    }
    Ok(limits)
}

fn judge(settings: &str, req: &Request) -> Decision {
    let limits = match thresholds(settings) {
        Ok(limits) => limits,
        Err(problem) => return invalid_settings(&problem),
    };
    let cost = req.estimated_cost;
    if !cost.is_finite() || cost < 0.0 {
        return deny(
            format!("estimated cost {cost} is not a valid amount, so the call cannot be priced"),
            ["ask the operator to check the cost model in the tool's manifest"],
        );
    }
    let role = req.role.as_str();
    let own = limits.iter().find(|(r, _)| r == role);
    let limit = match own {
        Some((_, limit)) => *limit,
        None => limit_of(&limits, FALLBACK_ROLE),
    };
    if cost <= limit {
        return allow();
    }

    let reason = if own.is_some() {
        format!("estimated cost {cost:.2} exceeds the {role} limit of {limit:.2} per call")
    } else {
        format!(
            "estimated cost {cost:.2} exceeds the limit of {limit:.2} per call for role {role} \
             (a role without a threshold gets the {FALLBACK_ROLE} limit)"
        )
    };

    let mut able: Vec<&(String, f64)> = limits
        .iter()
        .filter(|(r, l)| r != role && *l >= cost)
        .collect();
    able.sort_by(|a, b| a.1.total_cmp(&b.1));
    let escalate = if able.is_empty() {
        format!(
            "no role may spend {cost:.2} on one call: ask the operator to raise a threshold \
             or to run the work by hand"
        )
    } else {
        let roles: Vec<String> = able
            .iter()
            .map(|(r, l)| format!("{r} (limit {l:.2})"))
            .collect();
        format!(
            "ask for escalation: hand this call to a role whose limit covers it: {}",
            roles.join(", ")
        )
    };
    deny(
        reason,
        [
            format!("split the work into smaller calls that each cost at most {limit:.2}"),
            escalate,
            "narrow the parameters (fewer items, a smaller range, a smaller page or batch) \
             so that the estimated cost drops"
                .to_owned(),
        ],
    )
}

fn limit_of(limits: &[(String, f64)], role: &str) -> f64 {
    limits
        .iter()
        .find(|(r, _)| r == role)
        .map_or(0.0, |(_, limit)| *limit)
}

#[cfg(test)]
mod tests {
    use super::*;
    use glovebox_hook_sdk::testing::request;

    fn call(role: &str, cost: f64) -> Request {
        request("tool.big", "execute:big", role, "{}", cost, false)
    }

    fn denial(d: Decision) -> Denial {
        match d {
            Decision::Deny(denial) => denial,
            other => panic!("expected a deny, got {other:?}"),
        }
    }

    #[test]
    fn within_the_default_limits_is_allowed() {
        assert_eq!(judge("", &call("workagent", 5.0)), Decision::Allow);
        assert_eq!(judge("{}", &call("supervisor", 25.0)), Decision::Allow);
        assert_eq!(judge("null", &call("orchestrator", 99.99)), Decision::Allow);
        assert_eq!(judge("", &call("workagent", 0.0)), Decision::Allow);
    }

    #[test]
    fn over_the_limit_is_denied_with_alternatives() {
        let d = denial(judge("", &call("workagent", 12.5)));
        assert_eq!(
            d.reason,
            "estimated cost 12.50 exceeds the workagent limit of 5.00 per call"
        );
        assert_eq!(d.alternatives.len(), 3);
        assert!(d.alternatives[0].starts_with("split the work into smaller calls"));
        assert_eq!(
            d.alternatives[1],
            "ask for escalation: hand this call to a role whose limit covers it: \
             supervisor (limit 25.00), orchestrator (limit 100.00)"
        );
        assert!(d.alternatives[2].starts_with("narrow the parameters"));
    }

    #[test]
    fn escalation_lists_only_roles_that_can_afford_it() {
        let d = denial(judge("", &call("supervisor", 30.0)));
        assert!(d.alternatives[1].ends_with(": orchestrator (limit 100.00)"));
        let d = denial(judge("", &call("orchestrator", 250.0)));
        assert!(d.alternatives[1].starts_with("no role may spend 250.00 on one call"));
    }

    #[test]
    fn unknown_roles_get_the_workagent_limit() {
        assert_eq!(judge("", &call("reviewer", 4.0)), Decision::Allow);
        let d = denial(judge("", &call("reviewer", 6.0)));
        assert_eq!(
            d.reason,
            "estimated cost 6.00 exceeds the limit of 5.00 per call for role reviewer \
             (a role without a threshold gets the workagent limit)"
        );
        let settings = r#"{"thresholds": {"workagent": 1}}"#;
        assert!(matches!(
            judge(settings, &call("reviewer", 2.0)),
            Decision::Deny(_)
        ));
    }

    #[test]
    fn settings_override_and_extend_the_defaults() {
        let settings = r#"{"thresholds": {"workagent": 50, "reviewer": 10.5}}"#;
        assert_eq!(judge(settings, &call("workagent", 40.0)), Decision::Allow);
        assert_eq!(judge(settings, &call("reviewer", 10.5)), Decision::Allow);
        assert_eq!(judge(settings, &call("supervisor", 25.0)), Decision::Allow);
        let d = denial(judge(settings, &call("supervisor", 26.0)));
        assert_eq!(
            d.reason,
            "estimated cost 26.00 exceeds the supervisor limit of 25.00 per call"
        );
        assert!(d.alternatives[1].contains("workagent (limit 50.00)"));
    }

    #[test]
    fn bad_settings_fail_closed_naming_the_key() {
        let cases = [
            (
                r#"{"thresholds": {"workagent": "5"}}"#,
                "settings key `thresholds.workagent` must be a non-negative number, got a string",
            ),
            (
                r#"{"thresholds": {"supervisor": -1}}"#,
                "settings key `thresholds.supervisor` must be a non-negative number, got `-1`",
            ),
            (
                r#"{"thresholds": [5]}"#,
                "settings key `thresholds` must be an object, got an array",
            ),
            (
                r#"{"threshold": {}}"#,
                "unknown settings key `threshold`; this hook knows `thresholds`",
            ),
        ];
        for (settings, problem) in cases {
            let d = denial(judge(settings, &call("workagent", 0.0)));
            assert_eq!(
                d.reason,
                format!("invalid hook settings: {problem}"),
                "{settings}"
            );
        }
        let d = denial(judge("not json", &call("workagent", 0.0)));
        assert!(
            d.reason
                .starts_with("invalid hook settings: settings are not valid JSON")
        );
    }

    #[test]
    fn a_cost_that_is_not_an_amount_is_denied() {
        for cost in [f64::NAN, f64::INFINITY, -1.0] {
            let d = denial(judge("", &call("orchestrator", cost)));
            assert!(d.reason.contains("is not a valid amount"), "{}", d.reason);
        }
    }

    #[test]
    fn triggers_on_everything() {
        assert_eq!(CostControl::triggers(), vec!["*".to_owned()]);
    }
}
