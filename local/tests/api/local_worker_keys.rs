//! The local stack's worker key pair (SPEC section 9): without `WEBHOOK_PUBLIC_KEY`, the first
//! start generates it under `--data-dir` (the `whsk_` key in a file of mode 0600), later starts
//! reuse it, and the stack prints where the key is and the `whpk_` it verifies `v1a` with, never
//! the secret key. A worker holding only that key (its secret is wrong) gets its reports in.

use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use shared::domain::standard_webhooks as sw;

use crate::helpers::{admin_url, drop_database, BUCKET};

struct Stack {
    child: Child,
    lines: std::sync::mpsc::Receiver<String>,
}

impl Drop for Stack {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(data_dir: &std::path::Path, db: &str, env: &[(&str, &str)]) -> Stack {
    // Port 0: the stack binds free ports itself and prints them (no race for a port between
    // picking it here and binding it there).
    let mut child = Command::new(env!("CARGO_BIN_EXE_code2des-local"))
        .args(["--addr", "127.0.0.1:0", "--s3-addr", "127.0.0.1:0"])
        .args(["--data-dir".as_ref(), data_dir.as_os_str()])
        .env("DATABASE_URL", format!("{}/{db}", admin_url().rsplit_once('/').unwrap().0))
        .env("RUST_LOG", "warn")
        .env_remove("S3_ENDPOINT")
        .env_remove("WEBHOOK_SECRET")
        .env_remove("WEBHOOK_PUBLIC_KEY")
        .env_remove("WEBHOOK_SIGNING_KEY")
        .env_remove("CALLBACK_URL")
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the code2des-local binary runs");
    let out = child.stdout.take().unwrap();
    let (tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    Stack { child, lines }
}

/// The port of `http://127.0.0.1:PORT` after `label` in the ready line.
fn port_after(line: &str, label: &str) -> u16 {
    let rest = &line[line.find(label).unwrap_or_else(|| panic!("{label} in {line}")) + label.len()..];
    let rest = rest.trim_start().strip_prefix("http://127.0.0.1:").unwrap_or_else(|| panic!("{line}"));
    rest.chars().take_while(char::is_ascii_digit).collect::<String>().parse().unwrap()
}

impl Stack {
    /// The lines printed up to the "ready" one (and the key line after it), and the API's and
    /// S3's ports it names.
    fn banner(&self) -> (Vec<String>, u16, u16) {
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut seen = Vec::new();
        while Instant::now() < deadline {
            match self.lines.recv_timeout(Duration::from_millis(200)) {
                Ok(line) => {
                    let done = line.contains("Ctrl-C stops");
                    seen.push(line);
                    if done {
                        // The key line, if any, follows the ready line at once.
                        let ready = seen.last().unwrap().clone();
                        if let Ok(l) = self.lines.recv_timeout(Duration::from_millis(500)) {
                            seen.push(l);
                        }
                        return (seen, port_after(&ready, "API on"), port_after(&ready, "S3 on"));
                    }
                }
                Err(_) => continue,
            }
        }
        panic!("code2des-local did not start: {seen:?}");
    }
}

async fn job(port: u16, db: &str) -> (String, String) {
    let url = format!("{}/{db}", admin_url().rsplit_once('/').unwrap().0);
    let (c, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(conn);
    let org: i32 = c.query_one("INSERT INTO organization (name) VALUES ('o') RETURNING id", &[]).await.unwrap().get(0);
    let proj: i32 = c
        .query_one("INSERT INTO project (organization_id, name) VALUES ($1, 'p') RETURNING id", &[&org])
        .await
        .unwrap()
        .get(0);
    c.execute("INSERT INTO organization_member (organization_id, subject) VALUES ($1, 'dev')", &[&org]).await.unwrap();
    c.execute(
        "INSERT INTO page_import (id, organization_id, project_id, status) VALUES ('pi-1', $1, $2, '1')",
        &[&org, &proj],
    )
    .await
    .unwrap();
    let base = format!("http://127.0.0.1:{port}/organizations/{org}/projects/{proj}/code2des");
    let resp = reqwest::Client::new()
        .post(&base)
        .header("x-code2des-dev-sub", "dev")
        .json(&json!({"pageImportId": "pi-1", "figmaFileKey": "F", "screenId": "s"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 202);
    let id = resp.json::<serde_json::Value>().await.unwrap()["code2desId"].as_str().unwrap().to_owned();
    (format!("{base}/{id}"), id)
}

#[tokio::test]
async fn the_stack_generates_the_workers_key_pair_once_and_verifies_v1a_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("c2d_keys_{}", uuid::Uuid::new_v4().simple());
    let stack = start(dir.path(), &db, &[]);
    let (banner, port, s3_port) = stack.banner();
    let banner = banner.join("\n");
    let key_path = dir.path().join(code2des_worker::SIGNING_KEY_FILE);
    let text = std::fs::read_to_string(&key_path).expect("the signing key file");
    let key = sw::parse_signing_key(&text).expect("a whsk_ key");
    let public = sw::encode_public_key(&key.verifying_key());
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&key_path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "only its owner reads the secret key");
    }
    assert!(banner.contains("generated in") && banner.contains(&key_path.display().to_string()), "{banner}");
    assert!(banner.contains(&format!("WEBHOOK_PUBLIC_KEY={public}")), "{banner}");
    assert!(!banner.contains(text.trim()), "the secret key is never printed");

    // A worker that has only this key (its secret is not the stack's) gets its reports in.
    let (url, id) = job(port, &db).await;
    let s3 = code2des_local::s3server::client(
        &format!("http://127.0.0.1:{s3_port}"),
        code2des_local::s3server::ACCESS_KEY,
        code2des_local::s3server::SECRET_KEY,
    );
    let worker = code2des_worker::Worker::new(s3.clone(), BUCKET, "not-the-stacks-secret")
        .with_sample()
        .with_signing_key(key.clone());
    let m = worker.read_manifest(&format!("code2des/{id}/1/manifest.json")).await.unwrap();
    assert_eq!(worker.complete(&m).await.unwrap().status, 200);
    let j: serde_json::Value = reqwest::Client::new()
        .get(&url)
        .header("x-code2des-dev-sub", "dev")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!((j["status"].as_str(), j["progress"]["percent"].as_i64()), (Some("completed"), Some(100)));
    let stranger =
        code2des_worker::Worker::new(s3, BUCKET, "not-the-stacks-secret").with_signing_key(sw::generate_signing_key());
    let body = json!({"code2des_id": id, "attempt": 1, "nonce": m.nonce, "status": "failed"});
    assert_eq!(stranger.send_webhook(&m.callback_url, &body).await.unwrap().status, 401);
    drop(stack);

    // The next start reuses the pair.
    let again = start(dir.path(), &db, &[]);
    let banner = again.banner().0.join("\n");
    assert!(!banner.contains("generated in") && banner.contains(&public), "{banner}");
    assert_eq!(std::fs::read_to_string(&key_path).unwrap(), text);
    drop(again);
    drop_database(&db);
}

#[tokio::test]
async fn with_webhook_public_key_given_nothing_is_generated() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("c2d_keys_{}", uuid::Uuid::new_v4().simple());
    let key = sw::generate_signing_key();
    let public = sw::encode_public_key(&key.verifying_key());
    let stack = start(dir.path(), &db, &[("WEBHOOK_PUBLIC_KEY", public.as_str())]);
    let (banner, port, s3_port) = stack.banner();
    let banner = banner.join("\n");
    assert!(!banner.contains("signing key"), "{banner}");
    assert!(!dir.path().join(code2des_worker::SIGNING_KEY_FILE).exists());
    let (_, id) = job(port, &db).await;
    let s3 = code2des_local::s3server::client(
        &format!("http://127.0.0.1:{s3_port}"),
        code2des_local::s3server::ACCESS_KEY,
        code2des_local::s3server::SECRET_KEY,
    );
    let worker = code2des_worker::Worker::new(s3, BUCKET, "x").with_signing_key(key);
    let m = worker.read_manifest(&format!("code2des/{id}/1/manifest.json")).await.unwrap();
    assert_eq!(worker.progress(&m, 5, "reading").await.unwrap().status, 200);
    drop(stack);
    drop_database(&db);
}
