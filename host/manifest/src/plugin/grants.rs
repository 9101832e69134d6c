//! What a manifest grants its plugin (`[[fs]]` directories, `[[http]]`
//! origins with their rules and injected headers, `env` names, the scratch
//! mount) and the checks each grant passes: paths that exist and mount
//! where they may, an origin granted once, secrets the config declares and
//! a guest never holds. The manifest's own loading is in `mod.rs`.

use std::path::Path;

use serde::Deserialize;

use super::RawManifest;
use crate::caller::{CallerFsGrant, RawOnly, only, path_template};
use crate::paths::resolve_grant_dir;
use crate::source::{self, Source};
use crate::workspace::valid_workspace_name;
use crate::{
    Access, ConfigError, FsGrant, HttpGrant, HttpInjection, HttpRules, SecretSource, Secrets,
    WorkspaceConfig, WorkspaceGrant,
};

/// `[[fs]]`: a directory the plugin may see.
#[derive(Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub(crate) struct RawFs {
    /// The host directory; or `workspace` instead. It may name the caller
    /// with `{principal}`, `{project}` or `{session}` in a directory's name
    /// (`data/{project}`): each caller then sees its own directory, made on
    /// first use (mode 0700) below the part before the first placeholder,
    /// which must exist. Without placeholders the directory must exist.
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "none: `host` or `workspace`")))]
    host: Option<String>,
    /// A `[[workspace]]` of the host config, instead of `host`: each session
    /// calling the plugin sees its own git worktree of that repository
    /// ([`operators/workspaces.md`](operators/workspaces.md)); a call outside
    /// a session is refused.
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "none")))]
    workspace: Option<String>,
    /// Where the plugin sees it (absolute, not `/`).
    guest: String,
    /// `"read-only"` or `"read-write"`.
    #[serde(default)]
    #[cfg_attr(feature = "schemars", schemars(extend("default" = "read-only")))]
    access: Access,
    /// Whom the grant is for: `{ principals = [...], roles = [...],
    /// projects = [...] }`, each list given naming the caller's. Anyone
    /// else's call does not see the directory at all.
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "every caller")))]
    only: Option<RawOnly>,
}

/// `[[http]]`: an origin the plugin may send requests to.
#[derive(Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub(crate) struct RawHttp {
    /// An origin (scheme, host, optional port; no path).
    url: String,
    /// The HTTP methods allowed on it (`["GET", "HEAD"]`); none listed: any.
    #[serde(default)]
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "any method")))]
    methods: Vec<String>,
    /// The paths allowed on it, matched after decoding and resolving `.` and
    /// `..`: `/repos/acme` (it and below), `*` within a segment
    /// (`/repos/*/issues`), `**` for any segments (`/repos/acme/**/comments`);
    /// none listed: any. A redirect is judged again, hop by hop.
    #[serde(default)]
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "any path")))]
    paths: Vec<String>,
    /// A header the host adds to the requests this grant allows, its value
    /// naming the config's `[[secret]]`s: `{ header = "Authorization", value =
    /// "Bearer ${secret:github}" }`. The plugin never holds the value.
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "none")))]
    inject: Option<RawInject>,
    /// Whom the grant is for: `{ principals = [...], roles = [...],
    /// projects = [...] }`, each list given naming the caller's. Anyone
    /// else's requests to the origin are refused, saying whom it is for.
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "every caller")))]
    only: Option<RawOnly>,
}

/// `[[http]]` `inject`: a header with a secret in it.
#[derive(Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub(crate) struct RawInject {
    /// The header's name (`Authorization`).
    header: String,
    /// Its value, `${secret:NAME}` where a secret goes.
    value: String,
}

/// `[[fs]]`, sorted by what decides their directory.
#[derive(Default)]
pub(super) struct FsGrants {
    /// One directory for every caller.
    pub fs: Vec<FsGrant>,
    /// A session's worktree of a `[[workspace]]`.
    pub workspaces: Vec<WorkspaceGrant>,
    /// A directory that depends on the caller (`caller.rs`).
    pub per_caller: Vec<CallerFsGrant>,
}

