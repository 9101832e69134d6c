//! Metering, billing and budgets: caps that stop calls (and pause the
//! session), warnings, raises, usage reports, and billing reports checked
//! against the events that produced them. Real sessions, real plugins.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use glovebox::billing::{self, DateRange, Figures, GroupBy};
use glovebox::budget::{self, BudgetCaps, Cap, UsageReport};
use glovebox::manifest::ToolOverride;
use glovebox::session::{EndOutcome, EventKind, Role, SessionStatus, StartSession};
use glovebox::{
    CallError, Durable, Gateway, Host, Jobs, JobsConfig, PluginManifest, SessionError, WaitMode,
};
use serde_json::Value;

use crate::util::Site;
use crate::util::{self, manifest, plugins};

/// Echo costs 0.25 a call, text 1.0, the panicking tool 0.5.
fn priced_plugins() -> Vec<PluginManifest> {
    let priced = |name: &str, component: &str, tool: &str, cost: f64| {
        let mut m = manifest(name, component);
        m.tools.insert(
            tool.into(),
            ToolOverride {
                cost: Some(cost),
                ..ToolOverride::default()
            },
        );
        m
    };
    vec![
        priced("echo", plugins::TOOL_ECHO, "echo", 0.25),
        priced("text", plugins::TOOL_TEXT, "upper", 1.0),
        priced("panicky", plugins::HOSTILE_PANIC, "panic", 0.5),
    ]
}

struct Fixture {
    host: Arc<Host>,
    durable: Arc<Durable>,
    gw: Gateway,
    _data: tempfile::TempDir,
}

impl Fixture {
    async fn new(roles: &[(Role, BudgetCaps)]) -> Fixture {
        let (mut config, data) = util::config(priced_plugins());
        for (role, caps) in roles {
            config.budgets.roles.insert(*role, caps.clone());
        }
        let host = Arc::new(Host::load(config).await.expect("host loads"));
        let (_store, durable) = crate::util::durable(&data.path().join("store"));
        Fixture {
            gw: Gateway::new(host.clone(), durable.clone()),
            host,
            durable,
            _data: data,
        }
    }

    fn start(&self, name: &str, role: Role, project: &str, budget: BudgetCaps) -> String {
        self.durable
            .sessions
            .start(StartSession {
                role,
                project: project.into(),
                name: Some(name.into()),
                tags: vec![],
                expected_duration: None,
                budget,
                completion: Default::default(),
            })
            .unwrap()
            .header
            .id
    }

    async fn call(&self, session: &str, tool: &str, input: &str) -> glovebox::CallReport {
        self.gw
            .scope(&glovebox::cli_operator())
            .call_in_session(session, tool, input)
            .await
            .unwrap()
    }

