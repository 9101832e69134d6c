//! The hostile and permission scenarios as data: each folder under `tests/cases/` is one
//! named trial, its `case.toml` the threat it covers (by its number in docs/threats.md),
//! the plugins and grants, the files the scratch dir starts with, the calls and what each
//! must answer. The schema is `Case` below; docs/contributing.md says how to add one.
//!
//! A case runs through the real host as the `all` tests do (`tests/all/util.rs`, the
//! same file): its plugins, plus the echo plugin to show the host still serves
//! afterwards, with the shared compile cache. Placeholders in `case.toml`:
//!
//! - `{scratch}`: a directory made for the case, where `[[setup]]` paths start (its
//!   parent is the case's own too, so `{scratch}/../x` is no other test's);
//! - `{outside}`: another one beside it, outside every grant;
//! - `{server}`, `{other}`: the ports of two HTTP servers on 127.0.0.1 that count the
//!   connections they accept (`/hello` answers, `/redirect?to=URL` redirects);
//! - `{TOOL_ECHO}`, `{HOSTILE_FS}`, ...: the path of a test plugin (`util::plugin_named`).
//!
//! `cargo test --test cases -- NAME` runs one folder.

#![forbid(unsafe_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use glovebox::manifest::HookConfig;
use glovebox::session::Role;
use glovebox::{CallContext, CallError, CallReport, Gateway, Host, LoadError, PluginManifest};
use libtest_mimic::{Arguments, Failed, Trial};
use serde::Deserialize;
use serde_json::Value;

/// The `all` binary's helpers (hosts, plugin paths, the test server), the same file.
#[path = "../all/util.rs"]
mod util;

/// One folder's `case.toml`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    /// The numbers in docs/threats.md this case covers.
    threats: Vec<u32>,
    /// What is tried, and what is owed, in a sentence.
    scenario: String,
    /// Files, directories and symlinks made in `{scratch}` before the host loads.
    #[serde(default)]
    setup: Vec<Setup>,
    /// Plugin manifests, written as in `plugins/*.toml` (the manifest loader reads them).
    #[serde(default)]
    plugin: Vec<toml::Table>,
    /// Permission hooks, in chain order.
    #[serde(default)]
    hook: Vec<Hook>,
    /// The host must refuse to load, so: no calls.
    load_error: Option<LoadRefusal>,
    /// The calls, in order, each with what it must answer.
    #[serde(default)]
    call: Vec<Call>,
    /// What must hold once the calls are done.
    #[serde(default)]
    after: After,
}

