//! `glovebox principal`: declare who may connect. `principal add` makes a
//! token, prints it once, and stores only its SHA-256 in the config (edited
//! in place: comments and layout survive), or in a 0600 file beside it.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Subcommand;
use glovebox::manifest::{HostConfig, check_principal_name, credential_of};
use glovebox::session::Role;
use glovebox::{Principal, PrincipalKind};
use toml_edit::{Array, ArrayOfTables, DocumentMut, Item, Table, value};

#[derive(Subcommand)]
pub enum PrincipalCommand {
    /// Declare a principal: make its token, print it once, store its hash.
    Add {
        name: String,
        /// `agent` or `operator`.
        #[arg(long)]
        kind: PrincipalKind,
        /// The roles an agent may start sessions as (its ceiling), comma-separated.
        #[arg(long, value_delimiter = ',')]
        roles: Vec<Role>,
        /// The projects an agent may touch, comma-separated (`*`: any).
        #[arg(long, value_delimiter = ',')]
        projects: Vec<String>,
        /// Tags added to every session it starts, which it cannot remove.
        #[arg(long, value_delimiter = ',')]
        tags: Vec<String>,
        /// Keep the hash in this file (made 0600; relative to the config's
        /// directory) instead of in the config.
        #[arg(long, value_name = "FILE")]
        credential_file: Option<PathBuf>,
    },
    /// List the declared principals (never their credentials).
    List {
        #[arg(long)]
        json: bool,
    },
}

pub fn run(config: &Path, command: PrincipalCommand) -> Result<ExitCode> {
    match command {
        PrincipalCommand::Add {
            name,
            kind,
            roles,
            projects,
            tags,
            credential_file,
        } => add(
            config,
            &name,
            kind,
            &roles,
            &projects,
            &tags,
            credential_file,
        ),
        PrincipalCommand::List { json } => list(config, json),
    }
}

