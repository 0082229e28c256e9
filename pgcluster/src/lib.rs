//! The installed PostgreSQL server binaries, run as a private cluster: `initdb`, `pg_ctl start`
//! and `pg_ctl stop` on a data directory of one's own.
//!
//! Two places start one: code2des-local, when its `DATABASE_URL` names a loopback address where
//! nothing answers, and the test kit's throw-away clusters. Both need the same three things done
//! the same way: find the binaries (`PG_BIN`, else the newest `/usr/lib/postgresql/*/bin`), run
//! them as the `postgres` user when running as root (`initdb` refuses root), and hand `pg_ctl`
//! server options it passes through a shell.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The command that installs the server binaries on Debian and Ubuntu, for messages.
pub const INSTALL_COMMAND: &str = "sudo apt-get install postgresql";

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

/// The installed server, and who runs it.
#[derive(Debug, Clone)]
pub struct Server {
    bin: PathBuf,
    /// `initdb` refuses root: run as root, the cluster belongs to the `postgres` user.
    as_postgres: bool,
}

impl Server {
    /// The installed binaries ([`server_bin`]); an error says what is missing.
    pub fn installed() -> Result<Self, String> {
        Ok(Self { bin: server_bin()?, as_postgres: is_root() })
    }

    /// Whether the server runs as the `postgres` user (this process runs as root).
    pub fn as_postgres(&self) -> bool {
        self.as_postgres
    }

    /// Gives `path` to the user the server runs as (nothing to do unless running as root).
    pub fn own(&self, path: &Path) -> Result<(), String> {
        if self.as_postgres {
            run(Command::new("chown").arg("postgres").arg(path))?;
        }
        Ok(())
    }

    /// Whether the server's user can write `dir`: always when this process runs the server
    /// itself; run as root, only when every directory above `dir` lets the `postgres` user
    /// through (a checkout in root's 0700 home does not).
    pub fn reaches(&self, dir: &Path) -> bool {
        !self.as_postgres
            || Command::new("runuser")
                .args(["-u", "postgres", "--", "test", "-w"])
                .arg(dir)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
    }

    /// A directory the server's user owns and reaches, for a cluster whose wanted place it
    /// cannot reach: `code2des-local/<wanted, as one name>` in the `postgres` user's home (the
    /// package's `/var/lib/postgresql`), so the same wanted place finds the same cluster at the
    /// next start. Made, and given to that user.
    pub fn reachable_place_for(&self, wanted: &Path) -> Result<PathBuf, String> {
        let home = postgres_home()?;
        let name: String = wanted
            .to_string_lossy()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || c == '.' { c } else { '_' })
            .collect();
        let base = home.join("code2des-local");
        let place = base.join(name.trim_start_matches('_'));
        std::fs::create_dir_all(&place).map_err(|e| format!("{}: {e}", place.display()))?;
        self.own(&base)?;
        self.own(&place)?;
        Ok(place)
    }

    /// `initdb -D data`: trust authentication, bootstrap superuser `superuser`, plus `extra`.
    pub fn initdb(&self, data: &Path, superuser: &str, extra: &[&str]) -> Result<(), String> {
        run(self.tool("initdb", data).arg("-D").arg(data).args(["-A", "trust", "-U", superuser]).args(extra))
    }

    /// `pg_ctl start -w` with `options` for the server (`-o`), its log in `log`; waits until it
    /// accepts connections. On failure the message ends with the server's log.
    ///
    /// `pg_ctl` hands `options` to a shell: keep them to what needs no quoting.
    pub fn start(&self, data: &Path, log: &Path, options: &str) -> Result<(), String> {
        run(self.tool("pg_ctl", data).arg("-D").arg(data).arg("-l").arg(log).args(["-w", "-o", options, "start"]))
            .map_err(|e| format!("{e}\nserver log:\n{}", std::fs::read_to_string(log).unwrap_or_default()))
    }

    /// `pg_ctl stop -w` in `mode` (`fast`: a clean shut-down; `immediate`: data thrown away).
    pub fn stop(&self, data: &Path, mode: &str) -> Result<(), String> {
        run(self.tool("pg_ctl", data).arg("-D").arg(data).args(["-m", mode, "-w", "stop"]))
    }

    /// `tool` as the server's user, in the cluster's directory (the parent of an absolute
    /// `data`): the tools complain when the postgres user cannot read the directory they start
    /// in. A relative `data` keeps the working directory it is relative to.
    fn tool(&self, tool: &str, data: &Path) -> Command {
        let exe = self.bin.join(tool);
        let mut c = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(exe);
            c
        } else {
            Command::new(exe)
        };
        if let Some(dir) = data.parent().filter(|d| data.is_absolute() && d.is_dir()) {
            c.current_dir(dir);
        }
        c.stdout(Stdio::null());
        c
    }
}

/// The `postgres` user's home directory, from the password database.
fn postgres_home() -> Result<PathBuf, String> {
    let out = Command::new("getent").args(["passwd", "postgres"]).output().map_err(|e| format!("getent: {e}"))?;
    let line = String::from_utf8_lossy(&out.stdout);
    match line.trim().split(':').nth(5).filter(|h| !h.is_empty() && *h != "/") {
        Some(home) => Ok(PathBuf::from(home)),
        None => Err("the postgres user has no home directory to keep a cluster in".into()),
    }
}

/// Runs `cmd`; its stderr is the error.
pub fn run(cmd: &mut Command) -> Result<(), String> {
    let out = cmd.stderr(Stdio::piped()).output().map_err(|e| format!("{cmd:?}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("{cmd:?} failed: {}", String::from_utf8_lossy(&out.stderr)))
    }
}
