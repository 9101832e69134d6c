//! The behaviour every backend owes the [`Storage`] contract, tested the same
//! way on each: every test here is a generic function over [`Backend`].
//! [`storage_contract_tests!`](crate::storage_contract_tests) instantiates
//! the tests every backend passes, embedded or networked, as `#[test]`
//! functions in the module where it is called; with the `testing` feature
//! this module is public, so a backend in another crate (the NATS one) runs
//! the very same tests. Here, `conformance_tests!` instantiates them, and the
//! tests only an embedded store can pass (one process per dir, flushes it
//! counts, injected faults), once per embedded backend, as
//! `conformance::<backend>::<test>`. Tests that need a backend's own layout
//! (damaging its files) live with the backend.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};

use crate::test_support::{entries, read_entries};
use crate::{Durability, Storage, StorageError, Swap};

/// What the tests need of a backend beyond [`Storage`]: a way to open it
/// again on the same data. A backend without a data dir (a server) maps
/// `dir` to its own place, the same one for the same `dir`.
pub trait Backend: Storage + Sized + std::fmt::Debug {
    fn open(dir: &Path, durability: Durability) -> Result<Self, StorageError>;
}

/// What the tests of an embedded backend need besides.
#[cfg(test)]
pub(crate) trait Embedded: Backend {
    fn flush_count(&self) -> u64;
    #[cfg(feature = "fault-injection")]
    fn fail_next_flushes(&self, n: usize);
}

/// [`Backend`] and `Embedded` for an embedded store, by its own `open`,
/// `flush_count` and `fail_next_flushes`, when its feature is on.
macro_rules! embedded_backend {
    ($feature:literal, $store:ty) => {
        #[cfg(feature = $feature)]
        impl Backend for $store {
            fn open(dir: &Path, durability: Durability) -> Result<Self, StorageError> {
                <$store>::open(dir, durability)
            }
        }

        #[cfg(all(test, feature = $feature))]
        impl Embedded for $store {
            fn flush_count(&self) -> u64 {
                <$store>::flush_count(self)
            }
            #[cfg(feature = "fault-injection")]
            fn fail_next_flushes(&self, n: usize) {
                <$store>::fail_next_flushes(self, n);
            }
        }
    };
}

embedded_backend!("sled", crate::SledStore);
embedded_backend!("sqlite", crate::SqliteStore);

