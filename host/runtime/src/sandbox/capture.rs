//! Bounded capture of a guest's stdout and stderr.
//!
//! The guest may write as much as it likes; the host keeps the first `limit`
//! bytes, counts the rest and marks the capture truncated. Writes never fail
//! and never block, so flooding stdout neither traps the guest nor grows the
//! host's memory.

use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use bytes::Bytes;
use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};

// What a capture yields is a value type the ledger records too (a job's
// stdout and stderr): it lives in `glovebox-manifest`, re-exported here at its
// old path.
pub use glovebox_manifest::Captured;

#[derive(Default)]
struct Buffer {
    kept: Vec<u8>,
    total: u64,
}

/// A stdout/stderr sink that keeps at most `limit` bytes.
#[derive(Clone)]
pub struct CapturePipe {
    limit: usize,
    buffer: Arc<Mutex<Buffer>>,
}

impl CapturePipe {
    pub fn new(limit: u64) -> CapturePipe {
        CapturePipe {
            limit: usize::try_from(limit).unwrap_or(usize::MAX),
            buffer: Arc::default(),
        }
    }

    fn push(&self, bytes: &[u8]) {
        let mut buf = self.buffer.lock().unwrap_or_else(PoisonError::into_inner);
        buf.total += bytes.len() as u64;
        let room = self.limit.saturating_sub(buf.kept.len());
        let take = room.min(bytes.len());
        buf.kept.extend_from_slice(&bytes[..take]);
    }

    /// What was captured so far.
    pub fn captured(&self) -> Captured {
        let buf = self.buffer.lock().unwrap_or_else(PoisonError::into_inner);
        Captured {
            text: String::from_utf8_lossy(&buf.kept).into_owned(),
            total_bytes: buf.total,
            truncated: buf.total > buf.kept.len() as u64,
        }
    }
}

impl IsTerminal for CapturePipe {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for CapturePipe {
    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }

    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for CapturePipe {
    async fn ready(&mut self) {}
}

#[wasmtime_wasi::async_trait]
impl OutputStream for CapturePipe {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.push(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        // Always room: what does not fit is counted and dropped.
        Ok(1024 * 1024)
    }
}

impl AsyncWrite for CapturePipe {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.push(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_first_bytes_and_counts_the_rest() {
        let mut pipe = CapturePipe::new(4);
        pipe.write(Bytes::from_static(b"abc")).unwrap();
        pipe.write(Bytes::from_static(b"defgh")).unwrap();
        let c = pipe.captured();
        assert_eq!(c.text, "abcd");
        assert_eq!(c.total_bytes, 8);
        assert!(c.truncated);
    }

    #[test]
    fn not_truncated_when_it_fits() {
        let mut pipe = CapturePipe::new(16);
        pipe.write(Bytes::from_static(b"hello")).unwrap();
        let c = pipe.captured();
        assert_eq!(
            (c.text.as_str(), c.total_bytes, c.truncated),
            ("hello", 5, false)
        );
    }
}
