//! An emulated Secrets Manager endpoint on loopback (the one AWS component that cannot run
//! here), for the tests that read secrets through the real SDK.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// What the emulator answers one GetSecretValue (its JSON request body) with: the secret
/// string, or `None` for ResourceNotFoundException (e.g. no version in the asked stage).
pub type Answer = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// Starts the emulator; returns its endpoint URL.
#[allow(dead_code)] // each test binary that includes this module uses one of the two starts
pub async fn secrets_manager(answer: Answer) -> String {
    secrets_manager_slow(answer, Arc::new(AtomicU64::new(0))).await
}

/// [`secrets_manager`], answering each request `delay_ms` late (switchable while it runs: a
/// slow Secrets Manager, then a recovered one).
pub async fn secrets_manager_slow(answer: Answer, delay_ms: Arc<AtomicU64>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else { return };
            let answer = answer.clone();
            let delay_ms = delay_ms.clone();
            tokio::spawn(async move {
                loop {
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 4096];
                    // Read one request: headers, then Content-Length bytes of JSON.
                    let body = loop {
                        let Ok(n) = sock.read(&mut chunk).await else { return };
                        if n == 0 {
                            return;
                        }
                        buf.extend_from_slice(&chunk[..n]);
                        let text = String::from_utf8_lossy(&buf).to_string();
                        if let Some(end) = text.find("\r\n\r\n") {
                            let len = text[..end]
                                .lines()
                                .find_map(|l| {
                                    l.to_ascii_lowercase()
                                        .strip_prefix("content-length:")
                                        .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                                })
                                .unwrap_or(0);
                            if buf.len() >= end + 4 + len {
                                break String::from_utf8_lossy(&buf[end + 4..end + 4 + len]).to_string();
                            }
                        }
                    };
                    let answered = answer(&body);
                    // Late: the request was received (and counted) at once, answered after.
                    tokio::time::sleep(Duration::from_millis(delay_ms.load(Ordering::SeqCst))).await;
                    let (status, out) = match answered {
                        Some(secret) => (
                            "200 OK",
                            serde_json::json!({"ARN": "arn", "Name": "n", "SecretString": secret, "VersionId": "v1"}),
                        ),
                        None => (
                            "400 Bad Request",
                            serde_json::json!({"__type": "ResourceNotFoundException",
                                "message": "Secrets Manager can't find the specified secret value"}),
                        ),
                    };
                    let out = out.to_string();
                    let resp = format!(
                        "HTTP/1.1 {status}\r\ncontent-type: application/x-amz-json-1.1\r\ncontent-length: {}\r\n\r\n{out}",
                        out.len()
                    );
                    if sock.write_all(resp.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    format!("http://{addr}")
}
