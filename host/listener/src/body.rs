//! A request body that must arrive whole within a deadline (threat 43).
//!
//! Why: hyper bounds how long a request's line and headers take
//! (`header_read_timeout`) but not its body, so a client that sends its
//! headers and then a byte now and then holds a connection (and whatever
//! the handler holds while it reads) for as long as it likes. A body here
//! must end within [`crate::Limits::body_timeout`] of its request's
//! arrival; past it reading fails, the handler answers an error, and the
//! connection closes (its body was not read to the end). tower-http's
//! `TimeoutBody` restarts its timer at every frame, which is exactly what a
//! dribbling client defeats, so this small wrapper sets one deadline for
//! the whole body.
//!
//! A layer that must read a body before the handler does (the MCP layer's
//! scope check of a `tools/call`) hands it on as [`TimedBody::whole`].

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::body::{Body, Bytes, Frame, Incoming, SizeHint};

/// A request's body with a deadline for all of it.
pub struct TimedBody {
    inner: Inner,
    deadline: Pin<Box<tokio::time::Sleep>>,
    within: Duration,
}

enum Inner {
    /// Still arriving.
    Arriving(Incoming),
    /// Read whole already (taken by the first poll).
    Whole(Option<Bytes>),
}

impl TimedBody {
    /// `inner`, which must end within `within` from now.
    pub fn new(inner: Incoming, within: Duration) -> TimedBody {
        TimedBody {
            inner: Inner::Arriving(inner),
            deadline: Box::pin(tokio::time::sleep(within)),
            within,
        }
    }

    /// A body already read whole (within its deadline): `bytes`, at once.
    pub fn whole(bytes: Bytes) -> TimedBody {
        TimedBody {
            inner: Inner::Whole(Some(bytes)),
            deadline: Box::pin(tokio::time::sleep(Duration::ZERO)),
            within: Duration::ZERO,
        }
    }
}

/// The body did not arrive in time.
#[derive(Debug)]
pub struct BodyTimeout(Duration);

impl fmt::Display for BodyTimeout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the request body did not arrive within {} s: send it whole at once",
            self.0.as_secs()
        )
    }
}

impl std::error::Error for BodyTimeout {}

impl Body for TimedBody {
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        let inner = match &mut this.inner {
            Inner::Arriving(inner) => inner,
            Inner::Whole(bytes) => return Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
        };
        match Pin::new(inner).poll_frame(cx) {
            Poll::Ready(frame) => Poll::Ready(frame.map(|f| f.map_err(Into::into))),
            Poll::Pending => match this.deadline.as_mut().poll(cx) {
                Poll::Ready(()) => {
                    tracing::info!(
                        within_s = this.within.as_secs(),
                        "HTTP request body too slow: cut off"
                    );
                    Poll::Ready(Some(Err(Box::new(BodyTimeout(this.within)))))
                }
                Poll::Pending => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.inner {
            Inner::Arriving(inner) => inner.is_end_stream(),
            Inner::Whole(bytes) => bytes.is_none(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.inner {
            Inner::Arriving(inner) => inner.size_hint(),
            Inner::Whole(bytes) => {
                SizeHint::with_exact(bytes.as_ref().map_or(0, |b| b.len() as u64))
            }
        }
    }
}
