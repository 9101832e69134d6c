//! The logs of the trait: every log is a subject `<prefix>.log.<name>` of
//! the one stream `<prefix>_log`, one message per append (see the crate's
//! docs). Here: that stream opened or checked, the message that ends a log
//! (its head), an append that the server takes only after that head, and
//! the reads (`read.rs`).

mod read;

use std::fmt;
use std::sync::Arc;

use async_nats::HeaderMap;
use async_nats::jetstream::{self, stream};
use bytes::Bytes;
use futures_util::StreamExt;
use glovebox_store::StorageError;

use crate::inner::{Inner, io};
use crate::streams::get_or_join_stream;
use crate::{names, record};

/// One log message: one append.
struct Batch {
    /// Its sequence in the JetStream stream.
    js_seq: u64,
    /// The trait sequence of its first entry.
    first: u64,
    /// The trait sequence of its last entry.
    last: u64,
    payload: Bytes,
}

/// Creates the log stream, or checks that the one there keeps every entry
/// the way the trait needs.
pub(crate) async fn open_log_stream(
    js: &jetstream::Context,
    url: &str,
    prefix: &str,
    replicas: usize,
) -> Result<stream::Stream, StorageError> {
    let name = format!("{prefix}_log");
    let subjects = format!("{prefix}.log.>");
    let wanted = stream::Config {
        name: name.clone(),
        description: Some("Glovebox session logs: one subject per log (docs/durability.md)".into()),
        subjects: vec![subjects.clone()],
        storage: stream::StorageType::File,
        num_replicas: replicas,
        retention: stream::RetentionPolicy::Limits,
        discard: stream::DiscardPolicy::Old,
        max_messages: -1,
        max_bytes: -1,
        max_messages_per_subject: -1,
        max_message_size: -1,
        // A hole in a hash-chained log is damage: nothing deletes single entries.
        deny_delete: true,
        ..Default::default()
    };
    let stream = get_or_join_stream(js, wanted).await.map_err(|e| {
        StorageError::Io(format!(
            "cannot create the JetStream stream `{name}` for subjects `{subjects}` on `{url}`: {e}: if another stream already takes these subjects, give this deployment its own `prefix` in `[storage]`"
        ))
    })?;
    let config = &stream.cached_info().config;
    let mut problems = Vec::new();
    if !config.subjects.contains(&subjects) {
        problems.push(format!(
            "its subjects are {:?}, not `{subjects}`",
            config.subjects
        ));
    }
    if config.storage != stream::StorageType::File {
        problems.push("it keeps messages in memory, not in files".to_string());
    }
    if config.retention != stream::RetentionPolicy::Limits {
        problems.push(format!(
            "its retention is {:?}: a log needs `limits`",
            config.retention
        ));
    }
    if config.max_messages > 0
        || config.max_bytes > 0
        || config.max_messages_per_subject > 0
        || !config.max_age.is_zero()
    {
        problems.push(
            "it has limits (messages, bytes, per-subject messages or age) that would drop log entries"
                .to_string(),
        );
    }
    if config.sealed || config.mirror.is_some() {
        problems.push("it is sealed or a mirror: it takes no appends".to_string());
    }
    if config.num_replicas != replicas {
        problems.push(format!(
            "it keeps {} replica(s), the config says `replicas = {replicas}`",
            config.num_replicas
        ));
    }
    if !problems.is_empty() {
        return Err(StorageError::Io(format!(
            "the JetStream stream `{name}` on `{url}` does not fit glovebox: {}: change it (`nats stream edit {name}`), or give this deployment its own `prefix` in `[storage]`",
            problems.join("; ")
        )));
    }
    Ok(stream)
}

impl Inner {
    fn subject(&self, stream: &str) -> String {
        format!("{}.log.{}", self.prefix, names::to_token(stream))
    }

    fn batch(
        &self,
        stream: &str,
        js_seq: u64,
        headers: Option<&HeaderMap>,
        payload: Bytes,
        at: u64,
    ) -> Result<Batch, StorageError> {
        let damaged = |reason: String| StorageError::Damaged {
            stream: stream.to_string(),
            seq: at,
            reason,
        };
        let first: u64 = headers
            .and_then(|h| h.get(record::FIRST))
            .and_then(|v| v.as_str().parse().ok())
            .ok_or_else(|| {
                damaged(format!(
                    "message {js_seq} of `{}` has no `{}` header",
                    self.log.cached_info().config.name,
                    record::FIRST
                ))
            })?;
        let count = record::decode(&payload)
            .map_err(|why| damaged(format!("message {js_seq} does not decode: {why}")))?
            .len() as u64;
        if first == 0 {
            return Err(damaged(format!("message {js_seq} starts at sequence 0")));
        }
        Ok(Batch {
            js_seq,
            first,
            last: first + count - 1,
            payload,
        })
    }

