//! The rescues' and the context index's indexes: listings, the report, a
//! session start and a look-up by id read pages of an index and the records
//! they show, never a whole bucket; pages go newest first without skipping
//! or repeating; a data dir written before the indexes is indexed once.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::*;
use crate::budget::BudgetCaps;
use crate::context_index::{BUCKET as CONTEXT, index_entries, keys};
use crate::page::{Page, PageRequest};
use crate::session::tests::counting::Counting;
use crate::session::{Role, StartSession};
use crate::storage::{Durability, PAGE, SledStore};

const HOUR: u64 = 3_600_000;
const T0: u64 = 1_700_000_000_000;

struct Rig {
    _dir: tempfile::TempDir,
    store: Arc<Counting>,
    sessions: Arc<Sessions>,
    clock: Arc<AtomicU64>,
}

fn rig() -> Rig {
    let dir = tempfile::tempdir().unwrap();
    let sled = Arc::new(SledStore::open(dir.path(), Durability::Flush).unwrap());
    let store = Counting::over(sled);
    let clock = Arc::new(AtomicU64::new(T0));
    let c = clock.clone();
    let sessions =
        Arc::new(Sessions::new(store.clone()).with_clock(move || c.load(Ordering::SeqCst)));
    Rig {
        _dir: dir,
        store,
        sessions,
        clock,
    }
}

impl Rig {
    fn rescues(&self) -> Rescues {
        Rescues::new(
            self.sessions.clone(),
            self.store.clone(),
            ContextConfig::default(),
        )
    }

    fn start(&self, name: &str) -> String {
        self.sessions
            .start(StartSession {
                role: Role::Workagent,
                project: "alpha".into(),
                name: Some(name.into()),
                tags: vec![],
                expected_duration: None,
                budget: BudgetCaps::default(),
                completion: Default::default(),
            })
            .unwrap()
            .header
            .id
    }

    fn advance(&self, ms: u64) {
        self.clock.fetch_add(ms, Ordering::SeqCst);
    }
}

/// Every item of a listing, walked page by page.
fn walk<T>(mut page: impl FnMut(&PageRequest) -> Page<T>, size: usize) -> Vec<T> {
    let mut all = Vec::new();
    let mut request = PageRequest::first(size);
    loop {
        let p = page(&request);
        all.extend(p.items);
        match p.next_cursor {
            Some(c) => request.cursor = Some(c),
            None => return all,
        }
    }
}

/// Why: every rescue listing, the report, the dashboard's rescues page and
/// its once-a-second live check decoded every rescue ever opened, and an
/// agent that keeps getting stuck opens them without end.
#[test]
fn threat_49_rescue_listings_and_the_report_read_pages_of_the_index_not_every_rescue() {
    let r = rig();
    let rescues = r.rescues();
    let session = r.start("stuck");
    const MANY: usize = 300;
    // One an hour; all but the last two resolved (on sessions of their own).
    for i in 0..MANY {
        if i < MANY - 2 {
            let rescue = rescues.open(&session, None).unwrap();
            rescues.resolve(&rescue.id, Outcome::Resolved, &[]).unwrap();
        } else {
            rescues.open(&r.start(&format!("open{i}")), None).unwrap();
        }
        r.advance(HOUR);
    }
    r.store.take();

    let page = rescues.list(&PageRequest::first(10)).unwrap();
    assert_eq!(page.items.len(), 10);
    assert!(
        page.items
            .windows(2)
            .all(|w| w[0].opened_at_ms > w[1].opened_at_ms)
    );
    let read = r.store.take();
    assert_eq!(read.scans(BUCKET), 0, "{read:?}");
    assert!(
        read.gets(BUCKET) <= 10 && read.paged(index::BY_OPEN) <= 16,
        "a page of 10 read {read:?}"
    );

    let open = rescues.open_rescues(&PageRequest::default()).unwrap();
    assert_eq!(open.items.len(), 2);
    assert!(open.next_cursor.is_none());
    let read = r.store.take();
    assert!(
        read.gets(BUCKET) <= 2 && read.paged(index::OPEN) == 2,
        "{read:?}"
    );

    // The last day: 24 rescues, and the walk stops at the first older key.
    let report = rescues.report(1).unwrap();
    assert_eq!((report.rescues, report.open), (24, 2));
    let read = r.store.take();
    assert_eq!(read.scans(BUCKET), 0, "{read:?}");
    assert!(read.gets(BUCKET) <= 24, "a day's report read {read:?}");
    let all = rescues.report(30).unwrap();
    assert_eq!((all.rescues, all.resolved), (MANY, MANY - 2));

    // Pages newest first, every rescue once.
    let listed = walk(|p| rescues.list(p).unwrap(), 7);
    assert_eq!(listed.len(), MANY);
    let ids: HashSet<&str> = listed.iter().map(|x| x.id.as_str()).collect();
    assert_eq!(ids.len(), MANY);
    assert!(
        listed
            .windows(2)
            .all(|w| w[0].opened_at_ms > w[1].opened_at_ms)
    );
    assert_eq!(r.store.take().scans(BUCKET), 0);

    // A cursor not handed out is refused, never a restart from the top.
    let bad = rescues
        .list(&PageRequest {
            limit: None,
            cursor: Some("r-whatever".into()),
        })
        .unwrap_err();
    assert!(
        matches!(&bad, RescueError::InvalidInput(m) if m.contains("cursor")),
        "{bad}"
    );
}

