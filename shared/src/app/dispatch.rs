//! Dispatching an attempt to the worker: the transaction its row is written in, and the
//! manifest that tells the worker about it. Trigger (a new job) and retry (the next attempt of
//! a job) both go through here.
//!
//! - The statement runs in an explicit transaction committed only once its answer is in hand.
//!   Auto-committed, a statement cut by the query timeout (a hung database) could still commit
//!   later, after the client was told 503: a processing attempt that no manifest dispatched.
//!   BEGIN is pipelined with the statement (one round trip); COMMIT follows as the second.
//! - A connection whose transaction is left in doubt is discarded, never returned to the pool:
//!   the server then rolls the transaction back. So is one whose future is dropped half-way
//!   ([`InTransaction`]).
//! - The manifest is written after the commit. If that fails, the attempt is set failed with a
//!   clear message (fenced by its attempt and nonce) and the call answers 503: never an
//!   attempt stuck in processing that no worker was told about.
//!
//! Like the adapters, this speaks their errors and its own ([`DbError`], [`DispatchError`]),
//! never an answer: the functions turn them into one at the edge (`crate::http::faults`).

use deadpool_postgres::Object;

use crate::aws::bucket::{ArtifactBucket, BucketError};
use crate::db::connect::timed;
use crate::db::error::DbError;
use crate::db::trigger::{fail_undispatched, Undispatched};
use crate::domain::job::{Job, Nonce};
use crate::domain::keys::job_prefix;
use crate::domain::protocol::{Manifest, PROTOCOL_VERSION};
use crate::domain::trace::Traceparent;

/// What the statement decided: keep its writes, or undo them.
pub enum Tx<T> {
    Commit(T),
    Rollback(T),
}

/// How a transaction ended.
// The committed connection is the large variant: an `Ended` is made once per request and moved
// once, and boxing the connection would cost every dispatch an allocation to save a copy.
#[allow(clippy::large_enum_variant)]
pub enum Ended<T> {
    /// Committed; the connection is clean and may be used again.
    Committed(Object, T),
    /// Rolled back on the statement's own decision.
    RolledBack(T),
    /// The COMMIT's outcome is unknown (its answer never came): the writes may exist. The
    /// connection was discarded.
    Uncertain(T, DbError),
}

/// Runs `statement` in a transaction whose BEGIN is pipelined with it.
pub async fn transaction<T>(
    client: Object,
    statement: impl AsyncFnOnce(&tokio_postgres::Client) -> Result<Tx<T>, DbError>,
) -> Result<Ended<T>, DbError> {
    let tx = InTransaction(Some(client));
    let (begun, decided) = tokio::join!(timed(tx.client().batch_execute("BEGIN")), statement(tx.client()));
    // On every early return below the guard discards the connection.
    let decided = begun.and(decided)?;
    match decided {
        Tx::Rollback(v) => {
            if timed(tx.client().batch_execute("ROLLBACK")).await.is_ok() {
                drop(tx.ended());
            }
            Ok(Ended::RolledBack(v))
        }
        Tx::Commit(v) => match timed(tx.client().batch_execute("COMMIT")).await {
            Ok(()) => Ok(Ended::Committed(tx.ended(), v)),
            Err(e) => Ok(Ended::Uncertain(v, e)),
        },
    }
}

/// A pooled connection between BEGIN and its end. Dropped before [`InTransaction::ended`] (an
/// error, or the request's future dropped half-way: the budget's backstop, a client gone) it is
/// discarded, and the server rolls the transaction back. Returned to the pool instead, it
/// would hand the next request an open transaction: its writes never committed, the locks of
/// this one held. The pool cannot tell (deadpool's Fast and Verified recycling run no
/// statement that would notice, docs/RELIABILITY.md), and asking the server on every checkout
/// costs a round trip; this costs nothing.
struct InTransaction(Option<Object>);

