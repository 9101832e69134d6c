//! The approvals' index on the real storage (sled in a tempdir): listings
//! read it a page at a time, stale keys are repaired, the sweep removes
//! from the old end, a store written before the index reads as before.

use std::sync::Arc;

use super::*;
use crate::page::PageRequest;
use crate::storage::{Durability, SledStore};

fn store() -> (tempfile::TempDir, Arc<dyn Storage>) {
    let dir = tempfile::tempdir().unwrap();
    let storage: Arc<dyn Storage> =
        Arc::new(SledStore::open(dir.path(), Durability::Flush).unwrap());
    (dir, storage)
}

fn approval(n: u64, session: &str) -> Approval {
    Approval {
        id: format!("ap-{n:012}"),
        session: session.to_string(),
        session_name: None,
        call_id: format!("c{n}"),
        tool: "files.write".into(),
        tool_digest: "d".into(),
        input_hash: "h".into(),
        input: "{}".into(),
        action: "write".into(),
        hook: "destructive".into(),
        pattern: "*".into(),
        reason: "asks".into(),
        requested_at_ms: 1000 + n,
        status: ApprovalStatus::Pending,
        principal: None,
        job: None,
    }
}

fn denied(mut a: Approval, at_ms: u64) -> Approval {
    a.status = ApprovalStatus::Denied {
        at_ms,
        reason: "no".into(),
        by: Some("op".into()),
    };
    a
}

fn ids(page: &Page<Approval>) -> Vec<&str> {
    page.items.iter().map(|a| a.id.as_str()).collect()
}

/// Every page of a listing, following the cursors.
fn walk_all(approvals: &Approvals, all: bool, limit: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut req = PageRequest::first(limit);
    loop {
        let page = approvals.page(all, &req).unwrap();
        assert!(page.items.len() <= limit);
        out.extend(page.items.iter().map(|a| a.id.clone()));
        match page.next_cursor {
            Some(c) => req.cursor = Some(c),
            None => return out,
        }
    }
}

#[test]
fn pending_come_first_oldest_first_then_the_settled_newest_first() {
    let (_dir, storage) = store();
    let approvals = Approvals::new(storage.clone());
    for n in [3, 1, 2] {
        approvals.put(&approval(n, "s-a")).unwrap();
    }
    for (n, at) in [(4, 50), (5, 70), (6, 60)] {
        approvals.put(&approval(n, "s-b")).unwrap();
        approvals.settle(&denied(approval(n, "s-b"), at)).unwrap();
    }
    let first = approvals.page(false, &PageRequest::default()).unwrap();
    assert_eq!(
        ids(&first),
        ["ap-000000000001", "ap-000000000002", "ap-000000000003"]
    );
    assert_eq!(first.next_cursor, None);
    let every = walk_all(&approvals, true, 2);
    assert_eq!(
        every,
        [
            "ap-000000000001",
            "ap-000000000002",
            "ap-000000000003",
            "ap-000000000005",
            "ap-000000000006",
            "ap-000000000004"
        ]
    );
    assert_eq!(walk_all(&approvals, true, 500), every);
    // A cursor of the listing with settled ones is not the pending listing's.
    let cursor = approvals
        .page(true, &PageRequest::first(4))
        .unwrap()
        .next_cursor
        .unwrap();
    let wrong = approvals.page(
        false,
        &PageRequest {
            limit: None,
            cursor: Some(cursor),
        },
    );
    assert!(matches!(wrong, Err(SessionError::InvalidInput(m)) if m.contains("cursor")));
    assert_eq!(approvals.count_pending(100).unwrap(), 3);
    assert_eq!(approvals.count_pending(2).unwrap(), 2);
    assert_eq!(
        approvals.oldest_pending_of("s-a").unwrap().unwrap().id,
        "ap-000000000001"
    );
    assert!(approvals.oldest_pending_of("s-b").unwrap().is_none());
}

