//! Tests of the SQLite backend's own behaviour: damage made behind its back,
//! read-only stores, backups, the file header. What every backend must do is
//! tested in `crate::conformance`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use super::storage::prefix_end;
use super::*;
use crate::Storage;
use crate::test_support::{append_s_and_t, damage_of, entries, read_entries};

fn open(dir: &Path) -> SqliteStore {
    SqliteStore::open(dir, Durability::Flush).expect("open store")
}

fn io_message(result: Result<impl std::fmt::Debug, StorageError>) -> String {
    match result {
        Err(StorageError::Io(m)) => m,
        other => panic!("expected an Io error, got {other:?}"),
    }
}

#[test]
fn a_gap_in_a_stream_is_damage_at_its_first_missing_sequence() {
    let tmp = tempfile::tempdir().unwrap();
    append_s_and_t(&open(tmp.path()));
    raw::delete_entry(tmp.path(), "s", 3);
    {
        let store = open(tmp.path());
        let (stream, seq, reason) = damage_of(store.read("s", 1, 10));
        assert_eq!(
            (stream.as_str(), seq, reason.as_str()),
            ("s", 3, "it is missing")
        );
        // Reading from the missing entry names it too.
        assert_eq!(damage_of(store.read("s", 3, 10)).1, 3);
        // A read that stops before the gap, or starts after it, succeeds.
        assert_eq!(store.read("s", 1, 2).unwrap().len(), 2);
        assert_eq!(
            store.read("s", 4, 10).unwrap(),
            vec![(4, b"d".to_vec()), (5, b"e".to_vec())]
        );
        assert_eq!(store.last_seq("s").unwrap(), 5);
        // Other streams are unaffected.
        assert_eq!(store.read("t", 1, 10).unwrap(), vec![(1, b"x".to_vec())]);
    }

    // Two missing in a row: damage from the first of them, wherever the
    // read starts inside the gap.
    raw::delete_entry(tmp.path(), "s", 4);
    {
        let store = open(tmp.path());
        assert_eq!(damage_of(store.read("s", 1, 10)).1, 3);
        assert_eq!(damage_of(store.read("s", 4, 10)).1, 3);
        assert_eq!(store.read("s", 5, 10).unwrap(), vec![(5, b"e".to_vec())]);
    }

    // With the first entry gone, the stream is damaged from sequence 1.
    raw::delete_entry(tmp.path(), "s", 1);
    let store = open(tmp.path());
    assert_eq!(damage_of(store.read("s", 1, 10)).1, 1);
    let err = store.read("s", 0, 10).unwrap_err();
    assert_eq!(
        err.to_string(),
        "stream `s` cannot be read at sequence 1: it is missing"
    );
    // Appends go on from the head, as with any backend.
    assert_eq!(store.append("s", 5, &entries(&["f"])).unwrap(), 6);
}

#[test]
fn a_missing_last_entry_moves_the_head_back() {
    let tmp = tempfile::tempdir().unwrap();
    {
        let store = open(tmp.path());
        store.append("s", 0, &entries(&["a", "b", "c"])).unwrap();
    }
    raw::delete_entry(tmp.path(), "s", 3);
    let store = open(tmp.path());
    assert_eq!(store.last_seq("s").unwrap(), 2);
    assert_eq!(store.read("s", 1, 10).unwrap().len(), 2);
}

#[test]
fn raw_overwrite_replaces_an_entry_s_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    {
        let store = open(tmp.path());
        store.append("s", 0, &entries(&["a", "b"])).unwrap();
    }
    raw::overwrite_entry(tmp.path(), "s", 2, b"tampered");
    let store = open(tmp.path());
    // Entries are opaque bytes here: the hash chain above them notices.
    assert_eq!(
        store.read("s", 1, 10).unwrap(),
        vec![(1, b"a".to_vec()), (2, b"tampered".to_vec())]
    );
}

