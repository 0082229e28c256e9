//! `GET {base}/{code2desId}/result`: validates the worker's artifact in S3 and answers the
//! document with its images inlined as base64, without exposing S3 locations or credentials.
//!
//! Response budget: Lambda's synchronous response is at most 6 MiB. Images are inlined in
//! the order the document first uses them while the JSON-escaped body stays within
//! `Limits::response_budget`; the rest are listed in `deferredImages` and fetched with
//! `?images=ref1,ref2` (same validation, no document). A body is never truncated.

use std::collections::BTreeMap;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use futures::stream::{self, StreamExt, TryStreamExt};
use lambda_http::{Body, Request, Response};
use serde::Serialize;
use serde_json::value::RawValue;
use sha2::{Digest, Sha256};
use shared::app::resources::Resources;
use shared::aws::bucket::{ArtifactBucket, BucketError, Opened};
use shared::config::SetupError;
use shared::db::connect::conn;
use shared::db::lifecycle::get_job;
use shared::domain::artifact::{self, Artifact, Expect, ImageEntry, Kind, Limits};
use shared::domain::ids::Code2desId;
use shared::domain::job::{Job, Policy, Status};
use shared::domain::keys::{job_prefix, S3Pointer};
use shared::domain::protocol::PROTOCOL_VERSION;
use shared::error::ErrorCode;
use shared::http::caller;
use shared::http::request::{query_param, request_id};
use shared::http::response::{empty, respond, set_header};
use shared::http::view::timestamp;
use shared::obs::metrics;
use shared::ApiError;

/// Most refs one `?images=` request may name.
pub const MAX_REQUESTED_IMAGES: usize = 100;
/// A completed job's result never changes (SPEC section 7).
pub const IMMUTABLE: &str = "private, max-age=86400, immutable";

pub struct Deps {
    pub pool: deadpool_postgres::Pool,
    pub bucket: ArtifactBucket,
    pub policy: Policy,
    pub limits: Limits,
}

impl Deps {
    pub async fn new(r: &Resources) -> Result<Self, SetupError> {
        Ok(Self {
            pool: r.pool().await?,
            bucket: r.bucket().await?,
            policy: r.settings.policy(),
            limits: Limits::default(),
        })
    }
}

pub async fn handle(deps: &Deps, req: Request) -> Response<Body> {
    let request_id = request_id(&req);
    respond("result", &request_id, run(deps, &req, &request_id).await)
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
    code2des_id: Code2desId,
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

fn fetch_error(job: &Job, what: &str, e: BucketError) -> ApiError {
    e.into_api(|e| match e {
        BucketError::TooLarge(n) => invalid(job, format!("{what} is {n} bytes, over the limit")),
        _ => invalid(job, format!("{what} is missing")),
    })
}

/// The result's ETag: opaque (a digest; no nonce, key or location can be read back from it),
/// and different for each representation (the document, or a `?images=` subset).
fn etag(job: &Job, result_url: &str, requested: Option<&[&str]>) -> String {
    let mut h = Sha256::new();
    for part in [&job.id.to_string(), &job.attempt.to_string(), result_url] {
        h.update((part.len() as u64).to_be_bytes());
        h.update(part.as_bytes());
    }
    match requested {
        None => h.update([0]),
        Some(refs) => {
            h.update([1]);
            for r in refs {
                h.update((r.len() as u64).to_be_bytes());
                h.update(r.as_bytes());
            }
        }
    }
    format!("\"r1-{}\"", &hex::encode(h.finalize())[..32])
}

/// `If-None-Match` names `tag` (or is `*`): the client's copy is current.
fn not_modified(req: &Request, tag: &str) -> bool {
    req.headers()
        .get_all(lambda_http::http::header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.split(',').map(str::trim).any(|t| t == "*" || t == tag || t.strip_prefix("W/") == Some(tag)))
}

async fn load_artifact(deps: &Deps, job: &Job, result_url: &str, kind: Kind) -> Result<Artifact, ApiError> {
    let prefix = job_prefix(job.id, job.attempt);
    let ptr = S3Pointer::parse("result_url", result_url).map_err(|e| invalid(job, e))?;
    if !ptr.is_under(deps.bucket.name(), &prefix) {
        return Err(invalid(job, "result_url is outside the job's prefix in the artifact bucket"));
    }
    // One GET: its size header refuses an oversized artifact before the body is read.
    let bytes = deps
        .bucket
        .get_bounded(&ptr.key, deps.limits.max_artifact_bytes)
        .await
        .map_err(|e| fetch_error(job, "artifact", e))?;
    let id = job.id.to_string();
    let expect = Expect { code2des_id: &id, attempt: job.attempt, nonce: &job.nonce, prefix: &prefix, kind };
    artifact::validate(&bytes, &expect, &deps.limits).map_err(|r| invalid(job, r))
}

/// Reads one opened image, checks its bytes, and encodes it.
async fn read_image<'a>(
    deps: &Deps,
    job: &Job,
    name: &'a str,
    entry: &ImageEntry,
    opened: Opened,
) -> Result<(&'a str, ImageOut), ApiError> {
    let bytes = opened.read().await.map_err(|e| fetch_error(job, "an image", e))?;
    artifact::check_image(&bytes, entry.mime, &deps.limits)
        .map_err(|r| invalid(job, format!("image {name:?}: {r}")))?;
    let out = ImageOut { mime_type: entry.mime.as_str(), size: bytes.len() as u64, data: STANDARD.encode(&bytes) };
    Ok((name, out))
}

