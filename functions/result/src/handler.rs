//! `GET {base}/{code2desId}/result`: validates the worker's artifact in S3 and answers the
//! document with its images inlined as base64, without exposing S3 locations or credentials.
//!
//! Response budget: Lambda's synchronous response is at most 6 MiB. Images are inlined in
//! the order the document first uses them while the JSON-escaped body stays within
//! `Limits::response_budget`; the rest are listed in `deferredImages` and fetched with
//! `?images=ref1,ref2` (same validation, no document). A body is never truncated. Images that
//! could not be fetched within the request's time budget (`shared::budget`: S3 slow, trickling
//! or failing) are deferred the same way, and the answer is a 200 with what there is; a
//! `?images=` request that could fetch none of its images answers 503 with Retry-After.

use std::collections::BTreeMap;
use std::time::Duration;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use futures::stream::{self, StreamExt};
use shared::error::internal;

use crate::encoding::{self, Coding};
use lambda_http::http::StatusCode;
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
use shared::http::faults::STORAGE;
use shared::http::request::{query_param, request_id};
use shared::http::response::{empty, serve, set_header};
use shared::http::view::timestamp;
use shared::obs::metrics;
use shared::ApiError;
use tokio::time::Instant;

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

impl shared::app::function::Function for Deps {
    fn new(r: &Resources) -> impl std::future::Future<Output = Result<Self, SetupError>> {
        Deps::new(r)
    }

    fn handle(&self, req: Request) -> impl std::future::Future<Output = Response<Body>> + Send {
        handle(self, req)
    }
}

pub async fn handle(deps: &Deps, req: Request) -> Response<Body> {
    let request_id = request_id(&req);
    serve("result", &request_id, &req, run(deps, &req, &request_id)).await
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
    /// The ref (in `images` or `deferredImages`) of the page's small picture, when the worker
    /// drew one.
    #[serde(skip_serializing_if = "Option::is_none")]
    preview: Option<&'a str>,
    /// The fidelity report: the artifact's validated `warnings`, or none.
    warnings: &'a RawValue,
}

/// `warnings` of an artifact that lists none.
static NO_WARNINGS: std::sync::LazyLock<Box<RawValue>> =
    std::sync::LazyLock::new(|| RawValue::from_string("[]".to_owned()).expect("JSON"));

/// The `document` of a failure artifact that has none.
static NO_DOCUMENT: std::sync::LazyLock<Box<RawValue>> =
    std::sync::LazyLock::new(|| RawValue::from_string("null".to_owned()).expect("JSON"));

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
    shared::http::faults::bucket(e, |e| match e {
        BucketError::TooLarge(n) => invalid(job, format!("{what} is {n} bytes, over the limit")),
        _ => invalid(job, format!("{what} is missing")),
    })
}

/// The result's ETag: opaque (a digest; no nonce, key or location can be read back from it),
/// and different for each representation (the document, or a `?images=` subset).
fn etag(job: &Job, result_url: &str, requested: Option<&[&str]>, coding: Coding) -> String {
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
    format!("\"r1-{}{}\"", &hex::encode(h.finalize())[..32], coding.etag_suffix())
}

/// Every value of a request header, each line of it as sent.
fn header_values(req: &Request, name: lambda_http::http::header::HeaderName) -> Vec<&str> {
    req.headers().get_all(name).iter().filter_map(|v| v.to_str().ok()).collect()
}

/// The answer's body in `coding` when the request accepts one and the body is worth it: bytes
/// (the Lambda envelope base64-encodes them) with `Content-Encoding`; else the text itself.
/// A compressed body goes base64-encoded into the envelope: when that would not fit the budget
/// (an image-heavy body barely compresses), the text goes as it is if it fits. `None` when
/// neither fits: a document too large for the envelope as text is served compressed only.
fn encoded(text: String, coding: Coding, budget: usize) -> Option<Response<Body>> {
    match (packed(&text, coding, budget), coding.header()) {
        (Some(bytes), Some(name)) => {
            metrics::result_bytes(bytes.len() as u64);
            let mut resp = Response::new(Body::Binary(bytes));
            set_header(&mut resp, lambda_http::http::header::CONTENT_ENCODING, name);
            Some(resp)
        }
        _ if escaped_len(&text) <= budget => {
            metrics::result_bytes(text.len() as u64);
            Some(Response::new(Body::Text(text)))
        }
        _ => None,
    }
}

