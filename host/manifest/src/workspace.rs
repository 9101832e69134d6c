//! `[[workspace]]`: a git repository the operator names, that plugins'
//! directory grants reference (`workspace = "app"` in an `[[fs]]` grant)
//! instead of a fixed host directory.
//!
//! Why: a read-write grant of one directory is the same for every session
//! that calls the plugin, so two agents editing one repository would write
//! into one tree. A workspace grant is resolved per session instead: each
//! session gets its own git worktree of the repository, on a branch of its
//! own (`branch_prefix` + the session id), under the data dir; the host
//! makes it on first use, commits to it at each handoff and completed end,
//! and merges it into `base` when the operator says so. Here is only what
//! the config says and its checks; the worktrees are the host's.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::paths::normalize;
use crate::source::Source;
use crate::{Access, ConfigError};

/// The default of `branch_prefix`.
pub const DEFAULT_BRANCH_PREFIX: &str = "glovebox/";

/// `[[workspace]]`.
#[derive(Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub(crate) struct RawWorkspace {
    /// What plugins' `[[fs]]` grants call it (`workspace = "app"`): letters,
    /// digits, `-` and `_`.
    name: String,
    /// The git repository (its top directory, which holds `.git`); relative
    /// paths are resolved from the config's directory. Its own checkout is
    /// never written to until an operator merges a session's branch.
    repo: String,
    /// The branch each session's branch starts from and is merged into.
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "the branch the repository's `HEAD` names when a session's worktree is made")))]
    base: Option<String>,
    /// What each session's branch is called before its session id
    /// (`glovebox/s-…`).
    #[cfg_attr(feature = "schemars", schemars(extend("default" = "glovebox/")))]
    branch_prefix: Option<String>,
}

/// One `[[workspace]]`, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkspaceConfig {
    /// Its name, as grants reference it.
    pub name: String,
    /// The repository's top directory (absolute, canonical).
    pub repo: PathBuf,
    /// The branch sessions start from and merge into; `None`: the branch
    /// the repository's `HEAD` names when a session's worktree is made.
    pub base: Option<String>,
    /// The prefix of each session's branch (`glovebox/`).
    pub branch_prefix: String,
}

impl WorkspaceConfig {
    /// The branch of session `session` in this workspace.
    pub fn branch_of(&self, session: &str) -> String {
        format!("{}{session}", self.branch_prefix)
    }
}

/// An `[[fs]]` grant that names a workspace instead of a host directory:
/// each session calling the plugin sees its own worktree of it at `guest`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkspaceGrant {
    /// The `[[workspace]]` it names.
    pub workspace: String,
    /// Where the guest sees the session's worktree: absolute, normalized.
    pub guest: String,
    pub access: Access,
    /// Whom the grant is for (`only`; everyone by default).
    pub only: crate::Only,
}

/// Whether `name` may name a workspace: it becomes a directory's name.
pub(crate) fn valid_workspace_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
}

/// Whether `name` may be (a prefix of) a git branch name: no blank, no
/// control or special character of git's ref syntax, no `..`, no leading
/// `-` or `/`. (Stricter than git: an odd name is refused here rather than
/// by git at a session's first call.)
fn valid_branch_text(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 200
        && !name.starts_with(['-', '/', '.'])
        && !name.contains("..")
        && !name.contains("//")
        && !name.contains("@{")
        && !name.ends_with(".lock")
        && name.chars().all(|c| {
            c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '/' | '.' | '+' | '=' | ',')
        })
}

