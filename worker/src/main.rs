//! `code2des-worker`: the reference worker as a command.
//!
//! `code2des-worker poll` completes every new job (converting its capture in headless
//! Chromium; a job with no capture fails; `--sample` answers every job with the canned sample
//! document instead, for trying the protocol without Chromium); `code2des-worker complete <manifest key>` or
//! `code2des-worker fail <manifest key> <message>` handles one; `code2des-worker validate
//! <artifact.json> [--images DIR]` runs the result route's checks on a local artifact;
//! `code2des-worker preview RESULT.json --out page.png [--images DIR] [--small] [--svg]` draws
//! a result's document as the plugin would build it.
//! Configuration is the same environment as the services: `ARTIFACT_BUCKET`, `WEBHOOK_SECRET`,
//! `S3_ENDPOINT`, plus the worker's own ed25519 key for Standard Webhooks `v1a`:
//! `WEBHOOK_SIGNING_KEY=whsk_…` or `WEBHOOK_SIGNING_KEY_FILE=path` (default: the key the local
//! stack generated, `.code2des-local/webhook-signing-key`, when it is there).

use std::time::Duration;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "code2des-worker", about = "Reference worker for the Code2Des worker protocol")]
struct Cli {
    #[arg(long, env = "ARTIFACT_BUCKET", default_value = "code2des-artifacts")]
    bucket: String,
    /// The legacy signature's key, and the `v1` key when it is a `whsec_` value.
    #[arg(long, env = "WEBHOOK_SECRET", default_value = "local-webhook-secret", hide_env_values = true)]
    webhook_secret: String,
    /// The worker's ed25519 key (`whsk_…`) to sign `v1a` with.
    #[arg(long, env = "WEBHOOK_SIGNING_KEY", hide_env_values = true, conflicts_with = "signing_key_file")]
    signing_key: Option<String>,
    /// A file holding the `whsk_` key (the local stack writes one under its data directory).
    #[arg(long, env = "WEBHOOK_SIGNING_KEY_FILE")]
    signing_key_file: Option<std::path::PathBuf>,
    /// Answer every job with the canned sample document instead of converting its capture (no
    /// Chromium needed). Only with this flag: without it, a job with no capture fails.
    #[arg(long, env = "CODE2DES_WORKER_SAMPLE")]
    sample: bool,
    /// The time limit of one page in the renderer (load, layout, snapshot).
    #[arg(long, env = "CODE2DES_PAGE_TIMEOUT_SECS", default_value = "20")]
    page_timeout_secs: u64,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Complete every job whose manifest appears, until Ctrl-C.
    Poll {
        #[arg(long, default_value = "500")]
        interval_ms: u64,
    },
    /// Complete the job of one manifest key.
    Complete { manifest_key: String },
    /// Serve the worker queue's SQS events under the Lambda runtime (the container image's
    /// entry point in AWS: docs/WORKER.md, "In AWS"). `WEBHOOK_SECRET_ARN` names the HMAC key.
    Lambda,
    /// Fail the job of one manifest key with a message.
    Fail { manifest_key: String, message: String },
    /// Check an artifact (and its images) as the result route will: every problem with its JSON
    /// path; exit status 1 if there is any.
    Validate {
        artifact: std::path::PathBuf,
        /// Where the images are: a file per key, without the job's prefix (`DIR/images/hero.png`)
        /// or with it.
        #[arg(long)]
        images: Option<std::path::PathBuf>,
        /// The job's manifest.json, to check code2des_id, attempt, nonce and image keys against.
        #[arg(long)]
        manifest: Option<std::path::PathBuf>,
    },
    /// Draw a result's document as the plugin would build it, as a PNG: the worker's artifact,
    /// the result route's answer, the converter's document.json, or a bare document.
    Preview {
        result: std::path::PathBuf,
        /// The PNG to write.
        #[arg(long)]
        out: std::path::PathBuf,
        /// Where the images are (a file per key, with or without the job's prefix); default:
        /// beside RESULT.
        #[arg(long)]
        images: Option<std::path::PathBuf>,
        /// The small preview an artifact carries (at most 480 px wide and 64 KB) instead of
        /// the full size.
        #[arg(long)]
        small: bool,
        /// Also write the SVG drawn, beside the PNG (`page.svg` for `page.png`).
        #[arg(long)]
        svg: bool,
    },
    /// Re-sign an API Gateway webhook event file (e.g. events/webhook.json) for now, so
    /// `sam local invoke -e` passes the 300 s freshness check.
    SignEvent {
        path: std::path::PathBuf,
        #[arg(long, default_value = "test-webhook-secret")]
        secret: String,
    },
}

