//! Work queues on JetStream ([`WorkQueue`]): the background jobs every host
//! of a deployment consumes, fair between the groups (principals) that
//! push them.
//!
//! Queue `name` of deployment prefix `P` is a stream `P_q_<name>` on the
//! subjects `P.q.<name>.<group>` (file storage, `replicas` copies,
//! work-queue retention: a message is gone once acknowledged), with one
//! durable pull consumer per group that every host pulls from: explicit
//! acks, no limit on redeliveries, this host's ack wait. So each message is
//! with one host at a time, and comes back to any host when the one holding
//! it neither acknowledges it nor says it is still at work within the ack
//! wait (it died, or lost the server).
//!
//! Fairness: a pull asks the stream which groups have messages (its
//! per-subject counts) and takes the next one from the group after the one
//! this host served last, round robin, so one group's thousand items do not
//! keep another group's one waiting behind them on any host. JetStream has
//! no such order of its own; a single consumer over every group would hand
//! them out first in, first out.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_nats::jetstream::{self, AckKind, consumer, stream};
use futures_util::StreamExt;
use glovebox_store::{Delivery, StorageError, WorkQueue};

use crate::inner::{Inner, io, run_on};
use crate::names;
use crate::streams::get_or_join_stream;

/// How often a pull that found nothing asks again while it may wait.
const POLL: Duration = Duration::from_millis(100);

pub(crate) struct NatsQueue {
    handle: tokio::runtime::Handle,
    shared: Arc<Shared>,
}

/// What the queue's async side needs.
struct Shared {
    inner: Arc<Inner>,
    stream: stream::Stream,
    /// `P.q.<name>`: a group's subject is this, a dot, and its token.
    subject: String,
    ack_wait: Duration,
    /// The groups' consumers met so far, by subject token.
    consumers: Mutex<HashMap<String, consumer::PullConsumer>>,
    /// The subject token of the group this host took its last item from.
    last: Mutex<Option<String>>,
}

impl fmt::Debug for NatsQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NatsQueue")
            .field("subject", &self.shared.subject)
            .field("ack_wait", &self.shared.ack_wait)
            .finish_non_exhaustive()
    }
}

impl NatsQueue {
    /// Creates queue `name`'s stream, or joins the one there.
    pub(crate) fn open(
        handle: tokio::runtime::Handle,
        inner: Arc<Inner>,
        name: &str,
        ack_wait: Duration,
    ) -> Result<NatsQueue, StorageError> {
        let token = names::to_token(name);
        let stream_name = format!("{}_q_{token}", inner.prefix);
        let subject = format!("{}.q.{token}", inner.prefix);
        let stream = run_on(&handle, {
            let (inner, stream_name, subject) =
                (inner.clone(), stream_name.clone(), subject.clone());
            async move {
                let subjects = format!("{subject}.>");
                let config = stream::Config {
                    name: stream_name.clone(),
                    description: Some("Glovebox work queue (docs/deploy.md)".into()),
                    subjects: vec![subjects.clone()],
                    storage: stream::StorageType::File,
                    num_replicas: inner.replicas,
                    retention: stream::RetentionPolicy::WorkQueue,
                    discard: stream::DiscardPolicy::Old,
                    max_messages: -1,
                    max_bytes: -1,
                    max_message_size: -1,
                    ..Default::default()
                };
                let stream = get_or_join_stream(&inner.js, config).await.map_err(|e| {
                    io(
                        format!(
                            "cannot open the work queue `{subject}` (stream `{stream_name}`) on NATS at `{}`",
                            inner.url
                        ),
                        e,
                    )
                })?;
                let there = &stream.cached_info().config;
                if there.retention != stream::RetentionPolicy::WorkQueue
                    || !there.subjects.contains(&subjects)
                {
                    return Err(StorageError::Io(format!(
                        "the JetStream stream `{stream_name}` on `{}` is not this work queue (retention {:?}, subjects {:?}; wanted a work queue on `{subjects}`): delete it (`nats stream rm {stream_name}`; it holds only queued job ids, the jobs themselves are in their bucket, and the hosts' pass over the stored jobs runs them) or give this deployment its own `prefix` in `[storage]`",
                        inner.url, there.retention, there.subjects
                    )));
                }
                Ok(stream)
            }
        })?;
        Ok(NatsQueue {
            handle,
            shared: Arc::new(Shared {
                inner,
                stream,
                subject,
                ack_wait,
                consumers: Mutex::new(HashMap::new()),
                last: Mutex::new(None),
            }),
        })
    }
}