/// Checks the `[[workspace]]` entries: unique plain names, repositories
/// that are git repositories (relative to `dir`, the config's directory)
/// and neither hold nor lie in the `data_dir`, branch names git takes.
pub(crate) fn validate_workspaces(
    src: &Source,
    dir: &Path,
    raw: &[RawWorkspace],
    data_dir: &Path,
) -> Result<Vec<WorkspaceConfig>, ConfigError> {
    let mut out: Vec<WorkspaceConfig> = Vec::new();
    for (i, entry) in raw.iter().enumerate() {
        let at = |key: &str| format!("workspace[{i}].{key}");
        if !valid_workspace_name(&entry.name) {
            return Err(src.invalid(
                &at("name"),
                format!("`{}` is not a plain name", entry.name.escape_debug()),
                "use letters, digits, `-` and `_` (e.g. `name = \"app\"`)",
            ));
        }
        if out.iter().any(|w| w.name == entry.name) {
            return Err(src.invalid(
                &at("name"),
                format!("workspace `{}` is declared twice", entry.name),
                "give each `[[workspace]]` its own name",
            ));
        }
        let repo = repository(src, dir, &at("repo"), &entry.repo)?;
        check_apart(src, &at("repo"), &repo, data_dir)?;
        if let Some(base) = &entry.base
            && !valid_branch_text(base)
        {
            return Err(src.invalid(
                &at("base"),
                format!("`{}` is not a branch name", base.escape_debug()),
                "name an existing branch of the repository (e.g. `base = \"main\"`), or leave `base` out for the branch its `HEAD` names",
            ));
        }
        let branch_prefix = entry
            .branch_prefix
            .clone()
            .unwrap_or_else(|| DEFAULT_BRANCH_PREFIX.to_owned());
        if !valid_branch_text(&branch_prefix) {
            return Err(src.invalid(
                &at("branch_prefix"),
                format!(
                    "`{}` cannot start a branch name",
                    branch_prefix.escape_debug()
                ),
                "use letters, digits, `-`, `_` and `/` (e.g. `branch_prefix = \"agents/\"`), or leave it out for `glovebox/`",
            ));
        }
        out.push(WorkspaceConfig {
            name: entry.name.clone(),
            repo,
            base: entry.base.clone(),
            branch_prefix,
        });
    }
    Ok(out)
}

/// `repo`: an existing directory holding `.git`, made absolute and canonical.
fn repository(src: &Source, dir: &Path, key: &str, text: &str) -> Result<PathBuf, ConfigError> {
    let joined = dir.join(text);
    let shown = normalize(&joined);
    let fix = format!(
        "name the top directory of a git repository (`git init` makes one); relative paths are resolved from the directory of `{}`",
        src.file
    );
    if text.trim().is_empty() {
        return Err(src.invalid(key, "the repository path is empty", fix));
    }
    if !joined.is_dir() {
        return Err(src.invalid(
            key,
            format!("directory `{text}` not found at `{}`", shown.display()),
            fix,
        ));
    }
    if !joined.join(".git").exists() {
        return Err(src.invalid(
            key,
            format!(
                "`{text}` at `{}` is not a git repository (it has no `.git`)",
                shown.display()
            ),
            fix,
        ));
    }
    std::fs::canonicalize(&joined).map_err(|_| {
        src.invalid(
            key,
            format!(
                "directory `{text}` at `{}` cannot be resolved",
                shown.display()
            ),
            "check its permissions",
        )
    })
}

/// The sessions' worktrees live in the data dir, which must therefore lie
/// outside the repository (else every worktree would be inside the tree it
/// is a copy of), and the repository outside the data dir (which no grant
/// reaches).
fn check_apart(src: &Source, key: &str, repo: &Path, data_dir: &Path) -> Result<(), ConfigError> {
    let data = crate::owned::canonical_lenient(data_dir);
    if data.starts_with(repo) {
        return Err(src.invalid(
            key,
            format!(
                "the data dir `{}` lies inside the repository `{}`, where the sessions' worktrees would be part of the tree they copy",
                data.display(),
                repo.display()
            ),
            "set `data_dir` to a directory outside the repository",
        ));
    }
    if repo.starts_with(&data) {
        return Err(src.invalid(
            key,
            format!(
                "the repository `{}` lies inside the data dir `{}`, which no grant may reach",
                repo.display(),
                data.display()
            ),
            "keep the repository outside the data dir",
        ));
    }
    Ok(())
}
