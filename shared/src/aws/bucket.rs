//! The artifact bucket: the one adapter through which the functions speak S3. Handlers see
//! keys, bounded byte reads and one error type; `aws_sdk_s3` stays in here.
//!
//! Reads cost one request each: a GET's own response headers carry the object's size before
//! its body is read, so a bounded read needs no HEAD first (SPEC section 7 / issue 13: a
//! result GET costs 1 + images requests).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_sdk_s3::error::SdkError;
use aws_sdk_s3::primitives::ByteStream;

use crate::budget::{bounded, OutOfTime};

/// Longest one S3 request may take (the SDK's operation timeout is 12 s, two attempts of 5 s),
/// when the request's budget has that much left.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(12);
/// Longest reading one object's body may take (the SDK bounds only the request up to its
/// headers; a trickling body is bounded here), when the budget has that much left.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(12);

/// One artifact bucket and the client that reaches it.
#[derive(Clone, Debug)]
pub struct ArtifactBucket {
    client: Arc<S3Client>,
    name: String,
}

/// The S3 client, built or being built on a thread of its own (see [`ArtifactBucket::building`]).
#[derive(Debug)]
struct S3Client {
    ready: tokio::sync::OnceCell<aws_sdk_s3::Client>,
    building: Mutex<Option<tokio::task::JoinHandle<aws_sdk_s3::Client>>>,
}

/// Why an object could not be read or written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BucketError {
    /// There is no such object (404: the functions' role has s3:ListBucket, so S3 tells a
    /// missing key apart from a refused one).
    Missing,
    /// The object is larger than the caller's limit (its size).
    TooLarge(u64),
    /// S3 refused the role (403): IAM or KMS is misconfigured. Logged and alarmed where it
    /// happened; the object may be perfectly valid.
    Forbidden,
    /// S3 is unreachable or failing; the cause is logged where it happened.
    Unavailable,
    /// The call ran out of time: its own cap, or the request's budget.
    TimedOut(OutOfTime),
}

impl BucketError {
    /// Whether this is about the storage (a fault or a lack of time) rather than the object.
    pub fn is_fault(&self) -> bool {
        matches!(self, BucketError::Unavailable | BucketError::TimedOut(_) | BucketError::Forbidden)
    }
}

fn timed_out(op: &'static str, why: OutOfTime) -> BucketError {
    tracing::error!(dependency = "artifact storage", operation = op, reason = %why, "S3 call ran out of time");
    BucketError::TimedOut(why)
}

/// An object opened by GET: its size is known, its body not yet read.
pub struct Opened {
    /// The object's size, from the GET's own `Content-Length` (an answer without one is refused
    /// by [`ArtifactBucket::open`]: the result route plans its memory from this figure).
    pub size: u64,
    body: ByteStream,
    limit: u64,
}

impl Opened {
    /// Reads the body as a stream, counting as it reads: it stops at the first byte past the
    /// limit or past the announced size (a storage that lies about it), so memory never holds
    /// more than `min(size, limit)` plus one chunk. A body shorter than announced is a fault too:
    /// a truncated artifact must not be served as if it were whole.
    pub async fn read(self) -> Result<Vec<u8>, BucketError> {
        let Opened { size, body, limit } = self;
        match bounded(BODY_TIMEOUT, read_capped(body, size, limit)).await {
            Ok(read) => read,
            Err(why) => Err(timed_out("GetObject body", why)),
        }
    }
}

/// The body of a GET whose `Content-Length` said `size` (at most `limit`), read chunk by chunk.
async fn read_capped(mut body: ByteStream, size: u64, limit: u64) -> Result<Vec<u8>, BucketError> {
    // `size <= limit` (open refused larger), so this allocation is bounded by the caller's limit.
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(usize::MAX));
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| {
            tracing::error!(dependency = "artifact storage", error = %crate::error::chain(&e), "S3 body read failed");
            BucketError::Unavailable
        })?;
        let read = bytes.len() as u64 + chunk.len() as u64;
        if read > limit {
            return Err(BucketError::TooLarge(read));
        }
        if read > size {
            return Err(lying("GetObject body", format!("more than the {size} bytes its Content-Length announced")));
        }
        bytes.extend_from_slice(&chunk);
    }
    if (bytes.len() as u64) < size {
        return Err(lying(
            "GetObject body",
            format!("{} of the {size} bytes its Content-Length announced", bytes.len()),
        ));
    }
    Ok(bytes)
}

/// S3 (or what stands in for it) answered in a way S3 never does: a fault of the storage, not
/// of the object, logged with what was wrong.
fn lying(op: &'static str, what: String) -> BucketError {
    tracing::error!(dependency = "artifact storage", operation = op, problem = what, "S3 answered inconsistently");
    BucketError::Unavailable
}

fn status_of<E>(err: &SdkError<E, aws_sdk_s3::config::http::HttpResponse>) -> Option<u16> {
    match err {
        SdkError::ServiceError(e) => Some(e.raw().status().as_u16()),
        _ => None,
    }
}

/// A GET's error as the adapter's: 404 missing, 403 a refused role, else a fault.
fn read_error<E: std::error::Error + 'static>(
    op: &'static str,
    err: SdkError<E, aws_sdk_s3::config::http::HttpResponse>,
) -> BucketError {
    match status_of(&err) {
        Some(404) => BucketError::Missing,
        Some(403) => {
            tracing::error!(dependency = "artifact storage", operation = op, error = %crate::error::chain(&err),
                "S3 refused the function's role (IAM or KMS misconfiguration)");
            crate::obs::metrics::configuration_error("artifact storage");
            BucketError::Forbidden
        }
        _ => fault(op, &err),
    }
}

