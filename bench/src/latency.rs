//! An S3 client whose every request first waits a fixed time: S3's in-region first-byte
//! latency, which a loopback server does not have. With it the hydration benchmark measures
//! what the fetch concurrency is for (overlapping waits), not loopback memory bandwidth.

use std::time::Duration;

use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpClient, SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::HttpRequest;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;

#[derive(Debug, Clone)]
struct Delayed {
    inner: SharedHttpClient,
    delay: Duration,
}

impl HttpClient for Delayed {
    fn http_connector(&self, settings: &HttpConnectorSettings, components: &RuntimeComponents) -> SharedHttpConnector {
        SharedHttpConnector::new(DelayedConnector {
            inner: self.inner.http_connector(settings, components),
            delay: self.delay,
        })
    }
}

#[derive(Debug)]
struct DelayedConnector {
    inner: SharedHttpConnector,
    delay: Duration,
}

impl HttpConnector for DelayedConnector {
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        let (inner, delay) = (self.inner.clone(), self.delay);
        HttpConnectorFuture::new(async move {
            tokio::time::sleep(delay).await;
            inner.call(request).await
        })
    }
}

/// `base` with `delay` added before every request.
pub fn s3_with_latency(base: &aws_sdk_s3::Client, delay: Duration) -> aws_sdk_s3::Client {
    let plain = aws_smithy_http_client::Builder::new().build_http();
    let conf = base.config().to_builder().http_client(Delayed { inner: plain, delay }).build();
    aws_sdk_s3::Client::from_conf(conf)
}
