//! A minimal Chrome DevTools protocol client: JSON commands and events over the browser's one
//! WebSocket, with flattened target sessions (`Target.attachToTarget {flatten: true}`). Only
//! what the renderer needs: send a command and await its answer; receive a session's events.
//!
//! Everything it holds for a command or a session goes when the caller stops waiting for it:
//! a command's waiter when its future is dropped (a page past its time limit), a session's
//! event channel when its [`Events`] is dropped or Chromium detaches it. Every message read has
//! a size limit and every command a time limit, so a page can neither exhaust this process's
//! memory through the connection nor hang it.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::{SinkExt, Stream, StreamExt};
use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::error::CapacityError;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

/// A protocol event: its method and params.
pub type Event = (String, Value);

/// Why a command got no result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CdpError {
    /// The connection is gone: the browser exited or was killed.
    #[error("{0}")]
    Closed(String),
    /// Chromium answered with an error.
    #[error("{0}")]
    Command(String),
    #[error("Chromium did not answer {method} within {} s", .limit.as_secs_f64())]
    Timeout { method: String, limit: Duration },
    /// A message over the size limit: the connection cannot go on after it (the rest of the
    /// message is not read), so it is closed and every command waiting fails with this.
    #[error("a DevTools message of {:.1} MB is over the limit of {} MiB", *.size as f64 / 1e6, .max >> 20)]
    TooLarge { size: usize, max: usize },
    /// The page's renderer process died (`Inspector.targetCrashed`) while the command waited.
    #[error("the page's renderer process crashed")]
    Crashed,
}

struct Waiter {
    session: Option<String>,
    tx: oneshot::Sender<Result<Value, CdpError>>,
}

type Pending = Arc<Mutex<HashMap<u64, Waiter>>>;
type Sessions = Arc<Mutex<HashMap<String, mpsc::UnboundedSender<Event>>>>;

/// The tasks spawned for one renderer, counted while they live: a task that outlives its page
/// is a leak the tests can see ([`crate::render::Health::tasks`]).
#[derive(Clone, Default)]
pub struct Tasks(Arc<AtomicUsize>);

struct TaskGuard(Arc<AtomicUsize>);

impl Drop for TaskGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Tasks {
    /// Spawns `f`, counted until it ends or is aborted.
    pub fn spawn<F: Future<Output = ()> + Send + 'static>(&self, f: F) -> JoinHandle<()> {
        self.0.fetch_add(1, Ordering::Relaxed);
        let guard = TaskGuard(self.0.clone());
        tokio::spawn(async move {
            let _guard = guard;
            f.await;
        })
    }

    pub fn live(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }
}

#[derive(Clone)]
pub struct Cdp {
    out: mpsc::UnboundedSender<String>,
    next: Arc<AtomicU64>,
    pending: Pending,
    sessions: Sessions,
    /// Why the connection ended, once it has.
    closed: Arc<Mutex<Option<CdpError>>>,
    command_limit: Duration,
    largest: Arc<AtomicUsize>,
}

impl Cdp {
    /// Connects to the browser endpoint (`ws://127.0.0.1:PORT/devtools/browser/…`). A message
    /// read over `max_message` bytes ends the connection (see [`CdpError::TooLarge`]); a command
    /// not answered within `command_limit` fails.
    pub async fn connect(
        url: &str,
        max_message: usize,
        command_limit: Duration,
        tasks: &Tasks,
    ) -> Result<Self, String> {
        // Chromium sends each message as one frame: the frame limit is what stops a huge one
        // before it is buffered (the message limit is checked only as frames are joined).
        let mut config = WebSocketConfig::default();
        config.max_message_size = Some(max_message);
        config.max_frame_size = Some(max_message);
        let (ws, _) = tokio_tungstenite::connect_async_with_config(url, Some(config), false)
            .await
            .map_err(|e| format!("DevTools connection: {e}"))?;
        let (mut sink, stream) = ws.split();
        let (out, mut rx) = mpsc::unbounded_channel::<String>();
        let (stop, mut stopped) = oneshot::channel::<()>();
        tasks.spawn(async move {
            loop {
                tokio::select! {
                    text = rx.recv() => match text {
                        Some(text) => if sink.send(Message::text(text)).await.is_err() { break },
                        None => break,
                    },
                    // The reader ended: the socket is closed from this side too.
                    _ = &mut stopped => break,
                }
            }
            let _ = sink.close().await;
        });
        let pending: Pending = Arc::default();
        let sessions: Sessions = Arc::default();
        let closed: Arc<Mutex<Option<CdpError>>> = Arc::default();
        let largest = Arc::new(AtomicUsize::new(0));
        let (p, s, c, l) = (pending.clone(), sessions.clone(), closed.clone(), largest.clone());
        tasks.spawn(async move {
            let reason = read_until_closed(stream, &p, &s, &l).await;
            fail_waiters(&c, &p, &s, &reason);
            let _ = stop.send(());
        });
        Ok(Self { out, next: Arc::new(AtomicU64::new(1)), pending, sessions, closed, command_limit, largest })
    }

