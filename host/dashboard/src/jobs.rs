//! The jobs pages: `/ui/jobs` (the live jobs, then the finished ones, the
//! latest to end first, a page at a time with `?cursor=`) and
//! `/ui/jobs/{id}` (one job, with its input and its output).
//!
//! Why a page at a time, and the bodies on a job's own page only: an agent
//! can leave as many finished jobs as its byte quota holds, each with an
//! output of up to its plugin's cap, and the page (and its once-a-second
//! live check, `events.rs`) used to read every one of them whole (threat
//! 49). The list reads the jobs' records (sizes and SHA-256 of their
//! bodies) through their indexes; only a job's own page reads its bodies.

use std::fmt::Write as _;

use axum::extract::{Path as UrlPath, Query};
use axum::http::StatusCode;
use axum::response::Response;
use glovebox::jobs::{JobError, JobSummary};
use glovebox::page::PageRequest;
use glovebox::{JobInfo, JobStatus};

use crate::App;
use crate::html::{self, badge, esc, url};
use crate::viewer::{Rendered, Viewer, internal, now_ms, session_link};

/// Finished jobs a page shows.
pub(crate) const FINISHED_PAGE: usize = 50;
/// Live jobs of each status the page shows (the rest are counted).
const LIVE_SHOWN: usize = 200;
/// Bytes of a body shown on a job's page.
const SHOWN: usize = 16 * 1024;

#[derive(serde::Deserialize, Default)]
pub struct JobsQuery {
    /// Where the previous page of finished jobs ended.
    cursor: Option<String>,
}

/// `GET /ui/jobs`.
pub async fn jobs(viewer: Viewer, Query(q): Query<JobsQuery>) -> Response {
    viewer
        .page("jobs", "jobs", move |app| render_jobs(app, q.cursor))
        .await
}

/// The finished jobs the page shows first: what the live check watches.
pub(crate) fn first_finished(app: &App) -> Result<Vec<JobSummary>, JobError> {
    Ok(app.jobs.recent(&PageRequest::first(FINISHED_PAGE))?.items)
}

fn render_jobs(app: &App, cursor: Option<String>) -> Rendered {
    let live = app.jobs.live().map_err(internal)?;
    let finished = app
        .jobs
        .recent(&PageRequest {
            limit: Some(FINISHED_PAGE),
            cursor: cursor.clone(),
        })
        .map_err(|e| match e {
            JobError::BadRequest(_) => (StatusCode::BAD_REQUEST, e.to_string()),
            e => internal(e),
        })?;
    let now = now_ms(app);
    let mut body = String::from("<h1>Jobs</h1>");
    for (title, key, status) in [
        ("Queued", "queued", JobStatus::Queued),
        ("Running", "running", JobStatus::Running),
    ] {
        let jobs: Vec<&JobSummary> = live.iter().filter(|j| j.status == status).collect();
        let _ = write!(body, "<h2>{title} ({})</h2>", jobs.len());
        let rows: Vec<String> = jobs
            .iter()
            .take(LIVE_SHOWN)
            .map(|j| job_row(j, now))
            .collect();
        body += &html::table_or_none(&format!("jobs-{key}"), &HEAD, &rows);
    }
    body += "<h2>Finished, the latest first</h2>";
    let rows: Vec<String> = finished.items.iter().map(|j| job_row(j, now)).collect();
    body += &html::table_or_none("jobs-finished", &HEAD, &rows);
    let mut links = Vec::new();
    if cursor.is_some() {
        links.push("<a href=\"/ui/jobs\">latest</a>".to_string());
    }
    if let Some(next) = &finished.next_cursor {
        links.push(format!(
            "<a id=\"jobs-next\" href=\"/ui/jobs?cursor={}\">older</a>",
            url(next)
        ));
    }
    if !links.is_empty() {
        let _ = write!(body, "<p>{}</p>", links.join(" · "));
    }
    Ok(("Jobs".into(), body))
}

