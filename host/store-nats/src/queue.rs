//! Work queues on JetStream ([`WorkQueue`]): the background jobs every host
//! of a deployment consumes.
//!
//! Queue `name` of deployment prefix `P` is a stream `P_q_<name>` on the
//! subject `P.q.<name>` (file storage, `replicas` copies, work-queue
//! retention: a message is gone once acknowledged) with one durable pull
//! consumer, `runners`, that every host pulls from: explicit acks, no limit
//! on redeliveries, and the ack wait the first host to create it asked for.
//! So each message is with one host at a time, and comes back to any host
//! when the one holding it neither acknowledges it nor says it is still at
//! work within the ack wait (it died, or lost the server).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::{self, AckKind, consumer, stream};
use futures_util::StreamExt;
use glovebox_store::{Delivery, StorageError, WorkQueue};

use crate::{Inner, get_or_join_stream, io, names, run_on};

/// The one consumer every host pulls from.
const CONSUMER: &str = "runners";

pub(crate) struct NatsQueue {
    handle: tokio::runtime::Handle,
    inner: Arc<Inner>,
    subject: String,
    consumer: consumer::PullConsumer,
    ack_wait: Duration,
}

impl fmt::Debug for NatsQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NatsQueue")
            .field("subject", &self.subject)
            .field("ack_wait", &self.ack_wait)
            .finish_non_exhaustive()
    }
}

impl NatsQueue {
    /// Creates queue `name`'s stream and consumer, or joins those there.
    pub(crate) fn open(
        handle: tokio::runtime::Handle,
        inner: Arc<Inner>,
        name: &str,
        ack_wait: Duration,
    ) -> Result<NatsQueue, StorageError> {
        let token = names::to_token(name);
        let stream_name = format!("{}_q_{token}", inner.prefix);
        let subject = format!("{}.q.{token}", inner.prefix);
        let (consumer, ack_wait) = run_on(&handle, {
            let (inner, stream_name, subject) =
                (inner.clone(), stream_name.clone(), subject.clone());
            async move {
                let failed = |e: &dyn fmt::Display| {
                    io(
                        format!(
                            "cannot open the work queue `{subject}` (stream `{stream_name}`) on NATS at `{}`",
                            inner.url
                        ),
                        e,
                    )
                };
                let config = stream::Config {
                    name: stream_name.clone(),
                    description: Some("Glovebox work queue (docs/deploy.md)".into()),
                    subjects: vec![subject.clone()],
                    storage: stream::StorageType::File,
                    num_replicas: inner.replicas,
                    retention: stream::RetentionPolicy::WorkQueue,
                    discard: stream::DiscardPolicy::Old,
                    max_messages: -1,
                    max_bytes: -1,
                    max_message_size: -1,
                    ..Default::default()
                };
                let stream = get_or_join_stream(&inner.js, config)
                    .await
                    .map_err(|e| failed(&e))?;
                if stream.cached_info().config.retention != stream::RetentionPolicy::WorkQueue {
                    return Err(StorageError::Io(format!(
                        "the JetStream stream `{stream_name}` on `{}` is not a work queue (its retention is {:?}): delete it (`nats stream rm {stream_name}`; it holds only queued job ids, the jobs themselves are in their bucket) or give this deployment its own `prefix` in `[storage]`",
                        inner.url,
                        stream.cached_info().config.retention
                    )));
                }
                let mut tries = 0;
                let mut consumer: consumer::PullConsumer = loop {
                    let made = stream
                        .get_or_create_consumer(
                            CONSUMER,
                            consumer::pull::Config {
                                durable_name: Some(CONSUMER.to_string()),
                                description: Some("every Glovebox host of the deployment".into()),
                                ack_policy: consumer::AckPolicy::Explicit,
                                ack_wait,
                                max_deliver: -1,
                                ..Default::default()
                            },
                        )
                        .await;
                    match made {
                        // Two hosts creating it at once: the second finds it.
                        Err(_) if tries < 50 => {
                            tries += 1;
                            tokio::time::sleep(Duration::from_millis(20)).await;
                        }
                        other => break other.map_err(|e| failed(&e))?,
                    }
                };
                let ack_wait = consumer
                    .info()
                    .await
                    .map_err(|e| failed(&e))?
                    .config
                    .ack_wait;
                Ok((consumer, ack_wait))
            }
        })?;
        Ok(NatsQueue {
            handle,
            inner,
            subject,
            consumer,
            ack_wait,
        })
    }
}

