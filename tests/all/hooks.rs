//! Permission hooks: the shipped hooks' allow, deny and ask paths, approvals,
//! policy replay, and docs/threats.md "Permission hooks" (3, 19-23) with real
//! hostile hook plugins.

use std::time::Duration;

use glovebox::hooks::{DecisionKind, HookStatus};
use glovebox::manifest::{Access, HookConfig, ToolOverride};
use glovebox::session::{EventKind, Role, SessionStatus};
use glovebox::{CallError, Durable, Gateway, Host, PluginManifest};
use serde_json::{Value, json};
use std::sync::Arc;

use crate::util::durable;
use crate::util::{self, fs_grant, manifest, plugins};

fn hook(name: &str, component: &str, settings: Value) -> HookConfig {
    HookConfig {
        name: name.to_string(),
        component: component.into(),
        sha256: None,
        settings,
        deadline: Duration::from_millis(100),
        memory: 16 * 1024 * 1024,
        fuel: None,
        after: false,
        reuse: 1,
        signers: None,
    }
}

/// echo with a cost model, and files granted a temp dir.
fn tools(workspace: &std::path::Path) -> Vec<PluginManifest> {
    let mut echo = manifest("echo", plugins::TOOL_ECHO);
    echo.tools.insert(
        "echo".into(),
        ToolOverride {
            cost: Some(12.5),
            ..Default::default()
        },
    );
    let mut files = manifest("files", plugins::TOOL_FILES);
    files
        .fs
        .push(fs_grant(workspace, "/data", Access::ReadWrite));
    vec![echo, files]
}

/// A logged decision: hook, pattern, decision, reason, alternatives.
type Decided = (String, String, String, Option<String>, Vec<String>);

struct Setup {
    host: Arc<Host>,
    durable: Arc<Durable>,
    gw: Gateway,
    workspace: tempfile::TempDir,
    _data: tempfile::TempDir,
    _store: std::sync::Arc<glovebox::storage::SledStore>,
}

async fn setup(hooks: Vec<HookConfig>) -> Setup {
    let workspace = tempfile::tempdir().unwrap();
    let (mut config, data) = util::config(tools(workspace.path()));
    config.hooks_explicitly_none = hooks.is_empty();
    config.hooks = hooks;
    let host = Arc::new(Host::load(config).await.unwrap());
    let (store, durable) = durable(&data.path().join("store"));
    Setup {
        gw: Gateway::new(host.clone(), durable.clone()),
        host,
        durable,
        workspace,
        _data: data,
        _store: store,
    }
}

impl Setup {
    fn session(&self, name: &str, role: Role) -> String {
        util::start_session(&self.durable.sessions, role, "hooks", name)
    }

    async fn call(&self, session: &str, tool: &str, input: Value) -> Result<Value, CallError> {
        let report = self
            .gw
            .scope(&glovebox::cli_operator())
            .call_in_session(session, tool, &input.to_string())
            .await
            .expect("the session accepts the call");
        report.outcome
    }

    /// The `call_decided` events of `session`.
    fn decided(&self, session: &str) -> Vec<Decided> {
        self.durable
            .sessions
            .events(session, 1, usize::MAX)
            .unwrap()
            .into_iter()
            .filter_map(|e| match e.kind {
                EventKind::CallDecided {
                    hook,
                    pattern,
                    decision,
                    reason,
                    alternatives,
                    ..
                } => Some((hook, pattern, decision, reason, alternatives)),
                _ => None,
            })
            .collect()
    }
}

fn cost_control() -> HookConfig {
    hook("cost", plugins::HOOK_COST_CONTROL, json!({}))
}

fn destructive(mode: &str) -> HookConfig {
    hook(
        "destructive",
        plugins::HOOK_DESTRUCTIVE,
        json!({ "mode": mode }),
    )
}

fn role_allowlist() -> HookConfig {
    hook(
        "roles",
        plugins::HOOK_ROLE_ALLOWLIST,
        json!({"roles": {
            "orchestrator": ["*"],
            "supervisor": ["files.*", "echo.*"],
            "workagent": ["echo.*", "files.read", "files.list"]
        }}),
    )
}

