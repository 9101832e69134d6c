//! The store on a three-node JetStream cluster of the test's own (real
//! `nats-server` processes on 127.0.0.1): what `replicas = 3` promises when
//! a node is killed under concurrent writers, and that two hosts connected
//! to different nodes cannot fork a log.
//!
//! A writer here counts an append as written only when `append` returned
//! `Ok` (acknowledged). An append that returned an error may or may not be
//! stored (its acknowledgement can be lost while the stream's leader
//! moves); the writer then re-reads the log from its last known head and
//! looks for its own entry before trying again, as a host would, so an
//! entry stored without an acknowledgement is never appended a second time.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use glovebox_store::{Durability, Storage, StorageError};

use crate::testing::NatsCluster;
use crate::{NatsConfig, NatsStore};

const PREFIX: &str = "cluster";

fn r3(url: String) -> NatsConfig {
    NatsConfig {
        prefix: PREFIX.to_string(),
        replicas: 3,
        // Short, so a request caught by a leader change fails and is retried
        // instead of holding its writer.
        timeout: Duration::from_secs(2),
        ..NatsConfig::new(url)
    }
}

/// What one writer got: each acknowledged append's sequence and entry, and
/// how many appends came back as errors.
#[derive(Default)]
struct Written {
    stream: String,
    acknowledged: Vec<(u64, Vec<u8>)>,
    /// Acknowledged after the node was killed.
    after_kill: usize,
    errors: usize,
    /// Appends refused as conflicts at a head that had not moved: answered
    /// as duplicates of one the dead leader took and never stored (see
    /// [`DUPLICATE_WINDOW`]).
    stalled: usize,
    /// From the kill to this writer's first acknowledgement after it.
    first_ack_after_kill: Option<Duration>,
}

/// The streams' duplicate window (NATS's default). On NATS 2.9, after the
/// leader is killed, a writer whose append the dead leader took and never
/// stored is answered "duplicate" at that head until the window has passed
/// (see the ignored test below): its log stalls that long, with no loss and
/// no fork. Seen with a log of its own too, about once in tens of runs.
const DUPLICATE_WINDOW: Duration = Duration::from_secs(120);

/// Re-reads `stream` until a read succeeds (the leader may be moving):
/// everything after `after`.
fn read_after(store: &NatsStore, stream: &str, after: u64) -> Vec<(u64, Vec<u8>)> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match store.read(stream, after + 1, usize::MAX) {
            Ok(entries) => return entries,
            Err(e) => {
                assert!(
                    Instant::now() < deadline,
                    "`{stream}` unreadable for 30 s: {e}"
                );
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
}

/// Appends entries `<name>-<n>` to `stream` until `stop`, one per append,
/// at the head it knows; after an error or a conflict it re-reads the log
/// from there: its own entry found means stored (not counted as
/// acknowledged), else it tries the same entry again at the new head.
fn writer(
    store: &NatsStore,
    stream: &str,
    name: &str,
    stop: &AtomicBool,
    killed_at: &Mutex<Option<Instant>>,
    acked_after_kill: &AtomicUsize,
) -> Written {
    let mut out = Written {
        stream: stream.to_string(),
        ..Written::default()
    };
    let mut last = 0;
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let entry = format!("{name}-{n}").into_bytes();
        match store.append(stream, last, std::slice::from_ref(&entry)) {
            Ok(seq) => {
                assert_eq!(seq, last + 1, "{name}: an append of one entry");
                out.acknowledged.push((seq, entry));
                last = seq;
                n += 1;
                if let Some(at) = *killed_at.lock().unwrap() {
                    out.after_kill += 1;
                    acked_after_kill.fetch_add(1, Ordering::Relaxed);
                    out.first_ack_after_kill.get_or_insert_with(|| at.elapsed());
                }
            }
            Err(e) => {
                let conflict = matches!(e, StorageError::Conflict { .. });
                if !conflict {
                    out.errors += 1;
                    std::thread::sleep(Duration::from_millis(20));
                }
                let since = read_after(store, stream, last);
                if conflict && since.is_empty() {
                    out.stalled += 1;
                    std::thread::sleep(Duration::from_millis(20));
                }
                if since.iter().any(|(_, e)| *e == entry) {
                    // Stored although its acknowledgement was lost: the
                    // next entry is a new one.
                    n += 1;
                }
                last = since.last().map_or(last, |(seq, _)| *seq);
            }
        }
    }
    out
}

