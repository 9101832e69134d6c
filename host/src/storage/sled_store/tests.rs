use std::sync::{Arc, Barrier};

use super::*;

fn open(dir: &Path) -> SledStore {
    SledStore::open(dir, Durability::Flush).expect("open store")
}

fn entries(texts: &[&str]) -> Vec<Vec<u8>> {
    texts.iter().map(|t| t.as_bytes().to_vec()).collect()
}

#[test]
fn append_and_read_are_ordered_and_gapless() {
    let tmp = tempfile::tempdir().unwrap();
    let store = open(tmp.path());
    assert_eq!(store.last_seq("s").unwrap(), 0);
    assert_eq!(store.append("s", 0, &entries(&["a", "b", "c"])).unwrap(), 3);
    assert_eq!(store.append("s", 3, &entries(&["d", "e"])).unwrap(), 5);
    assert_eq!(store.last_seq("s").unwrap(), 5);

    let all = store.read("s", 0, 100).unwrap();
    let seqs: Vec<u64> = all.iter().map(|(s, _)| *s).collect();
    assert_eq!(seqs, vec![1, 2, 3, 4, 5]);
    assert_eq!(all[3].1, b"d");
    let middle = store.read("s", 3, 2).unwrap();
    assert_eq!(middle, vec![(3, b"c".to_vec()), (4, b"d".to_vec())]);
    assert!(store.read("s", 6, 10).unwrap().is_empty());
    assert!(store.read("absent", 1, 10).unwrap().is_empty());
    // An empty append confirms the head and writes nothing.
    assert_eq!(store.append("s", 5, &[]).unwrap(), 5);
}

#[test]
fn streams_with_shared_prefixes_stay_apart() {
    let tmp = tempfile::tempdir().unwrap();
    let store = open(tmp.path());
    // More than 255 entries, so a sequence's low byte wraps inside one stream.
    let many: Vec<Vec<u8>> = (0..300u32).map(|i| i.to_be_bytes().to_vec()).collect();
    store.append("a", 0, &many).unwrap();
    store.append("ab", 0, &entries(&["x"])).unwrap();
    store.append("a\u{1}", 0, &entries(&["y"])).unwrap();
    store.append("session/é ☃", 0, &entries(&["z"])).unwrap();

    let a = store.read("a", 1, 1000).unwrap();
    assert_eq!(a.len(), 300);
    assert!(
        a.iter()
            .zip(1u64..)
            .all(|((seq, v), want)| *seq == want && v == &((want - 1) as u32).to_be_bytes())
    );
    assert_eq!(store.read("ab", 1, 10).unwrap(), vec![(1, b"x".to_vec())]);
    assert_eq!(
        store.read("a\u{1}", 1, 10).unwrap(),
        vec![(1, b"y".to_vec())]
    );
    let mut names = store.streams().unwrap();
    names.sort();
    assert_eq!(names, vec!["a", "a\u{1}", "ab", "session/é ☃"]);
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

/// The stream and position of a `Damaged` error, and its reason.
fn damage_of(result: Result<impl std::fmt::Debug, StorageError>) -> (String, u64, String) {
    match result {
        Err(StorageError::Damaged {
            stream,
            seq,
            reason,
        }) => (stream, seq, reason),
        other => panic!("expected Damaged, got {other:?}"),
    }
}

#[test]
fn a_gap_in_a_stream_is_damage_at_its_first_missing_sequence() {
    let tmp = tempfile::tempdir().unwrap();
    let store = open(tmp.path());
    store.append("s", 0, &entries(&["a", "b"])).unwrap();
    store.append("s", 2, &entries(&["c", "d"])).unwrap();
    store.append("s", 4, &entries(&["e"])).unwrap();
    store.append("t", 0, &entries(&["x"])).unwrap();
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
    store.append("s", 0, &entries(&["a", "b"])).unwrap();
    store.append("s", 2, &entries(&["c", "d"])).unwrap();
    store.append("s", 4, &entries(&["e"])).unwrap();
    // The header still reads (2 entries), an entry does not.
    let mut cut = chunk::encode(&entries(&["c", "d"])).unwrap();
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
    damage(&store, "s", 2, &chunk::encode(&entries(&["x"])).unwrap());
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
        .insert(key, chunk::encode(&entries(&["c"])).unwrap())
        .unwrap();
    assert_eq!(damage_of(store.read("s", 1, 10)).1, 3);
    assert_eq!(damage_of(store.last_seq("s")).1, 3);
    assert_eq!(store.read("s", 1, 2).unwrap().len(), 2);
}

#[test]
fn stream_names_with_nul_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let store = open(tmp.path());
    let err = store.append("a\0b", 0, &entries(&["x"])).unwrap_err();
    assert!(
        matches!(&err, StorageError::Io(m) if m.contains("NUL")),
        "{err}"
    );
    assert!(store.read("a\0b", 1, 1).is_err());
    assert!(store.last_seq("a\0b").is_err());
}

