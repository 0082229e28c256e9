//! The reference conversion worker: the worker protocol of SPEC section 4 spoken for real, and
//! its executable documentation for the production worker's authors (docs/WORKER.md): read the
//! manifest, write the images and the artifact under the attempt's prefix, POST the signed
//! webhook (Standard Webhooks), retrying only 5xx and transport errors. With
//! [`Worker::with_conversion`] a capture is converted by `code2des-convert` in headless
//! Chromium. A job with no capture, or a worker with no conversion, fails with a message: the
//! canned sample frame answers a job only when asked for explicitly ([`Worker::with_sample`],
//! `--sample`), so no job ever completes with a page the user did not capture.
//!
//! `completed` means served: before reporting it, the worker runs the result route's own checks
//! on the artifact bytes it wrote and the images it references ([`Worker::check_result`]); an
//! artifact the route would refuse fails the job with the reason instead.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use aws_sdk_s3::primitives::ByteStream;
use code2des_wire::artifact::{ArtifactImage, ArtifactWarning, Document, ImageKind, Mime, ResultArtifact, Warnings};
use code2des_wire::ids::ProgressStage;
use code2des_wire::keys::S3Pointer;
use code2des_wire::node::{Color, Node, NodeType, Paint, ScaleMode};
use code2des_wire::protocol::{
    Attempt, CompletedReport, EchoedNonce, ErrorMessage, FailedReport, JobId, Percent, ProcessingReport,
    ProgressReport, ResultUrl, Stage, WarningCount, WebhookReport, PROTOCOL_VERSION,
};
use code2des_wire::trace::Traceparent;
use code2des_wire::Obj;
use serde::Serialize;
use shared::domain::artifact::{self, Expect, Kind, Limits};
use shared::domain::ids::Code2desId;
use shared::domain::job::Nonce;
use shared::domain::protocol::Manifest;
use shared::domain::standard_webhooks as sw;
use tracing::Instrument;

pub mod lambda;
pub mod preview;
pub mod validate;

/// The file, under the local stack's data directory, that holds the `whsk_` key it generated.
pub const SIGNING_KEY_FILE: &str = "webhook-signing-key";
/// Its public half (`whpk_`), beside it.
pub const PUBLIC_KEY_FILE: &str = "webhook-public-key";

pub const HERO_PNG: &[u8] = include_bytes!("../assets/hero.png");
pub const LOGO_SVG: &[u8] = include_bytes!("../assets/logo.svg");

#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    #[error("S3: {0}")]
    S3(String),
    #[error("manifest: {0}")]
    Manifest(String),
    #[error("webhook: {0}")]
    Webhook(String),
}

/// The backend's answer to a webhook.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub body: String,
}

impl Reply {
    /// 409 (another attempt, or the job is already terminal: cancelled, timed out) or 410
    /// (deleted): the backend will take nothing more from this attempt.
    pub fn says_stop(&self) -> bool {
        matches!(self.status, 409 | 410)
    }
}

/// The stages the reference worker reports, with the percent reached at each.
pub const STAGES: [(u8, &str); 3] = [(10, "reading capture"), (45, "building nodes"), (80, "uploading images")];

/// The real conversion: one Chromium for the process, started at the first capture and
/// started again after it fails.
pub struct Conversion {
    options: code2des_convert::Options,
    renderer: tokio::sync::Mutex<Option<Arc<code2des_convert::Renderer>>>,
}

impl Conversion {
    pub fn new(options: code2des_convert::Options) -> Self {
        Self { options, renderer: tokio::sync::Mutex::new(None) }
    }

    /// The running renderer, started if need be.
    pub async fn renderer(&self) -> Result<Arc<code2des_convert::Renderer>, code2des_convert::RenderError> {
        let mut slot = self.renderer.lock().await;
        if let Some(r) = slot.as_ref() {
            return Ok(r.clone());
        }
        let r = Arc::new(code2des_convert::Renderer::start(self.options.clone()).await?);
        *slot = Some(r.clone());
        Ok(r)
    }

    /// Drops a renderer that failed (its browser died or stopped answering): the next capture
    /// starts a new one.
    async fn reset(&self) {
        self.renderer.lock().await.take();
    }
}