fn denial(err: CallError) -> (String, String, Vec<String>) {
    match err {
        CallError::Denied {
            hook,
            reason,
            alternatives,
            ..
        } => (hook, reason, alternatives),
        other => panic!("expected a denial, got {other}"),
    }
}

#[tokio::test]
async fn cost_control_denies_over_the_role_threshold_with_alternatives() {
    let s = setup(vec![cost_control()]).await;
    let worker = s.session("worker", Role::Workagent);
    let (hook, reason, alternatives) = denial(
        s.call(&worker, "echo.echo", json!({"message": "pricey"}))
            .await
            .unwrap_err(),
    );
    assert_eq!(hook, "cost");
    assert!(
        reason.contains("12.50") && reason.contains("5.00"),
        "{reason}"
    );
    assert!(alternatives.len() >= 3, "{alternatives:?}");
    let all = alternatives.join(" ").to_lowercase();
    assert!(
        all.contains("split") && all.contains("escalat"),
        "{alternatives:?}"
    );
    // A supervisor's threshold (25.00) lets the same call through.
    let lead = s.session("lead", Role::Supervisor);
    assert_eq!(
        s.call(&lead, "echo.echo", json!({"message": "ok"}))
            .await
            .unwrap()["message"],
        "ok"
    );
    // Every decision is an event in the session log, with its details.
    let d = s.decided(&worker);
    assert_eq!(d.len(), 1);
    assert_eq!(
        (d[0].0.as_str(), d[0].1.as_str(), d[0].2.as_str()),
        ("cost", "*", "deny")
    );
    assert_eq!(d[0].4, alternatives);
    assert_eq!(s.decided(&lead)[0].2, "allow");
}

#[tokio::test]
async fn destructive_calls_wait_for_a_human_and_run_once_approved() {
    let s = setup(vec![destructive("ask")]).await;
    let id = s.session("writer", Role::Supervisor);
    let err = s
        .call(
            &id,
            "files.write",
            json!({"path": "/data/out.txt", "content": "approved text"}),
        )
        .await
        .unwrap_err();
    let CallError::AwaitingApproval {
        approval_id, hook, ..
    } = err
    else {
        panic!("{err}")
    };
    assert_eq!(hook, "destructive");
    assert!(
        !s.workspace.path().join("out.txt").exists(),
        "nothing ran yet"
    );
    assert_eq!(
        s.durable.sessions.show(&id).unwrap().header.status,
        SessionStatus::Paused
    );
    let pending = s
        .durable
        .approvals
        .page(false, &Default::default())
        .unwrap()
        .items;
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].id, approval_id);

    let report =
        s.gw.scope(&glovebox::cli_operator())
            .approvals()
            .approve(&approval_id)
            .await
            .unwrap();
    assert_eq!(report.outcome.unwrap()["written"], 13);
    assert_eq!(
        std::fs::read_to_string(s.workspace.path().join("out.txt")).unwrap(),
        "approved text"
    );
    assert_eq!(
        s.durable.sessions.show(&id).unwrap().header.status,
        SessionStatus::Active
    );
    assert!(
        s.durable
            .approvals
            .page(false, &Default::default())
            .unwrap()
            .items
            .is_empty()
    );
    // An approval runs its call once.
    assert!(
        s.gw.scope(&glovebox::cli_operator())
            .approvals()
            .approve(&approval_id)
            .await
            .is_err()
    );
    // Non-destructive calls pass; `force` on any call needs a human too.
    s.call(&id, "files.read", json!({"path": "/data/out.txt"}))
        .await
        .unwrap();
    let err = s
        .call(&id, "echo.echo", json!({"force": true}))
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::AwaitingApproval { .. }), "{err}");
}

