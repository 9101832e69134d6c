//! Permission hook: role allow-list. Which roles may use which tools, so that a
//! workagent cannot reach what only an orchestrator may.
//!
//! Settings (required): `roles` maps a role to the tool-name patterns it may use:
//! `*` (every tool), a prefix and `*` (`files.*`) or an exact name (`files.read`).
//!
//! ```json
//! {"roles": {"orchestrator": ["*"],
//!            "supervisor": ["files.*", "text.*", "echo.*"],
//!            "workagent": ["text.*", "echo.*", "files.read", "files.list"]}}
//! ```
//!
//! A role absent from `roles` may use nothing. There is no default allow-list: missing or
//! malformed settings deny every call, naming the bad key (fail closed).

#![cfg_attr(target_arch = "wasm32", no_std)]

extern crate alloc;

use glovebox_hook_sdk::prelude::*;

/// How many of the role's own patterns a denial suggests at most.
const SUGGESTED_PATTERNS: usize = 8;

struct RoleAllowlist;

impl Guest for RoleAllowlist {
    fn triggers() -> Vec<String> {
        vec!["*".to_owned()]
    }

    fn validate(settings: String, req: Request) -> Decision {
        judge(&settings, &req)
    }

    fn after(_settings: String, _req: Request, _ok: bool, _summary: String) {}
}

glovebox_hook_sdk::export!(RoleAllowlist);

/// Role → the tool patterns it may use, in the order of the settings' keys (sorted).
type Policy = Vec<(String, Vec<String>)>;

fn policy(settings: &str) -> Result<Policy, String> {
    let settings = Settings::parse(settings, &["roles"])?;
    let roles = settings.opt_object("roles")?.ok_or_else(|| {
        "settings key `roles` is missing: map each role to the tool patterns it may use, \
         e.g. {\"roles\": {\"workagent\": [\"text.*\", \"files.read\"]}}"
            .to_owned()
    })?;
    let mut policy = Policy::new();
    for (role, value) in roles {
        let Value::Array(items) = value else {
            return Err(format!(
                "settings key `roles.{role}` must be an array of tool patterns, got {}",
                kind_of(value)
            ));
        };
        let mut patterns = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let Value::String(pattern) = item else {
                return Err(format!(
                    "settings key `roles.{role}[{i}]` must be a tool pattern (a string), got {}",
                    kind_of(item)
                ));
            };
            pattern::check(pattern)
                .map_err(|e| format!("settings key `roles.{role}[{i}]`: {e}"))?;
            patterns.push(pattern.clone());
        }
        policy.push((role.clone(), patterns));
    }
    Ok(policy)
}

fn may_use(patterns: &[String], tool: &str) -> bool {
    patterns.iter().any(|p| pattern::matches(p, tool))
}

fn judge(settings: &str, req: &Request) -> Decision {
    let policy = match policy(settings) {
        Ok(policy) => policy,
        Err(problem) => return invalid_settings(&problem),
    };
    let (tool, role) = (req.tool.as_str(), req.role.as_str());
    let own = policy.iter().find(|(r, _)| r == role).map(|(_, p)| p);
    if own.is_some_and(|patterns| may_use(patterns, tool)) {
        return allow();
    }

    let reason = match own {
        Some(_) => format!("role {role} may not use {tool}"),
        None => format!(
            "role {role} may not use {tool}: the role has no entry in this hook's allow-list, \
             so it may use no tool"
        ),
    };
    let able: Vec<&str> = policy
        .iter()
        .filter(|(r, patterns)| r != role && may_use(patterns, tool))
        .map(|(r, _)| r.as_str())
        .collect();
    let mut alternatives = vec![if able.is_empty() {
        format!(
            "no role may use {tool} under this allow-list: ask the operator to grant it in \
             the hook's settings"
        )
    } else {
        format!(
            "hand the task to a role that may use {tool}: {}",
            able.join(", ")
        )
    }];
    if let Some(patterns) = own.filter(|p| !p.is_empty()) {
        let mut shown: Vec<&str> = patterns
            .iter()
            .take(SUGGESTED_PATTERNS)
            .map(String::as_str)
            .collect();
        if patterns.len() > SUGGESTED_PATTERNS {
            shown.push("...");
        }
        alternatives.push(format!(
            "use a tool that role {role} may use instead: {}",
            shown.join(", ")
        ));
    }
    deny(reason, alternatives)
}

