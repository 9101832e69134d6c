//! What `glovebox doctor` reports: a finding, its rule, severity and culprit.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// A closed set of names, each variant with the one text that names it in
/// JSON and in the printed report: the enum, its serde names and `as_str`
/// come from one list, so the two can never disagree.
macro_rules! names {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $text:literal,)* }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[derive(Serialize, Deserialize, schemars::JsonSchema)]
        pub enum $name {
            $($(#[$vdoc])* #[serde(rename = $text)] $variant,)*
        }

        impl $name {
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)*
                }
            }
        }
    };
}

names! {
    /// How much a finding matters. `glovebox doctor` exits 1 when there is a
    /// warning; notices alone leave it at 0.
    Severity {
        /// Worth fixing now.
        Warning = "warning",
        /// Worth knowing; nothing is at risk any more.
        Notice = "notice",
    }
}

names! {
    /// Which antipattern a finding is.
    Rule {
        UnwaitedJobs = "unwaited_jobs",
        UnnamedSession = "unnamed_session",
        PermissiveHook = "permissive_hook",
        RoleWithoutBudget = "role_without_budget",
        NoHandoff = "no_handoff",
        UnpinnedDigest = "unpinned_digest",
        SharedWritableDir = "shared_writable_dir",
        HeldToolText = "held_tool_text",
    }
}

names! {
    /// What a finding is about.
    CulpritKind {
        Session = "session",
        Hook = "hook",
        Plugin = "plugin",
        Role = "role",
        Directory = "directory",
        Tool = "tool",
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