fn sign_event(path: &std::path::Path, secret: &str) -> Result<(), Error> {
    let mut event: serde_json::Value = serde_json::from_slice(&std::fs::read(path)?)?;
    let body = event["body"].as_str().ok_or("the event has no string body")?.to_owned();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.as_secs() as i64;
    event["headers"]["code2des-signature"] =
        shared::domain::signature::header_value(secret.as_bytes(), now, body.as_bytes()).into();
    std::fs::write(path, serde_json::to_string_pretty(&event)? + "\n")?;
    println!("signed {} at t={now}", path.display());
    Ok(())
}

/// Prints the backend's answer; anything but 200 (a 409 fence, a 410) is a failed command, so
/// a script driving the worker notices.
fn answered(r: code2des_worker::Reply) -> Result<(), Error> {
    println!("{} {}", r.status, r.body);
    if r.status == 200 {
        Ok(())
    } else {
        Err(format!("the webhook answered HTTP {}", r.status).into())
    }
}

type Error = Box<dyn std::error::Error + Send + Sync>;

/// The `whsk_` key from the flag, the file, or the local stack's default file.
fn signing_key(cli: &Cli) -> Result<Option<ed25519_dalek::SigningKey>, Error> {
    let from_file = |path: &std::path::Path| -> Result<String, Error> {
        std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()).into())
    };
    let default = std::path::Path::new(DEFAULT_LOCAL_DATA_DIR).join(code2des_worker::SIGNING_KEY_FILE);
    let raw = match (&cli.signing_key, &cli.signing_key_file) {
        (Some(k), _) => k.clone(),
        (None, Some(path)) => from_file(path)?,
        (None, None) if default.is_file() => from_file(&default)?,
        (None, None) => return Ok(None),
    };
    let key =
        shared::domain::standard_webhooks::parse_signing_key(&raw).map_err(|e| format!("the signing key: {e}"))?;
    Ok(Some(key))
}

/// The local stack's default `--data-dir`.
const DEFAULT_LOCAL_DATA_DIR: &str = ".code2des-local";

fn validate(
    artifact: std::path::PathBuf,
    images: Option<std::path::PathBuf>,
    manifest: Option<std::path::PathBuf>,
) -> std::process::ExitCode {
    let opts = code2des_worker::validate::Options { artifact, images, manifest };
    match code2des_worker::validate::run(&opts, &shared::domain::artifact::Limits::default()) {
        Err(e) => {
            eprintln!("code2des-worker validate: {e}");
            std::process::ExitCode::from(2)
        }
        Ok(out) if out.problems.is_empty() => {
            let images = match &opts.images {
                Some(_) => format!("{} of {} used images checked", out.images_checked, out.images_used),
                None => format!("{} used images not checked (no --images)", out.images_used),
            };
            println!("ok: {} ({images})", opts.artifact.display());
            std::process::ExitCode::SUCCESS
        }
        Ok(out) => {
            for p in &out.problems {
                println!("{p}");
            }
            eprintln!("{} problem(s): the result route would answer 502 artifact_invalid", out.problems.len());
            std::process::ExitCode::FAILURE
        }
    }
}