/// `text` in `coding`, when it is worth coding and its base64 fits `budget`.
fn packed(text: &str, coding: Coding, budget: usize) -> Option<Vec<u8>> {
    (text.len() >= encoding::MIN_BYTES)
        .then(|| encoding::encode(coding, text.as_bytes()))
        .flatten()
        .filter(|bytes| bytes.len().div_ceil(3) * 4 <= budget)
}

/// Whether the route can serve `art` (a valid result) to every client that accepts `br` or
/// `gzip`, as the plugin's fetch does: the least answer it makes of it, the document and the
/// warnings with every image deferred, must fit the Lambda envelope in both codings. The worker
/// runs this before it reports `completed` (a completed job is one whose result is served).
/// The text of a document over the budget fits no envelope: only a compressed answer is promised.
pub fn check_answer(id: Code2desId, art: &Artifact, limits: &Limits) -> Result<(), String> {
    let doc = document_json(art, false);
    let body = ResultBody {
        code2des_id: id,
        kind: art.kind.as_str(),
        version: PROTOCOL_VERSION,
        warning_count: art.warning_count,
        document: doc,
        images: BTreeMap::new(),
        deferred_images: art.images().map(|(name, _)| name.as_str()).collect(),
        preview: art.preview.as_ref().map(|(name, _)| name.as_str()),
        warnings: art.warnings.as_deref().unwrap_or(&NO_WARNINGS),
    };
    let text = serde_json::to_string(&body).map_err(|e| e.to_string())?;
    let budget = limits.response_budget;
    for coding in [Coding::Brotli, Coding::Gzip] {
        if packed(&text, coding, budget).is_none() && escaped_len(&text) > budget {
            let size = encoding::encode(coding, text.as_bytes()).map_or(0, |b| b.len());
            return Err(format!(
                "the result's answer is {} bytes of JSON, {size} with {}: over the {} bytes a compressed Lambda response carries",
                text.len(),
                coding.header().unwrap_or("identity"),
                budget / 4 * 3
            ));
        }
    }
    Ok(())
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
) -> Result<(&'a str, ImageOut), Skipped> {
    let bytes = match opened.read().await {
        Ok(b) => b,
        Err(e) => return Err(image_problem(job, e)),
    };
    artifact::check_entry(&bytes, entry, &deps.limits)
        .map_err(|r| Skipped::Refused(invalid(job, format!("image {name:?}: {r}"))))?;
    let out = ImageOut { mime_type: entry.mime.as_str(), size: bytes.len() as u64, data: STANDARD.encode(&bytes) };
    Ok((name, out))
}

/// Time kept back from the request's budget, after the images, for encoding and writing the
/// answer.
const ANSWER_TIME: Duration = Duration::from_millis(1500);
/// The images' time where no budget is set.
const NO_BUDGET: Duration = Duration::from_secs(3600);

/// An image left for a later `?images=` request: it did not fit the byte budget, or could not
/// be fetched within the time budget (S3 slow or failing; the first such fault is kept, to
/// answer a request that got nothing).
enum Skipped {
    Bytes,
    Fault(ApiError),
    /// Not deferred: the artifact's own fault (502) or a refused role (500) fails the request.
    Refused(ApiError),
}

/// What one image came to: its bytes, or why it is deferred.
type Fetched<'a> = Result<(&'a str, ImageOut), Skipped>;
/// An image opened and planned into the byte budget, or why not.
type Planned<'a> = Result<(&'a (String, ImageEntry), Opened), Skipped>;

/// The images of one answer: those inlined, those deferred, and the first storage fault that
/// deferred one (if any).
struct Images<'a> {
    fetched: Vec<(&'a str, ImageOut)>,
    deferred: Vec<&'a str>,
    fault: Option<ApiError>,
}

/// A failure to open or read an image: the artifact's own fault (missing, too large: 502), a
/// refused role (500), or the storage's fault or lack of time, which defers the image.
fn image_problem(job: &Job, e: BucketError) -> Skipped {
    if matches!(e, BucketError::Unavailable | BucketError::TimedOut(_)) {
        return Skipped::Fault(shared::http::faults::storage(e));
    }
    Skipped::Refused(fetch_error(job, "an image", e))
}