/// One entry made in `{scratch}`: exactly one of `content`, `dir`, `symlink`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Setup {
    /// Relative to `{scratch}`.
    path: String,
    /// A file with this text.
    content: Option<String>,
    /// A directory.
    #[serde(default)]
    dir: bool,
    /// A symlink with this target (as written, so relative targets stay relative).
    symlink: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Hook {
    name: String,
    component: String,
    #[serde(default)]
    settings: toml::Table,
    /// Per evaluation; default 100 ms.
    deadline: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LoadRefusal {
    /// The `LoadError` variant (`NotWasm`, `DigestMismatch`, ...), when the refusal is one.
    kind: Option<String>,
    /// Fragments of the message.
    #[serde(default)]
    contains: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Call {
    /// `plugin.tool`.
    tool: String,
    /// The input, as a TOML table (sent as JSON); `{}` when absent.
    input: Option<toml::Table>,
    /// The input as sent, instead of `input` (e.g. text that is not JSON).
    raw_input: Option<String>,
    /// The call runs in a session of this role (one a role, started by the operator),
    /// through the gateway as an agent's call does; without it, outside any session.
    role: Option<Role>,
    expect: Expect,
    /// `error`/`denied`: the error's kind (`CallError::kind`), or any of several.
    #[serde(default)]
    kind: Vec<String>,
    /// `denied`: the hook that denied.
    hook: Option<String>,
    /// Fragments of the output (`ok`, `refused`) or of the error message (a denial's
    /// reason and alternatives are in it).
    #[serde(default)]
    contains: Vec<String>,
    /// Fragments that must appear nowhere: not in the output, the error or stderr.
    #[serde(default)]
    absent: Vec<String>,
    /// `ok`/`refused`: the output holds this (tables by their keys, all else equal).
    output: Option<toml::Value>,
    /// `ok`: the output is exactly this.
    output_is: Option<toml::Value>,
    /// The outgoing HTTP requests the sandbox refused, a fragment of each, in order
    /// (checked when given: `[]` says none was).
    http_denials: Option<Vec<String>>,
    /// An upper bound on the call's time (`"2s"`).
    within: Option<String>,
}

#[derive(Deserialize, Clone, Copy, Debug, PartialEq)]
#[serde(rename_all = "kebab-case")]
enum Expect {
    /// The call succeeds.
    Ok,
    /// The call succeeds, and the probe reports the sandbox refused it (`"ok": false`).
    Refused,
    /// The call fails.
    Error,
    /// A hook denies the call.
    Denied,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct After {
    /// `{scratch}` holds the same names, sizes and times as before the calls.
    #[serde(default)]
    unchanged: bool,
    /// Paths (placeholders allowed) that must not exist, not even as a dangling symlink.
    #[serde(default)]
    absent: Vec<String>,
    /// Paths that must exist.
    #[serde(default)]
    present: Vec<String>,
    /// Symlinks that must exist, with these targets as written.
    #[serde(default)]
    links: BTreeMap<String, String>,
    /// The connections `{server}` and `{other}` accepted.
    server_connections: Option<usize>,
    other_connections: Option<usize>,
}

fn main() {
    let args = Arguments::from_args();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cases");
    let mut folders: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("tests/cases")
        .map(|e| e.expect("a readable case folder").path())
        .filter(|p| p.is_dir())
        .collect();
    folders.sort();
    let threats = threat_numbers();
    let trials = folders
        .into_iter()
        .map(|folder| {
            let name = folder.file_name().unwrap().to_string_lossy().into_owned();
            let threats = threats.clone();
            Trial::test(name, move || run(&folder, &threats))
        })
        .collect();
    libtest_mimic::run(&args, trials).exit_if_failed();
}

/// The numbers docs/threats.md lists (`N. ...` at the start of a line).
fn threat_numbers() -> BTreeSet<u32> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/threats.md");
    std::fs::read_to_string(path)
        .expect("docs/threats.md")
        .lines()
        .filter_map(|l| l.split_once(". ")?.0.parse().ok())
        .collect()
}

/// What a case runs in: its directories (side by side in a temporary directory of the
/// case's own, so `{scratch}/..` is too) and servers, for placeholders and checks.
struct Places {
    _root: tempfile::TempDir,
    scratch: PathBuf,
    outside: PathBuf,
    /// Where the case's manifests are written.
    staging: PathBuf,
    server: Option<util::TestServer>,
    other: Option<util::TestServer>,
}

impl Places {
    /// `text` with its placeholders filled in; an unknown one is an error.
    fn fill(&self, text: &str) -> Result<String, String> {
        let mut out = String::new();
        let mut rest = text;
        while let Some(at) = rest.find('{') {
            out.push_str(&rest[..at]);
            let after = &rest[at + 1..];
            let word_end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            if word_end == 0 || !after[word_end..].starts_with('}') {
                out.push('{');
                rest = after;
                continue;
            }
            let word = &after[..word_end];
            let port = |s: &Option<util::TestServer>| s.as_ref().map(|s| s.port.to_string());
            let value = match word {
                "scratch" => Some(self.scratch.display().to_string()),
                "outside" => Some(self.outside.display().to_string()),
                "server" => port(&self.server),
                "other" => port(&self.other),
                constant => util::plugin_named(constant).map(str::to_owned),
            };
            out.push_str(&value.ok_or_else(|| format!("unknown placeholder `{{{word}}}`"))?);
            rest = &after[word_end + 1..];
        }
        out.push_str(rest);
        Ok(out)
    }
}

fn run(folder: &Path, threats: &BTreeSet<u32>) -> Result<(), Failed> {
    let file = folder.join("case.toml");
    let text = std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime
        .block_on(run_case(&text, threats))
        .map_err(|e| Failed::from(format!("{}:\n{e}", folder.display())))
}

async fn run_case(text: &str, threats: &BTreeSet<u32>) -> Result<(), String> {
    let root = tempfile::tempdir().map_err(|e| e.to_string())?;
    let dir = |name: &str| {
        let dir = root.path().canonicalize().map(|r| r.join(name));
        dir.and_then(|d| std::fs::create_dir(&d).map(|()| d))
            .map_err(|e| e.to_string())
    };
    let mut places = Places {
        scratch: dir("scratch")?,
        outside: dir("outside")?,
        staging: dir("staging")?,
        _root: root,
        server: None,
        other: None,
    };
    if text.contains("{server}") {
        places.server = Some(util::TestServer::start().await);
    }
    if text.contains("{other}") {
        places.other = Some(util::TestServer::start().await);
    }
    let case: Case = toml::from_str(&places.fill(text)?).map_err(|e| format!("case.toml: {e}"))?;
    if case.threats.is_empty() || case.scenario.trim().is_empty() {
        return Err("case.toml: `threats` and `scenario` say what the case covers".into());
    }
    if let Some(n) = case.threats.iter().find(|n| !threats.contains(n)) {
        return Err(format!("case.toml: threat {n} is not in docs/threats.md"));
    }
    if case.load_error.is_some() && !case.call.is_empty() {
        return Err("case.toml: a case with `[load_error]` has no calls".into());
    }
    for entry in &case.setup {
        make(&places.scratch, entry)?;
    }
    let mut plugins = vec![util::manifest("echo", util::plugins::TOOL_ECHO)];
    for (i, table) in case.plugin.iter().enumerate() {
        plugins.push(manifest(&places.staging, i, table)?);
    }
    let (mut config, _data) = util::config(plugins);
    if !case.hook.is_empty() {
        config.hooks_explicitly_none = false;
        config.hooks = case.hook.iter().map(hook).collect::<Result<_, _>>()?;
    }
    let host = {
        // One load at a time: the first load of a plugin compiles it into the shared
        // cache, and the trials after it take it from there instead of compiling it
        // again at the same time (a warm load takes milliseconds).
        static LOADS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
        let _one = LOADS.lock().await;
        Host::load(config).await
    };
    let host = match (host, &case.load_error) {
        (Err(err), Some(refusal)) => return refused_load(&err, refusal),
        (Ok(_), Some(_)) => return Err("the host loaded; expected it to refuse".into()),
        (Err(err), None) => return Err(format!("the host failed to load: {err:#}")),
        (Ok(host), None) => host,
    };
    let host = Arc::new(host);
    let sessions = Sessions::new(&host, &case.call)?;
    let before = snapshot(&places.scratch);
    for (i, call) in case.call.iter().enumerate() {
        let input = match (&call.input, &call.raw_input) {
            (Some(_), Some(_)) => {
                return Err(format!("call {i}: `input` or `raw_input`, not both"));
            }
            (Some(table), None) => serde_json::to_string(table).map_err(|e| e.to_string())?,
            (None, Some(raw)) => raw.clone(),
            (None, None) => "{}".into(),
        };
        let start = Instant::now();
        let report = sessions.call(&host, call, &input).await?;
        let took = start.elapsed();
        check_call(call, &report, took).map_err(|e| {
            let role = call
                .role
                .map(|r| format!(" (as {})", r.as_str()))
                .unwrap_or_default();
            format!(
                "call {i}: {}{role} {input}\n  expected: {:?}{}\n  actual: {}\n  {e}",
                call.tool,
                call.expect,
                expected_detail(call),
                actual(&report)
            )
        })?;
    }
    // The host keeps serving (where no hook judges the echo plugin too).
    if case.hook.is_empty() {
        let serving = util::call(&host, "echo.echo", r#"{"message":"still here"}"#).await;
        if !matches!(&serving.outcome, Ok(v) if v["message"] == "still here") {
            return Err(format!("the host stopped serving: {}", actual(&serving)));
        }
    }
    check_after(&case.after, &places, &before)
}

/// The sessions a case's calls run in: one a role, in a store of the case's own.
struct Sessions {
    gateway: Option<(Gateway, BTreeMap<String, String>, tempfile::TempDir)>,
}

impl Sessions {
    fn new(host: &Arc<Host>, calls: &[Call]) -> Result<Sessions, String> {
        let roles: BTreeMap<&str, Role> = calls
            .iter()
            .filter_map(|c| c.role)
            .map(|r| (r.as_str(), r))
            .collect();
        if roles.is_empty() {
            return Ok(Sessions { gateway: None });
        }
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let (_store, durable) = util::durable(dir.path());
        let mut ids = BTreeMap::new();
        for (name, role) in roles {
            ids.insert(
                name.to_string(),
                util::start_session(&durable.sessions, role, "cases", name),
            );
        }
        let gateway = Gateway::new(host.clone(), durable);
        Ok(Sessions {
            gateway: Some((gateway, ids, dir)),
        })
    }

    async fn call(&self, host: &Host, call: &Call, input: &str) -> Result<CallReport, String> {
        let (Some(role), Some((gateway, ids, _))) = (call.role, &self.gateway) else {
            return Ok(host
                .call(&call.tool, input, CallContext::standalone())
                .await);
        };
        let session = &ids[role.as_str()];
        gateway
            .scope(&glovebox::cli_operator())
            .call_in_session(session, &call.tool, input)
            .await
            .map_err(|e| format!("the {} session refused the call: {e}", role.as_str()))
    }
}

/// Makes `entry` in `scratch`.
fn make(scratch: &Path, entry: &Setup) -> Result<(), String> {
    let path = scratch.join(&entry.path);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("setup `{}`: {e}", entry.path))?;
    }
    let made = match (&entry.content, entry.dir, &entry.symlink) {
        (Some(content), false, None) => std::fs::write(&path, content),
        (None, true, None) => std::fs::create_dir_all(&path),
        (None, false, Some(target)) => std::os::unix::fs::symlink(target, &path),
        _ => {
            return Err(format!(
                "setup `{}`: one of `content`, `dir`, `symlink`",
                entry.path
            ));
        }
    };
    made.map_err(|e| format!("setup `{}`: {e}", entry.path))
}

/// Loads plugin `i`'s manifest as the host's loader does, from a file of its own.
fn manifest(staging: &Path, i: usize, table: &toml::Table) -> Result<PluginManifest, String> {
    let path = staging.join(format!("plugin-{i}.toml"));
    let text = toml::to_string(table).map_err(|e| e.to_string())?;
    std::fs::write(&path, text).map_err(|e| e.to_string())?;
    PluginManifest::load(&path, &util::limits()).map_err(|e| format!("[[plugin]] {i}: {e}"))
}

fn hook(hook: &Hook) -> Result<HookConfig, String> {
    let deadline = match &hook.deadline {
        Some(text) => humantime::parse_duration(text).map_err(|e| format!("hook deadline: {e}"))?,
        None => Duration::from_millis(100),
    };
    Ok(HookConfig {
        name: hook.name.clone(),
        component: hook.component.clone().into(),
        sha256: None,
        settings: serde_json::to_value(&hook.settings).map_err(|e| e.to_string())?,
        deadline,
        memory: 16 * 1024 * 1024,
        fuel: None,
        after: false,
        reuse: 1,
        signers: None,
    })
}

fn refused_load(err: &anyhow::Error, refusal: &LoadRefusal) -> Result<(), String> {
    let message = format!("{err:#}");
    if let Some(kind) = &refusal.kind {
        let variant = err
            .downcast_ref::<LoadError>()
            .map(|e| format!("{e:?}"))
            .unwrap_or_default();
        if !variant.starts_with(&format!("{kind} ")) && variant != *kind {
            return Err(format!(
                "expected a load error `{kind}`, got {variant:?}: {message}"
            ));
        }
    }
    missing(&message, &refusal.contains).map_err(|f| format!("{f} in the load error: {message}"))
}

/// The first of `fragments` that `text` lacks.
fn missing(text: &str, fragments: &[String]) -> Result<(), String> {
    match fragments.iter().find(|f| !text.contains(f.as_str())) {
        Some(f) => Err(format!("no `{f}`")),
        None => Ok(()),
    }
}

fn check_call(call: &Call, report: &CallReport, took: Duration) -> Result<(), String> {
    let (text, stderr) = (actual(report), &report.stderr.text);
    if let Some(f) = call
        .absent
        .iter()
        .find(|f| text.contains(f.as_str()) || stderr.contains(f.as_str()))
    {
        return Err(format!("`{f}` must not appear"));
    }
    if let Some(expected) = &call.http_denials {
        let refused = &report.http_denials;
        let each = expected
            .iter()
            .zip(refused)
            .all(|(f, d)| d.contains(f.as_str()));
        if expected.len() != refused.len() || !each {
            return Err(format!("the refused requests were {refused:?}"));
        }
    }
    if let Some(within) = &call.within {
        let bound = humantime::parse_duration(within).map_err(|e| format!("`within`: {e}"))?;
        if took > bound {
            return Err(format!("took {took:?}, more than {within}"));
        }
    }
    match (&report.outcome, call.expect) {
        (Ok(out), Expect::Ok | Expect::Refused) => {
            if call.expect == Expect::Refused && out["ok"] != false {
                return Err("the probe was not refused".into());
            }
            for (expected, exactly) in [(&call.output, false), (&call.output_is, true)] {
                let Some(expected) = expected else { continue };
                let expected = serde_json::to_value(expected).map_err(|e| e.to_string())?;
                if exactly && expected != *out {
                    return Err(format!("the output is not {expected}"));
                }
                if !holds(&expected, out) {
                    return Err(format!("the output does not hold {expected}"));
                }
            }
            missing(&out.to_string(), &call.contains)
        }
        (Err(err), Expect::Error | Expect::Denied) => {
            if !call.kind.is_empty() && !call.kind.iter().any(|k| k == err.kind()) {
                return Err(format!("kind `{}`", err.kind()));
            }
            if call.expect == Expect::Denied {
                let CallError::Denied { hook, .. } = err else {
                    return Err("not denied by a hook".into());
                };
                if call.hook.as_ref().is_some_and(|h| h != hook) {
                    return Err(format!("denied by `{hook}`"));
                }
            }
            missing(&err.to_string(), &call.contains)
        }
        _ => Err("another outcome".into()),
    }
}

/// Whether `actual` holds `expected`: tables by the keys they give, anything else equal.
fn holds(expected: &Value, actual: &Value) -> bool {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) if !e.is_empty() => {
            e.iter().all(|(k, v)| a.get(k).is_some_and(|a| holds(v, a)))
        }
        _ => expected == actual,
    }
}

