//! Work queues: items several hosts consume, each delivered to one consumer
//! at a time and delivered again unless acknowledged in time. What a store
//! several hosts share offers for work any of them may do (the background
//! jobs of `glovebox::jobs`); the embedded stores have none, since one
//! process holds them and its own queue in memory does the same.
//!
//! The shape is JetStream's work-queue stream with one durable pull
//! consumer: push is a publish, pull a fetch of one message, and a delivery
//! is acknowledged (done), handed back (`nak` with a delay: another
//! consumer, or the same one later, gets it again), or kept alive (`in
//! progress`: its ack wait starts over). A consumer that dies holding a
//! delivery acknowledges nothing, so the item comes back after the ack
//! wait: at least once, never lost. What an item stands for must therefore
//! be safe to see twice; the jobs' records (a compare-and-set per start)
//! make it so.

use std::time::Duration;

use crate::StorageError;

/// A work queue in a store several hosts share, fair between groups.
pub trait WorkQueue: Send + Sync + 'static {
    /// Adds `item` to `group`'s items (a principal's jobs); returns once
    /// the store holds it.
    fn push(&self, item: &str, group: &str) -> Result<(), StorageError>;

    /// The next item for this consumer, waiting for one at most `wait`;
    /// `None` when none came. Groups take turns: the item comes from the
    /// group after the one this consumer took its last item from (in
    /// order, round robin), so a group with many items does not keep
    /// another's first one waiting; within a group, first in first out.
    fn pull(&self, wait: Duration) -> Result<Option<Box<dyn Delivery>>, StorageError>;

    /// How long a delivery stays this consumer's without an
    /// acknowledgement or [`Delivery::in_progress`] before it is delivered
    /// again.
    fn ack_wait(&self) -> Duration;
}

/// One item handed to one consumer.
pub trait Delivery: Send + Sync + 'static {
    /// The item, as pushed.
    fn item(&self) -> &str;

    /// How many times the item has been delivered, this time included.
    fn delivered(&self) -> u64;

    /// Done: the item is never delivered again.
    fn ack(&self) -> Result<(), StorageError>;

    /// Not now: the item is delivered again (to any consumer) after `delay`.
    fn nak(&self, delay: Duration) -> Result<(), StorageError>;

    /// Still being worked on: the ack wait starts over.
    fn in_progress(&self) -> Result<(), StorageError>;
}