#[test]
fn append_with_a_wrong_expected_last_conflicts() {
    let tmp = tempfile::tempdir().unwrap();
    let store = open(tmp.path());
    store.append("s", 0, &entries(&["a"])).unwrap();
    for expected in [0, 2, 7] {
        match store.append("s", expected, &entries(&["b"])) {
            Err(StorageError::Conflict {
                stream,
                expected: e,
                actual,
            }) => {
                assert_eq!((stream.as_str(), e, actual), ("s", expected, 1));
            }
            other => panic!("expected a conflict, got {other:?}"),
        }
    }
    assert!(matches!(
        store.append("s", 0, &[]),
        Err(StorageError::Conflict { actual: 1, .. })
    ));
    assert_eq!(store.read("s", 1, 10).unwrap(), vec![(1, b"a".to_vec())]);
}

#[test]
fn racing_appends_on_one_expected_last_let_exactly_one_win() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Arc::new(open(tmp.path()));
    const RACERS: usize = 4;
    for round in 0..25 {
        let stream = format!("race-{round}");
        let barrier = Arc::new(Barrier::new(RACERS));
        let handles: Vec<_> = (0..RACERS)
            .map(|i| {
                let (store, barrier, stream) = (store.clone(), barrier.clone(), stream.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    store.append(
                        &stream,
                        0,
                        &[format!("writer {i}").into_bytes(), b"second".to_vec()],
                    )
                })
            })
            .collect();
        let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let wins = results.iter().filter(|r| matches!(r, Ok(2))).count();
        let conflicts = results
            .iter()
            .filter(|r| matches!(r, Err(StorageError::Conflict { actual: 2, .. })))
            .count();
        assert_eq!((wins, conflicts), (1, RACERS - 1), "{results:?}");
        assert_eq!(store.read(&stream, 1, 10).unwrap().len(), 2);
    }
}

#[test]
fn a_second_open_of_one_dir_is_refused_until_the_first_is_dropped() {
    let tmp = tempfile::tempdir().unwrap();
    let first = open(tmp.path());
    match SledStore::open(tmp.path(), Durability::Flush) {
        Err(StorageError::Locked { dir, holder }) => {
            assert_eq!(dir, tmp.path().display().to_string());
            let holder = holder.expect("the holder is named");
            assert!(
                holder.starts_with(&format!("pid {}, started ", std::process::id())),
                "{holder}"
            );
        }
        other => panic!("expected Locked, got {other:?}"),
    }
    drop(first);
    let again = open(tmp.path());
    again.append("s", 0, &entries(&["a"])).unwrap();
}

#[test]
fn a_reopened_store_sees_every_acknowledged_write() {
    let tmp = tempfile::tempdir().unwrap();
    {
        let store = open(tmp.path());
        store.append("s1", 0, &entries(&["a", "b"])).unwrap();
        store.append("s2", 0, &entries(&["c"])).unwrap();
        store.put("checkpoints", "s1", b"state at 2").unwrap();
        store.put("checkpoints", "s2", b"state at 1").unwrap();
        store.put("jobs", "j1", b"queued").unwrap();
        store.delete("jobs", "j1").unwrap();
    }
    let store = open(tmp.path());
    assert_eq!(store.last_seq("s1").unwrap(), 2);
    assert_eq!(
        store.read("s1", 1, 10).unwrap(),
        vec![(1, b"a".to_vec()), (2, b"b".to_vec())]
    );
    assert_eq!(store.read("s2", 1, 10).unwrap(), vec![(1, b"c".to_vec())]);
    let mut names = store.streams().unwrap();
    names.sort();
    assert_eq!(names, vec!["s1", "s2"]);
    assert_eq!(
        store.get("checkpoints", "s1").unwrap().as_deref(),
        Some(&b"state at 2"[..])
    );
    assert_eq!(store.get("jobs", "j1").unwrap(), None);
    assert_eq!(store.append("s1", 2, &entries(&["d"])).unwrap(), 3);
}

