//! The buckets of the trait: every bucket is a KV bucket `<prefix>_b<name>`
//! (see the crate's docs), created at its first write. Here: a bucket
//! opened or created, a key's value read and written, compare-and-set by
//! the key's last revision, and the scans (`scan.rs`).

mod scan;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_nats::HeaderMap;
use async_nats::jetstream::{self, ErrorCode, kv, stream};
use bytes::Bytes;
use futures_util::StreamExt;
use glovebox_store::StorageError;

use crate::inner::{Inner, io};
use crate::names;
use crate::streams::get_or_join_stream;

impl Inner {
    /// The KV bucket holding `bucket`; created when `create`, else `None`
    /// when it does not exist (reads and deletes create nothing).
    async fn bucket(&self, bucket: &str, create: bool) -> Result<Option<kv::Store>, StorageError> {
        if let Some(store) = self.buckets.lock().unwrap().get(bucket) {
            return Ok(Some(store.clone()));
        }
        let name = names::kv_bucket(&self.prefix, bucket);
        let failed = |e: &dyn fmt::Display| {
            io(
                format!(
                    "cannot open bucket `{bucket}` (KV `{name}`) on NATS at `{}`",
                    self.url
                ),
                e,
            )
        };
        let exists = match self.js.get_stream(format!("KV_{name}")).await {
            Ok(_) => true,
            Err(e) => match e.kind() {
                jetstream::context::GetStreamErrorKind::JetStream(err)
                    if err.error_code() == ErrorCode::STREAM_NOT_FOUND =>
                {
                    false
                }
                _ => return Err(failed(&e)),
            },
        };
        let store = if exists {
            self.js.get_key_value(&name).await.map_err(|e| failed(&e))?
        } else if create {
            // The stream `create_key_value` makes (ADR-8's KV layout), made
            // here because that call first reads the account's info in a
            // form servers before 2.10 do not send. Created only if absent,
            // so hosts racing to make it get the same one.
            let config = stream::Config {
                name: format!("KV_{name}"),
                description: Some(format!("Glovebox bucket `{bucket}` (docs/durability.md)")),
                subjects: vec![format!("$KV.{name}.>")],
                max_messages_per_subject: 1,
                max_messages: -1,
                max_bytes: -1,
                max_message_size: -1,
                storage: stream::StorageType::File,
                num_replicas: self.replicas,
                allow_rollup: true,
                deny_delete: true,
                allow_direct: true,
                discard: stream::DiscardPolicy::New,
                ..Default::default()
            };
            get_or_join_stream(&self.js, config)
                .await
                .map_err(|e| failed(&e))?;
            self.js.get_key_value(&name).await.map_err(|e| failed(&e))?
        } else {
            return Ok(None);
        };
        self.buckets
            .lock()
            .unwrap()
            .insert(bucket.to_string(), store.clone());
        Ok(Some(store))
    }

    pub(crate) async fn put(
        self: Arc<Self>,
        bucket: String,
        key: String,
        value: Bytes,
    ) -> Result<(), StorageError> {
        let store = self.bucket(&bucket, true).await?.expect("created");
        if value.len() > self.max_payload {
            return Err(StorageError::Io(format!(
                "a value of {} bytes for `{key}` in bucket `{bucket}` is larger than the NATS server's `max_payload` ({} bytes): raise `max_payload` in the server's config (up to 64 MB)",
                value.len(),
                self.max_payload
            )));
        }
        let subject = format!("{}{}", store.prefix, names::to_token(&key));
        let message = jetstream::message::PublishMessage::build().payload(value);
        self.publish(&subject, message).await.map_err(|e| {
            io(
                format!(
                    "putting `{key}` in bucket `{bucket}` was not acknowledged by NATS at `{}` (it may or may not be stored)",
                    self.url
                ),
                e,
            )
        })?;
        Ok(())
    }

    pub(crate) async fn get(
        self: Arc<Self>,
        bucket: String,
        key: String,
    ) -> Result<Option<Vec<u8>>, StorageError> {
        let Some(store) = self.bucket(&bucket, false).await? else {
            return Ok(None);
        };
        // From the stream leader (not a direct get, which a replica may
        // answer before it has the latest put).
        let subject = format!("{}{}", store.prefix, names::to_token(&key));
        match store.stream.get_last_raw_message_by_subject(&subject).await {
            Ok(m) if is_kv_delete(Some(&m.headers)) => Ok(None),
            Ok(m) => Ok(Some(m.payload.to_vec())),
            Err(e) if matches!(e.kind(), stream::LastRawMessageErrorKind::NoMessageFound) => {
                Ok(None)
            }
            Err(e) => Err(io(
                format!(
                    "cannot get `{key}` from bucket `{bucket}` on NATS at `{}`",
                    self.url
                ),
                e,
            )),
        }
    }