impl Shared {
    /// Group `token`'s consumer, created when absent (by whichever host
    /// first pulls from the group).
    async fn consumer(&self, token: &str) -> Result<consumer::PullConsumer, StorageError> {
        if let Some(consumer) = self.consumers.lock().unwrap().get(token) {
            return Ok(consumer.clone());
        }
        // Consumer names take no `.`, `*`, `>` or path separators.
        let name = format!("g{}", names::consumer_token(token));
        let mut tries = 0;
        let consumer: consumer::PullConsumer = loop {
            let made = self
                .stream
                .get_or_create_consumer(
                    &name,
                    consumer::pull::Config {
                        durable_name: Some(name.clone()),
                        description: Some("every Glovebox host of the deployment".into()),
                        filter_subject: format!("{}.{token}", self.subject),
                        ack_policy: consumer::AckPolicy::Explicit,
                        ack_wait: self.ack_wait,
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
                other => {
                    break other.map_err(|e| {
                        io(
                            format!(
                                "cannot open the consumer `{name}` of the work queue `{}` on NATS at `{}`",
                                self.subject, self.inner.url
                            ),
                            e,
                        )
                    })?;
                }
            }
        };
        self.consumers
            .lock()
            .unwrap()
            .insert(token.to_string(), consumer.clone());
        Ok(consumer)
    }

    /// The groups with messages (delivered ones included, until they are
    /// acknowledged), as subject tokens, sorted.
    async fn groups(&self) -> Result<Vec<String>, StorageError> {
        let failed = |e: &dyn fmt::Display| {
            io(
                format!(
                    "cannot read the groups of the work queue `{}` on NATS at `{}`",
                    self.subject, self.inner.url
                ),
                e,
            )
        };
        let prefix = format!("{}.", self.subject);
        let mut subjects = self
            .stream
            .info_with_subjects(format!("{}.>", self.subject))
            .await
            .map_err(|e| failed(&e))?;
        let mut groups = Vec::new();
        while let Some(subject) = subjects.next().await {
            let (subject, count) = subject.map_err(|e| failed(&e))?;
            if count > 0
                && let Some(token) = subject.strip_prefix(&prefix)
            {
                groups.push(token.to_string());
            }
        }
        groups.sort();
        Ok(groups)
    }

    /// One message of the next group with one ready, round robin from the
    /// group served last; `None` when no group has one ready now.
    async fn next(&self) -> Result<Option<jetstream::Message>, StorageError> {
        let groups = self.groups().await?;
        let last = self.last.lock().unwrap().clone();
        // The groups after the last one served, then from the start.
        let from = last.map_or(0, |last| groups.partition_point(|g| *g <= last));
        for token in groups[from..].iter().chain(&groups[..from]) {
            let consumer = self.consumer(token).await?;
            let mut batch = consumer
                .fetch()
                .max_messages(1)
                .messages()
                .await
                .map_err(|e| {
                    io(
                        format!("cannot pull from the work queue `{}`", self.subject),
                        e,
                    )
                })?;
            if let Some(message) = batch.next().await {
                let message = message.map_err(|e| {
                    io(
                        format!("cannot pull from the work queue `{}`", self.subject),
                        e,
                    )
                })?;
                *self.last.lock().unwrap() = Some(token.clone());
                return Ok(Some(message));
            }
        }
        Ok(None)
    }
}

impl WorkQueue for NatsQueue {
    fn push(&self, item: &str, group: &str) -> Result<(), StorageError> {
        let shared = self.shared.clone();
        let subject = format!("{}.{}", shared.subject, names::to_token(group));
        let payload = bytes::Bytes::from(item.to_string());
        let item = item.to_string();
        run_on(&self.handle, async move {
            let message = jetstream::message::PublishMessage::build().payload(payload);
            shared.inner.publish(&subject, message).await.map_err(|e| {
                io(
                    format!(
                        "queueing `{item}` on `{subject}` was not acknowledged by NATS at `{}` (it may or may not be queued)",
                        shared.inner.url
                    ),
                    e,
                )
            })?;
            Ok(())
        })
    }

    fn pull(&self, wait: Duration) -> Result<Option<Box<dyn Delivery>>, StorageError> {
        let shared = self.shared.clone();
        let pulled = run_on(&self.handle, async move {
            let until = Instant::now() + wait;
            loop {
                if let Some(message) = shared.next().await? {
                    let delivered = message
                        .info()
                        .map(|info| u64::try_from(info.delivered).unwrap_or(1))
                        .unwrap_or(1);
                    let (message, acker) = message.split();
                    let item = String::from_utf8_lossy(&message.payload).into_owned();
                    return Ok(Some((item, delivered, acker)));
                }
                let left = until.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Ok(None);
                }
                tokio::time::sleep(left.min(POLL)).await;
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
        self.shared.ack_wait
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
