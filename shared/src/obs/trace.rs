//! One trace per job (issue 40 item 4, docs/OPERATIONS.md "Traces"): OpenTelemetry spans,
//! exported over OTLP/HTTP when `OTEL_EXPORTER_OTLP_ENDPOINT` (or
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set, and the W3C `traceparent` that ties a job's
//! requests, its manifest and its worker together.
//!
//! Unset, nothing is built: no exporter, no provider, no layer, no span per request (the cold
//! start stays a hello-world's, docs/PERFORMANCE.md section 1); [`enabled`] is one atomic load.
//! Spans carry ids, routes and stages, never a nonce, a token, a signature, a secret or a header.
//! Imports of the crate: `domain` (the `traceparent` type).

use std::sync::OnceLock;

use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState, TracerProvider};
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use tracing_opentelemetry::{OpenTelemetryLayer, OpenTelemetrySpanExt};
use tracing_subscriber::registry::LookupSpan;

use super::otlp_http::ExportClient;
use crate::domain::trace::{Traceparent, SAMPLED};

/// The process's provider, once [`layer`] built one.
static PROVIDER: OnceLock<SdkTracerProvider> = OnceLock::new();

/// The name of the W3C header, on the trigger's and retry's requests and the worker's webhooks.
pub const TRACEPARENT: &str = "traceparent";

/// Whether spans are exported (a provider was built).
pub fn enabled() -> bool {
    PROVIDER.get().is_some()
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
}

/// Whether the environment asks for an exporter.
pub fn requested() -> bool {
    env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_some() || env("OTEL_EXPORTER_OTLP_ENDPOINT").is_some()
}

/// Why spans cannot be exported as asked.
#[derive(Debug, thiserror::Error)]
pub enum TraceSetupError {
    #[error("OTEL_EXPORTER_OTLP_PROTOCOL is {0:?}: spans are exported as http/protobuf or http/json")]
    Protocol(String),
    #[error("the OTLP span exporter could not be built: {0}")]
    Exporter(String),
}

/// `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`, else `OTEL_EXPORTER_OTLP_PROTOCOL`, else http/protobuf
/// (the specification's default for OTLP/HTTP; gRPC is not built in).
pub fn protocol() -> Result<Protocol, TraceSetupError> {
    match env("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL").or_else(|| env("OTEL_EXPORTER_OTLP_PROTOCOL")).as_deref() {
        None | Some("http/protobuf") => Ok(Protocol::HttpBinary),
        Some("http/json") => Ok(Protocol::HttpJson),
        Some(other) => Err(TraceSetupError::Protocol(other.to_owned())),
    }
}

/// The tracing layer that turns spans into OpenTelemetry spans, and the provider behind it
/// (kept for [`flush`]); `None` when no endpoint is set. The exporter reads the rest of its
/// configuration as the OpenTelemetry specification says (`OTEL_EXPORTER_OTLP_HEADERS`,
/// `OTEL_EXPORTER_OTLP_TIMEOUT`, `OTEL_BSP_*`, `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`);
/// `service` names the service when `OTEL_SERVICE_NAME` does not.
pub fn layer<S>(service: &str) -> Result<Option<OpenTelemetryLayer<S, SdkTracer>>, TraceSetupError>
where
    S: tracing::Subscriber + for<'span> LookupSpan<'span>,
{
    if !requested() {
        return Ok(None);
    }
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(protocol()?)
        .with_http_client(ExportClient::from_env().map_err(|e| TraceSetupError::Exporter(e.to_string()))?)
        .build()
        .map_err(|e| TraceSetupError::Exporter(e.to_string()))?;
    let mut resource = opentelemetry_sdk::Resource::builder();
    if env("OTEL_SERVICE_NAME").is_none() {
        resource = resource.with_service_name(service.to_owned());
    }
    // The batch processor exports from a thread of its own (the client drives each request on
    // a runtime of its own there), so a flush from the single-threaded runtime (the Lambda's)
    // waits on that thread, never on itself.
    let provider = SdkTracerProvider::builder().with_batch_exporter(exporter).with_resource(resource.build()).build();
    let tracer = provider.tracer("code2des");
    if PROVIDER.set(provider).is_err() {
        // A second set-up in one process (a test harness): the first provider stays.
        return Ok(None);
    }
    Ok(Some(tracing_opentelemetry::layer().with_tracer(tracer)))
}

/// Exports every span ended so far, and waits for it. On Lambda, after each invocation: the
/// instance may be frozen once it asks for the next event, and a span still in the batch
/// would wait for a thaw that may never come.
pub fn flush() {
    if let Some(provider) = PROVIDER.get() {
        if let Err(e) = provider.force_flush() {
            tracing::warn!(error = %e, "spans could not be exported");
        }
    }
}

/// Makes `span` continue the caller's trace: its parent is the caller's span.
pub fn continue_trace(span: &tracing::Span, caller: Option<Traceparent>) {
    let Some(tp) = caller.filter(|_| enabled()) else { return };
    let remote = SpanContext::new(
        TraceId::from_bytes(tp.trace_id),
        SpanId::from_bytes(tp.parent_id),
        TraceFlags::new(tp.flags),
        true,
        TraceState::default(),
    );
    // An error means the span is disabled (filtered out): there is nothing to continue.
    let _ = span.set_parent(opentelemetry::Context::new().with_remote_span_context(remote));
}

/// The `traceparent` naming `span` as the parent, when spans are exported and it is recorded.
pub fn traceparent_of(span: &tracing::Span) -> Option<Traceparent> {
    if !enabled() {
        return None;
    }
    let context = span.context();
    let otel = context.span();
    let sc = otel.span_context();
    sc.is_valid().then(|| Traceparent {
        trace_id: sc.trace_id().to_bytes(),
        parent_id: sc.span_id().to_bytes(),
        flags: sc.trace_flags().to_u8(),
    })
}

/// The `traceparent` to send on from the current span: the current span's when spans are
/// exported; otherwise the caller's (`caller`, when valid), so that a worker that traces on its
/// own still joins the caller's trace; otherwise a new trace, as the W3C specification asks of
/// a service that receives none.
pub fn outgoing(caller: Option<Traceparent>) -> Traceparent {
    traceparent_of(&tracing::Span::current()).or(caller).unwrap_or_else(|| Traceparent {
        trace_id: nonzero(rand::random()),
        parent_id: nonzero(rand::random()),
        flags: SAMPLED,
    })
}

/// A random id is all zeros once in 2^64 draws or more; all zeros is the one invalid id.
fn nonzero<const N: usize>(mut id: [u8; N]) -> [u8; N] {
    if id.iter().all(|b| *b == 0) {
        id[N - 1] = 1;
    }
    id
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_an_exporter_the_callers_trace_goes_on_else_a_new_one_starts() {
        let caller = Traceparent::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
        assert_eq!(Some(outgoing(caller)), caller);
        let (a, b) = (outgoing(None), outgoing(None));
        assert_ne!(a.trace_id, b.trace_id);
        assert!(a.sampled());
        assert_eq!(Traceparent::parse(&a.to_string()), Some(a));
        assert_eq!(nonzero([0u8; 8]), [0, 0, 0, 0, 0, 0, 0, 1]);
    }
}