async fn run(deps: &Deps, req: &Request, request_id: &str) -> Result<Response<Body>, ApiError> {
    let j = caller::job_ref(req)?;
    let requested = parse_requested(query_param(req, "images")?)?;
    let job = {
        let client = conn(&deps.pool).await?;
        get_job(&**client, &j, deps.policy.deadline).await?
        // The connection goes back to the pool before the S3 work starts.
    }
    .ok_or(ApiError::NotFound("job not found"))?;

    let (kind, result_url) = match (job.status, job.result_url.as_deref()) {
        (Status::Processing, _) => return Err(ApiError::conflict(ErrorCode::NotReady, "the job is still processing")),
        (Status::Failed, None) => {
            let msg = job.error_message.clone().unwrap_or_else(|| "the job failed".to_owned());
            return Err(ApiError::conflict(ErrorCode::JobFailed, msg));
        }
        (Status::Failed, Some(url)) => (Kind::Failure, url),
        (Status::Completed, Some(url)) => (Kind::Result, url),
        (Status::Completed, None) => return Err(invalid(&job, "completed job without result_url")),
    };
    // Past the bucket's retention the result is gone, whether or not the lifecycle rule has
    // reached the object yet: the same answer at every moment after `resultExpiresAt`.
    if let Some(at) = deps.policy.result_expired(&job, chrono::Utc::now()) {
        return Err(ApiError::ResultExpired { expired_at: timestamp(at) });
    }
    // A completed result never changes: a client holding it costs no S3 request at all.
    let tag = (kind == Kind::Result).then(|| etag(&job, result_url, requested.as_deref()));
    if let Some(tag) = &tag {
        if not_modified(req, tag) {
            let mut resp = empty(304);
            set_header(&mut resp, lambda_http::http::header::ETAG, tag);
            set_header(&mut resp, lambda_http::http::header::CACHE_CONTROL, IMMUTABLE);
            return Ok(resp);
        }
    }
    let art = load_artifact(deps, &job, result_url, kind).await?;

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
    // Every image is opened at once with ONE GET each: the response headers give its size
    // before its body is read, so the budget is planned with no HEAD requests, and only the
    // bodies that fit are read (the others' connections are dropped unread). Futures are built
    // into a Vec first: a stream over a borrowing closure trips the compiler's Send inference
    // (rust-lang/rust#102211).
    let opens: Vec<_> = candidates.iter().map(|(_, e)| deps.bucket.open(&e.key, limits.max_image_bytes)).collect();
    let opened: Vec<Opened> = stream::iter(opens)
        .buffered(limits.fetch_concurrency)
        .try_collect()
        .await
        .map_err(|e| fetch_error(&job, "an image", e))?;

    let doc_json: Option<Box<RawValue>> = match (&requested, &art.document) {
        (Some(_), _) => None,
        (None, Some(doc)) => Some(serde_json::value::to_raw_value(doc).map_err(|e| invalid(&job, e))?),
        (None, None) => Some(RawValue::from_string("null".to_owned()).map_err(|e| invalid(&job, e))?),
    };
    // Plan against the budget before reading any body, so memory stays bounded by it.
    let mut used = 512 + doc_json.as_deref().map_or(0, |d| escaped_len(d.get()));
    let mut inline = Vec::new();
    let mut deferred = Vec::new();
    for (c, o) in candidates.iter().zip(opened) {
        let cost = (o.size as usize).div_ceil(3) * 4 + escaped_len(&c.0) + c.0.len() + 96;
        if used + cost <= limits.response_budget {
            used += cost;
            inline.push((*c, o));
        } else {
            deferred.push(c.0.as_str());
        }
    }
    let inlined = inline.len();

    let reads: Vec<_> = inline.into_iter().map(|((name, entry), o)| read_image(deps, &job, name, entry, o)).collect();
    let fetched: Vec<(&str, ImageOut)> = stream::iter(reads).buffered(limits.fetch_concurrency).try_collect().await?;

    let body = ResultBody {
        code2des_id: job.id,
        kind: art.kind.as_str(),
        version: PROTOCOL_VERSION,
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
    let deferred_count = body.deferred_images.len();
    metrics::result_bytes(text.len() as u64);
    let mut resp = Response::new(Body::Text(text));
    resp.headers_mut().insert(
        lambda_http::http::header::CONTENT_TYPE,
        lambda_http::http::HeaderValue::from_static("application/json"),
    );
    if let Some(tag) = &tag {
        set_header(&mut resp, lambda_http::http::header::ETAG, tag);
        set_header(&mut resp, lambda_http::http::header::CACHE_CONTROL, IMMUTABLE);
    }
    tracing::info!(request_id, code2des_id = %job.id, inlined, deferred = deferred_count, "result served");
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
    fn etags_are_opaque_and_per_representation() {
        let job = |attempt| Job {
            id: Code2desId::parse("01890a5d-ac96-774b-bcce-b302099a8057").unwrap(),
            organization_id: shared::domain::ids::OrganizationId::new(1).unwrap(),
            project_id: shared::domain::ids::ProjectId::new(1).unwrap(),
            page_import_id: "p".into(),
            figma_file_key: "f".into(),
            screen_id: "s".into(),
            placement_target: None,
            status: Status::Completed,
            attempt,
            nonce: shared::domain::job::Nonce::from_db("secret-nonce".into()),
            result_url: None,
            warning_count: None,
            error_message: None,
            materialized_at: None,
            materialized_node_id: None,
            created_at: chrono::Utc::now(),
            updated_at: chrono::Utc::now(),
            created_by: "u".into(),
            updated_by: "u".into(),
            attempt_started_at: chrono::Utc::now(),
            progress: None,
            cancelled_at: None,
        };
        let url = "s3://b/code2des/01890a5d-ac96-774b-bcce-b302099a8057/1/result.json";
        let a = etag(&job(1), url, None);
        assert_eq!(a, etag(&job(1), url, None), "stable");
        assert!(a.starts_with("\"r1-") && a.ends_with('"') && a.len() == 37, "{a}");
        for leak in ["secret-nonce", "code2des/", "result.json", "01890a5d"] {
            assert!(!a.contains(leak));
        }
        assert_ne!(a, etag(&job(2), url, None));
        assert_ne!(a, etag(&job(1), url, Some(&["x"])));
        assert_ne!(etag(&job(1), url, Some(&["ab"])), etag(&job(1), url, Some(&["a", "b"])));
    }

    #[test]
    fn escaping_counts_quotes_and_backslashes() {
        assert_eq!(escaped_len(r#"{"a":"\n"}"#), 10 + 5);
    }
}