/// A capture over this is refused before it is downloaded in full.
const MAX_CAPTURE_BYTES: u64 = code2des_convert::capture::MAX_CAPTURE_BYTES as u64;

#[derive(Clone)]
pub struct Worker {
    pub s3: aws_sdk_s3::Client,
    pub bucket: String,
    /// The legacy signature's key (the secret's text), used only when there is no other.
    secret: String,
    /// `v1`: the decoded bytes of a `whsec_` secret.
    v1: Option<Vec<u8>>,
    /// `v1a`: the worker's ed25519 key (`whsk_`).
    signing_key: Option<ed25519_dalek::SigningKey>,
    http: reqwest::Client,
    conversion: Option<Arc<Conversion>>,
    /// Answer every job with the sample frame ([`Worker::with_sample`]).
    sample: bool,
    /// What the result route serves: its own `Limits` (the default, as the route's `Deps`).
    limits: Limits,
}

fn s3_err(e: impl std::error::Error + 'static) -> WorkerError {
    WorkerError::S3(shared::error::chain(&e))
}

impl Worker {
    pub fn new(s3: aws_sdk_s3::Client, bucket: impl Into<String>, secret: impl Into<String>) -> Self {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .expect("a client with a timeout builds");
        let secret = secret.into();
        // A whsec_ value that does not decode is not a v1 key; the legacy signature remains.
        let v1 = sw::parse_secret(&secret).ok();
        Self {
            s3,
            bucket: bucket.into(),
            secret,
            v1,
            signing_key: None,
            http,
            conversion: None,
            sample: false,
            limits: Limits::default(),
        }
    }

    /// Answers every job with the canned sample frame instead of converting its capture: for
    /// trying the protocol without Chromium (`code2des-worker --sample`), never by default.
    pub fn with_sample(mut self) -> Self {
        self.sample = true;
        self
    }

    /// Checks results against these limits: those of a result route configured otherwise.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Converts captures for real (see the crate's documentation).
    pub fn with_conversion(mut self, options: code2des_convert::Options) -> Self {
        self.conversion = Some(Arc::new(Conversion::new(options)));
        self
    }

    /// Signs `v1a` with `key` (the `whsk_` key whose `whpk_` the backend holds).
    pub fn with_signing_key(mut self, key: ed25519_dalek::SigningKey) -> Self {
        self.signing_key = Some(key);
        self
    }

    /// The signature headers of one delivery of `raw`, as `(name, value)` pairs: Standard
    /// Webhooks with every key this worker has, or the legacy header when it has none.
    pub fn signature_headers(&self, webhook_id: &str, now: i64, raw: &[u8]) -> Vec<(&'static str, String)> {
        let mut sigs = Vec::new();
        if let Some(k) = &self.signing_key {
            sigs.push(sw::sign_v1a(k, webhook_id, now, raw));
        }
        if let Some(k) = &self.v1 {
            sigs.push(sw::sign_v1(k, webhook_id, now, raw));
        }
        if sigs.is_empty() {
            let legacy = shared::domain::signature::header_value(self.secret.as_bytes(), now, raw);
            return vec![("Code2des-Signature", legacy)];
        }
        vec![
            (sw::ID_HEADER, webhook_id.to_owned()),
            (sw::TIMESTAMP_HEADER, now.to_string()),
            (sw::SIGNATURE_HEADER, sigs.join(" ")),
        ]
    }

    async fn put(&self, key: &str, bytes: Vec<u8>, content_type: &str) -> Result<(), WorkerError> {
        self.s3
            .put_object()
            .bucket(&self.bucket)
            .key(key)
            .content_type(content_type)
            .body(ByteStream::from(bytes))
            .send()
            .await
            .map_err(s3_err)?;
        Ok(())
    }

    pub async fn read_manifest(&self, key: &str) -> Result<Manifest, WorkerError> {
        let out = self.s3.get_object().bucket(&self.bucket).key(key).send().await.map_err(s3_err)?;
        let bytes = out.body.collect().await.map_err(s3_err)?.into_bytes();
        Manifest::from_slice(&bytes).map_err(WorkerError::Manifest)
    }

    /// The object-key prefix all of this attempt's output goes under.
    pub fn prefix(m: &Manifest) -> String {
        format!("code2des/{}/{}/", m.code2des_id, m.attempt)
    }

