//! The transport limits of Glovebox's HTTP listeners (the MCP server and the
//! operator's admin listener), in one place, so both hold the same bounds:
//!
//! - at most `max_connections` connections are served at once; the others
//!   wait in the listen backlog until one ends (never an unbounded number of
//!   tasks);
//! - a request's line and headers must arrive within `header_timeout` and
//!   `max_header_bytes`, and its body within `body_timeout` (a slow-loris
//!   client is cut off; see `body.rs`);
//! - an error accepting a connection (`EMFILE`: out of descriptors) backs
//!   off before the next accept instead of spinning on the error;
//! - stopping is two steps: [`accept_until`] returns when `stop` is
//!   cancelled (no new connection), and the connections it started end
//!   gracefully when the caller cancels `close` (after it drained what it
//!   must), so in-flight answers still go out.
//!
//! Each service is made for its connection's [`Peer`] (its address, and on
//! loopback the uid that owns the peer's socket: `peer.rs`).
//!
//! It knows no route and no protocol above HTTP/1.1: the caller hands it the
//! service. It never imports the host.

#![forbid(unsafe_code)]

mod body;
mod peer;

pub use body::{BodyTimeout, TimedBody};
pub use peer::{Peer, PeerUidError, own_uid};

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use hyper::body::{Body, Incoming};
use hyper::{Request, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// A request's line and headers must arrive within this, by default.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// A request's body must arrive whole within this, by default.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// The most a request's line and headers may take, by default.
pub const MAX_HEADER_BYTES: usize = 64 << 10;
/// The connections served at once, by default.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;
/// The first pause after a failed accept; it doubles up to [`MAX_ACCEPT_BACKOFF`].
const ACCEPT_BACKOFF: Duration = Duration::from_millis(10);
const MAX_ACCEPT_BACKOFF: Duration = Duration::from_secs(1);

/// The bounds of one listener.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub max_connections: usize,
    pub header_timeout: Duration,
    pub max_header_bytes: usize,
    pub body_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: DEFAULT_MAX_CONNECTIONS,
            header_timeout: HEADER_TIMEOUT,
            max_header_bytes: MAX_HEADER_BYTES,
            body_timeout: BODY_TIMEOUT,
        }
    }
}