#[test]
fn a_read_only_store_sees_a_live_writer_and_refuses_writes() {
    let tmp = tempfile::tempdir().unwrap();
    let writer = open(tmp.path());
    writer.append("s", 0, &entries(&["a"])).unwrap();
    writer.put("b", "k", b"v1").unwrap();

    // Without the data dir lock, as another process would while a server runs.
    let reader = SqliteStore::open_read_only(tmp.path()).unwrap();
    assert_eq!(reader.read("s", 1, 10).unwrap(), vec![(1, b"a".to_vec())]);
    assert_eq!(reader.get("b", "k").unwrap(), Some(b"v1".to_vec()));

    // Later commits do not show: every read sees the store as it was at the
    // open (a check must not mix a log from before a checkpoint from after);
    // a new open sees them.
    writer.append("s", 1, &entries(&["b"])).unwrap();
    writer.put("b", "k", b"v2").unwrap();
    writer.put("later", "k", b"x").unwrap();
    assert_eq!(reader.last_seq("s").unwrap(), 1);
    assert_eq!(reader.get("b", "k").unwrap(), Some(b"v1".to_vec()));
    assert_eq!(reader.buckets().unwrap(), vec!["b"]);
    let fresh = SqliteStore::open_read_only(tmp.path()).unwrap();
    assert_eq!(fresh.last_seq("s").unwrap(), 2);
    assert_eq!(fresh.get("b", "k").unwrap(), Some(b"v2".to_vec()));
    drop(fresh);
    assert_eq!(reader.streams().unwrap(), vec!["s"]);
    assert_eq!(reader.scan("b", "").unwrap().len(), 1);

    for message in [
        io_message(reader.append("s", 2, &entries(&["c"]))),
        io_message(reader.put("b", "k", b"v3")),
        io_message(reader.delete("b", "k")),
    ] {
        assert!(message.contains("opened read-only"), "{message}");
        assert!(message.contains("store.db"), "{message}");
    }
    assert_eq!(reader.flush_count(), 0);
    assert_eq!(writer.last_seq("s").unwrap(), 2);
    assert!(format!("{reader:?}").contains("read_only: true"));

    // The writer goes on, and can close and reopen, while the reader stays
    // on its snapshot.
    drop(writer);
    let writer = open(tmp.path());
    writer.append("s", 2, &entries(&["c"])).unwrap();
    assert_eq!(reader.last_seq("s").unwrap(), 1);
    assert_eq!(writer.last_seq("s").unwrap(), 3);
}

#[test]
fn a_read_only_store_opens_a_closed_dir() {
    let tmp = tempfile::tempdir().unwrap();
    {
        let store = open(tmp.path());
        store.append("s", 0, &entries(&["a", "b"])).unwrap();
    }
    let reader = SqliteStore::open_read_only(tmp.path()).unwrap();
    assert_eq!(reader.last_seq("s").unwrap(), 2);
    // And a writer can take the dir while it reads (its snapshot stays).
    let writer = open(tmp.path());
    writer.append("s", 2, &entries(&["c"])).unwrap();
    assert_eq!(reader.read("s", 1, 10).unwrap().len(), 2);
    assert_eq!(writer.read("s", 1, 10).unwrap().len(), 3);
}

#[test]
fn a_read_only_open_of_a_dir_without_a_store_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let message = io_message(SqliteStore::open_read_only(tmp.path()));
    let db = tmp.path().join("sqlite/store.db");
    assert!(
        message.contains(&format!("no SQLite store at `{}`", db.display())),
        "{message}"
    );
    // It created nothing.
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
}

