//! Job records that stream (threat 49): bodies apart from the records that
//! get listed, indexes by session, owner and status, listings a page at a
//! time, a restart that reads only the live jobs, the bytes an agent's jobs
//! keep held to `quotas.job_bytes_per_principal`, and records of the shape
//! before all that still read. The library with real plugins, and the real
//! binary over MCP and the command line.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use glovebox::manifest::QuotasConfig;
use glovebox::page::PageRequest;
use glovebox::storage::{Result, Storage, StorageError, Swap};
use glovebox::{
    Durable, Gateway, Host, JobError, JobScope, JobStatus, Jobs, JobsConfig, Principal,
    SessionError, WaitMode,
};
use serde_json::{Value, json};

use crate::jobs::{list_all, start, worker_bot};
use crate::util::{self, manifest, plugins};

/// The buckets jobs keep: a scan of any of them would read every job.
const JOB_BUCKETS: [&str; 4] = ["jobs", "job_data", "job_index", "job_bytes"];

/// A store that refuses `Storage::scan` of the job buckets (and counts the
/// refusals, so one swallowed by a caller still fails the test) and counts
/// the reads of each bucket. Everything else goes to the store under it.
pub(crate) struct JobScanGuard {
    inner: Arc<dyn Storage>,
    refused: AtomicUsize,
    /// The keys read, by bucket.
    gets: Mutex<BTreeMap<String, Vec<String>>>,
}

impl JobScanGuard {
    pub(crate) fn new(inner: Arc<dyn Storage>) -> Arc<JobScanGuard> {
        Arc::new(JobScanGuard {
            inner,
            refused: AtomicUsize::new(0),
            gets: Mutex::new(BTreeMap::new()),
        })
    }

    /// How many scans of a job bucket were refused.
    pub(crate) fn refused(&self) -> usize {
        self.refused.load(Ordering::SeqCst)
    }

    /// The keys of `bucket` read since the last reset.
    fn gets(&self, bucket: &str) -> Vec<String> {
        self.gets
            .lock()
            .unwrap()
            .get(bucket)
            .cloned()
            .unwrap_or_default()
    }

    /// The keys of the job buckets read since the last reset that are
    /// about one of `ids` (a record, a body).
    fn read_of(&self, ids: &[String]) -> Vec<String> {
        ["jobs", "job_data"]
            .iter()
            .flat_map(|b| self.gets(b))
            .filter(|key| ids.iter().any(|id| key.starts_with(id.as_str())))
            .collect()
    }

    fn reset(&self) {
        self.gets.lock().unwrap().clear();
    }
}

