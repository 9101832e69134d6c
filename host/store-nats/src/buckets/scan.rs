//! Scanning a bucket: its keys as the server lists the KV stream's
//! subjects, then the latest value of each, many reads at a time; a page
//! keeps only the smallest keys listed, so it holds one page of names
//! however many keys the bucket has.

use std::fmt;
use std::sync::Arc;

use async_nats::jetstream::stream;
use futures_util::StreamExt;
use glovebox_store::StorageError;

use super::is_kv_delete;
use crate::inner::{Inner, io};
use crate::names;

/// How many keys a scan reads at once.
const SCAN_READS: usize = 64;

impl Inner {
    pub(crate) async fn scan(
        self: Arc<Self>,
        bucket: String,
        prefix: String,
    ) -> Result<Vec<(String, Vec<u8>)>, StorageError> {
        Ok(self.scan_listed(bucket, prefix, None, None).await?.0)
    }

    pub(crate) async fn scan_page(
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
}
