//! Spend ceilings across sessions and the per-principal daily quotas
//! (threats 49, 50 and 51): what all the sessions of a principal, project or
//! role spend per day, week and month holds across new sessions, restarts
//! and a moved clock; the scope's sessions pause at the ceiling and only an
//! operator lifts it; a family never spends past its parent's cap. Real
//! sessions, real plugins, a clock the test moves.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use glovebox::budget::{BudgetCaps, UsageReport};
use glovebox::ceilings;
use glovebox::manifest::{CeilingLimits, NotifyKind, PeriodCeilings, Scope, ToolOverride};
use glovebox::notify::{Notification, NotifyObserver};
use glovebox::session::{
    EventKind, Handoff, HandoffKind, Role, SessionError, SessionStatus, Sessions, SessionsConfig,
    SpawnChild, StartSession,
};
use glovebox::storage::{Durability, SledStore, Storage};
use glovebox::{CallError, CallReport, Durable, Gateway, Host, HostConfig, Principal};

use crate::util::{self, manifest, plugins};

/// 2025-06-14, a Saturday, 13:30 UTC.
const SAT: u64 = 1_749_907_800_000;
const DAY: u64 = 86_400_000;

/// Echo costs 0.25 a call; sleep (idempotent, up to 60 s) 0.75.
fn priced() -> Vec<glovebox::PluginManifest> {
    let mut echo = manifest("echo", plugins::TOOL_ECHO);
    echo.tools.insert(
        "echo".into(),
        ToolOverride {
            cost: Some(0.25),
            ..ToolOverride::default()
        },
    );
    let mut sleep = manifest("sleep", plugins::HOSTILE_SLEEP);
    sleep.limits.deadline = Duration::from_secs(60);
    sleep.tools.insert(
        "sleep".into(),
        ToolOverride {
            cost: Some(0.75),
            idempotent: Some(true),
            ..ToolOverride::default()
        },
    );
    vec![echo, sleep]
}

pub(crate) fn agent(name: &str) -> Principal {
    Principal {
        name: name.into(),
        kind: glovebox::PrincipalKind::Agent,
        roles: vec![Role::Supervisor, Role::Workagent],
        projects: vec!["*".into()],
        tags: vec![],
        approve_by: Default::default(),
        card: Default::default(),
        toolsets: Vec::new(),
        read_only: false,
    }
}

fn limits(cost: Option<f64>, calls: Option<u64>, tokens: Option<u64>) -> CeilingLimits {
    CeilingLimits {
        cost_micros: cost.map(|c| glovebox::budget::to_micros(c).unwrap()),
        calls,
        tokens,
    }
}

/// Every notification the sessions raise, whatever the targets.
#[derive(Debug, Default)]
struct Heard(Mutex<Vec<(NotifyKind, Notification)>>);

impl NotifyObserver for Heard {
    fn raised(&self, _by: Option<&str>, kind: NotifyKind, n: &Notification) {
        self.0.lock().unwrap().push((kind, n.clone()));
    }
}

impl Heard {
    fn of(&self, kind: NotifyKind) -> Vec<Notification> {
        let heard = self.0.lock().unwrap();
        heard
            .iter()
            .filter(|(k, _)| *k == kind)
            .map(|(_, n)| n.clone())
            .collect()
    }
}

/// A host with the priced plugins, its config edited by the test, and a
/// store in a data dir of its own whose clock the test moves.
struct Fixture {
    config: HostConfig,
    /// None only while it restarts.
    gw: Option<Gateway>,
    clock: Arc<AtomicU64>,
    heard: Arc<Heard>,
    store: PathBuf,
    _data: tempfile::TempDir,
}

/// The sessions in store `dir` on `clock`, under `config`'s quotas; an
/// error while another holder has the store open.
fn open_durable(
    dir: &Path,
    clock: &Arc<AtomicU64>,
    config: &HostConfig,
) -> Result<Arc<Durable>, String> {
    let store = SledStore::open(dir, Durability::Flush).map_err(|e| e.to_string())?;
    let storage: Arc<dyn Storage> = Arc::new(store);
    let now = clock.clone();
    let sessions_config = SessionsConfig {
        quotas: config.quotas.clone(),
        ..SessionsConfig::default()
    };
    let sessions = Sessions::with_config(storage.clone(), sessions_config)
        .with_clock(move || now.load(Ordering::SeqCst));
    Ok(Arc::new(Durable {
        sessions: Arc::new(sessions),
        approvals: Arc::new(glovebox::approvals::Approvals::new(storage.clone())),
        outbox: Arc::new(glovebox::notify::Outbox::new(storage.clone(), Vec::new())),
        storage,
        recovery: Default::default(),
        repairs: Vec::new(),
    }))
}