/// Opens, plans and reads the images of a response. Every image is opened at once with ONE
/// GET each: the response headers give its size before its body is read, so the byte budget is
/// planned with no HEAD requests and only the bodies that fit are read (the others' connections
/// are dropped unread). All of it ends by the time budget less [`ANSWER_TIME`]: an image not
/// opened or read by then is deferred like one that did not fit, and the answer is a 200 with
/// what there is. Futures are built into a Vec first: a stream over a borrowing closure trips the
/// compiler's Send inference (rust-lang/rust#102211).
async fn fetch_images<'a>(
    deps: &Deps,
    job: &Job,
    candidates: &[&'a (String, ImageEntry)],
    fixed: usize,
) -> Result<Images<'a>, ApiError> {
    let limits = &deps.limits;
    // Outside a request's budget (a direct call), the storage's own timeouts bound it.
    let left = shared::budget::current().map_or(NO_BUDGET, |b| b.remaining());
    let end = Instant::now() + left.saturating_sub(ANSWER_TIME);
    let opens: Vec<_> =
        candidates
            .iter()
            .map(|(_, e)| async move {
                tokio::time::timeout_at(end, deps.bucket.open(&e.key, limits.max_image_bytes)).await
            })
            .collect();
    let opened: Vec<_> = stream::iter(opens).buffered(limits.fetch_concurrency).collect().await;
    let plan = plan_reads(job, candidates, opened, fixed, limits.response_budget);
    let reads: Vec<_> = plan
        .into_iter()
        .map(|p| async move {
            let ((name, entry), o) = p?;
            match tokio::time::timeout_at(end, read_image(deps, job, name, entry, o)).await {
                Ok(read) => read,
                Err(_) => Err(Skipped::Fault(ApiError::DependencyTimeout(STORAGE))),
            }
        })
        .collect();
    let results: Vec<Fetched<'a>> = stream::iter(reads).buffered(limits.fetch_concurrency).collect().await;
    let (mut fetched, mut deferred, mut fault) = (Vec::new(), Vec::new(), None);
    for (c, r) in candidates.iter().zip(results) {
        match r {
            Ok(img) => fetched.push(img),
            Err(Skipped::Bytes) => deferred.push(c.0.as_str()),
            Err(Skipped::Fault(e)) => {
                deferred.push(c.0.as_str());
                fault.get_or_insert(e);
            }
            Err(Skipped::Refused(e)) => return Err(e),
        }
    }
    if let Some(e) = &fault {
        tracing::warn!(code2des_id = %job.id, deferred = deferred.len(), error = %e, "images deferred: storage slow or failing");
    }
    Ok(Images { fetched, deferred, fault })
}

