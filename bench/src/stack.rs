//! The local stack as a benchmark drives it: the release `code2des-local` started on free
//! loopback ports against a given database, and the leanest HTTP/1.1 client that can talk to it
//! (the reads and the year-of-data benchmarks send their requests through these).

use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use code2des_testkit::process::KillOnDrop;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::load::Op;

/// The release `code2des-local`, on free loopback ports, against the bench database.
pub struct LocalStack {
    child: KillOnDrop,
    pub addr: SocketAddr,
    _dir: tempfile::TempDir,
}

/// `CODE2DES_LOCAL_BIN`, else the `code2des-local` beside this binary (the same build: what
/// scripts/bench built, or the directory CI hands over in `CODE2DES_BIN_DIR`).
fn local_bin() -> Result<std::path::PathBuf, String> {
    let path = match std::env::var_os("CODE2DES_LOCAL_BIN") {
        Some(p) => std::path::PathBuf::from(p),
        None => std::env::current_exe().map_err(|e| e.to_string())?.with_file_name("code2des-local"),
    };
    if path.exists() {
        Ok(path)
    } else {
        Err(format!("{} not found: build it with the bench (scripts/bench builds every binary)", path.display()))
    }
}

impl LocalStack {
    pub async fn start(database_url: &str) -> Result<Self, String> {
        let bin = local_bin()?;
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let addr: SocketAddr = format!("127.0.0.1:{}", crate::pg::free_port()).parse().unwrap();
        let s3_addr = format!("127.0.0.1:{}", crate::pg::free_port());
        // A clean environment: the local defaults plus this database; logs at warn (a log line
        // per request would be the server's largest cost, and a Lambda's goes to CloudWatch).
        let log = std::fs::File::create(dir.path().join("log")).map_err(|e| e.to_string())?;
        let child = Command::new(&bin)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("DATABASE_URL", database_url)
            .env("RUST_LOG", "warn")
            .args(["--addr", &addr.to_string(), "--s3-addr", &s3_addr, "--data-dir"])
            .arg(dir.path())
            .arg("serve")
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(|e| e.to_string())?)
            .stderr(log)
            .spawn()
            .map_err(|e| format!("{}: {e}", bin.display()))?;
        let mut stack = Self { child: KillOnDrop(child), addr, _dir: dir };
        let t0 = Instant::now();
        loop {
            if let Ok(Some(status)) = stack.child.0.try_wait() {
                let log = std::fs::read_to_string(stack._dir.path().join("log")).unwrap_or_default();
                return Err(format!("code2des-local exited during start-up ({status}): {log}"));
            }
            if let Ok(mut c) = HttpConn::connect(addr).await {
                let status = c.call(&get_request("/bench-unrouted", None)).await.map_err(|e| e.to_string())?;
                if status == 404 {
                    return Ok(stack);
                }
                return Err(format!("code2des-local answered {status} to an unrouted request"));
            }
            if t0.elapsed() > Duration::from_secs(60) {
                return Err("code2des-local did not listen within 60 s".into());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// One keep-alive HTTP/1.1 connection: write a request, read one response (status line,
/// headers up to the blank line, `content-length` bytes of body). Nothing else: the client
/// should cost as little as possible next to the server it measures.
pub struct HttpConn {
    stream: TcpStream,
    buf: Vec<u8>,
}

pub fn get_request(path: &str, sub: Option<&str>) -> Vec<u8> {
    let who = sub.map(|s| format!("x-code2des-dev-sub: {s}\r\n")).unwrap_or_default();
    format!("GET {path} HTTP/1.1\r\nhost: 127.0.0.1\r\naccept: application/json\r\n{who}\r\n").into_bytes()
}

impl HttpConn {
    pub async fn connect(addr: SocketAddr) -> std::io::Result<Self> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        Ok(Self { stream, buf: Vec::with_capacity(64 * 1024) })
    }

    async fn fill(&mut self) -> std::io::Result<()> {
        if self.stream.read_buf(&mut self.buf).await? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        Ok(())
    }

    /// Sends `request`, reads the whole response; its status.
    pub async fn call(&mut self, request: &[u8]) -> std::io::Result<u16> {
        self.stream.write_all(request).await?;
        self.buf.clear();
        let head_end = loop {
            if let Some(i) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i;
            }
            self.fill().await?;
        };
        let head = std::str::from_utf8(&self.buf[..head_end]).map_err(|_| std::io::ErrorKind::InvalidData)?;
        let status = head.get(9..12).and_then(|s| s.parse().ok()).ok_or(std::io::ErrorKind::InvalidData)?;
        let len: usize = head
            .lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case("content-length").then(|| v.trim().parse().ok())?
            })
            .unwrap_or(0);
        while self.buf.len() < head_end + 4 + len {
            self.fill().await?;
        }
        Ok(status)
    }
}

/// `conc` connections to the stack, each used by one worker, all sending `request`.
pub async fn http_op(addr: SocketAddr, conc: usize, request: Vec<u8>, expect: u16) -> Op {
    let mut conns = Vec::new();
    for _ in 0..conc {
        conns.push(tokio::sync::Mutex::new(HttpConn::connect(addr).await.expect("connect to code2des-local")));
    }
    let (conns, request) = (Arc::new(conns), Arc::new(request));
    Arc::new(move |w, _| {
        let (conns, request) = (conns.clone(), request.clone());
        Box::pin(async move { matches!(conns[w].lock().await.call(&request).await, Ok(s) if s == expect) })
    })
}
