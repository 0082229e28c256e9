//! `GET {base}/{code2desId}/result`: validates the worker's artifact in S3 and answers the
//! document with its images inlined as base64, without exposing S3 locations or credentials.
//!
//! Response budget: Lambda's synchronous response is at most 6 MiB. Images are inlined in
//! the order the document first uses them while the JSON-escaped body stays within
//! `Limits::response_budget`; the rest are listed in `deferredImages` and fetched with
//! `?images=ref1,ref2` (same validation, no document). A body is never truncated.

use std::collections::BTreeMap;
use std::time::Duration;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use futures::stream::{self, StreamExt, TryStreamExt};
use lambda_http::{Body, Request, Response};
use serde::Serialize;
use serde_json::value::RawValue;
use shared::artifact::{self, Artifact, Expect, ImageEntry, Kind, Limits};
use shared::http::{self, path_param, query_param};
use shared::model::Job;
use shared::store::{self, Scope};
use shared::types::{job_prefix, Code2desId, OrganizationId, ProjectId, S3Pointer, Status};
use shared::ApiError;

/// Most refs one `?images=` request may name.
pub const MAX_REQUESTED_IMAGES: usize = 100;

pub struct Deps {
    pub pool: deadpool_postgres::Pool,
    pub s3: aws_sdk_s3::Client,
    pub bucket: String,
    pub deadline: Duration,
    pub limits: Limits,
}

impl Deps {
    pub async fn from_env() -> Result<Self, shared::setup::SetupError> {
        let (pool, _) = shared::setup::db_pool().await?;
        Ok(Self {
            pool,
            s3: shared::setup::s3_client().await,
            bucket: shared::setup::bucket()?,
            deadline: shared::setup::deadline()?,
            limits: Limits::default(),
        })
    }
}

pub async fn handle(deps: &Deps, req: Request) -> Response<Body> {
    let request_id = http::request_id(&req);
    http::finish("result", &request_id, run(deps, &req, &request_id).await)
}

