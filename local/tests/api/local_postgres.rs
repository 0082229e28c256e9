//! The README's first command with PostgreSQL installed but not running: the real
//! `code2des-local` binary, its DATABASE_URL on a free loopback port where nothing answers,
//! starts a private cluster under its data directory, serves, and stops the cluster with itself.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use code2des_testkit::process::{free_port, wait_for_port, KillOnDrop};

/// Stops the cluster under `data` if the test fails before the binary stopped it: a killed
/// binary drops nothing, and a server left behind would outlive the test.
struct StopCluster(PathBuf);

impl Drop for StopCluster {
    fn drop(&mut self) {
        if self.0.join("postmaster.pid").exists() {
            if let Ok(server) = code2des_pgcluster::Server::installed() {
                let _ = server.stop(&self.0, "immediate");
            }
        }
    }
}

fn answers(port: u16) -> bool {
    std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
}

fn output(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

#[tokio::test]
async fn a_silent_loopback_database_gets_a_private_cluster_that_stops_with_the_stack() {
    let scratch = tempfile::tempdir().unwrap();
    // Run as root, the cluster belongs to the postgres user, who must get through to it.
    std::fs::set_permissions(scratch.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let data_dir = scratch.path().join("data");
    let cluster = data_dir.join(code2des_local::postgres::DIR);
    let _cleanup = StopCluster(cluster.join("data"));
    let (pg_port, port, s3_port) = (free_port(), free_port(), free_port());
    assert!(!answers(pg_port), "the port is free: nothing answers there");
    let log = scratch.path().join("stack.log");
    let out = std::fs::File::create(&log).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_code2des-local"))
        .args(["--addr", &format!("127.0.0.1:{port}"), "--s3-addr", &format!("127.0.0.1:{s3_port}")])
        .args(["--data-dir".as_ref(), data_dir.as_os_str()])
        .env("DATABASE_URL", format!("postgres://postgres@127.0.0.1:{pg_port}/code2des"))
        .env("RUST_LOG", "info")
        .env_remove(code2des_local::postgres::SWITCH)
        .env_remove("LOG_FORMAT")
        .env_remove("S3_ENDPOINT")
        .env_remove("WEBHOOK_SECRET")
        .env_remove("CALLBACK_URL")
        .stdout(out.try_clone().unwrap())
        .stderr(out)
        .stdin(Stdio::null())
        .spawn()
        .expect("the code2des-local binary runs");
    let mut child = KillOnDrop(child);
    // initdb (once), the server's start and the migrations come first.
    wait_for_port(port, Duration::from_secs(120), "code2des-local").await;

    // A list call reaches the database (the membership check): any answer but a server error.
    let r = reqwest::Client::new()
        .get(format!("http://127.0.0.1:{port}/organizations/1/projects/1/code2des"))
        .header("x-code2des-dev-sub", "dev-user")
        .send()
        .await
        .unwrap();
    assert!(r.status().as_u16() < 500, "{} {}\n{}", r.status(), r.text().await.unwrap(), output(&log));
    assert!(cluster.join("data").join("PG_VERSION").is_file(), "the cluster is under --data-dir/postgres");
    assert!(answers(pg_port), "the private PostgreSQL listens on DATABASE_URL's port");
    let said = output(&log);
    assert!(
        said.contains(&cluster.display().to_string()) && said.contains(&pg_port.to_string()),
        "a log line names the cluster's directory and port:\n{said}"
    );

    let pid = child.0.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(status) = child.0.try_wait().unwrap() {
            assert!(status.success(), "exit status {status}\n{}", output(&log));
            break;
        }
        assert!(Instant::now() < deadline, "did not stop after SIGTERM\n{}", output(&log));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!answers(pg_port), "the private PostgreSQL stopped with the stack\n{}", output(&log));
    assert!(!cluster.join("data").join("postmaster.pid").exists(), "a clean shut-down");
}

#[tokio::test]
async fn without_server_binaries_it_names_the_command_that_installs_them() {
    let empty = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_code2des-local"))
        .args(["--addr", &format!("127.0.0.1:{}", free_port()), "--s3-addr", &format!("127.0.0.1:{}", free_port())])
        .args(["--data-dir".as_ref(), empty.path().join("data").as_os_str()])
        .env("DATABASE_URL", format!("postgres://postgres@127.0.0.1:{}/code2des", free_port()))
        // Where the binaries would be: nowhere.
        .env("PG_BIN", empty.path())
        .env_remove(code2des_local::postgres::SWITCH)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(code2des_pgcluster::INSTALL_COMMAND), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(!empty.path().join("data").exists(), "nothing written when nothing can start");
}

/// Issue 37, item 9: README's first command from a checkout in a 0700 home (root's, in most
/// containers), with nothing on the database port. Run as root, the cluster belongs to the
/// `postgres` user, who cannot get through to `--data-dir`: the cluster lives in that user's
/// home instead, the data directory holds a note saying where, the log says it, and the stack
/// serves. (As another user the server runs as that user, who reaches its own directory.)
#[tokio::test]
async fn a_checkout_in_a_closed_home_still_gets_its_private_cluster() {
    let home = tempfile::tempdir().unwrap();
    std::fs::set_permissions(home.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let data_dir = home.path().join("checkout").join(".code2des-local");
    let wanted = data_dir.join(code2des_local::postgres::DIR);
    let server = code2des_pgcluster::Server::installed().expect("PostgreSQL's server is installed");
    let (pg_port, port, s3_port) = (free_port(), free_port(), free_port());
    let log = home.path().join("stack.log");
    let out = std::fs::File::create(&log).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_code2des-local"))
        .args(["--addr", &format!("127.0.0.1:{port}"), "--s3-addr", &format!("127.0.0.1:{s3_port}")])
        .args(["--data-dir".as_ref(), data_dir.as_os_str()])
        .env("DATABASE_URL", format!("postgres://postgres@127.0.0.1:{pg_port}/code2des"))
        .env("RUST_LOG", "info")
        .env_remove(code2des_local::postgres::SWITCH)
        .env_remove("LOG_FORMAT")
        .env_remove("S3_ENDPOINT")
        .env_remove("WEBHOOK_SECRET")
        .env_remove("CALLBACK_URL")
        .stdout(out.try_clone().unwrap())
        .stderr(out)
        .stdin(Stdio::null())
        .spawn()
        .expect("the code2des-local binary runs");
    let mut child = KillOnDrop(child);
    let place = if server.as_postgres() {
        server.reachable_place_for(&std::path::absolute(&wanted).unwrap()).unwrap()
    } else {
        wanted.clone()
    };
    let _cleanup = StopCluster(place.join("data"));
    wait_for_port(port, Duration::from_secs(120), "code2des-local").await;
    let r = reqwest::Client::new()
        .get(format!("http://127.0.0.1:{port}/organizations/1/projects/1/code2des"))
        .header("x-code2des-dev-sub", "dev-user")
        .send()
        .await
        .unwrap();
    assert!(r.status().as_u16() < 500, "{} {}\n{}", r.status(), r.text().await.unwrap(), output(&log));
    assert!(place.join("data").join("PG_VERSION").is_file(), "the cluster is in {}\n{}", place.display(), output(&log));
    if server.as_postgres() {
        let note = output(&wanted.join(code2des_local::postgres::MOVED_NOTE));
        assert!(note.contains(&place.display().to_string()), "the note under --data-dir says where: {note:?}");
        assert!(output(&log).contains(&place.display().to_string()), "the log says where:\n{}", output(&log));
    }
    let pid = child.0.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.0.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "did not stop after SIGTERM\n{}", output(&log));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!answers(pg_port), "the private PostgreSQL stopped with the stack\n{}", output(&log));
    if server.as_postgres() {
        std::fs::remove_dir_all(&place).unwrap();
    }
}
