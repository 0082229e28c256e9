//! `POST /organizations/{organizationId}/projects/{projectId}/code2des`: creates a NEW job
//! from a completed Page Import and dispatches it to the worker by writing its manifest.

use lambda_http::{Body, Request, Response};
use sha2::{Digest, Sha256};
use shared::http::{self, json_object, optional_str, path_param, raw_body, required_str};
use shared::model::{Job, Nonce};
use shared::protocol::{Manifest, PROTOCOL_VERSION};
use shared::store::{self, Inserted, NewJob, Scope};
use shared::types::{
    job_prefix, Code2desId, FigmaFileKey, IdempotencyKey, OrganizationId, PageImportId, PlacementTarget, ProjectId,
    ScreenId,
};
use shared::ApiError;

/// What trigger needs, built once per instance.
pub struct Deps {
    pub pool: deadpool_postgres::Pool,
    pub s3: aws_sdk_s3::Client,
    pub bucket: String,
    pub callback_url: String,
}

impl Deps {
    pub async fn from_env() -> Result<Self, shared::setup::SetupError> {
        let (pool, _) = shared::setup::db_pool().await?;
        Ok(Self {
            pool,
            s3: shared::setup::s3_client().await,
            bucket: shared::setup::bucket()?,
            callback_url: shared::setup::callback_url()?,
        })
    }
}

pub async fn handle(deps: &Deps, req: Request) -> Response<Body> {
    let request_id = http::request_id(&req);
    http::finish("trigger", &request_id, run(deps, &req, &request_id).await)
}

struct Input {
    page_import_id: PageImportId,
    figma_file_key: FigmaFileKey,
    screen_id: ScreenId,
    placement_target: Option<PlacementTarget>,
}

impl Input {
    fn parse(bytes: &[u8]) -> Result<Self, ApiError> {
        let body = json_object(bytes)?;
        Ok(Self {
            page_import_id: PageImportId::parse(required_str(&body, PageImportId::FIELD)?)?,
            figma_file_key: FigmaFileKey::parse(required_str(&body, FigmaFileKey::FIELD)?)?,
            screen_id: ScreenId::parse(required_str(&body, ScreenId::FIELD)?)?,
            placement_target: optional_str(&body, PlacementTarget::FIELD)?.map(PlacementTarget::parse).transpose()?,
        })
    }

    /// The request's meaning, independent of JSON spelling (key order, whitespace), so a
    /// retried request with the same Idempotency-Key is recognised as the same request.
    fn fingerprint(&self) -> String {
        let mut h = Sha256::new();
        for part in [
            Some(self.page_import_id.as_str()),
            Some(self.figma_file_key.as_str()),
            Some(self.screen_id.as_str()),
            self.placement_target.as_ref().map(PlacementTarget::as_str),
        ] {
            match part {
                Some(s) => {
                    h.update([1]);
                    h.update((s.len() as u64).to_be_bytes());
                    h.update(s.as_bytes());
                }
                None => h.update([0]),
            }
        }
        hex::encode(h.finalize())
    }
}

fn location(job: &Job) -> String {
    format!("/organizations/{}/projects/{}/code2des/{}", job.organization_id, job.project_id, job.id)
}

fn accepted(job: &Job, request_id: &str) -> Response<Body> {
    let mut resp = http::ok_json(202, &job.view(), request_id);
    if let Ok(v) = location(job).parse() {
        resp.headers_mut().insert(lambda_http::http::header::LOCATION, v);
    }
    resp
}

