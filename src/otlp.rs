//! The optional OTLP trace exporter (feature `otlp`): the host's spans (a
//! `call` span per call with its session, call, job and principal ids, and
//! the hook and store spans inside it) sent to an OpenTelemetry collector
//! over OTLP/HTTP.
//!
//! Off unless the operator asks: it starts only when the standard variable
//! `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`)
//! is set, so a host never contacts an address nobody configured. Spans are
//! batched and exported from a thread of the exporter's own; a collector
//! that is down or slow drops spans, never a call. `OTEL_SERVICE_NAME`
//! names the service (default `glovebox`).

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, SpanExporter, WithExportConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::Layer;
use tracing_subscriber::registry::LookupSpan;

/// The exporter while it runs; [`Exporter::shutdown`] flushes what is batched.
pub struct Exporter(SdkTracerProvider);

impl Exporter {
    /// Sends what is still batched, then stops.
    pub fn shutdown(self) {
        if let Err(e) = self.0.shutdown() {
            eprintln!("glovebox: the OTLP exporter did not flush: {e}");
        }
    }
}

/// The tracing layer that feeds the exporter, when an endpoint is set.
pub fn layer<S>() -> Option<(impl Layer<S>, Exporter)>
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
{
    let set = |name: &str| std::env::var(name).is_ok_and(|v| !v.trim().is_empty());
    if !set("OTEL_EXPORTER_OTLP_ENDPOINT") && !set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
        return None;
    }
    let exporter = match SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .build()
    {
        Ok(exporter) => exporter,
        Err(e) => {
            eprintln!(
                "glovebox: OTEL_EXPORTER_OTLP_ENDPOINT is set, but the OTLP exporter cannot start: {e}; check the URL (e.g. http://127.0.0.1:4318)"
            );
            return None;
        }
    };
    let service = std::env::var("OTEL_SERVICE_NAME").unwrap_or_else(|_| "glovebox".into());
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(Resource::builder().with_service_name(service).build())
        .build();
    let tracer = provider.tracer("glovebox");
    let layer = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_filter(tracing_subscriber::filter::LevelFilter::INFO);
    Some((layer, Exporter(provider)))
}
