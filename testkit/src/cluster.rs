//! A private PostgreSQL cluster: a fresh `initdb` in a temporary directory, served on a free
//! loopback port, stopped and removed when dropped (a panicking test included).
//!
//! For what the machine's PostgreSQL must not be used for: server settings of one's own (the
//! benchmarks load `pg_stat_statements`, the TLS test serves a certificate it made), and a
//! server that no other developer's tests share. The server binaries come from `PG_BIN`, else
//! the newest `/usr/lib/postgresql/*/bin`; without them [`Cluster::init`] fails and says so.
//! Finding and running them is `code2des-pgcluster`'s, which code2des-local's own cluster uses
//! too.

use std::path::{Path, PathBuf};

use code2des_pgcluster::Server;
pub use code2des_pgcluster::{free_port, server_bin};

pub struct Cluster {
    dir: tempfile::TempDir,
    server: Server,
    pub port: u16,
    started: bool,
}

impl Cluster {
    /// `initdb` in a new temporary directory: trust authentication, superuser `postgres`.
    pub fn init() -> Result<Self, String> {
        let server = Server::installed()?;
        let dir = tempfile::Builder::new().prefix("code2des-pg-").tempdir().map_err(|e| e.to_string())?;
        server.own(dir.path())?;
        let cluster = Self { dir, server, port: free_port(), started: false };
        cluster.server.initdb(&cluster.data(), "postgres", &["--no-sync"])?;
        Ok(cluster)
    }

    /// The cluster's directory (its data directory is `data/` below it).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// Writes `contents` to `name` in the cluster's directory, readable by the server's user
    /// only: the server refuses a private key that anyone else may read.
    pub fn write_private(&self, name: &str, contents: &[u8]) -> Result<PathBuf, String> {
        use std::os::unix::fs::PermissionsExt;
        let path = self.dir.path().join(name);
        std::fs::write(&path, contents).map_err(|e| format!("{}: {e}", path.display()))?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).map_err(|e| e.to_string())?;
        self.server.own(&path)?;
        Ok(path)
    }

    /// Starts the server on [`Cluster::port`] (127.0.0.1 only, its socket in the cluster's
    /// directory) with `settings` as `-c name=value`; waits until it accepts connections.
    pub fn start(mut self, settings: &[(&str, &str)]) -> Result<Self, String> {
        let mut opts = format!("-p {} -k {} -c listen_addresses=127.0.0.1", self.port, self.dir.path().display());
        for (name, value) in settings {
            // pg_ctl hands `-o` to a shell: keep values to what needs no quoting.
            if value.chars().any(|c| c.is_whitespace() || "'\"\\$`".contains(c)) {
                return Err(format!("setting {name}: {value:?} would need quoting"));
            }
            opts.push_str(&format!(" -c {name}={value}"));
        }
        let started = self.server.start(&self.data(), &self.dir.path().join("log"), &opts);
        // Stopped on drop from here on, even if the start failed half-way.
        self.started = true;
        started?;
        Ok(self)
    }

    /// The URL of database `db` as the superuser, over TCP on loopback.
    pub fn url(&self, db: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{db}", self.port)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if self.started {
            let _ = self.server.stop(&self.data(), "immediate");
        }
        // The TempDir removes the directory after this.
    }
}
