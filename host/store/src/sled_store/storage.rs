//! The [`Storage`] trait on sled: reads straight from sled's trees, writes
//! applied in memory and then, unless the call is an `_unsynced` one,
//! waited on until a group-commit flush carries them (see the module docs
//! of `sled_store`).

use std::ops::Bound;

use super::records::{entry_key, key_seq, last_seq_of, malformed, prefix_end, stream_prefix};
use super::{SledStore, sled_error};
use crate::{Result, Storage, StorageError, Swap};

impl Storage for SledStore {
    fn observe_flushes(&self, observer: crate::FlushObserver) {
        self.commit.observe(observer);
    }

    fn append(&self, stream: &str, expected_last: u64, entries: &[Vec<u8>]) -> Result<u64> {
        let new_last = self.apply_append(stream, expected_last, entries)?;
        // An empty append only confirms the head, and still waits: that head
        // may be another writer's, not yet durable.
        self.wait_durable()?;
        Ok(new_last)
    }

    /// Applied, not flushed: the next flush (any writer's) carries it. sled's
    /// log is written in order, so a flush that makes a later write durable
    /// makes this one durable too.
    fn append_unsynced(&self, stream: &str, expected: u64, entries: &[Vec<u8>]) -> Result<u64> {
        self.apply_append(stream, expected, entries)
    }

    fn sync(&self) -> Result<()> {
        self.wait_durable()
    }

    fn read(&self, stream: &str, from: u64, max: usize) -> Result<Vec<(u64, Vec<u8>)>> {
        self.commit.check()?;
        let prefix = stream_prefix(stream)?;
        let from = from.max(1);
        // Start at the record holding `from`: the last one starting at or
        // before it. With none, the stream's first record must start at 1.
        let (start, mut expected_first) = match self
            .streams
            .range(&prefix[..]..=&entry_key(&prefix, from)[..])
            .next_back()
        {
            Some(item) => (item.map_err(sled_error)?.0.to_vec(), None),
            None => (prefix.clone(), Some(1)),
        };
        let mut out = Vec::new();
        for item in self.streams.range(start..prefix_end(&prefix)) {
            if out.len() >= max {
                break;
            }
            let (key, value) = item.map_err(sled_error)?;
            let Some(first) = key_seq(&prefix, &key) else {
                return Err(self.bad_key(stream, &prefix, &key));
            };
            match expected_first {
                Some(expected) if first > expected => {
                    return Err(StorageError::damaged(stream, expected, "it is missing"));
                }
                Some(expected) if first < expected => {
                    return Err(StorageError::damaged(
                        stream,
                        first,
                        "two stored records hold it",
                    ));
                }
                _ => {}
            }
            let record =
                crate::batch::decode(&value).map_err(|what| malformed(stream, first, what))?;
            let last = last_seq_of(stream, first, record.len() as u64)?;
            expected_first = last.checked_add(1);
            for (seq, entry) in (first..=last).zip(record) {
                if seq >= from && out.len() < max {
                    out.push((seq, entry.to_vec()));
                }
            }
        }
        Ok(out)
    }

    fn last_seq(&self, stream: &str) -> Result<u64> {
        self.commit.check()?;
        self.head(stream, &stream_prefix(stream)?)
    }

    fn streams(&self) -> Result<Vec<String>> {
        self.commit.check()?;
        let mut names = Vec::new();
        let mut from = Vec::new();
        // One seek per stream: read a key, then jump past its stream.
        while let Some(item) = self.streams.range(&from[..]..).next() {
            let (key, _) = item.map_err(sled_error)?;
            let Some(nul) = key.iter().position(|b| *b == 0) else {
                return Err(StorageError::Corrupt(
                    "a stream key holds no NUL".to_string(),
                ));
            };
            let name = String::from_utf8(key[..nul].to_vec())
                .map_err(|_| StorageError::Corrupt("a stream name is not UTF-8".to_string()))?;
            names.push(name);
            from = prefix_end(&key[..=nul]);
        }
        Ok(names)
    }

    fn put(&self, bucket: &str, key: &str, value: &[u8]) -> Result<()> {
        self.put_unsynced(bucket, key, value)?;
        self.wait_durable()
    }

    /// Applied, not flushed: sled keeps one log for every tree, written in
    /// order, so the flush that makes this durable makes every earlier
    /// write durable too.
    fn put_unsynced(&self, bucket: &str, key: &str, value: &[u8]) -> Result<()> {
        self.commit.check()?;
        let tree = self.bucket(bucket)?;
        tree.insert(key.as_bytes(), value)
            .map_err(|e| self.write_failed(e))?;
        Ok(())
    }

