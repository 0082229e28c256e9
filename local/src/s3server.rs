//! The embedded S3-compatible endpoint: s3s over s3s-fs, path-style, signature-checked with
//! the local keys, objects as files under the data directory.

use std::net::SocketAddr;
use std::path::Path;

use s3s::auth::SimpleAuth;
use s3s::service::S3ServiceBuilder;
use tokio::net::TcpListener;
use tokio::sync::watch;

pub const ACCESS_KEY: &str = "local";
pub const SECRET_KEY: &str = "local-secret";
pub const REGION: &str = "us-east-1";

/// A running S3 endpoint; dropping the handle does not stop it, [`S3Server::stop`] does.
pub struct S3Server {
    pub addr: SocketAddr,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl S3Server {
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub async fn stop(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }
}

/// Serves `root` (created if missing, with `bucket` inside) on `listener`.
pub fn serve(listener: TcpListener, root: &Path, bucket: &str) -> std::io::Result<S3Server> {
    std::fs::create_dir_all(root.join(bucket))?;
    let fs = s3s_fs::FileSystem::new(root).map_err(|e| std::io::Error::other(format!("{e:?}")))?;
    let service = {
        let mut b = S3ServiceBuilder::new(fs);
        b.set_auth(SimpleAuth::from_single(ACCESS_KEY, SECRET_KEY));
        b.build()
    };
    let addr = listener.local_addr()?;
    let (stop, stopped) = watch::channel(false);
    let task = tokio::spawn(crate::serve::until_stopped(
        listener,
        move || service.clone(),
        stopped,
        std::time::Duration::from_secs(5),
    ));
    Ok(S3Server { addr, stop, task })
}

/// An S3 client for an S3-compatible endpoint with explicit keys (path-style, short timeouts).
pub fn client(endpoint: &str, access_key: &str, secret_key: &str) -> aws_sdk_s3::Client {
    use aws_sdk_s3::config::{BehaviorVersion, Credentials, Region};
    let timeouts = aws_sdk_s3::config::timeout::TimeoutConfig::builder()
        .connect_timeout(std::time::Duration::from_secs(2))
        .operation_attempt_timeout(std::time::Duration::from_secs(5))
        .operation_timeout(std::time::Duration::from_secs(12))
        .build();
    let conf = aws_sdk_s3::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new(REGION))
        .credentials_provider(Credentials::new(access_key, secret_key, None, None, "code2des-local"))
        .endpoint_url(endpoint)
        .force_path_style(true)
        .timeout_config(timeouts)
        .build();
    aws_sdk_s3::Client::from_conf(conf)
}

/// Creates `bucket` unless it exists (for an external endpoint that starts empty).
pub async fn ensure_bucket(s3: &aws_sdk_s3::Client, bucket: &str) -> Result<(), String> {
    if s3.head_bucket().bucket(bucket).send().await.is_ok() {
        return Ok(());
    }
    match s3.create_bucket().bucket(bucket).send().await {
        Ok(_) => Ok(()),
        Err(e) => {
            let code = e.as_service_error().and_then(|s| s.meta().code()).unwrap_or_default();
            if code == "BucketAlreadyOwnedByYou" || code == "BucketAlreadyExists" {
                Ok(())
            } else {
                Err(shared::error::chain(&e))
            }
        }
    }
}
