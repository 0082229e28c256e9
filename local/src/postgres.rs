//! A PostgreSQL of the local stack's own, for a newcomer whose server is installed but not
//! running: when `DATABASE_URL` names a loopback address where nothing answers, code2des-local
//! starts a private cluster from the installed server binaries under its data directory
//! (`{--data-dir}/postgres`), on that address and port, and stops it when it stops.
//!
//! What is never touched: a URL whose host is not loopback (someone else's server), an address
//! where anything answers (the machine's PostgreSQL, or whatever it is: connecting tells), and
//! everything when `LOCAL_POSTGRES=off`. Then the stack connects as it always did.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use code2des_pgcluster::Server;

use crate::stack::StartError;

/// The cluster's directory under `--data-dir` (its data directory is `data/` below it, its
/// server log `log` beside that).
pub const DIR: &str = "postgres";

/// The switch: `off` leaves a silent loopback address alone (the connection error it gives is
/// then the one to see); `auto`, the default, starts a cluster there.
pub const SWITCH: &str = "LOCAL_POSTGRES";

/// Where the URL points, when that is somewhere this machine may start a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoopbackTarget {
    /// `localhost` or a loopback IP, as `listen_addresses` takes it.
    pub host: String,
    pub port: u16,
    /// The URL's user: the cluster's bootstrap superuser, so the URL logs in as it is.
    pub user: String,
}

/// The URL's one TCP host when it is loopback (`localhost`, 127.0.0.0/8, `::1`); `None` for
/// anything else, an unparsable URL included (connecting reports that one).
pub fn loopback_target(url: &str) -> Option<LoopbackTarget> {
    use tokio_postgres::config::Host;
    let pg: tokio_postgres::Config = url.parse().ok()?;
    let [Host::Tcp(host)] = pg.get_hosts() else { return None };
    let host = if host == "localhost" {
        host.clone()
    } else {
        // Canonical text: what reaches pg_ctl's shell is an address, nothing else.
        host.parse::<IpAddr>().ok().filter(IpAddr::is_loopback)?.to_string()
    };
    // `hostaddr` overrides where the host name points: it must be loopback too.
    if !pg.get_hostaddrs().iter().all(IpAddr::is_loopback) {
        return None;
    }
    let port = match pg.get_ports() {
        [] => 5432,
        [p] => *p,
        _ => return None,
    };
    let user = pg.get_user().unwrap_or("postgres").to_owned();
    // The user becomes an initdb argument: only a plain role name.
    if user.is_empty() || !user.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return None;
    }
    Some(LoopbackTarget { host, port, user })
}

/// The running private cluster; dropped, it is stopped (a clean, fast shut-down: the data
/// stays for the next start).
#[derive(Debug)]
pub struct LocalPostgres {
    server: Server,
    /// The cluster's directory (`{--data-dir}/postgres`).
    pub dir: PathBuf,
    pub port: u16,
}

impl LocalPostgres {
    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }
}

impl Drop for LocalPostgres {
    fn drop(&mut self) {
        match self.server.stop(&self.data(), "fast") {
            Ok(()) => tracing::info!(dir = %self.dir.display(), port = self.port, "stopped the private PostgreSQL"),
            Err(e) => tracing::warn!(dir = %self.dir.display(), error = %e, "cannot stop the private PostgreSQL"),
        }
    }
}

/// Starts a private cluster when `url` names a loopback address where nothing answers (and
/// [`SWITCH`] is not `off`); `None` when the stack should connect as it is.
pub async fn ensure(url: &str, data_dir: &Path) -> Result<Option<LocalPostgres>, StartError> {
    match shared::config::var(SWITCH).as_deref().map(str::trim) {
        None | Some("auto") => {}
        Some("off") => return Ok(None),
        Some(other) => return Err(StartError::Config(format!("{SWITCH} must be auto or off, not {other:?}"))),
    }
    let Some(target) = loopback_target(url) else { return Ok(None) };
    if !refused(&target).await {
        return Ok(None);
    }
    let dir = std::path::absolute(data_dir.join(DIR))
        .map_err(|e| StartError::Config(format!("{}: {e}", data_dir.display())))?;
    tokio::task::spawn_blocking(move || start(target, dir))
        .await
        .map_err(|e| StartError::LocalPostgres(e.to_string()))?
        .map(Some)
}

/// Whether connecting is refused: nothing listens. Anything else (an answer, a timeout from a
/// frozen server, an unreachable address) is not ours to replace.
async fn refused(target: &LoopbackTarget) -> bool {
    let connect = tokio::net::TcpStream::connect((target.host.as_str(), target.port));
    matches!(
        tokio::time::timeout(Duration::from_secs(2), connect).await,
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused
    )
}

