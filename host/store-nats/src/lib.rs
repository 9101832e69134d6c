//! Glovebox's storage on NATS JetStream, so that several hosts can share
//! one store (issue 17): the [`Storage`] trait over a JetStream server or
//! cluster, through the maintained `async-nats` client.
//!
//! Layout, for a deployment prefix `P` (several deployments share a cluster
//! under different prefixes):
//!
//! - every log stream of the trait is a subject `P.log.<name>` of one
//!   JetStream stream `P_log` (file storage, `replicas` copies, no limits,
//!   no message deletes). One append is one message holding all of its
//!   entries (see `record.rs`), published with
//!   `Nats-Expected-Last-Subject-Sequence` set to the stream sequence of the
//!   subject's last message: the server appends it only if no other writer
//!   got there first, so two hosts racing on one session cannot both append.
//!   The trait's own sequence numbers (1.. per log) travel in a header.
//! - every bucket of the trait is a KV bucket `P_b<name>` (file storage,
//!   `replicas` copies, history 1), created at its first put. A
//!   compare-and-set ([`Storage::put_if`]) reads the key's last message and
//!   publishes over it with `Nats-Expected-Last-Subject-Sequence` set to
//!   that message's stream sequence (the KV revision; 0 for a key never
//!   written), so the server refuses it when another host wrote the key
//!   in between.
//!
//! - every work queue of the trait ([`Storage::work_queue`]: the background
//!   jobs) is a work-queue stream `P_q_<name>` with a subject and a durable
//!   consumer per group (principal) that every host pulls from, groups in
//!   turn (`queue.rs`).
//!
//! Names are escaped into what NATS allows (`names.rs`). Every write
//! returns once JetStream has acknowledged it, that is, once the stream's
//! leader and (with R3) a majority of its replicas hold it. Reads go to the
//! stream leader (not `allow_direct` replicas), so a read sees every write
//! acknowledged before it.
//!
//! The trait is synchronous; the client is async. A store owns a small tokio
//! runtime of its own; each call runs on it and the calling thread waits on a
//! channel, so the trait works from any thread, in or out of another tokio
//! runtime, like the embedded backends do.

#![forbid(unsafe_code)]

mod config;
mod connect;
mod logs;
mod names;
mod queue;
mod record;
mod streams;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_nats::jetstream::{self, ErrorCode, kv, stream};
use async_nats::{Client, HeaderMap};
use bytes::Bytes;
use futures_util::StreamExt;
use glovebox_store::{Durability, Result, Storage, StorageError, Swap};

use streams::get_or_join_stream;

pub use config::{Auth, NatsConfig};
pub use names::{PrefixError, check_prefix};

/// The store on NATS JetStream.
pub struct NatsStore {
    /// Taken in `drop`, to shut it down without waiting (dropping a runtime
    /// inside another one would panic).
    runtime: Option<tokio::runtime::Runtime>,
    handle: tokio::runtime::Handle,
    inner: Arc<Inner>,
}

impl fmt::Debug for NatsStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NatsStore")
            .field("url", &self.inner.url)
            .field("prefix", &self.inner.prefix)
            .field("replicas", &self.inner.replicas)
            .finish_non_exhaustive()
    }
}

struct Inner {
    url: String,
    prefix: String,
    replicas: usize,
    timeout: Duration,
    client: Client,
    js: jetstream::Context,
    /// The stream holding every log: `<prefix>_log`.
    log: stream::Stream,
    /// The largest message the server takes.
    max_payload: usize,
    /// The KV buckets met so far, by the trait's bucket name.
    buckets: Mutex<HashMap<String, kv::Store>>,
}

impl Drop for NatsStore {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            // Every write was acknowledged before its call returned: nothing
            // is left to flush.
            runtime.shutdown_background();
        }
    }
}