    /// What every report of the manifest's attempt echoes, checked as the backend reads it.
    fn echo(m: &Manifest) -> Result<(JobId, Attempt, EchoedNonce), WorkerError> {
        let id = Code2desId::parse(&m.code2des_id).map_err(|e| WorkerError::Manifest(e.to_string()))?;
        Ok((JobId(id), Attempt(m.attempt), EchoedNonce(m.nonce.clone())))
    }

    /// Reports progress on the signed webhook (SPEC section 7).
    pub async fn progress(&self, m: &Manifest, percent: u8, stage: &str) -> Result<Reply, WorkerError> {
        let (code2des_id, attempt, nonce) = Self::echo(m)?;
        let stage = ProgressStage::parse("progress.stage", stage).map_err(|e| WorkerError::Webhook(e.to_string()))?;
        let progress = ProgressReport { percent: Percent(percent.into()), stage: Stage(stage) };
        let body = WebhookReport::Processing(ProcessingReport {
            code2des_id,
            attempt,
            nonce,
            progress: Obj(progress),
            result_url: None,
        });
        self.send_report(m, &body).await
    }

    /// Reports each of [`STAGES`]; `Some(reply)` when the backend said to stop (409: another
    /// attempt or already terminal, e.g. cancelled; 410: deleted), so no work is wasted.
    async fn report_stages(&self, m: &Manifest, stages: &[(u8, &str)]) -> Result<Option<Reply>, WorkerError> {
        for (percent, stage) in stages {
            let reply = self.progress(m, *percent, stage).await?;
            if reply.says_stop() {
                tracing::info!(code2des_id = %m.code2des_id, status = reply.status, "worker told to stop");
                return Ok(Some(reply));
            }
        }
        Ok(None)
    }

    /// Converts the job: progress by stage, then the artifact and the terminal webhook. Stops
    /// early, answering the refusal, when a progress report is refused with 409 or 410.
    /// Without a capture, or without a conversion, the job fails: a canned page reported as the
    /// user's would be a success that converted nothing.
    ///
    /// The work is one span, `worker`, which continues the manifest's trace (its `traceparent`,
    /// when valid) when spans are exported; its children are the conversion's stages.
    pub async fn complete(&self, m: &Manifest) -> Result<Reply, WorkerError> {
        let span = tracing::info_span!(
            "worker",
            otel.kind = "consumer",
            code2des.id = %m.code2des_id,
            code2des.attempt = m.attempt,
        );
        shared::obs::trace::continue_trace(&span, m.trace());
        self.work(m).instrument(span).await
    }

    async fn work(&self, m: &Manifest) -> Result<Reply, WorkerError> {
        if self.sample {
            return self.sample(m).await;
        }
        match (&self.conversion, &m.capture_url) {
            (Some(c), Some(url)) => self.convert(m, c, url).await,
            (_, None) => {
                let msg = format!("page import {} has no capture: there is no page to convert", m.page_import_id);
                self.fail(m, &msg).await
            }
            (None, Some(_)) => self.fail(m, "this worker was started without a renderer: it converts no capture").await,
        }
    }

    /// Reads a capture: `s3://bucket/key` with the worker's S3 client, or `http(s)://…`.
    pub async fn read_capture(&self, url: &str) -> Result<Vec<u8>, String> {
        let too_big = |n: u64| format!("the capture is {n} bytes, over the limit of 50 MB");
        if let Some(rest) = url.strip_prefix("s3://") {
            let (bucket, key) = rest.split_once('/').ok_or("the capture URL names no object")?;
            let out =
                self.s3.get_object().bucket(bucket).key(key).send().await.map_err(|e| match e.as_service_error() {
                    Some(s) if s.is_no_such_key() => format!("{url} does not exist"),
                    _ => shared::error::chain(&e),
                })?;
            let size = out.content_length().unwrap_or(0).max(0) as u64;
            if size > MAX_CAPTURE_BYTES {
                return Err(too_big(size));
            }
            let bytes = out.body.collect().await.map_err(|e| shared::error::chain(&e))?.into_bytes();
            return Ok(bytes.to_vec());
        }
        if url.starts_with("http://") || url.starts_with("https://") {
            let mut resp = self.http.get(url).send().await.map_err(|e| e.to_string())?;
            if !resp.status().is_success() {
                return Err(format!("{url} answered HTTP {}", resp.status().as_u16()));
            }
            if let Some(n) = resp.content_length().filter(|n| *n > MAX_CAPTURE_BYTES) {
                return Err(too_big(n));
            }
            let mut bytes = Vec::new();
            while let Some(chunk) = resp.chunk().await.map_err(|e| e.to_string())? {
                bytes.extend_from_slice(&chunk);
                if bytes.len() as u64 > MAX_CAPTURE_BYTES {
                    return Err(too_big(bytes.len() as u64));
                }
            }
            return Ok(bytes);
        }
        Err("the capture URL is neither s3:// nor http(s)://".into())
    }