/// A failed check: logged with its reason, answered as 502 `artifact_invalid`.
fn invalid(job: &Job, reason: impl std::fmt::Display) -> ApiError {
    tracing::warn!(code2des_id = %job.id, reason = %reason, "artifact failed validation");
    ApiError::ArtifactInvalid
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ImageOut {
    mime_type: &'static str,
    size: u64,
    data: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ResultBody<'a> {
    code2des_id: &'a str,
    kind: &'static str,
    version: u32,
    warning_count: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    document: Option<&'a RawValue>,
    images: BTreeMap<&'a str, ImageOut>,
    deferred_images: Vec<&'a str>,
}

fn parse_requested(raw: Option<&str>) -> Result<Option<Vec<&str>>, ApiError> {
    let Some(raw) = raw else { return Ok(None) };
    let refs: Vec<&str> = raw.split(',').collect();
    if refs.len() > MAX_REQUESTED_IMAGES {
        return Err(ApiError::invalid("images", format!("may name at most {MAX_REQUESTED_IMAGES} images")));
    }
    if refs.iter().any(|r| r.is_empty() || r.len() > 255 || r.chars().any(char::is_control)) {
        return Err(ApiError::invalid("images", "must be a comma-separated list of image refs"));
    }
    Ok(Some(refs))
}

/// Bytes a string adds once the body is itself a JSON string in the Lambda envelope.
fn escaped_len(s: &str) -> usize {
    s.len() + s.bytes().filter(|b| *b == b'"' || *b == b'\\').count()
}

/// Whether an S3 error means the object is not there (as opposed to S3 being unreachable).
fn is_missing<E>(err: &aws_sdk_s3::error::SdkError<E, aws_sdk_s3::config::http::HttpResponse>) -> bool {
    use aws_sdk_s3::error::SdkError;
    match err {
        // 404, or 403 which S3 answers for a missing key to a role without s3:ListBucket.
        SdkError::ServiceError(e) => matches!(e.raw().status().as_u16(), 403 | 404),
        _ => false,
    }
}

enum Fetch {
    Missing,
    TooLarge(u64),
    Unavailable,
}

async fn head_size(deps: &Deps, key: &str) -> Result<u64, Fetch> {
    match deps.s3.head_object().bucket(&deps.bucket).key(key).send().await {
        Ok(out) => Ok(out.content_length().unwrap_or(0).max(0) as u64),
        Err(e) if is_missing(&e) => Err(Fetch::Missing),
        Err(e) => {
            tracing::error!(dependency = "artifact storage", error = %shared::error::chain(&e), "S3 HeadObject failed");
            Err(Fetch::Unavailable)
        }
    }
}

async fn get_bytes(deps: &Deps, key: &str, limit: u64) -> Result<Vec<u8>, Fetch> {
    let out = match deps.s3.get_object().bucket(&deps.bucket).key(key).send().await {
        Ok(out) => out,
        Err(e) if is_missing(&e) => return Err(Fetch::Missing),
        Err(e) => {
            tracing::error!(dependency = "artifact storage", error = %shared::error::chain(&e), "S3 GetObject failed");
            return Err(Fetch::Unavailable);
        }
    };
    // The object may have been replaced since HeadObject: check the size actually served.
    let len = out.content_length().unwrap_or(0).max(0) as u64;
    if len > limit {
        return Err(Fetch::TooLarge(len));
    }
    match out.body.collect().await {
        Ok(data) => {
            let bytes = data.into_bytes().to_vec();
            if bytes.len() as u64 > limit {
                return Err(Fetch::TooLarge(bytes.len() as u64));
            }
            Ok(bytes)
        }
        Err(e) => {
            tracing::error!(dependency = "artifact storage", error = %e, "S3 body read failed");
            Err(Fetch::Unavailable)
        }
    }
}

fn fetch_error(job: &Job, what: &str, e: Fetch) -> ApiError {
    match e {
        Fetch::Missing => invalid(job, format!("{what} is missing")),
        Fetch::TooLarge(n) => invalid(job, format!("{what} is {n} bytes, over the limit")),
        Fetch::Unavailable => ApiError::Unavailable("artifact storage"),
    }
}

async fn load_artifact(deps: &Deps, job: &Job, result_url: &str, kind: Kind) -> Result<(Artifact, String), ApiError> {
    let id = Code2desId::parse(&job.id).map_err(|_| invalid(job, "job id is not a UUID"))?;
    let prefix = job_prefix(id, job.attempt);
    let ptr = S3Pointer::parse("result_url", result_url).map_err(|e| invalid(job, e))?;
    if !ptr.is_under(&deps.bucket, &prefix) {
        return Err(invalid(job, "result_url is outside the job's prefix in the artifact bucket"));
    }
    let max = deps.limits.max_artifact_bytes;
    let size = head_size(deps, &ptr.key).await.map_err(|e| fetch_error(job, "artifact", e))?;
    if size > max {
        return Err(invalid(job, format!("artifact is {size} bytes, over {max}")));
    }
    let bytes = get_bytes(deps, &ptr.key, max).await.map_err(|e| fetch_error(job, "artifact", e))?;
    let expect = Expect { code2des_id: &job.id, attempt: job.attempt, nonce: &job.nonce, prefix: &prefix, kind };
    let art = artifact::validate(&bytes, &expect, &deps.limits).map_err(|r| invalid(job, r))?;
    Ok((art, prefix))
}

/// Downloads one planned image, checks its bytes, and encodes it.
async fn fetch_image<'a>(
    deps: &Deps,
    job: &Job,
    name: &'a str,
    entry: &ImageEntry,
    size: u64,
) -> Result<(&'a str, ImageOut), ApiError> {
    let bytes = get_bytes(deps, &entry.key, size).await.map_err(|e| fetch_error(job, "an image", e))?;
    artifact::check_image(&bytes, entry.mime, &deps.limits)
        .map_err(|r| invalid(job, format!("image {name:?}: {r}")))?;
    let out = ImageOut { mime_type: entry.mime.as_str(), size: bytes.len() as u64, data: STANDARD.encode(&bytes) };
    Ok((name, out))
}

