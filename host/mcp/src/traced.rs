//! The W3C trace context a request carries (`traceparent` in its `_meta`,
//! or the HTTP header): the call it makes joins the caller's trace.
//!
//! Why here: only the entry point sees the request. It parses the context
//! (`glovebox::trace`, which also puts the trace id in the call's log) and
//! opens the request's span; with the OTLP exporter built in (feature
//! `otlp`) that span's parent is the caller's span, so the call's span,
//! opened inside it by the pipeline, is exported in the caller's trace.

use rmcp::RoleServer;
use rmcp::service::RequestContext;

use glovebox::trace::TraceParent;

/// The trace context of a request: its `_meta.traceparent`, else its HTTP
/// `traceparent` header; a malformed one is ignored.
pub(crate) fn parent_of(context: &RequestContext<RoleServer>) -> Option<TraceParent> {
    let header = context
        .extensions
        .get::<::http::request::Parts>()
        .and_then(|parts| parts.headers.get("traceparent"))
        .and_then(|value| value.to_str().ok());
    context
        .meta
        .get_traceparent()
        .or(header)
        .and_then(TraceParent::parse)
}

/// The span of one `tools/call`, a child of the caller's span when the
/// request named one and the exporter is built in.
pub(crate) fn request_span(tool: &str, parent: Option<&TraceParent>) -> tracing::Span {
    let span = tracing::info_span!("mcp.tools_call", tool = %tool);
    #[cfg(feature = "otlp")]
    if let Some(parent) = parent {
        adopt(&span, parent);
    }
    #[cfg(not(feature = "otlp"))]
    let _ = parent;
    span
}

#[cfg(feature = "otlp")]
fn adopt(span: &tracing::Span, parent: &TraceParent) {
    use opentelemetry::trace::{
        SpanContext, SpanId, TraceContextExt as _, TraceFlags, TraceId, TraceState,
    };
    use tracing_opentelemetry::OpenTelemetrySpanExt as _;
    let (Ok(trace_id), Ok(span_id)) = (
        TraceId::from_hex(&parent.trace_id),
        SpanId::from_hex(&parent.parent_id),
    ) else {
        return;
    };
    let remote = SpanContext::new(
        trace_id,
        span_id,
        TraceFlags::new(parent.flags),
        true,
        TraceState::default(),
    );
    // Without the exporter's layer there is nothing to parent: fine.
    let _ = span.set_parent(opentelemetry::Context::new().with_remote_span_context(remote));
}