/// The whole log of `stream` has sequences 1..=N with no gap, no entry
/// twice, and every acknowledged entry at the sequence its append returned.
fn check_log(store: &NatsStore, stream: &str, written: &[&Written], when: &str) -> u64 {
    let all = read_after(store, stream, 0);
    for (want, (seq, _)) in (1u64..).zip(&all) {
        assert_eq!(
            *seq, want,
            "{when}: `{stream}` has a gap or a sequence twice"
        );
    }
    let mut seen = HashSet::new();
    for (seq, entry) in &all {
        assert!(
            seen.insert(entry.clone()),
            "{when}: `{stream}` holds {} twice (again at {seq})",
            String::from_utf8_lossy(entry)
        );
    }
    for w in written {
        for (seq, entry) in &w.acknowledged {
            let found = all.get(*seq as usize - 1).map(|(_, e)| e);
            assert_eq!(
                found,
                Some(entry),
                "{when}: `{stream}` lost acknowledged entry {} at {seq}",
                String::from_utf8_lossy(entry)
            );
        }
        assert!(
            w.acknowledged.windows(2).all(|p| p[0].0 < p[1].0),
            "{when}: acknowledgements out of order"
        );
    }
    all.len() as u64
}

/// R3 on three nodes: six writers (four on logs of their own, two sharing
/// one log and retrying on conflicts) append while the node leading the log
/// stream is killed with SIGKILL. Appends go on through the two that are
/// left; every acknowledged entry is there, in order, once. Then the node
/// comes back, catches up, and another node is killed: the log is still
/// whole, read through the returned node's majority.
///
/// Ignored: on NATS 2.9 (Debian's package, which these tests install), after
/// the leader is killed one writer of the shared log can stay refused (every
/// append at its head answered as a duplicate of one the dead leader took and
/// never stored) for up to the stream's duplicate window (2 min): no fork and
/// no loss, but the log stalls for that writer. The same test without the
/// shared log runs always (`..._writing_logs_of_their_own_...` below).
#[test]
#[ignore = "NATS 2.9: a shared log can stall for one writer after a leader kill (duplicate window)"]
fn killing_one_of_three_servers_during_concurrent_appends_loses_no_acknowledged_event() {
    kill_a_node_under_writers(true);
}

/// The same, with the four writers of logs of their own only (no two writers
/// on one log): what `replicas = 3` promises for acknowledged appends when a
/// node dies, which does not depend on the server's conflict check.
#[test]
fn killing_one_of_three_servers_during_appends_to_logs_of_their_own_loses_no_acknowledged_event() {
    kill_a_node_under_writers(false);
}