fn add(
    config: &Path,
    name: &str,
    kind: PrincipalKind,
    roles: &[Role],
    projects: &[String],
    tags: &[String],
    credential_file: Option<PathBuf>,
) -> Result<ExitCode> {
    if let Err(problem) = check_principal_name(name) {
        bail!("{problem}: name it with 1 to 64 letters, digits, `.`, `_` or `-` (not `local`)");
    }
    match kind {
        PrincipalKind::Agent if roles.is_empty() => {
            bail!(
                "an agent needs the roles it may act as: add `--roles workagent` (comma-separated)"
            )
        }
        PrincipalKind::Agent if projects.is_empty() => {
            bail!(
                "an agent needs the projects it may touch: add `--projects NAME` (comma-separated; `*` for any)"
            )
        }
        PrincipalKind::Operator if !roles.is_empty() || !projects.is_empty() => {
            bail!(
                "an operator acts in every role and project: leave out `--roles` and `--projects`"
            )
        }
        _ => {}
    }
    let text = std::fs::read_to_string(config)
        .with_context(|| format!("cannot read `{}`", config.display()))?;
    let mut doc: DocumentMut = text
        .parse()
        .with_context(|| format!("`{}` is not valid TOML", config.display()))?;
    let existing = doc
        .get("principal")
        .and_then(Item::as_array_of_tables)
        .is_some_and(|all| {
            all.iter()
                .any(|t| t.get("name").and_then(Item::as_str) == Some(name))
        });
    if existing {
        bail!(
            "principal `{name}` is already declared in `{}`: pick another name, or remove its `[[principal]]` entry first",
            config.display()
        );
    }

    let token = new_token()?;
    let hash = credential_of(&token);
    let mut entry = Table::new();
    entry.insert("name", value(name));
    entry.insert("kind", value(kind.as_str()));
    let dir = config.parent().unwrap_or(Path::new("")).to_path_buf();
    let mut written_file = None;
    match &credential_file {
        None => {
            entry.insert("credential", value(&hash));
        }
        Some(file) => {
            let path = dir.join(file);
            if path.exists() {
                bail!(
                    "`{}` exists already: name a new file for the credential",
                    path.display()
                );
            }
            write_private(&path, &format!("{hash}\n"))?;
            written_file = Some(path);
            entry.insert("credential_file", value(file.display().to_string()));
        }
    }
    if kind == PrincipalKind::Agent {
        entry.insert("roles", value(strings(roles.iter().map(|r| r.as_str()))));
        entry.insert(
            "projects",
            value(strings(projects.iter().map(String::as_str))),
        );
    }
    if !tags.is_empty() {
        entry.insert("tags", value(strings(tags.iter().map(String::as_str))));
    }
    match doc.get_mut("principal") {
        Some(Item::ArrayOfTables(all)) => all.push(entry),
        Some(_) => bail!(
            "`principal` in `{}` is not a list of `[[principal]]` tables: fix it first",
            config.display()
        ),
        None => {
            let mut all = ArrayOfTables::new();
            all.push(entry);
            doc.insert("principal", Item::ArrayOfTables(all));
        }
    }

    // The new config must load before it replaces the old one.
    let staged = dir.join(format!(
        ".{}.principal-add",
        config
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("glovebox.toml")
    ));
    let result = stage_and_check(config, &staged, &doc.to_string());
    if let Err(e) = result {
        let _ = std::fs::remove_file(&staged);
        if let Some(file) = written_file {
            let _ = std::fs::remove_file(file);
        }
        return Err(e);
    }
    std::fs::rename(&staged, config)
        .with_context(|| format!("cannot replace `{}`", config.display()))?;

    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{token}")?;
    eprintln!(
        "glovebox: added {kind} `{name}` to `{}`; the token above is shown only this once (only its SHA-256 is kept): give it to the client as `Authorization: Bearer <token>`; a running server takes it on `glovebox reload`",
        config.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Writes the new config beside the old one, with its permissions, and loads it.
fn stage_and_check(config: &Path, staged: &Path, text: &str) -> Result<()> {
    std::fs::write(staged, text).with_context(|| format!("cannot write `{}`", staged.display()))?;
    if let Ok(meta) = std::fs::metadata(config) {
        let _ = std::fs::set_permissions(staged, meta.permissions());
    }
    HostConfig::load(staged).map_err(|e| {
        anyhow::anyhow!(
            "the config with the new principal does not load, so it was not changed: {e}"
        )
    })?;
    Ok(())
}

fn list(config: &Path, json: bool) -> Result<ExitCode> {
    let config = HostConfig::load(config)?;
    let all: Vec<&Principal> = config.principals.iter().map(|p| &p.principal).collect();
    if json {
        out!("{}", serde_json::to_string_pretty(&all)?);
        return Ok(ExitCode::SUCCESS);
    }
    if all.is_empty() {
        out!(
            "no principals declared: every connection is the built-in agent `local` (ceiling workagent), and HTTP serves loopback only"
        );
    }
    for p in all {
        let roles: Vec<&str> = p.roles.iter().map(|r| r.as_str()).collect();
        out!(
            "{}\t{}\troles={}\tprojects={}\ttags={}",
            p.name,
            p.kind,
            roles.join(","),
            p.projects.join(","),
            p.tags.join(",")
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `gbx_` and 64 hex digits: 256 bits from the operating system's CSPRNG.
fn new_token() -> Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)
        .map_err(|e| anyhow::anyhow!("cannot draw random bytes for a token: {e}"))?;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    Ok(format!("gbx_{hex}"))
}

fn strings<'a>(items: impl Iterator<Item = &'a str>) -> Array {
    items.collect()
}

fn write_private(path: &Path, text: &str) -> Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options
        .open(path)
        .with_context(|| format!("cannot create `{}`", path.display()))?;
    file.write_all(text.as_bytes())
        .with_context(|| format!("cannot write `{}`", path.display()))?;
    Ok(())
}
