//! The JSON Schemas of what the sessions service returns are true: a real
//! session, driven through the ledger's own API (keyed, with a budget and a
//! completion condition, renamed, tagged, a memory entry proposed and
//! searched, calls decided and run, notes, usage past its cap, a cap raised,
//! pauses, a child spawned and reporting back, gates and a judge's verdict,
//! the detector, a project's ceiling reached, calls lost to a restart, an
//! end with jobs nobody waited for, an archive), and every state, resume and
//! log event along the way fits the schema schemars generates for its type
//! (see `crate::schema_truth`). Only `action_refused` and `schedule_alert`,
//! which the host crate writes, and variations of other kinds the run does
//! not reach, are appended as built here; every kind the schema lists must
//! have been checked. The records of an old data dir fit too.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use jsonschema::Validator;

use serde_json::Value;

use super::fixtures::BEFORE_ISSUE_36;
use super::*;
use crate::budget::{self, UsageReport};
use crate::manifest::{
    BudgetCaps, BudgetsConfig, CeilingLimits, Ceilings, Completion, DetectorConfig, HandoffsConfig,
    Measure, MemoryConfig, MemoryScopeKind, Period, PeriodCeilings, Principal, Scope, Severity,
};
use crate::memory::MemoryBank;
use crate::schema_truth::{Fits, errors, variants};
use crate::spend::SpendConfig;
use crate::values::{ContextEntry, ContextKind, EscalationStep};

/// What the checks of one run share: the validators, and the kinds seen.
struct Checks {
    state: Fits<SessionState>,
    resumed: Fits<Resumed>,
    event: Fits<Event>,
    /// Each kind's own schema, by its `type`.
    kind: BTreeMap<String, Validator>,
    info: Fits<SessionInfo>,
    kinds: BTreeSet<&'static str>,
}

impl Checks {
    fn new() -> Checks {
        Checks {
            state: Fits::new(),
            resumed: Fits::new(),
            event: Fits::new(),
            kind: variants::<EventKind>("type"),
            info: Fits::new(),
            kinds: BTreeSet::new(),
        }
    }

    #[track_caller]
    fn state(&self, what: &str, state: &SessionState) {
        self.state.check(&format!("the state {what}"), state);
    }

    /// Every event of session `id`'s log.
    #[track_caller]
    fn log(&mut self, sessions: &Sessions, id: &str) {
        for event in sessions.events(id, 1, 10_000).expect("events") {
            self.event(&event, id);
        }
    }

    /// `event`, its kind first against that kind's own schema (so a
    /// failure says what is wrong in it), then whole.
    #[track_caller]
    fn event(&mut self, event: &Event, of: &str) {
        let kind = event.kind.name();
        let what = format!("event {} (`{kind}`) of session {of}", event.seq);
        let Some(validator) = self.kind.get(kind) else {
            panic!("{what}: the schema of EventKind has no variant `{kind}`");
        };
        let json = serde_json::to_value(&event.kind).expect("a kind serializes");
        let wrong = errors(validator, &json);
        assert!(
            wrong.is_empty(),
            "{what} does not fit the schema of its kind:\n  {}\nthe kind: {json}",
            wrong.join("\n  ")
        );
        self.event.check(&what, event);
        self.kinds.insert(kind);
    }
}

fn worker() -> Principal {
    agent(
        "worker",
        &[Role::Supervisor, Role::Workagent],
        &["demo", "costly"],
    )
}

fn judge() -> Principal {
    agent("reviewer", &[Role::Judge], &["demo"])
}

fn keyed() -> SessionsConfig {
    SessionsConfig {
        chain_key: Some(Arc::new(
            ChainKey::new(vec![7; 32], "/keys/chain.key").expect("a key"),
        )),
        ..SessionsConfig::default()
    }
}

fn metering(cost_micros: u64) -> CallMetering {
    CallMetering {
        wall_us: 1200,
        fuel: Some(4000),
        peak_memory_bytes: 65536,
        bytes_in: 2,
        bytes_out: 40,
        cost_micros,
    }
}

