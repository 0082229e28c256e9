//! An OTLP/HTTP trace receiver on loopback (feature `otlp`): what a collector would be to the
//! services under test. It takes `POST /v1/traces` in both encodings OTLP/HTTP has,
//! `application/x-protobuf` and `application/json`, decodes them with the OpenTelemetry protocol's
//! own types, and keeps every span for the test to read back.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Request, Response, StatusCode};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue};
use prost::Message;

/// One span as received.
#[derive(Debug, Clone)]
pub struct Span {
    /// Lowercase hex, as a `traceparent` spells them.
    pub trace_id: String,
    pub span_id: String,
    /// Empty for a root span.
    pub parent_span_id: String,
    pub name: String,
    /// The resource's `service.name`.
    pub service: String,
    /// Every attribute, its value as text.
    pub attributes: BTreeMap<String, String>,
    /// Every value the span carries, its events' attributes too: what a test searches for a
    /// secret.
    pub all_values: Vec<String>,
    /// The request's `content-type`: which encoding the exporter used.
    pub content_type: String,
}

impl Span {
    pub fn attribute(&self, key: &str) -> Option<&str> {
        self.attributes.get(key).map(String::as_str)
    }
}

/// The receiver: spans collected until it is dropped (its server task is aborted then).
pub struct Receiver {
    /// `http://127.0.0.1:{port}`: an `OTEL_EXPORTER_OTLP_ENDPOINT`.
    pub endpoint: String,
    spans: Arc<Mutex<Vec<Span>>>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl Receiver {
    pub async fn start() -> Receiver {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a loopback port");
        let endpoint = format!("http://{}", listener.local_addr().expect("its address"));
        let spans = Arc::new(Mutex::new(Vec::new()));
        let kept = spans.clone();
        let server = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let kept = kept.clone();
                let service = hyper::service::service_fn(move |req| receive(kept.clone(), req));
                tokio::spawn(async move {
                    let io = hyper_util::rt::TokioIo::new(stream);
                    let _ = hyper::server::conn::http1::Builder::new().serve_connection(io, service).await;
                });
            }
        });
        Receiver { endpoint, spans, server }
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<Span> {
        self.spans.lock().expect("not poisoned").clone()
    }

    /// The spans once `done` says they are all there; panics after `within` with what came.
    pub async fn wait_for(&self, within: Duration, done: impl Fn(&[Span]) -> bool) -> Vec<Span> {
        let deadline = Instant::now() + within;
        loop {
            let spans = self.spans();
            if done(&spans) {
                return spans;
            }
            let names: Vec<_> = spans.iter().map(|s| &s.name).collect();
            assert!(Instant::now() < deadline, "the spans never came; received: {names:?}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

type Answer = Response<Full<Bytes>>;

async fn receive(kept: Arc<Mutex<Vec<Span>>>, req: Request<hyper::body::Incoming>) -> Result<Answer, hyper::Error> {
    let answer = |status: StatusCode, text: &str| {
        let mut r = Response::new(Full::new(Bytes::from(text.to_owned())));
        *r.status_mut() = status;
        r
    };
    if req.method() != hyper::Method::POST || req.uri().path() != "/v1/traces" {
        return Ok(answer(StatusCode::NOT_FOUND, "only POST /v1/traces"));
    }
    let content_type = req.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    let body = req.into_body().collect().await?.to_bytes();
    let decoded = match content_type.as_str() {
        "application/x-protobuf" => ExportTraceServiceRequest::decode(body).map_err(|e| e.to_string()),
        "application/json" => serde_json::from_slice(&body).map_err(|e| e.to_string()),
        other => Err(format!("content-type {other:?} is not OTLP/HTTP")),
    };
    match decoded {
        Ok(request) => {
            kept.lock().expect("not poisoned").extend(spans_of(request, &content_type));
            Ok(answer(StatusCode::OK, ""))
        }
        Err(e) => Ok(answer(StatusCode::BAD_REQUEST, &e)),
    }
}

fn spans_of(request: ExportTraceServiceRequest, content_type: &str) -> Vec<Span> {
    let mut out = Vec::new();
    for resource_spans in request.resource_spans {
        let resource = resource_spans.resource.map(|r| r.attributes).unwrap_or_default();
        let service = text_of(&resource).remove("service.name").unwrap_or_default();
        for span in resource_spans.scope_spans.into_iter().flat_map(|s| s.spans) {
            let attributes = text_of(&span.attributes);
            let mut all_values: Vec<String> = attributes.values().cloned().collect();
            all_values.push(span.name.clone());
            for event in &span.events {
                all_values.push(event.name.clone());
                all_values.extend(text_of(&event.attributes).into_values());
            }
            out.push(Span {
                trace_id: hex(&span.trace_id),
                span_id: hex(&span.span_id),
                parent_span_id: hex(&span.parent_span_id),
                name: span.name,
                service: service.clone(),
                attributes,
                all_values,
                content_type: content_type.to_owned(),
            });
        }
    }
    out
}

fn text_of(attributes: &[KeyValue]) -> BTreeMap<String, String> {
    attributes.iter().map(|kv| (kv.key.clone(), kv.value.as_ref().map(value_text).unwrap_or_default())).collect()
}

fn value_text(v: &AnyValue) -> String {
    match &v.value {
        Some(Value::StringValue(s)) => s.clone(),
        Some(Value::BoolValue(b)) => b.to_string(),
        Some(Value::IntValue(i)) => i.to_string(),
        Some(Value::DoubleValue(d)) => d.to_string(),
        Some(Value::BytesValue(b)) => hex(b),
        Some(Value::ArrayValue(a)) => a.values.iter().map(value_text).collect::<Vec<_>>().join(","),
        Some(Value::KvlistValue(l)) => text_of(&l.values).into_iter().map(|(k, v)| format!("{k}={v}")).collect(),
        // A string in the request's dictionary (a profiles encoding): spans carry none.
        Some(Value::StringValueStrindex(i)) => format!("strindex:{i}"),
        None => String::new(),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
