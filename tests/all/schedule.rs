//! Schedules and triggers: a schedule fires on a fast clock (minutes of
//! cron time in milliseconds) and its threshold alert reaches the named
//! `[[notify]]` target; fires missed while the host was down run once at
//! start, or not at all with `catch_up = false`; a schedule acts as its own
//! principal and reaches no other principal's session; an event trigger
//! runs when a session completes; and, over the real binary, a schedule
//! fires in `glovebox serve`, `glovebox schedule list` and `run` report
//! and run it, and a signed webhook fires its trigger while an unsigned
//! one is refused; a replayed one is refused too, and an event trigger an
//! agent fires in a loop runs once per cooldown (threat 57).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use glovebox::Gateway;
use glovebox::manifest::Principal;
use glovebox::schedule::Scheduler;
use glovebox::schedule::records::{self, FireRecord, Records};
use glovebox::session::{EndOutcome, Event, EventKind, Role, StartSession};

use crate::util::{self, Site, plugins};

/// 2023-11-14T22:13:20Z.
const T0: u64 = 1_700_000_000_000;
const MINUTE: u64 = 60_000;
const HOUR: u64 = 60 * MINUTE;

/// A site with the echo plugin, a `[[notify]]` target `ops` (nobody
/// listens: entries stay in the outbox) and `extra`.
fn site(dir: &Path, extra: &str) -> PathBuf {
    std::fs::write(
        dir.join("echo.toml"),
        format!("name = \"echo\"\ncomponent = \"{}\"\n", plugins::TOOL_ECHO),
    )
    .unwrap();
    let path = dir.join("glovebox.toml");
    std::fs::write(
        &path,
        format!(
            "data_dir = \"data\"\nhooks = \"none\"\n[runtime]\n{}\n[[plugin]]\nmanifest = \"echo.toml\"\n\
             [[notify]]\nname = \"ops\"\nurl = \"http://127.0.0.1:9/none\"\nevents = [\"job_failed\"]\n{extra}",
            util::cache_keys()
        ),
    )
    .unwrap();
    path
}

fn record(gw: &Gateway, kind: &str, name: &str) -> FireRecord {
    Records(gw.ledger().storage.clone())
        .get(&records::key(kind, name))
        .unwrap()
        .unwrap_or_default()
}

fn events(gw: &Gateway, session: &str) -> Vec<Event> {
    let id = gw.sessions().show(session).unwrap().header.id;
    gw.sessions().events(&id, 1, usize::MAX).unwrap()
}

const WATCH: &str = "[[schedule]]\nname = \"watch\"\ncron = \"*/10 * * * *\"\naction = \"call\"\nsession = \"billing-watch\"\nproject = \"billing\"\ntool = \"echo.echo\"\ninput = { message = \"overdue\", count = 3 }\nalert_if = \"count > 0\"\nnotify = [\"ops\"]\n";

