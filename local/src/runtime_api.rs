//! A loopback stand-in for the Lambda Runtime API (`/2018-06-01/runtime/...`), so the function
//! binaries themselves can be run as Lambda runs them: the tests hand a binary an event from
//! `events/*.json` and read back the response it posts; the cold-start bench times its first
//! poll. Plain threads and blocking sockets: it must not share a runtime with what it drives.
//!
//! `GET …/invocation/next` answers the oldest queued event (with the request id, deadline and
//! function ARN headers); with nothing queued it is held open, as a real long poll, until an
//! event is queued or the process goes away. Everything the binary posts back is reported on a
//! channel.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// What a function binary did, in order.
#[derive(Debug)]
pub enum Report {
    /// It asked for the next invocation: init is over.
    Next { at: Instant },
    /// `POST …/invocation/{id}/response`.
    Response { request_id: String, body: Vec<u8> },
    /// `POST …/invocation/{id}/error`.
    InvocationError { request_id: String, body: Vec<u8> },
    /// `POST …/init/error`.
    InitError { body: Vec<u8> },
}

/// Events waiting for a `/next` poll, and the signal that one was queued.
#[derive(Default)]
struct Queue {
    events: Mutex<VecDeque<(String, String)>>,
    queued: Condvar,
}

pub struct RuntimeApi {
    pub addr: SocketAddr,
    queue: Arc<Queue>,
    reports: mpsc::Receiver<Report>,
}

impl RuntimeApi {
    pub fn start() -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let queue: Arc<Queue> = Arc::default();
        let (tx, reports) = mpsc::channel();
        let q = queue.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (tx, q) = (tx.clone(), q.clone());
                std::thread::spawn(move || serve(stream, tx, q));
            }
        });
        Ok(Self { addr, queue, reports })
    }

    /// The value of `AWS_LAMBDA_RUNTIME_API`.
    pub fn host_port(&self) -> String {
        self.addr.to_string()
    }

    /// Queues `event` (JSON) for the next `/next` poll; returns its request id.
    pub fn queue(&self, event: String) -> String {
        let id = uuid::Uuid::new_v4().to_string();
        self.queue.events.lock().unwrap_or_else(|e| e.into_inner()).push_back((id.clone(), event));
        self.queue.queued.notify_all();
        id
    }

    /// The next report, if one comes within `timeout`.
    pub fn recv_timeout(&self, timeout: Duration) -> Option<Report> {
        self.reports.recv_timeout(timeout).ok()
    }

    /// Forgets reports not read yet (from a process that is gone).
    pub fn drain(&self) {
        while self.reports.try_recv().is_ok() {}
    }
}

fn serve(stream: TcpStream, tx: mpsc::Sender<Report>, queue: Arc<Queue>) {
    let _ = stream.set_nodelay(true);
    let Ok(read_half) = stream.try_clone() else { return };
    let mut reader = BufReader::new(read_half);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let at = Instant::now();
        let Some((content_length, chunked)) = headers(&mut reader) else { return };
        let body = if chunked { read_chunked(&mut reader) } else { read_exact(&mut reader, content_length) };
        let Some(body) = body else { return };
        let path = line.split_whitespace().nth(1).unwrap_or_default().to_owned();
        let mut out = &stream;
        if line.starts_with("GET ") && path.ends_with("/runtime/invocation/next") {
            let _ = tx.send(Report::Next { at });
            // A long poll: held until an event is queued, or the process goes away.
            let Some((id, event)) = next_event(&queue, &stream) else { return };
            // The deployed function timeout, as Lambda would give it: the request's budget
            // (shared::budget) is derived from this deadline.
            let deadline_ms = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_millis()
                + shared::budget::FUNCTION_TIMEOUT.as_millis();
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nlambda-runtime-aws-request-id: {id}\r\n\
                 lambda-runtime-deadline-ms: {deadline_ms}\r\n\
                 lambda-runtime-invoked-function-arn: arn:aws:lambda:us-east-1:000000000000:function:local\r\n\
                 content-length: {}\r\n\r\n",
                event.len()
            );
            if out.write_all(head.as_bytes()).and_then(|_| out.write_all(event.as_bytes())).is_err() {
                return;
            }
            continue;
        }
        let report = if path.ends_with("/runtime/init/error") {
            Some(Report::InitError { body })
        } else if let Some(rest) = path.strip_prefix("/2018-06-01/runtime/invocation/") {
            match rest.split_once('/') {
                Some((id, "response")) => Some(Report::Response { request_id: id.to_owned(), body }),
                Some((id, "error")) => Some(Report::InvocationError { request_id: id.to_owned(), body }),
                _ => None,
            }
        } else {
            None
        };
        let status = if report.is_some() { "202 Accepted" } else { "404 Not Found" };
        if let Some(r) = report {
            let _ = tx.send(r);
        }
        let reply = format!("HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: 16\r\n\r\n");
        if out.write_all(reply.as_bytes()).and_then(|_| out.write_all(b"{\"status\":\"OK\"}\n")).is_err() {
            return;
        }
    }
}

/// The oldest queued event, waiting for one while the peer is still connected.
fn next_event(queue: &Queue, stream: &TcpStream) -> Option<(String, String)> {
    let mut events = queue.events.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        if let Some(e) = events.pop_front() {
            return Some(e);
        }
        events = queue.queued.wait_timeout(events, Duration::from_millis(50)).unwrap_or_else(|e| e.into_inner()).0;
        if peer_closed(stream) {
            return None;
        }
    }
}

/// Whether the other side has closed (a waiting client sends nothing more).
fn peer_closed(stream: &TcpStream) -> bool {
    if stream.set_nonblocking(true).is_err() {
        return true;
    }
    let closed = match stream.peek(&mut [0u8; 1]) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => e.kind() != std::io::ErrorKind::WouldBlock,
    };
    let _ = stream.set_nonblocking(false);
    closed
}

/// Reads header lines up to the blank one: (content length, whether chunked).
fn headers(reader: &mut impl BufRead) -> Option<(usize, bool)> {
    let (mut length, mut chunked) = (0usize, false);
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).ok()? == 0 {
            return None;
        }
        if h == "\r\n" || h == "\n" {
            return Some((length, chunked));
        }
        if let Some((k, v)) = h.split_once(':') {
            if k.eq_ignore_ascii_case("content-length") {
                length = v.trim().parse().ok()?;
            } else if k.eq_ignore_ascii_case("transfer-encoding") && v.to_ascii_lowercase().contains("chunked") {
                chunked = true;
            }
        }
    }
}

fn read_exact(reader: &mut impl Read, n: usize) -> Option<Vec<u8>> {
    let mut body = vec![0; n];
    reader.read_exact(&mut body).ok()?;
    Some(body)
}

fn read_chunked(reader: &mut impl BufRead) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let mut size = String::new();
        reader.read_line(&mut size).ok()?;
        let size = usize::from_str_radix(size.trim().split(';').next()?.trim(), 16).ok()?;
        if size == 0 {
            // Trailers, if any, end with a blank line.
            loop {
                let mut t = String::new();
                if reader.read_line(&mut t).ok()? == 0 || t == "\r\n" || t == "\n" {
                    return Some(body);
                }
            }
        }
        body.extend(read_exact(reader, size)?);
        let mut crlf = [0u8; 2];
        reader.read_exact(&mut crlf).ok()?;
    }
}
