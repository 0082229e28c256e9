//! The artifact bucket: the one adapter through which the functions speak S3. Handlers see
//! keys, bounded byte reads and one error type; `aws_sdk_s3` stays in here.
//!
//! Reads cost one request each: a GET's own response headers carry the object's size before
//! its body is read, so a bounded read needs no HEAD first (SPEC section 7 / issue 13: a
//! result GET costs 1 + images requests).

use aws_sdk_s3::error::SdkError;
use aws_sdk_s3::primitives::ByteStream;

use crate::error::ApiError;

/// One artifact bucket and the client that reaches it.
#[derive(Clone, Debug)]
pub struct ArtifactBucket {
    client: aws_sdk_s3::Client,
    name: String,
}

/// Why an object could not be read or written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BucketError {
    /// There is no such object (404, or 403 as S3 answers a role without s3:ListBucket).
    Missing,
    /// The object is larger than the caller's limit (its size).
    TooLarge(u64),
    /// S3 is unreachable, slow or failing; the cause is logged where it happened.
    Unavailable,
}

impl BucketError {
    /// A fault of the storage is a 503; anything about the object itself is for the caller
    /// to judge (a missing artifact is an invalid artifact, not an outage).
    pub fn into_api(self, on_object_problem: impl FnOnce(BucketError) -> ApiError) -> ApiError {
        match self {
            BucketError::Unavailable => ApiError::Unavailable("artifact storage"),
            other => on_object_problem(other),
        }
    }
}

/// An object opened by GET: its size is known, its body not yet read.
pub struct Opened {
    pub size: u64,
    body: ByteStream,
    limit: u64,
}

impl Opened {
    /// Reads the body, refusing more bytes than the limit (the size header could lie).
    pub async fn read(self) -> Result<Vec<u8>, BucketError> {
        match self.body.collect().await {
            Ok(data) => {
                let bytes = data.into_bytes().to_vec();
                if bytes.len() as u64 > self.limit {
                    return Err(BucketError::TooLarge(bytes.len() as u64));
                }
                Ok(bytes)
            }
            Err(e) => {
                tracing::error!(dependency = "artifact storage", error = %e, "S3 body read failed");
                Err(BucketError::Unavailable)
            }
        }
    }
}

fn is_missing<E>(err: &SdkError<E, aws_sdk_s3::config::http::HttpResponse>) -> bool {
    match err {
        SdkError::ServiceError(e) => matches!(e.raw().status().as_u16(), 403 | 404),
        _ => false,
    }
}

fn fault<E: std::error::Error + 'static>(op: &'static str, err: &E) -> BucketError {
    tracing::error!(dependency = "artifact storage", operation = op, error = %crate::error::chain(err), "S3 request failed");
    BucketError::Unavailable
}

impl ArtifactBucket {
    pub fn new(client: aws_sdk_s3::Client, name: impl Into<String>) -> Self {
        Self { client, name: name.into() }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Writes a JSON document (a manifest) at `key`.
    pub async fn put_json(&self, key: &str, body: Vec<u8>) -> Result<(), BucketError> {
        self.client
            .put_object()
            .bucket(&self.name)
            .key(key)
            .content_type("application/json")
            .body(body.into())
            .send()
            .await
            .map(|_| ())
            .map_err(|e| fault("PutObject", &e))
    }

    /// Opens `key` with one GET; refuses it by its size header, before reading, when it is
    /// over `limit` (the connection is dropped unread).
    pub async fn open(&self, key: &str, limit: u64) -> Result<Opened, BucketError> {
        let out = match self.client.get_object().bucket(&self.name).key(key).send().await {
            Ok(out) => out,
            Err(e) if is_missing(&e) => return Err(BucketError::Missing),
            Err(e) => return Err(fault("GetObject", &e)),
        };
        let size = out.content_length().unwrap_or(0).max(0) as u64;
        if size > limit {
            return Err(BucketError::TooLarge(size));
        }
        Ok(Opened { size, body: out.body, limit })
    }

    /// The whole object, at most `limit` bytes, in one request.
    pub async fn get_bounded(&self, key: &str, limit: u64) -> Result<Vec<u8>, BucketError> {
        self.open(key, limit).await?.read().await
    }

    /// The object's size, without its body.
    pub async fn size(&self, key: &str) -> Result<u64, BucketError> {
        match self.client.head_object().bucket(&self.name).key(key).send().await {
            Ok(out) => Ok(out.content_length().unwrap_or(0).max(0) as u64),
            Err(e) if is_missing(&e) => Err(BucketError::Missing),
            Err(e) => Err(fault("HeadObject", &e)),
        }
    }

    /// Deletes every object under `prefix` (which ends in `/`): listed a thousand at a time, each
    /// page deleted in one request. Answers how many objects it deleted. Deleting what is not
    /// there is not an error, so a retried purge finishes what an interrupted one began.
    pub async fn delete_prefix(&self, prefix: &str) -> Result<u64, BucketError> {
        use aws_sdk_s3::types::{Delete, ObjectIdentifier};
        let mut deleted = 0;
        loop {
            // Always the first page: the previous one was just deleted.
            let page = self
                .client
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
            let out = self
                .client
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