/// Why: every session start decoded the project's whole context index (and
/// every `context retire ID` every project's) to keep the newest few.
#[test]
fn threat_49_a_start_a_search_and_a_look_up_read_pages_of_the_context_index() {
    let r = rig();
    let rescues = r.rescues();
    let index = rescues.index();
    const MANY: u64 = 600;
    let mut ids = Vec::new();
    for i in 0..MANY {
        let project = if i % 2 == 0 { "alpha" } else { "beta" };
        let text = format!("fact {i} {}", if i % 3 == 0 { "needle" } else { "hay" });
        ids.push(
            index
                .add(project, &text, ContextWriter::Operator, None, T0 + i)
                .unwrap()
                .id,
        );
    }
    // The newest alpha entry is retired.
    let newest_alpha = &ids[MANY as usize - 2];
    index
        .retire(newest_alpha, ContextWriter::Operator, T0 + MANY)
        .unwrap();
    r.store.take();

    let at_start = index_entries(&*r.store, "alpha");
    let read = r.store.take();
    assert_eq!(at_start.len(), 256.min(MANY as usize / 2 - 1));
    assert!(
        at_start.windows(2).all(|w| w[0].at_ms < w[1].at_ms),
        "oldest first"
    );
    assert_eq!(
        at_start.last().unwrap().text,
        format!("fact {} hay", MANY - 4)
    );
    assert_eq!(read.scans(CONTEXT), 0, "{read:?}");
    assert!(
        read.gets(CONTEXT) <= 260 && read.paged(keys::KEYS) <= 2 * PAGE,
        "a start read {read:?}"
    );

    let found = index.get(&ids[3]).unwrap();
    assert_eq!(found.text, "fact 3 needle");
    let read = r.store.take();
    assert!(
        read.gets(CONTEXT) == 1 && read.paged(keys::KEYS) == 0 && read.scans(keys::KEYS) == 0,
        "a look-up read {read:?}"
    );

    let page = index
        .search("NEEDLE", Some("beta"), &PageRequest::first(5))
        .unwrap();
    assert_eq!(page.items.len(), 5);
    assert!(
        page.items
            .iter()
            .all(|e| e.project == "beta" && e.text.contains("needle"))
    );
    assert!(page.next_cursor.is_some());
    let read = r.store.take();
    assert!(read.gets(CONTEXT) <= 40, "a search page read {read:?}");

    // Listings walk every entry once, newest first; retired ones with `all`.
    let active = walk(|p| index.list(None, false, p).unwrap(), 64);
    assert_eq!(active.len(), MANY as usize - 1);
    assert!(
        active
            .windows(2)
            .all(|w| w[0].added_at_ms > w[1].added_at_ms)
    );
    let all = walk(|p| index.list(Some("alpha"), true, p).unwrap(), 50);
    assert_eq!(all.len(), MANY as usize / 2);
    assert_eq!(all[0].id, *newest_alpha);
    let needles = walk(|p| index.search("needle", None, p).unwrap(), 20);
    assert_eq!(needles.len(), MANY as usize / 3);
    assert_eq!(r.store.take().scans(CONTEXT), 0);
}

