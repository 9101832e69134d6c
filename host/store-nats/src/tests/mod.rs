//! The NATS backend against the storage contract (the same tests the
//! embedded backends pass), and what only a networked store has: a server
//! that is down, one without JetStream, a stream configured otherwise, a
//! server restarted under a live store.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier, Mutex, Weak};
use std::time::Duration;

use glovebox_store::conformance::at_once;
use glovebox_store::{Durability, Result, Storage, StorageError, Swap};

use crate::testing::NatsServer;
use crate::{NatsConfig, NatsStore};

/// The store on a three-node cluster: a node killed under writers, two hosts racing.
mod cluster;
/// Work queues: one host per item, back when its holder goes silent.
mod queue;

/// Held by the tests that keep the machine busy (many hosts at once, a
/// writer in a loop) and by the cluster tests, whose Raft elections stall
/// when their servers are starved of CPU: they never run at once.
fn heavy() -> std::sync::MutexGuard<'static, ()> {
    static HEAVY: Mutex<()> = Mutex::new(());
    HEAVY
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A store on a server of its own, started in the test's data dir: the
/// contract tests open a store "in a dir"; here the dir holds the server's
/// files. Opening the same dir again while a store is open reaches the same
/// server; once every store of a dir is dropped the server is killed
/// (SIGKILL), and the next open starts it again on the same files, so a
/// reopen in the contract tests is also a server crash and restart.
#[derive(Debug)]
struct TestStore {
    store: NatsStore,
    _server: Arc<ServerHandle>,
}

struct ServerHandle(NatsServer);

impl std::fmt::Debug for ServerHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0.url())
    }
}

fn server_for(dir: &Path) -> Arc<ServerHandle> {
    static SERVERS: Mutex<Option<HashMap<PathBuf, Weak<ServerHandle>>>> = Mutex::new(None);
    let mut servers = SERVERS.lock().unwrap();
    let servers = servers.get_or_insert_with(HashMap::new);
    servers.retain(|_, server| server.strong_count() > 0);
    if let Some(server) = servers.get(dir).and_then(Weak::upgrade) {
        return server;
    }
    let server = Arc::new(ServerHandle(NatsServer::start(&dir.join("nats"), true)));
    servers.insert(dir.to_path_buf(), Arc::downgrade(&server));
    server
}

impl glovebox_store::conformance::Backend for TestStore {
    fn open(dir: &Path, durability: Durability) -> Result<Self, StorageError> {
        let server = server_for(dir);
        let store = NatsStore::open(&NatsConfig::new(server.0.url()), durability)?;
        Ok(TestStore {
            store,
            _server: server,
        })
    }
}

impl Storage for TestStore {
    fn append(&self, stream: &str, expected_last: u64, entries: &[Vec<u8>]) -> Result<u64> {
        self.store.append(stream, expected_last, entries)
    }
    fn read(&self, stream: &str, from: u64, max: usize) -> Result<Vec<(u64, Vec<u8>)>> {
        self.store.read(stream, from, max)
    }
    fn last_seq(&self, stream: &str) -> Result<u64> {
        self.store.last_seq(stream)
    }
    fn streams(&self) -> Result<Vec<String>> {
        self.store.streams()
    }
    fn put(&self, bucket: &str, key: &str, value: &[u8]) -> Result<()> {
        self.store.put(bucket, key, value)
    }
    fn get(&self, bucket: &str, key: &str) -> Result<Option<Vec<u8>>> {
        self.store.get(bucket, key)
    }
    fn delete(&self, bucket: &str, key: &str) -> Result<()> {
        self.store.delete(bucket, key)
    }
    fn put_if(&self, bucket: &str, key: &str, swap: Swap<'_>) -> Result<bool> {
        self.store.put_if(bucket, key, swap)
    }
    fn scan(&self, bucket: &str, prefix: &str) -> Result<Vec<(String, Vec<u8>)>> {
        self.store.scan(bucket, prefix)
    }
    fn scan_page(
        &self,
        bucket: &str,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Vec<u8>)>> {
        self.store.scan_page(bucket, prefix, after, limit)
    }
    fn buckets(&self) -> Result<Vec<String>> {
        self.store.buckets()
    }
}

/// The storage contract, test for test as sled and SQLite pass it.
mod conformance {
    glovebox_store::storage_contract_tests!(super::TestStore);
}

