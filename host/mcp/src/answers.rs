//! The answers an HTTP server still owes its clients, so a stopping server
//! ends its MCP sessions only once they are delivered (threat 46).
//!
//! Why: a request's answer travels on its own stream (a POST answered with
//! server-sent events). A call that finishes during the drain has its answer
//! on the way into that stream; ending the sessions then would cut it. And a
//! client whose stream broke before the answer came (a proxy timeout, a
//! dropped connection, a client that reconnects on its own schedule) resumes
//! it with a `GET` carrying `Last-Event-ID`, which rmcp answers from the
//! request's cached events: a drain that refused that `GET`, or ended the
//! sessions before it came, would lose an answer to a request it had taken.
//!
//! So every answer stream (a POST's, and a resuming GET's) is counted while
//! it is open, and one that is dropped before its end is remembered for a
//! while ([`Answers::linger`]): the drain waits until no stream is open and
//! no broken one may still be resumed, within its grace.

use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::BodyExt;
use http_body_util::combinators::BoxBody;
use hyper::body::{Body, Frame, SizeHint};

/// The answer streams of one server.
#[derive(Debug)]
pub(crate) struct Answers {
    /// Streams open now.
    open: AtomicUsize,
    /// When a stream was last dropped before its end.
    broken_at: Mutex<Option<Instant>>,
    /// How long a broken stream may still be resumed: the client waits the
    /// retry interval the server announced, then reconnects.
    linger: Duration,
}

impl Answers {
    /// Answers whose broken streams clients resume within `linger`.
    pub(crate) fn new(linger: Duration) -> Arc<Answers> {
        Arc::new(Answers {
            open: AtomicUsize::new(0),
            broken_at: Mutex::new(None),
            linger,
        })
    }

    /// `body`, counted as an open answer stream until it ends or is dropped.
    pub(crate) fn track(
        self: &Arc<Self>,
        body: BoxBody<Bytes, std::convert::Infallible>,
    ) -> BoxBody<Bytes, std::convert::Infallible> {
        self.open.fetch_add(1, Ordering::SeqCst);
        Tracked {
            inner: body,
            answers: self.clone(),
            ended: false,
        }
        .boxed()
    }

    /// Returns once no answer stream is open and none broke within the
    /// linger (so none may still be resumed), or at `deadline`.
    pub(crate) async fn delivered(&self, deadline: tokio::time::Instant) {
        loop {
            let broken_recently = self
                .broken_at
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .is_some_and(|at| at.elapsed() < self.linger);
            if self.open.load(Ordering::SeqCst) == 0 && !broken_recently {
                return;
            }
            if tokio::time::Instant::now() >= deadline {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Streams open now (tests).
    #[cfg(test)]
    fn open(&self) -> usize {
        self.open.load(Ordering::SeqCst)
    }
}

/// An answer's body, counted in [`Answers`] while it lives.
struct Tracked {
    inner: BoxBody<Bytes, std::convert::Infallible>,
    answers: Arc<Answers>,
    /// The stream reached its end (the client got all of it).
    ended: bool,
}

impl Body for Tracked {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if let Poll::Ready(None) = polled {
            self.ended = true;
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        if !self.ended && !self.inner.is_end_stream() {
            *self
                .answers
                .broken_at
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Some(Instant::now());
        }
        self.answers.open.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::Full;

    fn full() -> BoxBody<Bytes, std::convert::Infallible> {
        Full::new(Bytes::from_static(b"answer")).boxed()
    }

    /// A body that never yields: an SSE answer still waiting for its call.
    struct Endless;

    impl Body for Endless {
        type Data = Bytes;
        type Error = std::convert::Infallible;
        fn poll_frame(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
            Poll::Pending
        }
    }

    #[tokio::test]
    async fn a_stream_read_to_its_end_is_delivered_at_once() {
        let answers = Answers::new(Duration::from_secs(60));
        let body = answers.track(full());
        assert_eq!(answers.open(), 1);
        let read = body.collect().await.unwrap().to_bytes();
        assert_eq!(&read[..], b"answer");
        assert_eq!(answers.open(), 0);
        let started = Instant::now();
        answers
            .delivered(tokio::time::Instant::now() + Duration::from_secs(5))
            .await;
        assert!(started.elapsed() < Duration::from_secs(1));
    }

    /// A stream dropped before its end (the client went away mid-answer)
    /// holds the drain for the linger, when the client may resume it; never
    /// past the drain's deadline.
    #[tokio::test]
    async fn a_broken_stream_holds_the_drain_for_the_linger() {
        let answers = Answers::new(Duration::from_millis(300));
        drop(answers.track(Endless.boxed()));
        assert_eq!(answers.open(), 0);
        let started = Instant::now();
        answers
            .delivered(tokio::time::Instant::now() + Duration::from_secs(5))
            .await;
        let waited = started.elapsed();
        assert!(
            waited >= Duration::from_millis(250) && waited < Duration::from_secs(2),
            "{waited:?}"
        );
        let answers = Answers::new(Duration::from_secs(600));
        drop(answers.track(Endless.boxed()));
        let started = Instant::now();
        answers
            .delivered(tokio::time::Instant::now() + Duration::from_millis(200))
            .await;
        assert!(started.elapsed() < Duration::from_secs(2));
    }
}