impl NatsStore {
    /// Connects to the server, checks that JetStream is there, and creates
    /// the log stream (or checks the one there fits). The errors say what
    /// to fix: the URL, the credentials, JetStream, the stream's config.
    pub fn open(config: &NatsConfig, durability: Durability) -> Result<NatsStore, StorageError> {
        check_prefix(&config.prefix).map_err(|e| StorageError::Io(format!("`prefix`: {e}")))?;
        if !(1..=5).contains(&config.replicas) {
            return Err(StorageError::Io(format!(
                "`replicas` is {}: JetStream keeps 1 to 5 copies (1 for one server, 3 for a cluster)",
                config.replicas
            )));
        }
        if durability == Durability::Strict {
            tracing::warn!(
                "durability = \"strict\" with the nats backend: a write is acknowledged once JetStream holds it; whether that survives a power cut is the NATS servers' choice (`sync_interval: always` from NATS 2.10 on, or replicas on separate machines): see docs/durability.md"
            );
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("glovebox-nats")
            .enable_all()
            .build()
            .map_err(|e| {
                StorageError::Io(format!("cannot start the NATS client's runtime: {e}"))
            })?;
        let handle = runtime.handle().clone();
        let inner = match run_on(&handle, connect::connect(config.clone())) {
            Ok(inner) => inner,
            Err(e) => {
                // Not dropped: that panics on a thread of another runtime.
                runtime.shutdown_background();
                return Err(e);
            }
        };
        Ok(NatsStore {
            runtime: Some(runtime),
            handle,
            inner: Arc::new(inner),
        })
    }

    /// The deployment prefix.
    pub fn prefix(&self) -> &str {
        &self.inner.prefix
    }

    /// Runs `op` on the store's runtime and waits for it.
    fn run<T, F>(&self, op: impl FnOnce(Arc<Inner>) -> F) -> Result<T, StorageError>
    where
        T: Send + 'static,
        F: Future<Output = Result<T, StorageError>> + Send + 'static,
    {
        run_on(&self.handle, op(self.inner.clone()))
    }
}

/// Runs `fut` on `handle` and blocks the calling thread until it is done.
/// Not `Handle::block_on`: that panics on a thread of another runtime, and
/// the gateway may call the store from one.
fn run_on<T, F>(handle: &tokio::runtime::Handle, fut: F) -> Result<T, StorageError>
where
    T: Send + 'static,
    F: Future<Output = Result<T, StorageError>> + Send + 'static,
{
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    handle.spawn(async move {
        let _ = tx.send(fut.await);
    });
    rx.recv()
        .unwrap_or_else(|_| Err(StorageError::Io("the NATS client has stopped".to_string())))
}

/// How many keys a scan reads at once.
const SCAN_READS: usize = 64;

fn io(what: impl fmt::Display, e: impl fmt::Display) -> StorageError {
    StorageError::Io(format!("{what}: {e}"))
}

impl Inner {
    /// The KV bucket holding `bucket`; created when `create`, else `None`
    /// when it does not exist (reads and deletes create nothing).
    async fn bucket(&self, bucket: &str, create: bool) -> Result<Option<kv::Store>, StorageError> {
        if let Some(store) = self.buckets.lock().unwrap().get(bucket) {
            return Ok(Some(store.clone()));
        }
        let name = names::kv_bucket(&self.prefix, bucket);
        let failed = |e: &dyn fmt::Display| {
            io(
                format!(
                    "cannot open bucket `{bucket}` (KV `{name}`) on NATS at `{}`",
                    self.url
                ),
                e,
            )
        };
        let exists = match self.js.get_stream(format!("KV_{name}")).await {
            Ok(_) => true,
            Err(e) => match e.kind() {
                jetstream::context::GetStreamErrorKind::JetStream(err)
                    if err.error_code() == ErrorCode::STREAM_NOT_FOUND =>
                {
                    false
                }
                _ => return Err(failed(&e)),
            },
        };
        let store = if exists {
            self.js.get_key_value(&name).await.map_err(|e| failed(&e))?
        } else if create {
            // The stream `create_key_value` makes (ADR-8's KV layout), made
            // here because that call first reads the account's info in a
            // form servers before 2.10 do not send. Created only if absent,
            // so hosts racing to make it get the same one.
            let config = stream::Config {
                name: format!("KV_{name}"),
                description: Some(format!("Glovebox bucket `{bucket}` (docs/durability.md)")),
                subjects: vec![format!("$KV.{name}.>")],
                max_messages_per_subject: 1,
                max_messages: -1,
                max_bytes: -1,
                max_message_size: -1,
                storage: stream::StorageType::File,
                num_replicas: self.replicas,
                allow_rollup: true,
                deny_delete: true,
                allow_direct: true,
                discard: stream::DiscardPolicy::New,
                ..Default::default()
            };
            get_or_join_stream(&self.js, config)
                .await
                .map_err(|e| failed(&e))?;
            self.js.get_key_value(&name).await.map_err(|e| failed(&e))?
        } else {
            return Ok(None);
        };
        self.buckets
            .lock()
            .unwrap()
            .insert(bucket.to_string(), store.clone());
        Ok(Some(store))
    }