/// A server with JetStream on files of its own; the dir goes when the test
/// ends, after the server.
fn server() -> (tempfile::TempDir, NatsServer) {
    let tmp = tempfile::tempdir().unwrap();
    let server = NatsServer::start(tmp.path(), true);
    (tmp, server)
}

/// A store (one host) on `server` under `prefix`.
fn open(server: &NatsServer, prefix: &str) -> NatsStore {
    NatsStore::open(&config(server, prefix), Durability::Flush).unwrap()
}

/// Why a store with `config` does not open, as the operator reads it.
fn open_error(config: &NatsConfig) -> String {
    NatsStore::open(config, Durability::Flush)
        .unwrap_err()
        .to_string()
}

fn config(server: &NatsServer, prefix: &str) -> NatsConfig {
    NatsConfig {
        prefix: prefix.to_string(),
        timeout: Duration::from_secs(5),
        ..NatsConfig::new(server.url())
    }
}

fn entries(texts: &[&str]) -> Vec<Vec<u8>> {
    texts.iter().map(|t| t.as_bytes().to_vec()).collect()
}

/// Two stores (two hosts) on one server append to one log with the same
/// expected sequence at the same moment: the server lets exactly one in,
/// the other gets the conflict, and the log holds the winner's entries only.
#[test]
fn two_hosts_racing_on_one_log_cannot_both_append() {
    let (_tmp, server) = server();
    let hosts: Vec<Arc<NatsStore>> = (0..2).map(|_| Arc::new(open(&server, "race"))).collect();
    for round in 0..30u64 {
        race_once(&hosts, "session-1", round, |i| {
            entries(&[&format!("host {i}"), "second"])
        });
    }
    // Either host reads the same log: 60 entries, no gap, no append twice.
    for host in &hosts {
        let all = host.read("session-1", 1, usize::MAX).unwrap();
        assert_eq!(all.len(), 60);
        assert!(all.iter().zip(1u64..).all(|((seq, _), want)| *seq == want));
        assert!(all.iter().skip(1).step_by(2).all(|(_, e)| e == b"second"));
    }
}

/// One round of a race: every host appends `entries(i)` (two entries) to
/// `stream` at head `round * 2` at the same moment; exactly one wins and the
/// other gets the conflict naming the winner's head.
pub(super) fn race_once(
    hosts: &[Arc<NatsStore>],
    stream: &'static str,
    round: u64,
    entries: impl Fn(usize) -> Vec<Vec<u8>>,
) {
    let batches: Vec<_> = (0..hosts.len()).map(entries).collect();
    let results = at_once(hosts.len(), |i| {
        hosts[i].append(stream, round * 2, &batches[i])
    });
    let wins = results
        .iter()
        .filter(|r| r.as_ref().is_ok_and(|&last| last == round * 2 + 2))
        .count();
    let conflicts = results
        .iter()
        .filter(|r| {
            matches!(r, Err(StorageError::Conflict { expected, actual, .. })
                if *expected == round * 2 && *actual == round * 2 + 2)
        })
        .count();
    assert_eq!(
        (wins, conflicts),
        (1, hosts.len() - 1),
        "round {round}: {results:?}"
    );
}

#[test]
fn a_server_that_is_down_is_named_in_the_error() {
    // A port nothing listens on: bound, then released.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("nats://127.0.0.1:{port}");
    let config = NatsConfig {
        timeout: Duration::from_secs(2),
        ..NatsConfig::new(url.clone())
    };
    let err = open_error(&config);
    assert!(
        err.contains(&format!("cannot reach the NATS server at `{url}`")),
        "{err}"
    );
    assert!(err.contains("fix `url`"), "{err}");
}

#[test]
fn a_server_without_jetstream_is_refused_with_how_to_enable_it() {
    let tmp = tempfile::tempdir().unwrap();
    let server = NatsServer::start(tmp.path(), false);
    let err = open_error(&config(&server, "glovebox"));
    assert!(
        err.contains(&format!("at `{}` has no JetStream", server.url())),
        "{err}"
    );
    assert!(err.contains("nats-server -js"), "{err}");
}