/// `preview`: exit status 2 for an input that cannot be drawn, 1 for a drawing that failed.
fn preview(
    result: &std::path::Path,
    out: &std::path::Path,
    images: Option<&std::path::Path>,
    small: bool,
    with_svg: bool,
) -> std::process::ExitCode {
    use code2des_worker::preview::{self, PreviewError};
    let run = || -> Result<Vec<String>, PreviewError> {
        let page = preview::read::read(result, images)?;
        let (text, warnings) = preview::svg(&page);
        let write = |p: &std::path::Path, bytes: &[u8]| {
            std::fs::write(p, bytes).map_err(|e| PreviewError::Input(format!("{}: {e}", p.display())))
        };
        if with_svg {
            write(&out.with_extension("svg"), text.as_bytes())?;
        }
        let tree = preview::tree(&text)?;
        let png = if small { preview::small::small(&tree)? } else { preview::full(&tree)? };
        write(out, &png)?;
        Ok(warnings)
    };
    match run() {
        Ok(warnings) => {
            for w in warnings {
                eprintln!("note: {w}");
            }
            println!("{}", out.display());
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("code2des-worker preview: {e}");
            std::process::ExitCode::from(if matches!(e, PreviewError::Input(_)) { 2 } else { 1 })
        }
    }
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    // In Lambda, JSON lines for CloudWatch, as the functions write them.
    match cli.command {
        Command::Lambda => shared::obs::telemetry::init_lambda(),
        _ => shared::obs::telemetry::init_local(),
    }
    if let Command::Validate { artifact, images, manifest } = cli.command {
        return validate(artifact, images, manifest);
    }
    if let Command::Preview { result, out, images, small, svg } = cli.command {
        return preview(&result, &out, images.as_deref(), small, svg);
    }
    let outcome = run(cli).await;
    // Spans still in the batch go out before the process ends.
    shared::obs::trace::flush();
    match outcome {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("code2des-worker: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run(mut cli: Cli) -> Result<(), Error> {
    let in_lambda = matches!(cli.command, Command::Lambda);
    if std::env::var("S3_ENDPOINT").is_err() && !in_lambda {
        // Default to the local stack's embedded S3.
        std::env::set_var("S3_ENDPOINT", "http://127.0.0.1:9000");
    }
    let key = signing_key(&cli)?;
    let command = match cli.command {
        // Needs no S3 client.
        Command::SignEvent { path, secret } => return sign_event(&path, &secret),
        other => other,
    };
    let settings = shared::config::Settings::from_env()?;
    if let shared::config::SecretSource::Arn(arn) = &settings.webhook_secret {
        use secrecy::ExposeSecret;
        cli.webhook_secret = shared::aws::secrets::secret(arn).await?.expose_secret().to_owned();
    }
    let mut worker =
        code2des_worker::Worker::new(shared::aws::sdk::s3_client(&settings).await, cli.bucket, cli.webhook_secret);
    if let Some(key) = key {
        worker = worker.with_signing_key(key);
    }
    if cli.sample {
        worker = worker.with_sample();
    } else {
        // Chromium (`$CHROMIUM_PATH`, else chromium on the PATH) starts at the first capture.
        let options = code2des_convert::Options {
            page_timeout: Duration::from_secs(cli.page_timeout_secs.max(1)),
            ..Default::default()
        };
        worker = worker.with_conversion(options);
    }
    match command {
        Command::Poll { interval_ms } => {
            worker
                .run(Duration::from_millis(interval_ms), async {
                    let _ = tokio::signal::ctrl_c().await;
                })
                .await
        }
        Command::Complete { manifest_key } => {
            let m = worker.read_manifest(&manifest_key).await?;
            return answered(worker.complete(&m).await?);
        }
        Command::Lambda => {
            let worker = &worker;
            let service = lambda_runtime::service_fn(
                |event: lambda_runtime::LambdaEvent<aws_lambda_events::event::sqs::SqsEvent>| async move {
                    Ok::<_, Error>(code2des_worker::lambda::handle(worker, event.payload).await)
                },
            );
            if !shared::obs::trace::enabled() {
                return lambda_runtime::run(service).await;
            }
            // As the API functions do: the spans are flushed after each batch's response.
            use lambda_runtime::layers::{OpenTelemetryFaasTrigger, OpenTelemetryLayer, TracingLayer};
            return lambda_runtime::Runtime::new(service)
                .layer(TracingLayer::new())
                .layer(
                    OpenTelemetryLayer::new(shared::obs::trace::flush).with_trigger(OpenTelemetryFaasTrigger::PubSub),
                )
                .run()
                .await;
        }
        Command::Fail { manifest_key, message } => {
            let m = worker.read_manifest(&manifest_key).await?;
            return answered(worker.fail(&m, &message).await?);
        }
        Command::SignEvent { .. } | Command::Validate { .. } | Command::Preview { .. } => {}
    }
    Ok(())
}