    async fn echo(&self, session: &str) -> glovebox::CallReport {
        self.call(session, "echo.echo", r#"{"message":"hi"}"#).await
    }

    fn events(&self, session: &str) -> Vec<EventKind> {
        self.durable
            .sessions
            .events(session, 1, usize::MAX)
            .unwrap()
            .into_iter()
            .map(|e| e.kind)
            .collect()
    }

    fn warnings(&self, session: &str) -> Vec<(Cap, u64, u64, u64)> {
        self.events(session)
            .into_iter()
            .filter_map(|e| match e {
                EventKind::BudgetWarning {
                    cap,
                    used,
                    limit,
                    percent,
                } => Some((cap, used, limit, percent)),
                _ => None,
            })
            .collect()
    }
}

fn cost(c: f64) -> BudgetCaps {
    BudgetCaps::new(Some(c), None, None).unwrap()
}

fn denial(report: &glovebox::CallReport) -> (String, String, String, Vec<String>) {
    match &report.outcome {
        Err(CallError::Denied {
            hook,
            pattern,
            reason,
            alternatives,
            ..
        }) => (
            hook.clone(),
            pattern.clone(),
            reason.clone(),
            alternatives.clone(),
        ),
        other => panic!("expected a budget denial, got {other:?}"),
    }
}

#[tokio::test]
async fn a_cost_cap_stops_calls_and_pauses_the_session_with_alternatives() {
    let f = Fixture::new(&[]).await;
    let id = f.start("capped", Role::Workagent, "p", cost(1.0));
    // 4 × 0.25 reaches the cap exactly: allowed; the 5th would pass it.
    for _ in 0..4 {
        assert!(f.echo(&id).await.outcome.is_ok());
    }
    let refused = f.echo(&id).await;
    let (hook, pattern, reason, alternatives) = denial(&refused);
    assert_eq!((hook.as_str(), pattern.as_str()), ("budget", "budget:cost"));
    assert!(reason.contains("cost cap of 1 (session)"), "{reason}");
    assert!(reason.contains("spent or committed 1"), "{reason}");
    assert!(reason.contains("take it to 1.25"), "{reason}");
    assert_eq!(alternatives.len(), 3, "{alternatives:?}");
    assert!(alternatives[0].contains(&format!("glovebox session budget {id} --cost")));
    assert!(alternatives[1].contains("hand off"));
    assert!(alternatives[2].contains("narrow the work"));
    assert_eq!(refused.outcome.as_ref().unwrap_err().kind(), "denied");

    let state = f.durable.sessions.show(&id).unwrap();
    assert_eq!(state.header.status, SessionStatus::Paused);
    assert!(
        state
            .paused_reason
            .as_deref()
            .unwrap()
            .contains("budget exceeded")
    );
    assert_eq!(state.budget.exceeded, Some(Cap::Cost));
    // The denied call did not run and cost nothing.
    assert_eq!(state.counters.calls_run, 4);
    assert_eq!(state.counters.cost_micros, 1_000_000);

    let events = f.events(&id);
    let names: Vec<&str> = events.iter().map(|e| e.name()).collect();
    // (The stuck-agent detector may log its own events after these.)
    let at = names.iter().position(|n| *n == "budget_exceeded").unwrap();
    assert_eq!(
        &names[at - 3..=at + 1],
        [
            "call_requested",
            "call_decided",
            "call_finished",
            "budget_exceeded",
            "paused"
        ]
    );
    assert!(events.iter().any(|e| matches!(
        e,
        EventKind::BudgetExceeded {
            cap: Cap::Cost,
            used: 1_250_000,
            limit: 1_000_000,
            call_id: Some(_)
        }
    )));
    assert!(events.iter().any(|e| matches!(e,
        EventKind::CallDecided { hook, decision, .. } if hook == "budget" && decision == "deny")));

    // Paused: further calls are refused by the session until a raise.
    let err =
        f.gw.scope(&glovebox::cli_operator())
            .call_in_session(&id, "echo.echo", r#"{"message":"x"}"#)
            .await
            .unwrap_err();
    assert!(
        matches!(err, SessionError::IllegalTransition { .. }),
        "{err}"
    );
}

#[tokio::test]
async fn a_warning_at_80_percent_once_per_cap() {
    let f = Fixture::new(&[]).await;
    let id = f.start("warned", Role::Workagent, "p", cost(1.25));
    for _ in 0..3 {
        f.echo(&id).await.outcome.unwrap();
    }
    assert!(f.warnings(&id).is_empty(), "0.75 of 1.25 is 60%");
    f.echo(&id).await.outcome.unwrap();
    assert_eq!(f.warnings(&id), [(Cap::Cost, 1_000_000, 1_250_000, 80)]);
    f.echo(&id).await.outcome.unwrap();
    assert_eq!(f.warnings(&id).len(), 1, "once per cap");
    let state = f.durable.sessions.show(&id).unwrap();
    assert_eq!(state.budget.warned, [Cap::Cost]);
    assert_eq!(state.header.status, SessionStatus::Active);
}

#[tokio::test]
async fn a_calls_cap_from_the_role_applies_to_each_session_of_the_role() {
    let role_caps = BudgetCaps::new(None, Some(2), None).unwrap();
    let f = Fixture::new(&[(Role::Workagent, role_caps)]).await;
    let a = f.start("a", Role::Workagent, "p", BudgetCaps::default());
    let b = f.start("b", Role::Workagent, "p", BudgetCaps::default());
    let boss = f.start("boss", Role::Supervisor, "p", BudgetCaps::default());
    for s in [&a, &b, &boss] {
        f.echo(s).await.outcome.unwrap();
        f.echo(s).await.outcome.unwrap();
    }
    // Each workagent session has its own 2 calls; the supervisor has no cap.
    let (_, pattern, reason, _) = denial(&f.echo(&a).await);
    assert_eq!(pattern, "budget:calls");
    assert!(
        reason.contains("cap of 2 calls (role workagent)"),
        "{reason}"
    );
    assert!(reason.contains("this call would be call 3"), "{reason}");
    denial(&f.echo(&b).await);
    f.echo(&boss).await.outcome.unwrap();
    // 80% of 2 calls: warned at the second call.
    assert_eq!(f.warnings(&a), [(Cap::Calls, 2, 2, 100)]);
    // A session's own cap tighter than the role's holds; a looser one does not.
    let tight = f.start(
        "tight",
        Role::Workagent,
        "p",
        BudgetCaps::new(None, Some(1), None).unwrap(),
    );
    f.echo(&tight).await.outcome.unwrap();
    let (_, _, reason, _) = denial(&f.echo(&tight).await);
    assert!(reason.contains("cap of 1 calls (session)"), "{reason}");
    let loose = f.start(
        "loose",
        Role::Workagent,
        "p",
        BudgetCaps::new(None, Some(10), None).unwrap(),
    );
    f.echo(&loose).await.outcome.unwrap();
    f.echo(&loose).await.outcome.unwrap();
    let (_, _, reason, _) = denial(&f.echo(&loose).await);
    assert!(reason.contains("(role workagent)"), "{reason}");
}

#[tokio::test]
async fn a_wall_cap_stops_calls_once_the_session_is_that_old() {
    let f = Fixture::new(&[]).await;
    let caps = BudgetCaps::new(None, None, Some(Duration::from_millis(1500))).unwrap();
    let id = f.start("timed", Role::Workagent, "p", caps);
    f.echo(&id).await.outcome.unwrap();
    tokio::time::sleep(Duration::from_millis(1300)).await;
    // Past 80% of the wall cap, still within it.
    f.echo(&id).await.outcome.unwrap();
    assert!(
        f.warnings(&id)
            .iter()
            .any(|(cap, used, limit, _)| *cap == Cap::Wall && *used >= 1200 && *limit == 1500),
        "{:?}",
        f.warnings(&id)
    );
    tokio::time::sleep(Duration::from_millis(400)).await;
    let (_, pattern, reason, _) = denial(&f.echo(&id).await);
    assert_eq!(pattern, "budget:wall");
    assert!(reason.contains("wall-time cap of 1s 500ms"), "{reason}");
    assert_eq!(
        f.durable.sessions.show(&id).unwrap().header.status,
        SessionStatus::Paused
    );
}

#[tokio::test]
async fn raising_a_cap_lets_calls_through_again() {
    // The role caps at 0.5; the operator's raise replaces it.
    let f = Fixture::new(&[(Role::Workagent, cost(0.5))]).await;
    let id = f.start("raise", Role::Workagent, "p", BudgetCaps::default());
    f.echo(&id).await.outcome.unwrap();
    f.echo(&id).await.outcome.unwrap();
    denial(&f.echo(&id).await);
    assert_eq!(
        f.durable.sessions.show(&id).unwrap().header.status,
        SessionStatus::Paused
    );

    let budgets = &f.host.config().budgets;
    let raised = budget::raise(&f.durable.sessions, budgets, &id, &cost(1.0)).unwrap();
    assert!(raised.resumed && raised.still_past.is_empty());
    assert_eq!(raised.state.header.status, SessionStatus::Active);
    assert!(f.events(&id).iter().any(|e| matches!(
        e,
        EventKind::CapRaised {
            cap: Cap::Cost,
            from: Some(500_000),
            to: 1_000_000
        }
    )));
    // The raise re-arms the warning for the new cap.
    assert!(raised.state.budget.warned.is_empty());

    f.echo(&id).await.outcome.unwrap();
    f.echo(&id).await.outcome.unwrap();
    let (_, _, reason, _) = denial(&f.echo(&id).await);
    assert!(reason.contains("cost cap of 1 (operator)"), "{reason}");

    // A raise that leaves the session past a cap keeps it paused.
    let calls = BudgetCaps::new(None, Some(4), None).unwrap();
    let still = budget::raise(&f.durable.sessions, budgets, &id, &calls).unwrap();
    assert!(!still.resumed);
    assert_eq!(still.still_past, [Cap::Calls]);
    assert_eq!(still.state.header.status, SessionStatus::Paused);
}

#[tokio::test]
async fn usage_reports_count_toward_cost() {
    let f = Fixture::new(&[]).await;
    let id = f.start("brainy", Role::Workagent, "p", cost(1.0));
    let usage = UsageReport {
        tokens_in: 1200,
        tokens_out: 300,
        cost: 0.8,
        model: Some("claude".into()),
        context_tokens: None,
        context_limit: None,
    };
    let events =
        f.gw.scope(&glovebox::cli_operator())
            .report_usage(&id, usage)
            .await
            .unwrap();
    let names: Vec<&str> = events.iter().map(|e| e.kind.name()).collect();
    assert_eq!(names, ["usage_reported", "budget_warning"]);
    let state = f.durable.sessions.show(&id).unwrap();
    assert_eq!(
        (
            state.counters.tokens_in,
            state.counters.tokens_out,
            state.counters.model_cost_micros
        ),
        (1200, 300, 800_000)
    );
    // 0.8 of model cost + this call's 0.25 would pass the cap of 1.
    let (_, pattern, reason, _) = denial(&f.echo(&id).await);
    assert_eq!(pattern, "budget:cost");
    assert!(reason.contains("spent or committed 0.8"), "{reason}");

    // A report that itself passes the cap pauses an active session.
    let other = f.start("spender", Role::Workagent, "p", cost(1.0));
    f.echo(&other).await.outcome.unwrap();
    let over = UsageReport {
        cost: 2.0,
        ..UsageReport::default()
    };
    let events =
        f.gw.scope(&glovebox::cli_operator())
            .report_usage(&other, over)
            .await
            .unwrap();
    let names: Vec<&str> = events.iter().map(|e| e.kind.name()).collect();
    assert_eq!(
        names,
        [
            "usage_reported",
            "budget_warning",
            "budget_exceeded",
            "paused"
        ]
    );
    assert_eq!(
        f.durable.sessions.show(&other).unwrap().header.status,
        SessionStatus::Paused
    );
    // Bad reports are refused.
    let bad = UsageReport {
        cost: -1.0,
        ..UsageReport::default()
    };
    assert!(
        f.gw.scope(&glovebox::cli_operator())
            .report_usage(&id, bad)
            .await
            .is_err()
    );
}

/// The figures of `by` (foreground, background; in the order of [`exact`]),
/// computed from the raw events, independently of the billing module.
fn expected(f: &Fixture, sessions: &[&str], by: GroupBy) -> BTreeMap<String, [[u64; 11]; 2]> {
    let mut out: BTreeMap<String, [[u64; 11]; 2]> = BTreeMap::new();
    for id in sessions {
        let state = f.durable.sessions.show(id).unwrap();
        let events = f.durable.sessions.events(id, 1, usize::MAX).unwrap();
        let mut tools = BTreeMap::new();
        for e in &events {
            let (tool, bg, delta) = match &e.kind {
                EventKind::CallRequested {
                    call_id,
                    tool,
                    job_id,
                    ..
                } => {
                    tools.insert(call_id.clone(), (tool.clone(), job_id.is_some()));
                    continue;
                }
                EventKind::CallFinished {
                    call_id,
                    outcome,
                    metering: m,
                    ..
                } => {
                    let (tool, bg) = tools[call_id].clone();
                    let failed = u64::from(outcome != "ok");
                    let delta = [
                        1,
                        failed,
                        m.wall_us,
                        m.fuel.unwrap_or(0),
                        m.bytes_in,
                        m.bytes_out,
                        m.cost_micros,
                        0,
                        0,
                        0,
                        0,
                    ];
                    (tool, bg, delta)
                }
                EventKind::UsageReported {
                    tokens_in,
                    tokens_out,
                    cost_micros,
                    model,
                    ..
                } => (
                    format!("model:{}", model.as_deref().unwrap_or("unknown")),
                    false,
                    [
                        0,
                        0,
                        0,
                        0,
                        0,
                        0,
                        0,
                        *cost_micros,
                        *tokens_in,
                        *tokens_out,
                        1,
                    ],
                ),
                _ => continue,
            };
            let key = match by {
                GroupBy::Role => state.header.role.to_string(),
                GroupBy::Session => state.header.id.clone(),
                GroupBy::Tool => tool,
                GroupBy::Project => state.header.project.clone(),
                GroupBy::Day => billing::day_of(e.at_ms),
                GroupBy::Family => {
                    // The root ancestor (child sessions count under it).
                    let mut root = state.clone();
                    while let Some(parent) = root.parent.clone() {
                        root = f.durable.sessions.show(&parent).unwrap();
                    }
                    root.header.id
                }
                GroupBy::Principal => state.owner_name().to_string(),
            };
            let entry = &mut out.entry(key).or_default()[usize::from(bg)];
            for (sum, d) in entry.iter_mut().zip(delta) {
                *sum += d;
            }
        }
    }
    out
}

/// The figures compared: everything but the derived float costs.
fn exact(f: &Figures) -> [u64; 11] {
    [
        f.calls,
        f.failures,
        f.wall_us,
        f.fuel,
        f.bytes_in,
        f.bytes_out,
        f.tool_cost_micros,
        f.model_cost_micros,
        f.tokens_in,
        f.tokens_out,
        f.usage_reports,
    ]
}

#[tokio::test]
async fn the_billing_report_matches_the_events_that_produced_it() {
    let f = Fixture::new(&[]).await;
    let worker = f.start("worker", Role::Workagent, "alpha", BudgetCaps::default());
    let boss = f.start("boss", Role::Supervisor, "beta", BudgetCaps::default());
    f.echo(&worker).await.outcome.unwrap();
    f.echo(&worker).await.outcome.unwrap();
    assert!(
        f.call(&worker, "panicky.panic", "{}")
            .await
            .outcome
            .is_err()
    );
    f.call(&boss, "text.upper", r#"{"text":"abc"}"#)
        .await
        .outcome
        .unwrap();
    f.call(&boss, "text.lower", r#"{"text":"ABC"}"#)
        .await
        .outcome
        .unwrap();
    // Background: two jobs in the worker session.
    let jobs = Jobs::new(f.gw.clone(), JobsConfig::default());
    let operator = glovebox::cli_operator();
    let jobs = jobs.scope(&operator);
    let a = jobs
        .spawn_call(&worker, "echo.echo", r#"{"message":"bg"}"#)
        .await
        .unwrap();
    let b = jobs
        .spawn_call(&worker, "panicky.panic", "{}")
        .await
        .unwrap();
    jobs.wait(&[a.id, b.id], WaitMode::All, Some(Duration::from_secs(30)))
        .await
        .unwrap();
    f.gw.scope(&glovebox::cli_operator())
        .report_usage(
            &worker,
            UsageReport {
                tokens_in: 1000,
                tokens_out: 250,
                cost: 0.125,
                model: Some("m1".into()),
                context_tokens: None,
                context_limit: None,
            },
        )
        .await
        .unwrap();

    let now = f.durable.sessions.clock_ms();
    let today = billing::day_of(now);
    let range = DateRange::parse(Some(&today), Some(&today), now).unwrap();
    for by in GroupBy::ALL {
        let report = billing::report(&f.durable.sessions, &range, by).unwrap();
        let want = expected(&f, &[&worker, &boss], by);
        let got: BTreeMap<String, [[u64; 11]; 2]> = report
            .groups
            .iter()
            .map(|g| (g.key.clone(), [exact(&g.foreground), exact(&g.background)]))
            .collect();
        assert_eq!(got, want, "grouped by {by}");
        for g in &report.groups {
            let mut sum = g.foreground.clone();
            sum.tool_cost_micros += g.background.tool_cost_micros;
            assert_eq!(g.total.calls, g.foreground.calls + g.background.calls);
            assert_eq!(sum.tool_cost_micros, g.total.tool_cost_micros);
        }
        assert_eq!(report.sessions, 2);
        // Totals are the same whichever way the report is cut.
        let t = &report.total.total;
        assert_eq!((t.calls, t.failures), (7, 2), "grouped by {by}");
        // echo 3 × 0.25, panic 2 × 0.5, upper 1.0, lower (no cost) 0.
        assert_eq!(t.tool_cost_micros, 2_750_000);
        assert_eq!(t.model_cost_micros, 125_000);
        assert!((t.cost - 2.875).abs() < 1e-9, "{}", t.cost);
        let bg = &report.total.background;
        assert_eq!(
            (bg.calls, bg.failures, bg.tool_cost_micros),
            (2, 1, 750_000)
        );
    }
    let by_role = billing::report(&f.durable.sessions, &range, GroupBy::Role).unwrap();
    let keys: Vec<&str> = by_role.groups.iter().map(|g| g.key.as_str()).collect();
    assert_eq!(keys, ["supervisor", "workagent"]);
    let by_tool = billing::report(&f.durable.sessions, &range, GroupBy::Tool).unwrap();
    let keys: Vec<&str> = by_tool.groups.iter().map(|g| g.key.as_str()).collect();
    assert_eq!(
        keys,
        [
            "echo.echo",
            "model:m1",
            "panicky.panic",
            "text.lower",
            "text.upper"
        ]
    );
    let by_session = billing::report(&f.durable.sessions, &range, GroupBy::Session).unwrap();
    assert!(
        by_session
            .groups
            .iter()
            .any(|g| g.label.as_deref() == Some("worker"))
    );

    // A range without today has nothing.
    let past = DateRange::parse(Some("2001-01-01"), Some("2001-12-31"), now).unwrap();
    let empty = billing::report(&f.durable.sessions, &past, GroupBy::Day).unwrap();
    assert!(empty.groups.is_empty() && empty.sessions == 0);
}

#[tokio::test]
async fn export_gives_the_session_end_records() {
    let f = Fixture::new(&[]).await;
    let a = f.start("ends", Role::Workagent, "alpha", BudgetCaps::default());
    let b = f.start(
        "also-ends",
        Role::Orchestrator,
        "beta",
        BudgetCaps::default(),
    );
    let live = f.start("lives", Role::Workagent, "alpha", BudgetCaps::default());
    f.echo(&a).await.outcome.unwrap();
    f.echo(&a).await.outcome.unwrap();
    f.echo(&live).await.outcome.unwrap();
    f.gw.scope(&glovebox::cli_operator())
        .report_usage(
            &a,
            UsageReport {
                tokens_in: 10,
                tokens_out: 20,
                cost: 0.5,
                model: None,
                context_tokens: None,
                context_limit: None,
            },
        )
        .await
        .unwrap();
    f.durable.sessions.end(&a, EndOutcome::Completed).unwrap();
    f.durable.sessions.end(&b, EndOutcome::Exit).unwrap();

    let range = DateRange::parse(None, None, f.durable.sessions.clock_ms()).unwrap();
    let records = billing::export(&f.durable.sessions, &range).unwrap();
    assert_eq!(records.len(), 2, "only ended sessions");
    for r in &records {
        let ended = f
            .durable
            .sessions
            .events(&r.session, r.seq, 1)
            .unwrap()
            .remove(0);
        assert_eq!(ended.hash, r.hash);
        let EventKind::Ended { outcome, summary } = ended.kind else {
            panic!("record {} is not an ended event", r.seq)
        };
        assert_eq!((outcome, &summary), (r.outcome, &r.summary));
        assert_eq!(ended.at_ms, r.ended_at_ms);
    }
    let first = records.iter().find(|r| r.session == a).unwrap();
    assert_eq!(
        (
            first.role.as_str(),
            first.project.as_str(),
            first.name.as_deref()
        ),
        ("workagent", "alpha", Some("ends"))
    );
    let s = &first.summary;
    assert_eq!((s.totals.calls, s.totals.failures), (2, 0));
    assert_eq!(s.cost_micros, 500_000);
    assert_eq!(s.model_cost_micros, 500_000);
    assert_eq!((s.tokens_in, s.tokens_out), (10, 20));
    let json = serde_json::to_value(first).unwrap();
    assert_eq!(json["summary"]["cost_micros"], 500_000);
    assert_eq!(json["outcome"], "completed");
}

// ---- the real binary -------------------------------------------------------

/// The echo plugin (cost 0.5 a call) with role budgets for workagents.
fn site() -> Site {
    Site::with_config(
        "[budgets]\nwarn_at = 0.5\n[budgets.role.workagent]\ncost = 2.0\ncalls = 100\nwall = \"1h\"\n",
        &[(
            "echo.toml",
            format!(
                "name = \"echo\"\ncomponent = \"{}\"\n[tools.echo]\ncost = 0.5\n",
                plugins::TOOL_ECHO
            ),
        )],
    )
}

#[test]
fn budgets_and_billing_through_the_cli() {
    let site = site();
    site.json(&[
        "session",
        "start",
        "--role",
        "workagent",
        "--project",
        "cli",
        "--name",
        "w",
        "--budget-calls",
        "2",
        "--budget-cost",
        "10",
        "--budget-wall",
        "30m",
    ]);
    let call = |expect: i32| {
        let (code, _, err) =
            site.run(&["call", "echo.echo", "-i", r#"{"message":"x"}"#, "-s", "w"]);
        assert_eq!(code, expect, "{err}");
        err
    };
    call(0);
    call(0);
    let err = call(3);
    assert!(err.contains("denied by hook `budget`"), "{err}");
    assert!(err.contains("cap of 2 calls (session)"), "{err}");
    assert!(
        err.contains("instead: ask an operator to raise the calls cap"),
        "{err}"
    );
    // Paused: refused by the session.
    call(8);

    let status = site.json(&["session", "budget", "w"]);
    assert_eq!(status["status"], "paused");
    assert_eq!(status["exceeded"], "calls");
    let limits = status["limits"].as_array().unwrap();
    // cost: the session's 10 is looser than the role's 2.
    assert!(
        limits.iter().any(|l| l["cap"] == "cost"
            && l["limit"] == 2_000_000
            && l["source"] == "role workagent")
    );
    assert!(
        limits
            .iter()
            .any(|l| l["cap"] == "wall" && l["limit"] == 1_800_000 && l["source"] == "session")
    );

    let raised = site.json(&["session", "budget", "w", "--calls", "3"]);
    assert_eq!(raised["status"], "active");
    call(0);

    let usage = site.json(&[
        "session",
        "usage",
        "w",
        "--tokens-in",
        "100",
        "--tokens-out",
        "40",
        "--cost",
        "0.25",
        "--model",
        "m",
    ]);
    assert_eq!(usage[0]["kind"]["type"], "usage_reported");

    let report = site.json(&["billing", "--by", "role", "--json"]);
    let g = &report["groups"][0];
    assert_eq!(g["key"], "workagent");
    assert_eq!(g["total"]["calls"], 4);
    assert_eq!(g["total"]["failures"], 1);
    assert_eq!(g["total"]["tool_cost_micros"], 1_500_000);
    assert_eq!(g["total"]["model_cost_micros"], 250_000);
    assert_eq!(g["foreground"]["calls"], 4);
    assert_eq!(g["background"]["calls"], 0);
    let (code, table, err) = site.run(&["billing", "--by", "tool"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        table.contains("echo.echo") && table.contains("model:m"),
        "{table}"
    );
    let (code, _, err) = site.run(&["billing", "--from", "2024-13-01"]);
    assert_eq!(code, 2);
    assert!(err.contains("invalid date"), "{err}");

    site.json(&["session", "end", "w"]);
    let (code, lines, err) = site.run(&["billing", "export"]);
    assert_eq!(code, 0, "{err}");
    let records: Vec<Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0]["name"], "w");
    assert_eq!(records[0]["summary"]["calls"], 4);
    assert_eq!(records[0]["summary"]["cost_micros"], 1_500_000);
}

#[test]
fn a_bad_budgets_section_is_refused_with_the_key() {
    let site = site();
    let text = std::fs::read_to_string(site.config()).unwrap();
    std::fs::write(
        site.config(),
        text.replace("[budgets.role.workagent]", "[budgets.role.intern]"),
    )
    .unwrap();
    let (code, _, err) = site.run(&["billing"]);
    assert_eq!(code, 2);
    assert!(err.contains("budgets.role.intern"), "{err}");
    std::fs::write(site.config(), text.replace("cost = 2.0", "cost = -2.0")).unwrap();
    let (code, _, err) = site.run(&["billing"]);
    assert_eq!(code, 2);
    assert!(err.contains("budgets.role.workagent.cost"), "{err}");
}

fn tokens(cap: u64) -> BudgetCaps {
    BudgetCaps::default().with_tokens(Some(cap))
}

fn used(tokens_in: u64, tokens_out: u64) -> UsageReport {
    UsageReport {
        tokens_in,
        tokens_out,
        ..UsageReport::default()
    }
}

/// A token cap: the model tokens the brain reports count toward it (in
/// plus out); a report that takes the session past it pauses the session,
/// a session at it runs no call, and a raise above the use resumes it.
#[tokio::test]
async fn a_token_cap_stops_a_session() {
    let f = Fixture::new(&[]).await;
    let operator = glovebox::cli_operator();
    let id = f.start("wordy", Role::Workagent, "p", tokens(10_000));
    let report = |u: UsageReport| f.gw.scope(&operator).report_usage(&id, u);
    let events = report(used(6_000, 2_500)).await.unwrap();
    let names: Vec<&str> = events.iter().map(|e| e.kind.name()).collect();
    assert_eq!(names, ["usage_reported", "budget_warning"]);
    f.echo(&id).await.outcome.unwrap();
    let events = report(used(1_000, 1_000)).await.unwrap();
    let names: Vec<&str> = events.iter().map(|e| e.kind.name()).collect();
    assert_eq!(names, ["usage_reported", "budget_exceeded", "paused"]);
    let state = f.durable.sessions.show(&id).unwrap();
    assert_eq!(state.header.status, SessionStatus::Paused);
    assert_eq!(state.budget.exceeded, Some(Cap::Tokens));
    let reason = state.paused_reason.unwrap();
    assert!(reason.contains("model tokens"), "{reason}");
    assert!(reason.contains("10500"), "{reason}");

    let budgets = &f.host.config().budgets;
    let at = budget::raise(&f.durable.sessions, budgets, &id, &tokens(10_500)).unwrap();
    assert_eq!(at.still_past, [Cap::Tokens]);
    assert!(!at.resumed);
    let above = budget::raise(&f.durable.sessions, budgets, &id, &tokens(20_000)).unwrap();
    assert!(above.resumed, "{:?}", above.still_past);
    f.echo(&id).await.outcome.unwrap();

    // Exactly at its cap a session runs no more calls.
    let full = f.start("full", Role::Workagent, "p", tokens(1_000));
    f.gw.scope(&operator)
        .report_usage(&full, used(600, 400))
        .await
        .unwrap();
    let (hook, pattern, reason, alternatives) = denial(&f.echo(&full).await);
    assert_eq!(
        (hook.as_str(), pattern.as_str()),
        ("budget", "budget:tokens")
    );
    assert!(
        reason.contains("cap of 1000 model tokens (session)"),
        "{reason}"
    );
    assert!(alternatives[0].contains("--tokens"), "{alternatives:?}");
}

/// The brain reports how full its context is; at `[detector]
/// context_fraction` (85%) of its window the session is flagged to hand
/// off, and its handoff clears the flag. A report of one without the other
/// is refused.
#[tokio::test]
async fn a_context_near_its_window_flags_the_session_to_hand_off() {
    let f = Fixture::new(&[]).await;
    let operator = glovebox::cli_operator();
    let id = f.start("long-context", Role::Workagent, "p", BudgetCaps::default());
    let context = |tokens: u64| UsageReport {
        context_tokens: Some(tokens),
        context_limit: Some(200_000),
        ..used(100, 10)
    };
    let flag = || {
        f.durable
            .sessions
            .show(&id)
            .unwrap()
            .watch
            .flags
            .get("context")
            .cloned()
    };
    f.gw.scope(&operator)
        .report_usage(&id, context(100_000))
        .await
        .unwrap();
    assert!(flag().is_none());
    f.gw.scope(&operator)
        .report_usage(&id, context(172_000))
        .await
        .unwrap();
    let raised = flag().expect("the context flag");
    assert!(
        raised.reason.contains("172000 of its 200000 tokens (86%)"),
        "{}",
        raised.reason
    );
    assert!(raised.suggested_action.contains("session_handoff"));

    let half = UsageReport {
        context_tokens: Some(10),
        ..used(1, 1)
    };
    let refused = f.gw.scope(&operator).report_usage(&id, half).await;
    let why = refused.unwrap_err().to_string();
    assert!(why.contains("`context_limit` together"), "{why}");

    f.durable
        .sessions
        .handoff(
            &id,
            glovebox::session::Handoff::new(
                glovebox::session::HandoffKind::Continuation,
                Role::Workagent,
                "carry on from a fresh context",
            ),
        )
        .unwrap();
    assert!(flag().is_none());
}