/// A log stream that someone configured to drop messages (or with other
/// replicas) is refused at open, naming the stream and how to fix it.
#[test]
fn an_incompatible_log_stream_is_refused_at_open() {
    let (_tmp, server) = server();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let client = async_nats::connect(server.url()).await.unwrap();
        let js = async_nats::jetstream::new(client);
        js.create_stream(async_nats::jetstream::stream::Config {
            name: "team_log".to_string(),
            subjects: vec!["team.log.>".to_string()],
            max_messages: 1000,
            storage: async_nats::jetstream::stream::StorageType::Memory,
            ..Default::default()
        })
        .await
        .unwrap();
    });
    let err = open_error(&config(&server, "team"));
    assert!(err.contains("the JetStream stream `team_log`"), "{err}");
    assert!(err.contains("in memory"), "{err}");
    assert!(err.contains("would drop log entries"), "{err}");
    assert!(err.contains("nats stream edit team_log"), "{err}");
    // R3 asked of a stream that has one copy.
    let err = open_error(&NatsConfig {
        replicas: 3,
        ..config(&server, "other")
    });
    assert!(err.contains("`other_log`"), "{err}");
    // A prefix NATS names cannot hold.
    let err = open_error(&config(&server, "a.b"));
    assert!(err.contains("`prefix`"), "{err}");
}

/// Two deployments with their own prefixes share one server and never see
/// each other's logs or buckets.
#[test]
fn deployments_with_other_prefixes_share_a_server_apart() {
    let (_tmp, server) = server();
    let a = open(&server, "team-a");
    let b = open(&server, "team-b");
    a.append("s", 0, &entries(&["from a"])).unwrap();
    a.put("jobs", "j", b"a's job").unwrap();
    assert_eq!(b.last_seq("s").unwrap(), 0);
    assert!(b.streams().unwrap().is_empty());
    assert!(b.buckets().unwrap().is_empty());
    assert_eq!(b.get("jobs", "j").unwrap(), None);
    b.append("s", 0, &entries(&["from b", "again"])).unwrap();
    assert_eq!(a.read("s", 1, 10).unwrap(), vec![(1, b"from a".to_vec())]);
    assert_eq!(a.buckets().unwrap(), vec!["jobs"]);
}