impl WorkQueue for NatsQueue {
    fn push(&self, item: &str) -> Result<(), StorageError> {
        let (inner, subject) = (self.inner.clone(), self.subject.clone());
        let payload = bytes::Bytes::from(item.to_string());
        let item = item.to_string();
        run_on(&self.handle, async move {
            let message = jetstream::message::PublishMessage::build().payload(payload);
            inner.publish(&subject, message).await.map_err(|e| {
                io(
                    format!(
                        "queueing `{item}` on `{subject}` was not acknowledged by NATS at `{}` (it may or may not be queued)",
                        inner.url
                    ),
                    e,
                )
            })?;
            Ok(())
        })
    }

    fn pull(&self, wait: Duration) -> Result<Option<Box<dyn Delivery>>, StorageError> {
        let (consumer, url, subject) = (
            self.consumer.clone(),
            self.inner.url.clone(),
            self.subject.clone(),
        );
        let failed = move |e: &dyn fmt::Display| {
            io(
                format!("cannot pull from the work queue `{subject}` on NATS at `{url}`"),
                e,
            )
        };
        let pulled = run_on(&self.handle, async move {
            let mut batch = consumer
                .batch()
                .max_messages(1)
                .expires(wait.max(Duration::from_millis(100)))
                .messages()
                .await
                .map_err(|e| failed(&e))?;
            match batch.next().await {
                None => Ok(None),
                Some(Err(e)) => Err(failed(&e)),
                Some(Ok(message)) => {
                    let delivered = message
                        .info()
                        .map(|info| u64::try_from(info.delivered).unwrap_or(1))
                        .unwrap_or(1);
                    let (message, acker) = message.split();
                    let item = String::from_utf8_lossy(&message.payload).into_owned();
                    Ok(Some((item, delivered, acker)))
                }
            }
        })?;
        Ok(pulled.map(|(item, delivered, acker)| {
            Box::new(NatsDelivery {
                handle: self.handle.clone(),
                item,
                delivered,
                acker: Arc::new(acker),
            }) as Box<dyn Delivery>
        }))
    }

    fn ack_wait(&self) -> Duration {
        self.ack_wait
    }
}

/// One message of a work queue, with the means to answer for it.
struct NatsDelivery {
    handle: tokio::runtime::Handle,
    item: String,
    delivered: u64,
    acker: Arc<jetstream::message::Acker>,
}

impl NatsDelivery {
    /// Sends `kind`; an acknowledgement waits for the server to confirm it
    /// (so a job is not taken as done while its message may come back), the
    /// other answers only for the client to send them.
    fn answer(&self, kind: AckKind, what: &'static str) -> Result<(), StorageError> {
        let (acker, item) = (self.acker.clone(), self.item.clone());
        run_on(&self.handle, async move {
            match kind {
                AckKind::Ack => acker.double_ack().await,
                other => acker.ack_with(other).await,
            }
            .map_err(|e| io(format!("{what} `{item}` in its work queue"), e))
        })
    }
}

impl Delivery for NatsDelivery {
    fn item(&self) -> &str {
        &self.item
    }

    fn delivered(&self) -> u64 {
        self.delivered
    }

    fn ack(&self) -> Result<(), StorageError> {
        self.answer(AckKind::Ack, "acknowledging")
    }

    fn nak(&self, delay: Duration) -> Result<(), StorageError> {
        self.answer(AckKind::Nak(Some(delay)), "handing back")
    }

    fn in_progress(&self) -> Result<(), StorageError> {
        self.answer(AckKind::Progress, "keeping")
    }
}