    /// The real conversion of the manifest's capture. Every way it can go wrong ends as a
    /// `failed` report with a failure artifact and a message for the user.
    async fn convert(&self, m: &Manifest, c: &Conversion, url: &str) -> Result<Reply, WorkerError> {
        if let Some(stop) = self.report_stages(m, &STAGES[..1]).await? {
            return Ok(stop);
        }
        let bytes = match self.read_capture(url).instrument(tracing::info_span!("capture")).await {
            Ok(b) => b,
            Err(e) => return self.fail(m, &format!("the capture could not be read: {e}")).await,
        };
        if let Some(stop) = self.report_stages(m, &STAGES[1..2]).await? {
            return Ok(stop);
        }
        let renderer = match c.renderer().await {
            Ok(r) => r,
            Err(e) => return self.fail(m, &e.to_string()).await,
        };
        // One layout per width the manifest names (none: the capture's own width).
        let viewports = m.viewports.as_deref().unwrap_or_default();
        let out = match code2des_convert::convert_viewports(&renderer, &bytes, viewports, false).await {
            Ok(out) => out,
            Err(e) => {
                if matches!(
                    e,
                    code2des_convert::ConvertError::Render(
                        code2des_convert::RenderError::Protocol(_) | code2des_convert::RenderError::Start(_)
                    )
                ) {
                    c.reset().await;
                }
                return self.fail(m, &e.to_string()).await;
            }
        };
        tracing::info!(
            code2des_id = %m.code2des_id, images = out.images.len(), warnings = out.warnings.len(),
            render_ms = out.timings.render.as_millis() as u64, "capture converted"
        );
        if let Some(stop) = self.report_stages(m, &STAGES[2..]).await? {
            return Ok(stop);
        }
        let upload = tracing::info_span!("upload", code2des.images = out.images.len());
        let mut images = self.put_images(&Self::prefix(m), &out.images).instrument(upload.clone()).await?;
        let drawn = out.images.iter().map(|i| (i.name.clone(), i.mime.to_owned(), i.bytes.clone()));
        self.put_preview(&Self::prefix(m), &out.document, drawn.collect(), &mut images).instrument(upload).await?;
        let count = i32::try_from(out.warnings.len()).unwrap_or(i32::MAX);
        // `finish` checks the whole artifact as the route will, and fails the job if it would
        // not be served (too large, too many warnings, an image the route refuses).
        self.finish(m, Kind::Result, Some(&out.document), images, count, Some(&out.warnings), None).await
    }

    /// Writes a converted page's images under `prefix`, a few at once (a page's images are
    /// independent PUTs; one after the other, a page of 30 icons waited 30 round trips), and
    /// answers the artifact's `images` member.
    pub async fn put_images(
        &self,
        prefix: &str,
        images: &[code2des_convert::Image],
    ) -> Result<BTreeMap<String, ArtifactImage>, WorkerError> {
        let mut stored = BTreeMap::new();
        // Eight at a time; the futures are collected before they are awaited, so the task that
        // runs this stays Send (a stream adapter over a borrowing closure would not be).
        for batch in images.chunks(8) {
            let puts: Vec<_> = batch
                .iter()
                .map(|img| async move {
                    let mime = Mime::from_name(img.mime).ok_or_else(|| {
                        WorkerError::S3(format!("image {} is of no artifact type: {}", img.name, img.mime))
                    })?;
                    let key = format!("{prefix}images/{}.{}", img.name, mime.extension());
                    self.put(&key, img.bytes.clone(), img.mime).await?;
                    Ok::<_, WorkerError>((img.name.clone(), ArtifactImage { key, mime_type: mime, kind: None }))
                })
                .collect();
            stored.extend(futures::future::try_join_all(puts).await?);
        }
        Ok(stored)
    }

