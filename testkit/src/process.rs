//! Binaries run by tests and benchmarks (`code2des-local`, the function binaries).

use std::process::Child;
use std::time::{Duration, Instant};

pub use crate::cluster::free_port;

/// Kills the child when dropped: a failed assertion must not leave a server running.
pub struct KillOnDrop(pub Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits until something accepts connections on 127.0.0.1:`port`; panics with `what` after
/// `within`.
pub async fn wait_for_port(port: u16, within: Duration, what: &str) {
    let deadline = Instant::now() + within;
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "{what} did not open its port");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
