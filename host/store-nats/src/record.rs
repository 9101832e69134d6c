//! The payload of one log message: the entries of one append.
//!
//! An append is one JetStream message, so JetStream stores it whole or not
//! at all, and the expected-sequence check covers all of it. The message's
//! `Glovebox-First` header holds the sequence of its first entry; the
//! payload is the entry count (u32 BE), then per entry its length (u32 BE)
//! and bytes (the sled backend's record format).

use bytes::Bytes;
use glovebox_store::StorageError;

/// The header naming the trait sequence of a message's first entry.
pub const FIRST: &str = "Glovebox-First";

/// The payload of an append: the entries as one record (glovebox-store's
/// batch format, the sled backend's).
pub fn encode(entries: &[Vec<u8>]) -> Result<Bytes, StorageError> {
    glovebox_store::batch::encode(entries).map(Bytes::from)
}

pub use glovebox_store::batch::decode;