impl Storage for JobScanGuard {
    fn append(&self, stream: &str, expected: u64, entries: &[Vec<u8>]) -> Result<u64> {
        self.inner.append(stream, expected, entries)
    }
    fn append_unsynced(&self, stream: &str, expected: u64, entries: &[Vec<u8>]) -> Result<u64> {
        self.inner.append_unsynced(stream, expected, entries)
    }
    fn sync(&self) -> Result<()> {
        self.inner.sync()
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
        self.inner.put(bucket, key, value)
    }
    fn put_unsynced(&self, bucket: &str, key: &str, value: &[u8]) -> Result<()> {
        self.inner.put_unsynced(bucket, key, value)
    }
    fn put_if(&self, bucket: &str, key: &str, swap: Swap<'_>) -> Result<bool> {
        self.inner.put_if(bucket, key, swap)
    }
    fn get(&self, bucket: &str, key: &str) -> Result<Option<Vec<u8>>> {
        self.gets
            .lock()
            .unwrap()
            .entry(bucket.to_string())
            .or_default()
            .push(key.to_string());
        self.inner.get(bucket, key)
    }
    fn delete(&self, bucket: &str, key: &str) -> Result<()> {
        self.inner.delete(bucket, key)
    }
    fn scan(&self, bucket: &str, prefix: &str) -> Result<Vec<(String, Vec<u8>)>> {
        if JOB_BUCKETS.contains(&bucket) {
            self.refused.fetch_add(1, Ordering::SeqCst);
            return Err(StorageError::Io(format!(
                "test: a scan of the whole bucket `{bucket}` was refused: read it through its index, a page at a time"
            )));
        }
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

/// A host with echo and sleep, its store behind a [`JobScanGuard`], the
/// jobs service, and an agent's session.
struct Fixture {
    guard: Arc<JobScanGuard>,
    durable: Arc<Durable>,
    host: Arc<Host>,
    jobs: Arc<Jobs>,
    /// The operator the tests act as, unless they name the agent.
    operator: Principal,
    session: String,
    _data: tempfile::TempDir,
}

impl Fixture {
    async fn new(quotas: QuotasConfig) -> Fixture {
        let mut sleep = manifest("sleep", plugins::HOSTILE_SLEEP);
        sleep.limits.deadline = Duration::from_secs(60);
        let (mut config, data) = util::config(vec![manifest("echo", plugins::TOOL_ECHO), sleep]);
        config.quotas = quotas;
        let host = Arc::new(Host::load(config).await.expect("host loads"));
        let (guard, durable) = guarded(&data.path().join("store"));
        let session = durable
            .sessions
            .scope(&worker_bot())
            .start(start("bot"), &Default::default())
            .unwrap()
            .header
            .id;
        let jobs = Jobs::new(Gateway::new(host.clone(), durable.clone()), config_of(2));
        Fixture {
            guard,
            durable,
            host,
            jobs,
            operator: glovebox::cli_operator(),
            session,
            _data: data,
        }
    }

    /// The jobs service on behalf of the operator.
    fn ops(&self) -> JobScope<'_> {
        self.jobs.scope(&self.operator)
    }

    /// The jobs service of a host started again on the same store.
    fn restarted(&self) -> Arc<Jobs> {
        Jobs::new(
            Gateway::new(self.host.clone(), self.durable.clone()),
            config_of(2),
        )
    }

    /// `echo` of a message of `n` bytes, spawned by the agent in its session.
    async fn spawn_echo(&self, n: usize) -> std::result::Result<glovebox::JobInfo, JobError> {
        let input = json!({ "message": "x".repeat(n) }).to_string();
        let call = self.jobs.gateway().admit("echo", &input).unwrap();
        self.jobs
            .scope(&worker_bot())
            .spawn(&self.session, call)
            .await
    }

    async fn wait(&self, id: &str) -> glovebox::JobInfo {
        let out = self
            .ops()
            .wait(
                &[id.to_string()],
                WaitMode::All,
                Some(Duration::from_secs(60)),
            )
            .await
            .unwrap();
        assert!(!out.timed_out, "{id} did not finish");
        out.done.into_iter().next().unwrap()
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            assert_eq!(self.guard.refused(), 0, "a job bucket was scanned whole");
        }
    }
}

fn config_of(max_running: usize) -> JobsConfig {
    JobsConfig {
        max_running,
        ..JobsConfig::default()
    }
}

/// The sled store at `dir` behind a [`JobScanGuard`], as a host's `Durable`.
pub(crate) fn guarded(dir: &std::path::Path) -> (Arc<JobScanGuard>, Arc<Durable>) {
    let (_sled, sled) = crate::util::durable(dir);
    let guard = JobScanGuard::new(sled.storage.clone());
    let storage: Arc<dyn Storage> = guard.clone();
    let durable = Arc::new(Durable {
        sessions: sled.sessions.clone(),
        approvals: sled.approvals.clone(),
        outbox: sled.outbox.clone(),
        storage,
        recovery: Default::default(),
        repairs: Vec::new(),
    });
    (guard, durable)
}

fn quota_of(bytes: u64) -> QuotasConfig {
    let mut quotas = QuotasConfig {
        job_bytes_per_principal: bytes,
        ..QuotasConfig::default()
    };
    quotas.set.insert("job_bytes_per_principal");
    quotas
}

