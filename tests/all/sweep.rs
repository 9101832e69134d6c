//! The detector's sweep: the time-based rules over live sessions with no
//! call needed (a clock the test moves), the auto-archive, and the sweep of a
//! real `glovebox serve` flagging an idle session that `session list
//! --blocked` then lists.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use glovebox::approvals::{Approval, ApprovalStatus, Approvals};
use glovebox::budget::BudgetCaps;
use glovebox::detect::EscalationStep;
use glovebox::manifest::Severity;
use glovebox::session::{EndOutcome, EventKind, Role, SessionStatus, StartSession};
use glovebox::storage::{Durability, SledStore, Storage};
use glovebox::{Durable, Gateway, Host, HostConfig, Sessions};
use serde_json::json;

use crate::mcp::Server;
use crate::util::{self, manifest, plugins};

/// A gateway serving echo over a store whose clock the test moves.
struct Rig {
    durable: Arc<Durable>,
    gw: Gateway,
    clock: Arc<AtomicU64>,
    _data: tempfile::TempDir,
    _store: Arc<SledStore>,
}

const T0: u64 = 1_700_000_000_000;
const MIN: Duration = Duration::from_secs(60);
const DAY: Duration = Duration::from_secs(86_400);

async fn rig(edit: impl FnOnce(&mut HostConfig)) -> Rig {
    let (mut config, data) = util::config(vec![manifest("echo", plugins::TOOL_ECHO)]);
    edit(&mut config);
    let host = Host::load(config).await.unwrap();
    let clock = Arc::new(AtomicU64::new(T0));
    let store = Arc::new(SledStore::open(&data.path().join("store"), Durability::Flush).unwrap());
    let storage: Arc<dyn Storage> = store.clone();
    let c = clock.clone();
    let durable = Arc::new(Durable {
        sessions: Arc::new(
            Sessions::new(storage.clone()).with_clock(move || c.load(Ordering::SeqCst)),
        ),
        approvals: Arc::new(Approvals::new(storage.clone())),
        outbox: Arc::new(glovebox::notify::Outbox::new(storage.clone(), Vec::new())),
        storage,
        recovery: Default::default(),
        repairs: Vec::new(),
    });
    Rig {
        gw: Gateway::new(Arc::new(host), durable.clone()),
        durable,
        clock,
        _data: data,
        _store: store,
    }
}