#[tokio::test]
async fn a_denied_approval_fails_the_call_and_resumes_the_session() {
    let s = setup(vec![destructive("ask")]).await;
    let id = s.session("writer", Role::Supervisor);
    let err = s
        .call(
            &id,
            "files.write",
            json!({"path": "/data/x.txt", "content": "no"}),
        )
        .await
        .unwrap_err();
    let CallError::AwaitingApproval { approval_id, .. } = err else {
        panic!("{err}")
    };
    s.gw.scope(&glovebox::cli_operator())
        .approvals()
        .deny(&approval_id, "not today")
        .await
        .unwrap();
    assert!(!s.workspace.path().join("x.txt").exists());
    assert_eq!(
        s.durable.sessions.show(&id).unwrap().header.status,
        SessionStatus::Active
    );
    assert!(
        s.gw.scope(&glovebox::cli_operator())
            .approvals()
            .approve(&approval_id)
            .await
            .is_err(),
        "a denied approval cannot run"
    );
}

// Threat 20: deny wins; the first deny stops the chain; order is the config's.
#[tokio::test]
async fn deny_wins_and_the_first_deny_stops_the_chain() {
    let s = setup(vec![
        destructive("ask"),
        cost_control(),
        hook("trap", plugins::HOSTILE_HOOK_TRAP, json!({})),
    ])
    .await;
    let id = s.session("mixed", Role::Workagent);
    // echo with force: destructive asks, cost denies (12.50 > 5.00): deny wins,
    // and the trapping hook after it never runs.
    let (hook, _, _) = denial(
        s.call(&id, "echo.echo", json!({"force": true}))
            .await
            .unwrap_err(),
    );
    assert_eq!(hook, "cost");
    let d = s.decided(&id);
    let order: Vec<(&str, &str)> = d.iter().map(|x| (x.0.as_str(), x.2.as_str())).collect();
    assert_eq!(order, [("destructive", "ask"), ("cost", "deny")]);
    assert!(
        s.durable
            .approvals
            .page(false, &Default::default())
            .unwrap()
            .items
            .is_empty(),
        "a denied call asks no one"
    );
}

// Threat 21: a hook that imports the filesystem is refused at load, naming the import
// (that every call is then denied is `tests/cases/hook-importing-the-filesystem-denies`;
// the other hostile hooks of threats 3 and 19 are case folders too).
#[tokio::test]
async fn a_hook_importing_the_filesystem_is_refused_at_load() {
    let s = setup(vec![hook(
        "nosy",
        plugins::HOSTILE_HOOK_FS_IMPORT,
        json!({}),
    )])
    .await;
    let info = s.host.hooks().hooks();
    let HookStatus::Broken(reason) = &info[0].status else {
        panic!("loaded: {:?}", info[0].status)
    };
    assert!(reason.contains("wasi:filesystem"), "{reason}");
}

#[tokio::test]
async fn the_shipped_hooks_import_nothing_but_clocks_and_random() {
    let s = setup(vec![cost_control(), destructive("ask"), role_allowlist()]).await;
    for h in s.host.hooks().hooks() {
        assert!(
            matches!(h.status, HookStatus::Ready),
            "{}: {:?}",
            h.name,
            h.status
        );
        assert_eq!(h.triggers, ["*"]);
    }
}

// `after` is told the outcome; its failure is logged and changes nothing.
#[tokio::test]
async fn a_failing_after_changes_nothing() {
    let mut slow = hook("after", plugins::HOSTILE_HOOK_SLOW_AFTER, json!({}));
    slow.after = true;
    let s = setup(vec![slow]).await;
    let id = s.session("calm", Role::Workagent);
    assert_eq!(
        s.call(&id, "echo.echo", json!({"message": "fine"}))
            .await
            .unwrap()["message"],
        "fine"
    );
    assert_eq!(
        s.call(&id, "echo.echo", json!({"message": "again"}))
            .await
            .unwrap()["message"],
        "again"
    );
}