#[test]
fn backups_are_consistent_while_writers_go_on() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Arc::new(open(tmp.path()));
    const WRITERS: u64 = 4;
    let stop = Arc::new(AtomicBool::new(false));
    let barrier = Arc::new(Barrier::new(WRITERS as usize + 1));
    let handles: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (store, stop, barrier) = (store.clone(), stop.clone(), barrier.clone());
            std::thread::spawn(move || {
                let stream = format!("w{w}");
                let mut last = 0;
                barrier.wait();
                while !stop.load(Ordering::SeqCst) {
                    let batch = vec![vec![w as u8; 200], vec![w as u8; 20]];
                    last = store.append(&stream, last, &batch).unwrap();
                    store.put("heads", &stream, &last.to_be_bytes()).unwrap();
                }
                last
            })
        })
        .collect();
    barrier.wait();
    while store.flush_count() < 50 {
        std::thread::sleep(Duration::from_millis(1));
    }
    let backups = tempfile::tempdir().unwrap();
    let first = backups.path().join("first.db");
    store.backup_to(&first).unwrap();
    // A read-only store backs up too, while the writers go on.
    let reader = SqliteStore::open_read_only(tmp.path()).unwrap();
    let second = backups.path().join("second.db");
    reader.backup_to(&second).unwrap();
    stop.store(true, Ordering::SeqCst);
    let finals: Vec<u64> = handles.into_iter().map(|h| h.join().unwrap()).collect();

    // Nothing but the two copies is left beside them.
    let mut names: Vec<String> = std::fs::read_dir(backups.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, vec!["first.db", "second.db"]);

    for (i, backup) in [first, second].iter().enumerate() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sqlite")).unwrap();
        std::fs::copy(backup, dir.path().join("sqlite/store.db")).unwrap();
        let copy = open(dir.path());
        let mut total = 0;
        for (w, last) in (0..WRITERS).zip(&finals) {
            let stream = format!("w{w}");
            let head = copy.last_seq(&stream).unwrap();
            let all = copy.read(&stream, 1, usize::MAX).unwrap();
            assert_eq!(all.len() as u64, head, "backup {i}: {stream} has a gap");
            assert_eq!(head % 2, 0, "backup {i}: {stream} holds half an append");
            assert!(head <= *last);
            // The bucket write that follows each append is there or not, as
            // of one instant: never ahead of the stream.
            if let Some(recorded) = copy.get("heads", &stream).unwrap() {
                let recorded = u64::from_be_bytes(recorded.try_into().unwrap());
                assert!(recorded == head || recorded + 2 == head, "backup {i}");
            }
            total += head;
        }
        assert!(total > 0, "backup {i} is empty");
        copy.append("w0", copy.last_seq("w0").unwrap(), &entries(&["after"]))
            .unwrap();
    }
}

#[test]
fn a_backup_never_overwrites_a_file() {
    let tmp = tempfile::tempdir().unwrap();
    let store = open(tmp.path());
    store.append("s", 0, &entries(&["a"])).unwrap();
    let target = tmp.path().join("backup.db");
    std::fs::write(&target, b"precious").unwrap();
    let message = io_message(store.backup_to(&target));
    assert!(message.contains("the file exists"), "{message}");
    assert!(message.contains("backup.db"), "{message}");
    assert_eq!(std::fs::read(&target).unwrap(), b"precious");

    let missing_dir = tmp.path().join("no/such/dir/backup.db");
    let err = store.backup_to(&missing_dir).unwrap_err();
    assert!(err.to_string().contains("no/such/dir"), "{err}");
    // The store is not failed by a backup that could not be written.
    assert_eq!(store.append("s", 1, &entries(&["b"])).unwrap(), 2);
}

#[test]
fn a_database_of_another_application_is_refused_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    {
        let store = open(tmp.path());
        store.append("s", 0, &entries(&["a"])).unwrap();
    }
    raw::set_application_id(tmp.path(), 0x1234_5678);
    let db = raw::db_path(tmp.path());
    let before = std::fs::read(&db).unwrap();
    let message = io_message(SqliteStore::open(tmp.path(), Durability::Flush));
    assert!(message.contains("is not a glovebox store"), "{message}");
    assert!(message.contains(&db.display().to_string()), "{message}");
    assert!(message.contains("0x12345678"), "{message}");
    let message = io_message(SqliteStore::open_read_only(tmp.path()));
    assert!(message.contains("is not a glovebox store"), "{message}");
    assert_eq!(std::fs::read(&db).unwrap(), before);

    // Any other SQLite database, with no application id at all.
    let other = tempfile::tempdir().unwrap();
    std::fs::create_dir(other.path().join("sqlite")).unwrap();
    rusqlite::Connection::open(raw::db_path(other.path()))
        .unwrap()
        .execute_batch("CREATE TABLE notes (text TEXT)")
        .unwrap();
    let message = io_message(SqliteStore::open(other.path(), Durability::Flush));
    assert!(message.contains("is not a glovebox store"), "{message}");
}

