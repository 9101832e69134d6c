//! `glovebox principal`: declare who may connect. `principal add` makes a
//! token, prints it once, and stores only its SHA-256 in the config (edited
//! in place: comments and layout survive), or in a 0600 file beside it.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Subcommand;
use glovebox::manifest::{
    CARD_DESCRIPTION_MAX, CARD_FIELD_MAX, HostConfig, card_text_ok, check_principal_name,
    credential_of,
};
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
        /// What is said about it in the fleet's registry (model, version,
        /// owner, description), recorded in every session it starts.
        #[command(flatten)]
        card: Box<CardArgs>,
        /// What narrows the tools it is offered.
        #[command(flatten)]
        narrow: NarrowArgs,
    },
    /// List the declared principals (never their credentials).
    List {
        #[arg(long)]
        json: bool,
    },
}

/// `principal add`'s narrowing: the `[[toolset]]`s it is offered and
/// whether it is read-only (see `docs/operators/principals.md`).
#[derive(clap::Args, Default)]
pub struct NarrowArgs {
    /// The `[[toolset]]`s it is offered, comma-separated (declared in the
    /// config; none: every tool).
    #[arg(long, value_delimiter = ',')]
    toolsets: Vec<String>,
    /// Offer it only tools annotated read-only, in every session it starts.
    #[arg(long)]
    read_only: bool,
}

/// `principal add`'s card: what the fleet's registry says of it.
#[derive(clap::Args, Default)]
pub struct CardArgs {
    /// The model the agent runs on.
    #[arg(long)]
    model: Option<String>,
    /// The agent's own version (its prompt, its code).
    #[arg(long = "agent-version", value_name = "VERSION")]
    version: Option<String>,
    /// The person or team that answers for it.
    #[arg(long)]
    owner: Option<String>,
    /// What it is for.
    #[arg(long)]
    description: Option<String>,
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
            card,
            narrow,
        } => add(
            config,
            &name,
            kind,
            (&roles, &projects, &tags),
            credential_file,
            (&card, &narrow),
        ),
        PrincipalCommand::List { json } => list(config, json),
    }
}

