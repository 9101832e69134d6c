//! `glovebox doctor`: the antipatterns of docs/operators/doctor.md, each found on a config made
//! to have it (the message names the culprit and the fix), none on a clean
//! one, the example config's findings, and the warning (and the log event)
//! when `session_end` leaves background jobs unwaited, over the CLI and MCP.
//! All over the real binary.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::mcp::Server;
use crate::util::{Site, plugins};

/// `glovebox doctor --json`: the exit code and the findings.
fn findings(site: &Site) -> (i32, Vec<Value>) {
    let (code, out, err) = site.run(&["doctor", "--json"]);
    assert!(code == 0 || code == 1, "doctor failed ({code}): {err}");
    let list: Vec<Value> = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    (code, list)
}

/// The findings of `rule`.
fn of<'a>(list: &'a [Value], rule: &str) -> Vec<&'a Value> {
    list.iter().filter(|f| f["rule"] == rule).collect()
}

/// The one finding of `rule` about `culprit`, which must be there.
fn finding<'a>(list: &'a [Value], rule: &str, culprit: &str) -> &'a Value {
    list.iter()
        .find(|f| f["rule"] == rule && f["culprit"]["name"] == culprit)
        .unwrap_or_else(|| panic!("no {rule} finding about `{culprit}` in {list:#?}"))
}

fn digest(file: &str) -> String {
    glovebox::session::digest(&std::fs::read(file).unwrap())
}

/// A manifest for `component`, pinned by its digest.
fn pinned(name: &str, component: &str) -> String {
    format!(
        "name = \"{name}\"\ncomponent = \"{component}\"\nsha256 = \"{}\"\n",
        digest(component)
    )
}

fn start(site: &Site, role: &str, name: Option<&str>, extra: &[&str]) -> String {
    let mut args = vec!["session", "start", "--role", role, "--project", "p"];
    if let Some(name) = name {
        args.extend(["--name", name]);
    }
    args.extend(extra);
    site.json(&args)["id"].as_str().unwrap().to_string()
}

