//! A loopback TCP proxy in front of PostgreSQL that reads both sides of the wire protocol and
//! counts the frontend's messages: Parse, Bind, Execute, Sync, simple Query... Each Sync (or
//! simple Query) is one request, answered by one ReadyForQuery. A *flight* is what the client
//! sends while nothing is outstanding: the client then waits, so flights are the round trips.
//! A `query_typed` call is Parse+Bind+Describe+Execute+Sync in ONE flight; a prepare-then-execute
//! shows two flights; requests pipelined together (BEGIN with an INSERT) share one flight.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

#[derive(Debug, Default)]
pub struct Wire {
    pub connections: AtomicU64,
    pub parse: AtomicU64,
    pub bind: AtomicU64,
    pub describe: AtomicU64,
    pub execute: AtomicU64,
    pub sync: AtomicU64,
    pub query: AtomicU64,
    pub other: AtomicU64,
    pub flights: AtomicU64,
}

/// Counts at one moment: connections, Parse, Bind, Describe, Execute, Sync, Query, other, flights.
pub type Counts = [u64; 9];

impl Wire {
    pub fn snapshot(&self) -> Counts {
        [
            &self.connections,
            &self.parse,
            &self.bind,
            &self.describe,
            &self.execute,
            &self.sync,
            &self.query,
            &self.other,
            &self.flights,
        ]
        .map(|c| c.load(Ordering::Relaxed))
    }

    fn count(&self, tag: u8) {
        let c = match tag {
            b'P' => &self.parse,
            b'B' => &self.bind,
            b'D' => &self.describe,
            b'E' => &self.execute,
            b'S' => &self.sync,
            b'Q' => &self.query,
            _ => &self.other,
        };
        c.fetch_add(1, Ordering::Relaxed);
    }
}

pub fn diff(a: &Counts, b: &Counts) -> Counts {
    std::array::from_fn(|i| b[i] - a[i])
}

/// Listens on a free loopback port and forwards to `upstream`.
pub async fn start(upstream: SocketAddr) -> (SocketAddr, Arc<Wire>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let wire = Arc::new(Wire::default());
    let w = wire.clone();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let w = w.clone();
            tokio::spawn(async move {
                if let Ok(server) = TcpStream::connect(upstream).await {
                    w.connections.fetch_add(1, Ordering::Relaxed);
                    let _ = relay(client, server, w).await;
                }
            });
        }
    });
    (addr, wire)
}

async fn relay(client: TcpStream, server: TcpStream, wire: Arc<Wire>) -> std::io::Result<()> {
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (mut cr, mut cw) = client.into_split();
    let (mut sr, mut sw) = server.into_split();
    // Requests sent and not yet answered by ReadyForQuery ('Z'), shared by both directions.
    let outstanding = Arc::new(std::sync::atomic::AtomicI64::new(0));
    let out_down = outstanding.clone();
    let down = tokio::spawn(async move {
        let mut buf = vec![0u8; 64 * 1024];
        let mut pending: Vec<u8> = Vec::new();
        loop {
            let n = sr.read(&mut buf).await?;
            if n == 0 {
                return Ok::<_, std::io::Error>(());
            }
            cw.write_all(&buf[..n]).await?;
            pending.extend_from_slice(&buf[..n]);
            // Server messages are all typed (the bench connects without an SSLRequest).
            while pending.len() >= 5 {
                let len = u32::from_be_bytes(pending[1..5].try_into().unwrap()) as usize + 1;
                if pending.len() < len {
                    break;
                }
                if pending[0] == b'Z' {
                    // The 'Z' ending the startup phase answers no request: never go below 0.
                    let _ = out_down.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |v| (v > 0).then(|| v - 1));
                }
                pending.drain(..len);
            }
        }
    });
    let mut buf = vec![0u8; 64 * 1024];
    let mut pending: Vec<u8> = Vec::new();
    let mut started = false;
    loop {
        let n = cr.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        // Count before forwarding, so no answer can arrive before its request is counted.
        pending.extend_from_slice(&buf[..n]);
        // Consume every complete message in `pending`.
        loop {
            if !started {
                // Untyped: SSLRequest / GSSENCRequest (8 bytes, then another untyped one) or
                // the StartupMessage.
                if pending.len() < 8 {
                    break;
                }
                let len = u32::from_be_bytes(pending[0..4].try_into().unwrap()) as usize;
                if pending.len() < len {
                    break;
                }
                let code = u32::from_be_bytes(pending[4..8].try_into().unwrap());
                started = !(len == 8 && (code == 80_877_103 || code == 80_877_104));
                pending.drain(..len);
            } else {
                if pending.len() < 5 {
                    break;
                }
                let len = u32::from_be_bytes(pending[1..5].try_into().unwrap()) as usize + 1;
                if pending.len() < len {
                    break;
                }
                wire.count(pending[0]);
                if matches!(pending[0], b'S' | b'Q') && outstanding.fetch_add(1, Ordering::SeqCst) == 0 {
                    // Nothing was outstanding: the client starts a new flight.
                    wire.flights.fetch_add(1, Ordering::Relaxed);
                }
                pending.drain(..len);
            }
        }
        sw.write_all(&buf[..n]).await?;
    }
    let _ = sw.shutdown().await;
    let _ = down.await;
    Ok(())
}