    /// Compare-and-set on the key's subject: read its last message (its
    /// value, and its stream sequence, the KV revision), compare, and
    /// publish the new value (or a delete marker) with
    /// `Nats-Expected-Last-Subject-Sequence` set to that revision (0: no
    /// message yet). The server stores it only if nothing was written to the
    /// key since the read; if something was, the value is compared again.
    pub(crate) async fn put_if(
        self: Arc<Self>,
        bucket: String,
        key: String,
        expected: Option<Bytes>,
        value: Option<Bytes>,
    ) -> Result<bool, StorageError> {
        let create = expected.is_none() && value.is_some();
        let Some(store) = self.bucket(&bucket, create).await? else {
            // No bucket: the key is absent, and removing it changes nothing.
            return Ok(expected.is_none());
        };
        if let Some(value) = &value
            && value.len() > self.max_payload
        {
            return Err(StorageError::Io(format!(
                "a value of {} bytes for `{key}` in bucket `{bucket}` is larger than the NATS server's `max_payload` ({} bytes): raise `max_payload` in the server's config (up to 64 MB)",
                value.len(),
                self.max_payload
            )));
        }
        let failed = |e: &dyn fmt::Display| {
            io(
                format!(
                    "cannot set `{key}` in bucket `{bucket}` on NATS at `{}`",
                    self.url
                ),
                e,
            )
        };
        let subject = format!("{}{}", store.prefix, names::to_token(&key));
        loop {
            let (revision, current) =
                match store.stream.get_last_raw_message_by_subject(&subject).await {
                    Ok(m) if is_kv_delete(Some(&m.headers)) => (m.sequence, None),
                    Ok(m) => (m.sequence, Some(m.payload)),
                    Err(e)
                        if matches!(e.kind(), stream::LastRawMessageErrorKind::NoMessageFound) =>
                    {
                        (0, None)
                    }
                    Err(e) => return Err(failed(&e)),
                };
            if current.as_deref() != expected.as_deref() {
                return Ok(false);
            }
            // As for an append (see `Inner::append`): on a cluster the
            // expected sequence alone lets two racers both pass.
            let id = format!("{subject}@{revision}");
            let message = jetstream::message::PublishMessage::build()
                .message_id(id.as_str())
                .expected_last_subject_sequence(revision);
            let message = match &value {
                Some(value) => message.payload(value.clone()),
                // Absent already: nothing to remove.
                None if current.is_none() => return Ok(true),
                None => message.payload(Bytes::new()).header("KV-Operation", "DEL"),
            };
            match self.publish(&subject, message).await {
                // Another writer's value over this revision got there first
                // (it may still be replicating): compare with it once it is.
                Ok(ack) if ack.duplicate => {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                Ok(_) => return Ok(true),
                // Written since the read: compare with what is there now.
                Err(e) if e.kind() == jetstream::context::PublishErrorKind::WrongLastSequence => {}
                Err(e) => {
                    return Err(io(
                        format!(
                            "setting `{key}` in bucket `{bucket}` was not acknowledged by NATS at `{}` (it may or may not be stored)",
                            self.url
                        ),
                        e,
                    ));
                }
            }
        }
    }

    pub(crate) async fn delete(
        self: Arc<Self>,
        bucket: String,
        key: String,
    ) -> Result<(), StorageError> {
        let Some(store) = self.bucket(&bucket, false).await? else {
            return Ok(());
        };
        store.delete(names::to_token(&key)).await.map_err(|e| {
            io(
                format!(
                    "cannot delete `{key}` from bucket `{bucket}` on NATS at `{}`",
                    self.url
                ),
                e,
            )
        })
    }

    pub(crate) async fn buckets(self: Arc<Self>) -> Result<Vec<String>, StorageError> {
        let mut streams = self.js.stream_names();
        let mut out = Vec::new();
        while let Some(name) = streams.next().await {
            let name = name.map_err(|e| {
                io(
                    format!("cannot list the buckets on NATS at `{}`", self.url),
                    e,
                )
            })?;
            if let Some(bucket) = names::bucket_of_kv_stream(&self.prefix, &name) {
                out.push(bucket);
            }
        }
        out.sort();
        Ok(out)
    }
}

/// Whether a KV message is a delete or purge marker.
fn is_kv_delete(headers: Option<&HeaderMap>) -> bool {
    headers
        .and_then(|h| h.get("KV-Operation"))
        .is_some_and(|op| matches!(op.as_str(), "DEL" | "PURGE"))
}
