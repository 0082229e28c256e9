//! A private PostgreSQL cluster for the benchmarks, on a free loopback port, with
//! `pg_stat_statements` loaded and tracking nested statements too. It never touches the
//! machine's own PostgreSQL (other developers' tests run there) and is removed on drop.

use std::path::PathBuf;
use std::process::{Command, Stdio};

pub struct Cluster {
    dir: PathBuf,
    bin: PathBuf,
    as_postgres: bool,
    pub port: u16,
}

/// A port that was free a moment ago on 127.0.0.1.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free port")
}

fn server_bin() -> Result<PathBuf, String> {
    if let Ok(b) = std::env::var("PG_BIN") {
        return Ok(PathBuf::from(b));
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

impl Cluster {
    pub fn start() -> Result<Self, String> {
        let bin = server_bin()?;
        let port = free_port();
        let dir = std::env::temp_dir().join(format!("code2des-bench-pg-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        // initdb refuses root: the cluster then belongs to the postgres user.
        let as_postgres = is_root();
        if as_postgres {
            run(Command::new("chown").arg("postgres").arg(&dir))?;
        }
        let cluster = Self { dir, bin, as_postgres, port };
        let data = cluster.dir.join("data");
        run(cluster.pg("initdb").arg("-D").arg(&data).args(["-A", "trust", "-U", "postgres", "--no-sync"]))?;
        let opts = format!(
            "-p {port} -k {} -c listen_addresses=127.0.0.1 -c max_connections=200 -c fsync=off \
             -c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all",
            cluster.dir.display()
        );
        run(cluster
            .pg("pg_ctl")
            .arg("-D")
            .arg(&data)
            .arg("-l")
            .arg(cluster.dir.join("log"))
            .args(["-w", "-o", &opts, "start"]))?;
        Ok(cluster)
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
        let data = self.dir.join("data");
        let _ = self
            .pg("pg_ctl")
            .arg("-D")
            .arg(&data)
            .args(["-m", "immediate", "-w", "stop"])
            .stderr(Stdio::null())
            .status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