// Threat 22: a decision applies only to the exact call it judged.
#[tokio::test]
async fn an_approval_applies_only_to_the_call_and_build_it_judged() {
    let s = setup(vec![destructive("ask")]).await;
    let id = s.session("writer", Role::Supervisor);
    let err = s
        .call(
            &id,
            "files.write",
            json!({"path": "/data/a.txt", "content": "judged"}),
        )
        .await
        .unwrap_err();
    let CallError::AwaitingApproval { approval_id, .. } = err else {
        panic!("{err}")
    };
    // The same plugin name with another build of the component: a custom
    // section appended changes its digest but not its tools.
    let dir = tempfile::tempdir().unwrap();
    let rebuilt = dir.path().join("tool_files.wasm");
    let mut bytes = std::fs::read(plugins::TOOL_FILES).unwrap();
    bytes.extend_from_slice(&[0x00, 0x06, 0x05, b'e', b'x', b't', b'r', b'a']);
    std::fs::write(&rebuilt, bytes).unwrap();
    let mut tools = tools(s.workspace.path());
    tools[1].component = rebuilt;
    let (mut config, _data) = util::config(tools);
    config.hooks = vec![destructive("ask")];
    config.hooks_explicitly_none = false;
    let other = Host::load(config).await.unwrap();
    let other = Gateway::new(Arc::new(other), s.durable.clone());
    let err = other
        .scope(&glovebox::cli_operator())
        .approvals()
        .approve(&approval_id)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("component changed"), "{err}");
    assert!(!s.workspace.path().join("a.txt").exists());
    // The original build still runs it, with the judged input only.
    s.gw.scope(&glovebox::cli_operator())
        .approvals()
        .approve(&approval_id)
        .await
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(s.workspace.path().join("a.txt")).unwrap(),
        "judged"
    );
}

#[tokio::test]
async fn policy_replay_reports_changed_decisions_and_runs_nothing() {
    // Record a session under a chain that allows everything it judges...
    let s = setup(vec![role_allowlist()]).await;
    let id = s.session("recorded", Role::Workagent);
    s.call(&id, "echo.echo", json!({"message": "one"}))
        .await
        .unwrap();
    s.call(&id, "files.list", json!({"path": "/data"}))
        .await
        .unwrap();
    let events_before = s.durable.sessions.events(&id, 1, usize::MAX).unwrap().len();
    // ...then replay it under cost control: echo (12.50) would be denied.
    let workspace = tempfile::tempdir().unwrap();
    let (mut config, _data) = util::config(tools(workspace.path()));
    config.hooks = vec![cost_control()];
    config.hooks_explicitly_none = false;
    let strict = Host::load(config).await.unwrap();
    let report = glovebox::replay::replay(&strict, &s.durable.sessions, "recorded")
        .await
        .unwrap();
    assert_eq!(report.calls, 2);
    assert_eq!(report.changes.len(), 1, "{:?}", report.changes);
    let change = &report.changes[0];
    assert_eq!(
        (
            change.tool.as_str(),
            change.recorded.as_str(),
            change.replayed.as_str()
        ),
        ("echo.echo", "allow", "deny")
    );
    assert_eq!(change.hook.as_deref(), Some("cost"));
    assert_eq!(
        s.durable.sessions.events(&id, 1, usize::MAX).unwrap().len(),
        events_before,
        "nothing executed"
    );
}

#[test]
fn no_hooks_must_be_an_explicit_choice() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("echo.toml"),
        format!("name = \"echo\"\ncomponent = \"{}\"\n", plugins::TOOL_ECHO),
    )
    .unwrap();
    let config = dir.path().join("glovebox.toml");
    std::fs::write(&config, "[[plugin]]\nmanifest = \"echo.toml\"\n").unwrap();
    let err = glovebox::HostConfig::load(&config).unwrap_err().to_string();
    assert!(
        err.contains("hooks = \"none\"") && err.contains("[[hook]]"),
        "{err}"
    );
    std::fs::write(
        &config,
        "hooks = \"none\"\n[[plugin]]\nmanifest = \"echo.toml\"\n",
    )
    .unwrap();
    assert!(
        glovebox::HostConfig::load(&config)
            .unwrap()
            .hooks
            .is_empty()
    );
}

