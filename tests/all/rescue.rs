//! Stuck-agent detection, the escalation ladder, rescue missions, the
//! context index and rescues' proposals to the memory bank, with real
//! sessions and real calls through real plugins.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use glovebox::approvals::Approvals;
use glovebox::budget::BudgetCaps;
use glovebox::detect::{self, EscalationStep};
use glovebox::manifest::{ContextConfig, ContextWriter, HookConfig, MemoryConfig, Severity};
use glovebox::memory::{MemoryBank, MemoryState};
use glovebox::page::PageRequest;
use glovebox::rescue::{
    Category, ContextKind, HandedFile, Handover, MAX_FILE_BYTES, Outcome, RescueError, Rescues,
};
use glovebox::session::{EndOutcome, EventKind, Role, SessionStatus, StartSession};
use glovebox::storage::{Durability, SledStore, Storage};
use glovebox::{Durable, Gateway, Host, HostConfig, SessionError, Sessions};
use serde_json::{Value, json};

use crate::util::{self, NoWholeScan, Site, manifest, plugins};

/// A host with a failing tool (`panic.panic`) and a working one (`echo.echo`),
/// a store whose clock the test moves, and the rescues over it.
struct Rig {
    durable: Arc<Durable>,
    gw: Gateway,
    clock: Arc<AtomicU64>,
    _data: tempfile::TempDir,
    /// The store, refusing a whole read of the buckets agents grow.
    guard: Arc<NoWholeScan>,
}

const T0: u64 = 1_700_000_000_000;

async fn rig_with(edit: impl FnOnce(&mut HostConfig)) -> Rig {
    let (mut config, data) = util::config(vec![
        manifest("echo", plugins::TOOL_ECHO),
        manifest("panic", plugins::HOSTILE_PANIC),
    ]);
    edit(&mut config);
    let host = Host::load(config).await.unwrap();
    let clock = Arc::new(AtomicU64::new(T0));
    let store = Arc::new(SledStore::open(&data.path().join("store"), Durability::Flush).unwrap());
    let guard = Arc::new(NoWholeScan::new(store));
    let storage: Arc<dyn Storage> = guard.clone();
    let c = clock.clone();
    let durable = Durable {
        sessions: Arc::new(
            Sessions::new(storage.clone()).with_clock(move || c.load(Ordering::SeqCst)),
        ),
        approvals: Arc::new(Approvals::new(storage.clone())),
        outbox: Arc::new(glovebox::notify::Outbox::new(storage.clone(), Vec::new())),
        storage,
        recovery: Default::default(),
        repairs: Vec::new(),
    };
    let durable = Arc::new(durable);
    Rig {
        gw: Gateway::new(Arc::new(host), durable.clone()),
        durable,
        clock,
        _data: data,
        guard,
    }
}

async fn rig() -> Rig {
    rig_with(|_| {}).await
}

impl Rig {
    fn start(&self, name: &str, project: &str, expected: Option<Duration>) -> String {
        self.start_with(name, project, expected, BudgetCaps::default())
    }

    fn start_with(
        &self,
        name: &str,
        project: &str,
        expected: Option<Duration>,
        budget: BudgetCaps,
    ) -> String {
        self.durable
            .sessions
            .start(StartSession {
                role: Role::Workagent,
                project: project.into(),
                name: Some(name.into()),
                tags: vec![],
                expected_duration: expected,
                budget,
                completion: Default::default(),
            })
            .unwrap()
            .header
            .id
    }

    fn advance(&self, by: Duration) {
        self.clock
            .fetch_add(by.as_millis() as u64, Ordering::SeqCst);
    }

    async fn call(&self, session: &str, tool: &str, input: Value) -> Result<bool, SessionError> {
        self.advance(Duration::from_secs(1));
        let report = self
            .gw
            .scope(&glovebox::cli_operator())
            .call_in_session(session, tool, &input.to_string())
            .await?;
        Ok(report.outcome.is_ok())
    }