/// Accepts connections on `listener` until `stop` is cancelled, serving
/// each with the service `make` builds for its peer, within `limits` (its
/// requests' bodies as [`TimedBody`]).
/// Returns the tracker of the connections still open: the caller cancels
/// `close` when they should end (each finishes the request it serves and
/// closes), then waits on the tracker, with a timeout of its own.
pub async fn accept_until<M, S, B>(
    listener: &TcpListener,
    limits: Limits,
    stop: &CancellationToken,
    close: &CancellationToken,
    mut make: M,
) -> TaskTracker
where
    M: FnMut(Peer) -> S,
    S: hyper::service::Service<Request<TimedBody>, Response = Response<B>, Error = Infallible>
        + Send
        + 'static,
    S::Future: Send + 'static,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let slots = Arc::new(tokio::sync::Semaphore::new(limits.max_connections.max(1)));
    let connections = TaskTracker::new();
    let mut backoff = ACCEPT_BACKOFF;
    loop {
        // A slot first: at the cap, new connections wait in the backlog.
        let slot = tokio::select! {
            () = stop.cancelled() => break,
            slot = slots.clone().acquire_owned() => match slot {
                Ok(slot) => slot,
                Err(_) => break,
            },
        };
        let (stream, peer) = tokio::select! {
            () = stop.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => {
                    backoff = ACCEPT_BACKOFF;
                    accepted
                }
                Err(e) => {
                    // Out of descriptors or memory: the error repeats until
                    // something is freed, so wait rather than spin.
                    tracing::warn!(error = %e, pause_ms = backoff.as_millis() as u64, "cannot accept an HTTP connection; pausing");
                    tokio::select! {
                        () = stop.cancelled() => break,
                        () = tokio::time::sleep(backoff) => {}
                    }
                    backoff = (backoff * 2).min(MAX_ACCEPT_BACKOFF);
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let local = match stream.local_addr() {
            Ok(local) => local,
            Err(e) => {
                tracing::debug!(%peer, error = %e, "an accepted connection has no local address: dropped");
                continue;
            }
        };
        let service = make(Peer::new(peer, local));
        let body_timeout = limits.body_timeout;
        let service = hyper::service::service_fn(move |req: Request<Incoming>| {
            service.call(req.map(|body| TimedBody::new(body, body_timeout)))
        });
        let close = close.clone();
        connections.spawn(async move {
            let _slot = slot;
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(limits.header_timeout)
                .max_buf_size(limits.max_header_bytes)
                .serve_connection(TokioIo::new(stream), service);
            let mut conn = std::pin::pin!(conn);
            tokio::select! {
                r = conn.as_mut() => {
                    if let Err(e) = r {
                        tracing::debug!(%peer, error = %e, "HTTP connection ended with an error");
                    }
                }
                () = close.cancelled() => {
                    conn.as_mut().graceful_shutdown();
                    let _ = conn.as_mut().await;
                }
            }
        });
    }
    connections
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::SocketAddr;
    use std::time::Instant;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    /// A listener serving "ok" within `limits`; its address and stop token.
    async fn serve(limits: Limits) -> (SocketAddr, CancellationToken) {
        serve_with(limits, |_| {
            hyper::service::service_fn(|_req: Request<TimedBody>| async {
                Ok::<_, Infallible>(Response::new(http_body_util::Full::new(
                    hyper::body::Bytes::from_static(b"ok"),
                )))
            })
        })
        .await
    }

    /// A listener serving what `make` makes within `limits`; its address
    /// and stop token. Once stopped it closes the connections still open.
    async fn serve_with<M, S>(limits: Limits, make: M) -> (SocketAddr, CancellationToken)
    where
        M: FnMut(Peer) -> S + Send + 'static,
        S: hyper::service::Service<
                Request<TimedBody>,
                Response = Response<http_body_util::Full<hyper::body::Bytes>>,
                Error = Infallible,
            > + Send
            + 'static,
        S::Future: Send + 'static,
    {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, close) = (CancellationToken::new(), CancellationToken::new());
        let token = stop.clone();
        tokio::spawn(async move {
            let open = accept_until(&listener, limits, &token, &close, make).await;
            close.cancel();
            open.close();
            open.wait().await;
        });
        (addr, stop)
    }

    async fn get(stream: &mut TcpStream) -> String {
        stream
            .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let mut buf = vec![0u8; 1024];
        let n = stream.read(&mut buf).await.unwrap();
        String::from_utf8_lossy(&buf[..n]).into_owned()
    }

    #[tokio::test]
    async fn threat_43_a_client_that_dribbles_its_headers_is_cut_off() {
        let limits = Limits {
            header_timeout: Duration::from_millis(300),
            ..Limits::default()
        };
        let (addr, _stop) = serve(limits).await;
        let mut slow = TcpStream::connect(addr).await.unwrap();
        slow.write_all(b"GET / HTTP/1.1\r\nHo").await.unwrap();
        let start = Instant::now();
        let mut buf = [0u8; 256];
        // The server closes it (with or without a 408) well before 10 s.
        let read = tokio::time::timeout(Duration::from_secs(10), slow.read(&mut buf)).await;
        assert!(read.is_ok(), "the dribbling connection was never closed");
        assert!(start.elapsed() >= Duration::from_millis(250));
        // Others are served meanwhile and after.
        let mut other = TcpStream::connect(addr).await.unwrap();
        assert!(get(&mut other).await.starts_with("HTTP/1.1 200"));
    }

    #[tokio::test]
    async fn threat_43_a_client_that_dribbles_its_body_is_cut_off() {
        let limits = Limits {
            body_timeout: Duration::from_millis(300),
            ..Limits::default()
        };
        // Reads the whole body, as a JSON handler does.
        let (addr, stop) = serve_with(limits, |_| {
            hyper::service::service_fn(|req: Request<TimedBody>| async move {
                use http_body_util::BodyExt;
                let status = match req.into_body().collect().await {
                    Ok(_) => 200,
                    Err(_) => 408,
                };
                let mut r = Response::new(http_body_util::Full::new(
                    hyper::body::Bytes::from_static(b"x"),
                ));
                *r.status_mut() = hyper::StatusCode::from_u16(status).unwrap();
                Ok::<_, Infallible>(r)
            })
        })
        .await;
        let mut slow = TcpStream::connect(addr).await.unwrap();
        slow.write_all(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
            .await
            .unwrap();
        let start = Instant::now();
        // A byte every 100 ms: each well within any per-frame timer.
        let answer = async {
            let mut all = Vec::new();
            let mut buf = [0u8; 256];
            loop {
                tokio::select! {
                    n = slow.read(&mut buf) => match n {
                        Ok(0) | Err(_) => break all,
                        Ok(n) => all.extend_from_slice(&buf[..n]),
                    },
                    () = tokio::time::sleep(Duration::from_millis(100)) => {
                        let _ = slow.write_all(b" ").await;
                    }
                }
            }
        };
        let all = tokio::time::timeout(Duration::from_secs(10), answer)
            .await
            .expect("the dribbling body was never cut off");
        assert!(
            String::from_utf8_lossy(&all).starts_with("HTTP/1.1 408"),
            "{}",
            String::from_utf8_lossy(&all)
        );
        assert!(start.elapsed() >= Duration::from_millis(250));
        stop.cancel();
    }

    #[tokio::test]
    async fn threat_43_connections_past_the_cap_wait_until_one_ends() {
        let limits = Limits {
            max_connections: 2,
            ..Limits::default()
        };
        let (addr, stop) = serve(limits).await;
        let mut held = Vec::new();
        for _ in 0..2 {
            let mut s = TcpStream::connect(addr).await.unwrap();
            assert!(get(&mut s).await.starts_with("HTTP/1.1 200"));
            held.push(s); // keep-alive: the connection stays open
        }
        // The third connects (the backlog takes it) but is not served...
        let mut third = TcpStream::connect(addr).await.unwrap();
        third
            .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let mut buf = [0u8; 256];
        let waited = tokio::time::timeout(Duration::from_millis(500), third.read(&mut buf)).await;
        assert!(
            waited.is_err(),
            "a third connection was served past the cap of 2"
        );
        // ...until one of the two ends.
        drop(held.pop());
        let n = tokio::time::timeout(Duration::from_secs(5), third.read(&mut buf))
            .await
            .expect("served once a slot was free")
            .unwrap();
        assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
        stop.cancel();
    }
}