#[test]
fn a_store_of_a_newer_schema_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    drop(open(tmp.path()));
    raw::set_schema_version(tmp.path(), schema::SCHEMA_VERSION + 1);
    let message = io_message(SqliteStore::open(tmp.path(), Durability::Flush));
    assert!(
        message.contains("schema version 2, newer than the 1"),
        "{message}"
    );
    assert!(message.contains("store.db"), "{message}");
}

#[test]
fn a_file_that_is_not_a_database_is_corrupt() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("sqlite")).unwrap();
    std::fs::write(raw::db_path(tmp.path()), vec![0x5a; 8192]).unwrap();
    match SqliteStore::open(tmp.path(), Durability::Flush) {
        Err(StorageError::Corrupt(message)) => {
            assert!(message.contains("store.db"), "{message}");
            assert!(message.contains("glovebox store check"), "{message}");
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
}

/// The writer connection's `synchronous` setting: 1 is NORMAL, 2 FULL.
fn writer_synchronous(store: &SqliteStore) -> i64 {
    store
        .writer
        .as_ref()
        .unwrap()
        .lock()
        .unwrap()
        .conn()
        .pragma_query_value(None, "synchronous", |r| r.get(0))
        .unwrap()
}

#[test]
fn strict_mode_syncs_and_keeps_the_wal() {
    let tmp = tempfile::tempdir().unwrap();
    {
        let store = SqliteStore::open(tmp.path(), Durability::Strict).unwrap();
        assert_eq!(store.durability(), Durability::Strict);
        store.append("s", 0, &entries(&["a", "b"])).unwrap();
        assert_eq!(store.flush_count(), 1);
        assert!(tmp.path().join("sqlite/store.db-wal").is_file());
        assert_eq!(writer_synchronous(&store), 2, "FULL");
    }
    let store = open(tmp.path());
    assert_eq!(writer_synchronous(&store), 1, "NORMAL");
    assert_eq!(store.last_seq("s").unwrap(), 2);
}

#[test]
fn reads_do_not_wait_for_the_writer() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Arc::new(open(tmp.path()));
    store.append("s", 0, &entries(&["a"])).unwrap();
    // Hold the writer connection, as a long commit would.
    let writer = store.writer.as_ref().unwrap().lock().unwrap();
    let reading = {
        let store = store.clone();
        std::thread::spawn(move || {
            (
                store.read("s", 1, 10).unwrap(),
                store.last_seq("s").unwrap(),
                store.streams().unwrap(),
                store.get("b", "k").unwrap(),
            )
        })
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !reading.is_finished() {
        assert!(std::time::Instant::now() < deadline, "a read waited");
        std::thread::sleep(Duration::from_millis(1));
    }
    drop(writer);
    let (read, last, streams, value) = reading.join().unwrap();
    assert_eq!(read, vec![(1, b"a".to_vec())]);
    assert_eq!((last, streams, value), (1, vec!["s".to_string()], None));
}

#[test]
fn writers_queued_behind_a_commit_share_the_next_one() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Arc::new(open(tmp.path()));
    // Hold the writer connection: the first leader stops in its batch, and
    // every other writer queues behind it.
    let writer = store.writer.as_ref().unwrap().clone();
    let held = writer.lock().unwrap();
    let handles: Vec<_> = (0..16)
        .map(|w| {
            let store = store.clone();
            std::thread::spawn(move || store.append(&format!("w{w}"), 0, &entries(&["x"])))
        })
        .collect();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    // The first leader took its own op (and any queued with it); the rest wait.
    while store.commit.queued() + 1 < 16 {
        assert!(
            std::time::Instant::now() < deadline,
            "writers did not queue"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(
        store.flush_count(),
        0,
        "nothing commits while the writer is held"
    );
    drop(held);
    for h in handles {
        assert_eq!(h.join().unwrap().unwrap(), 1);
    }
    assert_eq!(store.flush_count(), 2);
}

#[test]
fn more_readers_than_connections_take_turns() {
    let tmp = tempfile::tempdir().unwrap();
    let store = open(tmp.path());
    store.append("s", 0, &vec![vec![1; 100]; 50]).unwrap();
    crate::conformance::at_once(24, |_| {
        for _ in 0..20 {
            assert_eq!(store.read("s", 1, 100).unwrap().len(), 50);
        }
    });
}

#[test]
fn a_conflict_in_a_batch_fails_only_its_own_append() {
    let tmp = tempfile::tempdir().unwrap();
    let store = open(tmp.path());
    // One batch, run here directly: heads moved by earlier ops of the batch count.
    let ops = vec![
        Op::Append {
            stream: "s".into(),
            expected_last: 0,
            entries: entries(&["a", "b"]),
        },
        Op::Append {
            stream: "s".into(),
            expected_last: 0,
            entries: entries(&["lost"]),
        },
        Op::Append {
            stream: "s".into(),
            expected_last: 2,
            entries: entries(&["c"]),
        },
        Op::Put {
            bucket: "b".into(),
            key: "k".into(),
            value: b"v".to_vec(),
        },
        Op::Append {
            stream: "s".into(),
            expected_last: 3,
            entries: Vec::new(),
        },
        Op::Delete {
            bucket: "b".into(),
            key: "absent".into(),
        },
    ];
    let (results, wrote) = store
        .writer
        .as_ref()
        .unwrap()
        .lock()
        .unwrap()
        .run(&ops, || None)
        .unwrap();
    assert!(wrote);
    assert!(matches!(results[0], Ok(2)));
    assert!(matches!(
        results[1],
        Err(StorageError::Conflict {
            expected: 0,
            actual: 2,
            ..
        })
    ));
    assert!(matches!(results[2], Ok(3)));
    assert!(matches!(results[3], Ok(0)));
    assert!(matches!(results[4], Ok(3)));
    assert!(matches!(results[5], Ok(0)));
    assert_eq!(read_entries(&store, "s", 1, 10), entries(&["a", "b", "c"]));
    assert_eq!(store.get("b", "k").unwrap(), Some(b"v".to_vec()));
}

#[cfg(feature = "fault-injection")]
#[test]
fn a_failed_commit_is_rolled_back() {
    let tmp = tempfile::tempdir().unwrap();
    {
        let store = open(tmp.path());
        store.append("s", 0, &entries(&["a"])).unwrap();
        store.put("b", "k", b"old").unwrap();
        store.fail_next_flushes(1);
        assert!(store.append("s", 1, &entries(&["b"])).is_err());
        // The store is failed; a backup of it is refused too.
        let backup = tmp.path().join("backup.db");
        assert!(store.backup_to(&backup).is_err());
        assert!(!backup.exists());
    }
    let store = open(tmp.path());
    assert_eq!(store.last_seq("s").unwrap(), 1);
    assert_eq!(store.get("b", "k").unwrap(), Some(b"old".to_vec()));
}

#[test]
fn prefix_end_bounds_exactly_the_keys_with_the_prefix() {
    assert_eq!(prefix_end(""), None);
    assert_eq!(prefix_end("a").as_deref(), Some("b"));
    assert_eq!(prefix_end("job/").as_deref(), Some("job0"));
    assert_eq!(prefix_end("a\u{10FFFF}").as_deref(), Some("b"));
    assert_eq!(prefix_end("\u{10FFFF}"), None);
    // Surrogates are not chars: the next one after U+D7FF is U+E000.
    assert_eq!(prefix_end("\u{D7FF}").as_deref(), Some("\u{E000}"));
}
