//! The session indexes (`index.rs`, `listing.rs`): a start, a listing and a
//! name lookup read a page of an index, never every session; listings page
//! newest first without skipping or repeating; the indexes are made once
//! for a data dir written before them, and repaired by recovery.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};

use super::counting::{Counting, SESSION_BUCKETS};
use super::*;
use crate::page::PageRequest;

/// A service over a counting store in a fresh data dir, with a clock the
/// test moves (a millisecond per session started).
fn counted() -> (tempfile::TempDir, Arc<Counting>, Sessions, Arc<AtomicU64>) {
    let dir = tempfile::tempdir().unwrap();
    let store = Counting::over(open(dir.path()));
    let now = Arc::new(AtomicU64::new(1_000_000));
    let sessions = {
        let now = now.clone();
        Sessions::new(store.clone()).with_clock(move || now.fetch_add(1, Ordering::SeqCst))
    };
    (dir, store, sessions, now)
}

fn started(s: &Sessions, who: &Principal, name: &str) -> SessionState {
    s.scope(who)
        .start(start_request(name, Role::Workagent), &HashSet::new())
        .unwrap()
}

/// Why: every start counted the owner's live sessions by decoding every
/// session, every listing did too, and a name that no live session held
/// was looked for in every session: one agent's sessions made every
/// request slower for everyone, without end.
#[test]
fn threat_49_a_start_a_listing_and_a_name_lookup_read_a_page_not_every_session() {
    let (_dir, store, s, _) = counted();
    let (a, b) = (workagent("a"), workagent("b"));
    const MANY: usize = 600;
    for i in 0..MANY {
        let id = started(&s, &a, &format!("n{i}")).header.id;
        s.scope(&a).end(&id, EndOutcome::Exit).unwrap();
    }
    started(&s, &b, "theirs");
    store.take();

    started(&s, &a, "one-more");
    let start = store.take();
    // The quota count reads the owner's live entries (one here).
    assert!(start.session_keys() < 20, "a start read {start:?}");

    let page = s
        .scope(&a)
        .list(&SessionFilter::default(), &PageRequest::first(10))
        .unwrap();
    assert_eq!(page.items.len(), 10);
    assert_eq!(page.items[0].header.name.as_deref(), Some("one-more"));
    let listing = store.take();
    assert!(
        listing.paged("sessions_by_owner") <= crate::storage::PAGE
            && listing.gets("sessions") <= 10,
        "a page of 10 read {listing:?}"
    );

    // An ended session's name: its own entries, newest first.
    assert_eq!(
        s.scope(&a).show("n7").unwrap().header.name.as_deref(),
        Some("n7")
    );
    let lookup = store.take();
    assert!(lookup.session_keys() < 10, "a name lookup read {lookup:?}");
    // An operator's bare name, held by one owner.
    let op = Principal::operator("cli:0");
    assert_eq!(s.scope(&op).show("n8").unwrap().owner_name(), "a");
    let lookup = store.take();
    assert!(lookup.session_keys() < 20, "a name lookup read {lookup:?}");

    for reads in [start, listing] {
        for bucket in SESSION_BUCKETS {
            assert_eq!(reads.scans(bucket), 0, "a whole-bucket scan of `{bucket}`");
        }
    }
}

/// Why: a listing by last activity cannot page (a session busy between two
/// pages moves to the top); by start time each session keeps its place.
#[test]
fn threat_49_a_listing_pages_newest_first_without_skipping_or_repeating() {
    let (_dir, _store, s, _) = counted();
    let a = workagent("a");
    let ids: Vec<String> = (0..25)
        .map(|i| started(&s, &a, &format!("s{i}")).header.id)
        .collect();
    let mut seen = Vec::new();
    let mut page = PageRequest::first(4);
    loop {
        let got = s.scope(&a).list(&SessionFilter::default(), &page).unwrap();
        assert!(got.items.len() <= 4);
        seen.extend(got.items.into_iter().map(|i| i.header.id));
        // Activity and new sessions between pages change nothing ahead.
        s.append(
            &ids[0],
            EventKind::Note {
                text: "busy".into(),
            },
        )
        .unwrap();
        started(&s, &a, &format!("late{}", seen.len()));
        match got.next_cursor {
            Some(cursor) => page.cursor = Some(cursor),
            None => break,
        }
    }
    let newest_first: Vec<String> = ids.iter().rev().cloned().collect();
    assert_eq!(seen, newest_first);

    // The operators' listing holds every owner's, the same way.
    let op = Principal::operator("cli:0");
    let all = s
        .scope(&op)
        .list(&SessionFilter::default(), &PageRequest::first(500))
        .unwrap();
    assert_eq!(all.items.len(), 25 + 7);
    assert!(all.next_cursor.is_none());

    // A cursor of another listing is refused, naming it.
    let theirs = s
        .list(&SessionFilter::default(), &PageRequest::first(1))
        .unwrap()
        .next_cursor
        .unwrap();
    let bad = PageRequest {
        limit: Some(1),
        cursor: Some(theirs.clone()),
    };
    let e = s
        .scope(&a)
        .list(&SessionFilter::default(), &bad)
        .unwrap_err();
    assert!(
        e.to_string().contains(&format!(
            "the cursor `{theirs}` is not one of this listing's"
        )),
        "{e}"
    );
}

/// Why: with a filter that passes over most sessions, a request must still
/// stop: a page may come back short, with the cursor to go on from.
#[test]
fn threat_49_a_filtered_listing_looks_at_a_bounded_number_of_sessions() {
    let (_dir, store, s, _) = counted();
    let a = workagent("a");
    let wanted = started(&s, &a, "wanted").header.id;
    s.tag(&wanted, &["rare".into()], &[]).unwrap();
    for i in 0..(crate::session::LOOK_AT_MOST + 10) {
        let id = started(&s, &a, &format!("x{i}")).header.id;
        s.end(&id, EndOutcome::Exit).unwrap();
    }
    store.take();
    let filter = SessionFilter {
        tags: vec!["rare".into()],
        ..Default::default()
    };
    let first = s.list(&filter, &PageRequest::first(5)).unwrap();
    assert!(first.items.is_empty(), "the tagged one is the oldest");
    let reads = store.take();
    assert_eq!(
        reads.paged("sessions_by_start"),
        crate::session::LOOK_AT_MOST
    );
    let second = s
        .list(
            &filter,
            &PageRequest {
                limit: Some(5),
                cursor: first.next_cursor,
            },
        )
        .unwrap();
    assert_eq!(second.items.len(), 1);
    assert_eq!(second.items[0].header.id, wanted);
    assert!(second.next_cursor.is_none());
}