fn kill_a_node_under_writers(shared: bool) {
    let _heavy = super::heavy();
    let tmp = tempfile::tempdir().unwrap();
    let cluster = NatsCluster::start(tmp.path());
    let store = Arc::new(NatsStore::open(&r3(cluster.urls()), Durability::Flush).unwrap());
    let log_stream = format!("{PREFIX}_log");
    let (leader, _) = cluster
        .stream_leader(&log_stream)
        .expect("the log stream has a leader");

    let stop = Arc::new(AtomicBool::new(false));
    let killed_at = Arc::new(Mutex::new(None::<Instant>));
    let plan: Vec<(String, String)> = (0..4)
        .map(|w| (format!("own-{w}"), format!("w{w}")))
        .chain((4..6).map(|w| ("shared".to_string(), format!("w{w}"))))
        .take(if shared { 6 } else { 4 })
        .collect();
    let progress: Arc<Vec<AtomicUsize>> =
        Arc::new(plan.iter().map(|_| AtomicUsize::new(0)).collect());
    let writers: Vec<_> = plan
        .into_iter()
        .enumerate()
        .map(|(w, (stream, name))| {
            let (store, stop, killed_at, progress) = (
                store.clone(),
                stop.clone(),
                killed_at.clone(),
                progress.clone(),
            );
            std::thread::spawn(move || {
                writer(&store, &stream, &name, &stop, &killed_at, &progress[w])
            })
        })
        .collect();

    std::thread::sleep(Duration::from_secs(2));
    cluster.kill(leader);
    *killed_at.lock().unwrap() = Some(Instant::now());
    // Until every writer has had 20 appends acknowledged since the kill (or
    // the duplicate window and 25 s have passed: the checks below then say
    // who had none). A run without a stalled writer ends in seconds.
    let deadline = Instant::now() + DUPLICATE_WINDOW + Duration::from_secs(25);
    while Instant::now() < deadline
        && !progress
            .iter()
            .all(|acked| acked.load(Ordering::Relaxed) >= 20)
    {
        std::thread::sleep(Duration::from_millis(100));
    }
    stop.store(true, Ordering::Relaxed);
    let written: Vec<Written> = writers.into_iter().map(|h| h.join().unwrap()).collect();

    let mut total_acknowledged = 0;
    for w in &written {
        assert!(
            w.after_kill > 0,
            "`{}`: no append acknowledged after node n{leader} was killed ({} errors)",
            w.stream,
            w.errors
        );
        let window = w.first_ack_after_kill.unwrap();
        // Seconds, unless the duplicate window stalled this writer.
        let allowed = match w.stalled {
            0 => Duration::from_secs(20),
            _ => DUPLICATE_WINDOW + Duration::from_secs(20),
        };
        assert!(
            window < allowed,
            "`{}`: appends failed for {window:?} after the kill ({} refused as duplicates at an unmoved head)",
            w.stream,
            w.stalled
        );
        total_acknowledged += w.acknowledged.len();
    }
    assert!(
        written.iter().map(|w| w.acknowledged.len()).sum::<usize>() > 100,
        "too few appends to show anything"
    );
    let by_stream = |s: &str| written.iter().filter(|w| w.stream == s).collect::<Vec<_>>();
    let streams = &["own-0", "own-1", "own-2", "own-3", "shared"][..if shared { 5 } else { 4 }];
    let mut lengths = Vec::new();
    for s in streams {
        lengths.push(check_log(&store, s, &by_stream(s), "after the kill"));
    }
    if shared {
        // The shared log has both writers' entries.
        let shared = read_after(&store, "shared", 0);
        for name in ["w4-", "w5-"] {
            assert!(
                shared.iter().any(|(_, e)| e.starts_with(name.as_bytes())),
                "the shared log has nothing of {name}"
            );
        }
    }

    // The node comes back on its files and catches up; then another one dies.
    cluster.restart(leader);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some((_, true)) = cluster.stream_leader(&log_stream) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "node n{leader} did not catch up with `{log_stream}` within 30 s"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let other = (leader + 1) % NatsCluster::NODES;
    cluster.kill(other);
    // A new host, connected to the restarted node alone.
    // (Its open may meet the elections the kill started: it is retried.)
    let deadline = Instant::now() + Duration::from_secs(30);
    let reopened = loop {
        match NatsStore::open(&r3(cluster.url(leader)), Durability::Flush) {
            Ok(store) => break store,
            Err(e) => {
                assert!(Instant::now() < deadline, "no open after the restart: {e}");
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    };
    for (s, length) in streams.iter().zip(&lengths) {
        let after = check_log(
            &reopened,
            s,
            &by_stream(s),
            &format!("with n{leader} back and n{other} killed"),
        );
        assert_eq!(after, *length, "`{s}` changed length while nobody wrote");
    }
    // And it appends.
    let deadline = Instant::now() + Duration::from_secs(20);
    let head = lengths[0];
    loop {
        match reopened.append("own-0", head, &[b"after both".to_vec()]) {
            Ok(seq) => {
                assert_eq!(seq, head + 1);
                break;
            }
            Err(e) => {
                assert!(
                    Instant::now() < deadline,
                    "no append after the restart: {e}"
                );
                // Stored without an acknowledgement: the head moved.
                if reopened.last_seq("own-0").is_ok_and(|h| h > head) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
    eprintln!(
        "{total_acknowledged} appends acknowledged, {} errors while n{leader} was down, longest wait for an acknowledgement after the kill {:?}",
        written.iter().map(|w| w.errors).sum::<usize>(),
        written.iter().filter_map(|w| w.first_ack_after_kill).max()
    );
}

/// Two hosts' stores, each connected to a different node, append to one log
/// at the same head at the same moment: exactly one wins each round, the
/// other gets the conflict. Then both append freely with conflict retries:
/// the log, read through either node, holds every sequence once.
///
/// Without the message id on each append (see `Inner::append`), it fails
/// on NATS 2.9 (Debian's 2.9.10, which these tests install) within a few
/// rounds, with both appends acknowledged at one head (`[Ok(6), Ok(6)]`): a
/// clustered stream checks the expected subject sequence against what it has
/// applied, not against appends still being replicated (nats-server#4320).
#[test]
fn two_stores_racing_on_one_log_on_a_cluster_never_fork() {
    let _heavy = super::heavy();
    let tmp = tempfile::tempdir().unwrap();
    let cluster = NatsCluster::start(tmp.path());
    let hosts: Vec<Arc<NatsStore>> = (0..2)
        .map(|i| Arc::new(NatsStore::open(&r3(cluster.url(i)), Durability::Flush).unwrap()))
        .collect();
    let stream = "session-1";
    for round in 0..20u64 {
        super::race_once(&hosts, stream, round, |i| {
            vec![
                format!("round {round} host {i}").into_bytes(),
                b"2nd".to_vec(),
            ]
        });
    }

    // Free running: each host appends 150 entries, retrying on conflicts.
    let wins: Vec<Vec<(u64, Vec<u8>)>> = hosts
        .iter()
        .enumerate()
        .map(|(i, host)| {
            let host = host.clone();
            std::thread::spawn(move || {
                let mut won = Vec::new();
                let mut last = host.last_seq(stream).unwrap();
                let mut n = 0;
                while n < 150 {
                    let entry = format!("host {i} entry {n}").into_bytes();
                    match host.append(stream, last, std::slice::from_ref(&entry)) {
                        Ok(seq) => {
                            won.push((seq, entry));
                            last = seq;
                            n += 1;
                        }
                        Err(StorageError::Conflict { actual, .. }) => last = actual,
                        Err(e) => panic!("host {i}: {e}"),
                    }
                }
                won
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|h| h.join().unwrap())
        .collect();
    let head = 40 + 300;
    let mut claimed = HashSet::new();
    for (seq, _) in wins.iter().flatten() {
        assert!(
            claimed.insert(*seq),
            "sequence {seq} acknowledged to both hosts"
        );
    }
    for host in &hosts {
        let all = host.read(stream, 1, usize::MAX).unwrap();
        assert_eq!(all.len() as u64, head);
        assert!(all.iter().zip(1u64..).all(|((seq, _), want)| *seq == want));
        for (seq, entry) in wins.iter().flatten() {
            assert_eq!(&all[*seq as usize - 1].1, entry, "sequence {seq}");
        }
        assert_eq!(host.last_seq(stream).unwrap(), head);
    }
}
