//! A minimal Chrome DevTools protocol client: JSON commands and events over the browser's one
//! WebSocket, with flattened target sessions (`Target.attachToTarget {flatten: true}`). Only
//! what the renderer needs: send a command and await its answer; receive a session's events.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use futures::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::Message;

/// A protocol event: its method and params.
pub type Event = (String, Value);

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Result<Value, String>>>>>;
type Sessions = Arc<Mutex<HashMap<String, mpsc::UnboundedSender<Event>>>>;

#[derive(Clone)]
pub struct Cdp {
    out: mpsc::UnboundedSender<String>,
    next: Arc<AtomicU64>,
    pending: Pending,
    sessions: Sessions,
}

impl Cdp {
    /// Connects to the browser endpoint (`ws://127.0.0.1:PORT/devtools/browser/…`).
    pub async fn connect(url: &str) -> Result<Self, String> {
        // A snapshot of a long page, or a 50 MB capture sent as one command, is one message.
        let mut config = WebSocketConfig::default();
        config.max_message_size = Some(512 << 20);
        config.max_frame_size = None;
        let (ws, _) = tokio_tungstenite::connect_async_with_config(url, Some(config), false)
            .await
            .map_err(|e| format!("DevTools connection: {e}"))?;
        let (mut sink, mut stream) = ws.split();
        let (out, mut rx) = mpsc::unbounded_channel::<String>();
        tokio::spawn(async move {
            while let Some(text) = rx.recv().await {
                if sink.send(Message::text(text)).await.is_err() {
                    break;
                }
            }
        });
        let pending: Pending = Arc::default();
        let sessions: Sessions = Arc::default();
        let (p, s) = (pending.clone(), sessions.clone());
        tokio::spawn(async move {
            while let Some(Ok(msg)) = stream.next().await {
                let Message::Text(text) = msg else { continue };
                let Ok(v) = serde_json::from_str::<Value>(text.as_str()) else { continue };
                if let Some(id) = v.get("id").and_then(Value::as_u64) {
                    let waiter = p.lock().expect("pending lock").remove(&id);
                    if let Some(w) = waiter {
                        let r = match v.get("error") {
                            Some(e) => Err(e.get("message").and_then(Value::as_str).unwrap_or("error").to_owned()),
                            None => Ok(v.get("result").cloned().unwrap_or(Value::Null)),
                        };
                        let _ = w.send(r);
                    }
                } else if let (Some(method), Some(session)) =
                    (v.get("method").and_then(Value::as_str), v.get("sessionId").and_then(Value::as_str))
                {
                    let tx = s.lock().expect("sessions lock").get(session).cloned();
                    if let Some(tx) = tx {
                        let _ = tx.send((method.to_owned(), v.get("params").cloned().unwrap_or(Value::Null)));
                    }
                }
            }
            // The browser is gone: every waiter learns it now rather than at its time limit.
            p.lock().expect("pending lock").clear();
            s.lock().expect("sessions lock").clear();
        });
        Ok(Self { out, next: Arc::new(AtomicU64::new(1)), pending, sessions })
    }

    /// Sends a command (to a session, or to the browser with `None`) and awaits its result.
    pub async fn call(&self, session: Option<&str>, method: &str, params: Value) -> Result<Value, String> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let mut msg = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            msg["sessionId"] = json!(s);
        }
        let (tx, rx) = oneshot::channel();
        self.pending.lock().expect("pending lock").insert(id, tx);
        if self.out.send(msg.to_string()).is_err() {
            self.pending.lock().expect("pending lock").remove(&id);
            return Err("the browser connection is closed".into());
        }
        match rx.await {
            Ok(r) => r.map_err(|e| format!("{method}: {e}")),
            Err(_) => Err("the browser connection is closed".into()),
        }
    }

    /// Sends a command without waiting for its answer (an event handler's reply).
    pub fn send(&self, session: &str, method: &str, params: Value) {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let msg = json!({"id": id, "method": method, "params": params, "sessionId": session});
        let _ = self.out.send(msg.to_string());
    }

    /// The events of one session, from now on.
    pub fn events(&self, session: &str) -> mpsc::UnboundedReceiver<Event> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.sessions.lock().expect("sessions lock").insert(session.to_owned(), tx);
        rx
    }

    pub fn forget(&self, session: &str) {
        self.sessions.lock().expect("sessions lock").remove(session);
    }
}