/// Why: a data dir written before the indexes must keep every rescue and
/// context entry listable, reportable and found by id (indexed once, at
/// first use, a page at a time).
#[test]
fn threat_49_rescues_and_context_entries_of_an_old_data_dir_are_indexed_once() {
    let r = rig();
    // The old shape: records only, no index (the context's written before
    // anything of this binary read the index, as in a real old data dir).
    for i in 0..3u64 {
        let entry = IndexEntry {
            id: format!("c-old{i}"),
            project: "alpha".into(),
            text: format!("old fact {i}"),
            writer: ContextWriter::Operator,
            rescue: None,
            added_at_ms: T0 + i,
            retired_at_ms: (i == 0).then_some(T0 + 10),
        };
        r.store
            .put(
                CONTEXT,
                &format!("alpha/{}", entry.id),
                &serde_json::to_vec(&entry).unwrap(),
            )
            .unwrap();
    }
    let session = r.start("old");
    let old = |i: u64, outcome: Option<Outcome>| Rescue {
        id: format!("r-old{i}"),
        session: session.clone(),
        session_name: Some("old".into()),
        project: "alpha".into(),
        call_id: None,
        assignee: None,
        detected_at_ms: T0 + i * HOUR,
        opened_at_ms: T0 + i * HOUR,
        flags: vec![],
        diagnosis: None,
        injections: vec![],
        outcome,
        context_updates: vec![],
        resolved_at_ms: outcome.map(|_| T0 + i * HOUR + 1),
    };
    for i in 0..5 {
        let rescue = old(i, (i != 4).then_some(Outcome::Resolved));
        r.store
            .put(
                BUCKET,
                &rescue.id,
                &serde_json::to_vec_pretty(&rescue).unwrap(),
            )
            .unwrap();
    }
    r.advance(10 * HOUR);

    let rescues = r.rescues();
    let listed = rescues.list(&PageRequest::default()).unwrap();
    let ids: Vec<&str> = listed.items.iter().map(|x| x.id.as_str()).collect();
    assert_eq!(ids, ["r-old4", "r-old3", "r-old2", "r-old1", "r-old0"]);
    let open = rescues.open_rescues(&PageRequest::default()).unwrap();
    assert_eq!(open.items.len(), 1);
    assert_eq!(open.items[0].id, "r-old4");
    assert_eq!(rescues.report(1).unwrap().rescues, 5);
    // The open rescue of the old shape is resolved like any other.
    rescues.resolve("r-old4", Outcome::Abandoned, &[]).unwrap();
    assert!(
        rescues
            .open_rescues(&PageRequest::default())
            .unwrap()
            .items
            .is_empty()
    );

    let index = rescues.index();
    assert_eq!(index.get("c-old0").unwrap().text, "old fact 0");
    let active = index
        .list(Some("alpha"), false, &PageRequest::default())
        .unwrap();
    let texts: Vec<&str> = active.items.iter().map(|e| e.text.as_str()).collect();
    assert_eq!(texts, ["old fact 2", "old fact 1"]);
    let at_start = index_entries(&*r.store, "alpha");
    assert_eq!(at_start.len(), 2);
    index
        .retire("c-old1", ContextWriter::Operator, T0 + 20)
        .unwrap();
    assert_eq!(index_entries(&*r.store, "alpha").len(), 1);

    // Once: another service over the same store reads no record to index.
    r.store.take();
    let again = r.rescues();
    again.list(&PageRequest::default()).unwrap();
    again
        .index()
        .list(None, true, &PageRequest::default())
        .unwrap();
    let read = r.store.take();
    assert_eq!(read.paged(BUCKET) + read.paged(CONTEXT), 0, "{read:?}");
    assert_eq!(read.scans(BUCKET) + read.scans(CONTEXT), 0, "{read:?}");
}