#[tokio::test]
async fn decisions_carry_their_time() {
    let s = setup(vec![cost_control(), destructive("ask"), role_allowlist()]).await;
    let id = s.session("timed", Role::Supervisor);
    let report =
        s.gw.scope(&glovebox::cli_operator())
            .call_in_session(&id, "files.list", &json!({"path": "/data"}).to_string())
            .await
            .unwrap();
    assert!(report.outcome.is_ok());
    let events = s.durable.sessions.events(&id, 1, usize::MAX).unwrap();
    let decided: Vec<_> = events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::CallDecided { .. }))
        .collect();
    assert_eq!(decided.len(), 3);
    let request = glovebox::hooks::HookRequest {
        call_id: "c".into(),
        tool: "files.list".into(),
        action: "read:file:list".into(),
        role: "supervisor".into(),
        session: id.clone(),
        input: "{}".into(),
        estimated_cost: 0.0,
        destructive: false,
        tags: vec![],
        principal: String::new(),
        project: None,
        http: None,
    };
    let outcome = s.host.hooks().evaluate(&request).await;
    assert!(
        outcome
            .decisions
            .iter()
            .all(|d| d.decision == DecisionKind::Allow)
    );
    assert!(outcome.decisions.iter().all(|d| d.took > Duration::ZERO));
}

/// What the state-keeping hook says of a call by `principal`: its deny reason.
async fn state_reason(s: &Setup, principal: &str) -> String {
    let request = glovebox::hooks::HookRequest {
        call_id: "c".into(),
        tool: "echo.echo".into(),
        action: "execute:echo".into(),
        role: "workagent".into(),
        session: "s-1".into(),
        input: "{}".into(),
        estimated_cost: 0.0,
        destructive: false,
        tags: vec![],
        principal: principal.into(),
        project: None,
        http: None,
    };
    let outcome = s.host.hooks().evaluate(&request).await;
    assert_eq!(outcome.decisions.len(), 1, "{outcome:?}");
    outcome.decisions[0].reason.clone().unwrap_or_default()
}

#[tokio::test]
async fn a_reused_hook_instance_serves_one_principal_and_is_dropped_after_its_evaluations() {
    let first = "evaluation 1 of this instance; principals judged before: none";
    let mut state = hook("state", plugins::HOSTILE_HOOK_STATE, json!({}));
    state.reuse = 3;
    let s = setup(vec![state]).await;
    assert_eq!(state_reason(&s, "alice").await, first);
    assert_eq!(
        state_reason(&s, "alice").await,
        "evaluation 2 of this instance; principals judged before: `alice`"
    );
    // Another principal never meets what alice's calls left in an instance.
    assert_eq!(state_reason(&s, "bob").await, first);
    assert_eq!(
        state_reason(&s, "bob").await,
        "evaluation 2 of this instance; principals judged before: `bob`"
    );
    assert_eq!(
        state_reason(&s, "alice").await,
        "evaluation 3 of this instance; principals judged before: `alice`"
    );
    // Three evaluations served: the next one is a fresh instance's.
    assert_eq!(state_reason(&s, "alice").await, first);

    // The default: a fresh instance for every evaluation.
    let s = setup(vec![hook("state", plugins::HOSTILE_HOOK_STATE, json!({}))]).await;
    for principal in ["alice", "alice", "bob"] {
        assert_eq!(state_reason(&s, principal).await, first);
    }
}