fn fault<E: std::error::Error + 'static>(op: &'static str, err: &E) -> BucketError {
    tracing::error!(dependency = "artifact storage", operation = op, error = %crate::error::chain(err), "S3 request failed");
    BucketError::Unavailable
}

impl ArtifactBucket {
    pub fn new(client: aws_sdk_s3::Client, name: impl Into<String>) -> Self {
        let client = S3Client { ready: tokio::sync::OnceCell::new_with(Some(client)), building: Mutex::new(None) };
        Self { client: Arc::new(client), name: name.into() }
    }

    /// The bucket of a client still being built by `build`, on a thread of the runtime's
    /// blocking pool; the first call that needs it waits for it. A function's S3 client is
    /// about half of its init's instructions (the SDK's endpoint table, its trust store:
    /// docs/PERFORMANCE.md section 1): built beside the runtime instead of before it, it
    /// overlaps the first poll for an event and the request's database work that comes before
    /// any S3 call, where it used to delay both.
    pub fn building<F>(build: F, name: impl Into<String>) -> Self
    where
        F: std::future::Future<Output = aws_sdk_s3::Client> + Send + 'static,
    {
        let runtime = tokio::runtime::Handle::current();
        let handle = tokio::task::spawn_blocking(move || runtime.block_on(build));
        let client = S3Client { ready: tokio::sync::OnceCell::new(), building: Mutex::new(Some(handle)) };
        Self { client: Arc::new(client), name: name.into() }
    }

    async fn client(&self) -> Result<&aws_sdk_s3::Client, BucketError> {
        let not_built = |why: &dyn std::fmt::Display| {
            tracing::error!(dependency = "artifact storage", error = %why, "the S3 client was not built");
            BucketError::Unavailable
        };
        self.client
            .ready
            .get_or_try_init(|| async {
                let handle = self.client.building.lock().unwrap_or_else(|e| e.into_inner()).take();
                let Some(handle) = handle else { return Err(not_built(&"its build was cancelled before")) };
                match handle.await {
                    Ok(client) => Ok(client),
                    // Building a client has no input: a panic there is a defect, and it goes on
                    // as one, as it did when the client was built at init.
                    Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                    Err(e) => Err(not_built(&e)),
                }
            })
            .await
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Writes a JSON document (a manifest) at `key`.
    pub async fn put_json(&self, key: &str, body: Vec<u8>) -> Result<(), BucketError> {
        let put = self
            .client()
            .await?
            .put_object()
            .bucket(&self.name)
            .key(key)
            .content_type("application/json")
            .body(body.into());
        match bounded(CALL_TIMEOUT, put.send()).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(fault("PutObject", &e)),
            Err(why) => Err(timed_out("PutObject", why)),
        }
    }

    /// Opens `key` with one GET; refuses it by its size header, before reading, when it is
    /// over `limit` (the connection is dropped unread).
    pub async fn open(&self, key: &str, limit: u64) -> Result<Opened, BucketError> {
        let get = self.client().await?.get_object().bucket(&self.name).key(key);
        let out = match bounded(CALL_TIMEOUT, get.send()).await {
            Ok(Ok(out)) => out,
            Ok(Err(e)) => return Err(read_error("GetObject", e)),
            Err(why) => return Err(timed_out("GetObject", why)),
        };
        // S3 always sends the size of a GetObject's body; an answer without one (or a negative
        // one) is refused rather than read as 0, which would let an unknown body past the plan.
        let Some(size) = out.content_length().and_then(|n| u64::try_from(n).ok()) else {
            return Err(lying("GetObject", "no Content-Length".to_owned()));
        };
        if size > limit {
            return Err(BucketError::TooLarge(size));
        }
        Ok(Opened { size, body: out.body, limit })
    }

    /// The whole object, at most `limit` bytes, in one request.
    pub async fn get_bounded(&self, key: &str, limit: u64) -> Result<Vec<u8>, BucketError> {
        self.open(key, limit).await?.read().await
    }

    /// Deletes every object under `prefix` (which ends in `/`): listed a thousand at a time, each
    /// page deleted in one request. Answers how many objects it deleted. Deleting what is not
    /// there is not an error, so a retried purge finishes what an interrupted one began.
    pub async fn delete_prefix(&self, prefix: &str) -> Result<u64, BucketError> {
        use aws_sdk_s3::types::{Delete, ObjectIdentifier};
        let client = self.client().await?;
        let mut deleted = 0;
        loop {
            // Always the first page: the previous one was just deleted.
            let page = client
                .list_objects_v2()
                .bucket(&self.name)
                .prefix(prefix)
                .send()
                .await
                .map_err(|e| fault("ListObjectsV2", &e))?;
            let keys: Vec<ObjectIdentifier> = page
                .contents()
                .iter()
                .filter_map(|o| o.key())
                .filter_map(|k| ObjectIdentifier::builder().key(k).build().ok())
                .collect();
            if keys.is_empty() {
                return Ok(deleted);
            }
            let n = keys.len() as u64;
            let batch = Delete::builder()
                .set_objects(Some(keys))
                .quiet(true)
                .build()
                .map_err(|e| fault("DeleteObjects", &e))?;
            let out = client
                .delete_objects()
                .bucket(&self.name)
                .delete(batch)
                .send()
                .await
                .map_err(|e| fault("DeleteObjects", &e))?;
            if let Some(e) = out.errors().first() {
                tracing::error!(
                    dependency = "artifact storage",
                    key = e.key().unwrap_or_default(),
                    code = e.code().unwrap_or_default(),
                    "S3 refused to delete an object"
                );
                return Err(BucketError::Unavailable);
            }
            deleted += n;
        }
    }
}