/// `[[fs]]`: each grant's host directory (from the manifest's directory
/// `dir`) and its own guest path; the grants naming a `[[workspace]]`, and
/// those that depend on the caller, apart. Every guest path is used once,
/// with the index of the `[[fs]]` entry that uses it.
pub(super) fn fs_grants(
    src: &Source,
    dir: &Path,
    raw: &RawManifest,
) -> Result<FsGrants, ConfigError> {
    let mut grants = FsGrants::default();
    let mut guests: Vec<String> = Vec::new();
    for (i, grant) in raw.fs.iter().enumerate() {
        let only = only(src, &format!("fs[{i}].only"), grant.only.as_ref())?;
        let host = match (&grant.host, &grant.workspace) {
            (Some(_), Some(_)) => {
                return Err(src.invalid(
                    &format!("fs[{i}].workspace"),
                    "the grant names both a host directory and a workspace",
                    "keep one: `host` for one directory every session shares, or `workspace` for a worktree of its own per session",
                ));
            }
            (None, None) => {
                return Err(ConfigError::MissingKey {
                    file: src.file.clone(),
                    key: format!("fs[{i}].host"),
                    line: src.line_of(&format!("fs[{i}]")),
                    hint: source::hint_for("host").to_owned(),
                });
            }
            (Some(host), None) if host.contains(['{', '}']) || !only.is_everyone() => Some(Err(
                path_template(src, dir, &format!("fs[{i}].host"), host)?,
            )),
            (Some(host), None) => Some(Ok(resolve_grant_dir(
                src,
                dir,
                &format!("fs[{i}].host"),
                host,
            )?)),
            (None, Some(name)) => {
                if !valid_workspace_name(name) {
                    return Err(src.invalid(
                        &format!("fs[{i}].workspace"),
                        format!("`{}` is not a workspace name", name.escape_debug()),
                        "name a `[[workspace]]` of glovebox.toml (letters, digits, `-` and `_`)",
                    ));
                }
                None
            }
        };
        let key = format!("fs[{i}].guest");
        let guest = normalize_guest(&grant.guest)
            .map_err(|problem| src.invalid(&key, problem, source::hint_for("guest")))?;
        if let Some(j) = guests.iter().position(|g| *g == guest) {
            return Err(src.invalid(
                &key,
                format!("guest path `{guest}` is already used by `fs[{j}]`"),
                "give each `[[fs]]` grant its own `guest` path",
            ));
        }
        guests.push(guest.clone());
        match (host, &grant.workspace) {
            (Some(Ok(host)), _) => grants.fs.push(FsGrant {
                host,
                guest,
                access: grant.access,
            }),
            (Some(Err(host)), _) => grants.per_caller.push(CallerFsGrant {
                host,
                guest,
                access: grant.access,
                only,
                index: i,
            }),
            (None, workspace) => grants.workspaces.push(WorkspaceGrant {
                workspace: workspace.clone().unwrap_or_default(),
                guest,
                access: grant.access,
                only,
            }),
        }
    }
    Ok(grants)
}

/// Each `[[fs]]` grant naming a workspace names one the host config
/// declares (`declared`).
pub(super) fn check_workspaces(
    src: &Source,
    raw: &RawManifest,
    declared: &[WorkspaceConfig],
) -> Result<(), ConfigError> {
    for (i, grant) in raw.fs.iter().enumerate() {
        let Some(name) = &grant.workspace else {
            continue;
        };
        if !declared.iter().any(|w| w.name == *name) {
            let names: Vec<&str> = declared.iter().map(|w| w.name.as_str()).collect();
            return Err(src.invalid(
                &format!("fs[{i}].workspace"),
                format!(
                    "workspace `{name}` is not declared in the host config (declared: {})",
                    match names.is_empty() {
                        true => "none".to_string(),
                        false => names.join(", "),
                    }
                ),
                "declare it in glovebox.toml: `[[workspace]]` with `name` and `repo` (a git repository)",
            ));
        }
    }
    Ok(())
}

/// What a manifest asks of the host's `[[secret]]`s: each secret an
/// `inject` names is declared, and no `env` entry names a host variable a
/// secret is read from (the guest would hold it).
pub(super) fn check_secrets(
    src: &Source,
    raw: &RawManifest,
    http: &[HttpGrant],
    secrets: &Secrets,
) -> Result<(), ConfigError> {
    for (i, grant) in http.iter().enumerate() {
        let Some(inject) = &grant.inject else {
            continue;
        };
        if let Err(missing) = inject.resolve(secrets) {
            let declared: Vec<&str> = secrets.iter().map(|s| s.name.as_str()).collect();
            return Err(src.invalid(
                &format!("http[{i}].inject.value"),
                format!(
                    "secret `{missing}` is not declared in the host config (declared: {})",
                    match declared.is_empty() {
                        true => "none".to_string(),
                        false => declared.join(", "),
                    }
                ),
                "declare it in glovebox.toml: `[[secret]]` with `name` and one of `file`, `env`, `command`",
            ));
        }
    }
    for (i, var) in raw.env.iter().enumerate() {
        let secret = secrets
            .iter()
            .find(|s| s.source == SecretSource::Env(var.clone()));
        if let Some(secret) = secret {
            return Err(src.invalid(
                &format!("env[{i}]"),
                format!(
                    "environment variable `{var}` holds secret `{}`, which no plugin may hold",
                    secret.name
                ),
                "remove it from `env` and inject it where it is used: `[[http]]` `inject = { header = \"…\", value = \"…${secret:NAME}\" }`",
            ));
        }
    }
    Ok(())
}