    /// Draws the page's small preview (preview.rs; off the async threads, as it is CPU work)
    /// and writes it as the artifact's image of kind `preview`, `{prefix}preview.png`. A page
    /// that cannot be drawn completes without one: the preview is for the eye, the document is
    /// the result.
    pub async fn put_preview(
        &self,
        prefix: &str,
        document: &Node,
        images: Vec<(String, String, Vec<u8>)>,
        stored: &mut BTreeMap<String, ArtifactImage>,
    ) -> Result<(), WorkerError> {
        let doc = serde_json::to_value(document).map_err(|e| WorkerError::Manifest(e.to_string()))?;
        let images = images.into_iter().map(|(name, mime, bytes)| (name, preview::Image { mime, bytes })).collect();
        let drawn = tokio::task::spawn_blocking(move || {
            preview::read::page(doc, images, Vec::new()).and_then(|page| preview::small_of(&page))
        })
        .await;
        let png = match drawn {
            Ok(Ok(png)) => png,
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "no preview: the page could not be drawn");
                return Ok(());
            }
            Err(e) => {
                tracing::warn!(error = %e, "no preview: drawing it failed");
                return Ok(());
            }
        };
        let mut name = "preview".to_owned();
        while stored.contains_key(&name) {
            name.push('_');
        }
        let key = format!("{prefix}{name}.png");
        self.put(&key, png, "image/png").await?;
        stored.insert(name, ArtifactImage { key, mime_type: Mime::Png, kind: Some(ImageKind::Preview) });
        Ok(())
    }

    /// The sample conversion ([`Worker::with_sample`] only): writes images and a `result`
    /// artifact, then reports `completed`.
    async fn sample(&self, m: &Manifest) -> Result<Reply, WorkerError> {
        if let Some(stop) = self.report_stages(m, &STAGES[..2]).await? {
            return Ok(stop);
        }
        let prefix = Self::prefix(m);
        let hero = format!("{prefix}images/hero.png");
        let logo = format!("{prefix}images/logo.svg");
        self.put(&hero, HERO_PNG.to_vec(), "image/png").await?;
        self.put(&logo, LOGO_SVG.to_vec(), "image/svg+xml").await?;
        let document = sample_document(&m.screen_id);
        let mut images = BTreeMap::from([
            ("hero".to_owned(), ArtifactImage { key: hero, mime_type: Mime::Png, kind: None }),
            ("logo".to_owned(), ArtifactImage { key: logo, mime_type: Mime::Svg, kind: None }),
        ]);
        let drawn = vec![
            ("hero".to_owned(), "image/png".to_owned(), HERO_PNG.to_vec()),
            ("logo".to_owned(), "image/svg+xml".to_owned(), LOGO_SVG.to_vec()),
        ];
        self.put_preview(&prefix, &document, drawn, &mut images).await?;
        if let Some(stop) = self.report_stages(m, &STAGES[2..]).await? {
            return Ok(stop);
        }
        self.finish(m, Kind::Result, Some(&document), images, 1, None, None).await
    }

    /// Reports a failure with a `failure` artifact.
    pub async fn fail(&self, m: &Manifest, message: &str) -> Result<Reply, WorkerError> {
        self.finish(m, Kind::Failure, None, BTreeMap::new(), 0, None, Some(message)).await
    }

    /// Writes an artifact of the given kind and sends the matching webhook. `warnings`, when
    /// given, is the artifact's fidelity report (its length is then `warning_count`). A `result`
    /// is first checked as the result route will check it ([`Worker::check_result`]): one the
    /// route would refuse is written as a `failure` and reported `failed`, with the reason.
    #[allow(clippy::too_many_arguments)]
    pub async fn finish(
        &self,
        m: &Manifest,
        kind: Kind,
        document: Option<&Node>,
        images: BTreeMap<String, ArtifactImage>,
        warning_count: i32,
        warnings: Option<&[ArtifactWarning]>,
        error_message: Option<&str>,
    ) -> Result<Reply, WorkerError> {
        let artifact = ResultArtifact {
            version: PROTOCOL_VERSION,
            kind,
            code2des_id: m.code2des_id.clone(),
            attempt: m.attempt,
            nonce: m.nonce.clone(),
            warning_count: Some(warning_count.into()),
            document: document.map(Document::of),
            images: Some(images.into_iter().map(|(name, image)| (name, Obj(image))).collect()),
            warnings: warnings.map(Warnings::of),
        };
        let raw = serde_json::to_vec(&artifact).map_err(|e| WorkerError::Manifest(e.to_string()))?;
        if kind == Kind::Result {
            if let Err(problem) = self.check_result(m, &raw).await? {
                tracing::warn!(code2des_id = %m.code2des_id, problem = %problem, "result not servable: the job fails");
                let failure = ResultArtifact {
                    kind: Kind::Failure,
                    warning_count: Some(0),
                    document: None,
                    images: Some(BTreeMap::new()),
                    warnings: None,
                    ..artifact
                };
                let raw = serde_json::to_vec(&failure).map_err(|e| WorkerError::Manifest(e.to_string()))?;
                return self.report(m, Kind::Failure, raw, 0, Some(&problem)).await;
            }
        }
        self.report(m, kind, raw, warning_count, error_message).await
    }

    /// Writes the artifact bytes as `result.json` and sends the webhook of its kind.
    async fn report(
        &self,
        m: &Manifest,
        kind: Kind,
        raw: Vec<u8>,
        warning_count: i32,
        error_message: Option<&str>,
    ) -> Result<Reply, WorkerError> {
        let key = format!("{}result.json", Self::prefix(m));
        self.put(&key, raw, "application/json")
            .instrument(tracing::info_span!("upload", code2des.artifact = ?kind))
            .await?;
        let (code2des_id, attempt, nonce) = Self::echo(m)?;
        let url = S3Pointer::parse("result_url", &format!("s3://{}/{key}", self.bucket))
            .map_err(|e| WorkerError::Webhook(e.to_string()))?;
        let warning_count = Some(WarningCount(warning_count));
        let body = match kind {
            Kind::Result => WebhookReport::Completed(CompletedReport {
                code2des_id,
                attempt,
                nonce,
                result_url: ResultUrl(url),
                warning_count,
                error_message: None,
            }),
            Kind::Failure => WebhookReport::Failed(FailedReport {
                code2des_id,
                attempt,
                nonce,
                result_url: Some(ResultUrl(url)),
                warning_count,
                error_message: error_message.map(|m| ErrorMessage(m.to_owned())),
            }),
        };
        self.send_report(m, &body).await
    }

    /// The result route's checks on a `result` artifact, run by the worker before it reports
    /// `completed`, with the route's own code: its size against `Limits::max_artifact_bytes`,
    /// shared's `validate` of these exact bytes, every image the document uses read back from
    /// S3 as the route reads it and checked by `check_image`, and the route's `check_answer`
    /// (the answer fits a compressed Lambda response). `Ok(Err(reason))`: the route would answer
    /// 502 `artifact_invalid`; `Err`: S3 could not be read (the job is not reported).
    pub async fn check_result(&self, m: &Manifest, raw: &[u8]) -> Result<Result<(), String>, WorkerError> {
        let limits = &self.limits;
        if raw.len() as u64 > limits.max_artifact_bytes {
            return Ok(Err(format!(
                "the result artifact is {} bytes, over the {} the result route serves",
                grouped(raw.len() as u64),
                grouped(limits.max_artifact_bytes)
            )));
        }
        let Ok(id) = Code2desId::parse(&m.code2des_id) else {
            return Ok(Err(format!("the manifest's code2des_id {:?} is not a job id", m.code2des_id)));
        };
        let prefix = shared::domain::keys::job_prefix(id, m.attempt);
        let nonce = Nonce::from_db(m.nonce.clone());
        let expect = Expect {
            code2des_id: &m.code2des_id,
            attempt: m.attempt,
            nonce: &nonce,
            prefix: &prefix,
            kind: Kind::Result,
        };
        let art = match artifact::validate(raw, &expect, limits) {
            Ok(a) => a,
            Err(reason) => {
                return Ok(Err(format!("the result artifact would be refused by the result route: {reason}")))
            }
        };
        // Eight reads at a time, as the images were written: a page of many icons would
        // otherwise wait one round trip per image. Checked in document order, the first
        // problem is the one reported.
        let images: Vec<_> = art.images().collect();
        for batch in images.chunks(8) {
            let reads: Vec<_> = batch
                .iter()
                .map(|(name, entry)| async move {
                    let problem = match self.read_image(&entry.key).await? {
                        Err(reason) => Some(format!("image {name:?} of the result: {reason}")),
                        Ok(bytes) => artifact::check_entry(&bytes, entry, limits).err().map(|reason| {
                            format!("image {name:?} of the result would be refused by the result route: {reason}")
                        }),
                    };
                    Ok::<_, WorkerError>(problem)
                })
                .collect();
            if let Some(problem) = futures::future::try_join_all(reads).await?.into_iter().flatten().next() {
                return Ok(Err(problem));
            }
        }
        Ok(code2des_result::handler::check_answer(id, &art, limits)
            .map_err(|reason| format!("the result cannot be served: {reason}")))
    }

    /// One image as the route reads it: missing or over `max_image_bytes` is the artifact's
    /// fault (`Ok(Err)`); S3 failing is not (`Err`).
    async fn read_image(&self, key: &str) -> Result<Result<Vec<u8>, String>, WorkerError> {
        let out = match self.s3.get_object().bucket(&self.bucket).key(key).send().await {
            Ok(out) => out,
            Err(e) if e.as_service_error().is_some_and(|s| s.is_no_such_key()) => {
                return Ok(Err(format!("{key} does not exist")))
            }
            Err(e) => return Err(s3_err(e)),
        };
        let size = out.content_length().unwrap_or(0).max(0) as u64;
        if size > self.limits.max_image_bytes {
            return Ok(Err(format!("it is {size} bytes, over the limit of {}", self.limits.max_image_bytes)));
        }
        Ok(Ok(out.body.collect().await.map_err(s3_err)?.into_bytes().to_vec()))
    }

    /// Signs and POSTs a webhook body, retrying transport errors and 5xx with backoff. One
    /// `webhook-id` for the message, the same on every retry: the backend answers a redelivery
    /// as it answered the first delivery it got (a retry after a lost answer is harmless).
    pub async fn send_webhook(&self, url: &str, body: &impl Serialize) -> Result<Reply, WorkerError> {
        self.send_webhook_as(url, body, &format!("msg_{}", uuid::Uuid::new_v4().simple())).await
    }

    /// A report about `m`'s job, sent with the job's trace: the current span when spans are
    /// exported, else the manifest's `traceparent` as it came (so the backend's span still
    /// joins the job's trace).
    async fn send_report(&self, m: &Manifest, body: &impl Serialize) -> Result<Reply, WorkerError> {
        let trace = shared::obs::trace::traceparent_of(&tracing::Span::current()).or_else(|| m.trace());
        let id = format!("msg_{}", uuid::Uuid::new_v4().simple());
        self.post_webhook(&m.callback_url, body, &id, trace).await
    }

    /// [`Self::send_webhook`] under a given `webhook-id` (a redelivery of an earlier message).
    pub async fn send_webhook_as(
        &self,
        url: &str,
        body: &impl Serialize,
        webhook_id: &str,
    ) -> Result<Reply, WorkerError> {
        let trace = shared::obs::trace::traceparent_of(&tracing::Span::current());
        self.post_webhook(url, body, webhook_id, trace).await
    }

    /// Signs and POSTs, with `traceparent` when there is a trace to continue.
    async fn post_webhook(
        &self,
        url: &str,
        body: &impl Serialize,
        webhook_id: &str,
        trace: Option<Traceparent>,
    ) -> Result<Reply, WorkerError> {
        let traceparent = trace.map(|t| t.to_string());
        let raw = serde_json::to_vec(body).map_err(|e| WorkerError::Webhook(e.to_string()))?;
        let mut delay = Duration::from_millis(200);
        let mut last = String::new();
        for _ in 0..5 {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs() as i64)
                .unwrap_or(0);
            // Signed afresh on each try: the timestamp must be within 5 minutes of the backend's.
            let mut req = self.http.post(url).header("content-type", "application/json");
            if let Some(tp) = &traceparent {
                req = req.header(shared::obs::trace::TRACEPARENT, tp);
            }
            for (name, value) in self.signature_headers(webhook_id, now, &raw) {
                req = req.header(name, value);
            }
            let sent = req.body(raw.clone()).send().await;
            match sent {
                Ok(resp) if resp.status().is_server_error() => last = format!("HTTP {}", resp.status()),
                Ok(resp) => {
                    let status = resp.status().as_u16();
                    let body = resp.text().await.unwrap_or_default();
                    return Ok(Reply { status, body });
                }
                Err(e) => last = e.to_string(),
            }
            tokio::time::sleep(delay).await;
            delay *= 2;
        }
        Err(WorkerError::Webhook(format!("gave up: {last}")))
    }

    /// Manifests under `code2des/` whose attempt has no `result.json` yet and that are not in
    /// `seen`. A stand-in for the S3 → SQS notification the deployed worker consumes.
    pub async fn pending_manifests(&self, seen: &HashSet<String>) -> Result<Vec<String>, WorkerError> {
        let mut keys = Vec::new();
        let mut results = HashSet::new();
        let mut pages = self.s3.list_objects_v2().bucket(&self.bucket).prefix("code2des/").into_paginator().send();
        while let Some(page) = pages.next().await {
            let page = page.map_err(s3_err)?;
            for obj in page.contents() {
                let Some(key) = obj.key() else { continue };
                if let Some(p) = key.strip_suffix("manifest.json") {
                    if !seen.contains(key) {
                        keys.push((p.to_owned(), key.to_owned()));
                    }
                } else if let Some(p) = key.strip_suffix("result.json") {
                    results.insert(p.to_owned());
                }
            }
        }
        Ok(keys.into_iter().filter(|(p, _)| !results.contains(p)).map(|(_, k)| k).collect())
    }

    /// Completes every new job until `stop` resolves.
    pub async fn run(&self, interval: Duration, stop: impl std::future::Future<Output = ()>) {
        let mut seen = HashSet::new();
        tokio::pin!(stop);
        loop {
            match self.pending_manifests(&seen).await {
                Ok(keys) => {
                    for key in keys {
                        seen.insert(key.clone());
                        match self.read_manifest(&key).await {
                            Ok(m) => match self.complete(&m).await {
                                Ok(r) => {
                                    tracing::info!(code2des_id = %m.code2des_id, status = r.status, "demo worker completed a job")
                                }
                                Err(e) => {
                                    tracing::warn!(code2des_id = %m.code2des_id, error = %e, "demo worker failed")
                                }
                            },
                            Err(e) => {
                                tracing::warn!(error = %e, "demo worker could not read a manifest")
                            }
                        }
                    }
                }
                Err(e) => tracing::warn!(error = %e, "demo worker could not list manifests"),
            }
            tokio::select! {
                _ = &mut stop => return,
                _ = tokio::time::sleep(interval) => {}
            }
        }
    }
}

