//! The JSON Schemas of what the jobs answer are true: jobs in every status,
//! with and without results (an output with captured output, an error
//! longer than a record keeps, a record of every optional field), stored
//! through the real store and read back as `job_status` reads them, listed a
//! page at a time as `job_list` does, and waited for as `job_wait` answers:
//! each fits the schema schemars generates for its type (see
//! `crate::schema_truth`), strictly.

use std::sync::Arc;

use super::*;
use crate::manifest::Captured;
use crate::page::{Page, PageRequest};
use crate::schema_truth::Fits;
use crate::session::CallMetering;
use crate::storage::{Durability, SledStore, Storage};

/// Job `n` in `status`: its result (when final) has an output and captured
/// output when `ok`, else an error too long for its record.
fn job(n: usize, status: JobStatus, ok: bool) -> JobInfo {
    let mut job = JobInfo::queued(
        format!("job-{n:012x}"),
        "s-1",
        "echo.echo",
        r#"{"message":"hi"}"#,
        n.is_multiple_of(2),
        1000 + n as u64,
    );
    job.session_name = n.is_multiple_of(3).then(|| "lead".to_string());
    job.by = Some("worker".into());
    job.owner = Some("worker".into());
    job.result_read = Some(false);
    if n % 2 == 1 {
        job.runner = Some("node-1/holder".into());
        job.charged_to = Some("worker".into());
    }
    if status != JobStatus::Queued {
        job.started_at_ms = Some(job.created_at_ms + 5);
        job.attempts = 1;
    }
    job.status = status;
    if status.is_final() {
        job.finished_at_ms = Some(job.created_at_ms + 50);
        job.result = Some(JobResult {
            output: ok.then(|| serde_json::json!({"message": "hi", "n": n})),
            error: (!ok).then(|| JobErrorInfo {
                kind: status.as_str().into(),
                message: "it failed: ".repeat(200),
            }),
            stdout: Captured {
                text: if ok {
                    "said hi\n".into()
                } else {
                    String::new()
                },
                total_bytes: if ok { 8 } else { 0 },
                truncated: false,
            },
            stderr: Captured {
                text: "warn".into(),
                total_bytes: 9000,
                truncated: true,
            },
            metering: CallMetering {
                wall_us: 1500,
                fuel: ok.then_some(4000),
                peak_memory_bytes: 65536,
                bytes_in: 16,
                bytes_out: if ok { 24 } else { 0 },
                cost_micros: if ok { 2500 } else { 0 },
            },
        });
    }
    job
}

#[test]
fn every_job_answer_fits_its_schema() {
    let dir = tempfile::tempdir().unwrap();
    let storage: Arc<dyn Storage> =
        Arc::new(SledStore::open(dir.path(), Durability::Flush).unwrap());
    let store = JobStore::new(storage);
    let (info, summary, page, wait) = (
        Fits::<JobInfo>::new(),
        Fits::<JobSummary>::new(),
        Fits::<Page<JobSummary>>::new(),
        Fits::<WaitOutcome>::new(),
    );

    // A job written before its optional fields were kept: none of them.
    let mut old = JobInfo::queued("job-000000000fff", "s-0", "echo.echo", "{}", true, 1);
    old.status = JobStatus::Interrupted;
    old.result = Some(JobResult {
        output: None,
        error: Some(JobErrorInfo {
            kind: "interrupted".into(),
            message: "the host stopped".into(),
        }),
        stdout: Captured::default(),
        stderr: Captured::default(),
        metering: CallMetering::default(),
    });
    let mut jobs = vec![old];
    for (n, status) in JobStatus::ALL.into_iter().enumerate() {
        jobs.push(job(2 * n, status, true));
        jobs.push(job(2 * n + 1, status, false));
    }
    let (mut done, mut pending) = (Vec::new(), Vec::new());
    for job in &jobs {
        let stored = store.put(job).expect("put");
        summary.check(&format!("the stored record of {}", job.id), &stored);
        let what = format!("{} ({})", job.id, job.status);
        summary.check(&what, &store.summary(&job.id).expect("summary"));
        let read = store.read(&job.id).expect("read");
        info.check(&what, &read);
        info.check(&format!("{what}, read again"), &store.get(&job.id).unwrap());
        if read.status.is_final() {
            done.push(read);
        } else {
            pending.push(read);
        }
    }

    let mut request = PageRequest::first(4);
    let mut listed = 0;
    loop {
        let got = store.list(&JobQuery::default(), &request).expect("list");
        listed += got.items.len();
        page.check(&format!("the page after {listed} jobs"), &got);
        match got.next_cursor {
            Some(next) => request.cursor = Some(next),
            None => break,
        }
    }
    assert_eq!(listed, jobs.len());

    for timed_out in [false, true] {
        let outcome = WaitOutcome {
            done: done.clone(),
            pending: pending.clone(),
            timed_out,
        };
        wait.check(&format!("a wait (timed out: {timed_out})"), &outcome);
    }
}