    /// Sends a command (to a session, or to the browser with `None`) and awaits its result,
    /// within the command time limit.
    pub async fn call(&self, session: Option<&str>, method: &str, params: Value) -> Result<Value, CdpError> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let mut msg = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            msg["sessionId"] = json!(s);
        }
        let (tx, rx) = oneshot::channel();
        self.pending.lock().expect("pending lock").insert(id, Waiter { session: session.map(str::to_owned), tx });
        // Whatever ends the wait (answer, time limit, the caller dropping this future), the
        // waiter goes: an abandoned command leaves nothing in the map.
        let _forget = Forget { id, pending: &self.pending };
        if let Some(e) = self.closed() {
            return Err(e);
        }
        if self.out.send(msg.to_string()).is_err() {
            return Err(self.closed().unwrap_or_else(|| CdpError::Closed("the browser connection is closed".into())));
        }
        match tokio::time::timeout(self.command_limit, rx).await {
            Ok(Ok(r)) => r.map_err(|e| match e {
                CdpError::Command(e) => CdpError::Command(format!("{method}: {e}")),
                e => e,
            }),
            Ok(Err(_)) => {
                Err(self.closed().unwrap_or_else(|| CdpError::Closed("the browser connection is closed".into())))
            }
            Err(_) => Err(CdpError::Timeout { method: method.to_owned(), limit: self.command_limit }),
        }
    }

    /// Sends a command without waiting for its answer (an event handler's reply): its answer,
    /// when it comes, finds no waiter and is dropped.
    pub fn send(&self, session: &str, method: &str, params: Value) {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let msg = json!({"id": id, "method": method, "params": params, "sessionId": session});
        let _ = self.out.send(msg.to_string());
    }

    /// The events of one session, from now on, until the [`Events`] is dropped or Chromium
    /// detaches the session.
    pub fn events(&self, session: &str) -> Events {
        let (tx, rx) = mpsc::unbounded_channel();
        self.sessions.lock().expect("sessions lock").insert(session.to_owned(), tx);
        Events { rx, session: session.to_owned(), sessions: self.sessions.clone() }
    }

    /// Why the connection ended, if it has.
    pub fn closed(&self) -> Option<CdpError> {
        self.closed.lock().expect("closed lock").clone()
    }

    /// Sessions with an event channel.
    pub fn sessions(&self) -> usize {
        self.sessions.lock().expect("sessions lock").len()
    }

    /// Commands awaiting their answer.
    pub fn pending(&self) -> usize {
        self.pending.lock().expect("pending lock").len()
    }

    /// The largest message read so far, in bytes.
    pub fn largest_message(&self) -> usize {
        self.largest.load(Ordering::Relaxed)
    }
}

