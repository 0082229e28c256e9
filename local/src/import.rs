//! `code2des-local import PAGE.html|PAGE.mhtml`: someone's own saved page converted by the
//! running stack, the way the plugin would have it converted (issue 40 item 1).
//!
//! In three steps, so that a bad input touches nothing: [`plan`] checks the flags and the file
//! (no side effect), [`probe`] checks that the stack answers at `--addr`, and [`run`] stores
//! the capture where the stack's S3 serves it, gives the member a completed page import (a
//! fresh tenant for a new `--sub`, through the seed's own code), triggers a job through the
//! real HTTP API with the member's bearer token, waits for its end within a bound, and writes
//! the result where its preview goes.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::seed;
use crate::stack::{self, Config};

/// A capture's size limit: the worker refuses anything larger (docs: the manifest's capture_url).
pub const MAX_CAPTURE_BYTES: u64 = code2des_convert::capture::MAX_CAPTURE_BYTES as u64;

/// The extensions a saved page has: HTML as SingleFile or "Save as… Webpage, Single File" save
/// it, MHTML as Chromium saves it (`.mht` is the older name of the same archive format).
const EXTENSIONS: [(&str, Format); 4] =
    [("html", Format::Html), ("htm", Format::Html), ("mhtml", Format::Mhtml), ("mht", Format::Mhtml)];

/// The wait when `--wait` is not given: Chromium's first start (the demo worker starts it at
/// its first job) takes up to a minute on a busy 2-core machine, and a large real page a few
/// seconds more.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(300);

/// How often the job is read while it runs. Faster than the `Retry-After: 2` a plugin honours:
/// this is one command against a stack on the same machine, and the wait is what its user sees.
const POLL_EVERY: Duration = Duration::from_millis(500);

/// Every request to the stack answers within its 28 s budget (README, "Every request has a
/// time budget"); a little more, so that its own 503 arrives rather than our timeout.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(35);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Html,
    Mhtml,
}

impl Format {
    fn extension(self) -> &'static str {
        match self {
            Format::Html => "html",
            Format::Mhtml => "mhtml",
        }
    }
}

/// The command line of `import`, as given.
#[derive(Debug, Clone)]
pub struct Options {
    pub page: PathBuf,
    pub sub: Option<String>,
    pub viewports: Option<String>,
    pub figma_file_key: String,
    pub wait: Duration,
    pub json: bool,
}

/// What `import` will do, every input checked.
#[derive(Debug)]
pub struct Plan {
    page: PathBuf,
    bytes: Vec<u8>,
    format: Format,
    sub: String,
    viewports: Option<Vec<u32>>,
    figma_file_key: String,
    screen_id: String,
    wait: Duration,
    json: bool,
}

/// Checks every input and reads the page, creating nothing: a refusal here leaves the stack,
/// the database and the data directory as they were.
pub fn plan(o: Options) -> Result<Plan, String> {
    let sub = o.sub.unwrap_or_else(seed::fresh_sub);
    if shared::domain::ids::Subject::parse(&sub).is_none() {
        return Err("--sub must be 1-50 characters with no control character".into());
    }
    if !text_ok(&o.figma_file_key) {
        return Err("--figma-file-key must be 1-255 characters with no control character".into());
    }
    if o.wait.is_zero() {
        return Err("--wait must be at least 1 second".into());
    }
    let viewports = o.viewports.as_deref().map(parse_viewports).transpose()?;
    let (bytes, format) = read_capture(&o.page)?;
    Ok(Plan {
        screen_id: screen_id(&o.page),
        page: o.page,
        bytes,
        format,
        sub,
        viewports,
        figma_file_key: o.figma_file_key,
        wait: o.wait,
        json: o.json,
    })
}

/// The trigger's rule for a text member (openapi.yaml's `Text`).
fn text_ok(s: &str) -> bool {
    (1..=255).contains(&s.chars().count()) && !s.chars().any(char::is_control)
}