// Threat 49: an agent that loops `job_spawn` with large outputs is refused
// by `quotas.job_bytes_per_principal`, named, with nothing queued; a job
// that ends past it keeps its output; the operator is not held to it; the
// retention sweep gives the bytes back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn threat_49_an_agent_looping_job_spawn_is_refused_by_the_named_byte_quota() {
    let mut quotas = quota_of(1024 * 1024);
    quotas.retain_finished = Some(Duration::from_millis(1));
    let f = Fixture::new(quotas).await;
    let mut done = Vec::new();
    let refusal = loop {
        match f.spawn_echo(300_000).await {
            Ok(job) => done.push(f.wait(&job.id).await),
            Err(e) => break e,
        }
        assert!(done.len() < 10, "never refused");
    };
    // 600 KB a job (its input and the same again as output): the second
    // passes the quota, the third is refused.
    assert_eq!(done.len(), 2, "{refusal}");
    let message = refusal.to_string();
    assert!(
        matches!(
            &refusal,
            JobError::Session(SessionError::Quota { limit, .. }) if limit.key == "job_bytes_per_principal"
        ),
        "{message}"
    );
    assert!(
        message.contains("`quotas.job_bytes_per_principal` = 1 MiB, set by the operator"),
        "{message}"
    );
    assert!(message.contains("worker-bot"), "{message}");
    // Nothing was queued for the refused spawn; the jobs that ran past the
    // quota kept their outputs.
    assert_eq!(list_all(f.ops(), None, None).await.unwrap().len(), 2);
    let last = f.ops().status(&done[1].id).await.unwrap();
    let output = last.result.unwrap().output.unwrap();
    assert_eq!(output["message"].as_str().unwrap().len(), 300_000);
    // The store counts what the jobs keep.
    let store = glovebox::jobs::JobStore::new(f.durable.storage.clone());
    let held = store.held_bytes("worker-bot").unwrap();
    let kept: u64 = list_all(f.ops(), None, None)
        .await
        .unwrap()
        .iter()
        .map(|j| j.stored_bytes())
        .sum();
    assert_eq!(held, kept);
    assert!(held > 1024 * 1024, "{held}");
    // The operator is not held to it.
    f.ops()
        .spawn_call(&f.session, "echo", r#"{"message":"operator"}"#)
        .await
        .unwrap();
    // Retention removes the agent's finished jobs, and gives their bytes back.
    tokio::time::sleep(Duration::from_millis(20)).await;
    glovebox::sweep::collect_finished(f.jobs.gateway()).await;
    assert_eq!(store.held_bytes("worker-bot").unwrap(), 0);
    let again = f.spawn_echo(10).await.unwrap();
    f.wait(&again.id).await;
}

// Threat 49: a listing answers one bounded page of records without their
// bodies (sizes and SHA-256 instead), and goes on from its cursor; a status
// still carries the output.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn threat_49_job_list_answers_a_bounded_page_without_bodies() {
    let f = Fixture::new(QuotasConfig::default()).await;
    let mut ids = Vec::new();
    for _ in 0..5 {
        let job = f.spawn_echo(200_000).await.unwrap();
        ids.push(f.wait(&job.id).await.id);
    }
    let page = f
        .ops()
        .list(Some(&f.session), None, &PageRequest::first(2))
        .await
        .unwrap();
    let text = serde_json::to_string(&page).unwrap();
    assert!(text.len() < 4096, "{} bytes in a page of 2", text.len());
    assert!(!text.contains("xxxx"), "no body in a listing");
    let first = &page.items[0];
    assert_eq!(first.id, ids[0]);
    let input = json!({ "message": "x".repeat(200_000) }).to_string();
    assert_eq!(first.input_bytes, input.len() as u64);
    assert_eq!(
        first.input_sha256,
        glovebox::session::digest(input.as_bytes())
    );
    let result = first.result.as_ref().unwrap();
    assert_eq!(result.output_bytes, Some(input.len() as u64));
    assert_eq!(
        result.output_sha256.as_deref(),
        Some(glovebox::session::digest(input.as_bytes()).as_str())
    );
    // The rest, a page at a time, oldest first.
    let next = PageRequest {
        limit: Some(2),
        cursor: page.next_cursor.clone(),
    };
    let second = f.ops().list(Some(&f.session), None, &next).await.unwrap();
    assert_eq!(
        second.items.iter().map(|j| &j.id).collect::<Vec<_>>(),
        [&ids[2], &ids[3]]
    );
    let all: Vec<String> = list_all(f.ops(), None, Some(JobStatus::Completed))
        .await
        .unwrap()
        .into_iter()
        .map(|j| j.id)
        .collect();
    assert_eq!(all, ids);
    // A cursor that is not one the listing handed out is refused, not a restart.
    let bad = PageRequest {
        limit: None,
        cursor: Some("from-the-top".into()),
    };
    let err = f.ops().list(None, None, &bad).await.unwrap_err();
    assert!(matches!(err, JobError::BadRequest(_)), "{err}");
    // A status carries the output.
    let job = f.ops().status(&ids[4]).await.unwrap();
    assert_eq!(job.input, input);
    assert_eq!(
        job.result.unwrap().output.unwrap()["message"]
            .as_str()
            .unwrap()
            .len(),
        200_000
    );
}