/// nats-server killed (SIGKILL) and started again on its files, under a
/// store that stays open: every acknowledged write is there, and the store
/// goes on appending once the client has reconnected.
#[test]
fn a_restarted_server_keeps_every_acknowledged_write() {
    let (_tmp, server) = server();
    let store = open(&server, "glovebox");
    let mut last = 0;
    for i in 0..200u32 {
        last = store
            .append("s", last, &[i.to_be_bytes().to_vec(), vec![7; 100]])
            .unwrap();
    }
    store.put("checkpoints", "s", b"state at 400").unwrap();
    server.restart();
    // The client reconnects on its own; the first calls may fail while it does.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let head = loop {
        match store.last_seq("s") {
            Ok(head) => break head,
            Err(e) => {
                assert!(std::time::Instant::now() < deadline, "no reconnect: {e}");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    };
    assert_eq!(head, 400);
    let all = store.read("s", 1, usize::MAX).unwrap();
    assert_eq!(all.len(), 400);
    assert!(
        all.chunks(2)
            .zip(0u32..)
            .all(|(pair, i)| pair[0].1 == i.to_be_bytes() && pair[1].1 == [7; 100])
    );
    assert_eq!(
        store.get("checkpoints", "s").unwrap(),
        Some(b"state at 400".to_vec())
    );
    assert_eq!(store.append("s", 400, &entries(&["after"])).unwrap(), 401);
    // A fresh store (another host) sees the same.
    let other = open(&server, "glovebox");
    assert_eq!(other.read("s", 399, 10).unwrap().len(), 3);
}

/// Reads from the middle of a long log find the message holding `from`
/// (a binary search over the stream), whatever the batch sizes.
#[test]
fn reads_from_anywhere_in_a_long_log_of_uneven_appends() {
    let (_tmp, server) = server();
    let store = open(&server, "glovebox");
    // Other logs' messages interleaved, so stream sequences are not the log's.
    let mut last = 0;
    for i in 0..120u64 {
        let n = i % 5 + 1;
        let batch: Vec<Vec<u8>> = (0..n)
            .map(|k| (last + k + 1).to_be_bytes().to_vec())
            .collect();
        last = store.append("long", last, &batch).unwrap();
        store
            .append(
                &format!("other-{}", i % 3),
                store.last_seq(&format!("other-{}", i % 3)).unwrap(),
                &entries(&["x"]),
            )
            .unwrap();
    }
    assert_eq!(last, (0..120u64).map(|i| i % 5 + 1).sum::<u64>());
    for from in [1, 2, 3, 7, 100, 181, last - 1, last] {
        for max in [1, 3, 50, usize::MAX] {
            let got = store.read("long", from, max).unwrap();
            let want: Vec<u64> = (from..=last).take(max).collect();
            let seqs: Vec<u64> = got.iter().map(|(s, _)| *s).collect();
            assert_eq!(seqs, want, "from {from}, max {max}");
            assert!(got.iter().all(|(s, e)| e == &s.to_be_bytes()));
        }
    }
}

/// The trait is called from the gateway's tokio threads too: a store works
/// there, and can be dropped there.
#[test]
fn the_store_works_and_drops_inside_another_tokio_runtime() {
    let (_tmp, server) = server();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let url = server.url();
    runtime.block_on(async move {
        let store = NatsStore::open(&NatsConfig::new(url), Durability::Flush).unwrap();
        store.append("s", 0, &entries(&["a"])).unwrap();
        assert_eq!(store.read("s", 1, 1).unwrap().len(), 1);
        drop(store);
        // A failed open leaves nothing behind that panics here either.
        let closed = NatsConfig {
            timeout: Duration::from_secs(1),
            ..NatsConfig::new("nats://127.0.0.1:1")
        };
        assert!(NatsStore::open(&closed, Durability::Flush).is_err());
    });
}

/// Two stores (two hosts) on one server set one key from the same value at
/// the same moment: the server lets exactly one in; the key holds its value.
/// Hosts started together each find the log stream and a bucket absent and
/// each create them: every one of them opens and writes, none fails with the
/// server's "subjects overlap" meant for the creation that came second.
#[test]
fn hosts_starting_together_all_open_the_streams_and_buckets_one_of_them_made() {
    let _heavy = heavy();
    let (_tmp, server) = server();
    for round in 0..100 {
        let prefix = format!("together{round}");
        let barrier = Arc::new(Barrier::new(4));
        let results: Vec<Result<(), StorageError>> = (0..4)
            .map(|i| {
                let (config, barrier) = (config(&server, &prefix), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    let opened = NatsStore::open(&config, Durability::Flush);
                    barrier.wait();
                    opened?.put("made-together", &format!("host-{i}"), b"here")
                })
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|h| h.join().unwrap())
            .collect();
        assert!(
            results.iter().all(Result::is_ok),
            "round {round}: {results:?}"
        );
        let host = open(&server, &prefix);
        assert_eq!(
            host.scan("made-together", "").unwrap().len(),
            4,
            "round {round}"
        );
    }
}

#[test]
fn two_hosts_racing_on_one_key_cannot_both_set_it() {
    let (_tmp, server) = server();
    let hosts: Vec<Arc<NatsStore>> = (0..2).map(|_| Arc::new(open(&server, "cas"))).collect();
    let mut current: Option<Vec<u8>> = None;
    for round in 0..30u32 {
        let results: Vec<bool> = at_once(2, |i| {
            let value = format!("round {round} host {i}");
            hosts[i]
                .put_if(
                    "leases",
                    "s-1",
                    Swap::new(current.as_deref(), Some(value.as_bytes())),
                )
                .unwrap()
        });
        let winners: Vec<usize> = (0..2).filter(|&i| results[i]).collect();
        assert_eq!(winners.len(), 1, "round {round}: {results:?}");
        let want = format!("round {round} host {}", winners[0]).into_bytes();
        for host in &hosts {
            assert_eq!(host.get("leases", "s-1").unwrap().as_ref(), Some(&want));
        }
        current = Some(want);
    }
}

/// A scan while another host keeps rewriting keys of the bucket sees every
/// key once, and ends.
#[test]
fn a_scan_under_concurrent_writes_ends_with_every_key() {
    let _heavy = heavy();
    let (_tmp, server) = server();
    let reader = open(&server, "scanw");
    let writer = Arc::new(open(&server, "scanw"));
    for k in 0..20 {
        reader
            .put("jobs", &format!("job-{k:02}"), b"queued")
            .unwrap();
    }
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writing = {
        let (writer, stop) = (writer.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                let key = format!("job-{:02}", n % 20);
                let old = writer.get("jobs", &key).unwrap();
                writer
                    .put_if(
                        "jobs",
                        &key,
                        Swap::new(old.as_deref(), Some(format!("v{n}").as_bytes())),
                    )
                    .unwrap();
                n += 1;
            }
        })
    };
    for round in 0..200 {
        let keys: Vec<String> = reader
            .scan("jobs", "")
            .unwrap_or_else(|e| panic!("round {round}: {e}"))
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        assert_eq!(keys.len(), 20, "round {round}: {keys:?}");
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    writing.join().unwrap();
}
