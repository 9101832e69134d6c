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
//!
//! [`Storage`]: glovebox_store::Storage
//! [`Storage::put_if`]: glovebox_store::Storage::put_if
//! [`Storage::work_queue`]: glovebox_store::Storage::work_queue

#![forbid(unsafe_code)]

mod buckets;
mod config;
mod connect;
mod inner;
mod logs;
mod names;
mod queue;
mod record;
mod store;
mod streams;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
#[cfg(test)]
mod tests;

pub use config::{Auth, NatsConfig};
pub use names::{PrefixError, check_prefix};
pub use store::NatsStore;
