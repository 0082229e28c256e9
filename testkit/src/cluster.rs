//! A private PostgreSQL cluster: a fresh `initdb` in a temporary directory, served on a free
//! loopback port, stopped and removed when dropped (a panicking test included).
//!
//! For what the machine's PostgreSQL must not be used for: server settings of one's own (the
//! benchmarks load `pg_stat_statements`, the TLS test serves a certificate it made), and a
//! server that no other developer's tests share. The server binaries come from `PG_BIN`, else
//! the newest `/usr/lib/postgresql/*/bin`; without them [`Cluster::init`] fails and says so.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A port that was free a moment ago on 127.0.0.1.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free port")
}

/// The directory of the PostgreSQL server binaries (`initdb`, `pg_ctl`).
pub fn server_bin() -> Result<PathBuf, String> {
    if let Ok(b) = std::env::var("PG_BIN") {
        let bin = PathBuf::from(&b);
        return if bin.join("initdb").exists() { Ok(bin) } else { Err(format!("PG_BIN={b} holds no initdb")) };
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .map_err(|e| format!("no PostgreSQL server under /usr/lib/postgresql ({e}); install postgresql or set PG_BIN"))?
        .filter_map(|e| e.ok())
        .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, e.path().join("bin"))))
        .filter(|(_, p): &(u32, PathBuf)| p.join("initdb").exists())
        .collect();
    versions.sort();
    versions.pop().map(|(_, p)| p).ok_or_else(|| "no initdb under /usr/lib/postgresql/*/bin".into())
}

fn is_root() -> bool {
    Command::new("id").arg("-u").output().map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0").unwrap_or(false)
}

pub struct Cluster {
    dir: tempfile::TempDir,
    bin: PathBuf,
    /// `initdb` refuses root: run as root, the cluster belongs to the `postgres` user.
    as_postgres: bool,
    pub port: u16,
    started: bool,
}

impl Cluster {
    /// `initdb` in a new temporary directory: trust authentication, superuser `postgres`.
    pub fn init() -> Result<Self, String> {
        let bin = server_bin()?;
        let dir = tempfile::Builder::new().prefix("code2des-pg-").tempdir().map_err(|e| e.to_string())?;
        let as_postgres = is_root();
        if as_postgres {
            run(Command::new("chown").arg("postgres").arg(dir.path()))?;
        }
        let cluster = Self { dir, bin, as_postgres, port: free_port(), started: false };
        run(cluster.pg("initdb").arg("-D").arg(cluster.data()).args(["-A", "trust", "-U", "postgres", "--no-sync"]))?;
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
        if self.as_postgres {
            run(Command::new("chown").arg("postgres").arg(&path))?;
        }
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
        let log = self.dir.path().join("log");
        let started =
            run(self.pg("pg_ctl").arg("-D").arg(self.data()).arg("-l").arg(&log).args(["-w", "-o", &opts, "start"]));
        // Stopped on drop from here on, even if the start failed half-way.
        self.started = true;
        started.map_err(|e| format!("{e}\nserver log:\n{}", std::fs::read_to_string(&log).unwrap_or_default()))?;
        Ok(self)
    }

    fn pg(&self, tool: &str) -> Command {
        let exe = self.bin.join(tool);
        let mut c = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(exe);
            c
        } else {
            Command::new(exe)
        };
        c.stdout(Stdio::null());
        c
    }

    /// The URL of database `db` as the superuser, over TCP on loopback.
    pub fn url(&self, db: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{db}", self.port)
    }
}

fn run(cmd: &mut Command) -> Result<(), String> {
    let out = cmd.stderr(Stdio::piped()).output().map_err(|e| format!("{cmd:?}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("{cmd:?} failed: {}", String::from_utf8_lossy(&out.stderr)))
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if self.started {
            let _ = self
                .pg("pg_ctl")
                .arg("-D")
                .arg(self.data())
                .args(["-m", "immediate", "-w", "stop"])
                .stderr(Stdio::null())
                .status();
        }
        // The TempDir removes the directory after this.
    }
}