// A pending approval survives a host restart: each command below is a new
// process of the real binary.
#[test]
fn approval_through_the_cli_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    std::fs::create_dir(p.join("work")).unwrap();
    std::fs::write(
        p.join("glovebox.toml"),
        format!(
            "data_dir = \"data\"\n[runtime]\n{}\n[[plugin]]\nmanifest = \"files.toml\"\n\
             [[hook]]\nname = \"destructive\"\ncomponent = \"{}\"\n[hook.settings]\nmode = \"ask\"\n",
            crate::util::cache_keys(),
            plugins::HOOK_DESTRUCTIVE
        ),
    )
    .unwrap();
    std::fs::write(
        p.join("files.toml"),
        format!(
            "name = \"files\"\ncomponent = \"{}\"\n[[fs]]\nhost = \"work\"\nguest = \"/data\"\naccess = \"read-write\"\n",
            plugins::TOOL_FILES
        ),
    )
    .unwrap();
    let run = |args: &[&str]| {
        util::outcome(
            util::glovebox()
                .arg("--config")
                .arg(p.join("glovebox.toml"))
                .args(args),
        )
    };
    let (code, _, err) = run(&[
        "session",
        "start",
        "--role",
        "supervisor",
        "--project",
        "p",
        "--name",
        "ed",
    ]);
    assert_eq!(code, 0, "{err}");
    let input = r#"{"path":"/data/notes.txt","content":"approved"}"#;
    let (code, _, err) = run(&["call", "--session", "ed", "files.write", "--input", input]);
    assert_eq!(code, 9, "awaits approval: {err}");
    assert!(err.contains("glovebox approve ap-"), "{err}");
    assert!(!p.join("work/notes.txt").exists());

    let (code, out, err) = run(&["approvals", "--json"]);
    assert_eq!(code, 0, "{err}");
    let pending: Value = serde_json::from_str(&out).unwrap();
    let id = pending[0]["id"].as_str().unwrap().to_string();
    assert_eq!(pending[0]["tool"], "files.write");
    assert_eq!(pending[0]["input"], input);
    let (_, show, _) = run(&["session", "show", "ed"]);
    assert!(show.contains("\"paused\""), "{show}");

    let (code, out, err) = run(&["approve", &id]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\"written\": 8"), "{out}");
    assert_eq!(
        std::fs::read_to_string(p.join("work/notes.txt")).unwrap(),
        "approved"
    );
    let (_, show, _) = run(&["session", "show", "ed"]);
    assert!(show.contains("\"active\""), "{show}");
    let (code, out, _) = run(&["approvals"]);
    assert_eq!(code, 0);
    assert!(out.contains("no pending approvals"), "{out}");

    // Policy replay from the CLI: nothing changes under the same chain.
    let (code, out, err) = run(&["policy", "replay", "--session", "ed"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("0 decisions would change"), "{out}");
}

