//! What `glovebox doctor` reports: a finding, its rule, severity and culprit.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// How much a finding matters. `glovebox doctor` exits 1 when there is a
/// warning; notices alone leave it at 0.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth fixing now.
    Warning,
    /// Worth knowing; nothing is at risk any more.
    Notice,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Warning => "warning",
            Severity::Notice => "notice",
        }
    }
}

/// Which antipattern a finding is.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    UnwaitedJobs,
    UnnamedSession,
    PermissiveHook,
    RoleWithoutBudget,
    NoHandoff,
    UnpinnedDigest,
    SharedWritableDir,
}

impl Rule {
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::UnwaitedJobs => "unwaited_jobs",
            Rule::UnnamedSession => "unnamed_session",
            Rule::PermissiveHook => "permissive_hook",
            Rule::RoleWithoutBudget => "role_without_budget",
            Rule::NoHandoff => "no_handoff",
            Rule::UnpinnedDigest => "unpinned_digest",
            Rule::SharedWritableDir => "shared_writable_dir",
        }
    }
}

/// What a finding is about.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum CulpritKind {
    Session,
    Hook,
    Plugin,
    Role,
    Directory,
}

impl CulpritKind {
    pub fn as_str(self) -> &'static str {
        match self {
            CulpritKind::Session => "session",
            CulpritKind::Hook => "hook",
            CulpritKind::Plugin => "plugin",
            CulpritKind::Role => "role",
            CulpritKind::Directory => "directory",
        }
    }
}

/// The thing at fault: a session (its name, or its id), a hook, a plugin,
/// a role or a directory, and the file where it is declared when there is one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Culprit {
    pub kind: CulpritKind,
    pub name: String,
    /// A session's id (when `name` is its name).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The file that declares it (a plugin's manifest, the config).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<PathBuf>,
}

impl std::fmt::Display for Culprit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} `{}`", self.kind.as_str(), self.name)?;
        if let Some(id) = &self.id {
            write!(f, " ({id})")?;
        }
        if let Some(file) = &self.file {
            write!(f, " in `{}`", file.display())?;
        }
        Ok(())
    }
}

/// One antipattern found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Finding {
    pub rule: Rule,
    pub severity: Severity,
    pub culprit: Culprit,
    /// What is wrong, naming the culprit.
    pub message: String,
    /// What to do about it.
    pub fix: String,
}

impl Finding {
    pub(super) fn new(
        rule: Rule,
        severity: Severity,
        culprit: Culprit,
        message: String,
        fix: String,
    ) -> Finding {
        Finding {
            rule,
            severity,
            culprit,
            message,
            fix,
        }
    }
}

/// Names in backquotes, the first five and how many more.
pub(super) fn quoted(names: &[String]) -> String {
    const SHOWN: usize = 5;
    let mut out: Vec<String> = names.iter().take(SHOWN).map(|n| format!("`{n}`")).collect();
    if names.len() > SHOWN {
        out.push(format!("and {} more", names.len() - SHOWN));
    }
    out.join(", ")
}
