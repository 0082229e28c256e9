//! `code2des-local import`: the real binary's import against the real binary's stack, on free
//! ports with a fresh database, its embedded S3 and its reference worker converting in headless
//! Chromium (`--demo-worker`), on a real page of samples/real/. And the refusals, which must
//! leave everything as it was.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use code2des_testkit::db::{db_url, unique_name, DropDatabase};
use code2des_testkit::process::{free_port, wait_for_port, KillOnDrop};
use serde_json::Value;

const EXE: &str = env!("CARGO_BIN_EXE_code2des-local");

/// A real page nobody on the project wrote (samples/real/README.md): paragraphs, inline code,
/// lists, code blocks, a grid and a flex container.
fn real_page() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../samples/real/python-annotations.html")
}

/// The running binary; dropped, it is killed and then its database dropped.
struct Stack {
    _child: KillOnDrop,
    port: u16,
    s3_port: u16,
    db: DropDatabase,
    dir: tempfile::TempDir,
}

impl Stack {
    async fn start(demo_worker: bool) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let db = unique_name("c2d_import");
        let (port, s3_port) = (free_port(), free_port());
        let mut cmd = Command::new(EXE);
        cmd.args(["--addr", &format!("127.0.0.1:{port}"), "--s3-addr", &format!("127.0.0.1:{s3_port}")])
            .args(["--data-dir".as_ref(), dir.path().join("data").as_os_str()]);
        if demo_worker {
            cmd.arg("--demo-worker");
        }
        let child = clean_env(&mut cmd)
            .env("DATABASE_URL", db_url(&db))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the code2des-local binary runs");
        let stack = Stack { _child: KillOnDrop(child), port, s3_port, db: DropDatabase(db), dir };
        wait_for_port(port, Duration::from_secs(60), "code2des-local").await;
        stack
    }

    fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// `code2des-local ARGS` as a user beside this stack runs it: the same --addr, --s3-addr,
    /// --data-dir and DATABASE_URL.
    fn run(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new(EXE);
        cmd.args(["--addr", &format!("127.0.0.1:{}", self.port), "--s3-addr", &format!("127.0.0.1:{}", self.s3_port)])
            .args(["--data-dir".as_ref(), self.data_dir().as_os_str()])
            .args(args);
        clean_env(&mut cmd).env("DATABASE_URL", db_url(&self.db.0)).output().unwrap()
    }

    /// GET `path` of the API as member `sub`.
    async fn get(&self, sub: &str, path: &str) -> (u16, Value) {
        let r = reqwest::Client::new()
            .get(format!("http://127.0.0.1:{}{path}", self.port))
            .header("x-code2des-dev-sub", sub)
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
    }
}

/// Without the variables that would point a command elsewhere than the test's own stack.
fn clean_env(cmd: &mut Command) -> &mut Command {
    cmd.env_remove("S3_ENDPOINT").env_remove("WEBHOOK_SECRET").env_remove("CALLBACK_URL").env_remove("RUST_LOG")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// stdout of a `--json` run: exactly one line, one object, exactly the four members.
fn the_one_object(out: &Output) -> Value {
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "one line: {stdout}\n{}", text(&out.stderr));
    let v: Value = serde_json::from_str(lines[0]).expect("a JSON object");
    let mut members: Vec<&str> = v.as_object().expect("an object").keys().map(String::as_str).collect();
    members.sort_unstable();
    assert_eq!(members, ["code2desId", "preview", "resultCurl", "status"], "{v}");
    v
}

/// The jobs' path, `/organizations/{o}/projects/{p}/code2des`, of the URL in a `resultCurl`.
fn base_of(curl: &str) -> String {
    let start = curl.find("/organizations/").expect("the URL of the result");
    let end = curl[start..].find("/code2des/").expect("…/code2des/{id}/result") + start;
    format!("{}/code2des", &curl[start..end])
}