/// A call with a hook's verdict, a cost, and an output or an error.
fn decided_call(env: &Env, session: &str, call_id: &str, ok: bool) {
    env.request(session, call_id);
    let append = |kind| env.sessions.append(session, kind).expect("append");
    append(EventKind::CallDecided {
        call_id: call_id.into(),
        hook: "policy".into(),
        pattern: "echo.*".into(),
        decision: "allow".into(),
        reason: Some("echo is harmless".into()),
        alternatives: vec!["echo.quiet".into()],
        took_ms: 3,
        hook_digest: Some(digest(b"hook")),
    });
    append(EventKind::CallStarted {
        call_id: call_id.into(),
        tool: "echo.echo".into(),
        idempotency_key: format!("key-{call_id}"),
        idempotent: false,
        tool_digest: digest(b"wasm"),
        cost_micros: 2500,
    });
    finish(env, session, call_id, ok);
}

/// The end of call `call_id`: an output, or an error.
fn finish(env: &Env, session: &str, call_id: &str, ok: bool) {
    let kind = EventKind::CallFinished {
        call_id: call_id.into(),
        outcome: if ok { "ok" } else { "timeout" }.into(),
        error: (!ok).then(|| "it took too long".into()),
        output: ok.then(|| r#"{"message":"hi"}"#.into()),
        output_digest: digest(b"out"),
        metering: metering(if ok { 2500 } else { 0 }),
    };
    env.sessions.append(session, kind).expect("call_finished");
}

/// What the run does not reach, as the host appends it: the kinds the host
/// crate writes (`action_refused`, `schedule_alert`), and the other fields
/// of kinds it does (a ceiling reached by a call, a flag without one, a
/// rescue's context, a search that found nothing).
fn annotations(at_ms: u64) -> Vec<EventKind> {
    vec![
        EventKind::CeilingWarning {
            scope: Scope::principal("worker"),
            period: Period::Day,
            period_id: "2026-12-06".into(),
            measure: Measure::Cost,
            used: 800_000,
            limit: 1_000_000,
            percent: 80,
        },
        EventKind::CeilingReached {
            scope: Scope::project("demo"),
            period: Period::Week,
            period_id: "2026-W49".into(),
            measure: Measure::Tokens,
            used: 10_000,
            limit: 10_000,
            ends_at_ms: at_ms + 86_400_000,
            call_id: Some("c-1".into()),
            first: true,
        },
        EventKind::CeilingReached {
            scope: Scope::role(Role::Supervisor),
            period: Period::Month,
            period_id: "2026-12".into(),
            measure: Measure::Calls,
            used: 50,
            limit: 50,
            ends_at_ms: at_ms + 86_400_000,
            call_id: None,
            first: false,
        },
        EventKind::BlockerFlag(kind::Flag {
            rule: "no_progress".into(),
            severity: Severity::Warning,
            reason: "no progress for 10m".into(),
            suggested_action: "write a note".into(),
            call_id: None,
        }),
        EventKind::Escalation {
            step: EscalationStep::Rescue,
            reason: "an operator opened a rescue".into(),
            rescue: Some("r-1".into()),
        },
        EventKind::ContextInjected {
            source: "rescue:r-1".into(),
            entries: vec![
                ContextEntry {
                    id: "ctx-1".into(),
                    kind: ContextKind::File,
                    text: "docs/plan.md".into(),
                    source: "rescue:r-1".into(),
                    at_ms,
                    content: Some("# Plan\n".into()),
                    sha256: Some(digest(b"# Plan\n")),
                },
                ContextEntry {
                    id: "ctx-2".into(),
                    kind: ContextKind::SpecChange,
                    text: "ship without the cache".into(),
                    source: "rescue:r-1".into(),
                    at_ms,
                    content: None,
                    sha256: None,
                },
            ],
        },
        EventKind::ActionRefused {
            action: "glovebox:job:spawn".into(),
            hook: "policy".into(),
            reason: "no background jobs here".into(),
            hook_digest: Some(digest(b"hook")),
        },
        EventKind::ActionRefused {
            action: "glovebox:session:spawn".into(),
            hook: "missing".into(),
            reason: "the hook did not load".into(),
            hook_digest: None,
        },
        EventKind::MemoryProposed {
            id: "m-1".into(),
            scope: "project:demo".into(),
            text: "the tests need sled".into(),
        },
        EventKind::MemorySearched {
            query: "sled".into(),
            found: vec!["m-0".into()],
        },
        EventKind::MemorySearched {
            query: "nothing".into(),
            found: vec![],
        },
        EventKind::ScheduleAlert {
            source: "schedule:nightly".into(),
            reason: "the alert `count > 0` holds: count = 3".into(),
            notify: vec!["ops".into()],
            call_id: Some("c-1".into()),
        },
        EventKind::ScheduleAlert {
            source: "trigger:push".into(),
            reason: "the run failed".into(),
            notify: vec![],
            call_id: None,
        },
    ]
}

#[test]
fn every_state_resume_and_event_of_a_real_session_fits_its_schema() {
    let mut checks = Checks::new();
    let env = Env::with_config(keyed());
    let (w, j) = (worker(), judge());
    let budgets = BudgetsConfig::default();

    let lead = env
        .sessions
        .scope(&w)
        .start(
            StartSession {
                tags: vec!["nightly".into()],
                expected_duration: Some(std::time::Duration::from_secs(600)),
                budget: BudgetCaps {
                    cost_micros: Some(1_000_000),
                    calls: Some(100),
                    wall_ms: None,
                    tokens: None,
                },
                completion: Completion {
                    gates: vec![],
                    judge: true,
                },
                ..start_request("lead", Role::Supervisor)
            },
            &HashSet::new(),
        )
        .expect("start");
    checks.state("at its start", &lead);
    let id = lead.header.id.clone();
    let scope = env.sessions.scope(&w);

    checks.state("renamed", &env.sessions.rename(&id, "lead-1").unwrap());
    checks.state(
        "tagged",
        &scope
            .tag(&id, &["red".into()], &["nightly".into()], &HashSet::new())
            .unwrap(),
    );
    // A memory entry proposed from it, approved, and found by a search:
    // the next session of the project starts with it (`bench`, below).
    let memory = MemoryConfig {
        propose: [(MemoryScopeKind::Project, vec![Role::Supervisor])].into(),
        ..MemoryConfig::default()
    };
    let bank = MemoryBank::new(env.store.clone(), memory);
    let (entry, _) = bank
        .propose_in(&env.sessions, &w, &id, "project", "the tests need sled")
        .expect("propose");
    bank.approve(&entry.id, "operator", env.sessions.clock_ms())
        .expect("approve");
    let (found, _) = bank
        .search_in(&env.sessions, &w, &id, "sled", 10, None)
        .expect("search");
    assert_eq!(found.items.len(), 1);
    drop(bank);
    env.call(&id, "c-0", "ok");
    decided_call(&env, &id, "c-1", true);
    decided_call(&env, &id, "c-2", false);
    env.note(&id, "halfway");
    // In flight: requested, and requested and started.
    env.request(&id, "c-3");
    env.request(&id, "c-4");
    env.begin(&id, "c-4", true, "key-c-4");
    checks.state("with calls in flight", &env.sessions.show(&id).unwrap());
    env.begin(&id, "c-3", true, "key-c-3");
    finish(&env, &id, "c-3", true);
    finish(&env, &id, "c-4", true);

    // Usage near, then past, the cost cap: a warning, then a pause; an
    // operator raises the cap and the session resumes.
    let usage = |cost: f64| UsageReport {
        tokens_in: 1000,
        tokens_out: 200,
        cost,
        model: Some("m-large".into()),
        context_tokens: Some(150_000),
        context_limit: Some(200_000),
    };
    for cost in [0.85, 0.3] {
        budget::report_usage(&env.sessions, &budgets, &id, &usage(cost)).expect("usage");
    }
    let paused = env.sessions.show(&id).unwrap();
    assert_eq!(paused.header.status, SessionStatus::Paused, "{paused:?}");
    checks.state("paused by its budget", &paused);
    let raised = budget::raise(
        &env.sessions,
        &budgets,
        &id,
        &BudgetCaps {
            cost_micros: Some(5_000_000),
            ..BudgetCaps::default()
        },
    )
    .expect("raise");
    checks.state("with a cap raised", &raised.state);

    // Paused by its agent, and resumed: what an agent with no memory gets.
    checks.state("paused", &scope.pause(&id, "lunch").unwrap());
    let resumed = scope.resume(&id).unwrap();
    checks.resumed.check("the resume after a pause", &resumed);

    // A child with a task and a budget carved out, reporting back.
    let mut task = Handoff::new(HandoffKind::Task, Role::Supervisor, "write the parser");
    task.notes.files = vec!["src/parse.rs".into()];
    task.notes.success_criteria = vec!["the tests pass".into()];
    let spawned = scope
        .spawn(
            &id,
            SpawnChild {
                budget: BudgetCaps {
                    cost_micros: Some(1_000_000),
                    calls: Some(10),
                    wall_ms: None,
                    tokens: None,
                },
                ..spawn_kid(task)
            },
            &budgets,
            &HashSet::new(),
        )
        .expect("spawn");
    let kid = spawned.child.header.id.clone();
    checks.state("of a child", &spawned.child);
    checks.state("of a parent", &env.sessions.show(&id).unwrap());
    env.call(&kid, "k-1", "ok");
    let mut report = Handoff::new(
        HandoffKind::WorkagentCompletion,
        Role::Workagent,
        "the parser is written",
    );
    report.notes.work_completed = vec!["src/parse.rs".into()];
    report.notes.current_phase = "done".into();
    report.target_session = Some(id.clone());
    scope
        .handoff(&kid, report, &HandoffsConfig::default())
        .expect("the child's report");
    checks.state(
        "of a child that reported",
        &env.sessions.show(&kid).unwrap(),
    );
    checks.state(
        "of a parent with a report",
        &env.sessions.show(&id).unwrap(),
    );

    // The parent's own handoff, gates, and a judge's verdict on it.
    let mut own = Handoff::new(
        HandoffKind::SupervisorToOrchestrator,
        Role::Supervisor,
        "the part is done",
    );
    own.notes.next_steps = vec!["release".into()];
    own.notes.blockers = vec!["none".into()];
    scope
        .handoff(&id, own, &HandoffsConfig::default())
        .expect("handoff");
    let gated = env
        .sessions
        .record_gates(
            &id,
            vec![
                GateResult {
                    tool: "gate.tests".into(),
                    passed: true,
                    detail: "{\"passed\":true}".into(),
                },
                GateResult {
                    tool: "gate.lint".into(),
                    passed: false,
                    detail: "`/warnings` is 2, expected 0".into(),
                },
            ],
        )
        .expect("gates");
    checks.state("after its gates ran", &gated);
    let bench = env
        .sessions
        .scope(&j)
        .start(start_request("bench", Role::Judge), &HashSet::new())
        .expect("the judge's session");
    let judged = env
        .sessions
        .scope(&j)
        .verdict(
            "bench",
            &id,
            VerdictInput {
                pass: false,
                reasons: vec!["the lint gate fails".into()],
                handoff_seq: None,
            },
        )
        .expect("verdict");
    assert!(!judged.verdict.pass);
    checks.state("judged", &env.sessions.show(&id).unwrap());

    // The stuck-agent detector on a call that keeps failing.
    for n in 0..4 {
        env.call(&id, &format!("f-{n}"), "error");
    }
    let checked =
        crate::detect::check(&env.sessions, &DetectorConfig::default(), &id).expect("the detector");
    checks.state("after the detector ran", &checked.state);

    // The tokens of project `costly` reach its daily ceiling: a warning,
    // then the session that reached it is paused.
    let ceilings = BudgetsConfig {
        ceilings: Ceilings {
            projects: [(
                "costly".to_string(),
                PeriodCeilings {
                    day: CeilingLimits {
                        tokens: Some(3000),
                        ..CeilingLimits::default()
                    },
                    ..PeriodCeilings::default()
                },
            )]
            .into(),
            ..Ceilings::default()
        },
        ..BudgetsConfig::default()
    };
    env.sessions.tallies().configure(SpendConfig {
        ceilings: ceilings.ceilings.clone(),
        ..SpendConfig::default()
    });
    let spender = scope
        .start(
            StartSession {
                project: "costly".into(),
                ..start_request("spender", Role::Workagent)
            },
            &HashSet::new(),
        )
        .expect("start")
        .header
        .id;
    env.call(&spender, "s-0", "ok");
    for _ in 0..3 {
        budget::report_usage(&env.sessions, &ceilings, &spender, &usage(0.0)).expect("usage");
    }
    let stopped = env.sessions.show(&spender).unwrap();
    assert_eq!(stopped.header.status, SessionStatus::Paused, "{stopped:?}");
    checks.state("paused at a ceiling", &stopped);
    checks.state(
        "ended at a ceiling",
        &env.sessions.end(&spender, EndOutcome::Interrupted).unwrap(),
    );

    let now = env.sessions.clock_ms();
    for kind in annotations(now) {
        env.sessions.append(&id, kind).expect("an annotation");
    }
    let annotated = env.sessions.show(&id).unwrap();
    checks.state("annotated", &annotated);
    if annotated.header.status == SessionStatus::Paused {
        // By a ceiling or a critical flag: an operator lifts it.
        checks.resumed.check(
            "the resume after the host paused it",
            &env.sessions.resume(&id).unwrap(),
        );
    }

    // Calls lost to a restart: interrupted, and in the next resume.
    env.request(&id, "c-lost");
    env.request(&id, "c-ran");
    env.begin(&id, "c-ran", false, "key-c-ran");
    let env = env.reopen(keyed());
    env.sessions.recover().expect("recover");
    let lost = env.sessions.show(&id).unwrap();
    assert_eq!(lost.interrupted.len(), 2, "{lost:?}");
    checks.state("with calls interrupted", &lost);
    let scope = env.sessions.scope(&w);
    if lost.header.status == SessionStatus::Paused {
        checks.resumed.check(
            "the resume after calls were lost",
            &scope.resume(&id).unwrap(),
        );
    }

    // Ended (the child first) with jobs nobody waited for, then archived.
    let kid_ended = env
        .sessions
        .end(&kid, EndOutcome::Completed)
        .expect("the child ends");
    checks.state("of an ended child", &kid_ended);
    let ended = env
        .sessions
        .end_with_unwaited(
            &id,
            EndOutcome::Exit,
            vec![UnwaitedJob {
                id: "job-0123456789ab".into(),
                tool: "echo.echo".into(),
                status: "running".into(),
            }],
        )
        .expect("end");
    checks.state("ended", &ended);
    checks.state("archived", &env.sessions.archive(&id).unwrap());

    for session in [&id, &kid, &bench.header.id, &spender] {
        checks.log(&env.sessions, session);
        checks.info.check(
            "its index entry",
            &SessionInfo::from(&env.sessions.show(session).unwrap()),
        );
    }

    // Every kind the schema lists was checked, and no other exists.
    let listed: BTreeSet<String> = checks.kind.keys().cloned().collect();
    let seen: BTreeSet<String> = checks.kinds.iter().map(|k| k.to_string()).collect();
    let missed: Vec<&String> = listed.difference(&seen).collect();
    assert!(missed.is_empty(), "event kinds never checked: {missed:?}");
    let unlisted: Vec<&String> = seen.difference(&listed).collect();
    assert!(
        unlisted.is_empty(),
        "event kinds the schema does not list: {unlisted:?}"
    );
}

/// The records of a data dir written by older code (see `fixtures`): every
/// event, checkpoint state and index entry fits today's schemas.
#[test]
fn the_records_of_an_old_data_dir_fit_the_schemas() {
    let mut checks = Checks::new();
    let dump: Value = serde_json::from_str(BEFORE_ISSUE_36).expect("the fixture decodes");
    let mut events = 0;
    for (session, entries) in dump["streams"].as_object().expect("streams") {
        for entry in entries.as_array().expect("a stream") {
            let text = entry.as_str().expect("an event's text");
            let event = Event::from_bytes(text.as_bytes()).expect("an old event decodes");
            assert_eq!(
                event.to_bytes(),
                text.as_bytes(),
                "an old event keeps its bytes"
            );
            checks.event(&event, session);
            events += 1;
        }
    }
    assert!(events > 10, "the fixture holds {events} events");
    let buckets = &dump["buckets"];
    for (key, stored) in buckets["checkpoints"].as_object().expect("checkpoints") {
        let text = stored.as_str().expect("a checkpoint's text");
        let (_, json) = text.split_once('\n').expect("a checkpoint's header line");
        let state: SessionState = serde_json::from_str(json).expect("an old state decodes");
        checks.state(&format!("of checkpoint {key}"), &state);
    }
    for (key, stored) in buckets["sessions"].as_object().expect("sessions") {
        let info: SessionInfo =
            serde_json::from_str(stored.as_str().expect("an entry's text")).expect("decodes");
        checks.info.check(&format!("index entry {key}"), &info);
    }
}
