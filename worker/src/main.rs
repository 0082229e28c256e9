//! `code2des-worker`: the reference worker as a command.
//!
//! `code2des-worker poll` completes every new job; `code2des-worker complete <manifest key>` or
//! `code2des-worker fail <manifest key> <message>` handles one. Configuration is the same
//! environment as the services: `ARTIFACT_BUCKET`, `WEBHOOK_SECRET`, `S3_ENDPOINT`.

use std::time::Duration;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "code2des-worker", about = "Reference worker for the Code2Des worker protocol")]
struct Cli {
    #[arg(long, env = "ARTIFACT_BUCKET", default_value = "code2des-artifacts")]
    bucket: String,
    #[arg(long, env = "WEBHOOK_SECRET", default_value = "local-webhook-secret", hide_env_values = true)]
    webhook_secret: String,
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
    /// Fail the job of one manifest key with a message.
    Fail { manifest_key: String, message: String },
    /// Re-sign an API Gateway webhook event file (e.g. events/webhook.json) for now, so
    /// `sam local invoke -e` passes the 300 s freshness check.
    SignEvent {
        path: std::path::PathBuf,
        #[arg(long, default_value = "test-webhook-secret")]
        secret: String,
    },
}

fn sign_event(path: &std::path::Path, secret: &str) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
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
fn answered(r: code2des_worker::Reply) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    println!("{} {}", r.status, r.body);
    if r.status == 200 {
        Ok(())
    } else {
        Err(format!("the webhook answered HTTP {}", r.status).into())
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    shared::obs::telemetry::init_local();
    let cli = Cli::parse();
    if std::env::var("S3_ENDPOINT").is_err() {
        // Default to the local stack's embedded S3.
        std::env::set_var("S3_ENDPOINT", "http://127.0.0.1:9000");
    }
    let command = match cli.command {
        // Needs no S3 client.
        Command::SignEvent { path, secret } => return sign_event(&path, &secret),
        other => other,
    };
    let settings = shared::config::Settings::from_env()?;
    let worker =
        code2des_worker::Worker::new(shared::aws::sdk::s3_client(&settings).await, cli.bucket, cli.webhook_secret);
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
        Command::Fail { manifest_key, message } => {
            let m = worker.read_manifest(&manifest_key).await?;
            return answered(worker.fail(&m, &message).await?);
        }
        Command::SignEvent { .. } => {}
    }
    Ok(())
}