impl Rig {
    fn start(&self, name: &str, expected: Option<Duration>) -> String {
        self.durable
            .sessions
            .start(StartSession {
                role: Role::Workagent,
                project: "p".into(),
                name: Some(name.into()),
                tags: vec![],
                expected_duration: expected,
                budget: BudgetCaps::default(),
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

    async fn echo(&self, session: &str) {
        let report = self
            .gw
            .scope(&glovebox::cli_operator())
            .call_in_session(session, "echo.echo", r#"{"message":"hi"}"#)
            .await
            .unwrap();
        assert!(report.outcome.is_ok(), "{:?}", report.outcome);
    }

    /// The rules of the session's `blocker_flag` events, in order.
    fn flag_events(&self, id: &str) -> Vec<String> {
        self.durable
            .sessions
            .events(id, 1, usize::MAX)
            .unwrap()
            .into_iter()
            .filter_map(|e| match e.kind {
                EventKind::BlockerFlag(flag) => Some(flag.rule),
                _ => None,
            })
            .collect()
    }
}

#[tokio::test]
async fn a_sweep_flags_a_session_that_stopped_calling_tools_once() {
    let r = rig(|c| c.detector.no_progress_after = 10 * MIN).await;
    let idle = r.start("idle", None);
    let busy = r.start("busy", None);
    r.echo(&idle).await;
    r.echo(&busy).await;

    r.advance(6 * MIN);
    r.echo(&busy).await;
    let swept = glovebox::sweep::pass(&r.gw).await.unwrap();
    assert_eq!(swept.judged, 2);
    assert!(swept.is_empty(), "nothing is overdue yet: {swept:?}");

    // Past no_progress_after for `idle` only, with no call in between.
    r.advance(5 * MIN);
    let swept = glovebox::sweep::pass(&r.gw).await.unwrap();
    let raised: Vec<_> = swept
        .raised
        .iter()
        .map(|f| (f.session.as_str(), f.rule.as_str(), f.severity))
        .collect();
    assert_eq!(
        raised,
        [(idle.as_str(), "no_progress", Severity::Warning)],
        "{swept:?}"
    );
    assert!(swept.paused.is_empty() && swept.archived.is_empty());
    let state = r.durable.sessions.show(&idle).unwrap();
    assert_eq!(
        state.header.status,
        SessionStatus::Active,
        "a warning does not pause"
    );
    assert!(state.watch.flags.contains_key("no_progress"));

    // The condition still holds: no second flag, from later sweeps or from
    // the per-call detector.
    for _ in 0..2 {
        r.advance(3 * MIN);
        r.echo(&busy).await;
        assert!(
            glovebox::sweep::pass(&r.gw)
                .await
                .unwrap()
                .raised
                .is_empty()
        );
    }
    assert_eq!(r.flag_events(&idle), ["no_progress"]);
    assert!(r.flag_events(&busy).is_empty());

    // Progress clears it; silence flags it again.
    r.echo(&idle).await;
    assert!(
        r.durable
            .sessions
            .show(&idle)
            .unwrap()
            .watch
            .flags
            .is_empty()
    );
    r.advance(11 * MIN);
    let swept = glovebox::sweep::pass(&r.gw).await.unwrap();
    assert_eq!(swept.raised.len(), 2, "both idle now: {swept:?}");
    assert_eq!(r.flag_events(&idle), ["no_progress", "no_progress"]);
}

#[tokio::test]
async fn a_sweep_flags_an_overrun_and_pauses_on_a_critical_one() {
    let r = rig(|c| {
        c.detector
            .severity
            .insert("overrun".into(), Severity::Critical);
    })
    .await;
    let late = r.start("late", Some(10 * MIN));
    let fine = r.start("fine", Some(60 * MIN));
    r.echo(&late).await;
    r.echo(&fine).await;

    r.advance(15 * MIN);
    assert!(
        glovebox::sweep::pass(&r.gw).await.unwrap().is_empty(),
        "within 2x"
    );

    r.advance(6 * MIN);
    let swept = glovebox::sweep::pass(&r.gw).await.unwrap();
    assert_eq!(swept.raised.len(), 1, "{swept:?}");
    assert_eq!(swept.raised[0].session, late);
    assert_eq!(swept.raised[0].rule, "overrun");
    assert_eq!(swept.raised[0].severity, Severity::Critical);
    assert!(swept.raised[0].reason.contains("expected 10m"), "{swept:?}");
    assert_eq!(swept.paused, std::slice::from_ref(&late));

    let state = r.durable.sessions.show(&late).unwrap();
    assert_eq!(state.header.status, SessionStatus::Paused);
    assert_eq!(state.watch.escalation, EscalationStep::Blocker);
    assert!(
        state.paused_reason.as_deref().unwrap().contains("overrun"),
        "{state:?}"
    );
    assert_eq!(
        r.durable.sessions.show(&fine).unwrap().header.status,
        SessionStatus::Active
    );

    // Flagged and paused once.
    r.advance(MIN);
    let again = glovebox::sweep::pass(&r.gw).await.unwrap();
    assert!(again.is_empty(), "{again:?}");
    assert_eq!(r.flag_events(&late), ["overrun"]);
}

#[tokio::test]
async fn a_sweep_flags_stale_sessions_and_archives_them_only_when_configured() {
    let r = rig(|c| {
        c.detector.stale_after = 2 * DAY;
        c.detector.archive_after = Some(5 * DAY);
    })
    .await;
    let old = r.start("old", None);
    let done = r.start("done", None);
    let kept = r.start("kept", None);
    r.echo(&old).await;
    r.durable
        .sessions
        .end(&done, EndOutcome::Completed)
        .unwrap();

    r.advance(3 * DAY);
    r.echo(&kept).await;
    let swept = glovebox::sweep::pass(&r.gw).await.unwrap();
    let mut stale: Vec<_> = swept
        .raised
        .iter()
        .filter(|f| f.rule == "stale")
        .map(|f| f.session.clone())
        .collect();
    stale.sort();
    let mut want = vec![old.clone()];
    want.sort();
    assert_eq!(stale, want, "only the live idle one: {swept:?}");
    assert!(swept.archived.is_empty(), "not idle for 5 days yet");

    r.advance(3 * DAY);
    let swept = glovebox::sweep::pass(&r.gw).await.unwrap();
    let mut archived = swept.archived.clone();
    archived.sort();
    let mut want = vec![old.clone(), done.clone()];
    want.sort();
    assert_eq!(archived, want, "{swept:?}");
    let state = r.durable.sessions.show(&old).unwrap();
    assert_eq!(state.header.status, SessionStatus::Archived);
    assert_eq!(state.outcome, Some(EndOutcome::Exit));
    assert_eq!(
        r.durable.sessions.show(&done).unwrap().header.status,
        SessionStatus::Archived
    );
    // Active 3 days ago: flagged stale now, not archived.
    let kept_state = r.durable.sessions.show(&kept).unwrap();
    assert_eq!(kept_state.header.status, SessionStatus::Active);
    assert!(kept_state.watch.flags.contains_key("stale"));
    assert_eq!(r.flag_events(&old), ["no_progress", "stale"]);

    // Without archive_after (the default), nothing is archived.
    let r = rig(|c| c.detector.stale_after = 2 * DAY).await;
    let old = r.start("old", None);
    r.advance(60 * DAY);
    let swept = glovebox::sweep::pass(&r.gw).await.unwrap();
    assert!(swept.archived.is_empty(), "{swept:?}");
    assert_eq!(
        r.durable.sessions.show(&old).unwrap().header.status,
        SessionStatus::Created
    );
}

#[tokio::test]
async fn a_sweep_flags_an_approval_left_waiting_and_never_archives_its_session() {
    let r = rig(|c| {
        c.detector.approval_wait_after = 30 * MIN;
        c.detector.stale_after = DAY;
        c.detector.archive_after = Some(DAY);
    })
    .await;
    let id = r.start("asks", None);
    r.echo(&id).await;
    r.durable.sessions.pause(&id, "awaiting approval").unwrap();
    r.durable
        .approvals
        .put(&Approval {
            id: "ap-000000000001".into(),
            session: id.clone(),
            session_name: Some("asks".into()),
            call_id: "c-1".into(),
            tool: "echo.echo".into(),
            tool_digest: "d".into(),
            input_hash: "h".into(),
            input: "{}".into(),
            action: "ask".into(),
            hook: "h".into(),
            pattern: "*".into(),
            reason: "r".into(),
            requested_at_ms: r.clock.load(Ordering::SeqCst),
            status: ApprovalStatus::Pending,
            principal: None,
            job: None,
        })
        .unwrap();

    r.advance(20 * MIN);
    assert!(glovebox::sweep::pass(&r.gw).await.unwrap().is_empty());
    r.advance(20 * MIN);
    let swept = glovebox::sweep::pass(&r.gw).await.unwrap();
    assert_eq!(swept.raised.len(), 1, "{swept:?}");
    assert_eq!(swept.raised[0].rule, "approval_wait");
    assert!(swept.raised[0].reason.contains("ap-000000000001"));

    r.advance(3 * DAY);
    let swept = glovebox::sweep::pass(&r.gw).await.unwrap();
    assert!(swept.archived.is_empty(), "{swept:?}");
    assert_eq!(
        r.durable.sessions.show(&id).unwrap().header.status,
        SessionStatus::Paused
    );
    assert_eq!(r.flag_events(&id), ["approval_wait", "stale"]);
}

/// `glovebox serve` (stdio) with a short sweep interval flags a session that
/// made no call at all, and `session list --blocked` lists it with its step.
#[test]
fn serve_sweeps_an_idle_session_without_a_call_and_list_blocked_shows_it() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("glovebox.toml");
    std::fs::write(
        &config,
        format!(
            "data_dir = \"data\"\nhooks = \"none\"\n[runtime]\n{}\n\
             [detector]\nsweep_interval = \"200ms\"\nno_progress_after = \"1s\"\n\
             [[plugin]]\nmanifest = \"echo.toml\"\n",
            crate::util::cache_keys()
        ),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("echo.toml"),
        format!("name = \"echo\"\ncomponent = \"{}\"\n", plugins::TOOL_ECHO),
    )
    .unwrap();

    let mut server = Server::start(&config);
    let init = server.request(
        0,
        "initialize",
        json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "glovebox-tests", "version": "0"},
        }),
    );
    assert!(init["result"].is_object(), "{init}");
    server.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let started = server.call(
        1,
        "session_start",
        json!({"role": "workagent", "project": "p", "name": "quiet"}),
    );
    assert_eq!(started["result"]["isError"], false, "{started}");

