//! The store: a small tokio runtime of its own, the state its calls share
//! (the client, the log stream, the buckets met so far), and the trait's
//! calls, each run on that runtime while the calling thread waits (see the
//! crate's docs).

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use glovebox_store::{Durability, Result, Storage, StorageError, Swap};

use crate::inner::{Inner, run_on};
use crate::{NatsConfig, check_prefix, connect, names, queue, record};

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