async fn run(deps: &Deps, req: &Request, request_id: &str) -> Result<Response<Body>, ApiError> {
    let subject = http::subject(req)?;
    let organization_id = OrganizationId::parse(path_param(req, "organizationId")?)?;
    let project_id = ProjectId::parse(path_param(req, "projectId")?)?;
    let id = Code2desId::parse(path_param(req, "code2desId")?)?;
    let requested = parse_requested(query_param(req, "images")?)?;
    let scope = Scope {
        organization_id: organization_id.get(),
        project_id: project_id.get(),
        subject: subject.as_str().to_owned(),
    };
    let job = {
        let client = shared::db::conn(&deps.pool).await?;
        store::get_job(&**client, &scope, id, deps.deadline).await?
        // The connection goes back to the pool before the S3 work starts.
    }
    .ok_or(ApiError::NotFound("job not found"))?;

    let (kind, result_url) = match (job.status, job.result_url.as_deref()) {
        (Status::Processing, _) => return Err(ApiError::conflict("not_ready", "the job is still processing")),
        (Status::Failed, None) => {
            let msg = job.error_message.clone().unwrap_or_else(|| "the job failed".to_owned());
            return Err(ApiError::conflict("job_failed", msg));
        }
        (Status::Failed, Some(url)) => (Kind::Failure, url),
        (Status::Completed, Some(url)) => (Kind::Result, url),
        (Status::Completed, None) => return Err(invalid(&job, "completed job without result_url")),
    };
    let (art, _prefix) = load_artifact(deps, &job, result_url, kind).await?;

    // Which images this response is about, in document order.
    let candidates: Vec<&(String, ImageEntry)> = match &requested {
        None => art.used.iter().collect(),
        Some(refs) => {
            let mut out = Vec::with_capacity(refs.len());
            for r in refs {
                let found = art.used.iter().find(|(name, _)| name == r);
                match found {
                    Some(entry) if !out.iter().any(|e: &&(String, ImageEntry)| e.0 == *r) => out.push(entry),
                    Some(_) => {}
                    None => return Err(ApiError::invalid("images", format!("{r:?} is not an image of this result"))),
                }
            }
            out
        }
    };

    let limits = &deps.limits;
    // Futures are built into a Vec first: a stream over a borrowing closure trips the
    // compiler's Send inference (rust-lang/rust#102211).
    let heads: Vec<_> = candidates.iter().map(|(_, e)| head_size(deps, &e.key)).collect();
    let sizes: Vec<u64> = stream::iter(heads)
        .buffered(limits.fetch_concurrency)
        .try_collect()
        .await
        .map_err(|e| fetch_error(&job, "an image", e))?;
    if let Some((i, s)) = sizes.iter().enumerate().find(|(_, s)| **s > limits.max_image_bytes) {
        return Err(invalid(
            &job,
            format!("image {:?} is {s} bytes, over {}", candidates[i].0, limits.max_image_bytes),
        ));
    }

    let doc_json: Option<Box<RawValue>> = match (&requested, &art.document) {
        (Some(_), _) => None,
        (None, Some(doc)) => Some(serde_json::value::to_raw_value(doc).map_err(|e| invalid(&job, e))?),
        (None, None) => Some(RawValue::from_string("null".to_owned()).map_err(|e| invalid(&job, e))?),
    };
    // Plan against the budget before downloading anything, so memory stays bounded by it.
    let mut used = 512 + doc_json.as_deref().map_or(0, |d| escaped_len(d.get()));
    let mut inline = Vec::new();
    let mut deferred = Vec::new();
    for (c, size) in candidates.iter().zip(&sizes) {
        let cost = (*size as usize).div_ceil(3) * 4 + escaped_len(&c.0) + c.0.len() + 96;
        if used + cost <= limits.response_budget {
            used += cost;
            inline.push((*c, *size));
        } else {
            deferred.push(c.0.as_str());
        }
    }

    let gets: Vec<_> = inline.iter().map(|((name, entry), size)| fetch_image(deps, &job, name, entry, *size)).collect();
    let fetched: Vec<(&str, ImageOut)> = stream::iter(gets).buffered(limits.fetch_concurrency).try_collect().await?;

    let body = ResultBody {
        code2des_id: &job.id,
        kind: art.kind.as_str(),
        version: shared::protocol::PROTOCOL_VERSION,
        warning_count: art.warning_count,
        document: doc_json.as_deref(),
        images: fetched.into_iter().collect(),
        deferred_images: deferred,
    };
    let text = serde_json::to_string(&body).map_err(|e| invalid(&job, e))?;
    if escaped_len(&text) > limits.response_budget {
        // The plan above is conservative; this guards the promise of never sending a body
        // the Lambda envelope cannot carry.
        return Err(invalid(&job, "the response would exceed the Lambda response limit"));
    }
    let mut resp = Response::new(Body::Text(text));
    resp.headers_mut().insert(
        lambda_http::http::header::CONTENT_TYPE,
        lambda_http::http::HeaderValue::from_static("application/json"),
    );
    tracing::info!(request_id, code2des_id = %job.id, inlined = inline.len(), deferred = sizes.len() - inline.len(), "result served");
    Ok(resp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requested_images_are_a_bounded_list() {
        assert_eq!(parse_requested(None).unwrap(), None);
        assert_eq!(parse_requested(Some("a,b")).unwrap(), Some(vec!["a", "b"]));
        assert!(parse_requested(Some("a,,b")).is_err());
        assert!(parse_requested(Some(&vec!["x"; 101].join(","))).is_err());
    }

    #[test]
    fn escaping_counts_quotes_and_backslashes() {
        assert_eq!(escaped_len(r#"{"a":"\n"}"#), 10 + 5);
    }
}
