//! `GET /ui/events`: server-sent events telling open pages what changed.
//!
//! Every second the connection reads a cheap fingerprint of each part of
//! the ledger a page shows (the sessions with their last activity, the
//! approvals, the jobs, the rescues) and sends a `change` event naming the
//! parts that differ; the page's script then fetches itself again and swaps
//! its content (`assets/app.js`).

use std::collections::hash_map::DefaultHasher;
use std::convert::Infallible;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::Duration;

use axum::Extension;
use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::Stream;
use glovebox::page::PageRequest;
use glovebox::session::SessionFilter;

use crate::App;
use crate::auth::Operator;

/// How often the ledger is looked at.
const POLL: Duration = Duration::from_secs(1);

const PARTS: [&str; 4] = ["sessions", "approvals", "jobs", "rescues"];

/// Settled approvals whose arrival refreshes the approvals page (a new one
/// comes first, so one would do; a few cover a removal by the sweep too).
const SETTLED_WATCHED: usize = 8;
/// Pending approvals counted for the nav's badge.
const PENDING_WATCHED: usize = 1000;

fn fingerprints(app: &App) -> [u64; 4] {
    let ledger = app.gateway.ledger();
    let mut out = [0u64; 4];
    let mut h = DefaultHasher::new();
    // The first page, as the sessions page shows it: a change further down
    // is seen when that page is opened.
    if let Ok(page) = ledger
        .sessions
        .list(&SessionFilter::default(), &Default::default())
    {
        for s in &page.items {
            (
                &s.header.id,
                s.header.status.as_str(),
                s.header.updated_at_ms,
                &s.header.tags,
                &s.header.name,
            )
                .hash(&mut h);
        }
    }
    out[0] = h.finish();
    // What the approvals page shows: its first page of pending approvals,
    // the newest settled ones, and the nav's count; read through the index
    // a page at a time, never the whole bucket.
    let mut h = DefaultHasher::new();
    let first = PageRequest::default();
    if let Ok(page) = ledger.approvals.page(false, &first) {
        for a in &page.items {
            a.id.hash(&mut h);
        }
    }
    if let Ok(page) = ledger
        .approvals
        .settled(&PageRequest::first(SETTLED_WATCHED))
    {
        for a in &page.items {
            a.id.hash(&mut h);
        }
    }
    ledger
        .approvals
        .count_pending(PENDING_WATCHED)
        .unwrap_or(0)
        .hash(&mut h);
    out[1] = h.finish();
    let mut h = DefaultHasher::new();
    // What the jobs page shows first: the live jobs and the latest to end,
    // read through their indexes (never every job).
    if let (Ok(live), Ok(finished)) = (app.jobs.live(), crate::jobs::first_finished(app)) {
        for j in live.iter().chain(&finished) {
            (&j.id, j.status.as_str()).hash(&mut h);
        }
    }
    out[2] = h.finish();
    let mut h = DefaultHasher::new();
    // What the rescues page shows first: the open missions, the first page
    // of every rescue, the context index's first page (retired entries
    // too, so a retirement is seen), each read through its index.
    let rescues = crate::rescues::of(app);
    if let Ok(shown) = crate::rescues::watched(&rescues, None) {
        for r in shown.open.items.iter().chain(&shown.listed.items) {
            (&r.id, r.status()).hash(&mut h);
        }
    }
    if let Ok(entries) = rescues.index().list(None, true, &PageRequest::default()) {
        for e in &entries.items {
            (&e.id, e.retired_at_ms).hash(&mut h);
        }
    }
    out[3] = h.finish();
    out
}

async fn read(app: &Arc<App>) -> Option<[u64; 4]> {
    let app = app.clone();
    crate::blocking(move || fingerprints(&app)).await.ok()
}

pub async fn events(
    State(app): State<Arc<App>>,
    Extension(_): Extension<Operator>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let first = read(&app).await;
    let stream = futures_util::stream::unfold((app, first), |(app, mut last)| async move {
        loop {
            tokio::time::sleep(POLL).await;
            let Some(now) = read(&app).await else {
                continue;
            };
            let changed: Vec<&str> = match last {
                None => Vec::new(),
                Some(before) => PARTS
                    .iter()
                    .zip(before.iter().zip(now.iter()))
                    .filter(|(_, (a, b))| a != b)
                    .map(|(name, _)| *name)
                    .collect(),
            };
            last = Some(now);
            if !changed.is_empty() {
                let event = Event::default().event("change").data(changed.join(" "));
                return Some((Ok(event), (app, last)));
            }
        }
    });
    Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}