/// Reads the browser's messages and dispatches each, noting the largest, until the connection
/// ends; answers why it ended.
async fn read_until_closed(
    mut stream: impl Stream<Item = Result<Message, WsError>> + Unpin,
    pending: &Pending,
    sessions: &Sessions,
    largest: &AtomicUsize,
) -> CdpError {
    loop {
        let text = match stream.next().await {
            Some(Ok(Message::Text(text))) => text,
            Some(Ok(_)) => continue,
            Some(Err(WsError::Capacity(CapacityError::MessageTooLong { size, max_size }))) => {
                break CdpError::TooLarge { size, max: max_size };
            }
            Some(Err(e)) => break CdpError::Closed(format!("the DevTools connection failed: {e}")),
            None => break CdpError::Closed("the browser connection is closed".into()),
        };
        largest.fetch_max(text.len(), Ordering::Relaxed);
        let Ok(v) = serde_json::from_str::<Value>(text.as_str()) else { continue };
        dispatch(pending, sessions, v);
    }
}

/// The connection ended for `reason`: it is kept in `closed`, every command waiting fails with
/// it, and no session gets events any more.
fn fail_waiters(closed: &Mutex<Option<CdpError>>, pending: &Pending, sessions: &Sessions, reason: &CdpError) {
    // Set before the waiters are failed: a command that registers after the drain sees
    // it (`call` checks it after registering).
    *closed.lock().expect("closed lock") = Some(reason.clone());
    let waiters: Vec<Waiter> = pending.lock().expect("pending lock").drain().map(|(_, w)| w).collect();
    for w in waiters {
        let _ = w.tx.send(Err(reason.clone()));
    }
    sessions.lock().expect("sessions lock").clear();
}

/// One message read: an answer goes to its waiter, an event to its session's channel.
fn dispatch(pending: &Pending, sessions: &Sessions, v: Value) {
    if let Some(id) = v.get("id").and_then(Value::as_u64) {
        let waiter = pending.lock().expect("pending lock").remove(&id);
        if let Some(w) = waiter {
            let r = match v.get("error") {
                Some(e) => {
                    Err(CdpError::Command(e.get("message").and_then(Value::as_str).unwrap_or("error").to_owned()))
                }
                None => Ok(v.get("result").cloned().unwrap_or(Value::Null)),
            };
            let _ = w.tx.send(r);
        }
        return;
    }
    let Some(method) = v.get("method").and_then(Value::as_str) else { return };
    let params = v.get("params").cloned().unwrap_or(Value::Null);
    match v.get("sessionId").and_then(Value::as_str) {
        Some(session) => {
            if method == "Inspector.targetCrashed" {
                // Chromium would answer the page's commands never: they fail now.
                fail_session(pending, session, &CdpError::Crashed);
            }
            let tx = sessions.lock().expect("sessions lock").get(session).cloned();
            if let Some(tx) = tx {
                let _ = tx.send((method.to_owned(), params));
            }
        }
        None if method == "Target.detachedFromTarget" => {
            // The page is gone (its context disposed of, its renderer dead): its channel and
            // its waiters go with it.
            if let Some(session) = params["sessionId"].as_str() {
                sessions.lock().expect("sessions lock").remove(session);
                fail_session(pending, session, &CdpError::Closed("the page was closed".into()));
            }
        }
        None => {}
    }
}

fn fail_session(pending: &Pending, session: &str, error: &CdpError) {
    let waiters: Vec<Waiter> = {
        let mut p = pending.lock().expect("pending lock");
        let ids: Vec<u64> =
            p.iter().filter(|(_, w)| w.session.as_deref() == Some(session)).map(|(id, _)| *id).collect();
        ids.into_iter().filter_map(|id| p.remove(&id)).collect()
    };
    for w in waiters {
        let _ = w.tx.send(Err(error.clone()));
    }
}

/// Removes a command's waiter when its caller stops waiting.
struct Forget<'a> {
    id: u64,
    pending: &'a Pending,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        self.pending.lock().expect("pending lock").remove(&self.id);
    }
}

/// A session's events; dropping it removes the session's channel.
pub struct Events {
    rx: mpsc::UnboundedReceiver<Event>,
    session: String,
    sessions: Sessions,
}

impl Events {
    /// The next event, or `None` once the session is gone.
    pub async fn recv(&mut self) -> Option<Event> {
        self.rx.recv().await
    }
}

impl Drop for Events {
    fn drop(&mut self) {
        self.sessions.lock().expect("sessions lock").remove(&self.session);
    }
}
