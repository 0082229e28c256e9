//! The accept loop both local servers share (the gateway and the embedded S3): HTTP/1 and
//! HTTP/2 connections until told to stop, then a bounded wait for requests in flight.

use std::error::Error;
use std::time::Duration;

use hyper::body::{Body, Incoming};
use hyper::service::Service;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder as ConnBuilder;
use tokio::net::TcpListener;
use tokio::sync::watch;

type BoxError = Box<dyn Error + Send + Sync>;

/// Serves `listener` with a service from `make` per connection until `stopped` changes; then
/// stops accepting and gives open connections up to `grace` to finish.
pub async fn until_stopped<S, B>(
    listener: TcpListener,
    make: impl Fn() -> S,
    mut stopped: watch::Receiver<bool>,
    grace: Duration,
) where
    S: Service<http::Request<Incoming>, Response = http::Response<B>> + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    let http = ConnBuilder::new(TokioExecutor::new());
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((socket, _)) = accepted else { continue };
                // Without it, a small response waits on the client's delayed ACK (~40 ms).
                let _ = socket.set_nodelay(true);
                let conn = graceful.watch(http.serve_connection(TokioIo::new(socket), make()).into_owned());
                tokio::spawn(async move { let _ = conn.await; });
            }
            _ = stopped.changed() => break,
        }
    }
    drop(listener);
    let _ = tokio::time::timeout(grace, graceful.shutdown()).await;
}
