//! The job store's indexes, pages, repairs and old records, on sled.

use std::sync::Arc;

use super::*;
use crate::page::PageRequest;
use crate::storage::{Durability, SledStore, Storage};

fn storage() -> (tempfile::TempDir, Arc<dyn Storage>) {
    let dir = tempfile::tempdir().unwrap();
    let storage: Arc<dyn Storage> =
        Arc::new(SledStore::open(dir.path(), Durability::Flush).unwrap());
    (dir, storage)
}

/// Job `id` of session `session` owned by `owner`, created at `at`.
fn job(id: &str, session: &str, owner: &str, status: JobStatus, at: u64) -> JobInfo {
    let mut job = JobInfo::queued(id, session, "echo.echo", r#"{"message":"hi"}"#, true, at);
    job.owner = Some(owner.into());
    job.status = status;
    if status.is_final() {
        job.finished_at_ms = Some(at + 10);
        job.result = Some(JobResult {
            output: Some(serde_json::json!({"message": "hi"})),
            error: None,
            stdout: Default::default(),
            stderr: Default::default(),
            metering: Default::default(),
        });
    }
    job
}

fn ids(page: &[JobSummary]) -> Vec<&str> {
    page.iter().map(|j| j.id.as_str()).collect()
}

#[test]
fn listings_read_their_index_a_page_at_a_time_and_trust_the_record() {
    let (_dir, storage) = storage();
    let jobs = JobStore::new(storage.clone());
    jobs.put(&job("j1", "s1", "a", JobStatus::Completed, 1))
        .unwrap();
    jobs.put(&job("j2", "s2", "b", JobStatus::Queued, 2))
        .unwrap();
    jobs.put(&job("j3", "s1", "a", JobStatus::Running, 3))
        .unwrap();
    jobs.put(&job("j4", "s1", "a", JobStatus::Failed, 4))
        .unwrap();
    let list = |query: JobQuery, limit: usize| {
        let mut all = Vec::new();
        let mut page = PageRequest::first(limit);
        loop {
            let got = jobs.list(&query, &page).unwrap();
            all.extend(got.items);
            match got.next_cursor {
                Some(next) => page.cursor = Some(next),
                None => return all,
            }
        }
    };
    assert_eq!(ids(&list(JobQuery::default(), 1)), ["j1", "j2", "j3", "j4"]);
    let s1 = JobQuery {
        session: Some("s1".into()),
        ..JobQuery::default()
    };
    assert_eq!(ids(&list(s1, 2)), ["j1", "j3", "j4"]);
    let of_b = JobQuery {
        owner: Some("b".into()),
        ..JobQuery::default()
    };
    assert_eq!(ids(&list(of_b, 5)), ["j2"]);
    let running = JobQuery {
        status: Some(JobStatus::Running),
        ..JobQuery::default()
    };
    assert_eq!(ids(&list(running, 5)), ["j3"]);
    let failed = JobQuery {
        status: Some(JobStatus::Failed),
        ..JobQuery::default()
    };
    assert_eq!(ids(&list(failed, 5)), ["j4"]);
    // The latest to end first.
    let recent = jobs.recent(&PageRequest::first(5)).unwrap();
    assert_eq!(ids(&recent.items), ["j4", "j1"]);
    // A status change the index has not caught up with (a crash between
    // the record and the index): the record wins, and the next walk of the
    // live index moves it.
    let mut done = job("j3", "s1", "a", JobStatus::Completed, 3);
    done.finished_at_ms = Some(50);
    let (summary, _) = JobSummary::of(&done);
    storage
        .put("jobs", "j3", &serde_json::to_vec(&summary).unwrap())
        .unwrap();
    let running = JobQuery {
        status: Some(JobStatus::Running),
        ..JobQuery::default()
    };
    assert!(list(running, 5).is_empty(), "a stale entry is skipped");
    assert_eq!(ids(&jobs.live(100).unwrap()), ["j2"]);
    let completed = JobQuery {
        status: Some(JobStatus::Completed),
        ..JobQuery::default()
    };
    assert_eq!(ids(&list(completed, 5)), ["j1", "j3"], "and repaired");
    // An entry whose record never came is skipped, and removed once old.
    storage
        .put_unsynced(index::BUCKET, "l/0000000000000009/ghost", b"ghost")
        .unwrap();
    assert_eq!(ids(&jobs.live(100).unwrap()), ["j2"]);
    assert!(
        storage
            .get(index::BUCKET, "l/0000000000000009/ghost")
            .unwrap()
            .is_some()
    );
    jobs.live(index::DANGLING_GRACE_MS + 100).unwrap();
    assert!(
        storage
            .get(index::BUCKET, "l/0000000000000009/ghost")
            .unwrap()
            .is_none()
    );
}

#[test]
fn a_filter_few_jobs_pass_answers_a_short_page_and_goes_on() {
    let (_dir, storage) = storage();
    let jobs = JobStore::new(storage);
    for n in 0..(SCAN_BUDGET + 10) {
        let status = if n == SCAN_BUDGET + 5 {
            JobStatus::Running
        } else {
            JobStatus::Completed
        };
        let mut j = job(&format!("j{n:05}"), "s1", "a", status, n as u64);
        j.result = None;
        jobs.put(&j).unwrap();
    }
    let query = JobQuery {
        session: Some("s1".into()),
        status: Some(JobStatus::Running),
        ..JobQuery::default()
    };
    let first = jobs.list(&query, &PageRequest::first(10)).unwrap();
    assert!(first.items.is_empty());
    let next = PageRequest {
        limit: Some(10),
        cursor: first.next_cursor,
    };
    let second = jobs.list(&query, &next).unwrap();
    assert_eq!(ids(&second.items), [format!("j{:05}", SCAN_BUDGET + 5)]);
    assert_eq!(second.next_cursor, None);
}

#[test]
fn the_sweep_removes_old_final_jobs_whole_and_gives_their_bytes_back() {
    let (_dir, storage) = storage();
    let jobs = JobStore::new(storage.clone());
    let quota = crate::manifest::QuotasConfig::default().limit("job_bytes_per_principal");
    let mut old = job("j1", "s1", "a", JobStatus::Completed, 1);
    old.charged_to = Some("a".into());
    old.attempts = 1;
    jobs.create(&old, quota.clone()).unwrap();
    let mut live = job("j2", "s1", "a", JobStatus::Running, 2);
    live.charged_to = Some("a".into());
    jobs.create(&live, quota).unwrap();
    jobs.put(&job("j3", "s1", "a", JobStatus::Completed, 1_000))
        .unwrap();
    assert!(jobs.held_bytes("a").unwrap() > 0);
    assert_eq!(jobs.collect(500).unwrap(), 1);
    assert!(matches!(jobs.get("j1"), Err(JobError::NotFound(_))));
    assert_eq!(
        jobs.held_bytes("a").unwrap(),
        jobs.summary("j2").unwrap().stored_bytes(),
        "only the live job's bytes stay counted"
    );
    for bucket in [data::BUCKET, index::BUCKET] {
        let left = storage.scan_page(bucket, "", None, 100).unwrap();
        assert!(
            left.iter().all(|(key, _)| !key.contains("j1")),
            "{bucket}: {left:?}"
        );
    }
    assert_eq!(ids(&jobs.of_session("s1").unwrap()), ["j2", "j3"]);
}

#[test]
fn old_records_read_whole_and_are_rewritten_at_open_or_at_their_next_change() {
    let (_dir, storage) = storage();
    let jobs = JobStore::new(storage.clone());
    let write_old = |j: &JobInfo| {
        storage
            .put("jobs", &j.id, &serde_json::to_vec(j).unwrap())
            .unwrap()
    };
    let mut done = job("j1", "s1", "a", JobStatus::Completed, 1);
    done.owner = None;
    done.result_read = Some(false);
    let mut queued = job("j2", "s1", "a", JobStatus::Queued, 2);
    queued.owner = None;
    write_old(&done);
    write_old(&queued);
    // Before any rewrite: read whole, by status, by the places' check.
    assert_eq!(jobs.get("j1").unwrap().input, done.input);
    assert_eq!(
        jobs.summary("j1").unwrap().input_bytes,
        done.input.len() as u64
    );
    let raw = storage.get("jobs", "j1").unwrap().unwrap();
    assert_eq!(store::status_of(&raw), Some(JobStatus::Completed));
    // A change rewrites it first, keeping its bodies.
    let (changed, _) = jobs
        .update("j2", |j| {
            j.status = JobStatus::Running;
            true
        })
        .unwrap();
    assert_eq!(changed.status, JobStatus::Running);
    assert_eq!(jobs.get("j2").unwrap().input, queued.input);
    assert_eq!(ids(&jobs.live(10).unwrap()), ["j2"]);
    // The rewrite at open gives the rest their bodies apart and their
    // entries, with the owner its lookup names; once.
    let owner = |session: &str| (session == "s1").then(|| "a".to_string());
    assert_eq!(jobs.upgrade(&owner).unwrap(), 1);
    assert_eq!(jobs.upgrade(&owner).unwrap(), 0);
    let record: serde_json::Value =
        serde_json::from_slice(&storage.get("jobs", "j1").unwrap().unwrap()).unwrap();
    assert!(record.get("input").is_none(), "{record}");
    let of_a = JobQuery {
        owner: Some("a".into()),
        ..JobQuery::default()
    };
    assert_eq!(
        ids(&jobs.list(&of_a, &PageRequest::default()).unwrap().items),
        ["j1"]
    );
    let read = jobs.read("j1").unwrap();
    assert_eq!(read.result.unwrap().output, done.result.unwrap().output);
    assert!(jobs.unwaited_of("s1").unwrap().iter().all(|j| j.id == "j2"));
}

/// Why (issue 36): sled keeps a value over 128 KiB in a file of its own and
/// counts it in its cache as that file's pointer, so the node holding a
/// job's 2 MB output was never evicted and every output stayed in the
/// host's memory until it restarted. A long body is kept in pieces of at
/// most `data::CHUNK` bytes, read back whole and removed whole; a body an
/// older host wrote whole still reads.
#[test]
fn long_bodies_are_kept_in_short_pieces_read_whole_and_removed_whole() {
    let (_dir, storage) = storage();
    let jobs = JobStore::new(storage.clone());
    let long = "a".repeat(300_000);
    let mut big = job("j1", "s1", "a", JobStatus::Completed, 1);
    big.input = serde_json::json!({ "code": long }).to_string();
    big.result.as_mut().unwrap().output = Some(serde_json::json!({ "value": long }));
    jobs.put(&big).unwrap();
    let stored = storage.scan_page(data::BUCKET, "j1/", None, 1000).unwrap();
    assert!(stored.len() > 100, "{} keys", stored.len());
    let longest = stored.iter().map(|(_, v)| v.len()).max().unwrap();
    assert!(longest <= data::CHUNK, "a value of {longest} bytes");
    let read = jobs.get("j1").unwrap();
    assert_eq!(read.input, big.input);
    assert_eq!(read.result.unwrap().output, big.result.unwrap().output);

    // A body written whole (as before pieces) reads as it is.
    jobs.put(&job("j2", "s1", "a", JobStatus::Completed, 2_000))
        .unwrap();
    let whole = serde_json::json!({ "code": "b".repeat(10_000) }).to_string();
    storage
        .put(data::BUCKET, "j2/input", whole.as_bytes())
        .unwrap();
    assert_eq!(jobs.get("j2").unwrap().input, whole);

    // The sweep removes every piece with its job.
    assert_eq!(jobs.collect(500).unwrap(), 1);
    let left = storage.scan_page(data::BUCKET, "j1", None, 1000).unwrap();
    assert!(left.is_empty(), "{} keys of j1 left", left.len());
}
