//! A store that counts what is read of it, around the real one (sled): how
//! the tests of the indexes show that a request reads a page, not a bucket.

use std::collections::BTreeMap;
use std::sync::Mutex;

use super::*;
use crate::storage::{FlushObserver, StorageError, Swap};

type Result<T> = std::result::Result<T, StorageError>;

/// The buckets of the sessions' records and their indexes.
pub(crate) const SESSION_BUCKETS: [&str; 6] = [
    "sessions",
    "sessions_by_start",
    "sessions_by_owner",
    "sessions_live",
    "sessions_by_name",
    "session_names",
];

/// What a counted store was asked, per bucket.
#[derive(Debug, Default, Clone)]
pub(crate) struct Reads {
    /// Whole-bucket scans (`Storage::scan`).
    pub scans: BTreeMap<String, usize>,
    /// Keys that pages (`Storage::scan_page`) returned.
    pub paged: BTreeMap<String, usize>,
    /// Values read one at a time (`Storage::get`).
    pub gets: BTreeMap<String, usize>,
}

impl Reads {
    pub fn scans(&self, bucket: &str) -> usize {
        self.scans.get(bucket).copied().unwrap_or(0)
    }
    pub fn paged(&self, bucket: &str) -> usize {
        self.paged.get(bucket).copied().unwrap_or(0)
    }
    pub fn gets(&self, bucket: &str) -> usize {
        self.gets.get(bucket).copied().unwrap_or(0)
    }
    /// Keys read from index and record buckets of the sessions in all.
    pub fn session_keys(&self) -> usize {
        SESSION_BUCKETS
            .iter()
            .map(|b| self.paged(b) + self.gets(b))
            .sum()
    }
}

pub(crate) struct Counting {
    pub inner: Arc<SledStore>,
    pub reads: Mutex<Reads>,
}

impl Counting {
    pub fn over(inner: Arc<SledStore>) -> Arc<Counting> {
        Arc::new(Counting {
            inner,
            reads: Mutex::new(Reads::default()),
        })
    }

    /// What was read since the last call.
    pub fn take(&self) -> Reads {
        std::mem::take(&mut *self.reads.lock().unwrap())
    }
}

impl Storage for Counting {
    fn append(&self, stream: &str, expected: u64, entries: &[Vec<u8>]) -> Result<u64> {
        self.inner.append(stream, expected, entries)
    }
    fn append_unsynced(&self, stream: &str, expected: u64, entries: &[Vec<u8>]) -> Result<u64> {
        self.inner.append_unsynced(stream, expected, entries)
    }
    fn sync(&self) -> Result<()> {
        self.inner.sync()
    }
    fn observe_flushes(&self, observer: FlushObserver) {
        self.inner.observe_flushes(observer)
    }
    fn read(&self, stream: &str, from: u64, max: usize) -> Result<Vec<(u64, Vec<u8>)>> {
        self.inner.read(stream, from, max)
    }
    fn last_seq(&self, stream: &str) -> Result<u64> {
        self.inner.last_seq(stream)
    }
    fn streams(&self) -> Result<Vec<String>> {
        self.inner.streams()
    }
    fn put(&self, bucket: &str, key: &str, value: &[u8]) -> Result<()> {
        self.inner.put(bucket, key, value)
    }
    fn put_unsynced(&self, bucket: &str, key: &str, value: &[u8]) -> Result<()> {
        self.inner.put_unsynced(bucket, key, value)
    }
    fn put_if(&self, bucket: &str, key: &str, swap: Swap<'_>) -> Result<bool> {
        self.inner.put_if(bucket, key, swap)
    }
    fn get(&self, bucket: &str, key: &str) -> Result<Option<Vec<u8>>> {
        *self
            .reads
            .lock()
            .unwrap()
            .gets
            .entry(bucket.into())
            .or_default() += 1;
        self.inner.get(bucket, key)
    }
    fn delete(&self, bucket: &str, key: &str) -> Result<()> {
        self.inner.delete(bucket, key)
    }
    fn scan(&self, bucket: &str, prefix: &str) -> Result<Vec<(String, Vec<u8>)>> {
        *self
            .reads
            .lock()
            .unwrap()
            .scans
            .entry(bucket.into())
            .or_default() += 1;
        self.inner.scan(bucket, prefix)
    }
    fn scan_page(
        &self,
        bucket: &str,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Vec<u8>)>> {
        let page = self.inner.scan_page(bucket, prefix, after, limit)?;
        *self
            .reads
            .lock()
            .unwrap()
            .paged
            .entry(bucket.into())
            .or_default() += page.len();
        Ok(page)
    }
    fn buckets(&self) -> Result<Vec<String>> {
        self.inner.buckets()
    }
    fn failure(&self) -> Option<String> {
        self.inner.failure()
    }
    fn generation(&self) -> u64 {
        self.inner.generation()
    }
}
