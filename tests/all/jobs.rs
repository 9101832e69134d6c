//! Background jobs: spawned in a session, run through the one call pipeline,
//! waited on with timeouts, cancelled, listed, and recovered after a restart
//! (the library, and the real binary across processes).

use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use glovebox::manifest::QuotasConfig;
use glovebox::session::{EventKind, Role, StartSession};
use glovebox::{
    Durable, Gateway, Host, JobError, JobInfo, JobScope, JobStatus, JobSummary, Jobs, JobsConfig,
    PluginManifest, Principal, SessionError, WaitMode,
};
use serde_json::Value;

use crate::util::{self, manifest, plugins};

/// A host, its store, a jobs service and one live session.
struct Fixture {
    host: Arc<Host>,
    durable: Arc<Durable>,
    jobs: Arc<Jobs>,
    /// The operator the tests act as, unless they name an agent.
    operator: Principal,
    session: String,
    /// The store refuses a scan of a whole job bucket (threat 49).
    guard: Arc<crate::job_records::JobScanGuard>,
    _data: tempfile::TempDir,
}

impl Drop for Fixture {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            assert_eq!(self.guard.refused(), 0, "a job bucket was scanned whole");
        }
    }
}

impl Fixture {
    async fn new(plugins: Vec<PluginManifest>, config: JobsConfig) -> Fixture {
        Fixture::with_quotas(plugins, config, QuotasConfig::default()).await
    }

    async fn with_quotas(
        plugins: Vec<PluginManifest>,
        config: JobsConfig,
        quotas: QuotasConfig,
    ) -> Fixture {
        let (mut host_config, data) = util::config(plugins);
        host_config.quotas = quotas;
        let host = Arc::new(Host::load(host_config).await.expect("host loads"));
        let (guard, durable) = crate::job_records::guarded(&data.path().join("store"));
        let jobs = Jobs::new(Gateway::new(host.clone(), durable.clone()), config);
        let mut f = Fixture {
            host,
            durable,
            jobs,
            operator: glovebox::cli_operator(),
            session: String::new(),
            guard,
            _data: data,
        };
        f.session = f.start_session("worker");
        f
    }

