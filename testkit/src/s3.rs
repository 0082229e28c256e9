//! S3 for tests: code2des-local's S3-compatible server (s3s-fs) on a loopback port, and a
//! counter of the requests an S3 client sends, by kind.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use code2des_local::s3server::{self, S3Server};

/// The S3 server on a free loopback port over a temporary directory, with `bucket` made, and a
/// client for it. Stops (and its files go) when dropped.
pub struct LoopbackS3 {
    /// `None` once [`LoopbackS3::stop`] ran.
    pub server: Option<S3Server>,
    pub client: aws_sdk_s3::Client,
    _dir: tempfile::TempDir,
}

impl LoopbackS3 {
    pub async fn start(bucket: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let server = s3server::serve(listener, dir.path(), bucket).expect("the S3 server starts");
        let client = s3server::client(&server.endpoint(), s3server::ACCESS_KEY, s3server::SECRET_KEY);
        Self { server: Some(server), client, _dir: dir }
    }

    /// The server's URL while it runs.
    pub fn endpoint(&self) -> Option<String> {
        self.server.as_ref().map(S3Server::endpoint)
    }

    /// Stops the server: every later request fails as in an S3 outage.
    pub async fn stop(&mut self) {
        if let Some(s) = self.server.take() {
            s.stop().await;
        }
    }
}

/// S3 requests sent, every attempt of every call, by the kind S3 prices apart: a LIST is a GET
/// with `list-type`, a DeleteObjects a POST with `delete`, so the method alone would hide both.
#[derive(Debug, Default)]
pub struct S3Requests {
    pub get: AtomicU64,
    pub head: AtomicU64,
    pub put: AtomicU64,
    pub list: AtomicU64,
    pub delete: AtomicU64,
    pub other: AtomicU64,
}

impl S3Requests {
    fn all(&self) -> [&AtomicU64; 6] {
        [&self.get, &self.head, &self.put, &self.list, &self.delete, &self.other]
    }

    /// The counts so far: `[GET, HEAD, PUT, LIST, DELETE, other]`.
    pub fn snapshot(&self) -> [u64; 6] {
        self.all().map(|c| c.load(Ordering::SeqCst))
    }

    /// The counts since the last `take`, `[GET, HEAD, PUT, LIST, DELETE, other]`, starting again
    /// from zero.
    pub fn take(&self) -> [u64; 6] {
        self.all().map(|c| c.swap(0, Ordering::SeqCst))
    }
}

/// `client` with every request it sends counted (each retry too): the copy and its counts.
pub fn counted(client: &aws_sdk_s3::Client) -> (aws_sdk_s3::Client, Arc<S3Requests>) {
    let requests = Arc::new(S3Requests::default());
    let conf = client.config().to_builder().interceptor(Count(requests.clone())).build();
    (aws_sdk_s3::Client::from_conf(conf), requests)
}

#[derive(Debug)]
struct Count(Arc<S3Requests>);

impl aws_sdk_s3::config::Intercept for Count {
    fn name(&self) -> &'static str {
        "code2des-testkit-s3-request-counter"
    }

    // Before transmit: once per request actually sent, a retried one included.
    fn read_before_transmit(
        &self,
        context: &aws_sdk_s3::config::interceptors::BeforeTransmitInterceptorContextRef<'_>,
        _rc: &aws_sdk_s3::config::RuntimeComponents,
        _cfg: &mut aws_sdk_s3::config::ConfigBag,
    ) -> Result<(), aws_sdk_s3::error::BoxError> {
        let c = &self.0;
        let req = context.request();
        let query = req.uri().split_once('?').map(|(_, q)| q).unwrap_or("");
        let has = |name: &str| query.split('&').any(|p| p.split('=').next() == Some(name));
        let counter = match req.method() {
            "GET" if has("list-type") => &c.list,
            "GET" => &c.get,
            "HEAD" => &c.head,
            "PUT" => &c.put,
            "DELETE" => &c.delete,
            "POST" if has("delete") => &c.delete,
            _ => &c.other,
        };
        counter.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}