    async fn put(
        self: Arc<Self>,
        bucket: String,
        key: String,
        value: Bytes,
    ) -> Result<(), StorageError> {
        let store = self.bucket(&bucket, true).await?.expect("created");
        if value.len() > self.max_payload {
            return Err(StorageError::Io(format!(
                "a value of {} bytes for `{key}` in bucket `{bucket}` is larger than the NATS server's `max_payload` ({} bytes): raise `max_payload` in the server's config (up to 64 MB)",
                value.len(),
                self.max_payload
            )));
        }
        let subject = format!("{}{}", store.prefix, names::to_token(&key));
        let message = jetstream::message::PublishMessage::build().payload(value);
        self.publish(&subject, message).await.map_err(|e| {
            io(
                format!(
                    "putting `{key}` in bucket `{bucket}` was not acknowledged by NATS at `{}` (it may or may not be stored)",
                    self.url
                ),
                e,
            )
        })?;
        Ok(())
    }

    async fn get(
        self: Arc<Self>,
        bucket: String,
        key: String,
    ) -> Result<Option<Vec<u8>>, StorageError> {
        let Some(store) = self.bucket(&bucket, false).await? else {
            return Ok(None);
        };
        // From the stream leader (not a direct get, which a replica may
        // answer before it has the latest put).
        let subject = format!("{}{}", store.prefix, names::to_token(&key));
        match store.stream.get_last_raw_message_by_subject(&subject).await {
            Ok(m) if is_kv_delete(Some(&m.headers)) => Ok(None),
            Ok(m) => Ok(Some(m.payload.to_vec())),
            Err(e) if matches!(e.kind(), stream::LastRawMessageErrorKind::NoMessageFound) => {
                Ok(None)
            }
            Err(e) => Err(io(
                format!(
                    "cannot get `{key}` from bucket `{bucket}` on NATS at `{}`",
                    self.url
                ),
                e,
            )),
        }
    }