/// Instantiates every test of the contract that any backend passes, as
/// `#[test] fn <test>()` in the calling module, for `$backend` (a type
/// implementing [`conformance::Backend`](crate::conformance::Backend)).
#[macro_export]
macro_rules! storage_contract_tests {
    ($backend:ty) => {
        $crate::storage_contract_tests!(@each $backend;
            append_and_read_are_ordered_and_gapless,
            reads_past_the_head_or_of_nothing_are_empty,
            empty_and_large_entries_round_trip,
            streams_with_shared_prefixes_stay_apart,
            stream_names_with_nul_are_refused,
            append_with_a_wrong_expected_last_conflicts,
            racing_appends_on_one_expected_last_let_exactly_one_win,
            writers_sharing_one_stream_extend_it_without_gaps,
            a_multi_entry_append_is_seen_whole_or_not_at_all,
            a_reopened_store_sees_every_acknowledged_write,
            unsynced_appends_are_read_back_checked_and_made_durable_by_sync,
            a_durable_write_makes_the_unsynced_appends_before_it_durable,
            buckets_put_get_delete_and_scan_by_prefix,
            scan_prefixes_are_literal,
            scan_pages_walk_a_prefix_in_key_order_a_page_at_a_time,
            buckets_lists_the_buckets_holding_keys,
            put_if_writes_only_over_the_expected_value,
            put_if_is_durable_and_sees_plain_puts_and_deletes,
            racing_put_ifs_on_one_expected_value_let_exactly_one_win,
            an_unsynced_put_if_compares_as_strictly_and_is_made_durable_by_a_later_write,
        );
    };
    (@each $backend:ty; $($test:ident),* $(,)?) => {
        $( #[test] fn $test() { $crate::conformance::$test::<$backend>(); } )*
    };
}

/// Instantiates the contract and each listed embedded-only test for every
/// embedded backend compiled in.
#[cfg(test)]
macro_rules! conformance_tests {
    ($($(#[$attr:meta])* $test:ident),* $(,)?) => {
        #[cfg(feature = "sled")]
        mod sled {
            $crate::storage_contract_tests!(crate::SledStore);
            $( $(#[$attr])* #[test] fn $test() { super::$test::<crate::SledStore>(); } )*
        }
        #[cfg(feature = "sqlite")]
        mod sqlite {
            $crate::storage_contract_tests!(crate::SqliteStore);
            $( $(#[$attr])* #[test] fn $test() { super::$test::<crate::SqliteStore>(); } )*
        }
    };
}

#[cfg(test)]
conformance_tests!(
    a_second_open_of_one_dir_is_refused_until_the_first_is_dropped,
    concurrent_appends_share_flushes,
    concurrent_strict_appends_share_flushes,
    strict_durability_keeps_every_write,
    #[cfg(feature = "fault-injection")]
    a_failed_flush_acknowledges_nothing_and_fails_the_store,
    #[cfg(feature = "fault-injection")]
    every_writer_waiting_on_a_failed_flush_gets_the_error,
    #[cfg(feature = "fault-injection")]
    a_store_reopened_after_a_failed_flush_has_every_acknowledged_write,
    #[cfg(feature = "fault-injection")]
    a_reopening_store_recovers_from_a_failed_flush_without_a_restart,
);

fn open<B: Backend>(dir: &Path) -> B {
    B::open(dir, Durability::Flush).expect("open store")
}

/// Runs `f(0)` to `f(n - 1)` on `n` threads that start together (each
/// waits at a barrier until all are ready, so their calls overlap), and
/// returns what each returned, in order: the races of the contract tests
/// and of each backend's own.
pub fn at_once<T: Send>(n: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let barrier = Barrier::new(n);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..n)
            .map(|i| {
                let (f, barrier) = (&f, &barrier);
                scope.spawn(move || {
                    barrier.wait();
                    f(i)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

fn sorted(mut names: Vec<String>) -> Vec<String> {
    names.sort();
    names
}

pub fn append_and_read_are_ordered_and_gapless<B: Backend>() {
    let tmp = tempfile::tempdir().unwrap();
    let store = open::<B>(tmp.path());
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
    assert_eq!(store.last_seq("s").unwrap(), 5);
    // An empty append to an absent stream creates nothing.
    assert_eq!(store.append("never", 0, &[]).unwrap(), 0);
    assert_eq!(store.streams().unwrap(), vec!["s"]);
}

pub fn reads_past_the_head_or_of_nothing_are_empty<B: Backend>() {
    let tmp = tempfile::tempdir().unwrap();
    let store = open::<B>(tmp.path());
    store.append("s", 0, &entries(&["a", "b"])).unwrap();
    assert!(store.read("s", 1, 0).unwrap().is_empty());
    assert!(store.read("s", 3, 10).unwrap().is_empty());
    assert!(store.read("s", u64::MAX, 10).unwrap().is_empty());
    assert_eq!(
        store.read("s", 2, usize::MAX).unwrap(),
        vec![(2, b"b".to_vec())]
    );
    assert_eq!(store.last_seq("absent").unwrap(), 0);
}

pub fn empty_and_large_entries_round_trip<B: Backend>() {
    let tmp = tempfile::tempdir().unwrap();
    let store = open::<B>(tmp.path());
    let big: Vec<u8> = (0..300 * 1024).map(|i| (i % 251) as u8).collect();
    let batch = vec![Vec::new(), big.clone(), b"small".to_vec()];
    assert_eq!(store.append("s", 0, &batch).unwrap(), 3);
    assert_eq!(read_entries(&store, "s", 1, 10), batch);
    store.put("b", "big", &big).unwrap();
    store.put("b", "empty", b"").unwrap();
    assert_eq!(store.get("b", "big").unwrap(), Some(big));
    assert_eq!(store.get("b", "empty").unwrap(), Some(Vec::new()));
}

pub fn streams_with_shared_prefixes_stay_apart<B: Backend>() {
    let tmp = tempfile::tempdir().unwrap();
    let store = open::<B>(tmp.path());
    // More than 255 entries, so a sequence's low byte wraps inside one stream.
    let many: Vec<Vec<u8>> = (0..300u32).map(|i| i.to_be_bytes().to_vec()).collect();
    store.append("a", 0, &many).unwrap();
    store.append("ab", 0, &entries(&["x"])).unwrap();
    store.append("a\u{1}", 0, &entries(&["y"])).unwrap();
    store.append("session/é ☃", 0, &entries(&["z"])).unwrap();
    store.append("", 0, &entries(&["nameless"])).unwrap();

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
    assert_eq!(
        store.read("", 1, 10).unwrap(),
        vec![(1, b"nameless".to_vec())]
    );
    assert_eq!(store.last_seq("a").unwrap(), 300);
    assert_eq!(
        sorted(store.streams().unwrap()),
        vec!["", "a", "a\u{1}", "ab", "session/é ☃"]
    );
}

pub fn stream_names_with_nul_are_refused<B: Backend>() {
    let tmp = tempfile::tempdir().unwrap();
    let store = open::<B>(tmp.path());
    let err = store.append("a\0b", 0, &entries(&["x"])).unwrap_err();
    assert!(
        matches!(&err, StorageError::Io(m) if m.contains("NUL")),
        "{err}"
    );
    assert!(store.read("a\0b", 1, 1).is_err());
    assert!(store.last_seq("a\0b").is_err());
    assert!(store.streams().unwrap().is_empty());
}

pub fn append_with_a_wrong_expected_last_conflicts<B: Backend>() {
    let tmp = tempfile::tempdir().unwrap();
    let store = open::<B>(tmp.path());
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
    assert!(matches!(
        store.append("absent", 3, &entries(&["x"])),
        Err(StorageError::Conflict { actual: 0, .. })
    ));
    assert_eq!(store.read("s", 1, 10).unwrap(), vec![(1, b"a".to_vec())]);
    assert_eq!(store.streams().unwrap(), vec!["s"]);
}

pub fn racing_appends_on_one_expected_last_let_exactly_one_win<B: Backend>() {
    let tmp = tempfile::tempdir().unwrap();
    let store = open::<B>(tmp.path());
    const RACERS: usize = 4;
    for round in 0..25 {
        let stream = format!("race-{round}");
        let results = at_once(RACERS, |i| {
            store.append(
                &stream,
                0,
                &[format!("writer {i}").into_bytes(), b"second".to_vec()],
            )
        });
        let wins = results.iter().filter(|r| matches!(r, Ok(2))).count();
        let conflicts = results
            .iter()
            .filter(|r| matches!(r, Err(StorageError::Conflict { actual: 2, .. })))
            .count();
        assert_eq!((wins, conflicts), (1, RACERS - 1), "{results:?}");
        let read = store.read(&stream, 1, 10).unwrap();
        assert_eq!(read.len(), 2);
        assert_eq!(read[1].1, b"second");
    }
}

/// Writers that each append at the head they last saw, retrying on conflict:
/// every append lands once, and the stream has no gap and no duplicate.
pub fn writers_sharing_one_stream_extend_it_without_gaps<B: Backend>() {
    let tmp = tempfile::tempdir().unwrap();
    let store = open::<B>(tmp.path());
    const WRITERS: u64 = 6;
    const APPENDS: u64 = 30;
    let conflicts: u64 = at_once(WRITERS as usize, |w| {
        let mut conflicts = 0;
        for i in 0..APPENDS {
            let entry = vec![format!("{w}/{i}").into_bytes()];
            let mut head = store.last_seq("shared").unwrap();
            loop {
                match store.append("shared", head, &entry) {
                    Ok(last) => {
                        assert_eq!(last, head + 1);
                        break;
                    }
                    Err(StorageError::Conflict { actual, .. }) => {
                        conflicts += 1;
                        head = actual;
                    }
                    Err(e) => panic!("{e}"),
                }
            }
        }
        conflicts
    })
    .into_iter()
    .sum();
    eprintln!("{conflicts} conflicts");
    let all = store.read("shared", 1, 10_000).unwrap();
    assert_eq!(all.len() as u64, WRITERS * APPENDS);
    assert!(all.iter().zip(1u64..).all(|((seq, _), want)| *seq == want));
    let mut seen: Vec<&[u8]> = all.iter().map(|(_, e)| e.as_slice()).collect();
    seen.sort();
    seen.dedup();
    assert_eq!(
        seen.len() as u64,
        WRITERS * APPENDS,
        "an append landed twice"
    );
}

/// A reader never sees part of an append: it holds all of its entries or none.
pub fn a_multi_entry_append_is_seen_whole_or_not_at_all<B: Backend>() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Arc::new(open::<B>(tmp.path()));
    const PER_APPEND: u64 = 5;
    let done = Arc::new(AtomicBool::new(false));
    let reads = Arc::new(AtomicUsize::new(0));
    let reader = {
        let (store, done, reads) = (store.clone(), done.clone(), reads.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::SeqCst) {
                let all = store.read("s", 1, usize::MAX).unwrap();
                assert_eq!(all.len() as u64 % PER_APPEND, 0, "a partial append");
                let head = store.last_seq("s").unwrap();
                assert_eq!(head % PER_APPEND, 0, "a partial head");
                reads.fetch_add(1, Ordering::SeqCst);
            }
        })
    };
    let batch: Vec<Vec<u8>> = (0..PER_APPEND).map(|i| vec![i as u8; 100]).collect();
    let mut appends = 0;
    // Until the reader has looked often enough, whatever the scheduling.
    while appends < 100 || reads.load(Ordering::SeqCst) < 50 {
        store.append("s", appends * PER_APPEND, &batch).unwrap();
        appends += 1;
        assert!(appends < 100_000, "the reader never ran");
    }
    done.store(true, Ordering::SeqCst);
    reader.join().unwrap();
    assert_eq!(store.last_seq("s").unwrap(), appends * PER_APPEND);
}

#[cfg(test)]
fn a_second_open_of_one_dir_is_refused_until_the_first_is_dropped<B: Embedded>() {
    let tmp = tempfile::tempdir().unwrap();
    let first = open::<B>(tmp.path());
    match B::open(tmp.path(), Durability::Flush) {
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
    let again = open::<B>(tmp.path());
    again.append("s", 0, &entries(&["a"])).unwrap();
}

pub fn a_reopened_store_sees_every_acknowledged_write<B: Backend>() {
    let tmp = tempfile::tempdir().unwrap();
    {
        let store = open::<B>(tmp.path());
        store.append("s1", 0, &entries(&["a", "b"])).unwrap();
        store.append("s2", 0, &entries(&["c"])).unwrap();
        store.put("checkpoints", "s1", b"state at 2").unwrap();
        store.put("checkpoints", "s2", b"state at 1").unwrap();
        store.put("jobs", "j1", b"queued").unwrap();
        store.delete("jobs", "j1").unwrap();
    }
    let store = open::<B>(tmp.path());
    assert_eq!(store.last_seq("s1").unwrap(), 2);
    assert_eq!(
        store.read("s1", 1, 10).unwrap(),
        vec![(1, b"a".to_vec()), (2, b"b".to_vec())]
    );
    assert_eq!(store.read("s2", 1, 10).unwrap(), vec![(1, b"c".to_vec())]);
    assert_eq!(sorted(store.streams().unwrap()), vec!["s1", "s2"]);
    assert_eq!(
        store.get("checkpoints", "s1").unwrap().as_deref(),
        Some(&b"state at 2"[..])
    );
    assert_eq!(store.get("jobs", "j1").unwrap(), None);
    assert_eq!(store.append("s1", 2, &entries(&["d"])).unwrap(), 3);
}

pub fn unsynced_appends_are_read_back_checked_and_made_durable_by_sync<B: Backend>() {
    let tmp = tempfile::tempdir().unwrap();
    {
        let store = open::<B>(tmp.path());
        assert_eq!(
            store
                .append_unsynced("s", 0, &entries(&["a", "b"]))
                .unwrap(),
            2
        );
        // Applied: read back, and the next append is checked against it.
        assert_eq!(
            store.read("s", 1, 10).unwrap(),
            vec![(1, b"a".to_vec()), (2, b"b".to_vec())]
        );
        assert!(matches!(
            store.append_unsynced("s", 0, &entries(&["x"])),
            Err(StorageError::Conflict { actual: 2, .. })
        ));
        assert_eq!(store.append_unsynced("s", 2, &entries(&["c"])).unwrap(), 3);
        store.sync().unwrap();
    }
    let store = open::<B>(tmp.path());
    assert_eq!(store.last_seq("s").unwrap(), 3);
    assert_eq!(store.read("s", 3, 10).unwrap(), vec![(3, b"c".to_vec())]);
}

pub fn a_durable_write_makes_the_unsynced_appends_before_it_durable<B: Backend>() {
    let tmp = tempfile::tempdir().unwrap();
    {
        let store = open::<B>(tmp.path());
        store
            .append_unsynced("s", 0, &entries(&["requested"]))
            .unwrap();
        store.append_unsynced("t", 0, &entries(&["other"])).unwrap();
        store.append("s", 1, &entries(&["finished"])).unwrap();
    }
    let store = open::<B>(tmp.path());
    assert_eq!(
        store.read("s", 1, 10).unwrap(),
        vec![(1, b"requested".to_vec()), (2, b"finished".to_vec())]
    );
    assert_eq!(store.last_seq("t").unwrap(), 1);
}

pub fn buckets_put_get_delete_and_scan_by_prefix<B: Backend>() {
    let tmp = tempfile::tempdir().unwrap();
    let store = open::<B>(tmp.path());
    assert_eq!(store.get("b", "k").unwrap(), None);
    assert!(store.scan("b", "").unwrap().is_empty());
    store.delete("b", "k").unwrap();
    assert!(
        store.buckets().unwrap().is_empty(),
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
    assert_eq!(store.get("b", "job/9").unwrap(), None);
    assert_eq!(
        store.scan("b", "job/").unwrap(),
        vec![
            ("job/1".to_string(), b"one again".to_vec()),
            ("job/2".to_string(), b"two".to_vec())
        ]
    );
    store.delete("b", "job/1").unwrap();
    store.delete("b", "job/1").unwrap();
    assert_eq!(store.get("b", "job/1").unwrap(), None);
    assert_eq!(store.scan("b", "job/").unwrap().len(), 1);
    assert_eq!(store.scan("b", "").unwrap().len(), 2);
    assert_eq!(store.scan("c", "").unwrap().len(), 1);
}

/// A prefix matches keys that start with it, byte for byte: no wildcards,
/// no case folding, and keys at the edges of the key space.
pub fn scan_prefixes_are_literal<B: Backend>() {
    let tmp = tempfile::tempdir().unwrap();
    let store = open::<B>(tmp.path());
    let keys = [
        "",
        "%",
        "%a",
        "50%",
        "50%off",
        "50_off",
        "50xoff",
        "5",
        "a_b",
        "a_c",
        "aXb",
        "A_b",
        "a\0z",
        "é",
        "éa",
        "\u{10FFFF}",
        "\u{10FFFF}x",
        "\u{FFFF}",
        "zz",
    ];
    for key in keys {
        store.put("k", key, key.as_bytes()).unwrap();
    }
    let scan = |prefix: &str| -> Vec<String> {
        store
            .scan("k", prefix)
            .unwrap()
            .into_iter()
            .map(|(k, v)| {
                assert_eq!(k.as_bytes(), v, "value of {k:?}");
                k
            })
            .collect()
    };
    let mut all: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
    all.sort();
    assert_eq!(scan(""), all, "key order is byte order");
    assert_eq!(scan("%"), vec!["%", "%a"]);
    assert_eq!(scan("50%"), vec!["50%", "50%off"]);
    assert_eq!(scan("50_"), vec!["50_off"]);
    assert_eq!(scan("a_"), vec!["a_b", "a_c"]);
    assert_eq!(scan("a"), vec!["a\0z", "aXb", "a_b", "a_c"]);
    assert_eq!(scan("a\0"), vec!["a\0z"]);
    assert_eq!(scan("é"), vec!["é", "éa"]);
    assert_eq!(scan("\u{10FFFF}"), vec!["\u{10FFFF}", "\u{10FFFF}x"]);
    assert_eq!(scan("\u{FFFF}"), vec!["\u{FFFF}"]);
    assert!(scan("b").is_empty());
    assert!(scan("zzz").is_empty());
    assert_eq!(store.get("k", "a\0z").unwrap(), Some(b"a\0z".to_vec()));
}

/// A page is the next `limit` keys after the cursor within the prefix, in
/// byte order; removed keys are not in it (a backend that keeps delete
/// markers still fills the page), a short page is the end, and a walk with
/// [`crate::pages`] visits exactly what `scan` returns.
pub fn scan_pages_walk_a_prefix_in_key_order_a_page_at_a_time<B: Backend>() {
    let tmp = tempfile::tempdir().unwrap();
    let store = open::<B>(tmp.path());
    let page = |prefix: &str, after: Option<&str>, limit: usize| -> Vec<String> {
        store
            .scan_page("p", prefix, after, limit)
            .unwrap()
            .into_iter()
            .map(|(k, v)| {
                assert_eq!(k.as_bytes(), v, "value of {k:?}");
                k
            })
            .collect()
    };
    assert!(
        page("", None, 10).is_empty(),
        "a bucket that does not exist"
    );
    for key in [
        "a/1", "a/2", "a/3", "a/4", "a/5", "a/6", "a/7", "a/8", "b/1", "a", "a/",
    ] {
        store.put("p", key, key.as_bytes()).unwrap();
    }
    store.delete("p", "a/2").unwrap();
    store.delete("p", "a/3").unwrap();
    store.delete("p", "a/5").unwrap();
    assert_eq!(page("a/", None, 3), vec!["a/", "a/1", "a/4"]);
    assert_eq!(page("a/", Some("a/4"), 3), vec!["a/6", "a/7", "a/8"]);
    assert!(page("a/", Some("a/8"), 3).is_empty());
    // A cursor before the prefix starts at the prefix; one past it ends.
    assert_eq!(page("a/", Some("0"), 2), vec!["a/", "a/1"]);
    assert!(page("a/", Some("b"), 2).is_empty());
    assert_eq!(page("a/", Some("a/7"), 10), vec!["a/8"]);
    assert_eq!(page("", Some("a/8"), 10), vec!["b/1"]);
    assert!(page("a/", None, 0).is_empty());
    for size in [1, 2, 3, 100] {
        let walked: Vec<(String, Vec<u8>)> = crate::pages(&store, "p", "", size)
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(walked, store.scan("p", "").unwrap(), "pages of {size}");
    }
    assert_eq!(crate::pages(&store, "none", "", 5).count(), 0);
}

pub fn buckets_lists_the_buckets_holding_keys<B: Backend>() {
    let tmp = tempfile::tempdir().unwrap();
    let store = open::<B>(tmp.path());
    assert!(store.buckets().unwrap().is_empty());
    for bucket in ["jobs", "checkpoints", "", "a bucket/with é", "jobs2"] {
        store.put(bucket, "k1", b"v").unwrap();
        store.put(bucket, "k2", b"v").unwrap();
    }
    store.put("emptied", "k", b"v").unwrap();
    store.delete("emptied", "k").unwrap();
    let mut names = store.buckets().unwrap();
    // A bucket whose keys were all deleted may or may not be listed.
    names.retain(|n| n != "emptied");
    assert_eq!(
        names,
        vec!["", "a bucket/with é", "checkpoints", "jobs", "jobs2"]
    );
    assert_eq!(store.get("jobs2", "k1").unwrap(), Some(b"v".to_vec()));
    assert!(store.scan("jobs", "").unwrap().len() == 2);
}

/// Whether `put_if` of `key` in `bucket` from `from` to `to` swapped.
fn swapped(
    store: &impl Storage,
    bucket: &str,
    key: &str,
    from: Option<&[u8]>,
    to: Option<&[u8]>,
) -> bool {
    store.put_if(bucket, key, Swap::new(from, to)).unwrap()
}

pub fn put_if_writes_only_over_the_expected_value<B: Backend>() {
    let tmp = tempfile::tempdir().unwrap();
    let store = open::<B>(tmp.path());
    // Nothing there: only "absent" matches, and a miss creates no bucket.
    assert!(!swapped(&store, "b", "k", Some(b"v"), Some(b"w")));
    assert!(!swapped(&store, "b", "k", Some(b""), None));
    assert!(swapped(&store, "b", "k", None, None), "absent stays absent");
    assert!(
        store.buckets().unwrap().is_empty(),
        "a compare that missed must not create a bucket"
    );
    assert_eq!(store.get("b", "k").unwrap(), None);
    // Absent -> v1; a second "absent" loses.
    assert!(swapped(&store, "b", "k", None, Some(b"v1")));
    assert!(!swapped(&store, "b", "k", None, Some(b"other")));
    assert_eq!(store.get("b", "k").unwrap().as_deref(), Some(&b"v1"[..]));
    // v1 -> v2; a stale v1 loses, and so does a prefix of the value.
    assert!(swapped(&store, "b", "k", Some(b"v1"), Some(b"v2")));
    assert!(!swapped(&store, "b", "k", Some(b"v1"), Some(b"v3")));
    assert!(!swapped(&store, "b", "k", Some(b"v"), Some(b"v3")));
    assert_eq!(store.get("b", "k").unwrap().as_deref(), Some(&b"v2"[..]));
    // v2 -> removed; removing again over v2 loses.
    assert!(swapped(&store, "b", "k", Some(b"v2"), None));
    assert_eq!(store.get("b", "k").unwrap(), None);
    assert!(!swapped(&store, "b", "k", Some(b"v2"), None));
    // A removed key is absent again, for the compare too.
    assert!(swapped(&store, "b", "k", None, Some(b"v4")));
    assert_eq!(store.get("b", "k").unwrap().as_deref(), Some(&b"v4"[..]));
    // An empty value is a value, not absence.
    assert!(swapped(&store, "b", "empty", None, Some(b"")));
    assert!(!swapped(&store, "b", "empty", None, Some(b"x")));
    assert_eq!(store.get("b", "empty").unwrap(), Some(Vec::new()));
    assert!(swapped(&store, "b", "empty", Some(b""), Some(b"x")));
    // Other keys and buckets are untouched.
    assert!(swapped(&store, "c", "k", None, Some(b"c's")));
    assert_eq!(store.get("b", "k").unwrap().as_deref(), Some(&b"v4"[..]));
    assert_eq!(
        store.scan("b", "").unwrap(),
        vec![
            ("empty".to_string(), b"x".to_vec()),
            ("k".to_string(), b"v4".to_vec())
        ]
    );
}

/// A compare-and-set compares with what plain puts and deletes left, and
/// what it writes survives a reopen.
pub fn put_if_is_durable_and_sees_plain_puts_and_deletes<B: Backend>() {
    let tmp = tempfile::tempdir().unwrap();
    {
        let store = open::<B>(tmp.path());
        store.put("b", "k", b"put").unwrap();
        assert!(!swapped(&store, "b", "k", None, Some(b"x")));
        assert!(swapped(&store, "b", "k", Some(b"put"), Some(b"swapped")));
        store.put("b", "gone", b"soon").unwrap();
        store.delete("b", "gone").unwrap();
        assert!(!swapped(&store, "b", "gone", Some(b"soon"), Some(b"x")));
        assert!(swapped(&store, "b", "gone", None, Some(b"back")));
        assert!(swapped(&store, "b", "removed", None, Some(b"r")));
        assert!(swapped(&store, "b", "removed", Some(b"r"), None));
    }
    let store = open::<B>(tmp.path());
    assert_eq!(
        store.get("b", "k").unwrap().as_deref(),
        Some(&b"swapped"[..])
    );
    assert_eq!(
        store.get("b", "gone").unwrap().as_deref(),
        Some(&b"back"[..])
    );
    assert_eq!(store.get("b", "removed").unwrap(), None);
    assert!(swapped(&store, "b", "k", Some(b"swapped"), Some(b"again")));
}

/// A compare-and-set that may return before it is durable compares as
/// strictly as `put_if`, and the durable write after it (an append) makes it
/// durable: what a spend tally charged just before a call's record relies on.
pub fn an_unsynced_put_if_compares_as_strictly_and_is_made_durable_by_a_later_write<B: Backend>() {
    let tmp = tempfile::tempdir().unwrap();
    {
        let store = open::<B>(tmp.path());
        let cas = |from: Option<&[u8]>, to: Option<&[u8]>| {
            store
                .put_if_unsynced("t", "k", Swap::new(from, to))
                .unwrap()
        };
        assert!(cas(None, Some(b"1")));
        assert!(!cas(None, Some(b"x")));
        assert!(!cas(Some(b"0"), Some(b"x")));
        assert!(cas(Some(b"1"), Some(b"2")));
        assert_eq!(store.get("t", "k").unwrap().as_deref(), Some(&b"2"[..]));
        // A plain compare-and-set sees it.
        assert!(!swapped(&store, "t", "k", Some(b"1"), Some(b"y")));
        assert!(cas(Some(b"2"), Some(b"3")));
        store.append("log", 0, &[b"after".to_vec()]).unwrap();
    }
    let store = open::<B>(tmp.path());
    assert_eq!(store.get("t", "k").unwrap().as_deref(), Some(&b"3"[..]));
}

/// Writers that each try to move one key from the value they all saw to
/// their own: exactly one of them does, every round, and the key holds its
/// value (what a lease or a claimed name relies on).
pub fn racing_put_ifs_on_one_expected_value_let_exactly_one_win<B: Backend>() {
    let tmp = tempfile::tempdir().unwrap();
    let store = open::<B>(tmp.path());
    const RACERS: usize = 4;
    let mut current: Option<Vec<u8>> = None;
    for round in 0..25 {
        let results: Vec<bool> = at_once(RACERS, |i| {
            let mine = format!("round {round} writer {i}").into_bytes();
            // Every fifth round removes the key instead of setting it.
            let value = (round % 5 != 4).then_some(mine);
            store
                .put_if(
                    "race",
                    "key",
                    Swap::new(current.as_deref(), value.as_deref()),
                )
                .unwrap()
        });
        let winners: Vec<usize> = (0..RACERS).filter(|&i| results[i]).collect();
        assert_eq!(winners.len(), 1, "round {round}: {results:?}");
        let want =
            (round % 5 != 4).then(|| format!("round {round} writer {}", winners[0]).into_bytes());
        assert_eq!(store.get("race", "key").unwrap(), want, "round {round}");
        current = want;
    }
}

/// Runs `writers` threads, each appending `appends` events of 200 bytes to
/// its own stream, all of them at once: the threads meet at a barrier before
/// each append, so their writes overlap however the scheduler runs them (a
/// writer running alone for a time slice would otherwise commit all of its
/// appends before the next one wakes). Returns the number of flushes taken.
#[cfg(test)]
fn append_concurrently<B: Embedded>(store: &Arc<B>, writers: u64, appends: u64) -> u64 {
    let barrier = Arc::new(Barrier::new(writers as usize));
    let handles: Vec<_> = (0..writers)
        .map(|w| {
            let (store, barrier) = (store.clone(), barrier.clone());
            std::thread::spawn(move || {
                let stream = format!("writer-{w}");
                for last in 0..appends {
                    barrier.wait();
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
        let stream = format!("writer-{w}");
        assert_eq!(store.last_seq(&stream).unwrap(), appends);
        assert_eq!(
            store.read(&stream, 1, usize::MAX).unwrap().len() as u64,
            appends
        );
    }
    let flushes = store.flush_count();
    eprintln!("{} appends took {flushes} flushes", writers * appends);
    assert!(flushes > 0);
    flushes
}

#[cfg(test)]
fn concurrent_appends_share_flushes<B: Embedded>() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Arc::new(open::<B>(tmp.path()));
    // A `Flush` flush is short (tens of microseconds, as long as waking a
    // thread), so fewer writers pile up behind one than under `Strict`: on 2
    // busy cores 5 to 15 of the 16 share each.
    let flushes = append_concurrently(&store, 16, 50);
    assert!(flushes <= 800 / 2, "{flushes} flushes for 800 appends");
}

#[cfg(test)]
fn concurrent_strict_appends_share_flushes<B: Embedded>() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Arc::new(B::open(tmp.path(), Durability::Strict).unwrap());
    let at_open = store.flush_count();
    // An fdatasync takes longer than the writers take to queue.
    let flushes = append_concurrently(&store, 16, 20) - at_open;
    assert!(flushes <= 320 / 3, "{flushes} flushes for 320 appends");
}

#[cfg(test)]
fn strict_durability_keeps_every_write<B: Embedded>() {
    let tmp = tempfile::tempdir().unwrap();
    let big = vec![7u8; 300 * 1024];
    {
        let store = B::open(tmp.path(), Durability::Strict).unwrap();
        store.append("s", 0, &entries(&["a", "b"])).unwrap();
        store.put("checkpoints", "s", &big).unwrap();
        store.delete("checkpoints", "absent").unwrap();
        assert!(store.flush_count() >= 2);
    }
    let store = B::open(tmp.path(), Durability::Strict).unwrap();
    assert_eq!(store.last_seq("s").unwrap(), 2);
    assert_eq!(store.get("checkpoints", "s").unwrap(), Some(big));
    assert_eq!(store.append("s", 2, &entries(&["c"])).unwrap(), 3);
}

#[cfg(all(test, feature = "fault-injection"))]
fn a_failed_flush_acknowledges_nothing_and_fails_the_store<B: Embedded>() {
    let tmp = tempfile::tempdir().unwrap();
    {
        let store = open::<B>(tmp.path());
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
            store.streams().map(|_| ()),
            store.append("s", 2, &entries(&["c"])).map(|_| ()),
            store.put("b", "k", b"v"),
            store.get("b", "k").map(|_| ()),
            store.delete("b", "k"),
            store.scan("b", "").map(|_| ()),
            store.buckets().map(|_| ()),
        ] {
            assert_eq!(result.unwrap_err().to_string(), err.to_string());
        }
        assert_eq!(store.flush_count(), flushes);
    }
    // Reopened, the store is whole again; the unacknowledged append may or
    // may not have reached the disk, but head and entries agree.
    let store = open::<B>(tmp.path());
    let last = store.last_seq("s").unwrap();
    assert!(last == 1 || last == 2, "{last}");
    assert_eq!(store.read("s", 1, 10).unwrap().len() as u64, last);
    store.append("s", last, &entries(&["c"])).unwrap();
}

#[cfg(all(test, feature = "fault-injection"))]
fn every_writer_waiting_on_a_failed_flush_gets_the_error<B: Embedded>() {
    let tmp = tempfile::tempdir().unwrap();
    let store = open::<B>(tmp.path());
    store.fail_next_flushes(1);
    for result in at_once(8, |w| store.append(&format!("w{w}"), 0, &entries(&["x"]))) {
        assert!(
            matches!(&result, Err(StorageError::Io(m)) if m.contains("injected fault")),
            "{result:?}"
        );
    }
    assert_eq!(store.flush_count(), 0);
}

/// Writers keep appending until a flush fails under them; after a reopen,
/// every append that was acknowledged is there, and every stream is whole.
#[cfg(all(test, feature = "fault-injection"))]
fn a_store_reopened_after_a_failed_flush_has_every_acknowledged_write<B: Embedded>() {
    let tmp = tempfile::tempdir().unwrap();
    const WRITERS: u64 = 8;
    let acked: Vec<u64> = {
        let store = Arc::new(open::<B>(tmp.path()));
        let barrier = Arc::new(Barrier::new(WRITERS as usize + 1));
        let handles: Vec<_> = (0..WRITERS)
            .map(|w| {
                let (store, barrier) = (store.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    let stream = format!("w{w}");
                    let mut last = 0;
                    loop {
                        match store.append(&stream, last, &[vec![w as u8; 64], vec![1; 8]]) {
                            Ok(new_last) => last = new_last,
                            Err(StorageError::Io(m)) if m.contains("injected fault") => {
                                return last;
                            }
                            Err(e) => panic!("{e}"),
                        }
                    }
                })
            })
            .collect();
        barrier.wait();
        while store.flush_count() < 20 {
            std::thread::yield_now();
        }
        store.fail_next_flushes(1);
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    };
    let store = open::<B>(tmp.path());
    for (w, acked) in (0..WRITERS).zip(acked) {
        let stream = format!("w{w}");
        let last = store.last_seq(&stream).unwrap();
        // The failed batch may have reached the disk (sled), or not (SQLite).
        assert!(last >= acked, "{stream}: {last} < acknowledged {acked}");
        assert!(last <= acked + 2, "{stream}: {last}, acknowledged {acked}");
        let all = store.read(&stream, 1, usize::MAX).unwrap();
        assert_eq!(all.len() as u64, last);
        assert!(all.iter().zip(1u64..).all(|((seq, _), want)| *seq == want));
    }
}

/// A failed store behind [`crate::Reopening`]: it refuses work until a
/// reopen is due and the readiness check passes, then opens the dir again in
/// place, with every acknowledged write and a new generation.
#[cfg(all(test, feature = "fault-injection"))]
fn a_reopening_store_recovers_from_a_failed_flush_without_a_restart<B: Embedded + 'static>() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let first = Arc::new(open::<B>(&dir));
    let full = Arc::new(AtomicBool::new(false));
    let opens = Arc::new(AtomicUsize::new(0));
    let store = {
        let (full, opens) = (full.clone(), opens.clone());
        crate::Reopening::new(
            first.clone(),
            Box::new(move || {
                opens.fetch_add(1, Ordering::SeqCst);
                Ok(Arc::new(open::<B>(&dir)) as Arc<dyn Storage>)
            }),
            Box::new(move || match full.load(Ordering::SeqCst) {
                true => Err("the disk is still full".into()),
                false => Ok(()),
            }),
        )
    };
    store.append("s", 0, &entries(&["a"])).unwrap();
    assert_eq!(store.failure(), None);
    first.fail_next_flushes(1);
    let err = store.append("s", 1, &entries(&["b"])).unwrap_err();
    assert!(
        matches!(&err, StorageError::Io(m) if m.contains("injected fault")),
        "{err}"
    );
    assert!(
        err.to_string().contains("reopens the data dir by itself"),
        "{err}"
    );
    let held = Arc::downgrade(&first);
    drop(first);
    // Failed: reads and writes refuse at once, with the failure, until a
    // reopen is due.
    assert!(store.failure().is_some());
    assert_eq!(
        store.last_seq("s").unwrap_err().to_string(),
        err.to_string()
    );
    assert_eq!(store.generation(), 0);
    // Due, but not ready: still failed, saying why.
    full.store(true, Ordering::SeqCst);
    std::thread::sleep(crate::RETRY);
    let err = store.get("b", "k").unwrap_err().to_string();
    assert!(
        err.contains("not reopened yet: the disk is still full"),
        "{err}"
    );
    assert_eq!(opens.load(Ordering::SeqCst), 0);
    // Ready: the next operation after the pause reopens the dir.
    full.store(false, Ordering::SeqCst);
    std::thread::sleep(crate::RETRY);
    let last = store.last_seq("s").unwrap();
    assert_eq!(opens.load(Ordering::SeqCst), 1);
    assert_eq!(store.generation(), 1);
    assert_eq!(store.failure(), None);
    assert!(held.upgrade().is_none(), "the failed store was closed");
    // The unacknowledged append may have reached the disk (sled) or not.
    assert!(last == 1 || last == 2, "{last}");
    assert_eq!(store.read("s", 1, 10).unwrap().len() as u64, last);
    store.append("s", last, &entries(&["c"])).unwrap();
    store.put("b", "k", b"v").unwrap();
    assert_eq!(store.get("b", "k").unwrap().as_deref(), Some(&b"v"[..]));
}
