//! Grants that depend on who calls: an `[[fs]]` host path with
//! `{principal}`, `{project}` or `{session}` in it, resolved per call, and
//! the `only` limit of an `[[fs]]` or `[[http]]` grant (to some principals,
//! roles or projects).
//!
//! Why: a plugin's grants are otherwise the same for every caller, so two
//! specialists calling one files plugin would read each other's data, and
//! "Outreach cannot read Scoring's data" had no expression but a hook. A
//! grant that names the caller's project in its path gives each project a
//! tree of its own; one limited with `only` is not there at all for anyone
//! else (the guest sees no such directory; a request to such an origin is
//! refused, saying to whom it is granted).
//!
//! What fills a placeholder comes from the host, never from the guest: the
//! principal the operator's credentials name, the project the session was
//! started in (within the principal's `projects`), the session's id. A value
//! that could not be one directory's name refuses the call. The directories
//! themselves are made in the sandbox (`glovebox-runtime`), the one place that
//! turns grants into authority; this crate only parses and checks.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::paths::resolve_grant_dir;
use crate::source::Source;
use crate::{ConfigError, Role};

/// Who makes a call, as grants read it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GrantCaller {
    /// The principal (the operator's name for it; `local` when none are
    /// declared).
    pub principal: String,
    /// The calling session's role (`operator` outside any session).
    pub role: String,
    /// The calling session's project, when it has one.
    pub project: Option<String>,
    /// The calling session's id, when the call is in one.
    pub session: Option<String>,
}

impl GrantCaller {
    /// How this caller is said in a refusal: `principal `p` (role
    /// `workagent`) in project `q``.
    pub fn describe(&self) -> String {
        let project = match &self.project {
            Some(project) => format!("in project `{project}`"),
            None => "in no project".to_string(),
        };
        format!(
            "principal `{}` (role `{}`) {project}",
            self.principal, self.role
        )
    }
}

/// `only` on a grant: the principals, roles and projects it is for. Each
/// list given must name the caller's; a list not given names anyone.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Only {
    pub principals: Vec<String>,
    pub roles: Vec<String>,
    pub projects: Vec<String>,
}

impl Only {
    /// Whether this limits nobody (no `only` written).
    pub fn is_everyone(&self) -> bool {
        self.principals.is_empty() && self.roles.is_empty() && self.projects.is_empty()
    }

    /// Whether `caller` holds a grant limited by this.
    pub fn admits(&self, caller: &GrantCaller) -> bool {
        let listed = |list: &[String], value: Option<&str>| {
            list.is_empty() || value.is_some_and(|v| list.iter().any(|l| l == v))
        };
        listed(&self.principals, Some(&caller.principal))
            && listed(&self.roles, Some(&caller.role))
            && listed(&self.projects, caller.project.as_deref())
    }

    /// To whom this grants: `principals `a`, `b`; projects `scoring``.
    pub fn describe(&self) -> String {
        let quoted = |list: &[String]| {
            list.iter()
                .map(|v| format!("`{v}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        [
            ("principals", &self.principals),
            ("roles", &self.roles),
            ("projects", &self.projects),
        ]
        .iter()
        .filter(|(_, list)| !list.is_empty())
        .map(|(what, list)| format!("{what} {}", quoted(list)))
        .collect::<Vec<_>>()
        .join("; ")
    }
}

/// `only = { ... }` as written.
#[derive(Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub(crate) struct RawOnly {
    /// The principals the grant is for.
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "any")))]
    principals: Option<Vec<String>>,
    /// The session roles it is for (`orchestrator`, `supervisor`,
    /// `workagent`, `judge`).
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "any")))]
    roles: Option<Vec<String>>,
    /// The projects it is for: a call in a session of another project, or
    /// of none, does not hold it.
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "any")))]
    projects: Option<Vec<String>>,
}

/// Checks `only` (at `key`): at least one list, none empty, roles that are
/// roles.
pub(crate) fn only(src: &Source, key: &str, raw: Option<&RawOnly>) -> Result<Only, ConfigError> {
    let Some(raw) = raw else {
        return Ok(Only::default());
    };
    let mut lists = Vec::new();
    for (name, list) in [
        ("principals", &raw.principals),
        ("roles", &raw.roles),
        ("projects", &raw.projects),
    ] {
        let Some(list) = list else {
            lists.push(Vec::new());
            continue;
        };
        if list.is_empty() || list.iter().any(|v| v.trim().is_empty()) {
            return Err(src.invalid(
                &format!("{key}.{name}"),
                format!("`{name}` names no one"),
                format!("list at least one (`{name} = [\"...\"]`), or leave `{name}` out to grant to any"),
            ));
        }
        lists.push(list.clone());
    }
    if lists.iter().all(Vec::is_empty) {
        return Err(src.invalid(
            key,
            "`only` lists nothing",
            "name `principals`, `roles` or `projects` (`only = { projects = [\"scoring\"] }`), or leave `only` out to grant to every caller",
        ));
    }
    for role in &lists[1] {
        if let Err(e) = role.parse::<Role>() {
            return Err(src.invalid(
                &format!("{key}.roles"),
                e.to_string(),
                "list session roles: orchestrator, supervisor, workagent, judge",
            ));
        }
    }
    let mut lists = lists.into_iter();
    Ok(Only {
        principals: lists.next().unwrap_or_default(),
        roles: lists.next().unwrap_or_default(),
        projects: lists.next().unwrap_or_default(),
    })
}