#[tokio::test(flavor = "multi_thread")]
async fn a_schedule_fires_on_a_fast_clock_and_its_alert_reaches_the_named_target() {
    let dir = tempfile::tempdir().unwrap();
    let gw = Gateway::open(&site(dir.path(), WATCH)).await.unwrap();
    // One real millisecond is one minute of cron time: a fire every 10 ms.
    let start = Instant::now();
    let clock = Arc::new(move || T0 + start.elapsed().as_millis() as u64 * MINUTE);
    let ticking = Scheduler::new(gw.clone(), clock).start(Duration::from_millis(5));
    let deadline = Instant::now() + Duration::from_secs(60);
    while record(&gw, "schedule", "watch").runs < 3 {
        assert!(
            Instant::now() < deadline,
            "the schedule did not fire 3 times: {:?}",
            record(&gw, "schedule", "watch")
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    drop(ticking);
    // Let a run the abort may have cut short settle before reading.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let rec = record(&gw, "schedule", "watch");
    assert_eq!(rec.last_ok, Some(true), "{rec:?}");
    assert!(
        rec.last_outcome
            .as_deref()
            .unwrap()
            .contains("`count > 0` holds: count = 3"),
        "{rec:?}"
    );

    // The session is the schedule's own, and everything in it names the schedule.
    let state = gw.sessions().show("billing-watch").unwrap();
    assert_eq!(state.owner_name(), "schedule:watch");
    assert_eq!(state.header.project, "billing");
    let log = events(&gw, "billing-watch");
    assert!(
        log.iter()
            .all(|e| e.by.as_deref() == Some("schedule:watch")),
        "{:#?}",
        log.iter()
            .map(|e| (e.kind.name(), e.by.clone()))
            .collect::<Vec<_>>()
    );
    let calls = log
        .iter()
        .filter(|e| matches!(&e.kind, EventKind::CallFinished { outcome, .. } if outcome == "ok"))
        .count();
    let alerts: Vec<&Event> = log
        .iter()
        .filter(|e| matches!(e.kind, EventKind::ScheduleAlert { .. }))
        .collect();
    assert!(
        calls >= 3 && alerts.len() >= 3,
        "{calls} calls, {} alerts",
        alerts.len()
    );
    // Each alert names the call it is about, the one just before it.
    for alert in &alerts {
        let EventKind::ScheduleAlert {
            call_id: Some(call),
            ..
        } = &alert.kind
        else {
            panic!("an alert without its call: {alert:?}");
        };
        let finished = log
            .iter()
            .rev()
            .find(|e| e.seq < alert.seq && matches!(&e.kind, EventKind::CallFinished { .. }));
        assert!(
            matches!(finished.map(|e| &e.kind), Some(EventKind::CallFinished { call_id, .. }) if call_id == call),
            "{alert:?}"
        );
    }
    assert!(log.iter().any(|e| matches!(&e.kind, EventKind::Note { text } if text.contains("schedule:watch runs `call`"))));

    // Each alert waits in the outbox for `ops`, though its `events` list only `job_failed`.
    let pending = gw.ledger().outbox.pending("ops").unwrap();
    assert!(pending.len() >= 3, "{pending:#?}");
    assert!(
        pending
            .iter()
            .all(|e| e.notification.event == "schedule_alert")
    );
    assert!(pending[0].notification.summary.contains("count = 3"));
}

#[tokio::test(flavor = "multi_thread")]
async fn missed_fires_run_once_at_start_and_not_at_all_without_catch_up() {
    let dir = tempfile::tempdir().unwrap();
    let hourly = |name: &str, catch_up: bool| {
        format!(
            "[[schedule]]\nname = \"{name}\"\ncron = \"0 * * * *\"\ncatch_up = {catch_up}\naction = \"call\"\nsession = \"{name}\"\nproject = \"p\"\ntool = \"echo.echo\"\n"
        )
    };
    let extra = hourly("caught", true) + &hourly("skipped", false);
    let gw = Gateway::open(&site(dir.path(), &extra)).await.unwrap();
    let now = Arc::new(AtomicU64::new(T0));
    let clock = {
        let now = now.clone();
        Arc::new(move || now.load(Ordering::SeqCst))
    };

    // The first host sees the schedules for the first time: armed, nothing due.
    let first = Scheduler::new(gw.clone(), clock.clone());
    assert!(first.tick().await.is_empty());
    now.store(T0 + 30 * MINUTE, Ordering::SeqCst); // 22:43: the next fire is 23:00
    assert!(first.tick().await.is_empty());
    drop(first);

    // Down for five hours (23:00 .. 03:00 missed), then a new host starts.
    now.store(T0 + 5 * HOUR, Ordering::SeqCst);
    let second = Scheduler::new(gw.clone(), clock.clone());
    let ran = second.tick().await;
    assert_eq!(ran.len(), 1, "{ran:?}");
    assert_eq!(ran[0].0, "caught");
    assert!(ran[0].1.ok, "{ran:?}");
    let caught = record(&gw, "schedule", "caught");
    assert_eq!(caught.runs, 1, "five missed fires run once: {caught:?}");
    let skipped = record(&gw, "schedule", "skipped");
    assert_eq!(skipped.runs, 0);
    assert!(
        skipped
            .last_outcome
            .as_deref()
            .unwrap()
            .contains("catch_up = false"),
        "{skipped:?}"
    );
    let note = events(&gw, "caught")
        .into_iter()
        .find_map(|e| match e.kind {
            EventKind::Note { text } => Some(text),
            _ => None,
        })
        .unwrap();
    assert!(note.contains("missed while the host was down"), "{note}");
    // Nothing more is due at the same time.
    assert!(second.tick().await.is_empty());

    // The next hour both run, once each.
    now.store(T0 + 6 * HOUR, Ordering::SeqCst);
    let ran = second.tick().await;
    assert_eq!(ran.len(), 2, "{ran:?}");
    assert_eq!(record(&gw, "schedule", "caught").runs, 2);
    assert_eq!(record(&gw, "schedule", "skipped").runs, 1);
    let status = second.status().await.unwrap();
    assert_eq!(
        status[0].next_fire_ms,
        Some(T0 + 6 * HOUR + 46 * MINUTE + 40_000)
    );
}

/// Why (threat 53): with one global name space another principal's session
/// of the schedule's name either received its calls or, once they were kept
/// apart, made the schedule fail for good ("the name is taken"): a squat.
/// Now the schedule's `session` is a name in its own principal's space.
#[tokio::test(flavor = "multi_thread")]
async fn threat_53_a_schedule_acts_as_itself_in_its_own_name_space_and_no_squatter_stops_it() {
    let dir = tempfile::tempdir().unwrap();
    let extra = "[[schedule]]\nname = \"intruder\"\ncron = \"@hourly\"\naction = \"call\"\nsession = \"theirs\"\nproject = \"p\"\ntool = \"echo.echo\"\nnotify = [\"ops\"]\n";
    let gw = Gateway::open(&site(dir.path(), extra)).await.unwrap();
    let local = Principal::local();
    let squatter = gw
        .scope(&local)
        .start_session(StartSession {
            role: Role::Workagent,
            project: "p".into(),
            name: Some("theirs".into()),
            tags: vec![],
            expected_duration: None,
            budget: Default::default(),
            completion: Default::default(),
        })
        .await
        .unwrap();
    let schedule = gw.host().config().schedules[0].clone();
    for _ in 0..2 {
        let outcome = glovebox::schedule::Scheduler::of(&gw)
            .fire(&schedule, "a test")
            .await;
        assert!(outcome.ok, "{outcome:?}");
        let own = outcome.session.unwrap();
        assert_ne!(own, squatter.header.id);
        let state = gw.sessions().show(&own).unwrap();
        assert_eq!(state.owner_name(), "schedule:intruder");
        assert_eq!(state.header.name.as_deref(), Some("theirs"));
    }
    // The other principal's session saw nothing of it.
    let log = events(&gw, &squatter.header.id);
    assert!(
        log.iter().all(|e| e.by.as_deref() == Some("local")),
        "{log:#?}"
    );
    let rec = record(&gw, "schedule", "intruder");
    assert_eq!((rec.runs, rec.last_ok), (2, Some(true)));
    // One session of its own, used by both runs.
    let own = gw.sessions().show("schedule:intruder/theirs").unwrap();
    assert_eq!(
        events(&gw, &own.header.id)
            .iter()
            .filter(|e| e.kind.name() == "call_finished")
            .count(),
        2
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_event_trigger_starts_a_session_with_a_handoff_when_a_session_completes() {
    let dir = tempfile::tempdir().unwrap();
    let extra = "[[trigger]]\nname = \"review\"\non = \"session_completed\"\nfrom_project = \"p\"\naction = \"start\"\nsession = \"review\"\nproject = \"p\"\nrole = \"supervisor\"\nobjective = \"review what was completed\"\nnext_steps = [\"read the handoff\"]\n";
    let gw = Gateway::open(&site(dir.path(), extra)).await.unwrap();
    let _triggers = glovebox::triggers::start(&gw).expect("an event trigger is configured");
    let operator = Principal::operator("cli:test");
    for (name, project) in [("elsewhere", "q"), ("worker", "p")] {
        gw.scope(&operator)
            .start_session(StartSession {
                role: Role::Workagent,
                project: project.into(),
                name: Some(name.into()),
                tags: vec![],
                expected_duration: None,
                budget: Default::default(),
                completion: Default::default(),
            })
            .await
            .unwrap();
        gw.scope(&operator)
            .end_session(name, EndOutcome::Completed)
            .await
            .unwrap();
        if name == "elsewhere" {
            // Another project's completion fires nothing.
            tokio::time::sleep(Duration::from_millis(300)).await;
            assert_eq!(record(&gw, "trigger", "review").runs, 0);
        }
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while record(&gw, "trigger", "review").runs == 0 {
        assert!(Instant::now() < deadline, "the trigger never ran");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let rec = record(&gw, "trigger", "review");
    assert_eq!(rec.last_ok, Some(true), "{rec:?}");
    let review = gw.sessions().show("review").unwrap();
    assert_eq!(review.owner_name(), "trigger:review");
    assert_eq!(review.header.role, Role::Supervisor);
    let handoff = review.latest_handoff.expect("a handoff").handoff;
    assert_eq!(handoff.objective, "review what was completed");
    assert_eq!(
        handoff.notes.next_steps,
        vec!["read the handoff".to_string()]
    );
    let note = events(&gw, "review")
        .into_iter()
        .find_map(|e| match e.kind {
            EventKind::Note { text } => Some(text),
            _ => None,
        })
        .unwrap();
    assert!(
        note.contains("`session_completed` in session `worker`"),
        "{note}"
    );
    assert_eq!(record(&gw, "trigger", "review").runs, 1);
}

fn sign(secret: &str, t: u64, body: &str) -> String {
    glovebox::notify::signature(secret, t, body.as_bytes())
}

#[test]
fn a_schedule_fires_in_the_real_server_and_a_signed_webhook_fires_its_trigger() {
    let secret = "webhook-secret-0123456789";
    let site = Site::new(false);
    site.set_config(&format!(
        "[[schedule]]\nname = \"tick\"\ncron = \"* * * * * *\"\naction = \"call\"\nsession = \"ticker\"\nproject = \"p\"\ntool = \"echo.echo\"\ninput = {{ message = \"tick\" }}\n\
         [[trigger]]\nname = \"deploy\"\non = \"webhook\"\nsecret = \"{secret}\"\naction = \"start\"\nsession = \"deploy-check\"\nproject = \"p\"\nobjective = \"check the deploy\"\n"
    ));
    let served = crate::dashboard::serve(&site);
    let admin = served.admin.as_str();

    // Every second: it fires within a few.
    let deadline = Instant::now() + Duration::from_secs(60);
    let listed = loop {
        let listed = site.json(&["schedule", "list", "--json"]);
        if listed["schedules"][0]["runs"].as_u64().unwrap_or(0) >= 1 {
            break listed;
        }
        assert!(
            Instant::now() < deadline,
            "the schedule never fired: {listed}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(listed["schedules"][0]["name"], "tick");
    assert_eq!(listed["schedules"][0]["last_ok"], true, "{listed}");
    assert!(listed["schedules"][0]["next_fire_ms"].is_u64(), "{listed}");
    let (code, text, err) = site.run(&["schedule", "list"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        text.contains("schedule tick  `* * * * * *`  call  next "),
        "{text}"
    );
    assert!(
        text.contains("trigger deploy  on webhook /hooks/deploy  start  last never"),
        "{text}"
    );
    let (code, text, err) = site.run(&["schedule", "run", "tick"]);
    assert_eq!(code, 0, "{text}{err}");
    assert!(text.contains("\"ok\": true"), "{text}");
    let (code, _, err) = site.run(&["schedule", "run", "nope"]);
    assert_ne!(code, 0);
    assert!(err.contains("no schedule `nope`"), "{err}");

    // Unsigned, wrongly signed, stale, or for no trigger: refused alike.
    let body = r#"{"release":"v2"}"#;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let good = sign(secret, now, body);
    for (path, sig) in [
        ("/hooks/deploy", None),
        (
            "/hooks/deploy",
            Some(sign("another-secret-0123", now, body)),
        ),
        ("/hooks/deploy", Some(sign(secret, now - 3600, body))),
        ("/hooks/nope", Some(good.clone())),
    ] {
        let headers: Vec<(&str, &str)> = sig
            .as_deref()
            .map(|s| vec![("X-Glovebox-Signature", s)])
            .unwrap_or_default();
        let answer = crate::dashboard::http(admin, "POST", path, &headers, body);
        assert_eq!(answer.status, 401, "{path} {sig:?}: {}", answer.body);
    }
    let (_, listed, _) = site.run(&["schedule", "list"]);
    assert!(
        listed.contains("trigger deploy  on webhook /hooks/deploy  start  last never"),
        "{listed}"
    );

    let answer = crate::dashboard::http(
        admin,
        "POST",
        "/hooks/deploy",
        &[("X-Glovebox-Signature", &good)],
        body,
    );
    assert_eq!(answer.status, 200, "{}", answer.body);
    let outcome: serde_json::Value = serde_json::from_str(&answer.body).unwrap();
    assert_eq!(outcome["ok"], true, "{outcome}");
    let shown = site.json(&["session", "show", "deploy-check"]);
    assert_eq!(shown["owner"], "trigger:deploy", "{shown}");
    let (_, text, _) = site.run(&["schedule", "list"]);
    assert!(
        text.contains("trigger deploy  on webhook /hooks/deploy  start  last "),
        "{text}"
    );
    assert!(text.contains("ok: posted a handoff"), "{text}");
    drop(served);
}

fn now_s() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn post_hook(admin: &str, sig: &str, body: &str) -> crate::dashboard::Answer {
    crate::dashboard::http(
        admin,
        "POST",
        "/hooks/deploy",
        &[("X-Glovebox-Signature", sig)],
        body,
    )
}

// Threat 57: a signed webhook captured on the way (a proxy's log, a
// sender's retry) must not fire its trigger again while its signature is
// still good, not even after the host restarts.
#[test]
fn threat_57_a_replayed_webhook_is_refused_within_its_window_also_after_a_restart() {
    let secret = "webhook-secret-0123456789";
    let site = Site::new(false);
    site.set_config(&format!(
        "[[trigger]]\nname = \"deploy\"\non = \"webhook\"\nsecret = \"{secret}\"\naction = \"call\"\nsession = \"deploy-check\"\nproject = \"p\"\ntool = \"echo.echo\"\ninput = {{ message = \"deployed\" }}\n"
    ));
    let served = crate::dashboard::serve(&site);
    let body = r#"{"release":"v2"}"#;
    let first = sign(secret, now_s(), body);
    let answer = post_hook(&served.admin, &first, body);
    assert_eq!(answer.status, 200, "{}", answer.body);
    // The same request again: refused, and says why and what to do.
    for _ in 0..3 {
        let answer = post_hook(&served.admin, &first, body);
        assert_eq!(answer.status, 409, "{}", answer.body);
        assert!(
            answer
                .body
                .contains("this signed request was taken already")
                && answer.body.contains("sign each delivery anew"),
            "{}",
            answer.body
        );
    }
    // Two copies of one new request at once: exactly one is taken.
    let second = sign(secret, now_s() + 1, body);
    let racing: Vec<u16> = std::thread::scope(|s| {
        let copies: Vec<_> = (0..2)
            .map(|_| s.spawn(|| post_hook(&served.admin, &second, body).status))
            .collect();
        copies.into_iter().map(|c| c.join().unwrap()).collect()
    });
    let mut sorted = racing.clone();
    sorted.sort();
    assert_eq!(sorted, [200, 409], "{racing:?}");
    // Refused replays are no guesses: the address is not held off.
    let third = sign(secret, now_s() + 2, body);
    assert_eq!(post_hook(&served.admin, &third, body).status, 200);
    drop(served);

    // The store remembers: after a restart the first is still refused.
    let served = crate::dashboard::serve(&site);
    let answer = post_hook(&served.admin, &first, body);
    assert_eq!(answer.status, 409, "after a restart: {}", answer.body);
    let listed = site.json(&["schedule", "list", "--json"]);
    assert_eq!(listed["triggers"][0]["name"], "deploy", "{listed}");
    assert_eq!(listed["triggers"][0]["record"]["runs"], 3, "{listed}");
    drop(served);
}

/// A trigger's record as `schedule list --json` gives it.
fn trigger_record(site: &Site, name: &str) -> serde_json::Value {
    let listed = site.json(&["schedule", "list", "--json"]);
    listed["triggers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no trigger `{name}`: {listed}"))["record"]
        .clone()
}

/// Polls `name`'s record until it has run `runs` times.
fn wait_for_runs(site: &Site, name: &str, runs: u64) -> serde_json::Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let record = trigger_record(site, name);
        if record["runs"].as_u64().unwrap_or(0) >= runs {
            return record;
        }
        assert!(
            Instant::now() < deadline,
            "trigger `{name}` never ran {runs} times: {record}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

// Threat 57: an agent that causes events in a loop (sessions completed one
// after another) must not start a run of a trigger per event: within the
// cooldown they are held, and run once, folded, when it ends; the operator
// sees how many. Without the cooldown the five completions run it five
// times. No clock is raced: the cooldown is an hour while the events come,
// and a reload shortens it to end it.
#[test]
fn threat_57_an_event_trigger_an_agent_fires_in_a_loop_runs_once_per_cooldown() {
    let site = Site::new(false);
    // `probe` fires on project `q`, every time: the trigger worker takes
    // events one at a time in their order, so once it ran for a completion
    // made after the five, those five were all taken.
    let config = |cooldown: &str| {
        format!(
            "[[trigger]]\nname = \"review\"\non = \"session_completed\"\nfrom_project = \"p\"\ncooldown = \"{cooldown}\"\naction = \"call\"\nsession = \"review\"\nproject = \"ops\"\ntool = \"echo.echo\"\ninput = {{ message = \"review\" }}\n\
             [[trigger]]\nname = \"probe\"\non = \"session_completed\"\nfrom_project = \"q\"\ncooldown = \"0s\"\naction = \"sweep\"\n"
        )
    };
    site.set_config(&config("1h"));
    let mut agent = crate::mcp::Server::initialized(&site.config(), &[]);
    let mut id = 0;
    let mut complete = |project: &str, name: &str| {
        id += 1;
        agent.ok(
            id,
            "session_start",
            serde_json::json!({"role": "workagent", "project": project, "name": name}),
        );
        id += 1;
        // The agent is told nothing of triggers: its calls never wait.
        agent.ok(id, "session_end", serde_json::json!({}));
    };
    for i in 1..=5 {
        complete("p", &format!("w{i}"));
    }
    complete("q", "probe-1");
    wait_for_runs(&site, "probe", 1);
    // One run for the first completion; the four after it are held.
    let record = trigger_record(&site, "review");
    assert_eq!(
        (&record["runs"], &record["folded"]),
        (&1.into(), &serde_json::Value::Null),
        "{record}"
    );

    // The cooldown ends (a reload shortens it to a second): the four held
    // run once, with nothing else happening.
    site.set_config(&config("1s"));
    let (code, out, err) = site.run(&["reload"]);
    assert_eq!(code, 0, "{out}{err}");
    let record = wait_for_runs(&site, "review", 2);
    assert_eq!(
        (&record["runs"], &record["folded"]),
        (&2.into(), &4.into()),
        "{record}"
    );
    assert_eq!(record["last_ok"], true, "{record}");
    let (code, text, err) = site.run(&["schedule", "list"]);
    assert_eq!(code, 0, "{err}");
    assert!(text.contains("(4 events folded by its cooldown)"), "{text}");
    // The run says what it stands for, and the last event is not lost.
    let (code, log, err) = site.run(&["log", "show", "review"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        log.contains("4 events within the trigger's cooldown of 1s, folded into this run; the last: `session_completed` in session `w5`"),
        "{log}"
    );
    drop(agent);
}

/// The commented-out `[[schedule]]` and `[[trigger]]` examples of
/// `examples/glovebox.toml` load as written once uncommented.
#[test]
fn the_example_configs_schedules_load_when_uncommented() {
    let example = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/glovebox.toml"),
    )
    .unwrap();
    let block = example
        .split_once("# Schedules and triggers")
        .expect("the example documents schedules")
        .1;
    let uncommented: String = block
        .lines()
        .filter_map(|l| l.strip_prefix("# "))
        .filter(|l| {
            l.starts_with('[') || l.split_once(" = ").is_some_and(|(k, _)| !k.contains(' '))
        })
        .map(|l| format!("{l}\n"))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("nightly.secret");
    std::fs::write(&secret, "0123456789abcdef0123456789abcdef\n").unwrap();
    std::fs::set_permissions(&secret, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let path = dir.path().join("glovebox.toml");
    std::fs::write(
        &path,
        format!("data_dir = \"data\"\nhooks = \"none\"\n{uncommented}"),
    )
    .unwrap();
    let config = glovebox::HostConfig::load(&path).unwrap_or_else(|e| panic!("{e}\n{uncommented}"));
    let names: Vec<&str> = config.schedules.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["text-watch"]);
    let names: Vec<&str> = config.triggers.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["review-completed", "nightly"]);
}