fn start(target: LoopbackTarget, dir: PathBuf) -> Result<LocalPostgres, StartError> {
    let addr = format!("{}:{}", target.host, target.port);
    let server = Server::installed().map_err(|reason| StartError::NoPostgres { addr: addr.clone(), reason })?;
    let wanted = dir.clone();
    let failed = |what: &str, e: String| {
        let hint = if server.as_postgres() {
            format!(
                " (running as root, the cluster belongs to the postgres user: every directory above {} must \
                 let it through, or choose another --data-dir)",
                wanted.display()
            )
        } else {
            String::new()
        };
        StartError::LocalPostgres(format!("{what} in {}{hint}: {e}", wanted.display()))
    };
    std::fs::create_dir_all(&dir).map_err(|e| failed("cannot create the cluster's directory", e.to_string()))?;
    server.own(&dir).map_err(|e| failed("cannot give the cluster's directory to postgres", e))?;
    let dir = reachable(&server, dir).map_err(|e| failed("no place the postgres user can reach", e))?;
    let data = dir.join("data");
    if !data.join("PG_VERSION").exists() {
        tracing::info!(dir = %dir.display(), "initialising a private PostgreSQL cluster (once)");
        // Trust for every local connection, as the default DATABASE_URL expects; UTF-8
        // whatever the shell's locale (an unset one would make the databases SQL_ASCII).
        server.initdb(&data, &target.user, &["-E", "UTF8", "--no-locale"]).map_err(|e| failed("initdb failed", e))?;
    }
    // Listening on the URL's address only, and no Unix socket: a data directory's path can be
    // longer than a socket path may be, and the stack connects over TCP.
    let options = format!("-p {} -c listen_addresses={} -c unix_socket_directories=", target.port, target.host);
    server.start(&data, &dir.join("log"), &options).map_err(|e| failed("cannot start PostgreSQL", e))?;
    tracing::info!(
        dir = %dir.display(),
        port = target.port,
        "nothing answered at DATABASE_URL's {addr}: started a private PostgreSQL there from the installed server \
         (stopped when code2des-local stops; {SWITCH}=off turns this off)"
    );
    Ok(LocalPostgres { server, dir, port: target.port })
}

/// Where the cluster lives: `dir` itself, or, run as root from a checkout the `postgres` user
/// cannot get through to (root's home is 0700 in most containers), a place in that user's home
/// kept for this `dir` ([`Server::reachable_place_for`]). `dir` then holds a file that says where,
/// and the log says it too: a newcomer looking under --data-dir finds the way.
fn reachable(server: &Server, dir: PathBuf) -> Result<PathBuf, String> {
    if server.reaches(&dir) {
        return Ok(dir);
    }
    let place = server.reachable_place_for(&dir)?;
    let note = format!(
        "The postgres user cannot reach this directory (a directory above it is closed to others),\n\
         so code2des-local keeps its private PostgreSQL cluster in:\n{}\n",
        place.display()
    );
    std::fs::write(dir.join(MOVED_NOTE), note).map_err(|e| format!("{}: {e}", dir.join(MOVED_NOTE).display()))?;
    tracing::warn!(
        wanted = %dir.display(),
        dir = %place.display(),
        "the postgres user cannot reach the data directory (run as root from a directory closed to others): \
         the private PostgreSQL cluster lives in the postgres user's home instead"
    );
    Ok(place)
}

/// The file under `{--data-dir}/postgres` that names the cluster's real place when it had to
/// live elsewhere.
pub const MOVED_NOTE: &str = "WHERE-THE-CLUSTER-IS.txt";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_loopback_url_may_get_a_private_cluster() {
        let t = loopback_target("postgres://postgres@127.0.0.1:5432/code2des").unwrap();
        assert_eq!((t.host.as_str(), t.port, t.user.as_str()), ("127.0.0.1", 5432, "postgres"));
        let t = loopback_target("postgres://me@localhost/code2des").unwrap();
        assert_eq!((t.host.as_str(), t.port, t.user.as_str()), ("localhost", 5432, "me"));
        assert_eq!(loopback_target("postgres://postgres@[::1]:6543/x").unwrap().host, "::1");
        assert_eq!(loopback_target("postgres://postgres@127.1.2.3:6543/x").unwrap().host, "127.1.2.3");
        for elsewhere in [
            "postgres://postgres@db.example.com:5432/code2des",
            "postgres://postgres@10.0.0.5/code2des",
            "postgres://postgres@localhost/code2des?hostaddr=10.0.0.5",
            "postgres://postgres@127.0.0.1,127.0.0.2/code2des",
            "host=/var/run/postgresql dbname=code2des",
            "not a url",
        ] {
            assert_eq!(loopback_target(elsewhere), None, "{elsewhere}");
        }
    }
}