/// What may fill a placeholder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placeholder {
    Principal,
    Project,
    Session,
}

impl Placeholder {
    const ALL: [Placeholder; 3] = [
        Placeholder::Principal,
        Placeholder::Project,
        Placeholder::Session,
    ];

    fn name(self) -> &'static str {
        match self {
            Placeholder::Principal => "principal",
            Placeholder::Project => "project",
            Placeholder::Session => "session",
        }
    }

    /// Its value for `caller`, or why there is none.
    fn value(self, caller: &GrantCaller) -> Result<&str, String> {
        match self {
            Placeholder::Principal => Ok(&caller.principal),
            Placeholder::Project => caller.project.as_deref().ok_or_else(|| {
                "the call's session has no project (or the call is in no session): start the session in a project".to_string()
            }),
            Placeholder::Session => caller.session.as_deref().ok_or_else(|| {
                "the call is in no session: call it in one (`glovebox call --session`, or `session_start` first)".to_string()
            }),
        }
    }
}

/// One directory name below a template's base: text and placeholders.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Piece {
    Text(String),
    Fill(Placeholder),
}

/// A host path with placeholders: an existing directory (`base`, where the
/// path's first placeholder starts) and the names below it, filled per call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathTemplate {
    /// The part before the first placeholder: an existing directory
    /// (absolute, canonical). What the own-files rules check.
    pub base: PathBuf,
    /// Each directory name below `base`.
    below: Vec<Vec<Piece>>,
    /// The path as written.
    pub written: String,
}

impl PathTemplate {
    /// The path for `caller`, below [`PathTemplate::base`]; or why there is
    /// none (a placeholder with no value, or one that is no directory's
    /// name).
    pub fn fill(&self, caller: &GrantCaller) -> Result<PathBuf, String> {
        let mut path = self.base.clone();
        for name in &self.below {
            let mut filled = String::new();
            for piece in name {
                match piece {
                    Piece::Text(text) => filled.push_str(text),
                    Piece::Fill(placeholder) => {
                        let value = placeholder.value(caller).map_err(|why| {
                            format!("`{{{}}}` has no value: {why}", placeholder.name())
                        })?;
                        if !directory_name(value) {
                            return Err(format!(
                                "`{{{}}}` is `{}`, which cannot name a directory (letters, digits, `-`, `_`, `.`, `@` and `:`; not starting with `.`; at most 128 bytes)",
                                placeholder.name(),
                                value.escape_debug()
                            ));
                        }
                        filled.push_str(value);
                    }
                }
            }
            path.push(filled);
        }
        Ok(path)
    }

    /// Whether the path names the caller (has any placeholder).
    pub fn is_per_caller(&self) -> bool {
        !self.below.is_empty()
    }
}

/// Whether `value` may be one directory's name as a placeholder's value.
fn directory_name(value: &str) -> bool {
    !value.is_empty()
        && value.len() <= 128
        && !value.starts_with('.')
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '@' | ':'))
}

/// Reads host path `text` (at `key`, relative to `dir`): its placeholders,
/// and the existing directory before the first.
pub(crate) fn path_template(
    src: &Source,
    dir: &Path,
    key: &str,
    text: &str,
) -> Result<PathTemplate, ConfigError> {
    let hint = "use `{principal}`, `{project}` or `{session}` as (part of) a directory's name below an existing directory: `host = \"data/{project}\"`";
    let names: Vec<&str> = text.split('/').collect();
    let first = names
        .iter()
        .position(|n| n.contains(['{', '}']))
        .unwrap_or(names.len());
    let mut below = Vec::new();
    for name in &names[first..] {
        if name.is_empty() || *name == "." || *name == ".." {
            return Err(src.invalid(
                key,
                format!(
                    "`{}`: below a placeholder the path may hold only directory names, not `{name}`",
                    text.escape_debug()
                ),
                hint,
            ));
        }
        below.push(pieces(name).map_err(|problem| {
            src.invalid(key, format!("`{}`: {problem}", text.escape_debug()), hint)
        })?);
    }
    let fixed = names[..first].join("/");
    let fixed = match fixed.as_str() {
        "" if text.starts_with('/') => "/".to_string(),
        "" => ".".to_string(),
        _ => fixed,
    };
    let base = resolve_grant_dir(src, dir, key, &fixed)?;
    Ok(PathTemplate {
        base,
        below,
        written: text.to_string(),
    })
}