fn add(
    config: &Path,
    name: &str,
    kind: PrincipalKind,
    (roles, projects, tags): (&[Role], &[String], &[String]),
    credential_file: Option<PathBuf>,
    (card, narrow): (&CardArgs, &NarrowArgs),
) -> Result<ExitCode> {
    check_request(name, kind, roles, projects)?;
    let card = card_fields(card)?;
    let mut doc = read_config(config)?;
    refuse_declared(&doc, config, name)?;

    let token = new_token()?;
    let hash = credential_of(&token);
    let mut entry = Table::new();
    entry.insert("name", value(name));
    entry.insert("kind", value(kind.as_str()));
    let dir = config.parent().unwrap_or(Path::new("")).to_path_buf();
    let written_file = insert_credential(&mut entry, &dir, credential_file.as_deref(), &hash)?;
    insert_scope(&mut entry, kind, roles, projects, tags);
    for (key, text) in card {
        entry.insert(key, value(text));
    }
    if !narrow.toolsets.is_empty() {
        let sets = strings(narrow.toolsets.iter().map(String::as_str));
        entry.insert("toolsets", value(sets));
    }
    if narrow.read_only {
        entry.insert("read_only", value(true));
    }
    append_entry(&mut doc, config, entry)?;
    replace_config(config, &dir, &doc.to_string(), written_file)?;

    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{token}")?;
    eprintln!(
        "glovebox: added {kind} `{name}` to `{}`; the token above is shown only this once (only its SHA-256 is kept): give it to the client as `Authorization: Bearer <token>`; a running server takes it on `glovebox reload`",
        config.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Refuses a bad name, and roles or projects that do not fit the kind.
fn check_request(
    name: &str,
    kind: PrincipalKind,
    roles: &[Role],
    projects: &[String],
) -> Result<()> {
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
        _ => Ok(()),
    }
}

/// The config as a TOML document, to edit in place.
fn read_config(config: &Path) -> Result<DocumentMut> {
    let text = std::fs::read_to_string(config)
        .with_context(|| format!("cannot read `{}`", config.display()))?;
    text.parse()
        .with_context(|| format!("`{}` is not valid TOML", config.display()))
}

/// Refuses a name a `[[principal]]` entry of the config has already.
fn refuse_declared(doc: &DocumentMut, config: &Path, name: &str) -> Result<()> {
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
    Ok(())
}

/// Puts the credential's hash in the entry, or in a new 0600 `file` (relative
/// to `dir`) that the entry names; returns the file written, if any.
fn insert_credential(
    entry: &mut Table,
    dir: &Path,
    file: Option<&Path>,
    hash: &str,
) -> Result<Option<PathBuf>> {
    let Some(file) = file else {
        entry.insert("credential", value(hash));
        return Ok(None);
    };
    let path = dir.join(file);
    if path.exists() {
        bail!(
            "`{}` exists already: name a new file for the credential",
            path.display()
        );
    }
    crate::new_file::create(&path, &format!("{hash}\n"), true)?;
    entry.insert("credential_file", value(file.display().to_string()));
    Ok(Some(path))
}

/// An agent's roles and projects, and the tags of either kind.
fn insert_scope(
    entry: &mut Table,
    kind: PrincipalKind,
    roles: &[Role],
    projects: &[String],
    tags: &[String],
) {
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
}

/// The card's fields given, as the config's keys take them; refused when
/// one is blank, too long or holds a control character.
fn card_fields(card: &CardArgs) -> Result<Vec<(&'static str, String)>> {
    let fields = [
        ("model", "--model", &card.model, CARD_FIELD_MAX),
        ("version", "--agent-version", &card.version, CARD_FIELD_MAX),
        ("owner", "--owner", &card.owner, CARD_FIELD_MAX),
        (
            "description",
            "--description",
            &card.description,
            CARD_DESCRIPTION_MAX,
        ),
    ];
    let mut out = Vec::new();
    for (key, flag, text, max) in fields {
        let Some(text) = text else { continue };
        if !card_text_ok(text, max) {
            bail!("{flag}: write 1 to {max} characters on one line (no control character)");
        }
        out.push((key, text.clone()));
    }
    Ok(out)
}

/// Adds the entry to the config's `[[principal]]` tables (the first makes them).
fn append_entry(doc: &mut DocumentMut, config: &Path, entry: Table) -> Result<()> {
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
    Ok(())
}

/// Replaces the config with `text` once it loads; when it does not, removes
/// what was staged and the credential file written for it.
fn replace_config(
    config: &Path,
    dir: &Path,
    text: &str,
    written_file: Option<PathBuf>,
) -> Result<()> {
    // The new config must load before it replaces the old one.
    let staged = dir.join(format!(
        ".{}.principal-add",
        config
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("glovebox.toml")
    ));
    let result = stage_and_check(config, &staged, text);
    if let Err(e) = result {
        let _ = std::fs::remove_file(&staged);
        if let Some(file) = written_file {
            let _ = std::fs::remove_file(file);
        }
        return Err(e);
    }
    std::fs::rename(&staged, config)
        .with_context(|| format!("cannot replace `{}`", config.display()))?;
    Ok(())
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
    let config = glovebox::load_config_blocking(config)?;
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
        let c = &p.card;
        let card: String = [
            ("model", &c.model),
            ("version", &c.version),
            ("owner", &c.owner),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.as_ref().map(|v| format!("\t{k}={v}")))
        .collect();
        // What narrows it, shown only where something does.
        let mut narrow = String::new();
        if !p.toolsets.is_empty() {
            narrow.push_str(&format!("\ttoolsets={}", p.toolsets.join(",")));
        }
        if p.read_only {
            narrow.push_str("\tread-only");
        }
        out!(
            "{}\t{}\troles={}\tprojects={}\ttags={}{card}{narrow}",
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
