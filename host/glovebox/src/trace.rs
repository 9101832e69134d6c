//! The W3C trace context of the request a call serves.
//!
//! Why: an agent's client that traces its own work (OpenTelemetry) sends a
//! `traceparent` with each request; the call Glovebox makes of it should be
//! a step of that trace, not a trace of its own, and the call's log should
//! say which trace it belongs to, so that a trace and a session's log can
//! be read side by side. The entry point (the MCP adapter) parses what the
//! request carries and runs the call [`within`] it; the pipeline records
//! its trace id in the call's `call_requested` event ([`current_trace_id`]);
//! the span's parent is the exporter's business (the MCP adapter sets it
//! when the OTLP exporter is built in).
//!
//! A malformed `traceparent` is ignored, as the W3C recommendation says: a
//! trace header never refuses a request.

use std::future::Future;

tokio::task_local! {
    static CURRENT: TraceParent;
}

/// A parsed `traceparent` (version 00): `00-<trace id>-<parent id>-<flags>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceParent {
    /// 32 lowercase hex digits, not all zero.
    pub trace_id: String,
    /// 16 lowercase hex digits, not all zero: the caller's span.
    pub parent_id: String,
    /// The trace flags (bit 0: sampled).
    pub flags: u8,
}

impl TraceParent {
    /// Parses a `traceparent` value; `None` when it is not a valid one.
    /// A version above 00 is read as 00 (its first four fields), as the
    /// recommendation asks; version `ff` is invalid.
    pub fn parse(value: &str) -> Option<TraceParent> {
        let mut parts = value.trim().split('-');
        let (version, trace_id, parent_id, flags) =
            (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
        if version.len() != 2 || version == "ff" || !is_hex(version) {
            return None;
        }
        if version == "00" && parts.next().is_some() {
            return None;
        }
        let valid =
            |id: &str, len: usize| id.len() == len && is_hex(id) && id.bytes().any(|b| b != b'0');
        if !valid(trace_id, 32) || !valid(parent_id, 16) || flags.len() != 2 || !is_hex(flags) {
            return None;
        }
        Some(TraceParent {
            trace_id: trace_id.to_string(),
            parent_id: parent_id.to_string(),
            flags: u8::from_str_radix(flags, 16).ok()?,
        })
    }
}

/// Lowercase hex only (the recommendation's form).
fn is_hex(s: &str) -> bool {
    s.bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Runs `future` as part of the trace `parent` names (when there is one).
pub async fn within<F: Future>(parent: Option<TraceParent>, future: F) -> F::Output {
    match parent {
        Some(parent) => CURRENT.scope(parent, future).await,
        None => future.await,
    }
}

/// The trace of the request being served, if it named one: for work it
/// starts in a task of its own, which runs [`within`] it too.
pub fn current() -> Option<TraceParent> {
    CURRENT.try_with(Clone::clone).ok()
}

/// The trace id of the request being served, if it named one.
pub fn current_trace_id() -> Option<String> {
    CURRENT.try_with(|t| t.trace_id.clone()).ok()
}

#[cfg(test)]
mod tests {
    use super::TraceParent;

    #[test]
    fn a_valid_traceparent_parses_and_malformed_ones_are_ignored() {
        let tp =
            TraceParent::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").unwrap();
        assert_eq!(tp.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(tp.parent_id, "00f067aa0ba902b7");
        assert_eq!(tp.flags, 1);
        // A later version: its first four fields.
        assert!(
            TraceParent::parse("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra")
                .is_some()
        );
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",
        ] {
            assert_eq!(TraceParent::parse(bad), None, "{bad}");
        }
    }
}