/// `glovebox hook test` dry-runs one decision of a hook as a host loads it,
/// and `plugin check` accepts a hook component, through the real binary.
#[test]
fn hook_authors_dry_run_a_decision_and_check_a_hook_component() {
    // No config: the compile cache goes under a HOME of the test's own.
    let home = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        util::outcome(
            util::glovebox()
                .arg("--config")
                .arg("/nonexistent/glovebox.toml")
                .args(args)
                .env("HOME", home.path())
                .env_remove("XDG_CACHE_HOME"),
        )
    };
    let roles = r#"{"roles":{"workagent":["echo.*"]}}"#;
    // Allowed: exit 0, the decision and its time.
    let (code, out, err) = run(&[
        "hook",
        "test",
        plugins::HOOK_ROLE_ALLOWLIST,
        "--settings",
        roles,
        "--request",
        r#"{"action":"read:echo","tool":"echo.echo","role":"workagent"}"#,
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("allow in"), "{out}");
    // Denied: exit 3, with the reason and the alternatives the hook gives.
    let (code, out, err) = run(&[
        "hook",
        "test",
        plugins::HOOK_ROLE_ALLOWLIST,
        "--settings",
        roles,
        "--request",
        r#"{"action":"write:files","tool":"files.write","role":"workagent"}"#,
    ]);
    assert_eq!(code, 3, "{out}{err}");
    assert!(
        out.contains("deny in") && out.contains("reason: role workagent may not use files.write"),
        "{out}"
    );
    assert!(out.contains("instead: "), "{out}");
    // Asked: exit 9, as `glovebox call` ends for a call awaiting approval.
    let (code, out, _) = run(&[
        "hook",
        "test",
        plugins::HOOK_DESTRUCTIVE,
        "--settings",
        r#"{"mode":"ask"}"#,
        "--request",
        r#"{"action":"write:files","destructive":true}"#,
    ]);
    assert_eq!(code, 9, "{out}");
    // As JSON: the decision as a host logs it.
    let (code, out, _) = run(&[
        "hook",
        "test",
        plugins::HOOK_DESTRUCTIVE,
        "--json",
        "--request",
        r#"{"action":"read:files","destructive":false}"#,
    ]);
    assert_eq!(code, 0, "{out}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["consulted"], true);
    assert_eq!(v["decision"]["decision"], "allow", "{v}");
    // A request without an action, settings that are not an object, and a
    // tool component given as a hook: each a clear error, exit 2.
    let (code, _, err) = run(&["hook", "test", plugins::HOOK_DESTRUCTIVE, "--request", "{}"]);
    assert_eq!(code, 2);
    assert!(err.contains("missing field `action`"), "{err}");
    let (code, _, err) = run(&[
        "hook",
        "test",
        plugins::HOOK_DESTRUCTIVE,
        "--settings",
        "[1]",
        "--request",
        r#"{"action":"a"}"#,
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("`--settings` must be a JSON object"), "{err}");
    let (code, _, err) = run(&[
        "hook",
        "test",
        plugins::TOOL_ECHO,
        "--request",
        r#"{"action":"a"}"#,
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("cannot be loaded") && err.contains("hooks get no filesystem"),
        "{err}"
    );
    // `plugin check` takes a hook component too, and says it is a hook.
    let (code, out, err) = run(&["plugin", "check", plugins::HOOK_DESTRUCTIVE]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("is a valid permission hook") && out.contains("triggers:  *"),
        "{out}"
    );
    let (code, out, err) = run(&["plugin", "check", plugins::TOOL_ECHO]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("is a valid tool plugin"), "{out}");
}

// Threat 37: an approval is settled by an operator, or by the calling agent
// only where the operator opted its principal in (`approve_by = "client"`).
#[tokio::test]
async fn threat_37_only_an_operator_or_an_opted_in_caller_settles_an_approval() {
    use glovebox::manifest::ApproveBy;
    let s = setup(vec![destructive("ask")]).await;
    let id = s.session("asker", Role::Supervisor);
    let err = s
        .call(
            &id,
            "files.write",
            json!({"path": "/data/x.txt", "content": "x"}),
        )
        .await
        .unwrap_err();
    let CallError::AwaitingApproval { approval_id, .. } = err else {
        panic!("{err}")
    };
    // The session's own agent, not opted in: refused, saying who settles it.
    let agent = glovebox::Principal::local();
    let e =
        s.gw.scope(&agent)
            .approvals()
            .approve(&approval_id)
            .await
            .unwrap_err();
    assert!(e.to_string().contains("settled by an operator"), "{e}");
    let e =
        s.gw.scope(&agent)
            .approvals()
            .deny(&approval_id, "no")
            .await
            .unwrap_err();
    assert!(e.to_string().contains("settled by an operator"), "{e}");
    // Another agent, even opted in: the approval does not exist for it.
    let mut stranger = glovebox::Principal::local();
    stranger.name = "mallory".into();
    stranger.approve_by = ApproveBy::Client;
    let e =
        s.gw.scope(&stranger)
            .approvals()
            .approve(&approval_id)
            .await
            .unwrap_err();
    assert!(e.to_string().contains("no approval"), "{e}");
    // The session's agent, opted in by the operator: it may, and is recorded.
    let mut opted = glovebox::Principal::local();
    opted.approve_by = ApproveBy::Client;
    s.gw.scope(&opted)
        .approvals()
        .approve(&approval_id)
        .await
        .unwrap();
    let settled = s.durable.approvals.get(&approval_id).unwrap();
    assert!(
        matches!(&settled.status, glovebox::approvals::ApprovalStatus::Approved { by: Some(by), .. } if by == "local"),
        "{:?}",
        settled.status
    );
}

/// The hooks' allocator (`plugins/hooks/sdk`) serves an evaluation from an
/// arena in the hook's initial memory and spills into `memory.grow` past
/// it: a request larger than the arena (the input is copied into the
/// hook) is judged as a small one is, allowed or denied with the same
/// reason.
#[tokio::test]
async fn a_request_larger_than_a_hooks_arena_is_judged_like_a_small_one() {
    let s = setup(vec![cost_control(), role_allowlist()]).await;
    let boss = s.session("boss", Role::Orchestrator);
    let worker = s.session("worker", Role::Workagent);
    for size in [10, 400 * 1024] {
        let message = "x".repeat(size);
        let echoed = s
            .call(&boss, "echo.echo", json!({ "message": message }))
            .await
            .unwrap_or_else(|e| panic!("{size} bytes: {e}"));
        assert_eq!(echoed["message"].as_str().map(str::len), Some(size));
        let (hook, reason, _) = denial(
            s.call(&worker, "echo.echo", json!({ "message": message }))
                .await
                .unwrap_err(),
        );
        assert_eq!(hook, "cost", "{size} bytes");
        assert!(reason.contains("5.00"), "{size} bytes: {reason}");
    }
    let decided = s.decided(&boss);
    assert_eq!(decided.len(), 4, "{decided:?}");
    assert!(decided.iter().all(|d| d.2 == "allow"), "{decided:?}");
}

/// A background job whose call the hook sends to a human waits for the
/// approval (`awaiting_approval`, the approval naming the job), and takes
/// its settlement from whoever settles it. Settled where no jobs runner
/// listens (another host's gateway over the same store, which then
/// stops), the next recovery pass ends the job: denied, it fails with the
/// denial; approved, the call ran there, once, and the job says where its
/// outcome is.
#[tokio::test]
async fn a_job_whose_approval_was_settled_where_no_runner_heard_is_ended_by_recovery() {
    use glovebox::{JobStatus, Jobs, JobsConfig};
    let s = setup(vec![destructive("ask")]).await;
    let session = s.session("writer", Role::Supervisor);
    let operator = glovebox::cli_operator();
    let jobs = Jobs::new(s.gw.clone(), JobsConfig::default());
    let elsewhere = Gateway::new(s.host.clone(), s.durable.clone());
    let waiting = |name: &'static str| {
        let (jobs, operator, session, s) = (&jobs, &operator, &session, &s);
        async move {
            let input = json!({"path": format!("/data/{name}"), "content": "approved text"});
            let call = s.gw.admit("files.write", &input.to_string()).unwrap();
            let job = jobs.scope(operator).spawn(session, call).await.unwrap();
            let start = std::time::Instant::now();
            loop {
                let now = jobs.scope(operator).status(&job.id).await.unwrap();
                if now.status == JobStatus::AwaitingApproval {
                    return now;
                }
                assert!(start.elapsed() < Duration::from_secs(20), "{now:?}");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    };

    let denied = waiting("denied.txt").await;
    let approval = denied.approval.clone().expect("the job names its approval");
    assert_eq!(
        s.durable.approvals.get(&approval).unwrap().job.as_deref(),
        Some(denied.id.as_str())
    );
    elsewhere
        .scope(&operator)
        .approvals()
        .deny(&approval, "not today")
        .await
        .unwrap();
    // Nobody heard it: the job still waits, until the recovery pass.
    let still = jobs.scope(&operator).status(&denied.id).await.unwrap();
    assert_eq!(still.status, JobStatus::AwaitingApproval);
    jobs.recover().await.unwrap();
    let ended = jobs.scope(&operator).status(&denied.id).await.unwrap();
    assert_eq!(ended.status, JobStatus::Failed, "{ended:?}");
    let error = ended.result.unwrap().error.unwrap();
    assert_eq!(error.kind, "denied");
    assert!(error.message.contains("not today"), "{}", error.message);
    assert!(!s.workspace.path().join("denied.txt").exists());

    let approved = waiting("approved.txt").await;
    let approval = approved.approval.clone().unwrap();
    elsewhere
        .scope(&operator)
        .approvals()
        .approve(&approval)
        .await
        .unwrap();
    jobs.recover().await.unwrap();
    let ended = jobs.scope(&operator).status(&approved.id).await.unwrap();
    assert_eq!(ended.status, JobStatus::Interrupted, "{ended:?}");
    let error = ended.result.unwrap().error.unwrap();
    assert_eq!(error.kind, "approved_elsewhere");
    assert!(error.message.contains(&session), "{}", error.message);
    assert_eq!(
        std::fs::read_to_string(s.workspace.path().join("approved.txt")).unwrap(),
        "approved text"
    );
}