#[cfg(test)]
mod tests {
    use super::*;
    use glovebox_hook_sdk::testing::request;

    const SETTINGS: &str = r#"{"roles": {
        "orchestrator": ["*"],
        "supervisor": ["files.*", "text.*", "echo.*"],
        "workagent": ["text.*", "echo.*", "files.read", "files.list"]
    }}"#;

    fn call(role: &str, tool: &str) -> Request {
        request(tool, "execute:x", role, "{}", 0.0, false)
    }

    fn denial(d: Decision) -> Denial {
        match d {
            Decision::Deny(denial) => denial,
            other => panic!("expected a deny, got {other:?}"),
        }
    }

    #[test]
    fn allowed_tools_pass() {
        for (role, tool) in [
            ("workagent", "text.upper"),
            ("workagent", "files.read"),
            ("workagent", "echo.echo"),
            ("supervisor", "files.write"),
            ("orchestrator", "files.write"),
            ("orchestrator", "http.fetch"),
        ] {
            assert_eq!(
                judge(SETTINGS, &call(role, tool)),
                Decision::Allow,
                "{role} {tool}"
            );
        }
    }

    #[test]
    fn other_tools_are_denied_with_who_may() {
        let d = denial(judge(SETTINGS, &call("workagent", "files.write")));
        assert_eq!(d.reason, "role workagent may not use files.write");
        assert_eq!(
            d.alternatives,
            vec![
                "hand the task to a role that may use files.write: orchestrator, supervisor"
                    .to_owned(),
                "use a tool that role workagent may use instead: text.*, echo.*, files.read, \
                 files.list"
                    .to_owned(),
            ]
        );
        let d = denial(judge(SETTINGS, &call("supervisor", "http.fetch")));
        assert_eq!(
            d.alternatives[0],
            "hand the task to a role that may use http.fetch: orchestrator"
        );
    }

    #[test]
    fn unknown_roles_may_use_nothing() {
        let d = denial(judge(SETTINGS, &call("intern", "text.upper")));
        assert!(
            d.reason
                .starts_with("role intern may not use text.upper: the role has no entry")
        );
        assert_eq!(
            d.alternatives,
            vec![
                "hand the task to a role that may use text.upper: orchestrator, supervisor, \
                 workagent"
                    .to_owned()
            ]
        );
    }

    #[test]
    fn nobody_may_use_an_unlisted_tool() {
        let settings = r#"{"roles": {"workagent": ["text.*"], "empty": []}}"#;
        let d = denial(judge(settings, &call("empty", "files.write")));
        assert_eq!(d.reason, "role empty may not use files.write");
        assert_eq!(
            d.alternatives,
            vec![
                "no role may use files.write under this allow-list: ask the operator to grant \
                 it in the hook's settings"
                    .to_owned()
            ]
        );
    }

    #[test]
    fn long_pattern_lists_are_cut() {
        let settings = r#"{"roles": {"w": ["a1","a2","a3","a4","a5","a6","a7","a8","a9"]}}"#;
        let d = denial(judge(settings, &call("w", "b")));
        assert!(
            d.alternatives[1].ends_with("a7, a8, ..."),
            "{:?}",
            d.alternatives
        );
    }

    #[test]
    fn bad_settings_fail_closed_naming_the_key() {
        let cases = [
            ("", "settings key `roles` is missing"),
            ("{}", "settings key `roles` is missing"),
            (
                r#"{"roles": []}"#,
                "settings key `roles` must be an object, got an array",
            ),
            (
                r#"{"roles": {"workagent": "text.*"}}"#,
                "settings key `roles.workagent` must be an array of tool patterns, got a string",
            ),
            (
                r#"{"roles": {"workagent": ["text.*", 3]}}"#,
                "settings key `roles.workagent[1]` must be a tool pattern (a string), got a number",
            ),
            (
                r#"{"roles": {"workagent": ["*.read"]}}"#,
                "settings key `roles.workagent[0]`: pattern `*.read` has `*` before its end",
            ),
            (
                r#"{"roles": {}, "extra": 1}"#,
                "unknown settings key `extra`; this hook knows `roles`",
            ),
        ];
        for (settings, problem) in cases {
            let d = denial(judge(settings, &call("orchestrator", "text.upper")));
            assert!(
                d.reason
                    .starts_with(&format!("invalid hook settings: {problem}")),
                "{settings}: {}",
                d.reason
            );
        }
    }
}