    fn raw_batch(
        &self,
        stream: &str,
        message: Result<jetstream::message::StreamMessage, stream::LastRawMessageError>,
        at: u64,
    ) -> Result<Option<Batch>, StorageError> {
        match message {
            Ok(m) => self
                .batch(stream, m.sequence, Some(&m.headers), m.payload, at)
                .map(Some),
            Err(e) if matches!(e.kind(), stream::LastRawMessageErrorKind::NoMessageFound) => {
                Ok(None)
            }
            Err(e) => Err(io(
                format!("cannot read log `{stream}` from NATS at `{}`", self.url),
                e,
            )),
        }
    }

    /// The message that ends log `stream`, if it has one.
    async fn head(&self, stream: &str, subject: &str) -> Result<Option<Batch>, StorageError> {
        let message = self.log.get_last_raw_message_by_subject(subject).await;
        self.raw_batch(stream, message, 1)
    }

    /// The first message of `stream` at stream sequence `js_seq` or after it.
    async fn next_from(
        &self,
        stream: &str,
        subject: &str,
        js_seq: u64,
        at: u64,
    ) -> Result<Batch, StorageError> {
        let message = self
            .log
            .get_first_raw_message_by_subject(subject, js_seq)
            .await;
        self.raw_batch(stream, message, at)?
            .ok_or_else(|| StorageError::Damaged {
                stream: stream.to_string(),
                seq: at,
                reason: format!("no message at or after stream sequence {js_seq}"),
            })
    }

    pub(crate) async fn append(
        self: Arc<Self>,
        stream: String,
        expected_last: u64,
        payload: Option<(Bytes, u64)>,
    ) -> Result<u64, StorageError> {
        let subject = self.subject(&stream);
        let head = self.head(&stream, &subject).await?;
        let conflict = |actual| StorageError::Conflict {
            stream: stream.clone(),
            expected: expected_last,
            actual,
        };
        let actual = head.as_ref().map_or(0, |h| h.last);
        if actual != expected_last {
            return Err(conflict(actual));
        }
        let Some((payload, count)) = payload else {
            return Ok(expected_last);
        };
        if payload.len() > self.max_payload {
            return Err(StorageError::Io(format!(
                "an append of {} bytes to log `{stream}` is larger than the NATS server's `max_payload` ({} bytes): raise `max_payload` in the server's config (up to 64 MB)",
                payload.len(),
                self.max_payload
            )));
        }
        let head_js_seq = head.as_ref().map_or(0, |h| h.js_seq);
        // The same id for every writer appending after this head: on a
        // cluster, NATS 2.9 checks the expected last subject sequence only
        // against appends already applied, not those still being replicated
        // (nats-server#4320), so two racers can both pass it; the message
        // id makes the stream drop the second within its duplicate window.
        let id = format!("{subject}@{head_js_seq}");
        let message = jetstream::message::PublishMessage::build()
            .payload(payload)
            .header(record::FIRST, (expected_last + 1).to_string().as_str())
            .message_id(id.as_str())
            .expected_stream(self.log.cached_info().config.name.as_str())
            .expected_last_subject_sequence(head_js_seq);
        match self.publish(&subject, message).await {
            Ok(ack) if ack.duplicate => {
                // Another writer's append after the same head was stored
                // first: this one was dropped.
                let actual = self.head(&stream, &subject).await?.map_or(0, |h| h.last);
                Err(conflict(actual))
            }
            Ok(_) => Ok(expected_last + count),
            Err(e) if e.kind() == jetstream::context::PublishErrorKind::WrongLastSequence => {
                // Another writer appended after our look at the head.
                let actual = self.head(&stream, &subject).await?.map_or(0, |h| h.last);
                Err(conflict(actual))
            }
            Err(e) => Err(io(
                format!(
                    "an append to log `{stream}` was not acknowledged by NATS at `{}` (it may or may not be stored)",
                    self.url
                ),
                e,
            )),
        }
    }

    pub(crate) async fn last_seq(self: Arc<Self>, stream: String) -> Result<u64, StorageError> {
        let subject = self.subject(&stream);
        Ok(self.head(&stream, &subject).await?.map_or(0, |h| h.last))
    }

    pub(crate) async fn streams(self: Arc<Self>) -> Result<Vec<String>, StorageError> {
        let filter = format!("{}.log.>", self.prefix);
        let failed =
            |e: &dyn fmt::Display| io(format!("cannot list the logs on NATS at `{}`", self.url), e);
        let mut subjects = self
            .log
            .info_with_subjects(&filter)
            .await
            .map_err(|e| failed(&e))?;
        let token_at = format!("{}.log.", self.prefix);
        let mut names = Vec::new();
        while let Some(entry) = subjects.next().await {
            let (subject, _count) = entry.map_err(|e| failed(&e))?;
            let name = subject
                .strip_prefix(&token_at)
                .and_then(names::from_token)
                .ok_or_else(|| {
                    StorageError::Corrupt(format!(
                        "subject `{subject}` in stream `{}` is not a glovebox log name",
                        self.log.cached_info().config.name
                    ))
                })?;
            names.push(name);
        }
        names.sort();
        Ok(names)
    }
}