    /// sled's `compare_and_swap`, atomic in this process (the data dir lock
    /// keeps other processes out), then a flush. A miss waits for the flush
    /// too: the value it saw may be another writer's, not yet durable.
    fn put_if(&self, bucket: &str, key: &str, swap: Swap<'_>) -> Result<bool> {
        let swapped = self.put_if_unsynced(bucket, key, swap)?;
        self.wait_durable()?;
        Ok(swapped)
    }

    /// The compare-and-swap applied, not flushed: sled keeps one log for
    /// every tree, so the flush that makes a later write durable makes this
    /// one durable too.
    fn put_if_unsynced(&self, bucket: &str, key: &str, swap: Swap<'_>) -> Result<bool> {
        let (expected, value) = (swap.from, swap.to);
        self.commit.check()?;
        // A bucket is made only by a write that may succeed: one that
        // expects no value and sets one.
        let tree = match (expected, value) {
            (None, Some(_)) => Some(self.bucket(bucket)?),
            _ => self.existing_bucket(bucket)?,
        };
        let swapped = match tree {
            // No bucket: the key is absent, and removing it changes nothing.
            None => expected.is_none(),
            Some(tree) => tree
                .compare_and_swap(key.as_bytes(), expected, value)
                .map_err(|e| self.write_failed(e))?
                .is_ok(),
        };
        Ok(swapped)
    }

    fn get(&self, bucket: &str, key: &str) -> Result<Option<Vec<u8>>> {
        self.commit.check()?;
        let Some(tree) = self.existing_bucket(bucket)? else {
            return Ok(None);
        };
        Ok(tree
            .get(key.as_bytes())
            .map_err(sled_error)?
            .map(|v| v.to_vec()))
    }

    fn delete(&self, bucket: &str, key: &str) -> Result<()> {
        self.commit.check()?;
        let Some(tree) = self.existing_bucket(bucket)? else {
            return Ok(());
        };
        tree.remove(key.as_bytes())
            .map_err(|e| self.write_failed(e))?;
        self.wait_durable()
    }

    fn scan(&self, bucket: &str, prefix: &str) -> Result<Vec<(String, Vec<u8>)>> {
        self.commit.check()?;
        let Some(tree) = self.existing_bucket(bucket)? else {
            return Ok(Vec::new());
        };
        tree.scan_prefix(prefix.as_bytes())
            .map(|item| {
                let (key, value) = item.map_err(sled_error)?;
                let key = String::from_utf8(key.to_vec()).map_err(|_| {
                    StorageError::Corrupt(format!("a key in bucket `{bucket}` is not UTF-8"))
                })?;
                Ok((key, value.to_vec()))
            })
            .collect()
    }

    fn scan_page(
        &self,
        bucket: &str,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Vec<u8>)>> {
        self.commit.check()?;
        let Some(tree) = self.existing_bucket(bucket)? else {
            return Ok(Vec::new());
        };
        let start = match after {
            Some(after) if after.as_bytes() >= prefix.as_bytes() => {
                Bound::Excluded(after.as_bytes())
            }
            _ => Bound::Included(prefix.as_bytes()),
        };
        let mut page = Vec::new();
        for item in tree.range::<&[u8], _>((start, Bound::Unbounded)) {
            if page.len() >= limit {
                break;
            }
            let (key, value) = item.map_err(sled_error)?;
            if !key.starts_with(prefix.as_bytes()) {
                break;
            }
            let key = String::from_utf8(key.to_vec()).map_err(|_| {
                StorageError::Corrupt(format!("a key in bucket `{bucket}` is not UTF-8"))
            })?;
            page.push((key, value.to_vec()));
        }
        Ok(page)
    }

    fn failure(&self) -> Option<String> {
        self.commit.failure()
    }

    fn buckets(&self) -> Result<Vec<String>> {
        self.commit.check()?;
        let mut names = Vec::new();
        for name in self.db.tree_names() {
            if let Some(bucket) = name.strip_prefix(b"kv:") {
                names.push(String::from_utf8(bucket.to_vec()).map_err(|_| {
                    StorageError::Corrupt("a bucket name is not UTF-8".to_string())
                })?);
            }
        }
        names.sort();
        Ok(names)
    }
}
