//! Issue 37, item 0: the request path's futures stay small in every profile. An async fn's
//! future holds every local that lives across an `.await`, nested; unoptimised (the dev
//! profile, which `cargo run -p code2des-local` and `cargo lambda watch` build), nothing is
//! overlapped or elided, and the futures of the AWS SDK and of a handler that awaits several
//! of them inline grew past the 2 MiB stack of a tokio worker thread: the first request aborted
//! the process. Large futures are boxed where they are made; this test holds each handler's,
//! and the local gateway's, under a bound that leaves the thread's stack room to spare.

use std::future::Future;
use std::mem::size_of;

/// The size of the future `f` returns, without calling it (its dependencies need no database).
fn future_size<D: 'static, A, Fut: Future>(_: impl Fn(&'static D, A) -> Fut) -> usize {
    size_of::<Fut>()
}

/// A handler's whole future, held on a worker thread's 2 MiB stack with everything a poll
/// calls below it: a sixteenth of that stack.
const BOUND: usize = 128 * 1024;

#[test]
fn every_handler_future_fits_the_stack() {
    let sizes = [
        ("trigger", future_size(code2des_trigger::handler::handle)),
        ("lifecycle", future_size(code2des_lifecycle::handler::handle)),
        ("result", future_size(code2des_result::handler::handle)),
        ("webhook", future_size(code2des_webhook::handler::handle)),
        ("placement", future_size(code2des_placement::handler::handle)),
        ("local gateway", future_size(code2des_local::gateway::dispatch)),
    ];
    for (name, size) in sizes {
        eprintln!("{name}: {size} bytes");
    }
    for (name, size) in sizes {
        assert!(size <= BOUND, "the {name} future is {size} bytes, over {BOUND}: box what it awaits");
    }
}