/// Plans which opened images are read: against the byte budget, before reading any body, so
/// memory stays bounded by it; an image that could not be opened (or not in time) is skipped.
fn plan_reads<'a>(
    job: &Job,
    candidates: &[&'a (String, ImageEntry)],
    opened: Vec<Result<Result<Opened, BucketError>, tokio::time::error::Elapsed>>,
    fixed: usize,
    budget: usize,
) -> Vec<Planned<'a>> {
    let mut used = fixed;
    let mut plan: Vec<Planned<'a>> = Vec::with_capacity(candidates.len());
    for (c, o) in candidates.iter().zip(opened) {
        let o = match o {
            Ok(Ok(o)) => o,
            Ok(Err(e)) => {
                plan.push(Err(image_problem(job, e)));
                continue;
            }
            Err(_) => {
                plan.push(Err(Skipped::Fault(ApiError::DependencyTimeout(STORAGE))));
                continue;
            }
        };
        let cost = (o.size as usize).div_ceil(3) * 4 + escaped_len(&c.0) + c.0.len() + 96;
        if used + cost <= budget {
            used += cost;
            plan.push(Ok((*c, o)));
        } else {
            plan.push(Err(Skipped::Bytes));
        }
    }
    plan
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

    let (kind, result_url) = artifact_of(&job)?;
    // Past the bucket's retention the result is gone, whether or not the lifecycle rule has
    // reached the object yet: the same answer at every moment after `resultExpiresAt`.
    if let Some(at) = deps.policy.result_expired(&job, chrono::Utc::now()) {
        return Err(ApiError::ResultExpired { expired_at: timestamp(at) });
    }
    // A completed result never changes: a client holding it costs no S3 request at all.
    let coding = encoding::negotiate(header_values(req, lambda_http::http::header::ACCEPT_ENCODING));
    let tag = (kind == Kind::Result).then(|| etag(&job, result_url, requested.as_deref(), coding));
    if let Some(tag) = tag.as_deref().filter(|t| not_modified(req, t)) {
        let mut resp = empty(StatusCode::NOT_MODIFIED);
        set_header(&mut resp, lambda_http::http::header::ETAG, tag);
        set_header(&mut resp, lambda_http::http::header::VARY, "accept-encoding");
        set_header(&mut resp, lambda_http::http::header::CACHE_CONTROL, IMMUTABLE);
        return Ok(resp);
    }
    let art = load_artifact(deps, &job, result_url, kind).await?;

    let candidates = candidates(&art, requested.as_deref())?;
    let doc_json = document_json(&art, requested.is_some());
    let fixed = 512 + doc_json.map_or(0, |d| escaped_len(d.get()));
    let Images { fetched, deferred, fault: faults } = fetch_images(deps, &job, &candidates, fixed).await?;
    let inlined = fetched.len();
    // A request for named images that could fetch none of them has nothing to answer: a 503
    // that says when to come back, not a 200 that defers everything it was asked for.
    if let (Some(_), 0, Some(fault)) = (&requested, inlined, faults) {
        return Err(fault);
    }
    let body = ResultBody {
        code2des_id: job.id,
        kind: art.kind.as_str(),
        version: PROTOCOL_VERSION,
        warning_count: art.warning_count,
        document: doc_json,
        images: fetched.into_iter().collect(),
        deferred_images: deferred,
        preview: art.preview.as_ref().map(|(name, _)| name.as_str()),
        warnings: art.warnings.as_deref().unwrap_or(&NO_WARNINGS),
    };
    // Our own types: a failure here is our bug (500), never the worker's artifact (502).
    let text = serde_json::to_string(&body).map_err(|e| internal("encoding a result", &e))?;
    let deferred_count = body.deferred_images.len();
    // The plan above is conservative; this guards the promise of never sending a body the
    // Lambda envelope cannot carry. A document too large to go as text goes compressed; a
    // request that accepts no compression cannot have it (`check_answer`).
    let resp = respond(text, coding, tag.as_deref(), deps.limits.response_budget).ok_or_else(|| {
        invalid(&job, format!("the response would exceed the Lambda response limit in coding {coding:?}"))
    })?;
    tracing::info!(request_id, code2des_id = %job.id, inlined, deferred = deferred_count, "result served");
    Ok(resp)
}

/// The artifact a job's result GET serves, by its status: its result, its failure artifact, or
/// a refusal (still processing, failed without an artifact).
fn artifact_of(job: &Job) -> Result<(Kind, &str), ApiError> {
    match (job.status, job.result_url.as_deref()) {
        (Status::Processing, _) => Err(ApiError::conflict(ErrorCode::NotReady, "the job is still processing")),
        (Status::Failed, None) => {
            let msg = job.error_message.clone().unwrap_or_else(|| "the job failed".to_owned());
            Err(ApiError::conflict(ErrorCode::JobFailed, msg))
        }
        (Status::Failed, Some(url)) => Ok((Kind::Failure, url)),
        (Status::Completed, Some(url)) => Ok((Kind::Result, url)),
        (Status::Completed, None) => Err(invalid(job, "completed job without result_url")),
    }
}

/// Which images this response is about: the preview, then every used one in document order,
/// or those `?images=` names (each once; a name that is not an image of the result is a 400).
fn candidates<'a>(art: &'a Artifact, requested: Option<&[&str]>) -> Result<Vec<&'a (String, ImageEntry)>, ApiError> {
    let Some(refs) = requested else { return Ok(art.images().collect()) };
    let mut out: Vec<&(String, ImageEntry)> = Vec::with_capacity(refs.len());
    for r in refs {
        match art.images().find(|(name, _)| name == r) {
            Some(entry) if !out.iter().any(|e| e.0 == *r) => out.push(entry),
            Some(_) => {}
            None => return Err(ApiError::invalid("images", format!("{r:?} is not an image of this result"))),
        }
    }
    Ok(out)
}