#[test]
fn a_clean_config_has_no_findings() {
    let site = Site::with_config(
        &format!(
            "[budgets.role.workagent]\ncalls = 100\n\
             [[hook]]\nname = \"asks\"\ncomponent = \"{}\"\nsha256 = \"{}\"\n[hook.settings]\nmode = \"ask\"\n",
            plugins::HOOK_DESTRUCTIVE,
            digest(plugins::HOOK_DESTRUCTIVE)
        ),
        &[("echo.toml", pinned("echo", plugins::TOOL_ECHO))],
    );
    start(&site, "workagent", Some("tidy"), &[]);
    let (code, out, err) = site.run(&[
        "call",
        "echo.echo",
        "--session",
        "tidy",
        "--input",
        r#"{"message":"hi"}"#,
    ]);
    assert_eq!(code, 0, "{err}");
    let _ = out;
    let (code, out, err) = site.run(&["doctor"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("no antipatterns found"), "{out}");
    assert_eq!(findings(&site), (0, Vec::new()));
}

#[test]
fn jobs_left_running_at_session_end_are_warned_recorded_and_found() {
    let site = Site::new(false);
    start(&site, "workagent", Some("w"), &[]);
    let job = site.json(&[
        "job",
        "spawn",
        "--session",
        "w",
        "sleep.sleep",
        "--input",
        r#"{"seconds":1}"#,
    ]);
    let job_id = job["id"].as_str().unwrap().to_string();

    // `session end` ends it, and says so: in its result and on stderr.
    let (code, out, err) = site.run(&["session", "end", "w"]);
    assert_eq!(code, 0, "{err}");
    let ended: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(ended["status"], "completed");
    let warning = ended["warning"].as_str().expect("a warning");
    assert!(
        warning.contains(&job_id) && warning.contains("sleep.sleep"),
        "{warning}"
    );
    assert!(err.contains("warning:") && err.contains(&job_id), "{err}");

    // The log records it, and its chain holds.
    let (code, log, err) = site.run(&["log", "show", "w"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        log.contains("jobs_unwaited") && log.contains(&job_id),
        "{log}"
    );
    assert_eq!(site.run(&["log", "verify", "w"]).0, 0);

    let (code, out, _) = site.run(&["doctor"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("[unwaited_jobs]") && out.contains(&job_id),
        "{out}"
    );
    let (code, list) = findings(&site);
    assert_eq!(code, 1);
    let f = finding(&list, "unwaited_jobs", "w");
    assert_eq!(f["severity"], "warning");
    assert!(
        f["message"].as_str().unwrap().contains("session `w`"),
        "{f}"
    );
    assert!(f["fix"].as_str().unwrap().contains("job wait"), "{f}");

    // A session whose jobs were waited for is not reported.
    start(&site, "workagent", Some("patient"), &[]);
    let job = site.json(&[
        "job",
        "spawn",
        "--session",
        "patient",
        "echo.echo",
        "--input",
        r#"{"message":"done"}"#,
    ]);
    let id = job["id"].as_str().unwrap();
    assert_eq!(site.run(&["job", "wait", id]).0, 0);
    let ended = site.json(&["session", "end", "patient"]);
    assert!(ended.get("warning").is_none(), "{ended}");
    let (_, list) = findings(&site);
    assert_eq!(of(&list, "unwaited_jobs").len(), 1, "{list:#?}");
}

#[test]
fn sessions_without_a_name_are_found() {
    let site = Site::with_plugins(&[("echo.toml", pinned("echo", plugins::TOOL_ECHO))]);
    site.set_config("[budgets.role.workagent]\ncalls = 100\n");
    let id = start(&site, "workagent", None, &[]);
    start(&site, "workagent", Some("named"), &[]);
    let (code, list) = findings(&site);
    assert_eq!(code, 1);
    assert_eq!(of(&list, "unnamed_session").len(), 1, "{list:#?}");
    let f = finding(&list, "unnamed_session", &id);
    assert_eq!(f["severity"], "warning");
    assert!(
        f["fix"]
            .as_str()
            .unwrap()
            .contains(&format!("glovebox session name {id}")),
        "{f}"
    );
    // Once ended, only a notice: the exit code no longer fails.
    site.json(&["session", "end", &id]);
    let (code, list) = findings(&site);
    assert_eq!(code, 0, "{list:#?}");
    assert_eq!(finding(&list, "unnamed_session", &id)["severity"], "notice");
}

#[test]
fn a_hook_on_star_that_allows_every_probe_is_found() {
    let site = Site::with_config(
        &format!(
            "[[hook]]\nname = \"allow-all\"\ncomponent = \"{roles}\"\nsha256 = \"{roles_digest}\"\n\
             [hook.settings.roles]\nworkagent = [\"*\"]\n\
             [[hook]]\nname = \"asks\"\ncomponent = \"{destructive}\"\nsha256 = \"{destructive_digest}\"\n\
             [hook.settings]\nmode = \"ask\"\n",
            roles = plugins::HOOK_ROLE_ALLOWLIST,
            roles_digest = digest(plugins::HOOK_ROLE_ALLOWLIST),
            destructive = plugins::HOOK_DESTRUCTIVE,
            destructive_digest = digest(plugins::HOOK_DESTRUCTIVE),
        ),
        &[("echo.toml", pinned("echo", plugins::TOOL_ECHO))],
    );
    let (code, list) = findings(&site);
    assert_eq!(code, 1);
    let hooks = of(&list, "permissive_hook");
    assert_eq!(hooks.len(), 1, "only the hook that allows all: {list:#?}");
    let f = finding(&list, "permissive_hook", "allow-all");
    assert_eq!(f["culprit"]["kind"], "hook");
    let message = f["message"].as_str().unwrap();
    assert!(
        message.contains("hook `allow-all`") && message.contains("`*`"),
        "{message}"
    );
    assert!(
        f["fix"].as_str().unwrap().contains("narrow its triggers"),
        "{f}"
    );
}

#[test]
fn roles_without_budgets_are_found() {
    let site = Site::with_config(
        "[budgets.role.workagent]\ncalls = 100\n",
        &[("echo.toml", pinned("echo", plugins::TOOL_ECHO))],
    );
    start(&site, "workagent", Some("capped-by-role"), &[]);
    start(
        &site,
        "orchestrator",
        Some("capped-itself"),
        &["--budget-calls", "5"],
    );
    start(&site, "supervisor", Some("sup"), &[]);
    let (code, list) = findings(&site);
    assert_eq!(code, 1);
    assert_eq!(of(&list, "role_without_budget").len(), 1, "{list:#?}");
    let f = finding(&list, "role_without_budget", "supervisor");
    assert!(f["message"].as_str().unwrap().contains("`sup`"), "{f}");
    assert!(
        f["fix"]
            .as_str()
            .unwrap()
            .contains("[budgets.role.supervisor]"),
        "{f}"
    );

    // An agent principal that may act as an orchestrator uses that role.
    let (code, _, err) = site.run(&[
        "principal",
        "add",
        "planner",
        "--kind",
        "agent",
        "--roles",
        "orchestrator,workagent",
        "--projects",
        "*",
    ]);
    assert_eq!(code, 0, "{err}");
    let (_, list) = findings(&site);
    assert_eq!(of(&list, "role_without_budget").len(), 2, "{list:#?}");
    let f = finding(&list, "role_without_budget", "orchestrator");
    let message = f["message"].as_str().unwrap();
    assert!(
        message.contains("principals `planner`") && !message.contains("capped-itself"),
        "{message}"
    );
}

#[test]
fn long_sessions_without_a_handoff_are_found() {
    let site = Site::with_config(
        "[detector]\nhandoff_after_events = 3\n[budgets.role.workagent]\ncalls = 100\n",
        &[("echo.toml", pinned("echo", plugins::TOOL_ECHO))],
    );
    start(&site, "workagent", Some("long"), &[]);
    let (code, _, err) = site.run(&[
        "call",
        "echo.echo",
        "--session",
        "long",
        "--input",
        r#"{"message":"1"}"#,
    ]);
    assert_eq!(code, 0, "{err}");
    let (code, list) = findings(&site);
    assert_eq!(code, 1);
    let f = finding(&list, "no_handoff", "long");
    assert!(
        f["message"]
            .as_str()
            .unwrap()
            .contains("handoff_after_events"),
        "{f}"
    );
    assert!(
        f["fix"].as_str().unwrap().contains("session handoff long"),
        "{f}"
    );

    site.json(&[
        "session",
        "handoff",
        "long",
        "--kind",
        "continuation",
        "--objective",
        "carry on",
    ]);
    let (code, list) = findings(&site);
    assert_eq!((code, of(&list, "no_handoff").len()), (0, 0), "{list:#?}");
}

#[test]
fn plugins_and_hooks_without_a_digest_pin_are_found() {
    let site = Site::with_config(
        &format!(
            "[[hook]]\nname = \"asks\"\ncomponent = \"{}\"\n[hook.settings]\nmode = \"ask\"\n",
            plugins::HOOK_DESTRUCTIVE
        ),
        &[(
            "echo.toml",
            format!("name = \"echo\"\ncomponent = \"{}\"\n", plugins::TOOL_ECHO),
        )],
    );
    let (code, out, _) = site.run(&["doctor"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("warning: plugin `echo`"), "{out}");
    let (_, list) = findings(&site);
    let f = finding(&list, "unpinned_digest", "echo");
    assert_eq!(f["culprit"]["kind"], "plugin");
    assert!(
        f["culprit"]["file"]
            .as_str()
            .unwrap()
            .ends_with("echo.toml"),
        "{f}"
    );
    let fix = f["fix"].as_str().unwrap();
    assert!(
        fix.contains(&format!("sha256 = \"{}\"", digest(plugins::TOOL_ECHO))),
        "{fix}"
    );
    let f = finding(&list, "unpinned_digest", "asks");
    assert_eq!(f["culprit"]["kind"], "hook");
    assert!(
        f["fix"]
            .as_str()
            .unwrap()
            .contains(&digest(plugins::HOOK_DESTRUCTIVE)),
        "{f}"
    );
}

#[test]
fn a_read_write_directory_shared_by_plugins_is_found() {
    let grant = |name: &str, host: &str, access: &str| {
        format!(
            "{}[[fs]]\nhost = \"{host}\"\nguest = \"/data\"\naccess = \"{access}\"\n",
            pinned(name, plugins::TOOL_FILES)
        )
    };
    let site = Site::with_plugins(&[
        ("files-a.toml", grant("files-a", "shared", "read-write")),
        // The same directory by another path, one level down.
        ("files-b.toml", grant("files-b", "link/inner", "read-write")),
        // Reading it is not writing it.
        ("files-c.toml", grant("files-c", "shared", "read-only")),
        ("files-d.toml", grant("files-d", "own", "read-write")),
    ]);
    std::fs::create_dir_all(site.path().join("shared/inner")).unwrap();
    std::fs::create_dir_all(site.path().join("own")).unwrap();
    std::os::unix::fs::symlink(site.path().join("shared"), site.path().join("link")).unwrap();
    let (code, list) = findings(&site);
    assert_eq!(code, 1);
    let shared = of(&list, "shared_writable_dir");
    assert_eq!(shared.len(), 1, "{list:#?}");
    let f = shared[0];
    let dir = std::fs::canonicalize(site.path().join("shared")).unwrap();
    assert_eq!(f["culprit"]["name"], dir.display().to_string());
    let message = f["message"].as_str().unwrap();
    assert!(
        message.contains("`files-a`") && message.contains("`files-b`"),
        "{message}"
    );
    assert!(
        !message.contains("files-c") && !message.contains("files-d"),
        "{message}"
    );
    assert!(
        f["fix"]
            .as_str()
            .unwrap()
            .contains("its own writable directory"),
        "{f}"
    );
}

/// The example config, in a temp dir of its own (its data dir and the
/// tests' compile cache), with its paths made absolute.
fn example_config(dir: &Path) -> PathBuf {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let text = std::fs::read_to_string(examples.join("glovebox.toml")).unwrap();
    let text = text
        .replace(
            "data_dir = \".glovebox-data\"",
            &format!("data_dir = \"{}\"", dir.join("data").display()),
        )
        .replace(
            "[runtime]\n",
            &format!("[runtime]\n{}\n", crate::util::cache_keys()),
        )
        .replace(
            "manifest = \"plugins/",
            &format!("manifest = \"{}/plugins/", examples.display()),
        )
        .replace(
            "component = \"../plugins/",
            &format!("component = \"{}/../plugins/", examples.display()),
        );
    let path = dir.join("glovebox.toml");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn doctor_on_the_example_config_prints_its_findings() {
    let dir = tempfile::tempdir().unwrap();
    let config = example_config(dir.path());
    let out = crate::util::glovebox()
        .arg("--config")
        .arg(&config)
        .arg("doctor")
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    // Its plugins and hooks are built here, so none is pinned.
    for culprit in ["plugin `echo`", "plugin `files`", "hook `roles`"] {
        assert!(stdout.contains(&format!("warning: {culprit}")), "{stdout}");
    }
    assert!(stdout.contains("fix: pin the component"), "{stdout}");
    // Its hooks judge: none allows everything.
    assert!(!stdout.contains("[permissive_hook]"), "{stdout}");
    assert!(stdout.contains(" warnings, "), "{stdout}");
}

#[test]
fn doctor_and_session_end_work_while_serving() {
    let site = Site::new(false);
    let mut server = Server::initialized(&site.config(), &[]);
    let socket = site.path().join("data/control.sock");
    let start = std::time::Instant::now();
    while !socket.exists() {
        assert!(start.elapsed().as_secs() < 60, "no control socket");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let answer = server.call(
        1,
        "session_start",
        json!({"role": "workagent", "project": "p", "name": "mcp-w"}),
    );
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    let answer = server.call(
        2,
        "job_spawn",
        json!({"tool": "sleep.sleep", "input": {"seconds": 30}}),
    );
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    let job_id = answer["result"]["structuredContent"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    // A job that finished, whose result nobody read, was not waited for either.
    let answer = server.call(
        4,
        "job_spawn",
        json!({"tool": "echo.echo", "input": {"message": "unread"}}),
    );
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    let unread = answer["result"]["structuredContent"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let start = std::time::Instant::now();
    loop {
        // `job list` shows the status without reading the result.
        let list = site.json(&["job", "list", "--session", "mcp-w"]);
        let done = list
            .as_array()
            .unwrap()
            .iter()
            .any(|j| j["id"] == unread.as_str() && j["status"] == "completed");
        if done {
            break;
        }
        assert!(
            start.elapsed().as_secs() < 60,
            "the echo job never ran: {list}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let answer = server.call(3, "session_end", json!({}));
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    let warning = answer["result"]["structuredContent"]["warning"]
        .as_str()
        .unwrap_or_else(|| panic!("a warning: {answer}"));
    assert!(warning.contains(&job_id), "{warning}");
    assert!(
        warning.contains(&format!("{unread} (echo.echo, completed)")),
        "{warning}"
    );

    // The running server holds the store: doctor runs inside it.
    let (code, out, err) = site.run(&["doctor"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("[unwaited_jobs]") && out.contains(&job_id),
        "{out}"
    );
    assert!(out.contains("session `mcp-w`"), "{out}");
    drop(server);
}

/// The dashboard's Doctor page shows what `glovebox doctor` finds in the
/// running server's data dir: the same findings, each with its culprit
/// and fix (here an unnamed session and a plugin without a digest pin).
#[test]
fn the_dashboard_doctor_page_shows_the_same_findings_as_the_command() {
    use crate::dashboard::{http, serve};
    let site = Site::with_plugins(&[(
        "echo.toml",
        format!("name = \"echo\"\ncomponent = \"{}\"\n", plugins::TOOL_ECHO),
    )]);
    site.set_config("[budgets.role.workagent]\ncalls = 100\n");
    let id = start(&site, "workagent", None, &[]);
    let served = serve(&site);
    // Through the server's control socket: the same data dir, read live.
    let (_, list) = findings(&site);
    assert!(!of(&list, "unnamed_session").is_empty(), "{list:#?}");
    assert!(!of(&list, "unpinned_digest").is_empty(), "{list:#?}");
    let page = http(&served.admin, "GET", "/ui/doctor", &[], "");
    assert_eq!(page.status, 200, "{}", page.body);
    assert_eq!(
        page.body.matches("<tr class=\"finding ").count(),
        list.len(),
        "{}",
        page.body
    );
    assert!(
        page.body.contains(&format!("/ui/sessions/{id}")),
        "{}",
        page.body
    );
    for f in &list {
        let fix = f["fix"].as_str().unwrap();
        let shown = fix
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', "&quot;")
            .replace('\'', "&#39;");
        assert!(
            page.body.contains(&shown),
            "fix not shown: {fix}\n{}",
            page.body
        );
    }
}