/// One directory name's text and placeholders.
fn pieces(name: &str) -> Result<Vec<Piece>, String> {
    let mut pieces = Vec::new();
    let mut rest = name;
    while !rest.is_empty() {
        match rest.find(['{', '}']) {
            None => {
                pieces.push(Piece::Text(rest.to_string()));
                break;
            }
            Some(at) if rest[at..].starts_with('}') => {
                return Err("a `}` closes no placeholder".to_string());
            }
            Some(at) => {
                if at > 0 {
                    pieces.push(Piece::Text(rest[..at].to_string()));
                }
                let Some(len) = rest[at..].find('}') else {
                    return Err("a `{` is not closed".to_string());
                };
                let word = &rest[at + 1..at + len];
                let Some(placeholder) = Placeholder::ALL.into_iter().find(|p| p.name() == word)
                else {
                    return Err(format!(
                        "`{{{}}}` is no placeholder (there are `{{principal}}`, `{{project}}` and `{{session}}`)",
                        word.escape_debug()
                    ));
                };
                pieces.push(Piece::Fill(placeholder));
                rest = &rest[at + len + 1..];
            }
        }
    }
    Ok(pieces)
}

/// A directory grant that depends on the caller: per caller in its path, or
/// limited with `only` (or both).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallerFsGrant {
    pub host: PathTemplate,
    /// Where the guest sees it: absolute, normalized, never `/`.
    pub guest: String,
    pub access: crate::Access,
    pub only: Only,
    /// Its `[[fs]]` entry's index, for messages (`fs[2]`).
    pub index: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caller(project: Option<&str>) -> GrantCaller {
        GrantCaller {
            principal: "scorer".into(),
            role: "workagent".into(),
            project: project.map(str::to_string),
            session: Some("s-1".into()),
        }
    }

    #[test]
    fn only_admits_a_caller_every_list_names() {
        let only = Only {
            projects: vec!["scoring".into()],
            roles: vec!["workagent".into()],
            ..Only::default()
        };
        assert!(only.admits(&caller(Some("scoring"))));
        assert!(!only.admits(&caller(Some("outreach"))));
        assert!(!only.admits(&caller(None)));
        assert!(Only::default().admits(&caller(None)));
        assert_eq!(only.describe(), "roles `workagent`; projects `scoring`");
    }

    #[test]
    fn a_placeholder_fills_from_the_caller_and_refuses_what_names_no_directory() {
        let template = PathTemplate {
            base: PathBuf::from("/srv"),
            below: vec![pieces("p-{project}").unwrap(), pieces("{session}").unwrap()],
            written: "/srv/p-{project}/{session}".into(),
        };
        assert_eq!(
            template.fill(&caller(Some("scoring"))).unwrap(),
            PathBuf::from("/srv/p-scoring/s-1")
        );
        let why = template.fill(&caller(None)).unwrap_err();
        assert!(why.contains("`{project}` has no value"), "{why}");
        for bad in ["..", ".hidden", "a/b", "", "a\\b", "a b"] {
            let why = template.fill(&caller(Some(bad))).unwrap_err();
            assert!(why.contains("cannot name a directory"), "{bad}: {why}");
        }
        // The command line's operator is `cli:<uid>`.
        let operator = GrantCaller {
            principal: "cli:1000".into(),
            ..caller(Some("scoring"))
        };
        let home = PathTemplate {
            base: PathBuf::from("/srv"),
            below: vec![pieces("{principal}").unwrap()],
            written: "/srv/{principal}".into(),
        };
        assert_eq!(
            home.fill(&operator).unwrap(),
            PathBuf::from("/srv/cli:1000")
        );
    }

    #[test]
    fn pieces_refuse_unknown_and_unclosed_placeholders() {
        assert!(pieces("{tenant}").unwrap_err().contains("no placeholder"));
        assert!(pieces("{project").unwrap_err().contains("not closed"));
        assert!(pieces("x}").unwrap_err().contains("closes no"));
        assert_eq!(
            pieces("a{principal}b").unwrap(),
            vec![
                Piece::Text("a".into()),
                Piece::Fill(Placeholder::Principal),
                Piece::Text("b".into())
            ]
        );
    }
}