impl InTransaction {
    fn client(&self) -> &Object {
        self.0.as_ref().expect("a transaction's connection until it ended")
    }

    /// The transaction ended (committed or rolled back): the connection is clean again.
    fn ended(mut self) -> Object {
        self.0.take().expect("a transaction ends once")
    }
}

impl Drop for InTransaction {
    fn drop(&mut self) {
        if let Some(client) = self.0.take() {
            discard(client);
        }
    }
}

/// Takes a connection out of the pool and closes it: its transaction state is unknown.
fn discard(client: Object) {
    drop(Object::take(client));
}

/// Why a manifest was not written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DispatchError {
    /// The bucket did not take it (the adapter logged why).
    #[error("the manifest was not written to the bucket ({0:?})")]
    Bucket(BucketError),
    /// Our bug: a manifest that does not serialise (logged here). Retrying cannot help.
    #[error("the manifest does not serialise")]
    Bug,
}

/// What an attempt converts: its page import's capture (when it has one) and the widths to lay
/// it out at (`None`: the capture's own width), as the manifest names them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Source {
    pub capture_url: Option<String>,
    pub viewports: Option<Vec<u32>>,
}

/// Writes manifests into the artifact bucket.
#[derive(Clone, Debug)]
pub struct Dispatcher {
    pub bucket: ArtifactBucket,
    /// The public webhook URL put in manifests.
    pub callback_url: String,
}

impl Dispatcher {
    /// The manifest of `job`'s current attempt (SPEC section 4). `caller` is the request's
    /// `traceparent`: the manifest names the request's span (or, without span export, the
    /// caller's, else a new trace) as the worker's parent.
    pub fn manifest(&self, job: &Job, nonce: &Nonce, source: Source, caller: Option<Traceparent>) -> Manifest {
        Manifest {
            version: PROTOCOL_VERSION,
            code2des_id: job.id.to_string(),
            attempt: job.attempt,
            nonce: nonce.expose().to_owned(),
            organization_id: job.organization_id.get(),
            project_id: job.project_id.get(),
            page_import_id: job.page_import_id.clone(),
            capture_url: source.capture_url,
            figma_file_key: job.figma_file_key.clone(),
            screen_id: job.screen_id.clone(),
            placement_target: job.placement_target.clone(),
            viewports: source.viewports,
            callback_url: self.callback_url.clone(),
            result_prefix: format!("s3://{}/{}", self.bucket.name(), job_prefix(job.id, job.attempt)),
            traceparent: Some(crate::obs::trace::outgoing(caller).to_string()),
        }
    }

    /// Writes the manifest at `code2des/{id}/{attempt}/manifest.json`.
    pub async fn put(&self, manifest: &Manifest) -> Result<(), DispatchError> {
        let body = serde_json::to_vec(manifest).map_err(|e| {
            tracing::error!(context = "serialising a manifest", error = %crate::error::chain(&e), "internal error");
            DispatchError::Bug
        })?;
        self.bucket
            .put_json(&Manifest::key(&manifest.code2des_id, manifest.attempt), body)
            .await
            .map_err(DispatchError::Bucket)
    }

    /// Dispatches a committed attempt. If the manifest cannot be written, the attempt is failed
    /// (`what` says what else to undo) and the answer is 503.
    pub async fn dispatch(
        &self,
        client: &Object,
        job: &Job,
        nonce: &Nonce,
        source: Source,
        caller: Option<Traceparent>,
        what: Undispatched,
    ) -> Result<(), DispatchError> {
        let manifest = self.manifest(job, nonce, source, caller);
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
    pub async fn dispatch_uncertain(&self, job: &Job, nonce: &Nonce, source: Source, caller: Option<Traceparent>) {
        let manifest = self.manifest(job, nonce, source, caller);
        if crate::budget::compensate(self.put(&manifest)).await.is_err() {
            tracing::error!(code2des_id = %job.id, "manifest write after an uncertain commit failed");
        }
    }
}