#[tokio::test]
async fn import_converts_a_real_page_and_the_plugin_lists_it_for_the_member() {
    let stack = Stack::start(true).await;

    // The usual way: a member seeded (whose settings the plugin took), then their own page.
    let seeded = stack.run(&["seed", "--sub", "designer", "--json"]);
    assert!(seeded.status.success(), "{}", text(&seeded.stderr));
    let settings: Value = serde_json::from_slice(&seeded.stdout).unwrap();

    let page = real_page();
    let started = Instant::now();
    let out = stack.run(&["import", page.to_str().unwrap(), "--sub", "designer", "--json"]);
    let took = started.elapsed();
    assert!(out.status.success(), "{}\n{}", text(&out.stdout), text(&out.stderr));
    eprintln!("import of {} to completed: {took:.1?} (Chromium's first start included)", page.display());
    let v = the_one_object(&out);
    assert_eq!(v["status"], "completed", "{v}");
    let preview = std::path::PathBuf::from(v["preview"].as_str().expect("the preview's path"));
    let id = v["code2desId"].as_str().unwrap().to_owned();
    let curl = v["resultCurl"].as_str().unwrap();
    assert!(curl.starts_with("curl ") && curl.contains("authorization: Bearer ") && curl.ends_with("/result'"));

    // The job is in the project the seed gave this member, where the plugin's settings point.
    let base = base_of(curl);
    assert!(settings["baseUrl"].as_str().unwrap().ends_with(&base), "{base} vs {settings}");
    let (s, job) = stack.get("designer", &format!("{base}/{id}")).await;
    assert_eq!((s, job["status"].as_str()), (200, Some("completed")), "{job}");
    assert_eq!(job["screenId"], "python-annotations");
    assert_eq!(job["figmaFileKey"], code2des_local::seed::DEV_FILE_KEY);

    // The plugin's list: by member and file.
    let list = format!("{base}?figmaFileKey={}", code2des_local::seed::DEV_FILE_KEY);
    let (s, listed) = stack.get("designer", &list).await;
    assert_eq!(s, 200);
    let ids: Vec<&str> = listed["items"].as_array().unwrap().iter().filter_map(|j| j["code2desId"].as_str()).collect();
    assert_eq!(ids, [id.as_str()], "{listed}");
    let (s, _) = stack.get("someone-else", &list).await;
    assert_eq!(s, 404, "another member does not see the project");

    // The printed curl is the result route, as printed: the real page converted, not a canned
    // frame (its root is named after the page's title).
    let fetched = Command::new("sh").args(["-c", curl]).output().unwrap();
    let result: Value = serde_json::from_slice(&fetched.stdout).expect("the result as JSON");
    assert_eq!(result["kind"], "result");
    assert_eq!(result["code2desId"], id.as_str());
    let name = result["document"]["name"].as_str().unwrap_or_default();
    assert!(name.contains("Annotations Best Practices"), "{name}");

    // The result JSON is written beside the preview, and it is the result; the preview is the
    // page drawn at its size, and the result names the worker's small one.
    let file = stack.data_dir().join("imports").join(&id).join("result.json");
    let written: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(written["document"], result["document"]);
    assert_eq!(preview, file.with_file_name("preview.png"));
    let size = imagesize::size(&preview).expect("a picture");
    let doc_size = |k: &str| result["document"][k].as_f64().unwrap().round() as usize;
    assert_eq!((size.width, size.height), (doc_size("width"), doc_size("height")));
    let small = result["preview"].as_str().expect("the result's small preview");
    assert_eq!(result["images"][small]["mimeType"], "image/png");
}