    fn rescues(&self, context: ContextConfig) -> Rescues {
        Rescues::new(
            self.durable.sessions.clone(),
            self.durable.storage.clone(),
            context,
        )
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

    /// `(rule, severity, reason, suggested_action, call_id)` of each flag raised.
    fn flags(&self, session: &str) -> Vec<(String, Severity, String, String, Option<String>)> {
        self.events(session)
            .into_iter()
            .filter_map(|k| match k {
                EventKind::BlockerFlag(f) => {
                    Some((f.rule, f.severity, f.reason, f.suggested_action, f.call_id))
                }
                _ => None,
            })
            .collect()
    }

    fn steps(&self, session: &str) -> Vec<EscalationStep> {
        self.events(session)
            .into_iter()
            .filter_map(|k| match k {
                EventKind::Escalation { step, .. } => Some(step),
                _ => None,
            })
            .collect()
    }

    /// The call id of the last `call_finished` with a non-ok outcome.
    fn last_failed_call(&self, session: &str) -> String {
        self.events(session)
            .into_iter()
            .rev()
            .find_map(|k| match k {
                EventKind::CallFinished {
                    call_id, outcome, ..
                } if outcome != "ok" => Some(call_id),
                _ => None,
            })
            .unwrap()
    }
}

#[tokio::test]
async fn a_failing_tool_called_repeatedly_raises_the_retry_flag_climbs_the_ladder_and_pauses() {
    let r = rig().await;
    let id = r.start("stuck", "alpha", None);
    let sessions = &r.durable.sessions;

    assert!(!r.call(&id, "panic.panic", json!({})).await.unwrap());
    assert_eq!(
        sessions.show(&id).unwrap().watch.escalation,
        EscalationStep::Retry
    );
    assert!(!r.call(&id, "panic.panic", json!({})).await.unwrap());
    assert_eq!(
        sessions.show(&id).unwrap().watch.escalation,
        EscalationStep::Adjust
    );
    assert!(
        r.flags(&id).is_empty(),
        "two failures are not a blocker yet"
    );

    assert!(!r.call(&id, "panic.panic", json!({})).await.unwrap());
    let third = r.last_failed_call(&id);
    let flags = r.flags(&id);
    assert_eq!(flags.len(), 1, "{flags:?}");
    let (rule, severity, reason, action, call_id) = &flags[0];
    assert_eq!((rule.as_str(), *severity), ("retry", Severity::Critical));
    assert!(
        reason.contains("panic.panic") && reason.contains("3 times"),
        "{reason}"
    );
    assert!(
        reason.contains("panicked on purpose"),
        "the last error is named: {reason}"
    );
    assert!(
        action.contains("stop retrying") && action.contains("rescue open"),
        "{action}"
    );
    assert_eq!(call_id.as_deref(), Some(third.as_str()));
    assert_eq!(
        r.steps(&id),
        [
            EscalationStep::Retry,
            EscalationStep::Adjust,
            EscalationStep::Blocker
        ]
    );

    // Critical: the session is paused and takes no more calls.
    let state = sessions.show(&id).unwrap();
    assert_eq!(state.header.status, SessionStatus::Paused);
    assert!(state.paused_reason.as_deref().unwrap().contains("retry"));
    assert_eq!(state.watch.flags["retry"].severity, Severity::Critical);
    let refused = r.call(&id, "echo.echo", json!({"message": "hi"})).await;
    assert!(
        matches!(refused, Err(SessionError::IllegalTransition { .. })),
        "{refused:?}"
    );

    // Not raised again by another run of the detector.
    let check = detect::check(sessions, &Default::default(), &id).unwrap();
    assert!(check.raised.is_empty() && check.escalation.is_none());
    assert_eq!(r.flags(&id).len(), 1);

    // An operator resumes it; progress (a successful call) clears the flag and the ladder.
    sessions.resume(&id).unwrap();
    assert!(
        r.call(&id, "echo.echo", json!({"message": "hi"}))
            .await
            .unwrap()
    );
    let state = sessions.show(&id).unwrap();
    assert!(state.watch.flags.is_empty(), "{:?}", state.watch.flags);
    assert_eq!(state.watch.escalation, EscalationStep::None);
    assert_eq!(state.header.status, SessionStatus::Active);
}

#[tokio::test]
async fn a_critical_condition_that_persists_after_a_resume_pauses_again() {
    let r = rig().await;
    let id = r.start("again", "alpha", None);
    for _ in 0..3 {
        r.call(&id, "panic.panic", json!({})).await.unwrap();
    }
    let sessions = &r.durable.sessions;
    assert_eq!(
        sessions.show(&id).unwrap().header.status,
        SessionStatus::Paused
    );
    sessions.resume(&id).unwrap();
    r.call(&id, "panic.panic", json!({})).await.unwrap();
    assert_eq!(
        sessions.show(&id).unwrap().header.status,
        SessionStatus::Paused
    );
    assert_eq!(r.flags(&id).len(), 2, "raised once per pause");
}

#[tokio::test]
async fn different_inputs_failing_are_not_the_same_call() {
    let r = rig().await;
    let id = r.start("varied", "alpha", None);
    for n in 0..4 {
        r.call(&id, "panic.panic", json!({ "n": n })).await.unwrap();
    }
    assert!(r.flags(&id).is_empty());
    let state = r.durable.sessions.show(&id).unwrap();
    assert_eq!(state.header.status, SessionStatus::Active);
    assert_eq!(state.watch.escalation, EscalationStep::Adjust);
    assert_eq!(state.watch.failure_streak, 4);
}

#[tokio::test]
async fn an_expected_duration_overrun_raises_a_warning_once() {
    let r = rig().await;
    let id = r.start("slow", "alpha", Some(Duration::from_secs(60)));
    assert!(
        r.call(&id, "echo.echo", json!({"message": "a"}))
            .await
            .unwrap()
    );
    assert!(r.flags(&id).is_empty());

    r.advance(Duration::from_secs(121));
    assert!(
        r.call(&id, "echo.echo", json!({"message": "b"}))
            .await
            .unwrap()
    );
    let flags = r.flags(&id);
    assert_eq!(flags.len(), 1, "{flags:?}");
    let (rule, severity, reason, action, _) = &flags[0];
    assert_eq!((rule.as_str(), *severity), ("overrun", Severity::Warning));
    assert!(reason.contains("expected 1m"), "{reason}");
    assert!(action.contains("progress"), "{action}");
    // A warning does not pause.
    let state = r.durable.sessions.show(&id).unwrap();
    assert_eq!(state.header.status, SessionStatus::Active);
    assert_eq!(state.watch.flags["overrun"].severity, Severity::Warning);

    // Not re-raised on every call.
    assert!(
        r.call(&id, "echo.echo", json!({"message": "c"}))
            .await
            .unwrap()
    );
    assert_eq!(r.flags(&id).len(), 1);
}

#[tokio::test]
async fn no_progress_for_the_configured_time_is_flagged_and_progress_clears_it() {
    let r = rig().await;
    let id = r.start("idle", "alpha", None);
    let sessions = &r.durable.sessions;
    let config = glovebox::manifest::DetectorConfig {
        no_progress_after: Duration::from_secs(600),
        ..Default::default()
    };

    r.advance(Duration::from_secs(300));
    assert!(
        detect::check(sessions, &config, &id)
            .unwrap()
            .raised
            .is_empty()
    );
    // Failing calls are activity, not progress.
    r.call(&id, "panic.panic", json!({"a": 1})).await.unwrap();
    r.advance(Duration::from_secs(301));
    let check = detect::check(sessions, &config, &id).unwrap();
    assert_eq!(check.raised.len(), 1, "{:?}", check.raised);
    assert_eq!(check.raised[0].rule, "no_progress");
    assert_eq!(check.raised[0].severity, Severity::Warning);
    assert!(!check.paused);

    sessions
        .append(
            &id,
            EventKind::Note {
                text: "found the cause".into(),
            },
        )
        .unwrap();
    assert!(
        !sessions
            .show(&id)
            .unwrap()
            .watch
            .flags
            .contains_key("no_progress")
    );
}

fn role_allowlist() -> HookConfig {
    let mut hook = HookConfig::new("roles", plugins::HOOK_ROLE_ALLOWLIST);
    hook.settings = json!({"roles": {"workagent": ["echo.*"]}});
    hook
}

#[tokio::test]
async fn repeated_denials_raise_a_flag() {
    let r = rig_with(|c| {
        c.hooks_explicitly_none = false;
        c.hooks = vec![role_allowlist()];
    })
    .await;
    let id = r.start("forbidden", "alpha", None);
    for n in 0..2 {
        assert!(!r.call(&id, "panic.panic", json!({ "n": n })).await.unwrap());
    }
    assert!(r.flags(&id).is_empty());
    assert!(!r.call(&id, "panic.panic", json!({"n": 2})).await.unwrap());
    let flags = r.flags(&id);
    assert_eq!(flags.len(), 1, "{flags:?}");
    let (rule, severity, reason, action, _) = &flags[0];
    assert_eq!((rule.as_str(), *severity), ("denials", Severity::Warning));
    assert!(
        reason.contains("3 of the last 3 calls were denied"),
        "{reason}"
    );
    assert!(action.contains("alternatives"), "{action}");
    let state = r.durable.sessions.show(&id).unwrap();
    assert_eq!(
        state.header.status,
        SessionStatus::Active,
        "a warning does not pause"
    );
    assert_eq!(state.watch.escalation, EscalationStep::Adjust);
}

#[tokio::test]
async fn denials_made_critical_by_the_operator_pause() {
    let r = rig_with(|c| {
        c.hooks_explicitly_none = false;
        c.hooks = vec![role_allowlist()];
        c.detector
            .severity
            .insert("denials".into(), Severity::Critical);
        c.detector.denials = 2;
    })
    .await;
    let id = r.start("forbidden", "alpha", None);
    r.call(&id, "panic.panic", json!({})).await.unwrap();
    r.call(&id, "panic.panic", json!({})).await.unwrap();
    let state = r.durable.sessions.show(&id).unwrap();
    assert_eq!(state.header.status, SessionStatus::Paused);
    assert_eq!(state.watch.escalation, EscalationStep::Blocker);
    assert_eq!(state.watch.flags["denials"].severity, Severity::Critical);
}

#[tokio::test]
async fn budget_above_80_percent_with_failing_calls_is_critical() {
    let r = rig().await;
    let budget = BudgetCaps {
        calls: Some(5),
        ..Default::default()
    };
    let id = r.start_with("spender", "alpha", None, budget);
    for n in 0..3 {
        assert!(
            r.call(&id, "echo.echo", json!({"message": n.to_string()}))
                .await
                .unwrap()
        );
    }
    assert!(r.flags(&id).is_empty());
    // The fourth call runs (80% of the calls cap) and fails.
    assert!(!r.call(&id, "panic.panic", json!({})).await.unwrap());
    let kinds: Vec<&str> = r.events(&id).iter().map(|k| k.name()).collect();
    assert!(kinds.contains(&"budget_warning"), "{kinds:?}");
    let flags = r.flags(&id);
    assert_eq!(flags.len(), 1, "{flags:?}");
    let (rule, severity, reason, action, _) = &flags[0];
    assert_eq!((rule.as_str(), *severity), ("budget", Severity::Critical));
    assert!(reason.contains("calls budget is at 80%"), "{reason}");
    assert!(action.contains("rescue"), "{action}");
    assert_eq!(
        r.durable.sessions.show(&id).unwrap().header.status,
        SessionStatus::Paused
    );
}

#[tokio::test]
async fn budget_above_80_percent_with_failing_completion_gates_is_critical() {
    let r = rig().await;
    let completion: glovebox::manifest::Completion = serde_json::from_value(json!({
        "gates": [{"tool": "echo.echo", "input": {"message": "draft"}, "expect": {"message": "final"}}],
    }))
    .unwrap();
    let id = r
        .durable
        .sessions
        .start(StartSession {
            role: Role::Workagent,
            project: "alpha".into(),
            name: Some("gated".into()),
            tags: vec![],
            expected_duration: None,
            budget: BudgetCaps {
                calls: Some(5),
                ..Default::default()
            },
            completion,
        })
        .unwrap()
        .header
        .id;
    for n in 0..3 {
        assert!(
            r.call(&id, "echo.echo", json!({"message": n.to_string()}))
                .await
                .unwrap()
        );
    }
    // The gate's call is the fourth (80% of the cap), and succeeds; its
    // result is not what the gate expects.
    let err =
        r.gw.scope(&glovebox::cli_operator())
            .end_checked(&id, EndOutcome::Completed)
            .await
            .unwrap_err();
    assert!(err.to_string().contains("`/message` is \"draft\""), "{err}");
    let flags = r.flags(&id);
    assert_eq!(flags.len(), 1, "{flags:?}");
    let (rule, severity, reason, _, _) = &flags[0];
    assert_eq!((rule.as_str(), *severity), ("budget", Severity::Critical));
    assert!(
        reason.contains("completion gates failed 1 time(s) in a row"),
        "{reason}"
    );
    assert_eq!(
        r.durable.sessions.show(&id).unwrap().header.status,
        SessionStatus::Paused
    );
}

#[tokio::test]
async fn a_rescue_from_open_to_resolved_changes_the_next_sessions_starting_context() {
    let r = rig().await;
    let rescues = r.rescues(ContextConfig::default());
    let sessions = &r.durable.sessions;
    let before = r.start("before", "alpha", None);
    assert!(sessions.show(&before).unwrap().context.is_empty());

    let id = r.start("stuck", "alpha", None);
    for _ in 0..3 {
        r.call(&id, "panic.panic", json!({})).await.unwrap();
    }
    let flagged_call = r.last_failed_call(&id);
    let flagged_at = sessions.show(&id).unwrap().watch.flags["retry"].at_ms;

    // open
    r.advance(Duration::from_secs(60));
    let rescue = rescues.open("stuck", None).unwrap();
    assert_eq!(rescue.session, id);
    assert_eq!(rescue.call_id.as_deref(), Some(flagged_call.as_str()));
    assert_eq!(rescue.detected_at_ms, flagged_at);
    assert_eq!(rescue.status(), "open");
    assert!(
        rescue.flags[0].starts_with("retry (critical)"),
        "{:?}",
        rescue.flags
    );
    let state = sessions.show(&id).unwrap();
    assert_eq!(state.watch.escalation, EscalationStep::Rescue);
    assert_eq!(state.watch.rescue.as_deref(), Some(rescue.id.as_str()));
    assert!(matches!(
        rescues.open(&id, None),
        Err(RescueError::InvalidInput(m)) if m.contains("already being rescued")
    ));

    // diagnose
    let rescue = rescues
        .diagnose(
            &rescue.id,
            Category::MissingContext,
            vec!["panic.panic failed 3 times with `{}`".into()],
            "the agent did not know panic.panic always panics",
        )
        .unwrap();
    assert_eq!(rescue.status(), "diagnosed");

    // inject: in the log, and returned by the next resume
    let rescue = rescues
        .inject(
            &rescue.id,
            Handover {
                files: vec![HandedFile {
                    path: "docs/tools.md".into(),
                    content: None,
                }],
                spec_changes: vec!["use echo.echo instead of panic.panic".into()],
                ..Handover::default()
            },
        )
        .unwrap();
    assert_eq!(rescue.status(), "injected");
    let resumed = sessions.resume(&id).unwrap();
    let injected: Vec<(ContextKind, &str, &str)> = resumed
        .context
        .iter()
        .map(|c| (c.kind, c.text.as_str(), c.source.as_str()))
        .collect();
    let source = format!("rescue:{}", rescue.id);
    assert_eq!(
        injected,
        [
            (ContextKind::File, "docs/tools.md", source.as_str()),
            (
                ContextKind::SpecChange,
                "use echo.echo instead of panic.panic",
                source.as_str()
            )
        ]
    );
    assert_eq!(resumed.state.watch.escalation, EscalationStep::Rescue);
    assert!(
        r.call(&id, "echo.echo", json!({"message": "unblocked"}))
            .await
            .unwrap()
    );
    assert_eq!(
        sessions.show(&id).unwrap().watch.escalation,
        EscalationStep::Rescue,
        "only the rescue's resolution takes the session off the rescue step"
    );

    // resolve, with enrich
    r.advance(Duration::from_secs(600));
    let lesson = "panic.panic always panics: never call it to do work";
    let rescue = rescues
        .resolve(&rescue.id, Outcome::Resolved, &[lesson.to_string()])
        .unwrap();
    assert_eq!(rescue.status(), "resolved");
    assert_eq!(rescue.context_updates.len(), 1);
    assert_eq!(
        rescue.time_to_unblock_ms(),
        Some(rescue.resolved_at_ms.unwrap() - flagged_at)
    );
    assert_eq!(
        sessions.show(&id).unwrap().watch.escalation,
        EscalationStep::None
    );
    assert!(matches!(
        rescues.inject(
            &rescue.id,
            Handover {
                spec_changes: vec!["x".into()],
                ..Handover::default()
            }
        ),
        Err(RescueError::InvalidInput(m)) if m.contains("closed")
    ));
    assert_eq!(
        rescues.get(&rescue.id).unwrap(),
        rescue,
        "stored as returned"
    );

    // The lesson is a proposed memory entry of the project: the next session
    // starts with it only once an operator approved it; others never do.
    let bank = MemoryBank::new(r.durable.storage.clone(), MemoryConfig::default());
    let proposed = bank.get(&rescue.context_updates[0]).unwrap();
    assert_eq!(proposed.state, MemoryState::Proposed);
    assert_eq!(proposed.text, lesson);
    assert_eq!(
        proposed.provenance.rescue.as_deref(),
        Some(rescue.id.as_str())
    );
    assert_eq!(proposed.provenance.session.as_deref(), Some(id.as_str()));
    let unreviewed = r.start("unreviewed", "alpha", None);
    assert!(sessions.show(&unreviewed).unwrap().context.is_empty());
    bank.approve(&proposed.id, "cli:test", rescues.now())
        .unwrap();
    let next = sessions
        .start(StartSession {
            role: Role::Workagent,
            project: "alpha".into(),
            name: Some("next".into()),
            tags: vec![],
            expected_duration: None,
            budget: Default::default(),
            completion: Default::default(),
        })
        .unwrap();
    assert_eq!(next.context.len(), 1, "{:?}", next.context);
    assert_eq!(next.context[0].text, lesson);
    assert_eq!(next.context[0].id, rescue.context_updates[0]);
    assert_eq!(next.context[0].source, "memory:project:alpha");
    assert!(matches!(
        &r.events(&next.header.id)[1],
        EventKind::ContextInjected { source, entries } if source == "memory" && entries.len() == 1
    ));
    assert_eq!(
        sessions.resume(&next.header.id).unwrap().context,
        next.context
    );
    let other = r.start("other", "beta", None);
    assert!(sessions.show(&other).unwrap().context.is_empty());
    assert!(
        sessions.show(&before).unwrap().context.is_empty(),
        "only new sessions"
    );

    // Retired entries are no longer handed out.
    bank.retire(&proposed.id, "cli:test", None, rescues.now())
        .unwrap();
    let later = r.start("later", "alpha", None);
    assert!(sessions.show(&later).unwrap().context.is_empty());

    // The operator's own context index entries reach sessions at once.
    let index = rescues.index();
    index
        .add(
            "alpha",
            "NEVER call panic.panic",
            ContextWriter::Operator,
            None,
            1,
        )
        .unwrap();
    assert_eq!(
        index
            .search("never CALL", Some("alpha"), &Default::default())
            .unwrap()
            .items
            .len(),
        1
    );
    let indexed = r.start("indexed", "alpha", None);
    assert_eq!(sessions.show(&indexed).unwrap().context.len(), 1);
}

#[tokio::test]
async fn context_writers_is_an_operator_setting() {
    let r = rig().await;
    let operator_only = ContextConfig {
        writers: vec![ContextWriter::Operator],
    };
    let rescues = r.rescues(operator_only);
    let id = r.start("stuck", "alpha", None);
    let rescue = rescues.open(&id, None).unwrap();
    let refused = rescues
        .resolve(&rescue.id, Outcome::Resolved, &["a lesson".into()])
        .unwrap_err();
    assert!(
        matches!(&refused, RescueError::Refused(m) if m.contains("[context] writers")),
        "{refused}"
    );
    assert!(
        rescues.get(&rescue.id).unwrap().outcome.is_none(),
        "nothing changed"
    );
    assert!(
        rescues
            .index()
            .list(None, true, &Default::default())
            .unwrap()
            .items
            .is_empty()
    );
    assert!(
        MemoryBank::new(r.durable.storage.clone(), MemoryConfig::default())
            .page(&Default::default(), &Default::default())
            .unwrap()
            .items
            .is_empty(),
        "nothing proposed"
    );
    // Without enrich it resolves; the operator may still write.
    rescues.resolve(&rescue.id, Outcome::Resolved, &[]).unwrap();
    rescues
        .index()
        .add(
            "alpha",
            "an operator's note",
            ContextWriter::Operator,
            None,
            1,
        )
        .unwrap();

    let nobody = r.rescues(ContextConfig { writers: vec![] });
    assert!(matches!(
        nobody
            .index()
            .add("alpha", "x", ContextWriter::Operator, None, 1),
        Err(RescueError::Refused(_))
    ));
}

#[tokio::test]
async fn the_rescue_report_matches_the_records() {
    let r = rig().await;
    let rescues = r.rescues(ContextConfig::default());
    let minute = Duration::from_secs(60);

    // Too old for a 30-day report.
    let old = r.start("old", "alpha", None);
    let ancient = rescues.open(&old, None).unwrap();
    rescues
        .resolve(&ancient.id, Outcome::Resolved, &["old".into()])
        .unwrap();
    r.advance(Duration::from_secs(40 * 86_400));

    let plan = [
        (
            Some(Category::MissingContext),
            Some(Outcome::Resolved),
            10u64,
            2usize,
        ),
        (
            Some(Category::MissingContext),
            Some(Outcome::Resolved),
            20,
            1,
        ),
        (Some(Category::ToolDefect), Some(Outcome::Resolved), 45, 0),
        (
            Some(Category::AmbiguousSpec),
            Some(Outcome::Abandoned),
            5,
            0,
        ),
        (None, None, 0, 0),
    ];
    for (i, (category, outcome, minutes, enrich)) in plan.iter().enumerate() {
        let s = r.start(&format!("s{i}"), "alpha", None);
        // A flag detected a few minutes before the rescue opens.
        for _ in 0..3 {
            r.call(&s, "panic.panic", json!({})).await.unwrap();
        }
        r.advance(3 * minute);
        let rescue = rescues.open(&s, None).unwrap();
        if let Some(c) = category {
            rescues.diagnose(&rescue.id, *c, vec![], "cause").unwrap();
        }
        r.advance(minute * (*minutes as u32));
        if let Some(o) = outcome {
            let texts: Vec<String> = (0..*enrich).map(|k| format!("lesson {i}.{k}")).collect();
            rescues.resolve(&rescue.id, *o, &texts).unwrap();
        }
    }

    let report = rescues.report(30).unwrap();
    let records: Vec<_> = rescues
        .list(&PageRequest::first(100))
        .unwrap()
        .items
        .into_iter()
        .filter(|x| x.opened_at_ms >= report.since_ms)
        .collect();
    assert_eq!(records.len(), 5);
    assert_eq!(report.rescues, records.len());
    let resolved: Vec<u64> = records
        .iter()
        .filter_map(|x| x.time_to_unblock_ms())
        .collect();
    assert_eq!(resolved.len(), 3);
    assert_eq!(
        report.mean_time_to_unblock_ms,
        Some(resolved.iter().sum::<u64>() / 3)
    );
    // Detection is the flag, before the opening: each unblock time includes
    // the 3 minutes to open it.
    let expected_mean = ((10 + 3) + (20 + 3) + (45 + 3)) * 60_000 / 3;
    let mean = report.mean_time_to_unblock_ms.unwrap();
    assert!(
        mean.abs_diff(expected_mean) < 5_000,
        "{mean} vs {expected_mean}"
    );
    assert_eq!(
        report.context_updates,
        records
            .iter()
            .map(|x| x.context_updates.len())
            .sum::<usize>()
    );
    assert_eq!(report.context_updates, 3);
    // Diagnosed as soon as opened, 3 minutes after the flag; two of the four
    // closed rescues (one resolved, one abandoned) proposed no lesson.
    let diagnose = report.mean_time_to_diagnose_ms.unwrap();
    assert!(diagnose.abs_diff(3 * 60_000) < 5_000, "{diagnose}");
    assert_eq!(report.closed_without_enrichment, 2);
    assert_eq!(report.share_closed_without_enrichment, Some(0.5));
    assert_eq!(
        (
            report.resolved,
            report.abandoned,
            report.re_escalated,
            report.open
        ),
        (3, 1, 0, 1)
    );
    let expect: Vec<(&str, usize)> = vec![
        ("ambiguous_spec", 1),
        ("missing_context", 2),
        ("tool_defect", 1),
        ("undiagnosed", 1),
    ];
    let got: Vec<(&str, usize)> = report
        .by_category
        .iter()
        .map(|(k, v)| (k.as_str(), *v))
        .collect();
    assert_eq!(got, expect);
    assert_eq!(rescues.report(60).unwrap().rescues, 6);
    assert!(r.guard.tried().is_empty(), "{:?}", r.guard.tried());
}

/// Why: rescue listings, the report, the context index's search and a
/// session start's read of it decoded whole buckets an agent that keeps
/// getting stuck grows without end; here the store refuses that.
#[tokio::test]
async fn threat_49_rescues_and_the_context_index_are_read_a_page_at_a_time() {
    let r = rig().await;
    let rescues = r.rescues(ContextConfig::default());
    let mut opened = Vec::new();
    for i in 0..5 {
        let s = r.start(&format!("s{i}"), "alpha", None);
        let rescue = rescues.open(&s, None).unwrap();
        if i % 2 == 0 {
            rescues.resolve(&rescue.id, Outcome::Resolved, &[]).unwrap();
        }
        opened.push(rescue.id);
        r.advance(Duration::from_secs(60));
    }
    let first = rescues.list(&PageRequest::first(2)).unwrap();
    assert_eq!(first.items.len(), 2);
    assert_eq!(first.items[0].id, opened[4], "the latest opened first");
    let rest = rescues
        .list(&PageRequest {
            limit: Some(10),
            cursor: first.next_cursor.clone(),
        })
        .unwrap();
    assert_eq!(rest.items.len(), 3);
    assert!(rest.next_cursor.is_none());
    assert_eq!(rest.items[2].id, opened[0]);
    let open = rescues.open_rescues(&PageRequest::default()).unwrap();
    let open: Vec<&str> = open.items.iter().map(|x| x.id.as_str()).collect();
    assert_eq!(open, [opened[3].as_str(), opened[1].as_str()]);
    let report = rescues.report(1).unwrap();
    assert_eq!((report.rescues, report.open, report.resolved), (5, 2, 3));

    let index = rescues.index();
    let entry = index
        .add("alpha", "echo is safe", ContextWriter::Operator, None, 1)
        .unwrap();
    index
        .add("beta", "echo elsewhere", ContextWriter::Operator, None, 2)
        .unwrap();
    let found = index
        .search("ECHO", Some("alpha"), &PageRequest::default())
        .unwrap();
    assert_eq!(found.items.len(), 1);
    assert_eq!(index.get(&entry.id).unwrap().text, "echo is safe");
    let started = r.start("after", "alpha", None);
    let context = r.durable.sessions.show(&started).unwrap().context;
    assert_eq!(context.len(), 1, "{context:?}");
    index.retire(&entry.id, ContextWriter::Operator, 3).unwrap();
    let later = r.start("later", "alpha", None);
    assert!(r.durable.sessions.show(&later).unwrap().context.is_empty());
    assert!(r.guard.tried().is_empty(), "{:?}", r.guard.tried());
}

// ---- the CLI ------------------------------------------------------------------

/// The panic and echo plugins, with `extra` tables in the config.
fn site(extra: &str) -> Site {
    Site::with_config(
        extra,
        &[
            (
                "panic.toml",
                format!(
                    "name = \"panic\"\ncomponent = \"{}\"\n",
                    plugins::HOSTILE_PANIC
                ),
            ),
            (
                "echo.toml",
                format!("name = \"echo\"\ncomponent = \"{}\"\n", plugins::TOOL_ECHO),
            ),
        ],
    )
}

/// Why: `glovebox rescue list` printed every rescue ever opened, read whole
/// from the store; it pages now (`--limit`, `--cursor`, the next cursor on
/// stderr, `--json` still an array), as `context list` does.
#[test]
fn threat_49_rescue_list_pages_through_the_cli() {
    let site = site("");
    let mut ids = Vec::new();
    for i in 0..3 {
        let name = format!("w{i}");
        site.json(&[
            "session",
            "start",
            "--role",
            "workagent",
            "--project",
            "cli",
            "--name",
            &name,
        ]);
        let rescue = site.json(&["rescue", "open", &name]);
        ids.push(rescue["id"].as_str().unwrap().to_string());
    }
    let (code, out, err) = site.run(&["rescue", "list", "--limit", "2", "--json"]);
    assert_eq!(code, 0, "{err}");
    let page: Value = serde_json::from_str(&out).unwrap();
    let page = page.as_array().expect("an array");
    assert_eq!(page.len(), 2);
    let cursor = err
        .split("--cursor ")
        .nth(1)
        .and_then(|rest| rest.split('`').next())
        .unwrap_or_else(|| panic!("no next cursor on stderr: {err}"))
        .to_string();
    let (code, out, err) = site.run(&[
        "rescue", "list", "--limit", "2", "--json", "--cursor", &cursor,
    ]);
    assert_eq!(code, 0, "{err}");
    let rest: Value = serde_json::from_str(&out).unwrap();
    let rest = rest.as_array().expect("an array");
    assert_eq!(rest.len(), 1);
    assert!(!err.contains("--cursor"), "the last page: {err}");
    let mut seen: Vec<&str> = page
        .iter()
        .chain(rest)
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    let mut want: Vec<&str> = ids.iter().map(String::as_str).collect();
    // The latest opened first.
    assert_eq!(seen[0], want[2]);
    seen.sort();
    want.sort();
    assert_eq!(seen, want);
    let (code, _, err) = site.run(&["rescue", "list", "--cursor", "nonsense"]);
    assert_eq!(code, 4, "{err}");
    assert!(err.contains("cursor `nonsense`"), "{err}");

    for text in ["first fact", "second fact"] {
        site.json(&["context", "add", "--project", "cli", text]);
    }
    let (code, out, err) = site.run(&["context", "list", "--limit", "1", "--json"]);
    assert_eq!(code, 0, "{err}");
    let listed: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(listed[0]["text"], "second fact");
    assert!(err.contains("--cursor "), "{err}");
}

#[test]
fn rescue_and_context_through_the_cli() {
    let site =
        site("[detector]\nretry_failures = 2\n[context]\nwriters = [\"operator\", \"rescue\"]\n");

    site.json(&[
        "session",
        "start",
        "--role",
        "workagent",
        "--project",
        "cli",
        "--name",
        "w",
    ]);
    for _ in 0..2 {
        let (code, _, _) = site.run(&["call", "--session", "w", "panic.panic", "--input", "{}"]);
        assert_eq!(code, 5);
    }
    let shown = site.json(&["session", "show", "w"]);
    assert_eq!(shown["status"], "paused");
    assert_eq!(shown["watch"]["escalation"], "blocker");
    assert_eq!(shown["watch"]["flags"]["retry"]["severity"], "critical");
    let (code, out, err) = site.run(&["session", "check", "w"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("escalation step `blocker`") && out.contains("retry [critical]"),
        "{out}"
    );

    let rescue = site.json(&["rescue", "open", "w"]);
    let rid = rescue["id"].as_str().unwrap().to_string();
    assert!(rescue["call_id"].is_string());
    site.json(&[
        "rescue",
        "diagnose",
        &rid,
        "--category",
        "tool_defect",
        "--evidence",
        "panics every time",
        "--evidence",
        "same input",
        "--root-cause",
        "the tool is broken",
    ]);
    let (code, _, err) = site.run(&[
        "rescue",
        "diagnose",
        &rid,
        "--category",
        "vibes",
        "--root-cause",
        "x",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("missing_context"), "{err}");
    site.json(&[
        "rescue",
        "inject",
        &rid,
        "--file",
        "NOTES.md",
        "--spec-change",
        "use echo",
    ]);
    let resumed = site.json(&["session", "resume", "w"]);
    assert_eq!(resumed["context"][0]["text"], "NOTES.md");
    assert_eq!(resumed["context"][1]["kind"], "spec_change");
    let resolved = site.json(&[
        "rescue",
        "resolve",
        &rid,
        "--outcome",
        "resolved",
        "--enrich",
        "panic.panic is for tests only",
    ]);
    assert_eq!(resolved["outcome"], "resolved");
    // The enrichment is proposed to the project's memory, and reaches new
    // sessions once `glovebox memory approve` approved it.
    let start_cli = || {
        site.json(&[
            "session",
            "start",
            "--role",
            "workagent",
            "--project",
            "cli",
        ])
    };
    assert_eq!(start_cli()["context"], json!([]));
    let review = site.json(&["memory", "review", "--json"]);
    assert_eq!(review[0]["provenance"]["rescue"], rid.as_str());
    assert_eq!(review[0]["id"], resolved["context_updates"][0]);
    site.json(&["memory", "approve", review[0]["id"].as_str().unwrap()]);
    let next = start_cli();
    assert_eq!(next["context"][0]["text"], "panic.panic is for tests only");

    let added = site.json(&[
        "context",
        "add",
        "--project",
        "cli",
        "echo answers with its input",
    ]);
    let cid = added["id"].as_str().unwrap().to_string();
    let listed = site.json(&["context", "list", "--project", "cli", "--json"]);
    assert_eq!(listed.as_array().unwrap().len(), 1);
    let found = site.json(&["context", "search", "ECHO input", "--json"]);
    assert_eq!(found.as_array().unwrap().len(), 1);
    site.json(&["context", "retire", &cid]);
    let listed = site.json(&["context", "list", "--project", "cli", "--json"]);
    assert_eq!(listed.as_array().unwrap().len(), 0);

    let (code, out, _) = site.run(&["rescue", "list"]);
    assert_eq!(code, 0);
    assert!(
        out.contains(&rid) && out.contains("resolved") && out.contains("tool_defect"),
        "{out}"
    );
    let report = site.json(&["rescue", "report", "--days", "30", "--json"]);
    assert_eq!(report["rescues"], 1);
    assert_eq!(report["resolved"], 1);
    assert_eq!(report["context_updates"], 1);
    assert_eq!(report["by_category"]["tool_defect"], 1);
    let record = site.json(&["rescue", "show", &rid]);
    assert_eq!(
        report["mean_time_to_unblock_ms"].as_u64().unwrap(),
        record["resolved_at_ms"].as_u64().unwrap() - record["detected_at_ms"].as_u64().unwrap()
    );
    let (code, out, _) = site.run(&["rescue", "report"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("rescues:              1") && out.contains("tool_defect"),
        "{out}"
    );

    // An operator who keeps rescues out of the index.
    site.set_config("[context]\nwriters = [\"operator\"]\n");
    site.json(&[
        "session",
        "start",
        "--role",
        "workagent",
        "--project",
        "cli",
        "--name",
        "w2",
    ]);
    let r2 = site.json(&["rescue", "open", "w2"]);
    let (code, _, err) = site.run(&[
        "rescue",
        "resolve",
        r2["id"].as_str().unwrap(),
        "--outcome",
        "resolved",
        "--enrich",
        "x",
    ]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("[context] writers"), "{err}");

    // A typo in the config is an error, not ignored.
    site.set_config("[detector]\nretry_failure = 2\n");
    let (code, _, err) = site.run(&["rescue", "list"]);
    assert_eq!(code, 2, "{err}");
}

/// An injection carries what the operator found and the content of the
/// files the operator's side holds (the agent's grants may not reach them),
/// each with its SHA-256; the command line reads them where it runs, also
/// when a server holds the data dir; the agent gets them from
/// `session_resume`, and the rescue names its assignee.
#[test]
fn a_rescue_hands_the_agent_file_content_read_on_the_operators_side() {
    let site = site("");
    let mut server = crate::mcp::Server::initialized(&site.config(), &[]);
    let state = server.ok(
        1,
        "session_start",
        json!({"role": "workagent", "project": "p", "name": "stuck"}),
    );
    assert!(state["id"].is_string(), "{state}");
    // At work (active): the rescue pauses it.
    server.ok(2, "echo.echo", json!({"message": "working"}));
    site.wait_for_control_socket();

    // The operator's files, relative to where the operator runs the command
    // (not where the server runs).
    let desk = tempfile::tempdir().unwrap();
    let spec = "# Deploy\nUse the staging database with --ssl.\n";
    std::fs::write(desk.path().join("runbook.md"), spec).unwrap();
    std::fs::write(desk.path().join("huge.log"), "x".repeat(MAX_FILE_BYTES + 1)).unwrap();
    std::fs::write(desk.path().join("blob.bin"), [0xff, 0xfe, 0x00]).unwrap();
    let operator = |args: &[&str]| site.run_in(desk.path(), args);

    let (code, out, err) = operator(&["rescue", "open", "stuck", "--assignee", "alice"]);
    assert_eq!(code, 0, "{err}");
    let opened: Value = serde_json::from_str(&out).unwrap();
    let rid = opened["id"].as_str().unwrap().to_string();
    assert_eq!(opened["assignee"], "alice");
    let (code, out, err) = operator(&["rescue", "assign", &rid, "--to", "bob"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        serde_json::from_str::<Value>(&out).unwrap()["assignee"],
        "bob"
    );

    // Refused whole, naming the file and the fix; nothing is handed over.
    for (file, words) in [("huge.log", "at most"), ("blob.bin", "not UTF-8 text")] {
        let (code, _, err) = operator(&["rescue", "inject", &rid, "--file", file]);
        assert_ne!(code, 0, "{file}");
        assert!(err.contains(file) && err.contains(words), "{file}: {err}");
    }
    let (code, _, err) = operator(&["rescue", "inject", &rid]);
    assert_ne!(code, 0);
    assert!(err.contains("--description TEXT"), "{err}");

    let (code, out, err) = operator(&[
        "rescue",
        "inject",
        &rid,
        "--description",
        "the deploy needs TLS to the database",
        "--file",
        "runbook.md",
        "--file",
        "src/in-the-agents-tree.rs",
        "--spec-change",
        "deploy to staging first",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("src/in-the-agents-tree.rs") && err.contains("its path, not its content"),
        "{err}"
    );
    let injected: Value = serde_json::from_str(&out).unwrap();
    let digest = {
        use sha2::Digest as _;
        sha2::Sha256::digest(spec.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    assert_eq!(
        injected["injections"][0]["attached"],
        json!([{"path": "runbook.md", "sha256": digest, "bytes": spec.len()}])
    );
    assert_eq!(
        injected["injections"][0]["description"],
        "the deploy needs TLS to the database"
    );

    // Pushed at once on the agent's connection: a log message addressed to
    // it, carrying the description, the file's content and digest, the spec
    // change (and nothing of the refused injections above).
    let pushed = loop {
        let line = server
            .next_line(std::time::Duration::from_secs(30))
            .expect("the handover is pushed on the agent's connection");
        if line["method"] == "notifications/message"
            && line["params"]["logger"] == "glovebox.rescue"
        {
            break line["params"]["data"].clone();
        }
    };
    assert_eq!(pushed["kind"], "rescue_handover", "{pushed}");
    assert_eq!(pushed["source"], format!("rescue:{rid}"), "{pushed}");
    assert_eq!(pushed["session"], state["id"], "{pushed}");
    assert!(
        pushed["message"]
            .as_str()
            .unwrap()
            .contains("session_status"),
        "{pushed}"
    );
    let entries = pushed["entries"].as_array().unwrap();
    assert_eq!(
        entries[0]["text"], "the deploy needs TLS to the database",
        "{pushed}"
    );
    let runbook = entries
        .iter()
        .find(|e| e["text"] == "runbook.md")
        .unwrap_or_else(|| panic!("{pushed}"));
    assert_eq!(runbook["content"], spec, "{pushed}");
    assert_eq!(runbook["sha256"], digest, "{pushed}");
    assert!(
        entries
            .iter()
            .any(|e| e["text"] == "deploy to staging first"),
        "{pushed}"
    );

    // The agent's next call is refused (the session is paused) and says
    // what waits for it.
    let (kind, message) = server.refused(3, "echo.echo", json!({"message": "again"}));
    assert!(
        message.contains(&format!("rescue `{rid}` handed over context"))
            && message.contains("`session_status`"),
        "{kind}: {message}"
    );

    // The agent reads it at once, paused, over MCP: the description, the
    // file's content and digest, the path alone, the spec change, in that
    // order.
    let status = server.ok(4, "session_status", json!({}));
    let source = format!("rescue:{rid}");
    let context: Vec<Value> = status["context"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["source"] == source.as_str())
        .cloned()
        .collect();
    assert_eq!(context.len(), 4, "{status}");
    assert_eq!(context[0]["kind"], "note");
    assert_eq!(context[0]["text"], "the deploy needs TLS to the database");
    assert_eq!(context[1]["kind"], "file");
    assert_eq!(context[1]["text"], "runbook.md");
    assert_eq!(context[1]["content"], spec);
    assert_eq!(context[1]["sha256"], digest.as_str());
    assert_eq!(context[2]["text"], "src/in-the-agents-tree.rs");
    assert!(context[2].get("content").is_none(), "{}", context[2]);
    assert_eq!(context[3]["kind"], "spec_change");
    // The operator closes the rescue, which lifts the pause it took; the
    // agent's resume returns the same context, and its calls run.
    let (code, _, err) = operator(&["rescue", "resolve", &rid, "--outcome", "resolved"]);
    assert_eq!(code, 0, "{err}");
    let resumed = server.ok(5, "session_resume", json!({"session": "stuck"}));
    let handed: Vec<&Value> = resumed["context"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["source"] == source.as_str())
        .collect();
    assert_eq!(handed.len(), 4, "{resumed}");
    assert_eq!(handed[1]["content"], spec);
    server.ok(6, "echo.echo", json!({"message": "unblocked"}));
    drop(server);

    // The log that carries the content still verifies.
    let (code, out, err) = site.run(&["log", "verify", "stuck"]);
    assert_eq!(code, 0, "{out}{err}");
}

/// `glovebox rescue` runs the registry's operations and exits on each kind
/// of refusal as it did before: a rescue that is not there or an argument
/// the ledger refuses 4, a session that is not there 8 (the session refused
/// it), each with the ledger's words; the same through a running server.
#[test]
fn rescue_commands_exit_on_refusals_as_before_with_and_without_a_server() {
    let site = site("");
    let check = |when: &str| {
        let (code, out, err) = site.run(&["rescue", "show", "r-nothing"]);
        assert_eq!(code, 4, "{when}: {err}");
        assert!(out.is_empty(), "{when}: {out}");
        assert_eq!(
            err.trim_end(),
            "error: no rescue `r-nothing`: `glovebox rescue list` lists them",
            "{when}"
        );
        let (code, _, err) = site.run(&["rescue", "open", "nobody"]);
        assert_eq!(code, 8, "{when}: {err}");
        assert!(err.contains("nobody"), "{when}: {err}");
        let opened = site.json(&["rescue", "open", when]);
        let rid = opened["id"].as_str().unwrap();
        let (code, _, err) = site.run(&["rescue", "assign", rid, "--to", " "]);
        assert_eq!(code, 4, "{when}: {err}");
        assert!(
            err.contains("an assignee is a name of 1 to 256 bytes, not 0: `--to NAME`"),
            "{when}: {err}"
        );
        let resolved = site.json(&["rescue", "resolve", rid, "--outcome", "abandoned"]);
        assert_eq!(resolved["outcome"], "abandoned", "{when}");
        let (code, _, err) = site.run(&[
            "rescue",
            "diagnose",
            rid,
            "--category",
            "other",
            "--root-cause",
            "x",
        ]);
        assert_eq!(code, 4, "{when}: {err}");
        assert!(
            err.contains(&format!(
                "rescue `{rid}` is closed (abandoned): cannot diagnose it"
            )),
            "{when}: {err}"
        );
    };
    for name in ["here", "served"] {
        site.start_workagent(name);
    }
    check("here");
    let _server = crate::mcp::Server::initialized(&site.config(), &[]);
    site.wait_for_control_socket();
    check("served");
}

/// A rescue open past `[detector] rescue_target` raises `rescue_overdue`
/// on its session at the sweep (once), which reaches the operator as every
/// flag does; the rescue's end clears it.
#[tokio::test]
async fn a_rescue_open_past_its_target_raises_a_flag_that_its_end_clears() {
    let r = rig_with(|c| c.detector.rescue_target = Duration::from_secs(45 * 60)).await;
    let rescues = r.rescues(ContextConfig::default());
    let id = r.start("late", "alpha", None);
    let rescue = rescues.open(&id, None).unwrap();
    let overdue = |r: &Rig| {
        r.flags(&id)
            .into_iter()
            .filter(|f| f.0 == "rescue_overdue")
            .collect::<Vec<_>>()
    };

    r.advance(Duration::from_secs(44 * 60));
    glovebox::sweep::pass(&r.gw).await.unwrap();
    assert!(overdue(&r).is_empty(), "not yet past the target");

    r.advance(Duration::from_secs(2 * 60));
    let swept = glovebox::sweep::pass(&r.gw).await.unwrap();
    assert!(
        swept.raised.iter().any(|f| f.rule == "rescue_overdue"),
        "{:?}",
        swept.raised
    );
    let flags = overdue(&r);
    assert_eq!(flags.len(), 1);
    let (_, severity, reason, action, _) = &flags[0];
    assert_eq!(*severity, Severity::Warning);
    assert!(
        reason.contains(&rescue.id) && reason.contains("46 min") && reason.contains("45 min"),
        "{reason}"
    );
    assert!(action.contains("glovebox rescue assign"), "{action}");
    // What the operator hears: a `flag` notification naming the rule.
    let events = r.durable.sessions.events(&id, 1, usize::MAX).unwrap();
    let flagged = events
        .iter()
        .rposition(|e| matches!(&e.kind, EventKind::BlockerFlag(f) if f.rule == "rescue_overdue"))
        .unwrap();
    let mut before = r.durable.sessions.show(&id).unwrap();
    before.watch.flags.remove("rescue_overdue");
    let heard = glovebox::notify::derive(&before, &events[flagged]);
    assert!(
        heard
            .iter()
            .any(|(_, n)| n.summary.contains("rescue_overdue")),
        "{:?}",
        heard.iter().map(|(_, n)| &n.summary).collect::<Vec<_>>()
    );

    // Raised once while it holds.
    r.advance(Duration::from_secs(10 * 60));
    glovebox::sweep::pass(&r.gw).await.unwrap();
    assert_eq!(overdue(&r).len(), 1);

    rescues.resolve(&rescue.id, Outcome::Resolved, &[]).unwrap();
    let shown = r.durable.sessions.show(&id).unwrap();
    assert!(!shown.watch.flags.contains_key("rescue_overdue"));
    r.advance(Duration::from_secs(60 * 60));
    glovebox::sweep::pass(&r.gw).await.unwrap();
    assert_eq!(overdue(&r).len(), 1, "a closed rescue is never overdue");
}