/// A byte count as people read it in a message: `2 098 432`.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(' ');
        }
        out.push(c);
    }
    out
}

/// The canned sample page ([`Worker::with_sample`]): a title, a hero image and a logo.
fn sample_document(screen_id: &str) -> Node {
    let white = Color { r: 1.0, g: 1.0, b: 1.0 };
    let at = |kind, name: &str, x, y, width, height| Node {
        kind,
        name: name.to_owned(),
        x,
        y,
        width,
        height,
        ..Node::default()
    };
    let title = Node {
        characters: Some("Captured page".to_owned()),
        font_size: Some(48.0),
        ..at(NodeType::TEXT, "Title", 80.0, 64.0, 0.0, 0.0)
    };
    let hero = Node {
        fills: Some(vec![Paint::Image { image_ref: "hero".into(), scale_mode: Some(ScaleMode::FILL), opacity: None }]),
        ..at(NodeType::RECTANGLE, "Hero", 80.0, 160.0, 640.0, 400.0)
    };
    let logo = Node { image_ref: Some("logo".into()), ..at(NodeType::SVG, "Logo", 1320.0, 64.0, 48.0, 48.0) };
    Node {
        fills: Some(vec![Paint::Solid { color: white, opacity: None }]),
        children: Some(vec![title, hero, logo]),
        ..at(NodeType::FRAME, screen_id, 0.0, 0.0, 1440.0, 900.0)
    }
}
