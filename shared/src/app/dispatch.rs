//! Dispatching an attempt to the worker: the transaction its row is written in, and the
//! manifest that tells the worker about it. Trigger (a new job) and retry (the next attempt of
//! a job) both go through here.
//!
//! - The statement runs in an explicit transaction committed only once its answer is in hand.
//!   Auto-committed, a statement cut by the query timeout (a hung database) could still commit
//!   later, after the client was told 503: a processing attempt that no manifest dispatched.
//!   BEGIN is pipelined with the statement (one round trip); COMMIT follows as the second.
//! - A connection whose transaction is left in doubt is discarded, never returned to the pool:
//!   the server then rolls the transaction back.
//! - The manifest is written after the commit. If that fails, the attempt is set failed with a
//!   clear message (fenced by its attempt and nonce) and the call answers 503: never an
//!   attempt stuck in processing that no worker was told about.

use deadpool_postgres::Object;

use crate::aws::bucket::ArtifactBucket;
use crate::db::connect::timed;
use crate::db::trigger::{fail_undispatched, Undispatched};
use crate::domain::job::{Job, Nonce};
use crate::domain::keys::job_prefix;
use crate::domain::protocol::{Manifest, PROTOCOL_VERSION};
use crate::error::ApiError;

/// What the statement decided: keep its writes, or undo them.
pub enum Tx<T> {
    Commit(T),
    Rollback(T),
}

/// How a transaction ended.
pub enum Ended<T> {
    /// Committed; the connection is clean and may be used again.
    Committed(Object, T),
    /// Rolled back on the statement's own decision.
    RolledBack(T),
    /// The COMMIT's outcome is unknown (its answer never came): the writes may exist. The
    /// connection was discarded.
    Uncertain(T, ApiError),
}

/// Runs `statement` in a transaction whose BEGIN is pipelined with it.
pub async fn transaction<T>(
    client: Object,
    statement: impl AsyncFnOnce(&tokio_postgres::Client) -> Result<Tx<T>, ApiError>,
) -> Result<Ended<T>, ApiError> {
    let (begun, decided) = tokio::join!(timed(client.batch_execute("BEGIN")), statement(&client));
    let decided = match begun.map_err(ApiError::from).and(decided) {
        Ok(d) => d,
        Err(e) => {
            discard(client);
            return Err(e);
        }
    };
    match decided {
        Tx::Rollback(v) => {
            if timed(client.batch_execute("ROLLBACK")).await.is_err() {
                discard(client);
            }
            Ok(Ended::RolledBack(v))
        }
        Tx::Commit(v) => match timed(client.batch_execute("COMMIT")).await {
            Ok(()) => Ok(Ended::Committed(client, v)),
            Err(e) => {
                discard(client);
                Ok(Ended::Uncertain(v, e.into()))
            }
        },
    }
}

/// Takes a connection out of the pool and closes it: its transaction state is unknown.
fn discard(client: Object) {
    drop(Object::take(client));
}

/// Writes manifests into the artifact bucket.
#[derive(Clone, Debug)]
pub struct Dispatcher {
    pub bucket: ArtifactBucket,
    /// The public webhook URL put in manifests.
    pub callback_url: String,
}

impl Dispatcher {
    /// The manifest of `job`'s current attempt (SPEC section 4).
    pub fn manifest(&self, job: &Job, nonce: &Nonce, capture_url: Option<String>) -> Manifest {
        Manifest {
            version: PROTOCOL_VERSION,
            code2des_id: job.id.to_string(),
            attempt: job.attempt,
            nonce: nonce.expose().to_owned(),
            organization_id: job.organization_id.get(),
            project_id: job.project_id.get(),
            page_import_id: job.page_import_id.clone(),
            capture_url,
            figma_file_key: job.figma_file_key.clone(),
            screen_id: job.screen_id.clone(),
            placement_target: job.placement_target.clone(),
            callback_url: self.callback_url.clone(),
            result_prefix: format!("s3://{}/{}", self.bucket.name(), job_prefix(job.id, job.attempt)),
        }
    }

    /// Writes the manifest at `code2des/{id}/{attempt}/manifest.json`.
    pub async fn put(&self, manifest: &Manifest) -> Result<(), ApiError> {
        let body = serde_json::to_vec(manifest).map_err(|e| crate::error::internal("serialising a manifest", &e))?;
        self.bucket
            .put_json(&Manifest::key(&manifest.code2des_id, manifest.attempt), body)
            .await
            .map_err(crate::http::faults::storage)
    }

    /// Dispatches a committed attempt. If the manifest cannot be written, the attempt is failed
    /// (`what` says what else to undo) and the answer is 503.
    pub async fn dispatch(
        &self,
        client: &Object,
        job: &Job,
        nonce: &Nonce,
        capture_url: Option<String>,
        what: Undispatched,
    ) -> Result<(), ApiError> {
        let manifest = self.manifest(job, nonce, capture_url);
        if let Err(e) = self.put(&manifest).await {
            tracing::error!(code2des_id = %job.id, attempt = job.attempt, "manifest write failed; failing the attempt");
            let message = "the job could not be dispatched to the worker";
            // In the reserve, on a budget of its own: a dispatch refused for lack of time must
            // still leave no attempt processing that no worker was told about.
            let failed =
                crate::budget::compensate(fail_undispatched(&***client, job.id, job.attempt, nonce, message, what));
            match failed.await {
                // A terminal transition like any other (SPEC section 8); the attempt never ran.
                Ok(()) => crate::obs::metrics::job_failed(None),
                Err(fail) => {
                    tracing::error!(code2des_id = %job.id, error = %fail, "could not fail the undispatched attempt; the deadline will")
                }
            }
            return Err(e);
        }
        Ok(())
    }

    /// After an uncertain COMMIT: dispatch anyway, so that an attempt that did commit is worked
    /// on (a manifest whose row did not commit is refused by the webhook's fence).
    pub async fn dispatch_uncertain(&self, job: &Job, nonce: &Nonce, capture_url: Option<String>) {
        let manifest = self.manifest(job, nonce, capture_url);
        if crate::budget::compensate(self.put(&manifest)).await.is_err() {
            tracing::error!(code2des_id = %job.id, "manifest write after an uncertain commit failed");
        }
    }
}