#[tokio::test]
async fn a_new_member_gets_a_tenant_and_the_text_output_names_everything() {
    let stack = Stack::start(true).await;
    let page = real_page();
    // With two viewports (issue 40 item 3): passed to the trigger, a frame per width in the result.
    let out = stack.run(&[
        "import",
        page.to_str().unwrap(),
        "--sub",
        "newcomer",
        "--figma-file-key",
        "MyFileKey",
        "--viewports",
        "1440,390",
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    let line = |name: &str| {
        stdout
            .lines()
            .find_map(|l| l.split_once(' ').filter(|(first, _)| *first == name).map(|(_, rest)| rest.trim()))
            .unwrap_or_else(|| panic!("no {name} line: {stdout}"))
            .to_owned()
    };
    let id = line("code2desId");
    assert!(line("status").starts_with("completed"), "{stdout}");
    let preview = line("preview");
    assert!(preview.ends_with("/preview.png") && Path::new(&preview).is_file(), "the preview's path: {stdout}");
    assert!(line("resultCurl").ends_with(&format!("/{id}/result'")), "{stdout}");
    let result = line("result");
    assert!(Path::new(&result).is_file(), "{result}");
    let written: Value = serde_json::from_slice(&std::fs::read(&result).unwrap()).unwrap();
    let frames: Vec<(&str, f64)> = written["document"]["children"]
        .as_array()
        .expect("the root's frames")
        .iter()
        .map(|f| (f["name"].as_str().unwrap(), f["width"].as_f64().unwrap()))
        .collect();
    assert_eq!(frames, [("Desktop · 1440", 1440.0), ("Mobile · 390", 390.0)]);
    assert!(stdout.contains("MyFileKey"), "the file key the plugin lists it by: {stdout}");
    // The plugin settings for the fresh tenant, as seed --json gives them.
    let settings: Value =
        serde_json::from_str(stdout.lines().map(str::trim).find(|l| l.starts_with('{')).expect("the settings line"))
            .unwrap();
    assert_eq!(settings["sub"], "newcomer");
    let base = settings["baseUrl"].as_str().unwrap();
    let base = &base[base.find("/organizations/").unwrap()..];
    let (s, listed) = stack.get("newcomer", &format!("{base}?figmaFileKey=MyFileKey")).await;
    assert_eq!(s, 200);
    assert_eq!(listed["items"][0]["code2desId"], id.as_str(), "{listed}");
}

#[tokio::test]
async fn without_a_worker_the_wait_ends_at_its_bound_and_says_so() {
    let stack = Stack::start(false).await;
    let page = real_page();
    let started = Instant::now();
    let out = stack.run(&["import", page.to_str().unwrap(), "--sub", "waiter", "--wait", "2", "--json"]);
    let took = started.elapsed();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(took < Duration::from_secs(30), "bounded: {took:?}");
    let v = the_one_object(&out);
    assert_eq!((v["status"].as_str(), &v["preview"]), (Some("processing"), &Value::Null));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("still processing after 2 s") && stderr.contains("--demo-worker"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// Everything an import could create: its database, its data directory.
struct Untouched {
    db: String,
    dir: tempfile::TempDir,
}

impl Untouched {
    fn new() -> Self {
        Self { db: unique_name("c2d_import_refused"), dir: tempfile::tempdir().unwrap() }
    }

    fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// `import ARGS` against a stack that may not be there: a refusal comes first.
    fn import(&self, addr: &str, args: &[&str]) -> Output {
        let mut cmd = Command::new(EXE);
        cmd.args(["--addr", addr, "--s3-addr", &format!("127.0.0.1:{}", free_port())])
            .args(["--data-dir".as_ref(), self.data_dir().as_os_str()])
            .arg("import")
            .args(args);
        clean_env(&mut cmd).env("DATABASE_URL", db_url(&self.db)).output().unwrap()
    }

    async fn assert_nothing_created(&self) {
        assert!(!self.data_dir().exists(), "no data directory was made");
        let (c, conn) =
            tokio_postgres::connect(&code2des_testkit::db::admin_url(), tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(conn);
        let n: i64 = c
            .query_one("SELECT count(*) FROM pg_database WHERE datname = $1", &[&self.db])
            .await
            .unwrap()
            .try_get(0)
            .unwrap();
        assert_eq!(n, 0, "no database was created");
    }
}

#[tokio::test]
async fn bad_files_and_flags_are_refused_before_anything_is_created() {
    let stack = Stack::start(true).await;
    let addr = format!("127.0.0.1:{}", stack.port);
    let files = tempfile::tempdir().unwrap();
    let put = |name: &str, bytes: &[u8]| {
        let p = files.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        p.to_str().unwrap().to_owned()
    };
    let json_file = put("page.json", b"{\"not\":\"a page\"}");
    let not_html = put("notes.html", b"just some text, no markup");
    let empty = put("empty.mhtml", b"");
    let huge = files.path().join("huge.html");
    // Sparse: one byte over the limit costs no disk.
    std::fs::File::create(&huge).unwrap().set_len(code2des_local::import::MAX_CAPTURE_BYTES + 1).unwrap();
    let huge = huge.to_str().unwrap().to_owned();
    let missing = files.path().join("missing.html").to_str().unwrap().to_owned();
    let page = real_page().to_str().unwrap().to_owned();

    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec![&json_file], "not a saved page: import takes an .html file"),
        (vec![&not_html], "the capture is not an HTML page or an MHTML archive"),
        (vec![&empty], "the capture is empty"),
        (vec![&huge], "over the 50 MB a capture may be"),
        (vec![&missing], "cannot read"),
        // The flag is passed on to the trigger (issue 40 item 3); bad widths are refused here.
        (vec![&page, "--viewports", "1440,100"], "--viewports: 100 is outside 320-2560 px"),
        (vec![&page, "--viewports", "390,390"], "--viewports: 390 is given twice"),
        (vec![&page, "--viewports", "1440,390,768,1024,320"], "--viewports: 5 widths, at most 4"),
        (vec![&page, "--sub", ""], "--sub must be 1-50 characters"),
        (vec![&page, "--wait", "0"], "--wait must be at least 1 second"),
    ];
    for (args, says) in cases {
        let u = Untouched::new();
        let out = u.import(&addr, &args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.starts_with("code2des-local import: ") && stderr.contains(says), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert!(out.stdout.is_empty(), "{args:?}: nothing on stdout");
        u.assert_nothing_created().await;
    }

    // A good page with no stack at --addr: said, and nothing made either.
    let u = Untouched::new();
    let out = u.import(&format!("127.0.0.1:{}", free_port()), &[&page]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("nothing answers at") && stderr.contains("--demo-worker"), "{stderr}");
    u.assert_nothing_created().await;

    // A good page and the stack answering, but another database than the stack's: said, and the
    // database is not created (its rows would be ones the stack never reads).
    let u = Untouched::new();
    let out = u.import(&addr, &[&page]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("give import the stack's own DATABASE_URL"), "{stderr}");
    u.assert_nothing_created().await;

    // And the running stack was not touched by any of it: no tenant, no capture.
    let (c, conn) = tokio_postgres::connect(&db_url(&stack.db.0), tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(conn);
    for table in ["organization_member", "page_import", "code2des"] {
        let rows: i64 = c.query_one(&format!("SELECT count(*) FROM {table}"), &[]).await.unwrap().try_get(0).unwrap();
        assert_eq!(rows, 0, "{table}");
    }
    assert!(!stack.data_dir().join(code2des_local::stack::DEFAULT_BUCKET).join("captures").exists());
}
