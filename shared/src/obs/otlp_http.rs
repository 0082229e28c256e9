//! The span exporter's HTTP client: opentelemetry-http's `HyperClient` over hyper-rustls, the
//! hyper, hyper-util and rustls that the AWS SDK's own client links already. The exporter's
//! other client, reqwest's, brought reqwest, tower-http and rustls-platform-verifier into every
//! function for this one use, and with them pointers the dynamic loader relocates at each cold
//! start whether or not a span is ever exported (docs/PERFORMANCE.md section 1).
//!
//! The batch processor exports from a thread of its own, outside any async runtime, and hyper
//! needs one: the client owns a current-thread tokio runtime and drives each request on it, so
//! a flush from the Lambda's single-threaded runtime waits on that thread, never on itself.

use std::sync::Arc;
use std::time::Duration;

use opentelemetry_http::hyper::HyperClient;
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};

/// The OpenTelemetry specification's default export timeout.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// An [`HttpClient`] for OTLP/HTTP, plain or TLS (Mozilla's roots, compiled in).
#[derive(Debug)]
pub struct ExportClient {
    inner: Box<dyn HttpClient>,
    runtime: tokio::runtime::Runtime,
}

impl ExportClient {
    /// The client, with the timeout the environment sets for trace exports.
    pub fn from_env() -> std::io::Result<Self> {
        let timeout = timeout(
            std::env::var("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT").ok().as_deref(),
            std::env::var("OTEL_EXPORTER_OTLP_TIMEOUT").ok().as_deref(),
        );
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let mut roots = rustls::RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        // The provider is named here, not taken from the process: the exporter may be built
        // before (or without) anything installs a default one.
        let tls = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::aws_lc_rs::default_provider()))
            .with_safe_default_protocol_versions()
            .map_err(std::io::Error::other)?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let connector =
            hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(tls).https_or_http().enable_http1().build();
        Ok(Self { inner: Box::new(HyperClient::new(connector, timeout, None)), runtime })
    }
}

#[async_trait::async_trait]
impl HttpClient for ExportClient {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        if tokio::runtime::Handle::try_current().is_ok() {
            // Called from inside a runtime (a processor other than the batch one): that runtime
            // drives the request; blocking on ours there would panic.
            return self.inner.send_bytes(request).await;
        }
        self.runtime.block_on(self.inner.send_bytes(request))
    }
}

/// `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT`, else `OTEL_EXPORTER_OTLP_TIMEOUT`, in milliseconds, else
/// ten seconds, as the exporter reads them.
fn timeout(traces: Option<&str>, all: Option<&str>) -> Duration {
    [traces, all]
        .into_iter()
        .flatten()
        .find_map(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_millis)
        .unwrap_or(DEFAULT_TIMEOUT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_timeout_is_the_traces_then_the_general_then_ten_seconds() {
        assert_eq!(timeout(Some("250"), Some("900")), Duration::from_millis(250));
        assert_eq!(timeout(None, Some("900")), Duration::from_millis(900));
        assert_eq!(timeout(Some("soon"), Some("900")), Duration::from_millis(900));
        assert_eq!(timeout(None, None), DEFAULT_TIMEOUT);
    }

    /// A request through the client reaches a plain HTTP server and brings its answer back,
    /// from a thread outside any runtime, as the batch processor's is.
    #[test]
    fn a_request_from_a_thread_without_a_runtime_is_answered() {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut conn, _) = listener.accept().unwrap();
            let mut seen = Vec::new();
            let mut buf = [0u8; 4096];
            while !seen.ends_with(b"spans") {
                let n = conn.read(&mut buf).unwrap();
                assert!(n > 0, "the request ended early: {}", String::from_utf8_lossy(&seen));
                seen.extend_from_slice(&buf[..n]);
            }
            conn.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok").unwrap();
            String::from_utf8(seen).unwrap()
        });
        let client = ExportClient::from_env().unwrap();
        let request = Request::post(format!("http://{addr}/v1/traces"))
            .header("content-type", "application/x-protobuf")
            .body(Bytes::from_static(b"spans"))
            .unwrap();
        let response = block_on_without_runtime(client.send_bytes(request)).unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(response.body().as_ref(), b"ok");
        let seen = server.join().unwrap();
        assert!(seen.starts_with("POST /v1/traces HTTP/1.1\r\n"), "{seen}");
    }

    /// Polls a future to its end on this thread, without an async runtime (the batch
    /// processor's thread does the same with `futures_executor::block_on`).
    fn block_on_without_runtime<F: std::future::Future>(fut: F) -> F::Output {
        use std::task::{Context, Poll, Wake, Waker};
        struct Unpark(std::thread::Thread);
        impl Wake for Unpark {
            fn wake(self: Arc<Self>) {
                self.0.unpark();
            }
        }
        let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
        let mut cx = Context::from_waker(&waker);
        let mut fut = std::pin::pin!(fut);
        loop {
            match fut.as_mut().poll(&mut cx) {
                Poll::Ready(out) => return out,
                Poll::Pending => std::thread::park(),
            }
        }
    }
}