impl Fixture {
    async fn new(edit: impl FnOnce(&mut HostConfig)) -> Fixture {
        let (mut config, data) = util::config(priced());
        edit(&mut config);
        let clock = Arc::new(AtomicU64::new(SAT));
        let store = data.path().join("store");
        let heard = Arc::new(Heard::default());
        let gw = Fixture::gateway(&config, &store, &clock, &heard).await;
        Fixture {
            config,
            gw: Some(gw),
            clock,
            heard,
            store,
            _data: data,
        }
    }

    async fn gateway(
        config: &HostConfig,
        store: &Path,
        clock: &Arc<AtomicU64>,
        heard: &Arc<Heard>,
    ) -> Gateway {
        let host = Arc::new(Host::load(config.clone()).await.expect("host loads"));
        // The store's lock goes with its last holder (a restart waits for it).
        let deadline = Instant::now() + Duration::from_secs(10);
        let durable = loop {
            match open_durable(store, clock, config) {
                Ok(durable) => break durable,
                Err(e) => assert!(Instant::now() < deadline, "the store stays locked: {e}"),
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        durable.sessions.observe_notifications(heard.clone());
        Gateway::new(host, durable)
    }

    /// Stops the host and opens its data dir again: what a restart keeps.
    async fn restart(&mut self) {
        drop(self.gw.take());
        self.gw = Some(Fixture::gateway(&self.config, &self.store, &self.clock, &self.heard).await);
    }

    fn gw(&self) -> &Gateway {
        self.gw.as_ref().expect("the host runs")
    }

    fn sessions(&self) -> &Arc<Sessions> {
        self.gw().sessions()
    }

    fn advance(&self, ms: u64) {
        self.clock.fetch_add(ms, Ordering::SeqCst);
    }

    fn start(
        &self,
        who: &Principal,
        name: &str,
        role: Role,
        project: &str,
    ) -> Result<String, SessionError> {
        self.start_with(who, name, role, project, BudgetCaps::default())
    }

    fn start_with(
        &self,
        who: &Principal,
        name: &str,
        role: Role,
        project: &str,
        budget: BudgetCaps,
    ) -> Result<String, SessionError> {
        let start = StartSession {
            role,
            project: project.into(),
            name: Some(name.into()),
            tags: vec![],
            expected_duration: None,
            budget,
            completion: Default::default(),
        };
        Ok(self
            .sessions()
            .scope(who)
            .start(start, &Default::default())?
            .header
            .id)
    }

    async fn call(&self, who: &Principal, session: &str, tool: &str, input: &str) -> CallReport {
        // The call is `who`'s: its scope names it the actor.
        self.gw()
            .scope(who)
            .call_in_session(session, tool, input)
            .await
            .expect("the session takes the call")
    }

    async fn echo(&self, who: &Principal, session: &str) -> CallReport {
        self.call(who, session, "echo.echo", r#"{"message":"hi"}"#)
            .await
    }

    fn status(&self, session: &str) -> SessionStatus {
        self.sessions().show(session).unwrap().header.status
    }

    fn kinds(&self, session: &str) -> Vec<EventKind> {
        self.sessions()
            .events(session, 1, usize::MAX)
            .unwrap()
            .into_iter()
            .map(|e| e.kind)
            .collect()
    }

    /// Waits (polling) until session `id` has `status`.
    async fn until(&self, id: &str, status: SessionStatus) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while self.status(id) != status {
            assert!(
                Instant::now() < deadline,
                "session {id} never became {status}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// The `budget` hook's denial of a call (at a cap or a ceiling): its
/// pattern, reason and alternatives.
fn denial(report: &CallReport) -> (String, String, Vec<String>) {
    match &report.outcome {
        Err(CallError::Denied {
            hook,
            pattern,
            reason,
            alternatives,
            ..
        }) => {
            assert_eq!(hook, "budget");
            (pattern.clone(), reason.clone(), alternatives.clone())
        }
        other => panic!("expected the budget's denial, got {other:?}"),
    }
}

fn ok(report: &CallReport) {
    assert!(report.outcome.is_ok(), "{:?}", report.outcome);
}

/// The issue's figure: a principal at its daily ceiling is refused on its
/// next call and its next new session, whatever it does (why: a per-session
/// cap reset by ending a paused session and starting a new one let an
/// agent spend without end).
#[tokio::test]
async fn threat_50_a_principal_at_its_daily_ceiling_is_refused_on_its_next_call_and_its_next_session()
 {
    let mut f = Fixture::new(|c| {
        let alice = PeriodCeilings {
            day: limits(Some(1.0), None, None),
            ..PeriodCeilings::default()
        };
        c.budgets.ceilings.principals.insert("alice".into(), alice);
    })
    .await;
    let (alice, bob) = (agent("alice"), agent("bob"));
    let first = f.start(&alice, "a1", Role::Workagent, "p").unwrap();
    let other = f.start(&alice, "a2", Role::Workagent, "q").unwrap();
    let bobs = f.start(&bob, "b1", Role::Workagent, "p").unwrap();
    // Four calls of 0.25 in two sessions: 1.0, the ceiling, exactly.
    for session in [&first, &other, &first, &other] {
        ok(&f.echo(&alice, session).await);
    }
    // The fifth is refused by the `budget` hook, naming the ceiling, its
    // key, the figures and when the day ends, with what to do instead.
    let refused = f.echo(&alice, &first).await;
    let (pattern, reason, alternatives) = denial(&refused);
    assert_eq!(pattern, "ceiling:principal:day:cost");
    for part in [
        "spend ceiling reached",
        "daily cost ceiling of principal `alice` is 1",
        "`budgets.principal.alice.day.cost`",
        "spent or committed 1 in day 2025-06-14",
        "estimated 0.25",
        "1.25",
        "2025-06-15 00:00 UTC",
    ] {
        assert!(reason.contains(part), "no {part:?} in: {reason}");
    }
    assert!(
        alternatives[0].contains("glovebox budget raise principal alice --period day --cost"),
        "{alternatives:?}"
    );
    // The session is paused by the host: its agent cannot lift that.
    assert_eq!(f.status(&first), SessionStatus::Paused);
    let kinds = f.kinds(&first);
    assert!(kinds.iter().any(|k| matches!(k,
        EventKind::CeilingReached { first: true, scope, .. } if *scope == Scope::principal("alice"))));
    let err = f.sessions().scope(&alice).resume(&first).unwrap_err();
    assert!(err.to_string().contains("only an operator lifts"), "{err}");
    // Its other live session is paused too, without a call of its own.
    f.until(&other, SessionStatus::Paused).await;
    assert!(f.kinds(&other).iter().any(|k| matches!(
        k,
        EventKind::CeilingReached {
            first: false,
            call_id: None,
            ..
        }
    )));
    // Another principal's calls are not touched.
    ok(&f.echo(&bob, &bobs).await);
    assert_eq!(f.status(&bobs), SessionStatus::Active);
    // Notified once, at 80% and at 100%.
    assert_eq!(f.heard.of(NotifyKind::CeilingWarning).len(), 1);
    let reached = f.heard.of(NotifyKind::CeilingReached);
    assert_eq!(reached.len(), 1, "{reached:?}");
    assert!(
        reached[0].summary.contains("principal `alice`"),
        "{}",
        reached[0].summary
    );

    // Ending the paused session and starting another resets nothing.
    f.sessions()
        .scope(&alice)
        .end(&first, glovebox::session::EndOutcome::Exit)
        .unwrap();
    let err = f.start(&alice, "a3", Role::Workagent, "p").unwrap_err();
    assert!(matches!(err, SessionError::Ceiling(_)), "{err:?}");
    let message = err.to_string();
    assert!(
        message.contains("`budgets.principal.alice.day.cost`"),
        "{message}"
    );
    assert!(
        message.contains("glovebox budget raise principal alice --period day --cost"),
        "{message}"
    );
    // Nor does a restart.
    f.restart().await;
    let err = f.start(&alice, "a3", Role::Workagent, "p").unwrap_err();
    assert!(matches!(err, SessionError::Ceiling(_)), "{err:?}");
    f.start(&bob, "b2", Role::Workagent, "p").unwrap();
    // An operator lifts the pause: alice's session runs again once the day
    // is over (its call is checked against the new day's ceiling).
    let resumed = ceilings::lift(f.sessions(), &Scope::principal("alice")).unwrap();
    assert_eq!(resumed, vec![other.clone()]);
    assert_eq!(
        denial(&f.echo(&alice, &other).await).0,
        "ceiling:principal:day:cost"
    );
    f.advance(DAY);
    let a3 = f.start(&alice, "a3", Role::Workagent, "p").unwrap();
    ok(&f.echo(&alice, &a3).await);
}

/// A project's weekly and a role's monthly ceilings hold across the
/// principals and sessions under them, and start afresh when their period
/// ends (why: the ceilings are counted per calendar period, and a moved
/// clock must not lose or reset them early).
#[tokio::test]
async fn threat_50_project_and_role_ceilings_hold_per_week_and_month_under_a_moved_clock() {
    let f = Fixture::new(|c| {
        let demo = PeriodCeilings {
            week: limits(None, Some(3), None),
            ..PeriodCeilings::default()
        };
        c.budgets.ceilings.projects.insert("demo".into(), demo);
        let supervisors = PeriodCeilings {
            month: limits(None, None, Some(1000)),
            ..PeriodCeilings::default()
        };
        c.budgets
            .ceilings
            .roles
            .insert("supervisor".into(), supervisors);
    })
    .await;
    let (alice, bob) = (agent("alice"), agent("bob"));
    // The project's week: two calls on Saturday by alice, one on Sunday by bob.
    let a = f.start(&alice, "a", Role::Workagent, "demo").unwrap();
    let b = f.start(&bob, "b", Role::Workagent, "demo").unwrap();
    ok(&f.echo(&alice, &a).await);
    ok(&f.echo(&alice, &a).await);
    f.advance(DAY);
    ok(&f.echo(&bob, &b).await);
    let (pattern, reason, _) = denial(&f.echo(&bob, &b).await);
    assert_eq!(pattern, "ceiling:project:week:calls");
    assert!(
        reason.contains("`budgets.project.demo.week.calls`"),
        "{reason}"
    );
    assert!(reason.contains("week 2025-W24"), "{reason}");
    assert!(reason.contains("2025-06-16 00:00 UTC"), "{reason}");
    f.until(&a, SessionStatus::Paused).await;
    let err = f.start(&alice, "a2", Role::Workagent, "demo").unwrap_err();
    assert!(err.to_string().contains("project `demo`"), "{err}");
    // Another project is not held.
    let other = f
        .start(&alice, "elsewhere", Role::Workagent, "other")
        .unwrap();
    ok(&f.echo(&alice, &other).await);
    // Monday: a new week.
    f.advance(DAY);
    let c = f.start(&alice, "c", Role::Workagent, "demo").unwrap();
    ok(&f.echo(&alice, &c).await);

    // The supervisors' month, in model tokens reported.
    let report = |tokens: u64| UsageReport {
        tokens_in: tokens,
        tokens_out: 0,
        cost: 0.0,
        model: None,
        context_tokens: None,
        context_limit: None,
    };
    let s1 = f.start(&alice, "s1", Role::Supervisor, "x").unwrap();
    let s2 = f.start(&bob, "s2", Role::Supervisor, "y").unwrap();
    ok(&f.echo(&alice, &s1).await);
    ok(&f.echo(&bob, &s2).await);
    f.gw()
        .scope(&glovebox::cli_operator())
        .report_usage(&s1, report(600))
        .await
        .unwrap();
    let events = f
        .gw()
        .scope(&glovebox::cli_operator())
        .report_usage(&s2, report(300))
        .await
        .unwrap();
    assert!(
        events
            .iter()
            .any(|e| matches!(e.kind, EventKind::CeilingWarning { percent: 90, .. }))
    );
    let events = f
        .gw()
        .scope(&glovebox::cli_operator())
        .report_usage(&s2, report(200))
        .await
        .unwrap();
    assert!(
        events
            .iter()
            .any(|e| matches!(e.kind, EventKind::CeilingReached { first: true, .. }))
    );
    assert_eq!(f.status(&s2), SessionStatus::Paused);
    assert_eq!(
        f.status(&s1),
        SessionStatus::Paused,
        "the role's other session"
    );
    let err = f.start(&alice, "s3", Role::Supervisor, "x").unwrap_err();
    assert!(
        err.to_string()
            .contains("`budgets.role.supervisor.month.tokens`"),
        "{err}"
    );
    // Workagents are not held by the supervisors' ceiling.
    f.start(&alice, "w", Role::Workagent, "x").unwrap();
    // July.
    f.advance(20 * DAY);
    let s4 = f.start(&alice, "s4", Role::Supervisor, "x").unwrap();
    ok(&f.echo(&alice, &s4).await);
}

/// A child's carve counts the parent's calls in flight, and the parent's
/// calls count what its children were carved, under the parent's lock (why:
/// a child carved while its parent's call ran could spend what that call
/// then spent too, twice the parent's cap in all).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn threat_51_a_child_carved_while_its_parent_has_a_call_in_flight_never_takes_the_family_past_the_cap()
 {
    let f = Arc::new(Fixture::new(|_| {}).await);
    let alice = agent("alice");
    let parent = f
        .start_with(
            &alice,
            "lead",
            Role::Supervisor,
            "p",
            BudgetCaps::new(Some(1.0), None, None).unwrap(),
        )
        .unwrap();
    // The parent's call of estimated cost 0.75 runs (for a while).
    let running = tokio::spawn({
        let (f, alice, parent) = (f.clone(), alice.clone(), parent.clone());
        async move {
            f.call(&alice, &parent, "sleep.sleep", r#"{"seconds":2}"#)
                .await
        }
    });
    let deadline = Instant::now() + Duration::from_secs(20);
    while f.sessions().show(&parent).unwrap().in_flight.is_empty() {
        assert!(Instant::now() < deadline, "the parent's call never started");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let spawn = |name: &str, cost: f64| {
        let task = Handoff::new(HandoffKind::Task, Role::Workagent, "echo once");
        f.sessions().scope(&alice).spawn(
            &parent,
            SpawnChild {
                role: Role::Workagent,
                name: Some(name.into()),
                tags: vec![],
                expected_duration: None,
                budget: BudgetCaps::new(Some(cost), None, None).unwrap(),
                task,
                completion: Default::default(),
            },
            &f.config.budgets,
            &Default::default(),
        )
    };
    // Half the cap is not left while 0.75 is in flight.
    let err = spawn("greedy", 0.5).unwrap_err().to_string();
    assert!(err.contains("in flight"), "{err}");
    assert!(err.contains("0.25 is left"), "{err}");
    // What is left is carved, and the child spends it while the parent's
    // call still runs.
    let child = spawn("modest", 0.25).unwrap().child.header.id;
    assert!(!f.sessions().show(&parent).unwrap().in_flight.is_empty());
    ok(&f.echo(&alice, &child).await);
    let (pattern, ..) = denial(&f.echo(&alice, &child).await);
    assert_eq!(pattern, "budget:cost");
    ok(&running.await.unwrap());
    // The family spent 0.75 + 0.25: the parent's cap, not more.
    let spent = |id: &str| {
        let s = f.sessions().show(id).unwrap();
        s.counters.cost_micros + s.counters.model_cost_micros
    };
    assert_eq!(spent(&parent) + spent(&child), 1_000_000);
    // And the parent's own next call counts the carve: nothing is left.
    let (pattern, ..) = denial(&f.echo(&alice, &parent).await);
    assert_eq!(pattern, "budget:cost");
}

/// What an agent adds to its sessions' logs per day is bounded, over all
/// its sessions and across restarts (why: notes, handoffs and calls had no
/// bound but the disk, shared by every tenant).
#[tokio::test]
async fn threat_49_a_principals_daily_events_are_bounded_across_its_sessions() {
    let mut f = Fixture::new(|c| {
        c.quotas.principal_events_per_day = 40;
    })
    .await;
    let (alice, bob) = (agent("alice"), agent("bob"));
    let note = |f: &Fixture, who: &Principal, session: &str| {
        let sessions = f.sessions().clone();
        let (who, session) = (who.name.clone(), session.to_string());
        glovebox::session::actor::scoped(who.as_str(), move || {
            sessions.append(
                &session,
                EventKind::Note {
                    text: "progress".into(),
                },
            )
        })
    };
    let ids = [
        f.start(&alice, "n1", Role::Workagent, "p").unwrap(),
        f.start(&alice, "n2", Role::Workagent, "p").unwrap(),
    ];
    let mut written = 2; // the two `session_started`
    let err = loop {
        match note(&f, &alice, &ids[written % 2]) {
            Ok(_) => written += 1,
            Err(e) => break e,
        }
        assert!(written <= 40, "past the quota");
    };
    assert_eq!(written, 40);
    match &err {
        SessionError::Quota { limit, .. } => assert_eq!(limit.key, "principal_events_per_day"),
        other => panic!("expected the quota, got {other:?}"),
    }
    let message = err.to_string();
    assert!(
        message.contains("`quotas.principal_events_per_day` = 40"),
        "{message}"
    );
    assert!(message.contains("principal `alice`"), "{message}");
    // A refused write writes nothing.
    let before = f.sessions().show(&ids[0]).unwrap().last_seq;
    assert!(note(&f, &alice, &ids[0]).is_err());
    assert_eq!(f.sessions().show(&ids[0]).unwrap().last_seq, before);
    // A new session of hers is refused too; bob is not held.
    assert!(matches!(
        f.start(&alice, "n3", Role::Workagent, "p"),
        Err(SessionError::Quota { .. })
    ));
    let b = f.start(&bob, "b", Role::Workagent, "p").unwrap();
    note(&f, &bob, &b).unwrap();
    // An operator acting in her session is not counted against her, and
    // what finishes admitted work (ending it) is never refused.
    glovebox::session::actor::scoped("cli:0", || {
        f.sessions().append(
            &ids[0],
            EventKind::Note {
                text: "operator".into(),
            },
        )
    })
    .unwrap();
    f.sessions()
        .scope(&alice)
        .end(&ids[0], glovebox::session::EndOutcome::Exit)
        .unwrap();
    // A restart keeps the count; the next day starts afresh.
    f.restart().await;
    assert!(note(&f, &alice, &ids[1]).is_err());
    f.advance(DAY);
    note(&f, &alice, &ids[1]).unwrap();
}

/// Bytes too: one principal's bytes per day, over its sessions.
#[tokio::test]
async fn threat_49_a_principals_daily_bytes_are_bounded_across_its_sessions() {
    let f = Fixture::new(|c| {
        c.quotas.principal_bytes_per_day = 64 * 1024;
    })
    .await;
    let alice = agent("alice");
    let id = f.start(&alice, "big", Role::Workagent, "p").unwrap();
    let text = "x".repeat(8 * 1024);
    let mut written = 0;
    let err = loop {
        let r = glovebox::session::actor::scoped("alice", || {
            f.sessions()
                .append(&id, EventKind::Note { text: text.clone() })
        });
        match r {
            Ok(_) => written += 1,
            Err(e) => break e,
        }
        assert!(written < 16, "past the quota");
    };
    assert!((6..=7).contains(&written), "{written}");
    assert!(
        err.to_string()
            .contains("`quotas.principal_bytes_per_day` = 64 KiB"),
        "{err}"
    );
}

/// Why (threats 42, 49): a call or a usage report past a session's log
/// quota (`quotas.session_events`) must be refused before anything of it is
/// logged or charged: logged, the log passes its quota; charged first, a
/// refused call counts against the principal's ceilings without running.
#[tokio::test]
async fn threat_49_a_call_or_usage_report_at_the_session_log_quota_is_refused_before_it_is_logged_or_charged()
 {
    let f = Fixture::new(|c| {
        c.quotas.session_events = 12;
        let alice = PeriodCeilings {
            day: limits(None, Some(100), Some(1_000_000)),
            ..PeriodCeilings::default()
        };
        c.budgets.ceilings.principals.insert("alice".into(), alice);
    })
    .await;
    let alice = agent("alice");
    let id = f.start(&alice, "calls", Role::Workagent, "p").unwrap();
    let call = || {
        f.gw()
            .scope(&alice)
            .call_in_session(&id, "echo.echo", r#"{"message":"hi"}"#)
    };
    let mut calls = 0;
    let err = loop {
        match call().await {
            Ok(report) => {
                ok(&report);
                calls += 1;
            }
            Err(e) => break e,
        }
        assert!(calls < 12, "the calls were never stopped");
    };
    assert!(calls >= 2, "{calls}");
    match &err {
        SessionError::Quota { limit, .. } => assert_eq!(limit.key, "session_events"),
        other => panic!("expected the quota, got {other:?}"),
    }
    assert!(
        err.to_string().contains("`quotas.session_events` = 12"),
        "{err}"
    );
    let alices = Scope::principal("alice");
    let tally = || {
        f.sessions()
            .tallies()
            .read(&alices, f.sessions().clock_ms())
            .unwrap()
            .day
    };
    assert_eq!(tally().calls, calls, "the refused call was not charged");
    let seq = f.sessions().show(&id).unwrap().last_seq;
    assert!(matches!(call().await, Err(SessionError::Quota { .. })));
    let usage = glovebox::tasks::acting(
        "alice",
        f.gw().scope(&glovebox::cli_operator()).report_usage(
            &id,
            UsageReport {
                tokens_in: 500,
                tokens_out: 500,
                cost: 0.0,
                model: None,
                context_tokens: None,
                context_limit: None,
            },
        ),
    )
    .await;
    assert!(
        matches!(&usage, Err(SessionError::Quota { limit, .. }) if limit.key == "session_events"),
        "{usage:?}"
    );
    assert_eq!(tally().calls, calls);
    assert_eq!(tally().tokens, 0, "the refused report was not charged");
    assert_eq!(
        f.sessions().show(&id).unwrap().last_seq,
        seq,
        "nothing was logged"
    );
    // The session still ends.
    f.sessions()
        .scope(&alice)
        .end(&id, glovebox::session::EndOutcome::Exit)
        .unwrap();
}

/// A host on the NATS server at `url` (node `node`) with the priced
/// plugins and alice's daily ceiling of `calls` calls.
async fn nats_node(url: &str, node: &str, calls: u64) -> (Gateway, tempfile::TempDir) {
    use glovebox::manifest::{NatsStorage, StorageBackend};
    let (mut config, data) = util::config(priced());
    let alice = PeriodCeilings {
        day: limits(None, Some(calls), None),
        ..PeriodCeilings::default()
    };
    config
        .budgets
        .ceilings
        .principals
        .insert("alice".into(), alice);
    config.storage.backend = StorageBackend::Nats;
    config.storage.nats = Some(NatsStorage {
        url: url.to_string(),
        creds: None,
        user: None,
        password: None,
        prefix: "ceilings".into(),
        replicas: 1,
        node: Some(node.to_string()),
        advertise: None,
        lease_ttl: Duration::from_secs(15),
    });
    let host = Arc::new(Host::load(config).await.expect("host loads"));
    let durable = Arc::new(glovebox::open_sessions(host.config()).expect("store opens"));
    (Gateway::new(host, durable), data)
}

/// Two hosts on one NATS store share a principal's ceiling: what it spends
/// through one counts on the other (why: a ceiling each host counted alone
/// would let an agent spend it once per host).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn threat_50_two_hosts_on_one_nats_store_share_a_principals_ceiling() {
    let tmp = tempfile::tempdir().unwrap();
    let server = glovebox_store_nats::testing::NatsServer::start(tmp.path(), true);
    let (a, _a_data) = nats_node(&server.url(), "a", 3).await;
    let (b, _b_data) = nats_node(&server.url(), "b", 3).await;
    let alice = agent("alice");
    let start = |gw: &Gateway, name: &str| {
        let start = StartSession {
            role: Role::Workagent,
            project: "p".into(),
            name: Some(name.into()),
            tags: vec![],
            expected_duration: None,
            budget: BudgetCaps::default(),
            completion: Default::default(),
        };
        gw.sessions()
            .scope(&alice)
            .start(start, &Default::default())
            .map(|s| s.header.id)
    };
    let on_a = start(&a, "on-a").unwrap();
    let on_b = start(&b, "on-b").unwrap();
    let echo = |gw: &Gateway, id: &str| {
        let (gw, id, alice) = (gw.clone(), id.to_string(), alice.clone());
        async move {
            gw.scope(&alice)
                .call_in_session(&id, "echo.echo", r#"{"message":"hi"}"#)
                .await
                .unwrap()
        }
    };
    ok(&echo(&a, &on_a).await);
    ok(&echo(&b, &on_b).await);
    ok(&echo(&a, &on_a).await);
    // The third call was a's: b's view is a call behind, reads again, and
    // refuses the fourth.
    let (pattern, reason, _) = denial(&echo(&b, &on_b).await);
    assert_eq!(pattern, "ceiling:principal:day:calls");
    assert!(reason.contains("ran or are running 3 calls"), "{reason}");
    assert_eq!(
        b.sessions().show(&on_b).unwrap().header.status,
        SessionStatus::Paused
    );
    // a is held too, and neither starts a new session of alice's.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let state = a.sessions().show(&on_a).unwrap();
        if state.header.status == SessionStatus::Paused {
            break;
        }
        // Not paused from b (a drives it): its next call is refused, which pauses it.
        let report = echo(&a, &on_a).await;
        assert_eq!(denial(&report).0, "ceiling:principal:day:calls");
        assert!(Instant::now() < deadline);
    }
    for gw in [&a, &b] {
        let err = start(gw, "again").unwrap_err();
        assert!(matches!(err, SessionError::Ceiling(_)), "{err:?}");
    }
    let total = ceilings::status(a.sessions()).unwrap();
    assert_eq!(
        (total[0].used, total[0].limit, total[0].reached),
        (3, 3, true)
    );
}

/// The operator's surface, with the real binary: `glovebox budget` shows
/// each ceiling's use, a call past one is refused (exit 3) and pauses the
/// session, no new session starts (exit 8), the agent's own resume is not
/// what lifts it, and `budget raise` for the current period resumes it
/// (why: a pause only an operator lifts needs a way for the operator to
/// see and lift it).
#[test]
fn threat_50_an_operator_sees_raises_and_lifts_a_ceiling_from_the_cli() {
    let site = util::Site::with_config(
        "[budgets.principal.local.day]\ncalls = 2\n",
        &[(
            "echo.toml",
            format!(
                "name = \"echo\"\ncomponent = \"{}\"\n[tools.echo]\ncost = 0.5\n",
                plugins::TOOL_ECHO
            ),
        )],
    );
    let (code, out, err) = site.run(&["budget"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("budgets.principal.local.day.calls"), "{out}");
    assert!(out.contains("0 calls of 2 calls"), "{out}");
    site.start_workagent("w");
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
    assert!(err.contains("`budgets.principal.local.day.calls`"), "{err}");
    assert!(
        err.contains("glovebox budget raise principal local --period day --calls"),
        "{err}"
    );
    call(8);
    let (code, _, err) = site.run(&[
        "session",
        "start",
        "--role",
        "workagent",
        "--project",
        "p",
        "--name",
        "w2",
    ]);
    assert_eq!(code, 8, "{err}");
    assert!(err.contains("spend ceiling reached"), "{err}");
    let status = site.json(&["budget", "--json"]);
    assert_eq!(status[0]["key"], "budgets.principal.local.day.calls");
    assert_eq!(
        (status[0]["used"].as_u64(), status[0]["reached"].as_bool()),
        (Some(2), Some(true))
    );
    let (_, out, _) = site.run(&["budget"]);
    assert!(out.contains("reached"), "{out}");
    // Lifting alone resumes it, and its next call pauses it again.
    let (code, out, err) = site.run(&["budget", "lift", "principal", "local"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("s-"), "{out}");
    assert!(err.contains("still at a ceiling"), "{err}");
    call(3);
    // Raised for today: resumed at once, and it calls again.
    let (code, out, err) = site.run(&[
        "budget",
        "raise",
        "principal",
        "local",
        "--period",
        "day",
        "--calls",
        "3",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("2 calls of 3 calls"), "{out}");
    assert!(out.contains("raised"), "{out}");
    assert!(err.contains("resumed 1 session(s)"), "{err}");
    call(0);
    call(3);
    // A ceiling the config does not set is not raised.
    let (code, _, err) = site.run(&[
        "budget", "raise", "project", "nope", "--period", "week", "--cost", "1",
    ]);
    assert_eq!(code, 8, "{err}");
    assert!(err.contains("has no ceiling in the config"), "{err}");
}

/// The dashboard shows each ceiling's use and lifts and raises it, as the
/// CLI does, over the real server (why: the operator who gets the
/// `ceiling_reached` notification acts from the dashboard too).
#[test]
fn threat_50_the_dashboard_shows_lifts_and_raises_a_ceiling() {
    use crate::dashboard::{bearer, http, serve};
    let site = util::Site::with_config(
        "[budgets.principal.local.day]\ncalls = 1\n",
        &[(
            "echo.toml",
            format!("name = \"echo\"\ncomponent = \"{}\"\n", plugins::TOOL_ECHO),
        )],
    );
    let operator = crate::principals::add(&site, &["ops", "--kind", "operator"]);
    let served = serve(&site);
    let admin = served.admin.as_str();
    let op = bearer(&operator);
    site.start_workagent("w");
    let call = |expect: i32| {
        let (code, _, err) =
            site.run(&["call", "echo.echo", "-i", r#"{"message":"x"}"#, "-s", "w"]);
        assert_eq!(code, expect, "{err}");
    };
    call(0);
    call(3);
    let status = |site: &util::Site| site.json(&["session", "show", "w"])["status"].clone();
    assert_eq!(status(&site), "paused");
    let page = http(admin, "GET", "/ui/budget", &[("Authorization", &op)], "");
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(
        page.body.contains("budgets.principal.local.day.calls"),
        "{}",
        page.body
    );
    assert!(page.body.contains("1 calls of 1 calls"), "{}", page.body);
    assert!(page.body.contains(">reached<"), "{}", page.body);
    assert!(
        page.body.contains("href=\"/ui/budget\""),
        "the nav links it"
    );
    let origin = format!("http://{admin}");
    let post = |path: &str, body: &str| {
        http(
            admin,
            "POST",
            path,
            &[
                ("Authorization", &op),
                ("Origin", &origin),
                ("Content-Type", "application/x-www-form-urlencoded"),
            ],
            body,
        )
    };
    let a = post("/ui/budget/lift", "kind=principal&name=local");
    assert_eq!(a.status, 303, "{}", a.body);
    assert_eq!(status(&site), "active");
    let page = http(
        admin,
        "GET",
        "/ui/budget?done=lift&kind=principal&name=local",
        &[("Authorization", &op)],
        "",
    );
    assert!(page.body.contains("pause lifted"), "{}", page.body);
    // Still at the ceiling: the next call pauses it again.
    call(3);
    let a = post(
        "/ui/budget/raise",
        "kind=principal&name=local&period=day&calls=3&cost=&tokens=",
    );
    assert_eq!(a.status, 303, "{}", a.body);
    assert_eq!(status(&site), "active");
    call(0);
    // A bad figure is refused with its reason, and nothing changes.
    let a = post(
        "/ui/budget/raise",
        "kind=principal&name=local&period=day&calls=many",
    );
    assert_eq!(a.status, 409, "{}", a.body);
    assert!(a.body.contains("not a whole number"), "{}", a.body);
    // Words in a crafted link are not shown: only a configured scope's.
    let page = http(
        admin,
        "GET",
        "/ui/budget?done=lift&kind=principal&name=%3Cb%3Eurgent",
        &[("Authorization", &op)],
        "",
    );
    assert!(!page.body.contains("urgent"), "{}", page.body);
}
