//! What every call of a store shares ([`Inner`]: the client, the log
//! stream, the buckets met so far) and how a call runs: on the store's own
//! runtime while the calling thread waits ([`run_on`]), its errors worded by
//! [`io`].
//!
//! Why apart from `store.rs`: the store's parts (connecting, the logs, the
//! buckets, the work queues) all work on this, and the store is made of
//! them; kept here, each part depends on this file and the store on the
//! parts, with no way back.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::Mutex;
use std::time::Duration;

use async_nats::Client;
use async_nats::jetstream::{self, kv, stream};
use glovebox_store::StorageError;

/// The state a store's calls share.
pub(crate) struct Inner {
    pub(crate) url: String,
    pub(crate) prefix: String,
    pub(crate) replicas: usize,
    pub(crate) timeout: Duration,
    pub(crate) client: Client,
    pub(crate) js: jetstream::Context,
    /// The stream holding every log: `<prefix>_log`.
    pub(crate) log: stream::Stream,
    /// The largest message the server takes.
    pub(crate) max_payload: usize,
    /// The KV buckets met so far, by the trait's bucket name.
    pub(crate) buckets: Mutex<HashMap<String, kv::Store>>,
}

/// Runs `fut` on `handle` and blocks the calling thread until it is done.
/// Not `Handle::block_on`: that panics on a thread of another runtime, and
/// the gateway may call the store from one.
pub(crate) fn run_on<T, F>(handle: &tokio::runtime::Handle, fut: F) -> Result<T, StorageError>
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

/// A storage error: `what` failed with `e`.
pub(crate) fn io(what: impl fmt::Display, e: impl fmt::Display) -> StorageError {
    StorageError::Io(format!("{what}: {e}"))
}
