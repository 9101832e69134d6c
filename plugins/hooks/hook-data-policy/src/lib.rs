//! Permission hook: data policy per specialist. Each project owns tools and paths;
//! each principal works in some projects; a principal is kept out of every other
//! project's tools and data ("Outreach cannot read Scoring's data"). It needs the
//! 0.2.0 hook world, whose request names the calling principal and the session's
//! project (set by the host from the caller's credentials, never from the input).
//!
//! Settings:
//!
//! ```json
//! {"projects": {"scoring":  {"tools": ["scoring.*"], "paths": ["/data/scoring"]},
//!               "outreach": {"tools": ["crm.*"],     "paths": ["/data/outreach"]}},
//!  "principals": {"outreach-agent": ["outreach"], "scoring-agent": ["scoring"],
//!                 "lead": ["*"]},
//!  "path_fields": ["path", "paths", "from", "to"],
//!  "unlisted": "deny"}
//! ```
//!
//! - `projects` (required): what each project owns. `tools` are tool-name patterns
//!   (`*`, `crm.*`, `crm.read`); `paths` are absolute guest paths, each owning itself
//!   and everything below it (`/data/scoring` owns `/data/scoring/q3.csv`). Both are
//!   optional per project.
//! - `principals` (required): the projects each principal works in; `*` is every
//!   project.
//! - `path_fields` (optional): the top-level input fields that carry paths (a string, or
//!   an array of strings). Default: `["path", "paths", "from", "to"]`.
//! - `unlisted` (optional): `deny` (default) refuses every call of a principal the
//!   settings do not name; `allow` leaves such a principal to the other hooks.
//!
//! A call is denied when, in this order: its principal is not listed (and `unlisted` is
//! `deny`); its session's project is not one of the principal's; its tool is owned by
//! projects none of which is the principal's; a path in its input lies under a path
//! owned by projects none of which is the principal's. Everything else is allowed: a
//! tool or path no project owns is shared. Paths are compared name by name after `.`
//! and `..` are resolved, ignoring ASCII case (the host's filesystem may): neither
//! `/data/outreach/../scoring/q3.csv` nor `/DATA/Scoring/q3.csv` dodges `/data/scoring`.
//! Malformed settings, or an input that is not a JSON object, deny (fail closed).

#![cfg_attr(target_arch = "wasm32", no_std)]

extern crate alloc;

use glovebox_hook_sdk::prelude::*;

struct DataPolicy;

impl Guest for DataPolicy {
    fn triggers() -> Vec<String> {
        vec!["*".to_owned()]
    }

    fn validate(settings: String, req: Request) -> Decision {
        match policy(&settings) {
            Ok(policy) => judge(&policy, &req),
            Err(problem) => invalid_settings(&problem),
        }
    }

    fn after(_settings: String, _req: Request, _ok: bool, _summary: String) {}
}

glovebox_hook_sdk::export!(DataPolicy);

/// What one project owns.
struct Project {
    name: String,
    tools: Vec<String>,
    /// Each an absolute path, as its lowercase names.
    paths: Vec<Vec<String>>,
}

/// The parsed settings.
struct Policy {
    projects: Vec<Project>,
    /// Principal → its projects (`*`: every one).
    principals: Vec<(String, Vec<String>)>,
    path_fields: Vec<String>,
    unlisted_allowed: bool,
}

const KEYS: &[&str] = &["projects", "principals", "path_fields", "unlisted"];