    // No call from here on: only the sweep can flag it.
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut id = 2;
    let flags = loop {
        std::thread::sleep(Duration::from_millis(300));
        let status = server.call(id, "session_status", json!({}));
        id += 1;
        let flags = status["result"]["structuredContent"]["watch"]["flags"].clone();
        if flags.get("no_progress").is_some() {
            break flags;
        }
        assert!(
            Instant::now() < deadline,
            "the sweep never flagged the idle session: {status}"
        );
    };
    assert_eq!(flags["no_progress"]["severity"], "warning", "{flags}");
    drop(server);

    let out = util::glovebox()
        .arg("--config")
        .arg(&config)
        .args(["session", "list", "--blocked"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = text
        .lines()
        .find(|l| l.contains("quiet"))
        .unwrap_or_else(|| panic!("`quiet` is not listed as blocked: {text}"));
    assert!(line.contains("no_progress:warning"), "{line}");
    assert!(line.contains("none"), "its escalation step: {line}");

    let out = util::glovebox()
        .arg("--config")
        .arg(&config)
        .args(["session", "list", "--blocked", "--json"])
        .output()
        .unwrap();
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rows.as_array().unwrap().len(), 1, "{rows}");
    assert_eq!(rows[0]["name"], "quiet");
    assert_eq!(rows[0]["escalation"], "none");
    assert_eq!(rows[0]["flags"]["no_progress"]["severity"], "warning");
}

/// The compliance score's history: the first sweep of a UTC day records
/// the day's score (what `glovebox doctor` finds, weighted), a second
/// sweep the same day writes nothing, and the records are bounded: after
/// a hundred days the last `KEPT_DAYS` are kept, oldest removed.
#[tokio::test]
async fn a_sweep_records_the_compliance_score_once_a_day_and_keeps_the_last_90_days() {
    use glovebox::doctor::{self, ComplianceRecords, KEPT_DAYS, TREND_DAYS};
    let r = rig(|_| {}).await;
    // An unnamed live session: a warning, on top of what the config has.
    r.durable
        .sessions
        .start(StartSession {
            role: Role::Workagent,
            project: "p".into(),
            name: None,
            tags: vec![],
            expected_duration: None,
            budget: BudgetCaps::default(),
            completion: Default::default(),
        })
        .unwrap();
    let records = ComplianceRecords(r.durable.storage.clone());
    let day = |ms: u64| glovebox::billing::day_of(ms);
    let now = || r.durable.sessions.clock_ms();

    glovebox::sweep::pass(&r.gw).await.unwrap();
    let first = records.get(&day(now())).unwrap().expect("today's record");
    let findings = doctor::check(&r.gw).await.unwrap();
    let want = doctor::score(&findings);
    assert_eq!(first.score, want);
    assert!(first.score.warnings >= 1, "{first:?}");
    assert_eq!(
        first.score.score,
        100 - 10 * want.warnings as u32 - 2 * want.notices as u32
    );
    assert_eq!(first.rules.get("unnamed_session"), Some(&1), "{first:?}");

    // Later the same day: nothing written (the record keeps its time).
    r.advance(Duration::from_secs(3600));
    glovebox::sweep::pass(&r.gw).await.unwrap();
    assert_eq!(records.get(&day(now())).unwrap(), Some(first.clone()));
    assert!(
        doctor::record_today(&r.gw).await.unwrap().is_none(),
        "a second record of one day"
    );

    // A hundred days of sweeps: one record a day, the last 90 kept.
    for _ in 0..100 {
        r.advance(DAY);
        glovebox::sweep::pass(&r.gw).await.unwrap();
    }
    let all = r
        .durable
        .storage
        .scan(doctor::COMPLIANCE_BUCKET, "")
        .unwrap();
    assert_eq!(all.len() as i64, KEPT_DAYS);
    assert_eq!(all.last().unwrap().0, day(now()));
    assert_eq!(
        all[0].0,
        day(now() - (KEPT_DAYS as u64 - 1) * DAY.as_millis() as u64)
    );
    assert!(records.get(&first.day).unwrap().is_none());
    // The dashboard's trend: the last 30 days, oldest first.
    let trend = doctor::trend(&r.gw).unwrap();
    assert_eq!(trend.len() as i64, TREND_DAYS);
    assert_eq!(trend.last().unwrap().day, day(now()));
    assert!(trend.windows(2).all(|w| w[0].day < w[1].day));
}
