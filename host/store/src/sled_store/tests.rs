//! Tests of sled's own layout: damage made behind the store's back, and the
//! files `Strict` syncs. What every backend must do is tested in
//! `crate::conformance`.

use super::records::{entry_key, stream_prefix};
use super::*;
use crate::Storage;
use crate::test_support::{append_s_and_t, damage_of, entries};

fn open(dir: &Path) -> SledStore {
    SledStore::open(dir, Durability::Flush).expect("open store")
}

/// Writes `value` under the key of `stream`'s record starting at `seq`,
/// behind the store's back: only damage does this.
fn damage(store: &SledStore, stream: &str, seq: u64, value: &[u8]) {
    store
        .streams
        .insert(entry_key(&stream_prefix(stream).unwrap(), seq), value)
        .unwrap();
}

fn remove_record(store: &SledStore, stream: &str, seq: u64) {
    store
        .streams
        .remove(entry_key(&stream_prefix(stream).unwrap(), seq))
        .unwrap()
        .expect("a record starts there");
}

#[test]
fn a_gap_in_a_stream_is_damage_at_its_first_missing_sequence() {
    let tmp = tempfile::tempdir().unwrap();
    let store = open(tmp.path());
    append_s_and_t(&store);
    remove_record(&store, "s", 3);

    let (stream, seq, reason) = damage_of(store.read("s", 1, 10));
    assert_eq!(
        (stream.as_str(), seq, reason.as_str()),
        ("s", 3, "it is missing")
    );
    assert_eq!(damage_of(store.read("s", 4, 10)).1, 3);
    // A read that stops before the gap, or starts after it, succeeds.
    assert_eq!(store.read("s", 1, 2).unwrap().len(), 2);
    assert_eq!(store.read("s", 5, 10).unwrap(), vec![(5, b"e".to_vec())]);
    assert_eq!(store.last_seq("s").unwrap(), 5);
    // Other streams are unaffected.
    assert_eq!(store.read("t", 1, 10).unwrap(), vec![(1, b"x".to_vec())]);

    // With the first record gone, the stream is damaged from sequence 1.
    remove_record(&store, "s", 1);
    assert_eq!(damage_of(store.read("s", 1, 10)).1, 1);
    assert_eq!(damage_of(store.read("s", 2, 10)).1, 1);

    let err = damage_of(store.read("s", 4, 10));
    let display = StorageError::Damaged {
        stream: err.0,
        seq: err.1,
        reason: err.2,
    }
    .to_string();
    assert_eq!(
        display,
        "stream `s` cannot be read at sequence 1: it is missing"
    );
}

#[test]
fn a_record_that_does_not_decode_is_damage_at_its_first_sequence() {
    let tmp = tempfile::tempdir().unwrap();
    let store = open(tmp.path());
    append_s_and_t(&store);
    // The header still reads (2 entries), an entry does not.
    let mut cut = crate::batch::encode(&entries(&["c", "d"])).unwrap();
    cut.pop();
    damage(&store, "s", 3, &cut);

    let (stream, seq, reason) = damage_of(store.read("s", 1, 10));
    assert_eq!((stream.as_str(), seq), ("s", 3));
    assert!(reason.contains("malformed"), "{reason}");
    assert_eq!(damage_of(store.read("s", 4, 1)).1, 3);
    assert_eq!(store.read("s", 1, 2).unwrap().len(), 2);
    assert_eq!(store.read("s", 5, 10).unwrap(), vec![(5, b"e".to_vec())]);

    // A last record whose header does not read leaves the head unknown.
    damage(&store, "s", 5, b"{");
    let (_, seq, reason) = damage_of(store.last_seq("s"));
    assert_eq!(seq, 5);
    assert!(reason.contains("malformed"), "{reason}");
    assert_eq!(damage_of(store.append("s", 5, &entries(&["f"]))).1, 5);

    // An overlapping record: sequence 2 is held by two records.
    let tmp = tempfile::tempdir().unwrap();
    let store = open(tmp.path());
    store.append("s", 0, &entries(&["a", "b", "c"])).unwrap();
    damage(
        &store,
        "s",
        2,
        &crate::batch::encode(&entries(&["x"])).unwrap(),
    );
    assert_eq!(damage_of(store.read("s", 1, 10)).1, 2);
    assert_eq!(store.read("s", 1, 1).unwrap(), vec![(1, b"a".to_vec())]);
}