/// `1440,390`: 1 to 4 widths, each 320 to 2560 px, no two equal, in the order given (the
/// frames' order, left to right): the trigger's own rule
/// (`shared::domain::protocol::viewports_fault`), checked here so that a bad flag touches nothing.
pub fn parse_viewports(text: &str) -> Result<Vec<u32>, String> {
    let widths = text
        .split(',')
        .map(|w| {
            let w = w.trim();
            w.parse::<u32>().map_err(|_| format!("--viewports: {w:?} is not a width in pixels (say 1440,390)"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    match shared::domain::protocol::viewports_fault(&widths) {
        Some(fault) => Err(format!("--viewports: {fault}")),
        None => Ok(widths),
    }
}

/// The page's bytes and kind, refused with a message naming the file when it is not one
/// self-contained HTML page or MHTML archive of at most 50 MB: the same check the worker makes
/// (`code2des_convert::capture::load`), made before anything is stored.
fn read_capture(path: &Path) -> Result<(Vec<u8>, Format), String> {
    let shown = path.display();
    let ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).unwrap_or_default();
    let Some(&(_, format)) = EXTENSIONS.iter().find(|(e, _)| *e == ext) else {
        return Err(format!(
            "{shown}: not a saved page: import takes an .html file (one self-contained page, as SingleFile saves \
             it) or an .mhtml archive (as Chromium's \"Save page as… Webpage, Single File\" saves it)"
        ));
    };
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot read {shown}: {e}"))?;
    if !meta.is_file() {
        return Err(format!("{shown} is not a file"));
    }
    // Refused from its size alone, before it is read into memory.
    if meta.len() > MAX_CAPTURE_BYTES {
        return Err(format!(
            "{shown} is {:.1} MB, over the 50 MB a capture may be (the worker refuses larger ones)",
            meta.len() as f64 / (1024.0 * 1024.0)
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {shown}: {e}"))?;
    code2des_convert::capture::load(&bytes).map_err(|e| format!("{shown}: {e}"))?;
    Ok((bytes, format))
}

/// The job's screen id: the page's file name without its extension, as the trigger's text rule
/// allows it (control characters dropped, at most 255 characters).
fn screen_id(path: &Path) -> String {
    let stem = path.file_stem().map(|s| s.to_string_lossy()).unwrap_or_default();
    let id: String = stem.chars().filter(|c| !c.is_control()).take(255).collect();
    if id.is_empty() {
        "page".to_owned()
    } else {
        id
    }
}

fn http() -> Result<reqwest::Client, String> {
    reqwest::Client::builder().timeout(REQUEST_TIMEOUT).build().map_err(|e| e.to_string())
}

/// Checks that code2des-local answers at `addr` before anything is stored: a request without
/// identity must get the gateway's 401 `unauthorized`.
pub async fn probe(addr: SocketAddr) -> Result<(), String> {
    let url = format!("http://{addr}/organizations/1/projects/1/code2des");
    let resp = http()?.get(&url).send().await.map_err(|e| {
        format!(
            "nothing answers at http://{addr} ({}): start the stack first, `cargo run -p code2des-local -- \
             --demo-worker`, or give its address with --addr",
            shared::error::chain(&e)
        )
    })?;
    let status = resp.status().as_u16();
    let body: Value = resp.json().await.unwrap_or(Value::Null);
    if status == 401 && body["error"]["code"] == "unauthorized" {
        return Ok(());
    }
    Err(format!(
        "http://{addr} answers, but not as code2des-local does (HTTP {status} to a request without identity): \
         give the stack's address with --addr"
    ))
}

/// How a job ended, or that it had not ended by the bound.
enum End {
    Completed,
    Failed(String),
    StillProcessing,
}

/// What the command prints: `--json`'s object, or the same as lines.
struct Outcome {
    code2des_id: String,
    status: String,
    result_curl: String,
    preview: Option<PathBuf>,
    /// The result JSON, written beside where the preview goes (text output only).
    result_file: Option<PathBuf>,
    /// From the trigger to the job's end, or to the bound (text output only).
    took: Duration,
}

impl Outcome {
    fn json(&self) -> Value {
        json!({
            "code2desId": self.code2des_id,
            "status": self.status,
            "resultCurl": self.result_curl,
            "preview": self.preview.as_ref().map(|p| p.display().to_string()),
        })
    }
}

/// Stores the capture, makes the page import, triggers the job and waits for its end. Answers
/// an error (after printing what there is to print) unless the job completed.
pub async fn run(cfg: &Config, plan: Plan) -> Result<(), String> {
    // The stack's database, as it is: created and migrated by the stack, never by an import (a
    // database made here, at another DATABASE_URL, would hold rows that stack never reads).
    let db = shared::db::connect::DbConfig::from_url(&cfg.database_url).map_err(|e| format!("DATABASE_URL: {e}"))?;
    let client = shared::db::connect::connect(&db, None).await.map_err(|e| {
        format!(
            "cannot reach the stack's database ({}): give import the stack's own DATABASE_URL",
            shared::error::chain(&*e)
        )
    })?;
    let page_import = format!("page-import-{}", uuid::Uuid::now_v7());
    let key = format!("captures/imports/{page_import}.{}", plan.format.extension());
    let capture_url = store(cfg, &key, &plan.bytes).await?;
    let tenant = member_tenant(&client, &plan.sub, &page_import, &capture_url).await?;
    let token = crate::identity::local_token(&tenant.sub);
    let base = seed::base_url(cfg.addr, tenant.org, tenant.project);
    if !plan.json {
        println!(
            "Imported {} ({} KB) as page import {page_import}: organization {}, project {}, member {}",
            plan.page.display(),
            plan.bytes.len().div_ceil(1024),
            tenant.org,
            tenant.project,
            tenant.sub
        );
    }
    let http = http()?;
    let started = Instant::now();
    let id = trigger(&http, &base, &token, &plan, &page_import).await?;
    let item = format!("{base}/{id}");
    if !plan.json {
        println!("Triggered job {id} for Figma file {}; waiting up to {} s", plan.figma_file_key, plan.wait.as_secs());
    }
    let end = wait(&http, &item, &token, plan.wait, !plan.json).await?;
    let took = started.elapsed();
    let out_dir = absolute(&cfg.data_dir).join("imports").join(&id);
    let mut outcome = Outcome {
        code2des_id: id.clone(),
        status: match &end {
            End::Completed => "completed",
            End::Failed(_) => "failed",
            End::StillProcessing => "processing",
        }
        .to_owned(),
        result_curl: format!("curl -s -H 'authorization: Bearer {token}' '{item}/result'"),
        preview: None,
        result_file: None,
        took,
    };
    if matches!(end, End::Completed) {
        let result = fetch_result(&http, &item, &token).await?;
        std::fs::create_dir_all(&out_dir).map_err(|e| format!("{}: {e}", out_dir.display()))?;
        let path = out_dir.join("result.json");
        let text = serde_json::to_vec(&result).map_err(|e| e.to_string())?;
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
        outcome.preview = preview(&path, &out_dir).await;
        outcome.result_file = Some(path);
    }
    if plan.json {
        println!("{}", outcome.json());
    } else {
        print_text(&outcome, &plan, cfg.addr, &tenant, &base, &token);
    }
    match end {
        End::Completed => Ok(()),
        End::Failed(message) => Err(format!("the job {id} failed: {message}")),
        End::StillProcessing => Err(format!(
            "the job {id} is still processing after {} s (--wait): is a worker running? Start the stack with \
             --demo-worker, or run `cargo run -p code2des-worker -- poll` beside it (README, \"The worker protocol \
             and the reference worker\"); follow the job with: curl -s -H 'authorization: Bearer {token}' '{item}'",
            plan.wait.as_secs()
        )),
    }
}

/// Draws the result at `result` (the result route's answer, its images inlined) as the plugin
/// would build it, as `dir/preview.png` (what `code2des-worker preview result.json --out
/// preview.png` draws): at full size, or small (480 px wide) for a page too large for that.
/// Answers its path; `None`, with the reason on stderr, when it could not be drawn (the result
/// is still there).
async fn preview(result: &Path, dir: &Path) -> Option<PathBuf> {
    use code2des_worker::preview;
    let (result, path) = (result.to_owned(), dir.join("preview.png"));
    let drawn = tokio::task::spawn_blocking(move || -> Result<PathBuf, preview::PreviewError> {
        let page = preview::read::read(&result, None)?;
        let tree = preview::tree(&preview::svg(&page).0)?;
        let png = match preview::full(&tree) {
            Ok(png) => png,
            Err(preview::PreviewError::Render(_)) => preview::small::small(&tree)?,
            Err(e) => return Err(e),
        };
        std::fs::write(&path, png).map_err(|e| preview::PreviewError::Input(format!("{}: {e}", path.display())))?;
        Ok(path)
    })
    .await;
    match drawn {
        Ok(Ok(path)) => Some(path),
        Ok(Err(e)) => {
            eprintln!("no preview: {e}");
            None
        }
        Err(e) => {
            eprintln!("no preview: {e}");
            None
        }
    }
}

fn print_text(o: &Outcome, plan: &Plan, addr: SocketAddr, tenant: &seed::Tenant, base: &str, token: &str) {
    println!();
    println!("code2desId  {}", o.code2des_id);
    println!("status      {} ({:.1} s after the trigger)", o.status, o.took.as_secs_f64());
    println!("resultCurl  {}", o.result_curl);
    match (&o.preview, &o.result_file) {
        (Some(p), _) => println!("preview     {}", p.display()),
        (None, Some(_)) => println!("preview     none (it could not be drawn: the reason is above)"),
        (None, None) => println!("preview     none (the job did not complete)"),
    }
    if let Some(f) = &o.result_file {
        println!("result      {}", f.display());
    }
    println!();
    println!(
        "The plugin lists it in the Figma file whose key is {} (give yours with --figma-file-key), for member {}:",
        plan.figma_file_key, tenant.sub
    );
    let key: String =
        percent_encoding::utf8_percent_encode(&plan.figma_file_key, percent_encoding::NON_ALPHANUMERIC).to_string();
    println!("  curl -s -H 'authorization: Bearer {token}' '{base}?figmaFileKey={key}'");
    println!("Its settings (paste them into the plugin once):");
    println!("  {}", Value::Object(seed::plugin_settings(addr, tenant)));
}

fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_owned())
}

/// Puts the capture where the stack's S3 serves it, and checks that it does serve it there
/// before any row names it: an import given another `--data-dir` (or `--s3-addr`) than its
/// stack's would otherwise make a job that fails for a missing capture. Answers the capture URL.
async fn store(cfg: &Config, key: &str, bytes: &[u8]) -> Result<String, String> {
    let (endpoint, external) = cfg.s3_endpoint();
    let (access, secret) = stack::s3_keys(external);
    let s3 = crate::s3server::client(&endpoint, &access, &secret);
    let bucket = cfg.bucket();
    let url = if external {
        // An external S3 (S3_ENDPOINT) keeps its objects where only its own API reaches them.
        s3.put_object()
            .bucket(bucket)
            .key(key)
            .body(bytes.to_vec().into())
            .send()
            .await
            .map_err(|e| format!("cannot store the capture at {endpoint}: {}", shared::error::chain(&e)))?;
        format!("s3://{bucket}/{key}")
    } else {
        seed::put_capture(&cfg.data_dir, bucket, key, bytes)?
    };
    match s3.head_object().bucket(bucket).key(key).send().await {
        Ok(h) if h.content_length() == Some(bytes.len() as i64) => Ok(url),
        outcome => {
            let why = match outcome {
                Ok(h) => format!("it has {:?} bytes, not {}", h.content_length(), bytes.len()),
                Err(e) => shared::error::chain(&e),
            };
            if !external {
                // Nothing serves that file: it would only be left behind.
                let _ = std::fs::remove_file(cfg.data_dir.join(bucket).join(key));
            }
            Err(format!(
                "the stack's S3 at {endpoint} does not serve the capture just written to {} ({why}): give import \
                 the stack's own --data-dir and --s3-addr",
                if external { endpoint.clone() } else { absolute(&cfg.data_dir).display().to_string() }
            ))
        }
    }
}

/// The member's tenant with page import `page_import` added to it: the newest project of an
/// existing member (where their `seed` put them, so a plugin set up from it lists the job), or a
/// fresh organization, project and membership made by the seed's own [`seed::tenant`].
async fn member_tenant(
    c: &tokio_postgres::Client,
    sub: &str,
    page_import: &str,
    capture_url: &str,
) -> Result<seed::Tenant, String> {
    if let Some((org, project)) = seed::member_project(c, sub).await? {
        seed::add_page_import(c, org, project, page_import, capture_url).await?;
        return Ok(seed::Tenant { org, project, sub: sub.to_owned(), page_import: page_import.to_owned() });
    }
    seed::tenant(c, &format!("{sub}'s organization"), sub, page_import, "1", Some(capture_url))
        .await
        .map_err(|e| shared::error::chain(&e))
}

/// The stack's error body as one line: `code: message`.
fn api_error(status: u16, body: &Value) -> String {
    match (body["error"]["code"].as_str(), body["error"]["message"].as_str()) {
        (Some(code), Some(message)) => format!("HTTP {status} {code}: {message}"),
        _ => format!("HTTP {status} {body}"),
    }
}

/// POSTs the trigger as the plugin does (bearer token, an Idempotency-Key) and answers the id.
async fn trigger(
    http: &reqwest::Client,
    base: &str,
    token: &str,
    plan: &Plan,
    page_import: &str,
) -> Result<String, String> {
    let mut body = json!({
        "pageImportId": page_import,
        "figmaFileKey": plan.figma_file_key,
        "screenId": plan.screen_id,
    });
    if let Some(widths) = &plan.viewports {
        body["viewports"] = json!(widths);
    }
    let resp = http
        .post(base)
        .bearer_auth(token)
        .header("idempotency-key", uuid::Uuid::new_v4().to_string())
        .json(&body)
        .send()
        .await
        .map_err(|e| format!("the trigger did not answer: {}", shared::error::chain(&e)))?;
    let status = resp.status().as_u16();
    let job: Value = resp.json().await.unwrap_or(Value::Null);
    if status != 202 {
        let hint = if matches!(status, 403 | 404) {
            " (does the stack use the same DATABASE_URL as this command?)"
        } else {
            ""
        };
        return Err(format!("the trigger refused the job: {}{hint}", api_error(status, &job)));
    }
    job["code2desId"].as_str().map(str::to_owned).ok_or_else(|| format!("the trigger answered no code2desId: {job}"))
}

/// Reads the job until it leaves `processing`, or `bound` has passed. With `say`, each new
/// progress report is told on stderr.
async fn wait(http: &reqwest::Client, item: &str, token: &str, bound: Duration, say: bool) -> Result<End, String> {
    let deadline = Instant::now() + bound;
    let mut last = Value::Null;
    loop {
        let resp = http
            .get(item)
            .bearer_auth(token)
            .send()
            .await
            .map_err(|e| format!("the job's GET did not answer: {}", shared::error::chain(&e)))?;
        let status = resp.status().as_u16();
        let job: Value = resp.json().await.unwrap_or(Value::Null);
        if status == 503 && Instant::now() < deadline {
            // A dependency was slow (README, "Every request has a time budget"): asked again,
            // within the same bound.
            tokio::time::sleep(POLL_EVERY).await;
            continue;
        }
        if status != 200 {
            return Err(format!("the job's GET answered {}", api_error(status, &job)));
        }
        if say && job["progress"] != last && !job["progress"].is_null() {
            let p = &job["progress"];
            eprintln!("  {}% {}", p["percent"], p["stage"].as_str().unwrap_or(""));
            last = job["progress"].clone();
        }
        match job["status"].as_str() {
            Some("completed") => return Ok(End::Completed),
            Some("failed") => {
                return Ok(End::Failed(job["errorMessage"].as_str().unwrap_or("no message").to_owned()));
            }
            _ if Instant::now() >= deadline => return Ok(End::StillProcessing),
            _ => tokio::time::sleep(POLL_EVERY).await,
        }
    }
}

/// The completed job's result as the plugin gets it, with the images the first answer deferred
/// (over its byte budget) fetched with `?images=` and merged in, so the file is the whole
/// result a preview is drawn from. Refs still deferred after a round that brought none stay
/// listed in `deferredImages`.
async fn fetch_result(http: &reqwest::Client, item: &str, token: &str) -> Result<Value, String> {
    let url = format!("{item}/result");
    let mut result = get_json(http, &url, token).await?;
    // Each round brings at least one image or ends: at most one round per deferred image.
    let mut rounds = result["deferredImages"].as_array().map_or(0, Vec::len);
    while rounds > 0 {
        rounds -= 1;
        let deferred: Vec<String> = result["deferredImages"]
            .as_array()
            .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect())
            .unwrap_or_default();
        if deferred.is_empty() {
            break;
        }
        // A bounded query string: 32 refs a request.
        let asked: Vec<&str> = deferred.iter().take(32).map(String::as_str).collect();
        let query: Vec<String> = asked
            .iter()
            .map(|r| percent_encoding::utf8_percent_encode(r, percent_encoding::NON_ALPHANUMERIC).to_string())
            .collect();
        let more = get_json(http, &format!("{url}?images={}", query.join(",")), token).await?;
        let got = more["images"].as_object().cloned().unwrap_or_default();
        if got.is_empty() {
            break;
        }
        if let Some(images) = result["images"].as_object_mut() {
            images.extend(got.clone());
        }
        let left: Vec<Value> = deferred.into_iter().filter(|r| !got.contains_key(r)).map(Value::from).collect();
        result["deferredImages"] = Value::Array(left);
    }
    Ok(result)
}

async fn get_json(http: &reqwest::Client, url: &str, token: &str) -> Result<Value, String> {
    let resp = http
        .get(url)
        .bearer_auth(token)
        .send()
        .await
        .map_err(|e| format!("GET {url} did not answer: {}", shared::error::chain(&e)))?;
    let status = resp.status().as_u16();
    let body: Value = resp.json().await.map_err(|e| format!("GET {url}: HTTP {status}, not JSON: {e}"))?;
    if status != 200 {
        return Err(format!("GET {url}: {}", api_error(status, &body)));
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn viewports_are_one_to_four_widths_of_320_to_2560() {
        assert_eq!(parse_viewports("1440,390").unwrap(), [1440, 390]);
        assert_eq!(parse_viewports(" 320 ").unwrap(), [320]);
        assert_eq!(parse_viewports("2560,1440,768,390").unwrap(), [2560, 1440, 768, 390]);
        for (bad, says) in [
            ("", "is not a width"),
            ("1440,", "is not a width"),
            ("wide", "is not a width"),
            ("-390", "is not a width"),
            ("319", "outside 320-2560"),
            ("2561", "outside 320-2560"),
            ("400,400,400,400,400", "at most 4"),
            ("1440,390,1440", "1440 is given twice"),
        ] {
            let e = parse_viewports(bad).unwrap_err();
            assert!(e.starts_with("--viewports") && e.contains(says), "{bad:?}: {e}");
        }
    }

    #[test]
    fn screen_ids_are_the_file_name_as_the_trigger_takes_it() {
        assert_eq!(screen_id(Path::new("/a/b/python-annotations.html")), "python-annotations");
        assert_eq!(screen_id(Path::new("x\u{7}y.mhtml")), "xy");
        assert_eq!(screen_id(Path::new(&format!("{}.html", "n".repeat(300)))).chars().count(), 255);
        assert_eq!(screen_id(Path::new(".html")), ".html");
    }
}