    /// The jobs service on behalf of the operator.
    fn ops(&self) -> JobScope<'_> {
        self.jobs.scope(&self.operator)
    }

    fn start_session(&self, name: &str) -> String {
        self.durable.sessions.start(start(name)).unwrap().header.id
    }

    fn start_session_as(&self, owner: &Principal, name: &str) -> String {
        self.durable
            .sessions
            .scope(owner)
            .start(start(name), &Default::default())
            .unwrap()
            .header
            .id
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

    /// Waits (polling) until job `id` has `status`.
    async fn until(&self, id: &str, status: JobStatus) -> JobInfo {
        let start = Instant::now();
        loop {
            let job = self.ops().status(id).await.unwrap();
            if job.status == status {
                return job;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "job {id} is {}, never {status}",
                job.status
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// An agent principal that works in any project, as the operator adds one.
pub(crate) fn worker_bot() -> Principal {
    Principal {
        name: "worker-bot".into(),
        kind: glovebox::PrincipalKind::Agent,
        roles: vec![Role::Workagent],
        projects: vec!["*".into()],
        tags: vec![],
        approve_by: Default::default(),
        card: Default::default(),
        toolsets: Vec::new(),
        read_only: false,
    }
}

/// A workagent session named `name` in project `jobs`.
pub(crate) fn start(name: &str) -> StartSession {
    StartSession {
        role: Role::Workagent,
        project: "jobs".into(),
        name: Some(name.into()),
        tags: vec![],
        expected_duration: None,
        budget: Default::default(),
        completion: Default::default(),
    }
}

/// Every job of a listing, its pages walked with their cursors (pages of
/// two, so a listing of a few jobs already takes several).
pub(crate) async fn list_all(
    jobs: JobScope<'_>,
    session: Option<&str>,
    status: Option<JobStatus>,
) -> Result<Vec<JobSummary>, JobError> {
    let mut all = Vec::new();
    let mut page = glovebox::page::PageRequest::first(2);
    loop {
        let got = jobs.list(session, status, &page).await?;
        all.extend(got.items);
        match got.next_cursor {
            Some(next) => page.cursor = Some(next),
            None => return Ok(all),
        }
    }
}

fn config(max_running: usize) -> JobsConfig {
    JobsConfig {
        max_running,
        ..JobsConfig::default()
    }
}

fn sleeper() -> PluginManifest {
    let mut m = manifest("sleep", plugins::HOSTILE_SLEEP);
    m.limits.deadline = Duration::from_secs(60);
    m
}

fn cpu() -> PluginManifest {
    let mut m = manifest("cpu", plugins::TOOL_CPU);
    m.limits.deadline = Duration::from_secs(120);
    m
}

fn plugins_all() -> Vec<PluginManifest> {
    vec![manifest("echo", plugins::TOOL_ECHO), sleeper()]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spawn_returns_at_once_and_the_job_runs_through_the_pipeline() {
    let f = Fixture::new(plugins_all(), config(2)).await;
    let start = Instant::now();
    let job = f
        .ops()
        .spawn_call("worker", "sleep", r#"{"seconds":1}"#)
        .await
        .unwrap();
    let took = start.elapsed();
    assert!(took < Duration::from_millis(500), "spawn took {took:?}");
    assert!(
        job.id.starts_with("job-") && job.id.len() == 16,
        "{}",
        job.id
    );
    assert_eq!(job.tool, "sleep.sleep", "the tool's full name");
    assert_eq!(job.session, f.session);
    assert_eq!(job.session_name.as_deref(), Some("worker"));
    assert_eq!(job.status, JobStatus::Queued);
    assert!(job.idempotent);
    f.until(&job.id, JobStatus::Running).await;

    let waited = f
        .ops()
        .wait(
            std::slice::from_ref(&job.id),
            WaitMode::All,
            Some(Duration::from_secs(20)),
        )
        .await
        .unwrap();
    assert!(!waited.timed_out);
    let done = &waited.done[0];
    assert_eq!(done.status, JobStatus::Completed);
    assert_eq!(done.attempts, 1);
    assert!(done.started_at_ms.is_some() && done.finished_at_ms.is_some());
    let result = done.result.as_ref().unwrap();
    assert_eq!(result.output.as_ref().unwrap()["slept_seconds"], 1);
    assert!(result.error.is_none());
    assert!(
        result.metering.wall_us >= 1_000_000,
        "{:?}",
        result.metering
    );

    // The call is in the session's log, with the job id, and finished.
    let events = f.events(&f.session);
    let call_id = events
        .iter()
        .find_map(|e| match e {
            EventKind::CallRequested {
                call_id,
                job_id,
                tool,
                ..
            } if job_id.as_deref() == Some(&job.id) => {
                assert_eq!(tool, "sleep.sleep");
                Some(call_id.clone())
            }
            _ => None,
        })
        .expect("call_requested carries the job id");
    assert!(events.iter().any(|e| matches!(e,
        EventKind::CallFinished { call_id: c, outcome, .. } if *c == call_id && outcome == "ok")));
    assert!(
        f.durable
            .sessions
            .show(&f.session)
            .unwrap()
            .in_flight
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_all_or_first_ends_at_its_timeout_with_the_pending_jobs() {
    let f = Fixture::new(
        plugins_all(),
        JobsConfig {
            max_running: 2,
            default_wait: Duration::from_millis(400),
            max_wait: Duration::from_secs(2),
        },
    )
    .await;
    let slow = f
        .ops()
        .spawn_call("worker", "sleep.sleep", r#"{"seconds":3600}"#)
        .await
        .unwrap();
    let fast = f
        .ops()
        .spawn_call("worker", "echo", r#"{"message":"hi"}"#)
        .await
        .unwrap();
    let ids = vec![slow.id.clone(), fast.id.clone()];

    // First: returns when the echo is done; the sleeper is pending.
    let first = f
        .ops()
        .wait(&ids, WaitMode::First, Some(Duration::from_secs(20)))
        .await
        .unwrap();
    assert!(!first.timed_out);
    assert_eq!(first.done.len(), 1);
    assert_eq!(first.done[0].id, fast.id);
    assert_eq!(first.done[0].status, JobStatus::Completed);
    assert_eq!(
        first.done[0]
            .result
            .as_ref()
            .unwrap()
            .output
            .as_ref()
            .unwrap()["message"],
        "hi"
    );
    assert_eq!(first.pending.len(), 1);
    assert_eq!(first.pending[0].id, slow.id);

    // All, with a timeout: returns at the timeout with the sleeper pending.
    let start = Instant::now();
    let all = f
        .ops()
        .wait(&ids, WaitMode::All, Some(Duration::from_millis(300)))
        .await
        .unwrap();
    let took = start.elapsed();
    assert!(all.timed_out);
    assert_eq!(all.done.len(), 1);
    assert_eq!(all.pending[0].id, slow.id);
    assert_eq!(all.pending[0].status, JobStatus::Running);
    assert!(
        took >= Duration::from_millis(300) && took < Duration::from_secs(2),
        "{took:?}"
    );

    // No timeout: the configured default, never forever.
    let start = Instant::now();
    let default = f.ops().wait(&ids, WaitMode::All, None).await.unwrap();
    let took = start.elapsed();
    assert!(default.timed_out);
    assert!(
        took >= Duration::from_millis(400) && took < Duration::from_secs(2),
        "{took:?}"
    );
    // A huge timeout is clamped to max_wait (2 s here).
    let start = Instant::now();
    let clamped = f
        .ops()
        .wait(&ids, WaitMode::All, Some(Duration::from_secs(3600)))
        .await
        .unwrap();
    assert!(clamped.timed_out);
    assert!(
        start.elapsed() < Duration::from_secs(4),
        "{:?}",
        start.elapsed()
    );

    // Unknown ids are an error, not a wait.
    let err = f
        .ops()
        .wait(&["job-000000000000".to_string()], WaitMode::All, None)
        .await
        .unwrap_err();
    assert!(matches!(err, JobError::NotFound(_)), "{err}");

    f.ops().cancel(&slow.id).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_stops_a_running_job_and_a_queued_one_never_runs() {
    let f = Fixture::new(plugins_all(), config(1)).await;
    let running = f
        .ops()
        .spawn_call("worker", "sleep", r#"{"seconds":3600}"#)
        .await
        .unwrap();
    // max_running = 1: this one waits in the queue behind the sleeper.
    let queued = f
        .ops()
        .spawn_call("worker", "echo", r#"{"message":"never"}"#)
        .await
        .unwrap();
    f.until(&running.id, JobStatus::Running).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        f.ops().status(&queued.id).await.unwrap().status,
        JobStatus::Queued
    );

    let cancelled = f.ops().cancel(&queued.id).await.unwrap();
    assert_eq!(cancelled.status, JobStatus::Cancelled);
    assert_eq!(cancelled.attempts, 0);

    let start = Instant::now();
    let cancelled = f.ops().cancel(&running.id).await.unwrap();
    let took = start.elapsed();
    assert!(took < Duration::from_secs(2), "cancel took {took:?}");
    assert_eq!(cancelled.status, JobStatus::Cancelled);
    let error = cancelled.result.as_ref().unwrap().error.as_ref().unwrap();
    assert_eq!(error.kind, "cancelled", "{error:?}");

    // Cancelling again changes nothing.
    let again = f.ops().cancel(&running.id).await.unwrap();
    assert_eq!(again.status, JobStatus::Cancelled);

    // The session has no dangling call: the sleeper finished as cancelled,
    // the queued job was never requested.
    let events = f.events(&f.session);
    let finished: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            EventKind::CallFinished { outcome, .. } => Some(outcome.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(finished, ["cancelled"]);
    assert!(!events.iter().any(|e| matches!(e,
        EventKind::CallRequested { job_id, .. } if job_id.as_deref() == Some(&queued.id))));
    let state = f.durable.sessions.show(&f.session).unwrap();
    assert!(state.in_flight.is_empty(), "{:?}", state.in_flight);

    // The slot is free and the host serves: the next job and a direct call run.
    let next = f
        .ops()
        .spawn_call("worker", "echo", r#"{"message":"next"}"#)
        .await
        .unwrap();
    let done = f
        .ops()
        .wait(&[next.id], WaitMode::All, Some(Duration::from_secs(10)))
        .await
        .unwrap();
    assert_eq!(done.done[0].status, JobStatus::Completed);
    util::assert_serving(&f.host).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        f.ops().status(&queued.id).await.unwrap().status,
        JobStatus::Cancelled,
        "a cancelled queued job never runs"
    );
}

/// The operator's `glovebox job cancel` of a finished job prints it as it
/// is: the scope's check that the caller may see the job reads its record
/// alone, so the cancel does not mark the result as read for the agent
/// (before the command line went through the scope, it never did; the
/// scope's check read the job in full and marked it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_finished_job_leaves_its_result_unread() {
    let f = Fixture::new(plugins_all(), config(1)).await;
    let job = f
        .ops()
        .spawn_call("worker", "echo", r#"{"message":"done"}"#)
        .await
        .unwrap();
    // Polled through the listing, which reads records without marking them.
    let start = Instant::now();
    while !list_all(f.ops(), None, Some(JobStatus::Completed))
        .await
        .unwrap()
        .iter()
        .any(|j| j.id == job.id)
    {
        assert!(start.elapsed() < Duration::from_secs(20), "never completed");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let cancelled = f.ops().cancel(&job.id).await.unwrap();
    assert_eq!(cancelled.status, JobStatus::Completed, "{cancelled:?}");
    assert_eq!(cancelled.result_read, Some(false), "{cancelled:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_are_listed_by_session_and_status() {
    let f = Fixture::new(plugins_all(), config(2)).await;
    let other = f.start_session("other");
    let a = f.ops().spawn_call("worker", "echo", "{}").await.unwrap();
    let b = f.ops().spawn_call(&other, "echo", "{}").await.unwrap();
    let c = f
        .ops()
        .spawn_call("worker", "sleep", r#"{"seconds":3600}"#)
        .await
        .unwrap();
    f.ops()
        .wait(
            &[a.id.clone(), b.id.clone()],
            WaitMode::All,
            Some(Duration::from_secs(10)),
        )
        .await
        .unwrap();
    f.until(&c.id, JobStatus::Running).await;

    let ids = |jobs: Vec<JobSummary>| jobs.into_iter().map(|j| j.id).collect::<Vec<_>>();
    assert_eq!(
        ids(list_all(f.ops(), None, None).await.unwrap()),
        [a.id.clone(), b.id.clone(), c.id.clone()]
    );
    assert_eq!(
        ids(list_all(f.ops(), Some("worker"), None).await.unwrap()),
        [a.id.clone(), c.id.clone()]
    );
    assert_eq!(
        ids(list_all(f.ops(), Some(&other), None).await.unwrap()),
        vec![b.id.clone()]
    );
    assert_eq!(
        ids(list_all(f.ops(), None, Some(JobStatus::Completed))
            .await
            .unwrap()),
        [a.id.clone(), b.id.clone()]
    );
    assert_eq!(
        ids(list_all(f.ops(), Some("worker"), Some(JobStatus::Running))
            .await
            .unwrap()),
        vec![c.id.clone()]
    );
    assert!(
        list_all(f.ops(), None, Some(JobStatus::Failed))
            .await
            .unwrap()
            .is_empty()
    );
    assert!(matches!(
        list_all(f.ops(), Some("nobody"), None).await.unwrap_err(),
        JobError::Session(SessionError::NotFound(_))
    ));
    assert_eq!("timeout".parse::<JobStatus>().unwrap(), JobStatus::Timeout);
    assert!(
        "done"
            .parse::<JobStatus>()
            .unwrap_err()
            .to_string()
            .contains("interrupted")
    );
    f.ops().cancel(&c.id).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_are_refused_and_nothing_is_queued_or_logged() {
    let f = Fixture::new(plugins_all(), config(2)).await;
    let before = f.events(&f.session).len();
    let oversized = format!(r#"{{"message":"{}"}}"#, "x".repeat(2 * 1024 * 1024));
    let cases = [
        ("nope.nothing", "{}", "unknown tool"),
        ("sleep", r#"{"seconds":"soon"}"#, "schema"),
        ("sleep", r#"{"minutes":1}"#, "schema"),
        ("echo", "not json", "not valid JSON"),
        ("echo", oversized.as_str(), "more than the limit"),
    ];
    for (tool, input, says) in cases {
        let err = f.ops().spawn_call("worker", tool, input).await.unwrap_err();
        assert!(matches!(err, JobError::BadRequest(_)), "{tool}: {err}");
        assert!(err.to_string().contains(says), "{tool}: {err}");
    }
    let err = f
        .ops()
        .spawn_call("no-such-session", "echo", "{}")
        .await
        .unwrap_err();
    assert!(
        matches!(err, JobError::Session(SessionError::NotFound(_))),
        "{err}"
    );
    let err = f.ops().enqueue("worker", "nope", "{}").await.unwrap_err();
    assert!(matches!(err, JobError::BadRequest(_)), "{err}");
    assert!(list_all(f.ops(), None, None).await.unwrap().is_empty());
    assert_eq!(f.events(&f.session).len(), before, "nothing logged");
    assert!(matches!(
        f.ops().status("job-000000000000").await.unwrap_err(),
        JobError::NotFound(_)
    ));

    // A session that ended takes no jobs.
    f.durable
        .sessions
        .end("worker", glovebox::session::EndOutcome::Completed)
        .unwrap();
    let err = f
        .ops()
        .spawn_call("worker", "echo", "{}")
        .await
        .unwrap_err();
    assert!(matches!(err, JobError::BadRequest(_)), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_past_its_deadline_ends_as_timeout() {
    let mut spin = manifest("loop", plugins::HOSTILE_INFINITE_LOOP);
    spin.limits.deadline = Duration::from_millis(300);
    let f = Fixture::new(vec![spin], config(2)).await;
    let job = f
        .ops()
        .spawn_call("worker", "loop.spin", "{}")
        .await
        .unwrap();
    let out = f
        .ops()
        .wait(&[job.id], WaitMode::All, Some(Duration::from_secs(10)))
        .await
        .unwrap();
    let job = &out.done[0];
    assert_eq!(job.status, JobStatus::Timeout);
    assert_eq!(
        job.result.as_ref().unwrap().error.as_ref().unwrap().kind,
        "timeout"
    );
}

// The concurrency limit: jobs beyond `max_running` wait in a FIFO queue and
// start as slots free up. (How much faster CPU-bound jobs finish on two cores
// is a benchmark, not a test: see docs/benchmarks.md.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_beyond_the_limit_queue_and_start_as_slots_free() {
    let f = Fixture::new(vec![sleeper(), cpu()], config(2)).await;
    let mut ids = Vec::new();
    for _ in 0..3 {
        ids.push(
            f.ops()
                .spawn_call(&f.session, "sleep.sleep", r#"{"seconds":30}"#)
                .await
                .unwrap()
                .id,
        );
    }
    f.until(&ids[0], JobStatus::Running).await;
    f.until(&ids[1], JobStatus::Running).await;
    // Two slots: the third waits, however long the first two run.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        f.ops().status(&ids[2]).await.unwrap().status,
        JobStatus::Queued
    );
    f.ops().cancel(&ids[0]).await.unwrap();
    f.until(&ids[2], JobStatus::Running).await;
    assert_eq!(
        f.ops().status(&ids[1]).await.unwrap().status,
        JobStatus::Running
    );
    for id in &ids[1..] {
        f.ops().cancel(id).await.unwrap();
    }
    // A CPU-bound job runs through the same queue to completion.
    let burn = f
        .ops()
        .spawn_call(&f.session, "cpu.burn", r#"{"iterations":1000}"#)
        .await
        .unwrap()
        .id;
    let out = f
        .ops()
        .wait(&[burn], WaitMode::All, Some(Duration::from_secs(60)))
        .await
        .unwrap();
    assert!(!out.timed_out);
    let job = &out.done[0];
    assert_eq!(job.status, JobStatus::Completed, "{job:?}");
    assert_eq!(
        job.result.as_ref().unwrap().output.as_ref().unwrap()["iterations"],
        1000
    );
}

// ---- restart, with the real binary ------------------------------------------

use crate::sessions::Site;
use crate::util::glovebox;

// A queued job survives the process that spawned it and runs in the next
// one; a job running when its process is killed comes back interrupted, and
// is re-run only if its tool is idempotent.
#[test]
fn jobs_survive_a_restart_of_the_real_binary() {
    for idempotent in [true, false] {
        let site = Site::new(idempotent);
        site.start_workagent("w");
        // `job spawn` only queues: the process exits at once.
        let echo = site.json(&[
            "job",
            "spawn",
            "--session",
            "w",
            "echo.echo",
            "--input",
            r#"{"message":"queued"}"#,
        ]);
        assert_eq!(echo["status"], "queued");
        let echo_id = echo["id"].as_str().unwrap().to_string();
        let sleep = site.json(&[
            "job",
            "spawn",
            "--session",
            "w",
            "sleep.sleep",
            "--input",
            r#"{"seconds":4}"#,
        ]);
        let sleep_id = sleep["id"].as_str().unwrap().to_string();
        assert_eq!(site.json(&["job", "status", &echo_id])["status"], "queued");
        let listed = site.json(&["job", "list", "--session", "w", "--status", "queued"]);
        assert_eq!(listed.as_array().unwrap().len(), 2);

        // A bad request is refused by the CLI too, and nothing is queued.
        let (code, _, err) = site.run(&["job", "spawn", "--session", "w", "nope", "--input", "{}"]);
        assert_eq!(code, 4, "{err}");
        assert!(err.contains("unknown tool"), "{err}");

        // A runner: `job wait` runs the queued jobs; kill it while the sleeper runs.
        let mut child = glovebox()
            .arg("--config")
            .arg(site.config())
            .args(["job", "wait", &sleep_id, "--timeout", "60s"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Loading the host takes a moment; the sleeper then runs for 4 s.
        std::thread::sleep(Duration::from_millis(2500));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();

        let status = site.json(&["job", "status", &echo_id]);
        assert_eq!(
            status["status"], "completed",
            "the queued job ran: {status}"
        );
        assert_eq!(status["result"]["output"]["message"], "queued");
        let status = site.json(&["job", "status", &sleep_id]);
        assert_eq!(
            status["status"], "running",
            "the killed process left it running: {status}"
        );

        // The next runner recovers it.
        let (code, out, err) = site.run(&["job", "wait", &sleep_id, "--timeout", "30s"]);
        assert_eq!(code, 0, "{err}");
        let outcome: Value = serde_json::from_str(&out).unwrap();
        let job = &outcome["done"][0];
        if idempotent {
            assert_eq!(job["status"], "completed", "{job}");
            assert_eq!(job["attempts"], 2, "{job}");
            assert_eq!(job["result"]["output"]["slept_seconds"], 4);
        } else {
            assert_eq!(job["status"], "interrupted", "{job}");
            assert_eq!(job["attempts"], 1, "{job}");
            assert_eq!(job["result"]["error"]["kind"], "interrupted");
            assert!(err.contains("interrupted"), "{err}");
        }

        // The session logged the first attempt as interrupted; only an idempotent
        // job ran again, with its job id.
        let (_, export, _) = site.run(&["log", "export", "w"]);
        let events: Vec<Value> = export
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let of_type = |t: &str| {
            events
                .iter()
                .filter(|e| e["kind"]["type"] == t)
                .cloned()
                .collect::<Vec<_>>()
        };
        assert_eq!(of_type("call_interrupted").len(), 1);
        let requested: Vec<_> = of_type("call_requested")
            .into_iter()
            .filter(|e| e["kind"]["job_id"] == sleep_id.as_str())
            .collect();
        assert_eq!(requested.len(), if idempotent { 2 } else { 1 });
        // Both attempts carry the job's idempotency key, not one per call.
        let keys: std::collections::HashSet<String> = of_type("call_started")
            .into_iter()
            .filter(|e| {
                requested
                    .iter()
                    .any(|r| r["kind"]["call_id"] == e["kind"]["call_id"])
            })
            .map(|e| e["kind"]["idempotency_key"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(keys.len(), 1, "{keys:?}");
        assert!(
            keys.iter().all(|k| k.ends_with(&format!("/{sleep_id}"))),
            "{keys:?}"
        );

        // A timed-out wait exits 6 with the pending jobs.
        if idempotent {
            let long = site.json(&[
                "job",
                "spawn",
                "--session",
                "w",
                "sleep",
                "--input",
                r#"{"seconds":30}"#,
            ]);
            let id = long["id"].as_str().unwrap();
            let (code, out, _) = site.run(&["job", "wait", id, "--first", "--timeout", "300ms"]);
            assert_eq!(code, 6);
            let outcome: Value = serde_json::from_str(&out).unwrap();
            assert_eq!(outcome["timed_out"], true);
            assert_eq!(outcome["pending"][0]["id"], id);
            let cancelled = site.json(&["job", "cancel", id]);
            assert_eq!(cancelled["status"], "cancelled");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn threat_43_live_jobs_past_the_session_or_principal_quota_are_refused_and_nothing_is_queued()
{
    let quotas = QuotasConfig {
        jobs_per_session: 2,
        jobs_per_principal: 3,
        ..QuotasConfig::default()
    };
    let f = Fixture::with_quotas(plugins_all(), config(1), quotas).await;
    let agent = worker_bot();
    let (one, two) = (
        f.start_session_as(&agent, "bot-1"),
        f.start_session_as(&agent, "bot-2"),
    );
    let slow = |f: &Fixture| {
        f.jobs
            .gateway()
            .admit("sleep", r#"{"seconds":30}"#)
            .unwrap()
    };
    let a = f.jobs.scope(&agent).spawn(&one, slow(&f)).await.unwrap();
    f.jobs.scope(&agent).spawn(&one, slow(&f)).await.unwrap();
    let err = f
        .jobs
        .scope(&agent)
        .spawn(&one, slow(&f))
        .await
        .unwrap_err();
    let message = err.to_string();
    assert!(
        matches!(
            err,
            JobError::Session(SessionError::Quota { ref limit, .. }
            ) if limit.key == "jobs_per_session"
        ),
        "{message}"
    );
    assert!(
        message.contains("`quotas.jobs_per_session` = 2"),
        "{message}"
    );
    // Another session of the same agent takes one more; then the agent is full.
    f.jobs.scope(&agent).spawn(&two, slow(&f)).await.unwrap();
    let err = f
        .jobs
        .scope(&agent)
        .spawn(&two, slow(&f))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            JobError::Session(SessionError::Quota { ref limit, .. }
            ) if limit.key == "jobs_per_principal"
        ),
        "{err}"
    );
    assert_eq!(
        list_all(f.ops(), None, None).await.unwrap().len(),
        3,
        "refused jobs are not stored"
    );
    // The operator is not held to the agent's quota, only to the session's.
    f.ops()
        .spawn_call("worker", "echo", r#"{"message":"op"}"#)
        .await
        .unwrap();
    // A job that ends frees its place.
    f.ops().cancel(&a.id).await.unwrap();
    f.jobs.scope(&agent).spawn(&one, slow(&f)).await.unwrap();
    for job in list_all(f.ops(), None, None).await.unwrap() {
        let _ = f.ops().cancel(&job.id).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn threat_43_job_wait_takes_a_set_of_at_most_256_ids() {
    let f = Fixture::new(plugins_all(), config(2)).await;
    let job = f
        .ops()
        .spawn_call("worker", "echo", r#"{"message":"hi"}"#)
        .await
        .unwrap();
    // Repeated ids are one job: ten thousand of one id is a wait for one job.
    let same = vec![job.id.clone(); 10_000];
    let out = f
        .ops()
        .wait(&same, WaitMode::All, Some(Duration::from_secs(10)))
        .await
        .unwrap();
    assert_eq!(out.done.len(), 1);
    let many: Vec<String> = (0..257).map(|i| format!("job-{i:012}")).collect();
    let err = f
        .ops()
        .wait(&many, WaitMode::All, Some(Duration::from_secs(1)))
        .await
        .unwrap_err();
    assert!(
        matches!(err, JobError::BadRequest(_)) && err.to_string().contains("at most 256 jobs"),
        "{err}"
    );
}

/// `glovebox serve` over stdio, as a client starts it, past the MCP hello.
fn serve_stdio(site: &Site, grace: &str) -> std::process::Child {
    use std::io::Write;
    let mut child = glovebox()
        .arg("--config")
        .arg(site.config())
        .args(["serve", "--grace", grace])
        .env("RUST_LOG", "info")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(site.path().join("serve.log")).unwrap())
        .spawn()
        .unwrap();
    let stdin = child.stdin.as_mut().unwrap();
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"2025-06-18","capabilities":{{}},"clientInfo":{{"name":"t","version":"1"}}}}}}"#
    )
    .unwrap();
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
    )
    .unwrap();
    // Serving once its control socket listens (a loaded machine can take a while).
    let socket = site.path().join("data/control.sock");
    let start = Instant::now();
    while !socket.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(180) && child.try_wait().unwrap().is_none(),
            "the server did not start: {}",
            std::fs::read_to_string(site.path().join("serve.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    child
}

fn signal(child: &std::process::Child, name: &str) {
    let sent = std::process::Command::new("kill")
        .args([&format!("-{name}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
}

/// Waits for `child` to exit, at most `within`; its exit code (`None`: killed by a signal).
fn exit_within(child: &mut std::process::Child, within: Duration) -> Option<i32> {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code();
        }
        if start.elapsed() > within {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the server did not exit within {within:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `job spawn` of `sleep.sleep` for `seconds` in session `w`: its id.
fn spawn_sleep(site: &Site, seconds: u32) -> String {
    site.json(&[
        "job",
        "spawn",
        "--session",
        "w",
        "sleep.sleep",
        "--input",
        &format!(r#"{{"seconds":{seconds}}}"#),
    ])["id"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Polls `job status` (through the running server, once its control socket
/// listens) until the job has `status`.
fn until_status(site: &Site, id: &str, status: &str) {
    until_one_of(site, id, &[status]);
}

/// Polls `job status` until the job has one of `statuses`; returns it.
fn until_one_of(site: &Site, id: &str, statuses: &[&str]) -> String {
    let start = Instant::now();
    loop {
        let (code, out, err) = site.run(&["job", "status", id]);
        let job: Value = serde_json::from_str(&out).unwrap_or_default();
        if let Some(status) = job["status"].as_str()
            && code == 0
            && statuses.contains(&status)
        {
            return status.to_string();
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "job {id} never became {statuses:?}: {out}{err}\nthe server's log:\n{}",
            std::fs::read_to_string(site.path().join("serve.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn threat_46_sigterm_drains_a_stdio_server_and_records_the_jobs_it_stops_as_interrupted() {
    let site = Site::new(false);
    site.start_workagent("w");
    let (short, long) = (spawn_sleep(&site, 3), spawn_sleep(&site, 60));
    let mut server = serve_stdio(&site, "5s");
    // The server runs the queued jobs; the operator watches them through it.
    // (On a loaded machine the short one may be done before it is seen.)
    until_status(&site, &long, "running");
    until_one_of(&site, &short, &["running", "completed"]);
    let signalled = Instant::now();
    signal(&server, "TERM");
    let code = exit_within(&mut server, Duration::from_secs(50));
    assert_eq!(code, Some(0), "a drained server exits 0");
    let took = signalled.elapsed();
    assert!(
        took < Duration::from_secs(45),
        "the long job did not hold the server past its grace: {took:?}"
    );

    // The short job finished within the grace period; the long one was
    // stopped and recorded at once, not left `running` for the next start.
    assert_eq!(site.json(&["job", "status", &short])["status"], "completed");
    let job = site.json(&["job", "status", &long]);
    assert_eq!(job["status"], "interrupted", "{job}");
    assert_eq!(job["result"]["error"]["kind"], "interrupted", "{job}");
    let message = job["result"]["error"]["message"].as_str().unwrap();
    assert!(message.contains("grace period of 5s"), "{message}");

    // Its call ended in the session log, with the reason; nothing is left in flight.
    let (_, export, _) = site.run(&["log", "export", "w"]);
    let events: Vec<Value> = export
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let started = events
        .iter()
        .find(|e| e["kind"]["type"] == "call_requested" && e["kind"]["job_id"] == long.as_str())
        .expect("the long job's call was logged");
    let call_id = &started["kind"]["call_id"];
    let finished = events
        .iter()
        .find(|e| e["kind"]["type"] == "call_finished" && &e["kind"]["call_id"] == call_id)
        .expect("the long job's call finished in the log");
    assert_eq!(finished["kind"]["outcome"], "cancelled", "{finished}");
    assert!(
        finished["kind"]["error"]
            .as_str()
            .unwrap()
            .contains("the host stopped"),
        "{finished}"
    );
    let (code, out, err) = site.run(&["log", "verify", "w"]);
    assert_eq!(code, 0, "{out}{err}");
    let (_, show, _) = site.run(&["session", "show", "w"]);
    assert!(!show.contains("in flight: 1"), "{show}");
}

#[test]
fn threat_46_a_second_signal_stops_the_server_at_once() {
    let site = Site::new(true);
    site.start_workagent("w");
    let long = spawn_sleep(&site, 60);
    let mut server = serve_stdio(&site, "60s");
    until_status(&site, &long, "running");
    signal(&server, "TERM");
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        server.try_wait().unwrap().is_none(),
        "the first signal drains: the server waits for the job"
    );
    signal(&server, "TERM");
    let code = exit_within(&mut server, Duration::from_secs(10));
    assert_eq!(code, Some(130), "the second signal stops it at once");
    // Nothing was recorded for the job: the next start recovers it.
    assert_eq!(site.json(&["job", "status", &long])["status"], "running");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn threat_43_final_jobs_and_settled_approvals_are_removed_after_their_retention() {
    use glovebox::approvals::{Approval, ApprovalStatus, Approvals};
    let quotas = QuotasConfig {
        retain_finished: Some(Duration::from_millis(1)),
        ..QuotasConfig::default()
    };
    let f = Fixture::with_quotas(plugins_all(), config(2), quotas).await;
    let done = f
        .ops()
        .spawn_call("worker", "echo", r#"{"message":"hi"}"#)
        .await
        .unwrap();
    f.until(&done.id, JobStatus::Completed).await;
    let running = f
        .ops()
        .spawn_call("worker", "sleep", r#"{"seconds":30}"#)
        .await
        .unwrap();
    f.until(&running.id, JobStatus::Running).await;
    let approval = |id: &str, status: ApprovalStatus| Approval {
        id: id.into(),
        session: f.session.clone(),
        session_name: None,
        call_id: "c".into(),
        tool: "echo.echo".into(),
        tool_digest: String::new(),
        input_hash: String::new(),
        input: "{}".into(),
        action: "echo".into(),
        hook: "h".into(),
        pattern: "*".into(),
        reason: String::new(),
        requested_at_ms: 1,
        status,
        principal: None,
        job: None,
    };
    let approvals = &f.durable.approvals;
    approvals
        .put(&approval(
            &Approvals::new_id(),
            ApprovalStatus::Denied {
                at_ms: 2,
                reason: "no".into(),
                by: None,
            },
        ))
        .unwrap();
    let pending = Approvals::new_id();
    approvals
        .put(&approval(&pending, ApprovalStatus::Pending))
        .unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;

    glovebox::sweep::collect_finished(f.jobs.gateway()).await;
    assert!(
        matches!(f.ops().status(&done.id).await, Err(JobError::NotFound(_))),
        "the finished job is removed"
    );
    assert_eq!(
        f.ops().status(&running.id).await.unwrap().status,
        JobStatus::Running
    );
    let left: Vec<String> = approvals
        .page(true, &Default::default())
        .unwrap()
        .items
        .into_iter()
        .map(|a| a.id)
        .collect();
    assert_eq!(left, vec![pending], "only the pending approval stays");
    // The job's call stays in the session log.
    assert!(f.events(&f.session).iter().any(|e| matches!(
        e,
        EventKind::CallRequested { job_id: Some(id), .. } if *id == done.id
    )));
    f.ops().cancel(&running.id).await.unwrap();
}

/// A store whose writes to the jobs bucket fail on demand, the way a failed
/// flush does: the write is applied (a reader may see it) but not
/// acknowledged. Everything else goes to the sled store under it.
struct FailingJobWrites {
    inner: Arc<dyn glovebox::storage::Storage>,
    /// Jobs-bucket writes to let through before failing `fail` of them.
    skip: std::sync::atomic::AtomicUsize,
    fail: std::sync::atomic::AtomicUsize,
    /// Whether a failed write is applied first (its flush failed) or not at
    /// all (the store reopened without it).
    applied: std::sync::atomic::AtomicBool,
    failed: std::sync::atomic::AtomicUsize,
}

impl FailingJobWrites {
    fn arm(&self, skip: usize, fail: usize, applied: bool) {
        use std::sync::atomic::Ordering::SeqCst;
        self.applied.store(applied, SeqCst);
        self.skip.store(skip, SeqCst);
        self.fail.store(fail, SeqCst);
    }

    fn failed(&self) -> usize {
        self.failed.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// A write to `bucket`: done, or (when armed, for `jobs`) failed after
    /// being applied or not.
    fn write<T>(
        &self,
        bucket: &str,
        write: impl FnOnce() -> Result<T, StorageError>,
    ) -> Result<T, StorageError> {
        use std::sync::atomic::Ordering::SeqCst;
        if bucket == "jobs"
            && self
                .skip
                .fetch_update(SeqCst, SeqCst, |n| n.checked_sub(1))
                .is_err()
            && self
                .fail
                .fetch_update(SeqCst, SeqCst, |n| n.checked_sub(1))
                .is_ok()
        {
            if self.applied.load(SeqCst) {
                write()?;
            }
            self.failed.fetch_add(1, SeqCst);
            return Err(StorageError::Io("injected: the flush failed".into()));
        }
        write()
    }
}

impl glovebox::storage::Storage for FailingJobWrites {
    fn append(&self, stream: &str, expected: u64, entries: &[Vec<u8>]) -> Result<u64> {
        self.inner.append(stream, expected, entries)
    }
    fn read(&self, stream: &str, from: u64, max: usize) -> Result<Vec<(u64, Vec<u8>)>> {
        self.inner.read(stream, from, max)
    }
    fn last_seq(&self, stream: &str) -> Result<u64> {
        self.inner.last_seq(stream)
    }
    fn streams(&self) -> Result<Vec<String>> {
        self.inner.streams()
    }
    fn put(&self, bucket: &str, key: &str, value: &[u8]) -> Result<()> {
        self.write(bucket, || self.inner.put(bucket, key, value))
    }
    fn put_if(&self, bucket: &str, key: &str, swap: Swap<'_>) -> Result<bool> {
        self.write(bucket, || self.inner.put_if(bucket, key, swap))
    }
    fn get(&self, bucket: &str, key: &str) -> Result<Option<Vec<u8>>> {
        self.inner.get(bucket, key)
    }
    fn delete(&self, bucket: &str, key: &str) -> Result<()> {
        self.inner.delete(bucket, key)
    }
    fn scan(&self, bucket: &str, prefix: &str) -> Result<Vec<(String, Vec<u8>)>> {
        self.inner.scan(bucket, prefix)
    }
    fn scan_page(
        &self,
        bucket: &str,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Vec<u8>)>> {
        self.inner.scan_page(bucket, prefix, after, limit)
    }
    fn buckets(&self) -> Result<Vec<String>> {
        self.inner.buckets()
    }
}

use glovebox::storage::{Result, StorageError, Swap};

/// Jobs over a store whose job-record writes fail when armed.
async fn failing_job_writes() -> (Arc<FailingJobWrites>, Arc<Jobs>, String, tempfile::TempDir) {
    let (host_config, data) = util::config(plugins_all());
    let host = Arc::new(Host::load(host_config).await.expect("host loads"));
    let (_sled, sled) = crate::util::durable(&data.path().join("store"));
    let store = Arc::new(FailingJobWrites {
        inner: sled.storage.clone(),
        skip: 0.into(),
        fail: 0.into(),
        applied: false.into(),
        failed: 0.into(),
    });
    let storage: Arc<dyn glovebox::storage::Storage> = store.clone();
    let durable = Arc::new(Durable {
        sessions: sled.sessions.clone(),
        approvals: sled.approvals.clone(),
        outbox: sled.outbox.clone(),
        storage,
        recovery: Default::default(),
        repairs: Vec::new(),
    });
    let session = durable.sessions.start(start("worker")).unwrap().header.id;
    let jobs = Jobs::new(Gateway::new(host, durable), config(1));
    (store, jobs, session, data)
}

// Threat 28: a job whose start could not be stored (the write reached the
// store, its flush failed) is neither left `running` without running nor
// left for a restart: it starts once the store takes writes again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn threat_28_a_job_whose_start_failed_to_store_runs_once_the_store_works() {
    let (store, jobs, _session, _data) = failing_job_writes().await;
    let operator = glovebox::cli_operator();
    let jobs = jobs.scope(&operator);
    // The spawn's `queued` record goes through; the start's `running` is
    // written but not acknowledged, twice.
    store.arm(1, 2, true);
    let job = jobs
        .spawn_call("worker", "echo", r#"{"message":"hi"}"#)
        .await
        .unwrap();
    let done = jobs
        .wait(
            std::slice::from_ref(&job.id),
            WaitMode::All,
            Some(Duration::from_secs(30)),
        )
        .await
        .unwrap();
    assert!(!done.timed_out, "{:?}", jobs.status(&job.id).await.unwrap());
    assert_eq!(store.failed(), 2, "both injected failures were met");
    let done = &done.done[0];
    assert_eq!(done.status, JobStatus::Completed, "{done:?}");
    assert_eq!(done.attempts, 1, "one start, not one per try: {done:?}");
}

// Threat 28: a job that ran but could not store its outcome keeps trying
// (for up to 10 minutes) and ends with its outcome once the store works,
// rather than staying `running` until a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn threat_28_a_job_retries_storing_its_outcome_until_the_store_works() {
    let (store, jobs, _session, _data) = failing_job_writes().await;
    let operator = glovebox::cli_operator();
    let jobs = jobs.scope(&operator);
    let job = jobs
        .spawn_call("worker", "sleep", r#"{"seconds":1}"#)
        .await
        .unwrap();
    let until = Instant::now() + Duration::from_secs(20);
    while jobs.status(&job.id).await.unwrap().status != JobStatus::Running {
        assert!(Instant::now() < until, "the job never ran");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Its outcome is the next job write: it fails three times, unwritten.
    store.arm(0, 3, false);
    let done = jobs
        .wait(
            std::slice::from_ref(&job.id),
            WaitMode::All,
            Some(Duration::from_secs(30)),
        )
        .await
        .unwrap();
    assert!(!done.timed_out, "{:?}", jobs.status(&job.id).await.unwrap());
    assert_eq!(store.failed(), 3, "every injected failure was met");
    let done = &done.done[0];
    assert_eq!(done.status, JobStatus::Completed, "{done:?}");
    let output = done
        .result
        .as_ref()
        .and_then(|r| r.output.as_ref())
        .unwrap();
    assert_eq!(output["slept_seconds"], 1);
}