async fn run(deps: &Deps, req: &Request, request_id: &str) -> Result<Response<Body>, ApiError> {
    let bytes = raw_body(req)?;
    let subject = http::subject(req)?;
    let organization_id = OrganizationId::parse(path_param(req, "organizationId")?)?;
    let project_id = ProjectId::parse(path_param(req, "projectId")?)?;
    let key =
        http::header_str(req, "idempotency-key", IdempotencyKey::FIELD)?.map(IdempotencyKey::parse).transpose()?;
    let input = Input::parse(bytes)?;
    let fingerprint = input.fingerprint();
    let scope = Scope {
        organization_id: organization_id.get(),
        project_id: project_id.get(),
        subject: subject.as_str().to_owned(),
    };

    let id = Code2desId::new_v7();
    let nonce = Nonce::generate();
    let client = shared::db::conn(&deps.pool).await?;
    let new = NewJob {
        id,
        scope: &scope,
        page_import_id: input.page_import_id.as_str(),
        figma_file_key: input.figma_file_key.as_str(),
        screen_id: input.screen_id.as_str(),
        placement_target: input.placement_target.as_ref().map(PlacementTarget::as_str),
        nonce: nonce.expose(),
        idempotency: key.as_ref().map(|k| (k.as_str(), fingerprint.as_str())),
    };
    // The insert runs in an explicit transaction, committed only once its answer is in hand.
    // Auto-committed, an INSERT that timed out here (a hung database) could still commit
    // later, after the client was told 503: a processing row that no manifest ever dispatched.
    // BEGIN is pipelined with the INSERT (one round trip); COMMIT follows as the second. A
    // connection whose transaction is left in doubt is discarded, never returned to the pool:
    // the server then rolls the transaction back.
    let (begun, inserted) =
        tokio::join!(shared::db::timed(client.batch_execute("BEGIN")), store::insert_job(&**client, &new));
    let inserted = match begun.and(inserted) {
        Ok(outcome) => outcome,
        Err(e) => {
            discard(client);
            return Err(e);
        }
    };
    let (job, capture_url) = match inserted {
        Inserted::Created { job, capture_url } => (job, capture_url),
        Inserted::NotFound => {
            rollback(client).await;
            return Err(ApiError::NotFound("page import not found"));
        }
        Inserted::PageImportNotCompleted => {
            rollback(client).await;
            return Err(ApiError::conflict("page_import_not_completed", "the page import is not completed"));
        }
        Inserted::KeyTaken => {
            // The key was claimed before (possibly by a request racing this one, which the
            // insert waited for): answer what that request created.
            let key = key.as_ref().map(IdempotencyKey::as_str).unwrap_or_default();
            let found = store::find_by_idempotency_key(&**client, &scope, key).await;
            rollback(client).await;
            return match found? {
                Some((hash, job)) if hash == fingerprint => Ok(accepted(&job, request_id)),
                Some(_) => Err(ApiError::Unprocessable {
                    code: "idempotency_key_reused",
                    message: "this Idempotency-Key was used with a different request body".into(),
                }),
                None => Err(ApiError::NotFound("page import not found")),
            };
        }
    };

    let committed = shared::db::timed(client.batch_execute("COMMIT")).await;
    let manifest = Manifest {
        version: PROTOCOL_VERSION,
        code2des_id: job.id.clone(),
        attempt: job.attempt,
        nonce: nonce.expose().to_owned(),
        organization_id: job.organization_id,
        project_id: job.project_id,
        page_import_id: job.page_import_id.clone(),
        capture_url,
        figma_file_key: job.figma_file_key.clone(),
        screen_id: job.screen_id.clone(),
        placement_target: job.placement_target.clone(),
        callback_url: deps.callback_url.clone(),
        result_prefix: format!("s3://{}/{}", deps.bucket, job_prefix(id, job.attempt)),
    };
    if let Err(e) = committed {
        discard(client);
        // The COMMIT's outcome is unknown: the row may exist. Dispatch it anyway, so that a row
        // that did commit is worked on (a manifest whose row did not is refused by the webhook
        // with 404), and answer 503: a retry with the same Idempotency-Key finds this job.
        if let Err(reason) = put_manifest(deps, &manifest).await {
            tracing::error!(code2des_id = %job.id, error = %reason, "manifest write after an uncertain commit failed");
        }
        return Err(e);
    }
    if let Err(reason) = put_manifest(deps, &manifest).await {
        tracing::error!(code2des_id = %job.id, error = %reason, "manifest write failed; failing the job");
        // The row must not stay processing with no worker ever told about it.
        if let Err(e) = store::fail_undispatched(&**client, id, "the job could not be dispatched to the worker").await {
            tracing::error!(code2des_id = %job.id, error = %e, "could not fail the undispatched job; the deadline will");
        }
        return Err(ApiError::Unavailable("artifact storage"));
    }
    tracing::info!(code2des_id = %job.id, organization_id = job.organization_id, project_id = job.project_id, "job created");
    Ok(accepted(&job, request_id))
}

/// Ends a transaction that wrote nothing worth keeping; a connection that cannot is discarded.
async fn rollback(client: deadpool_postgres::Object) {
    if shared::db::timed(client.batch_execute("ROLLBACK")).await.is_err() {
        discard(client);
    }
}

/// Takes a connection out of the pool and closes it: its transaction state is unknown.
fn discard(client: deadpool_postgres::Object) {
    drop(deadpool_postgres::Object::take(client));
}

async fn put_manifest(deps: &Deps, manifest: &Manifest) -> Result<(), String> {
    let body = serde_json::to_vec(manifest).map_err(|e| e.to_string())?;
    deps.s3
        .put_object()
        .bucket(&deps.bucket)
        .key(Manifest::key(&manifest.code2des_id, manifest.attempt))
        .content_type("application/json")
        .body(body.into())
        .send()
        .await
        .map(|_| ())
        .map_err(|e| shared::error::chain(&e))
}