// Threat 49: a restart over many big finished jobs reads the live jobs'
// index and nothing else: no body and no finished job's record.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn threat_49_a_restart_with_many_big_finished_jobs_recovers_without_reading_them() {
    let f = Fixture::new(QuotasConfig::default()).await;
    let mut finished = Vec::new();
    for _ in 0..20 {
        let job = f.spawn_echo(100_000).await.unwrap();
        finished.push(f.wait(&job.id).await.id);
    }
    // One job left queued by a process that did not run it (the CLI's way).
    let queued = f
        .ops()
        .enqueue(&f.session, "echo", r#"{"message":"after the restart"}"#)
        .await
        .unwrap();
    f.guard.reset();
    let again = f.restarted();
    let recovered = again.recover().await.unwrap();
    assert_eq!(
        recovered.iter().map(|j| &j.id).collect::<Vec<_>>(),
        [&queued.id]
    );
    assert_eq!(
        f.guard.read_of(&finished),
        Vec::<String>::new(),
        "the finished jobs were read"
    );
    let out = again
        .scope(&f.operator)
        .wait(
            std::slice::from_ref(&queued.id),
            WaitMode::All,
            Some(Duration::from_secs(60)),
        )
        .await
        .unwrap();
    assert_eq!(out.done[0].status, JobStatus::Completed, "{out:?}");
}

// Threat 49: ending a session reads that session's jobs for its unwaited
// check, not every job in the store.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn threat_49_session_end_reads_only_that_sessions_jobs() {
    let f = Fixture::new(QuotasConfig::default()).await;
    let mut others = Vec::new();
    for _ in 0..30 {
        let job = f.spawn_echo(10).await.unwrap();
        others.push(f.wait(&job.id).await.id);
    }
    let other = f
        .durable
        .sessions
        .scope(&worker_bot())
        .start(start("other"), &Default::default())
        .unwrap()
        .header
        .id;
    let call = f
        .jobs
        .gateway()
        .admit("sleep", r#"{"seconds":30}"#)
        .unwrap();
    let left = f
        .jobs
        .scope(&worker_bot())
        .spawn(&other, call)
        .await
        .unwrap();
    f.guard.reset();
    let ended = f
        .jobs
        .gateway()
        .scope(&worker_bot())
        .end_session_noting_jobs(&other, glovebox::session::EndOutcome::Completed)
        .await
        .unwrap();
    assert_eq!(ended.unwaited.len(), 1, "{:?}", ended.unwaited);
    assert_eq!(ended.unwaited[0].id, left.id);
    assert_eq!(
        f.guard.read_of(&others),
        Vec::<String>::new(),
        "another session's jobs were read"
    );
    f.ops().cancel(&left.id).await.unwrap();
}

/// Writes a job record the way Glovebox did before bodies were kept apart:
/// the whole job inline in `jobs`, no index entries, no byte count.
fn write_old_record(storage: &dyn Storage, job: &glovebox::JobInfo) {
    let mut value = serde_json::to_value(job).unwrap();
    let object = value.as_object_mut().unwrap();
    object.remove("owner");
    object.remove("charged_to");
    storage
        .put("jobs", &job.id, &serde_json::to_vec(&value).unwrap())
        .unwrap();
}