fn expected_detail(call: &Call) -> String {
    let mut out = String::new();
    for (label, list) in [
        ("kind", &call.kind),
        ("contains", &call.contains),
        ("absent", &call.absent),
    ] {
        if !list.is_empty() {
            let _ = write!(out, ", {label} {list:?}");
        }
    }
    if let Some(refused) = &call.http_denials {
        let _ = write!(out, ", refused requests {refused:?}");
    }
    if let Some(hook) = &call.hook {
        let _ = write!(out, ", by hook `{hook}`");
    }
    if let Some(output) = &call.output {
        let _ = write!(out, ", output holding {output}");
    }
    if let Some(output) = &call.output_is {
        let _ = write!(out, ", output {output}");
    }
    out
}

fn actual(report: &CallReport) -> String {
    match &report.outcome {
        Ok(out) => format!("ok {out}"),
        Err(err) => format!("error `{}`: {err}", err.kind()),
    }
}

fn check_after(after: &After, places: &Places, before: &Snapshot) -> Result<(), String> {
    if after.unchanged && snapshot(&places.scratch) != *before {
        return Err(format!(
            "after the calls: {{scratch}} changed: {before:?} -> {:?}",
            snapshot(&places.scratch)
        ));
    }
    for path in &after.absent {
        if std::fs::symlink_metadata(path).is_ok() {
            return Err(format!("after the calls: `{path}` exists"));
        }
    }
    for path in &after.present {
        if std::fs::symlink_metadata(path).is_err() {
            return Err(format!("after the calls: `{path}` is missing"));
        }
    }
    for (link, target) in &after.links {
        let found = std::fs::read_link(link).map(|t| t.display().to_string());
        if found.as_deref().ok() != Some(target.as_str()) {
            return Err(format!(
                "after the calls: `{link}` -> {found:?}, not `{target}`"
            ));
        }
    }
    for (name, server, expected) in [
        ("{server}", &places.server, after.server_connections),
        ("{other}", &places.other, after.other_connections),
    ] {
        let Some(expected) = expected else { continue };
        let accepted = server.as_ref().map_or(0, |s| s.accepted());
        if accepted != expected {
            return Err(format!(
                "after the calls: {name} accepted {accepted} connections, not {expected}"
            ));
        }
    }
    Ok(())
}

type Snapshot = Vec<(String, u64, std::time::SystemTime)>;

/// Names, sizes and modification times of everything under `dir`.
fn snapshot(dir: &Path) -> Snapshot {
    let mut out = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(next) = dirs.pop() {
        for entry in std::fs::read_dir(&next).into_iter().flatten().flatten() {
            let Ok(meta) = std::fs::symlink_metadata(entry.path()) else {
                continue;
            };
            if meta.is_dir() {
                dirs.push(entry.path());
            }
            let name = entry
                .path()
                .strip_prefix(dir)
                .unwrap()
                .display()
                .to_string();
            out.push((name, meta.len(), meta.modified().unwrap()));
        }
    }
    out.sort();
    out
}