const HEAD: [&str; 9] = [
    "job", "session", "tool", "status", "created", "took", "attempts", "input", "result",
];

fn took(started: Option<u64>, finished: Option<u64>, now: u64) -> String {
    match (started, finished) {
        (Some(s), Some(f)) => html::duration(f.saturating_sub(s)),
        (Some(s), None) => format!("{} so far", html::duration(now.saturating_sub(s))),
        _ => "-".into(),
    }
}

/// A body as the list shows it: its size and the start of its SHA-256.
fn body_digest(bytes: u64, sha256: &str) -> String {
    let (short, _) = html::cut(sha256, 12);
    format!(
        "{} <code title=\"sha256 {}\">{}</code>",
        glovebox::manifest::format_size(bytes),
        esc(sha256),
        esc(short)
    )
}

fn job_row(j: &JobSummary, now: u64) -> String {
    let result = match &j.result {
        None => "-".to_string(),
        Some(r) => {
            let mut out = String::new();
            if let Some(e) = &r.error {
                let _ = write!(
                    out,
                    "<span class=\"error\">{}: {}</span>",
                    esc(&e.kind),
                    esc(&e.message)
                );
            }
            if let (Some(bytes), Some(sha)) = (r.output_bytes, &r.output_sha256) {
                let _ = write!(out, "output {}", body_digest(bytes, sha));
            }
            out
        }
    };
    format!(
        "<tr><td><a href=\"/ui/jobs/{}\"><code>{}</code></a></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{result}</td></tr>",
        url(&j.id),
        esc(&j.id),
        session_link(&j.session, j.session_name.as_deref()),
        esc(&j.tool),
        badge(j.status.as_str()),
        html::when(j.created_at_ms, now),
        took(j.started_at_ms, j.finished_at_ms, now),
        j.attempts,
        body_digest(j.input_bytes, &j.input_sha256),
    )
}

/// `GET /ui/jobs/{id}`.
pub async fn job(viewer: Viewer, UrlPath(id): UrlPath<String>) -> Response {
    viewer
        .page("jobs", "jobs", move |app| render_job(app, &id))
        .await
}

fn render_job(app: &App, id: &str) -> Rendered {
    // Looked at, not read: an operator's look does not count as the
    // agent waiting for it (`result_read`).
    let job: JobInfo = app.jobs.peek(id).map_err(|e| match e {
        JobError::NotFound(_) => (StatusCode::NOT_FOUND, e.to_string()),
        e => internal(e),
    })?;
    let now = now_ms(app);
    let mut body = format!(
        "<h1>Job <code>{}</code></h1><p>{} · session {} · tool <b>{}</b> · created {} · took {} · attempts {}</p><h2>Input</h2>{}",
        esc(&job.id),
        badge(job.status.as_str()),
        session_link(&job.session, job.session_name.as_deref()),
        esc(&job.tool),
        html::when(job.created_at_ms, now),
        took(job.started_at_ms, job.finished_at_ms, now),
        job.attempts,
        html::pre(&app.gateway.host().config().secrets.mask(&job.input), SHOWN),
    );
    if let Some(r) = &job.result {
        if let Some(e) = &r.error {
            let _ = write!(
                body,
                "<h2>Error</h2><p class=\"error\">{}</p>{}",
                esc(&e.kind),
                html::pre(&e.message, SHOWN)
            );
        }
        if let Some(o) = &r.output {
            let text = serde_json::to_string_pretty(o).unwrap_or_default();
            let _ = write!(body, "<h2>Output</h2>{}", html::pre(&text, SHOWN));
        }
        for (name, captured) in [("stdout", &r.stdout), ("stderr", &r.stderr)] {
            if !captured.text.is_empty() {
                let _ = write!(body, "<h2>{name}</h2>{}", html::pre(&captured.text, SHOWN));
            }
        }
    }
    Ok((format!("Job {id}"), body))
}
