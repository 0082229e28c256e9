//! Issue 37, item 3: S3 bodies are read as a stream with a cap, and a storage that lies about a
//! body's size is refused. The stand-in is a raw HTTP/1.1 server on loopback that answers every
//! request with one canned response, so each lie S3 itself never tells can be told on purpose:
//! no `Content-Length`, a body shorter than announced, a body far larger than the limit.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use aws_credential_types::Credentials;
use shared::aws::bucket::{ArtifactBucket, BucketError};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// What the stand-in answers: its head, then `body` bytes repeated `repeat` times, then closes.
#[derive(Clone)]
struct Canned {
    head: String,
    body: Vec<u8>,
    repeat: usize,
}

/// A server answering every connection with `canned`; counts the body bytes it managed to send
/// (a refused body is dropped unread, so the count stays far below what was offered).
async fn lying_s3(canned: Canned) -> (String, Arc<AtomicU64>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let sent = Arc::new(AtomicU64::new(0));
    let counter = sent.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else { return };
            let (canned, counter) = (canned.clone(), counter.clone());
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                // The request head: the SDK sends no body with a GET.
                let mut got = Vec::new();
                while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                    match sock.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                    }
                }
                if sock.write_all(canned.head.as_bytes()).await.is_err() {
                    return;
                }
                for _ in 0..canned.repeat {
                    if sock.write_all(&canned.body).await.is_err() {
                        return;
                    }
                    counter.fetch_add(canned.body.len() as u64, Ordering::Relaxed);
                }
                let _ = sock.shutdown().await;
            });
        }
    });
    (format!("http://{addr}"), sent)
}

fn bucket(endpoint: &str) -> ArtifactBucket {
    ArtifactBucket::new(client(endpoint), "b")
}

fn client(endpoint: &str) -> aws_sdk_s3::Client {
    let conf = aws_sdk_s3::config::Builder::new()
        .behavior_version(aws_sdk_s3::config::BehaviorVersion::latest())
        .region(aws_sdk_s3::config::Region::new("us-east-1"))
        .credentials_provider(Credentials::new("k", "s", None, None, "test"))
        .endpoint_url(endpoint)
        .force_path_style(true)
        // One attempt: a retried GET would only repeat the lie.
        .retry_config(aws_sdk_s3::config::retry::RetryConfig::disabled())
        .build();
    aws_sdk_s3::Client::from_conf(conf)
}

const LIMIT: u64 = 64 * 1024;

#[tokio::test]
async fn an_answer_without_content_length_is_refused_before_its_body_is_read() {
    // Chunked: 64 MiB offered in 1 MiB chunks, a thousand times the limit.
    let chunk = vec![b'x'; 1 << 20];
    let framed = [format!("{:x}\r\n", chunk.len()).into_bytes(), chunk, b"\r\n".to_vec()].concat();
    let head = "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\ncontent-type: application/json\r\n\r\n";
    let (ep, sent) = lying_s3(Canned { head: head.into(), body: framed, repeat: 64 }).await;
    let opened = bucket(&ep).open("k", LIMIT).await;
    assert!(matches!(opened, Err(BucketError::Unavailable)), "refused at open, as a storage fault");
    // What the server got out before the client hung up is socket buffers, not the body.
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert!(sent.load(Ordering::Relaxed) < 16 << 20, "the body was not drained: {}", sent.load(Ordering::Relaxed));
}

#[tokio::test]
async fn a_body_shorter_than_announced_is_a_fault_not_a_result() {
    let head = "HTTP/1.1 200 OK\r\ncontent-length: 1000\r\nconnection: close\r\n\r\n";
    let (ep, _) = lying_s3(Canned { head: head.into(), body: vec![b'{'; 10], repeat: 1 }).await;
    let opened = bucket(&ep).open("k", LIMIT).await.expect("the head is fine");
    assert_eq!(opened.size, 1000);
    assert!(matches!(opened.read().await, Err(BucketError::Unavailable)));
}

#[tokio::test]
async fn a_size_over_the_limit_is_refused_by_its_header() {
    let head = format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n", 64 << 20);
    let (ep, sent) = lying_s3(Canned { head, body: vec![b'x'; 1 << 20], repeat: 64 }).await;
    assert_eq!(bucket(&ep).open("k", LIMIT).await.err(), Some(BucketError::TooLarge(64 << 20)));
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert!(sent.load(Ordering::Relaxed) < 16 << 20);
}

#[tokio::test]
async fn an_honest_body_is_read_whole() {
    let body = br#"{"ok":true}"#.to_vec();
    let head = format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n", body.len());
    let (ep, _) = lying_s3(Canned { head, body: body.clone(), repeat: 1 }).await;
    let read = bucket(&ep).get_bounded("k", LIMIT).await.expect("read");
    assert_eq!(read, body);
}

/// A bucket whose client a thread of the blocking pool builds (as each function's is, since
/// the client left the init's path) reads as one built before, on the current-thread runtime
/// the functions run on; two first reads at once both wait for the one build (the second
/// finds the build taken by the first, and must not answer that storage is unavailable).
#[tokio::test(flavor = "current_thread")]
async fn a_bucket_whose_client_is_built_beside_the_runtime_reads_as_any() {
    let body = br#"{"ok":true}"#.to_vec();
    let head = format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n", body.len());
    let (ep, _) = lying_s3(Canned { head, body: body.clone(), repeat: 1 }).await;
    let endpoint = ep.clone();
    let building = ArtifactBucket::building(
        async move {
            // The SDK's own (async) configuration step, as `aws::sdk::s3_client` awaits it.
            tokio::task::yield_now().await;
            client(&endpoint)
        },
        "b",
    );
    let copy = building.clone();
    let (a, b) = tokio::join!(building.get_bounded("k", LIMIT), copy.get_bounded("k", LIMIT));
    assert_eq!(a.expect("read"), body);
    assert_eq!(b.expect("read"), body);
}