#[test]
fn a_stale_key_is_skipped_and_repaired() {
    let (_dir, storage) = store();
    let approvals = Approvals::new(storage.clone());
    let a = approval(1, "s-a");
    approvals.put(&a).unwrap();
    approvals.put(&approval(2, "s-a")).unwrap();
    // Settled behind the index's back (a host died between the writes).
    storage
        .put(
            records::BUCKET,
            &a.id,
            &serde_json::to_vec(&denied(a.clone(), 9)).unwrap(),
        )
        .unwrap();
    // A key whose record never came.
    records::put(&*storage, &approval(3, "s-a")).unwrap();
    storage.delete(records::BUCKET, "ap-000000000003").unwrap();
    let page = approvals.page(false, &PageRequest::default()).unwrap();
    assert_eq!(ids(&page), ["ap-000000000002"]);
    // Repaired: the settled one is listed as settled; the keys of the
    // missing one are passed over and left (its record may be on its way).
    let settled = approvals.settled(&PageRequest::default()).unwrap();
    assert_eq!(ids(&settled), [a.id.as_str()]);
    // The session's keys are repaired by a walk of the session.
    let of_session = pending_of_session(&*storage, "s-a").unwrap();
    assert_eq!(of_session.len(), 1);
    let index = |storage: &Arc<dyn Storage>| -> Vec<String> {
        storage
            .scan_page(records::INDEX, "", None, 100)
            .unwrap()
            .into_iter()
            .map(|(k, _)| k)
            .collect()
    };
    let left = index(&storage);
    assert_eq!(left.len(), 5, "{left:?}");
    // The sweep removes the pending key the record never came for once it
    // is older than the sweep's bound (with the approval settled before it),
    // and keeps the pending one's.
    approvals.collect(1003).unwrap();
    assert!(
        index(&storage)
            .iter()
            .any(|k| k.starts_with("p/") && k.ends_with("ap-000000000003"))
    );
    approvals.collect(1004).unwrap();
    let left = index(&storage);
    assert!(
        !left
            .iter()
            .any(|k| k.starts_with("p/") && k.ends_with("ap-000000000003")),
        "{left:?}"
    );
    assert_eq!(left.len(), 3, "{left:?}");
    assert_eq!(
        ids(&approvals.page(false, &PageRequest::default()).unwrap()),
        ["ap-000000000002"]
    );
}

// What broke: an operator's `approvals`, run while an agent's call was being
// recorded, read the approval's index key before its record was written and
// removed the key as stale; the approval was then in no listing, and the
// call waited for an approval nobody could see.
#[test]
fn a_listing_between_an_approvals_keys_and_its_record_does_not_hide_it() {
    let (_dir, storage) = store();
    let approvals = Approvals::new(storage.clone());
    let a = approval(1, "s-a");
    records::put_keys(&*storage, &a).unwrap();
    // The reader comes between the two writes.
    assert!(
        approvals
            .page(false, &PageRequest::default())
            .unwrap()
            .items
            .is_empty()
    );
    assert!(pending_of_session(&*storage, "s-a").unwrap().is_empty());
    assert_eq!(approvals.count_pending(10).unwrap(), 0);
    storage
        .put(records::BUCKET, &a.id, &serde_json::to_vec(&a).unwrap())
        .unwrap();
    assert_eq!(
        ids(&approvals.page(false, &PageRequest::default()).unwrap()),
        [a.id.as_str()]
    );
    assert_eq!(pending_of_session(&*storage, "s-a").unwrap().len(), 1);
}

#[test]
fn collect_removes_only_what_was_settled_before_the_bound() {
    let (_dir, storage) = store();
    let approvals = Approvals::new(storage.clone());
    for (n, at) in [(1, 10), (2, 20), (3, 30)] {
        approvals.put(&approval(n, "s")).unwrap();
        approvals.settle(&denied(approval(n, "s"), at)).unwrap();
    }
    approvals.put(&approval(4, "s")).unwrap();
    assert_eq!(approvals.collect(25).unwrap(), 2);
    assert_eq!(
        walk_all(&approvals, true, 10),
        ["ap-000000000004", "ap-000000000003"]
    );
    assert!(approvals.get("ap-000000000001").is_err());
    assert_eq!(approvals.collect(25).unwrap(), 0);
}

#[test]
fn a_store_written_before_the_index_is_indexed_once() {
    let (_dir, storage) = store();
    // Records as an older host wrote them: no index, no principal field.
    for n in 1..=3u64 {
        let mut value = serde_json::to_value(approval(n, "s")).unwrap();
        value.as_object_mut().unwrap().remove("principal");
        if n == 2 {
            value["status"] = serde_json::json!({"state": "approved", "at_ms": 5});
        }
        storage
            .put(
                records::BUCKET,
                &format!("ap-{n:012}"),
                value.to_string().as_bytes(),
            )
            .unwrap();
    }
    let approvals = Approvals::new(storage.clone());
    assert!(
        approvals
            .page(true, &PageRequest::default())
            .unwrap()
            .items
            .is_empty()
    );
    assert!(approvals.index_old_records().unwrap());
    assert_eq!(
        walk_all(&approvals, true, 10),
        ["ap-000000000001", "ap-000000000003", "ap-000000000002"]
    );
    assert!(!approvals.index_old_records().unwrap(), "once");
}

#[test]
fn places_count_the_pending_approvals_of_a_principal() {
    let (_dir, storage) = store();
    let approvals = Approvals::new(storage.clone());
    let mut a = approval(1, "s");
    a.principal = Some("agent".into());
    assert_eq!(
        approvals.take_place("agent", &a.id, 1, 1000).unwrap(),
        Ok(())
    );
    approvals.put(&a).unwrap();
    assert_eq!(
        approvals.take_place("agent", "ap-next", 1, 1000).unwrap(),
        Err(1)
    );
    // Settling it gives its place back.
    approvals.settle(&denied(a, 2000)).unwrap();
    assert_eq!(
        approvals.take_place("agent", "ap-next", 1, 3000).unwrap(),
        Ok(())
    );
}