fn policy(text: &str) -> Result<Policy, String> {
    let settings = Settings::parse(text, KEYS)?;
    let projects = settings.opt_object("projects")?.ok_or_else(|| {
        "settings key `projects` is missing: map each project to the tools and paths it \
         owns, e.g. {\"projects\": {\"scoring\": {\"tools\": [\"scoring.*\"], \"paths\": \
         [\"/data/scoring\"]}}}"
            .to_owned()
    })?;
    let mut owned = Vec::new();
    for (name, value) in projects {
        let Value::Object(fields) = value else {
            return Err(format!(
                "settings key `projects.{name}` must be an object with `tools` and `paths`, got {}",
                kind_of(value)
            ));
        };
        if let Some(key) = fields
            .keys()
            .find(|k| !matches!(k.as_str(), "tools" | "paths"))
        {
            return Err(format!(
                "settings key `projects.{name}.{key}` is unknown: a project has `tools` and `paths`"
            ));
        }
        let key = |field: &str| format!("projects.{name}.{field}");
        let tools = optional_strings(fields.get("tools"), &key("tools"))?;
        for (i, tool) in tools.iter().enumerate() {
            pattern::check(tool)
                .map_err(|e| format!("settings key `{}[{i}]`: {e}", key("tools")))?;
        }
        let mut paths = Vec::new();
        for (i, path) in optional_strings(fields.get("paths"), &key("paths"))?
            .iter()
            .enumerate()
        {
            if !path.starts_with('/') {
                return Err(format!(
                    "settings key `{}[{i}]` is `{path}`: give an absolute guest path, such as `/data/{name}`",
                    key("paths")
                ));
            }
            paths.push(path::names(path));
        }
        owned.push(Project {
            name: name.clone(),
            tools,
            paths,
        });
    }
    let listed = settings.opt_object("principals")?.ok_or_else(|| {
        "settings key `principals` is missing: map each principal to the projects it works \
         in, e.g. {\"principals\": {\"outreach-agent\": [\"outreach\"]}}"
            .to_owned()
    })?;
    let mut principals = Vec::new();
    for (name, value) in listed {
        principals.push((name.clone(), strings(value, &format!("principals.{name}"))?));
    }
    let path_fields = match settings.get("path_fields") {
        None => ["path", "paths", "from", "to"].map(String::from).to_vec(),
        Some(value) => strings(value, "path_fields")?,
    };
    let unlisted_allowed = match settings.opt_str("unlisted")? {
        None | Some("deny") => false,
        Some("allow") => true,
        Some(other) => {
            return Err(format!(
                "settings key `unlisted` is `{other}`: write `deny` (the default) or `allow`"
            ));
        }
    };
    Ok(Policy {
        projects: owned,
        principals,
        path_fields,
        unlisted_allowed,
    })
}

/// An optional array of strings at settings key `key` (none: empty).
fn optional_strings(value: Option<&Value>, key: &str) -> Result<Vec<String>, String> {
    value.map_or_else(|| Ok(Vec::new()), |v| strings(v, key))
}

fn judge(policy: &Policy, req: &Request) -> Decision {
    let principal = req.principal.as_str();
    let Some((_, mine)) = policy.principals.iter().find(|(p, _)| p == principal) else {
        if policy.unlisted_allowed {
            return allow();
        }
        return deny(
            format!(
                "principal `{principal}` has no entry in this data policy, so it may touch no project's tools or data"
            ),
            [
                "ask the operator to list the principal under `principals` in the data-policy hook's settings",
            ],
        );
    };
    let works_in = |project: &str| mine.iter().any(|p| p == "*" || p == project);
    let theirs = |owners: Vec<&str>| -> Option<String> {
        (!owners.is_empty() && !owners.iter().any(|o| works_in(o))).then(|| owners.join(", "))
    };
    let hand_over = |owners: &str| format!("hand the task to an agent that works in {owners}");

    if let Some(project) = req.project.as_deref().filter(|p| !works_in(p)) {
        return deny(
            format!("principal `{principal}` does not work in project `{project}`"),
            [
                hand_over(&format!("`{project}`")),
                format!(
                    "start a session in one of your projects: {}",
                    mine.join(", ")
                ),
            ],
        );
    }

    let tool = req.tool.as_str();
    let tool_owners = policy
        .projects
        .iter()
        .filter(|p| p.tools.iter().any(|t| pattern::matches(t, tool)))
        .map(|p| p.name.as_str())
        .collect();
    if let Some(owners) = theirs(tool_owners) {
        return deny(
            format!("{tool} belongs to {owners}, and principal `{principal}` does not work there"),
            [hand_over(&owners)],
        );
    }

    let input: Value = match serde_json::from_str(&req.input) {
        Ok(Value::Object(input)) => Value::Object(input),
        _ => {
            return deny(
                format!("the input of {tool} is not a JSON object, so its paths cannot be checked"),
                ["call the tool with a JSON object as its input"],
            );
        }
    };
    for field in &policy.path_fields {
        let paths: Vec<&str> = match input.get(field) {
            Some(Value::String(path)) => vec![path.as_str()],
            Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
            _ => continue,
        };
        for path in paths {
            let path_names = path::names(path);
            let owners = policy
                .projects
                .iter()
                .filter(|p| p.paths.iter().any(|owned| path_names.starts_with(owned)))
                .map(|p| p.name.as_str())
                .collect();
            if let Some(owners) = theirs(owners) {
                return deny(
                    format!(
                        "`{path}` (input `{field}`) is data of {owners}, and principal `{principal}` does not work there"
                    ),
                    [hand_over(&owners)],
                );
            }
        }
    }
    allow()
}

#[cfg(test)]
mod tests {
    use super::*;
    use glovebox_hook_sdk::testing::request;

