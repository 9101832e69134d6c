//! The MCP `logging` capability: a connection hears the server's log lines
//! about its own requests (a hook's decision, a blocker flag, a call that
//! failed inside the host), at or above the level it set with
//! `logging/setLevel` (`warning` until it sets one).
//!
//! How a line finds its connection: each request runs with the connection's
//! sink named for its work (`glovebox::tasks::acting_with`), which the
//! gateway carries to the blocking work and tasks it starts; the tracing
//! layer here ([`connection_log`], installed by the binary beside its own
//! log) hands every line written where a sink is named to that sink. The
//! sink never blocks: lines go through a bounded queue to a task that sends
//! them, and a line that finds the queue full is dropped (the host's own
//! log keeps it).
//!
//! Protocol revision 2026-07-28 deprecates `logging` (SEP-2577); the
//! revisions this server serves (up to 2025-11-25) have it, hence the
//! `allow(deprecated)`.
#![allow(deprecated)]

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::RoleServer;
use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
use serde_json::Value;
use tracing::field::{Field, Visit};
use tracing_subscriber::Layer;
use tracing_subscriber::filter::filter_fn;
use tracing_subscriber::layer::Context;

use glovebox::tasks::LogSink;

/// Lines waiting to be sent to one connection at most.
const QUEUE: usize = 256;

/// A connection's log: its level and the lines on their way to it.
pub(crate) struct ConnectionLog {
    level: Arc<AtomicU8>,
    lines: tokio::sync::mpsc::Sender<LoggingMessageNotificationParam>,
    /// Taken by the task that sends the lines, once the peer is known.
    waiting: Mutex<Option<tokio::sync::mpsc::Receiver<LoggingMessageNotificationParam>>>,
}

impl ConnectionLog {
    pub(crate) fn new() -> ConnectionLog {
        let (lines, waiting) = tokio::sync::mpsc::channel(QUEUE);
        ConnectionLog {
            level: Arc::new(AtomicU8::new(rank(LoggingLevel::Warning))),
            lines,
            waiting: Mutex::new(Some(waiting)),
        }
    }

    /// `logging/setLevel`.
    pub(crate) fn set_level(&self, level: LoggingLevel) {
        self.level.store(rank(level), Ordering::Relaxed);
    }

    /// The sink for one request's work; the first call starts the task that
    /// sends the lines to `peer` (it ends with the connection).
    pub(crate) fn sink(&self, peer: &rmcp::Peer<RoleServer>) -> LogSink {
        let waiting = self
            .waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(mut waiting) = waiting {
            let peer = peer.clone();
            tokio::spawn(async move {
                while let Some(line) = waiting.recv().await {
                    if peer.notify_logging_message(line).await.is_err() {
                        break;
                    }
                }
            });
        }
        let (level, lines) = (self.level.clone(), self.lines.clone());
        Arc::new(move |at: tracing::Level, target: &str, text: String| {
            let at = of(at);
            if rank(at) < level.load(Ordering::Relaxed) {
                return;
            }
            let line = LoggingMessageNotificationParam::new(at, Value::String(text))
                .with_logger(target.to_string());
            let _ = lines.try_send(line);
        })
    }
}

/// The layer that hands Glovebox's log lines to the sink named where they
/// are written (see the module docs). Only Glovebox's own targets, at
/// debug and above, reach it.
pub fn connection_log<S>() -> impl Layer<S>
where
    S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
{
    Lines.with_filter(filter_fn(|meta| {
        meta.target().starts_with("glovebox") && *meta.level() <= tracing::Level::DEBUG
    }))
}

struct Lines;

impl<S: tracing::Subscriber> Layer<S> for Lines {
    fn on_event(&self, event: &tracing::Event<'_>, _ctx: Context<'_, S>) {
        let Some(sink) = glovebox::tasks::log_sink() else {
            return;
        };
        let mut text = Text::default();
        event.record(&mut text);
        let meta = event.metadata();
        sink(*meta.level(), meta.target(), text.finish());
    }
}

/// An event's message, then its other fields as `key=value`.
#[derive(Default)]
struct Text {
    message: String,
    fields: String,
}

impl Text {
    fn finish(self) -> String {
        match (self.message.is_empty(), self.fields.is_empty()) {
            (_, true) => self.message,
            (true, false) => self.fields,
            (false, false) => format!("{} {}", self.message, self.fields),
        }
    }
}

impl Visit for Text {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message.push_str(value);
        } else {
            self.push(field, format_args!("{value}"));
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.message, "{value:?}");
        } else {
            self.push(field, format_args!("{value:?}"));
        }
    }
}

impl Text {
    fn push(&mut self, field: &Field, value: std::fmt::Arguments<'_>) {
        if !self.fields.is_empty() {
            self.fields.push(' ');
        }
        let _ = write!(self.fields, "{}={value}", field.name());
    }
}

/// MCP's level for a tracing level.
fn of(level: tracing::Level) -> LoggingLevel {
    match level {
        tracing::Level::ERROR => LoggingLevel::Error,
        tracing::Level::WARN => LoggingLevel::Warning,
        tracing::Level::INFO => LoggingLevel::Info,
        _ => LoggingLevel::Debug,
    }
}

/// Levels in order of severity.
fn rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_rank_by_severity() {
        assert!(rank(of(tracing::Level::ERROR)) > rank(of(tracing::Level::WARN)));
        assert!(rank(of(tracing::Level::WARN)) > rank(of(tracing::Level::INFO)));
        assert!(rank(of(tracing::Level::INFO)) > rank(of(tracing::Level::DEBUG)));
        assert_eq!(of(tracing::Level::TRACE), LoggingLevel::Debug);
    }
}