fn old_job(id: &str, session: &str, status: JobStatus, created_at_ms: u64) -> glovebox::JobInfo {
    let mut job = glovebox::JobInfo::queued(
        id,
        session,
        "echo.echo",
        r#"{"message":"from before"}"#,
        true,
        created_at_ms,
    );
    job.session_name = Some("w".into());
    job.by = Some("cli:0".into());
    job.status = status;
    if status.is_final() {
        job.attempts = 1;
        job.started_at_ms = Some(created_at_ms + 1);
        job.finished_at_ms = Some(created_at_ms + 2);
        job.result_read = Some(false);
        job.result = Some(glovebox::JobResult {
            output: Some(json!({"message": "from before"})),
            error: None,
            stdout: Default::default(),
            stderr: Default::default(),
            metering: Default::default(),
        });
    }
    job
}

// Threat 49: records written in the old shape (the whole job inline) still
// read through every path once the real binary opens the store: listed
// (through the indexes the open gave them), shown whole, recovered and run,
// counted at the session's end, and rewritten in the new shape.
#[test]
fn threat_49_job_records_of_the_old_shape_read_through_every_path() {
    let site = util::Site::new(true);
    let session = site.start_workagent("w")["id"]
        .as_str()
        .unwrap()
        .to_string();
    let now = glovebox::clock::system_ms();
    {
        let store =
            glovebox::storage::SledStore::open(&site.data(), glovebox::storage::Durability::Flush)
                .unwrap();
        write_old_record(
            &store,
            &old_job("job-0000000000a1", &session, JobStatus::Completed, now),
        );
        write_old_record(
            &store,
            &old_job("job-0000000000a2", &session, JobStatus::Queued, now + 5),
        );
        // A glovebox of before kept no job index at all (this one wrote that
        // the store had nothing to rewrite when `session start` opened it).
        for (key, _) in store.scan_page("job_index", "", None, 100).unwrap() {
            store.delete("job_index", &key).unwrap();
        }
    }
    // Listed, oldest first, with sizes and digests, not bodies.
    let listed = site.json(&["job", "list", "--session", "w"]);
    let listed = listed.as_array().unwrap();
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert_eq!(listed[0]["id"], "job-0000000000a1");
    assert_eq!(listed[0]["input_bytes"], 25);
    assert_eq!(listed[0]["result"]["output_bytes"], 25);
    assert!(listed[0].get("input").is_none(), "{}", listed[0]);
    let queued = site.json(&["job", "list", "--status", "queued"]);
    assert_eq!(queued[0]["id"], "job-0000000000a2");
    // Shown whole.
    let done = site.json(&["job", "status", "job-0000000000a1"]);
    assert_eq!(done["input"], r#"{"message":"from before"}"#);
    assert_eq!(done["result"]["output"]["message"], "from before");
    // Recovered from the live index, and run.
    let waited = site.json(&["job", "wait", "job-0000000000a2", "--timeout", "60s"]);
    assert_eq!(waited["done"][0]["status"], "completed", "{waited}");
    assert_eq!(
        waited["done"][0]["result"]["output"]["message"],
        "from before"
    );
    // The session's end counts them (the first one's result was never read
    // before `job status` above, so nothing is left unwaited).
    let (code, _, err) = site.run(&["session", "end", "w"]);
    assert_eq!(code, 0, "{err}");
    // Rewritten in the new shape: no body inline.
    let store =
        glovebox::storage::SledStore::open(&site.data(), glovebox::storage::Durability::Flush)
            .unwrap();
    for id in ["job-0000000000a1", "job-0000000000a2"] {
        let record: Value =
            serde_json::from_slice(&store.get("jobs", id).unwrap().unwrap()).unwrap();
        assert!(record.get("input").is_none(), "{record}");
        assert!(record["input_sha256"].is_string(), "{record}");
    }
}

// Threat 49: over MCP, with the real binary: an agent looping `job_spawn`
// with large outputs is refused by the named quota; `job_list` answers a
// bounded page with a cursor; `job_status` carries the output; after a
// restart the same holds.
#[test]
fn threat_49_over_mcp_the_agent_is_refused_by_the_named_quota_and_job_list_pages() {
    let site = util::Site::with_config(
        "[quotas]\njob_bytes_per_principal = \"1 MiB\"\n",
        &[(
            "echo.toml",
            format!("name = \"echo\"\ncomponent = \"{}\"\n", plugins::TOOL_ECHO),
        )],
    );
    let message = "y".repeat(300_000);
    let mut server = crate::mcp::Server::initialized(&site.config(), &[]);
    let mut id = 1;
    let mut call = |server: &mut crate::mcp::Server, tool: &str, args: Value| {
        id += 1;
        server.call(id, tool, args)["result"].clone()
    };
    let mut spawned = Vec::new();
    let refused = loop {
        let answer = call(
            &mut server,
            "job_spawn",
            json!({"tool": "echo", "input": {"message": message}}),
        );
        if answer["isError"] == true {
            break answer["structuredContent"]["error"].clone();
        }
        let job = answer["structuredContent"]["id"]
            .as_str()
            .unwrap()
            .to_string();
        let waited = call(
            &mut server,
            "job_wait",
            json!({"ids": [job], "timeout_ms": 60000}),
        );
        assert_eq!(
            waited["structuredContent"]["done"][0]["status"], "completed",
            "{waited}"
        );
        spawned.push(job);
        assert!(spawned.len() < 10, "never refused");
    };
    assert_eq!(spawned.len(), 2, "{refused}");
    let text = refused["message"].as_str().unwrap();
    assert!(
        text.contains("`quotas.job_bytes_per_principal` = 1 MiB, set by the operator in [quotas]"),
        "{refused}"
    );
    let check =
        |server: &mut crate::mcp::Server,
         call: &mut dyn FnMut(&mut crate::mcp::Server, &str, Value) -> Value| {
            let page = call(server, "job_list", json!({"limit": 1}));
            let body = page["structuredContent"].clone();
            assert!(
                body.to_string().len() < 4096,
                "{} bytes",
                body.to_string().len()
            );
            assert_eq!(body["jobs"].as_array().unwrap().len(), 1, "{body}");
            assert_eq!(body["jobs"][0]["id"], spawned[0].as_str());
            assert_eq!(body["jobs"][0]["input_bytes"], json!(message.len() + 14));
            let cursor = body["next_cursor"].as_str().expect("a cursor").to_string();
            let rest = call(server, "job_list", json!({"limit": 5, "cursor": cursor}));
            let rest = &rest["structuredContent"];
            assert_eq!(rest["jobs"].as_array().unwrap().len(), 1, "{rest}");
            assert_eq!(rest["jobs"][0]["id"], spawned[1].as_str());
            assert!(rest.get("next_cursor").is_none(), "{rest}");
            let status = call(server, "job_status", json!({"id": spawned[1]}));
            assert_eq!(
                status["structuredContent"]["result"]["output"]["message"]
                    .as_str()
                    .map(str::len),
                Some(message.len())
            );
        };
    check(&mut server, &mut call);
    drop(server);
    // A restart: the same listing, the same refusal.
    let mut server = crate::mcp::Server::initialized(&site.config(), &[]);
    check(&mut server, &mut call);
    let again = call(
        &mut server,
        "job_spawn",
        json!({"tool": "echo", "input": {"message": "z"}}),
    );
    assert_eq!(again["isError"], true, "{again}");
    // The operator at the command line is not held to it.
    let job = site.json(&["job", "list", "--limit", "1"]);
    assert_eq!(job.as_array().unwrap().len(), 1);
    let session = job[0]["session"].as_str().unwrap();
    let (code, _, err) = site.run(&[
        "job",
        "spawn",
        "--session",
        session,
        "echo",
        "--input",
        "{}",
    ]);
    assert_eq!(code, 0, "{err}");
}