/// The document as the worker wrote it (its length plans the image budget); none for
/// `?images=`.
fn document_json(art: &Artifact, images_only: bool) -> Option<&RawValue> {
    match (images_only, &art.document) {
        (true, _) => None,
        (false, Some(doc)) => Some(doc),
        (false, None) => Some(&NO_DOCUMENT),
    }
}

/// The 200: the body in the negotiated coding, its type, `Vary`, and for a result (which never
/// changes) its ETag and immutable caching.
fn respond(text: String, coding: Coding, tag: Option<&str>, budget: usize) -> Option<Response<Body>> {
    let mut resp = encoded(text, coding, budget)?;
    resp.headers_mut().insert(
        lambda_http::http::header::CONTENT_TYPE,
        lambda_http::http::HeaderValue::from_static("application/json"),
    );
    // Caches must key the answer by the request's Accept-Encoding.
    set_header(&mut resp, lambda_http::http::header::VARY, "accept-encoding");
    if let Some(tag) = tag {
        set_header(&mut resp, lambda_http::http::header::ETAG, tag);
        set_header(&mut resp, lambda_http::http::header::CACHE_CONTROL, IMMUTABLE);
    }
    Some(resp)
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
        let a = etag(&job(1), url, None, Coding::Identity);
        assert_eq!(a, etag(&job(1), url, None, Coding::Identity), "stable");
        assert!(a.starts_with("\"r1-") && a.ends_with('"') && a.len() == 37, "{a}");
        for leak in ["secret-nonce", "code2des/", "result.json", "01890a5d"] {
            assert!(!a.contains(leak));
        }
        assert_ne!(a, etag(&job(2), url, None, Coding::Identity));
        assert_ne!(a, etag(&job(1), url, Some(&["x"]), Coding::Identity));
        assert_ne!(
            etag(&job(1), url, Some(&["ab"]), Coding::Identity),
            etag(&job(1), url, Some(&["a", "b"]), Coding::Identity)
        );
    }

    #[test]
    fn a_body_over_the_text_budget_goes_compressed_or_not_at_all() {
        // A budget of 20 000 bytes: the text (about 60 000) does not fit, its br or gzip does.
        let text = serde_json::json!({"children": vec![serde_json::json!({"type": "TEXT", "characters": "a docs page"}); 1500]})
            .to_string();
        assert!(escaped_len(&text) > 20_000);
        for coding in [Coding::Brotli, Coding::Gzip] {
            let resp = encoded(text.clone(), coding, 20_000).expect("compressed, it fits");
            assert!(matches!(resp.body(), Body::Binary(b) if b.len().div_ceil(3) * 4 <= 20_000));
        }
        assert!(encoded(text.clone(), Coding::Identity, 20_000).is_none(), "as text it fits no envelope");
        assert!(encoded(text, Coding::Identity, 200_000).is_some());
    }

    #[test]
    fn check_answer_promises_a_fit_in_both_codings_for_the_document_alone() {
        let art = |document: serde_json::Value| Artifact {
            kind: Kind::Result,
            warning_count: Some(0),
            warnings: None,
            document: Some(serde_json::value::to_raw_value(&document).unwrap()),
            used: vec![(
                "hero".into(),
                ImageEntry { key: "code2des/x/1/images/hero.png".into(), mime: artifact::Mime::Png, preview: false },
            )],
            preview: None,
        };
        let id = Code2desId::parse("01890a5d-ac96-774b-bcce-b302099a8057").unwrap();
        let small = Limits { response_budget: 20_000, ..Limits::default() };
        let page = serde_json::json!({"type": "FRAME", "children": vec![serde_json::json!({"type": "TEXT", "characters": "a docs page"}); 1500]});
        assert_eq!(check_answer(id, &art(page), &small), Ok(()), "compresses to a fraction of the budget");
        // Text that does not compress (a xorshift's letters): over the budget in both codings.
        let mut x = 7_u64;
        let noise: String = (0..60_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (b'a' + (x % 26) as u8) as char
            })
            .collect();
        let err = check_answer(id, &art(serde_json::json!({"type": "TEXT", "characters": noise})), &small).unwrap_err();
        assert!(err.contains("with br: over the 15000 bytes a compressed Lambda response carries"), "{err}");
    }

    #[test]
    fn escaping_counts_quotes_and_backslashes() {
        assert_eq!(escaped_len(r#"{"a":"\n"}"#), 10 + 5);
    }
}
