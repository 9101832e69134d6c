//! Reading a log: from its head when what is asked for is in the last
//! append, else a binary search for the append holding the first entry
//! asked for, then every message from there on through one ordered consumer.

use std::sync::Arc;

use async_nats::jetstream::consumer;
use futures_util::StreamExt;
use glovebox_store::StorageError;

use super::Batch;
use crate::inner::{Inner, io};
use crate::record;

impl Inner {
    pub(crate) async fn read(
        self: Arc<Self>,
        stream: String,
        from: u64,
        max: usize,
    ) -> Result<Vec<(u64, Vec<u8>)>, StorageError> {
        let subject = self.subject(&stream);
        let from = from.max(1);
        if max == 0 {
            return Ok(Vec::new());
        }
        let Some(head) = self.head(&stream, &subject).await? else {
            return Ok(Vec::new());
        };
        if from > head.last {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        if from >= head.first {
            take(&stream, &head, from, max, &mut out)?;
            return Ok(out);
        }
        let start = self.find(&stream, &subject, from, &head).await?;
        // Every message from `start` to `head`, through an ordered consumer
        // (one request, then the server pushes them).
        let consumer = self
            .log
            .create_consumer(consumer::push::OrderedConfig {
                deliver_subject: self.client.new_inbox(),
                filter_subject: subject.clone(),
                deliver_policy: consumer::DeliverPolicy::ByStartSequence {
                    start_sequence: start.js_seq,
                },
                replay_policy: consumer::ReplayPolicy::Instant,
                ..Default::default()
            })
            .await
            .map_err(|e| {
                io(
                    format!("cannot read log `{stream}` from NATS at `{}`", self.url),
                    e,
                )
            })?;
        let consumer_name = consumer.cached_info().name.clone();
        let result = async {
            let mut messages = consumer.messages().await.map_err(|e| {
                io(
                    format!("cannot read log `{stream}` from NATS at `{}`", self.url),
                    e,
                )
            })?;
            let mut next_first = start.first;
            loop {
                let message = tokio::time::timeout(self.timeout, messages.next())
                    .await
                    .ok()
                    .flatten()
                    .ok_or_else(|| {
                        StorageError::Io(format!(
                            "reading log `{stream}` from NATS at `{}` stopped after sequence {}",
                            self.url,
                            next_first - 1
                        ))
                    })?
                    .map_err(|e| {
                        io(
                            format!("cannot read log `{stream}` from NATS at `{}`", self.url),
                            e,
                        )
                    })?;
                let js_seq = message
                    .info()
                    .map_err(|e| io("a log message without its stream sequence", e))?
                    .stream_sequence;
                let batch = self.batch(
                    &stream,
                    js_seq,
                    message.headers.as_ref(),
                    message.payload.clone(),
                    next_first,
                )?;
                if batch.first != next_first {
                    return Err(StorageError::Damaged {
                        stream: stream.clone(),
                        seq: next_first,
                        reason: format!(
                            "the entry is missing: the next message starts at sequence {}",
                            batch.first
                        ),
                    });
                }
                take(&stream, &batch, from, max, &mut out)?;
                next_first = batch.last + 1;
                if out.len() >= max || js_seq >= head.js_seq {
                    return Ok(out);
                }
            }
        }
        .await;
        // Ordered consumers are ephemeral; remove this one now rather than
        // when the server notices it idle.
        let log = self.log.clone();
        tokio::spawn(async move {
            let _ = log.delete_consumer(&consumer_name).await;
        });
        result
    }

    /// The message of `stream` that holds sequence `from`, which is below the
    /// head's first: a binary search over stream sequences, each probe one
    /// request for the first message of the subject at or after a sequence.
    async fn find(
        &self,
        stream: &str,
        subject: &str,
        from: u64,
        head: &Batch,
    ) -> Result<Batch, StorageError> {
        let mut lo = self.next_from(stream, subject, 1, from).await?;
        if lo.first > from {
            return Err(StorageError::Damaged {
                stream: stream.to_string(),
                seq: from,
                reason: format!("the log's first message starts at sequence {}", lo.first),
            });
        }
        // `lo` starts at or before `from`; every message after `hi` starts after it.
        let mut hi = head.js_seq - 1;
        while lo.js_seq < hi && lo.last < from {
            let mid = lo.js_seq + (hi - lo.js_seq).div_ceil(2);
            let probe = self.next_from(stream, subject, mid, from).await?;
            if probe.first <= from {
                lo = probe;
            } else {
                hi = mid - 1;
            }
        }
        if lo.last < from {
            return Err(StorageError::Damaged {
                stream: stream.to_string(),
                seq: lo.last + 1,
                reason: "the entry is missing".to_string(),
            });
        }
        Ok(lo)
    }
}

/// Adds the entries of `batch` from sequence `from` on to `out`, up to `max` in all.
fn take(
    stream: &str,
    batch: &Batch,
    from: u64,
    max: usize,
    out: &mut Vec<(u64, Vec<u8>)>,
) -> Result<(), StorageError> {
    let entries = record::decode(&batch.payload).map_err(|why| StorageError::Damaged {
        stream: stream.to_string(),
        seq: batch.first,
        reason: why.to_string(),
    })?;
    for (seq, entry) in (batch.first..).zip(entries) {
        if out.len() >= max {
            break;
        }
        if seq >= from {
            out.push((seq, entry.to_vec()));
        }
    }
    Ok(())
}