    /// Compare-and-set on the key's subject: read its last message (its
    /// value, and its stream sequence, the KV revision), compare, and
    /// publish the new value (or a delete marker) with
    /// `Nats-Expected-Last-Subject-Sequence` set to that revision (0: no
    /// message yet). The server stores it only if nothing was written to the
    /// key since the read; if something was, the value is compared again.
    async fn put_if(
        self: Arc<Self>,
        bucket: String,
        key: String,
        expected: Option<Bytes>,
        value: Option<Bytes>,
    ) -> Result<bool, StorageError> {
        let create = expected.is_none() && value.is_some();
        let Some(store) = self.bucket(&bucket, create).await? else {
            // No bucket: the key is absent, and removing it changes nothing.
            return Ok(expected.is_none());
        };
        if let Some(value) = &value
            && value.len() > self.max_payload
        {
            return Err(StorageError::Io(format!(
                "a value of {} bytes for `{key}` in bucket `{bucket}` is larger than the NATS server's `max_payload` ({} bytes): raise `max_payload` in the server's config (up to 64 MB)",
                value.len(),
                self.max_payload
            )));
        }
        let failed = |e: &dyn fmt::Display| {
            io(
                format!(
                    "cannot set `{key}` in bucket `{bucket}` on NATS at `{}`",
                    self.url
                ),
                e,
            )
        };
        let subject = format!("{}{}", store.prefix, names::to_token(&key));
        loop {
            let (revision, current) =
                match store.stream.get_last_raw_message_by_subject(&subject).await {
                    Ok(m) if is_kv_delete(Some(&m.headers)) => (m.sequence, None),
                    Ok(m) => (m.sequence, Some(m.payload)),
                    Err(e)
                        if matches!(e.kind(), stream::LastRawMessageErrorKind::NoMessageFound) =>
                    {
                        (0, None)
                    }
                    Err(e) => return Err(failed(&e)),
                };
            if current.as_deref() != expected.as_deref() {
                return Ok(false);
            }
            // As for an append (see `Inner::append`): on a cluster the
            // expected sequence alone lets two racers both pass.
            let id = format!("{subject}@{revision}");
            let message = jetstream::message::PublishMessage::build()
                .message_id(id.as_str())
                .expected_last_subject_sequence(revision);
            let message = match &value {
                Some(value) => message.payload(value.clone()),
                // Absent already: nothing to remove.
                None if current.is_none() => return Ok(true),
                None => message.payload(Bytes::new()).header("KV-Operation", "DEL"),
            };
            match self.publish(&subject, message).await {
                // Another writer's value over this revision got there first
                // (it may still be replicating): compare with it once it is.
                Ok(ack) if ack.duplicate => {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                Ok(_) => return Ok(true),
                // Written since the read: compare with what is there now.
                Err(e) if e.kind() == jetstream::context::PublishErrorKind::WrongLastSequence => {}
                Err(e) => {
                    return Err(io(
                        format!(
                            "setting `{key}` in bucket `{bucket}` was not acknowledged by NATS at `{}` (it may or may not be stored)",
                            self.url
                        ),
                        e,
                    ));
                }
            }
        }
    }

    async fn delete(self: Arc<Self>, bucket: String, key: String) -> Result<(), StorageError> {
        let Some(store) = self.bucket(&bucket, false).await? else {
            return Ok(());
        };
        store.delete(names::to_token(&key)).await.map_err(|e| {
            io(
                format!(
                    "cannot delete `{key}` from bucket `{bucket}` on NATS at `{}`",
                    self.url
                ),
                e,
            )
        })
    }

    async fn scan(
        self: Arc<Self>,
        bucket: String,
        prefix: String,
    ) -> Result<Vec<(String, Vec<u8>)>, StorageError> {
        Ok(self.scan_listed(bucket, prefix, None, None).await?.0)
    }

    async fn scan_page(
        self: Arc<Self>,
        bucket: String,
        prefix: String,
        mut after: Option<String>,
        limit: usize,
    ) -> Result<Vec<(String, Vec<u8>)>, StorageError> {
        // A listed key whose last message is a delete marker has no value,
        // so one listing may fill less than the page: list again after the
        // last key listed until the page is full or the bucket ends (a short
        // page is the end, as on every backend).
        let mut page = Vec::new();
        while page.len() < limit {
            let want = limit - page.len();
            let (found, last_listed) = self
                .clone()
                .scan_listed(bucket.clone(), prefix.clone(), after.clone(), Some(want))
                .await?;
            page.extend(found);
            match last_listed {
                Some(last) => after = Some(last),
                None => break,
            }
        }
        Ok(page)
    }

    /// The keys of `bucket` with `prefix` after `after`, the first `limit`
    /// of them listed (all without a limit), with their values, in key
    /// order; and, when `limit` keys were listed, the last of them (keys
    /// may follow it). A listed key that holds no value (deleted) is left
    /// out, so fewer than `limit` may come back while more follow.
    async fn scan_listed(
        self: Arc<Self>,
        bucket: String,
        prefix: String,
        after: Option<String>,
        limit: Option<usize>,
    ) -> Result<(Vec<(String, Vec<u8>)>, Option<String>), StorageError> {
        let Some(store) = self.bucket(&bucket, false).await? else {
            return Ok((Vec::new(), None));
        };
        let failed = |e: &dyn fmt::Display| {
            io(
                format!("cannot scan bucket `{bucket}` on NATS at `{}`", self.url),
                e,
            )
        };
        // The keys, as the server lists the bucket's subjects (paged), then
        // the latest value of each, asked for many at a time. Not one
        // ordered consumer over the bucket: other hosts write while a scan
        // runs, and a key rewritten before the consumer reached it is
        // delivered after the rest (or twice), so such a scan cannot tell
        // when it has seen every key. A key written after the listing may
        // be missed, one removed after it is left out: a scan is the bucket
        // as of its start, each value as of its read.
        //
        // The server lists subjects in no order, so a page keeps the
        // `limit` smallest keys seen so far (a max-heap of them): what it
        // holds is one page of names, however many keys the bucket has.
        let mut listing = store
            .stream
            .info_with_subjects(format!("{}>", store.prefix))
            .await
            .map_err(|e| failed(&e))?;
        let mut kept: std::collections::BinaryHeap<(String, String)> =
            std::collections::BinaryHeap::new();
        while let Some(listed) = listing.next().await {
            let (subject, _) = listed.map_err(|e| failed(&e))?;
            let key = subject
                .strip_prefix(store.prefix.as_str())
                .and_then(names::from_token)
                .ok_or_else(|| {
                    StorageError::Corrupt(format!(
                        "subject `{subject}` in bucket `{bucket}` is not a glovebox key"
                    ))
                })?;
            if !key.starts_with(prefix.as_str())
                || after.as_deref().is_some_and(|after| key.as_str() <= after)
            {
                continue;
            }
            if let Some(limit) = limit
                && kept.len() >= limit
            {
                if kept.peek().is_none_or(|(largest, _)| key >= *largest) {
                    continue;
                }
                kept.pop();
            }
            kept.push((key, subject));
        }
        let last_listed = match limit {
            Some(limit) if kept.len() >= limit => kept.peek().map(|(key, _)| key.clone()),
            _ => None,
        };
        let reads = kept.into_iter().map(|(key, subject)| {
            let stream = &store.stream;
            async move {
                match stream.get_last_raw_message_by_subject(&subject).await {
                    Ok(m) if is_kv_delete(Some(&m.headers)) => Ok(None),
                    Ok(m) => Ok(Some((key, m.payload.to_vec()))),
                    Err(e)
                        if matches!(e.kind(), stream::LastRawMessageErrorKind::NoMessageFound) =>
                    {
                        Ok(None)
                    }
                    Err(e) => Err(failed(&e)),
                }
            }
        });
        let mut out: Vec<(String, Vec<u8>)> = futures_util::stream::iter(reads)
            .buffer_unordered(SCAN_READS)
            .filter_map(|read| std::future::ready(read.transpose()))
            .collect::<Vec<Result<_, _>>>()
            .await
            .into_iter()
            .collect::<Result<_, _>>()?;
        out.sort();
        Ok((out, last_listed))
    }

    async fn buckets(self: Arc<Self>) -> Result<Vec<String>, StorageError> {
        let mut streams = self.js.stream_names();
        let mut out = Vec::new();
        while let Some(name) = streams.next().await {
            let name = name.map_err(|e| {
                io(
                    format!("cannot list the buckets on NATS at `{}`", self.url),
                    e,
                )
            })?;
            if let Some(bucket) = names::bucket_of_kv_stream(&self.prefix, &name) {
                out.push(bucket);
            }
        }
        out.sort();
        Ok(out)
    }
}

/// Whether a KV message is a delete or purge marker.
fn is_kv_delete(headers: Option<&HeaderMap>) -> bool {
    headers
        .and_then(|h| h.get("KV-Operation"))
        .is_some_and(|op| matches!(op.as_str(), "DEL" | "PURGE"))
}

impl Storage for NatsStore {
    fn work_queue(
        &self,
        name: &str,
        ack_wait: Duration,
    ) -> Result<Option<Arc<dyn glovebox_store::WorkQueue>>> {
        let queue =
            queue::NatsQueue::open(self.handle.clone(), self.inner.clone(), name, ack_wait)?;
        Ok(Some(Arc::new(queue)))
    }

