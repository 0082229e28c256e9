//! `cargo run -p code2des-local`: the user API and webhook on 127.0.0.1:3000 and an
//! S3-compatible endpoint on 127.0.0.1:9000, through the same handlers as the Lambdas. When
//! DATABASE_URL names a loopback address where nothing answers, it starts a private PostgreSQL
//! there first (`postgres`), and stops it when it stops.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Parser, Subcommand};
use code2des_local::stack::{self, Config};

#[derive(Parser)]
#[command(name = "code2des-local", about = "The Code2Des API on one machine: no AWS, no Docker")]
struct Cli {
    /// Address of the user API and webhook.
    #[arg(long, default_value = stack::DEFAULT_ADDR, global = true)]
    addr: SocketAddr,
    /// Address of the embedded S3-compatible endpoint (ignored when S3_ENDPOINT is set).
    #[arg(long, default_value = stack::DEFAULT_S3_ADDR, global = true)]
    s3_addr: SocketAddr,
    /// Where the embedded S3 endpoint keeps objects, the worker key pair the stack generates
    /// when WEBHOOK_PUBLIC_KEY is not set, and (in postgres/) the private PostgreSQL it starts
    /// when DATABASE_URL names a loopback address where nothing answers (LOCAL_POSTGRES=off: never).
    #[arg(long, default_value = stack::DEFAULT_DATA_DIR, global = true)]
    data_dir: PathBuf,
    /// Run the reference worker in-process: it completes every new job.
    #[arg(long, global = true)]
    demo_worker: bool,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the API (the default).
    Serve,
    /// Create the database if missing, apply migrations, and exit.
    Migrate,
    /// Seed a demo tenant and run one job end to end, printing each step (uses free ports).
    Demo,
    /// Create a tenant to develop against: an organization, a project, a membership and a
    /// completed page import; prints their ids and a bearer token for the local stack.
    Seed {
        /// The member's subject (the token's `sub`); default: a fresh `dev-…` one.
        #[arg(long)]
        sub: Option<String>,
        /// The page import's id; default: a fresh `page-import-…` one. (`pi-example` makes the
        /// committed events/trigger.json work as it is.)
        #[arg(long)]
        page_import: Option<String>,
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Convert your own saved page: stores PAGE where the stack's S3 serves it, makes a completed
    /// page import of it for the member (a fresh tenant when --sub is new), triggers a job
    /// through the API as the plugin does, and waits for its end. Needs the stack running at
    /// --addr (same --data-dir, --s3-addr and DATABASE_URL) with a worker: --demo-worker, or
    /// `code2des-worker poll` beside it.
    Import {
        /// The page: one self-contained .html file (as SingleFile saves it) or an .mhtml archive
        /// (as Chromium saves it), at most 50 MB.
        page: PathBuf,
        /// The member's subject (the token's `sub`); default: a fresh `dev-…` one. A member
        /// seeded before gets the page import in their newest project.
        #[arg(long)]
        sub: Option<String>,
        /// Widths to lay the page out at, 1 to 4 of 320-2560 px (`1440,390`); refused until the
        /// trigger takes viewports (issue 40 item 3).
        #[arg(long)]
        viewports: Option<String>,
        /// The Figma file the job is filed under: the plugin lists a file's jobs by its key.
        #[arg(long, default_value = code2des_local::seed::DEV_FILE_KEY)]
        figma_file_key: String,
        /// Seconds to wait for the job's end before giving up (non-zero exit).
        #[arg(long, default_value_t = code2des_local::import::DEFAULT_WAIT.as_secs())]
        wait: u64,
        /// Print one JSON object: {"code2desId","status","resultCurl","preview"}.
        #[arg(long)]
        json: bool,
    },
    /// Seed a year of data into an empty database (for trying reads at scale): 1.5 M jobs over
    /// 400 projects, one busy project of 300 000, a small tenant of 20. Prints what it made.
    SeedYear {
        /// Jobs in the whole table.
        #[arg(long, default_value_t = code2des_local::year::Year::FULL.jobs)]
        jobs: i64,
        /// Jobs of the busy project.
        #[arg(long, default_value_t = code2des_local::year::Year::FULL.busy)]
        busy: i64,
    },
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(s) => s,
            Err(_) => return std::future::pending().await,
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = tokio::signal::ctrl_c().await;
}

/// `import`: its inputs checked, and the stack it needs found answering, before anything is
/// started, written or created, so that a refused import leaves everything as it was (exit 2);
/// then the import itself (exit 1 unless the job completed).
async fn import(cfg: Config, options: code2des_local::import::Options) -> std::process::ExitCode {
    let refused = |e: String| {
        eprintln!("code2des-local import: {e}");
        std::process::ExitCode::from(2)
    };
    let plan = match code2des_local::import::plan(options) {
        Ok(plan) => plan,
        Err(e) => return refused(e),
    };
    if let Err(e) = code2des_local::import::probe(cfg.addr).await {
        return refused(e);
    }
    // No private PostgreSQL here: the stack answering at --addr already has its database, and
    // one started for the import alone would hold rows that stack never reads.
    match code2des_local::import::run(&cfg, plan).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("code2des-local import: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    if matches!(
        cli.command,
        Some(Command::Demo | Command::Seed { .. } | Command::SeedYear { .. } | Command::Import { .. })
    ) && std::env::var_os("RUST_LOG").is_none()
    {
        // The demo prints its own story and seed its ids (`--json`: one object a script
        // parses); only problems should interrupt them.
        std::env::set_var("RUST_LOG", "warn");
    }
    shared::obs::telemetry::init_local();
    shared::db::connect::install_crypto_provider();
    let cfg = match Config::from_env(cli.addr, cli.s3_addr, cli.data_dir, cli.demo_worker) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("code2des-local: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let command = match cli.command.unwrap_or(Command::Serve) {
        Command::Import { page, sub, viewports, figma_file_key, wait, json } => {
            let wait = std::time::Duration::from_secs(wait);
            let options = code2des_local::import::Options { page, sub, viewports, figma_file_key, wait, json };
            return import(cfg, options).await;
        }
        other => other,
    };
    // Before any command connects: a loopback DATABASE_URL where nothing answers gets a private
    // cluster under the data directory. Held to the end of main, so it is stopped after the
    // stack (Ctrl-C and SIGTERM come back here through `shutdown_signal`), on an error too.
    let _postgres = match code2des_local::postgres::ensure(&cfg.database_url, &cfg.data_dir).await {
        Ok(pg) => pg,
        Err(e) => {
            eprintln!("code2des-local: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let outcome = match command {
        Command::Serve => match stack::start(cfg).await {
            Ok(running) => {
                println!(
                    "code2des-local: API on {} · S3 on {} (bucket {}) · Ctrl-C stops",
                    running.base_url(),
                    running.s3_endpoint,
                    running.bucket
                );
                if let Some(keys) = &running.worker_keys {
                    // What a worker needs to sign v1a: where its secret key is (never the key
                    // itself, which stays in the file) and the public key the stack verifies with.
                    println!(
                        "code2des-local: worker signing key (whsk_) {} {} (mode 0600): \
                         WEBHOOK_SIGNING_KEY_FILE={} code2des-worker poll; the stack verifies v1a with \
                         WEBHOOK_PUBLIC_KEY={}",
                        if keys.created { "generated in" } else { "in" },
                        keys.signing_key_path.display(),
                        keys.signing_key_path.display(),
                        keys.public_key
                    );
                }
                shutdown_signal().await;
                tracing::info!("shutting down");
                running.shutdown().await;
                Ok(())
            }
            Err(e) => Err(e.to_string()),
        },
        Command::Migrate => stack::prepare_database(&cfg.database_url).await.map(|_| ()).map_err(|e| e.to_string()),
        Command::Seed { sub, page_import, json } => {
            code2des_local::seed::seed_command(&cfg, sub, page_import, json).await
        }
        Command::SeedYear { jobs, busy } => {
            let year = code2des_local::year::Year { jobs, busy, ..code2des_local::year::Year::FULL };
            code2des_local::year::seed_command(&cfg, &year).await
        }
        Command::Import { .. } => unreachable!("import returned above, through `import`"),
        Command::Demo => {
            let mut cfg = cfg;
            cfg.addr = SocketAddr::from(([127, 0, 0, 1], 0));
            cfg.s3_addr = SocketAddr::from(([127, 0, 0, 1], 0));
            code2des_local::demo::run(cfg).await
        }
    };
    // Spans still in the batch go out before the process ends.
    shared::obs::trace::flush();
    match outcome {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("code2des-local: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