#[test]
fn a_malformed_record_key_is_damage_after_the_last_record_that_reads() {
    let tmp = tempfile::tempdir().unwrap();
    let store = open(tmp.path());
    store.append("s", 0, &entries(&["a", "b"])).unwrap();
    let mut key = entry_key(&stream_prefix("s").unwrap(), 2);
    key.push(7);
    store
        .streams
        .insert(key, crate::batch::encode(&entries(&["c"])).unwrap())
        .unwrap();
    assert_eq!(damage_of(store.read("s", 1, 10)).1, 3);
    assert_eq!(damage_of(store.last_seq("s")).1, 3);
    assert_eq!(store.read("s", 1, 2).unwrap().len(), 2);
}

#[test]
fn strict_durability_works_and_syncs_blobs() {
    let tmp = tempfile::tempdir().unwrap();
    // Large enough for sled to put it in its own blob file.
    let big = vec![7u8; 300 * 1024];
    {
        let store = SledStore::open(tmp.path(), Durability::Strict).unwrap();
        assert_eq!(store.durability(), Durability::Strict);
        store.append("s", 0, &entries(&["a", "b"])).unwrap();
        store.put("checkpoints", "s", &big).unwrap();
        assert!(store.flush_count() >= 2);
        let blobs = std::fs::read_dir(tmp.path().join("sled/blobs"))
            .unwrap()
            .count();
        assert!(blobs >= 1, "expected the large value in a blob file");
    }
    let store = SledStore::open(tmp.path(), Durability::Strict).unwrap();
    assert_eq!(store.last_seq("s").unwrap(), 2);
    assert_eq!(store.get("checkpoints", "s").unwrap(), Some(big));
}

#[test]
fn an_unsynced_append_waits_for_no_flush_and_sync_runs_one() {
    let tmp = tempfile::tempdir().unwrap();
    let store = open(tmp.path());
    let before = store.flush_count();
    store.append_unsynced("s", 0, &entries(&["a"])).unwrap();
    store.append_unsynced("s", 1, &entries(&["b"])).unwrap();
    assert_eq!(store.flush_count(), before, "an unsynced append flushed");
    store.sync().unwrap();
    assert_eq!(store.flush_count(), before + 1);
    store.append("s", 2, &entries(&["c"])).unwrap();
    assert_eq!(store.flush_count(), before + 2);
}

/// The flush observer hears every durable append once, in the batch of the
/// flush that covered it: the batch sizes add up to the appends.
#[test]
fn the_flush_observer_hears_each_writer_once() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let tmp = tempfile::tempdir().unwrap();
    let store = std::sync::Arc::new(open(tmp.path()));
    let (writers, batches) = (
        std::sync::Arc::new(AtomicUsize::new(0)),
        std::sync::Arc::new(AtomicUsize::new(0)),
    );
    let (w, b) = (writers.clone(), batches.clone());
    store.observe_flushes(std::sync::Arc::new(move |batch| {
        assert!(batch > 0, "a flush with no writer reported");
        w.fetch_add(batch, Ordering::SeqCst);
        b.fetch_add(1, Ordering::SeqCst);
    }));
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let store = store.clone();
            std::thread::spawn(move || {
                for i in 0..25u64 {
                    store.append(&format!("w{t}"), i, &entries(&["x"])).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(writers.load(Ordering::SeqCst), 200);
    let flushes = batches.load(Ordering::SeqCst);
    assert!((1..=200).contains(&flushes), "{flushes} flushes");
}