    fn append(&self, stream: &str, expected_last: u64, entries: &[Vec<u8>]) -> Result<u64> {
        names::check_stream_name(stream)?;
        let payload = if entries.is_empty() {
            None
        } else {
            Some((record::encode(entries)?, entries.len() as u64))
        };
        let stream = stream.to_string();
        self.run(move |inner| inner.append(stream, expected_last, payload))
    }

    fn read(&self, stream: &str, from: u64, max: usize) -> Result<Vec<(u64, Vec<u8>)>> {
        names::check_stream_name(stream)?;
        let stream = stream.to_string();
        self.run(move |inner| inner.read(stream, from, max))
    }

    fn last_seq(&self, stream: &str) -> Result<u64> {
        names::check_stream_name(stream)?;
        let stream = stream.to_string();
        self.run(move |inner| inner.last_seq(stream))
    }

    fn streams(&self) -> Result<Vec<String>> {
        self.run(|inner| inner.streams())
    }

    fn put(&self, bucket: &str, key: &str, value: &[u8]) -> Result<()> {
        let (bucket, key, value) = (
            bucket.to_string(),
            key.to_string(),
            Bytes::copy_from_slice(value),
        );
        self.run(move |inner| inner.put(bucket, key, value))
    }

    fn get(&self, bucket: &str, key: &str) -> Result<Option<Vec<u8>>> {
        let (bucket, key) = (bucket.to_string(), key.to_string());
        self.run(move |inner| inner.get(bucket, key))
    }

    fn delete(&self, bucket: &str, key: &str) -> Result<()> {
        let (bucket, key) = (bucket.to_string(), key.to_string());
        self.run(move |inner| inner.delete(bucket, key))
    }

    fn put_if(&self, bucket: &str, key: &str, swap: Swap<'_>) -> Result<bool> {
        let (bucket, key) = (bucket.to_string(), key.to_string());
        let expected = swap.from.map(Bytes::copy_from_slice);
        let value = swap.to.map(Bytes::copy_from_slice);
        self.run(move |inner| inner.put_if(bucket, key, expected, value))
    }

    fn scan(&self, bucket: &str, prefix: &str) -> Result<Vec<(String, Vec<u8>)>> {
        let (bucket, prefix) = (bucket.to_string(), prefix.to_string());
        self.run(move |inner| inner.scan(bucket, prefix))
    }

    fn scan_page(
        &self,
        bucket: &str,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Vec<u8>)>> {
        let (bucket, prefix, after) = (
            bucket.to_string(),
            prefix.to_string(),
            after.map(str::to_string),
        );
        self.run(move |inner| inner.scan_page(bucket, prefix, after, limit))
    }

    fn buckets(&self) -> Result<Vec<String>> {
        self.run(|inner| inner.buckets())
    }
}