#[test]
fn buckets_put_get_delete_and_scan_by_prefix() {
    let tmp = tempfile::tempdir().unwrap();
    let store = open(tmp.path());
    assert_eq!(store.get("b", "k").unwrap(), None);
    assert!(store.scan("b", "").unwrap().is_empty());
    store.delete("b", "k").unwrap();
    assert!(
        !store.db.tree_names().iter().any(|n| n.as_ref() == b"kv:b"),
        "reads and deletes must not create a bucket"
    );

    store.put("b", "job/2", b"two").unwrap();
    store.put("b", "job/1", b"one").unwrap();
    store.put("b", "other", b"x").unwrap();
    store.put("c", "job/9", b"elsewhere").unwrap();
    store.put("b", "job/1", b"one again").unwrap();
    assert_eq!(
        store.get("b", "job/1").unwrap().as_deref(),
        Some(&b"one again"[..])
    );
    assert_eq!(
        store.scan("b", "job/").unwrap(),
        vec![
            ("job/1".to_string(), b"one again".to_vec()),
            ("job/2".to_string(), b"two".to_vec())
        ]
    );
    store.delete("b", "job/1").unwrap();
    assert_eq!(store.scan("b", "job/").unwrap().len(), 1);
    assert_eq!(store.scan("b", "").unwrap().len(), 2);
}

/// Runs `writers` threads, each appending `appends` events to its own stream;
/// returns the number of flushes they took.
fn append_concurrently(store: &Arc<SledStore>, writers: u64, appends: u64) -> u64 {
    let barrier = Arc::new(Barrier::new(writers as usize));
    let handles: Vec<_> = (0..writers)
        .map(|w| {
            let (store, barrier) = (store.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                let stream = format!("writer-{w}");
                for last in 0..appends {
                    let got = store.append(&stream, last, &[vec![w as u8; 200]]).unwrap();
                    assert_eq!(got, last + 1);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    for w in 0..writers {
        assert_eq!(store.last_seq(&format!("writer-{w}")).unwrap(), appends);
    }
    let flushes = store.flush_count();
    eprintln!("{} appends took {flushes} flushes", writers * appends);
    assert!(flushes > 0);
    flushes
}

#[test]
fn concurrent_appends_share_flushes() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Arc::new(open(tmp.path()));
    // A `Flush` flush is short (~90 µs), so fewer writers pile up behind one
    // than under `Strict`; on 2 cores about 7 per flush.
    let flushes = append_concurrently(&store, 16, 50);
    assert!(flushes <= 800 / 2, "{flushes} flushes for 800 appends");
}

#[test]
fn concurrent_strict_appends_share_fdatasyncs() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Arc::new(SledStore::open(tmp.path(), Durability::Strict).unwrap());
    let at_open = store.flush_count();
    // An fdatasync takes milliseconds: all 16 writers fit behind each one.
    let flushes = append_concurrently(&store, 16, 20) - at_open;
    assert!(flushes <= 320 / 3, "{flushes} flushes for 320 appends");
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

#[cfg(feature = "fault-injection")]
#[test]
fn a_failed_flush_acknowledges_nothing_and_fails_the_store() {
    let tmp = tempfile::tempdir().unwrap();
    {
        let store = open(tmp.path());
        store.append("s", 0, &entries(&["a"])).unwrap();
        store.fail_next_flushes(1);
        let err = store.append("s", 1, &entries(&["b"])).unwrap_err();
        assert!(
            matches!(&err, StorageError::Io(m) if m.contains("injected fault")),
            "{err}"
        );
        // The store is failed: nothing reports the unacknowledged append, and
        // every call repeats the first error, with no further flush.
        let flushes = store.flush_count();
        for result in [
            store.last_seq("s").map(|_| ()),
            store.read("s", 1, 10).map(|_| ()),
            store.append("s", 2, &entries(&["c"])).map(|_| ()),
            store.put("b", "k", b"v"),
        ] {
            assert_eq!(result.unwrap_err().to_string(), err.to_string());
        }
        assert_eq!(store.flush_count(), flushes);
    }
    // Reopened, the store is whole again; the unacknowledged append may or
    // may not have reached the disk, but head and entries agree.
    let store = open(tmp.path());
    let last = store.last_seq("s").unwrap();
    assert!(last == 1 || last == 2, "{last}");
    assert_eq!(store.read("s", 1, 10).unwrap().len() as u64, last);
    store.append("s", last, &entries(&["c"])).unwrap();
}

#[cfg(feature = "fault-injection")]
#[test]
fn every_writer_waiting_on_a_failed_flush_gets_the_error() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Arc::new(open(tmp.path()));
    store.fail_next_flushes(1);
    let barrier = Arc::new(Barrier::new(8));
    let handles: Vec<_> = (0..8)
        .map(|w| {
            let (store, barrier) = (store.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                store.append(&format!("w{w}"), 0, &entries(&["x"]))
            })
        })
        .collect();
    for h in handles {
        let result = h.join().unwrap();
        assert!(
            matches!(&result, Err(StorageError::Io(m)) if m.contains("injected fault")),
            "{result:?}"
        );
    }
    assert_eq!(store.flush_count(), 0);
}