    const SETTINGS: &str = r#"{
        "projects": {"scoring": {"tools": ["scoring.*"], "paths": ["/data/scoring"]},
                     "outreach": {"tools": ["crm.*"], "paths": ["/data/outreach"]}},
        "principals": {"outreach-agent": ["outreach"], "lead": ["*"]}}"#;

    fn call(principal: &str, project: Option<&str>, tool: &str, input: &str) -> Decision {
        let mut req = request(tool, "execute:x", "workagent", input, 0.0, false);
        req.principal = principal.into();
        req.project = project.map(String::from);
        DataPolicy::validate(SETTINGS.into(), req)
    }

    fn reason(d: Decision) -> String {
        match d {
            Decision::Deny(denial) => denial.reason,
            other => panic!("expected a deny, got {other:?}"),
        }
    }

    #[test]
    fn a_principal_works_with_its_own_projects_tools_and_paths() {
        let read = r#"{"path": "/data/outreach/leads.csv"}"#;
        assert_eq!(
            call("outreach-agent", Some("outreach"), "crm.send", read),
            allow()
        );
        assert_eq!(call("outreach-agent", None, "files.read", read), allow());
        // What no project owns is shared.
        let shared = r#"{"path": "/data/shared/readme"}"#;
        assert_eq!(
            call("outreach-agent", Some("outreach"), "text.upper", shared),
            allow()
        );
        assert_eq!(
            call(
                "lead",
                Some("scoring"),
                "scoring.run",
                r#"{"path": "/data/scoring"}"#
            ),
            allow()
        );
    }

    #[test]
    fn another_projects_tools_paths_and_sessions_are_refused() {
        let r = reason(call(
            "outreach-agent",
            Some("outreach"),
            "scoring.run",
            "{}",
        ));
        assert_eq!(
            r,
            "scoring.run belongs to scoring, and principal `outreach-agent` does not work there"
        );
        let r = reason(call(
            "outreach-agent",
            Some("outreach"),
            "files.read",
            r#"{"path": "/data/scoring/q3.csv"}"#,
        ));
        assert!(
            r.starts_with("`/data/scoring/q3.csv` (input `path`) is data of scoring"),
            "{r}"
        );
        let r = reason(call("outreach-agent", Some("scoring"), "text.upper", "{}"));
        assert_eq!(
            r,
            "principal `outreach-agent` does not work in project `scoring`"
        );
        let r = reason(call("stranger", None, "text.upper", "{}"));
        assert!(r.contains("has no entry in this data policy"), "{r}");
    }

    #[test]
    fn dots_case_and_arrays_do_not_dodge_a_projects_paths() {
        for input in [
            r#"{"path": "/data/outreach/../scoring/q3.csv"}"#,
            r#"{"path": "/DATA/Scoring/q3.csv"}"#,
            r#"{"paths": ["/data/outreach/a", "/data/./scoring"]}"#,
            r#"{"from": "/data/outreach/a", "to": "/data/scoring/a"}"#,
        ] {
            let r = reason(call(
                "outreach-agent",
                Some("outreach"),
                "files.move",
                input,
            ));
            assert!(r.contains("is data of scoring"), "{input}: {r}");
        }
        // `/data/scoringx` is not under `/data/scoring`.
        assert_eq!(
            call(
                "outreach-agent",
                None,
                "files.read",
                r#"{"path": "/data/scoringx/a"}"#
            ),
            allow()
        );
    }

    #[test]
    fn bad_settings_and_inputs_fail_closed_naming_the_key() {
        let mut req = request("text.upper", "execute:x", "workagent", "{}", 0.0, false);
        req.principal = "lead".into();
        let bad = |settings: &str| reason(DataPolicy::validate(settings.into(), req.clone()));
        assert!(bad("{}").contains("settings key `projects` is missing"));
        assert!(bad(r#"{"projects": {}}"#).contains("settings key `principals` is missing"));
        assert!(
            bad(r#"{"projects": {"a": {"paths": ["data"]}}, "principals": {}}"#).contains(
                "settings key `projects.a.paths[0]` is `data`: give an absolute guest path"
            )
        );
        assert!(
            bad(r#"{"projects": {"a": {"files": []}}, "principals": {}}"#)
                .contains("`projects.a.files` is unknown")
        );
        assert!(
            bad(r#"{"projects": {}, "principals": {}, "unlisted": "maybe"}"#)
                .contains("write `deny` (the default) or `allow`")
        );
        let r = reason(call("lead", None, "text.upper", "[1]"));
        assert!(r.contains("is not a JSON object"), "{r}");
        let open = r#"{"projects": {}, "principals": {}, "unlisted": "allow"}"#;
        assert_eq!(DataPolicy::validate(open.into(), req), allow());
    }
}