/// `env`: variable names only, each once.
pub(super) fn check_env(src: &Source, raw: &RawManifest) -> Result<(), ConfigError> {
    for (i, var) in raw.env.iter().enumerate() {
        let key = format!("env[{i}]");
        let problem = if var.is_empty() {
            Some("environment variable name is empty".to_owned())
        } else if var.contains(['=', '\0']) {
            Some(format!(
                "environment variable name `{}` contains `=` or a nul byte",
                var.escape_debug()
            ))
        } else if raw.env[..i].contains(var) {
            Some(format!("environment variable `{var}` is listed twice"))
        } else {
            None
        };
        if let Some(problem) = problem {
            return Err(src.invalid(
                &key,
                problem,
                "list each variable once, by name only: values come from the host's environment",
            ));
        }
    }
    Ok(())
}

/// `[[http]]`: each URL a grant with its rules, each granted once. An origin
/// may be granted more than once with different rules (any of them allows a
/// request), but not both with and without: the open grant would make the
/// rules of the other moot.
pub(super) fn http_grants(src: &Source, raw: &RawManifest) -> Result<Vec<HttpGrant>, ConfigError> {
    let mut http: Vec<HttpGrant> = Vec::new();
    for (i, grant) in raw.http.iter().enumerate() {
        let key = format!("http[{i}].url");
        let mut parsed = HttpGrant::parse_url(&grant.url)
            .map_err(|e| src.invalid(&key, e.problem(), e.hint()))?;
        parsed.rules = HttpRules::parse(&grant.methods, &grant.paths)
            .map_err(|e| src.invalid(&format!("http[{i}].{}", e.key()), e.problem(), e.hint()))?;
        if let Some(inject) = &grant.inject {
            parsed.inject = Some(HttpInjection::parse(&inject.header, &inject.value).map_err(
                |e| src.invalid(&format!("http[{i}].inject.{}", e.field), e.problem, e.hint),
            )?);
        }
        parsed.only = only(src, &format!("http[{i}].only"), grant.only.as_ref())?;
        // Grants for different callers may differ in their rules.
        let same_origin = |g: &&HttpGrant| {
            (g.scheme, &g.host, g.port, &g.only)
                == (parsed.scheme, &parsed.host, parsed.port, &parsed.only)
        };
        if let Some(other) = http.iter().find(same_origin)
            && other.rules.is_open() != parsed.rules.is_open()
        {
            return Err(src.invalid(
                &key,
                format!("`{parsed}` is granted both with and without `methods` or `paths`"),
                "the grant without them allows every method and path, so the other's rules would never apply: keep one",
            ));
        }
        if http.contains(&parsed) {
            return Err(src.invalid(
                &key,
                format!("`{parsed}` is granted twice"),
                "remove the duplicate `[[http]]` entry",
            ));
        }
        http.push(parsed);
    }
    Ok(http)
}

/// `scratch`: a guest path no `[[fs]]` grant uses.
pub(super) fn scratch_mount(
    src: &Source,
    raw: &RawManifest,
) -> Result<Option<String>, ConfigError> {
    Ok(match &raw.scratch {
        None => None,
        Some(path) => {
            let guest = normalize_guest(path)
                .map_err(|problem| src.invalid("scratch", problem, source::hint_for("scratch")))?;
            let used = |g: &RawFs| normalize_guest(&g.guest).is_ok_and(|g| g == guest);
            if let Some(j) = raw.fs.iter().position(used) {
                return Err(src.invalid(
                    "scratch",
                    format!("guest path `{guest}` is already used by `fs[{j}]`"),
                    "mount the scratch directory at a guest path no `[[fs]]` grant uses",
                ));
            }
            Some(guest)
        }
    })
}

/// Why a guest path (`fs[i].guest`, `scratch`) cannot be mounted: each names
/// the path; the config's hint for the key says what to write.
#[derive(thiserror::Error, Debug, Clone, PartialEq, Eq)]
enum GuestPathError {
    #[error("guest path `{guest}` is not absolute")]
    NotAbsolute { guest: String },
    #[error("guest path `{}` contains a nul byte", .guest.escape_debug())]
    NulByte { guest: String },
    #[error("guest path `{guest}` contains `..`")]
    DotDot { guest: String },
    #[error("guest path `{guest}` is the root, which would cover every other grant")]
    Root { guest: String },
}

/// `/data/` and `/data/./x//` become `/data` and `/data/x`; `..`, `/` and relative
/// paths are refused.
fn normalize_guest(guest: &str) -> Result<String, GuestPathError> {
    let guest_owned = || guest.to_string();
    if !guest.starts_with('/') {
        return Err(GuestPathError::NotAbsolute {
            guest: guest_owned(),
        });
    }
    if guest.contains('\0') {
        return Err(GuestPathError::NulByte {
            guest: guest_owned(),
        });
    }
    let mut segments = Vec::new();
    for segment in guest.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                return Err(GuestPathError::DotDot {
                    guest: guest_owned(),
                });
            }
            _ => segments.push(segment),
        }
    }
    if segments.is_empty() {
        return Err(GuestPathError::Root {
            guest: guest_owned(),
        });
    }
    Ok(format!("/{}", segments.join("/")))
}
