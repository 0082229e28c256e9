//! Data for the demo, the tests and the benchmarks: plain-SQL seeding of the tables the feature
//! depends on (owned elsewhere in the product, so SPEC section 2 lets tests and fixtures insert
//! them directly), and real PNG images of any size.

/// What [`tenant`] created.
#[derive(Debug, Clone)]
pub struct Tenant {
    pub org: i32,
    pub project: i32,
    pub sub: String,
    pub page_import: String,
}

/// An organization named `name` with one project, `sub` as its member, and a page import
/// `page_import` of status `page_status` ('0' processing, '1' completed, '2' failed).
pub async fn tenant(
    c: &tokio_postgres::Client,
    name: &str,
    sub: &str,
    page_import: &str,
    page_status: &str,
    capture_url: Option<&str>,
) -> Result<Tenant, tokio_postgres::Error> {
    let org: i32 =
        c.query_one("INSERT INTO organization (name) VALUES ($1) RETURNING id", &[&name]).await?.try_get(0)?;
    let project: i32 = c
        .query_one("INSERT INTO project (organization_id, name) VALUES ($1, $2) RETURNING id", &[&org, &name])
        .await?
        .try_get(0)?;
    c.execute("INSERT INTO organization_member (organization_id, subject) VALUES ($1, $2)", &[&org, &sub]).await?;
    c.execute(
        "INSERT INTO page_import (id, organization_id, project_id, status, capture_url) \
         VALUES ($1, $2, $3, $4::text::page_import_status, $5)",
        &[&page_import, &org, &project, &page_status, &capture_url],
    )
    .await?;
    Ok(Tenant { org, project, sub: sub.to_owned(), page_import: page_import.to_owned() })
}

/// The sample captures (samples/ in the repository), by name.
pub const SAMPLES: [(&str, &[u8]); 3] = [
    ("landing", include_bytes!("../../samples/landing.html")),
    ("article", include_bytes!("../../samples/article.html")),
    ("form", include_bytes!("../../samples/form.html")),
];

/// Where a sample capture sits in the artifact bucket.
pub fn sample_key(name: &str) -> String {
    format!("captures/samples/{name}.html")
}

/// Writes sample capture `name` (one of [`SAMPLES`]) where the local stack's S3 serves it
/// ([`put_capture`]). Answers its `s3://` URL, a page import's capture_url.
pub fn put_sample(data_dir: &std::path::Path, bucket: &str, name: &str) -> Result<String, String> {
    let (_, bytes) = SAMPLES.iter().find(|(n, _)| *n == name).ok_or_else(|| format!("no sample {name:?}"))?;
    put_capture(data_dir, bucket, &sample_key(name), bytes)
}

/// Writes a capture at `key` where the local stack's embedded S3 serves it: its objects are
/// files under the data directory, `{data_dir}/{bucket}/{key}`, so no S3 client or keys are
/// needed (the samples and `import`'s own page both go this way). Answers its `s3://` URL, a
/// page import's capture_url.
pub fn put_capture(data_dir: &std::path::Path, bucket: &str, key: &str, bytes: &[u8]) -> Result<String, String> {
    let path = data_dir.join(bucket).join(key);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::write(&path, bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(format!("s3://{bucket}/{key}"))
}

/// Adds a completed page import `id` to `org`'s project `project`, its capture at `capture_url`.
pub async fn add_page_import(
    c: &tokio_postgres::Client,
    org: i32,
    project: i32,
    id: &str,
    capture_url: &str,
) -> Result<(), String> {
    c.execute(
        "INSERT INTO page_import (id, organization_id, project_id, status, capture_url) \
         VALUES ($1, $2, $3, '1'::text::page_import_status, $4)",
        &[&id, &org, &project, &capture_url],
    )
    .await
    .map_err(|e| shared::error::chain(&e))?;
    Ok(())
}

/// The newest live project of the newest organization `sub` is a member of, as (organization,
/// project): where the member's last `seed` put its tenant, so what `import` adds there shows
/// in a plugin set up from that seed's settings. `None` for a subject nobody seeded.
pub async fn member_project(c: &tokio_postgres::Client, sub: &str) -> Result<Option<(i32, i32)>, String> {
    let row = c
        .query_opt(
            "SELECT p.organization_id, p.id FROM organization_member m \
             JOIN organization o ON o.id = m.organization_id AND o.deleted_at IS NULL \
             JOIN project p ON p.organization_id = o.id AND p.deleted_at IS NULL \
             WHERE m.subject = $1 ORDER BY o.id DESC, p.id DESC LIMIT 1",
            &[&sub],
        )
        .await
        .map_err(|e| shared::error::chain(&e))?;
    row.map(|r| Ok((r.try_get(0)?, r.try_get(1)?))).transpose().map_err(|e: tokio_postgres::Error| e.to_string())
}

/// A fresh member subject, `dev-…`: what `seed` and `import` use when `--sub` is not given.
pub fn fresh_sub() -> String {
    format!("dev-{}", &uuid::Uuid::now_v7().simple().to_string()[20..])
}

/// Puts the sample captures where the local stack's S3 serves them ([`put_sample`]), and adds a
/// completed page import of `t`'s project for each, named `{page_import}-{sample}`, whose
/// capture_url is that object. Answers (sample, page import).
pub async fn sample_imports(
    c: &tokio_postgres::Client,
    cfg: &crate::stack::Config,
    t: &Tenant,
) -> Result<Vec<(&'static str, String)>, String> {
    let mut out = Vec::new();
    for (name, _) in SAMPLES {
        let url = put_sample(&cfg.data_dir, cfg.bucket(), name)?;
        let id = format!("{}-{name}", t.page_import);
        add_page_import(c, t.org, t.project, &id, &url).await?;
        out.push((name, id));
    }
    Ok(out)
}

/// The Figma file key of the seed's example trigger (and openapi.yaml's, and the events'): the
/// file `import` files its job under unless told another.
pub const DEV_FILE_KEY: &str = "FILEkey123";

/// The jobs' base URL of `org`'s `project` on the stack at `addr`.
pub fn base_url(addr: std::net::SocketAddr, org: i32, project: i32) -> String {
    format!("http://{addr}/organizations/{org}/projects/{project}/code2des")
}

/// What the plugin takes as its settings, pasted once (docs/PLUGIN.md section 3): the stack's
/// base URL, the tenant's ids and a token for its member.
pub fn plugin_settings(addr: std::net::SocketAddr, t: &Tenant) -> serde_json::Map<String, serde_json::Value> {
    let mut m = serde_json::Map::new();
    m.insert("organizationId".into(), t.org.into());
    m.insert("projectId".into(), t.project.into());
    m.insert("pageImportId".into(), t.page_import.as_str().into());
    m.insert("sub".into(), t.sub.as_str().into());
    m.insert("token".into(), crate::identity::local_token(&t.sub).into());
    m.insert("baseUrl".into(), base_url(addr, t.org, t.project).into());
    m
}

/// `code2des-local seed`: creates the database if missing, seeds a tenant with a completed
/// page import for `sub`, and prints what a plugin developer needs to call the local stack.
pub async fn seed_command(
    cfg: &crate::stack::Config,
    sub: Option<String>,
    page_import: Option<String>,
    json: bool,
) -> Result<(), String> {
    let sub = sub.unwrap_or_else(fresh_sub);
    if shared::domain::ids::Subject::parse(&sub).is_none() {
        return Err("--sub must be 1-50 characters with no control character".into());
    }
    let db = crate::stack::prepare_database(&cfg.database_url).await.map_err(|e| e.to_string())?;
    let client = shared::db::connect::connect(&db, None).await.map_err(|e| shared::error::chain(&*e))?;
    let page_import = page_import.unwrap_or_else(|| format!("page-import-{}", uuid::Uuid::now_v7()));
    if shared::domain::ids::PageImportId::parse(&page_import).is_err() {
        return Err("--page-import must be 1-255 characters with no control character".into());
    }
    // The member's page import holds a real capture (the landing sample, written just below by
    // sample_imports): a job needs one, and the reference worker fails a job without it rather
    // than answering a canned document (issue 37).
    let landing = format!("s3://{}/{}", cfg.bucket(), sample_key("landing"));
    let t = tenant(&client, &format!("{sub}'s organization"), &sub, &page_import, "1", Some(&landing))
        .await
        .map_err(|e| shared::error::chain(&e))?;
    // One more page import per sample capture, each converted for real by the reference worker.
    let samples = sample_imports(&client, cfg, &t).await?;
    let token = crate::identity::local_token(&t.sub);
    let base = base_url(cfg.addr, t.org, t.project);
    if json {
        let sample_ids: serde_json::Map<String, serde_json::Value> =
            samples.iter().map(|(n, id)| ((*n).to_owned(), serde_json::Value::from(id.as_str()))).collect();
        let mut out = plugin_settings(cfg.addr, &t);
        out.insert("samplePageImportIds".into(), sample_ids.into());
        println!("{}", serde_json::Value::Object(out));
    } else {
        println!("organizationId  {}", t.org);
        println!("projectId       {}", t.project);
        println!("pageImportId    {}", t.page_import);
        for (name, id) in &samples {
            println!("  {name:<13} {id}  (a sample capture, converted for real)");
        }
        println!("sub             {}", t.sub);
        println!("token           {token}");
        println!();
        println!("The token is read unverified by code2des-local only; a deployed API verifies tokens.");
        println!("Try it (with `cargo run -p code2des-local -- --demo-worker` running):");
        println!("  curl -s -X POST {base} \\");
        println!("    -H 'authorization: Bearer {token}' -H 'content-type: application/json' \\");
        println!(
            "    -d '{{\"pageImportId\":\"{}\",\"figmaFileKey\":\"{DEV_FILE_KEY}\",\"screenId\":\"home\"}}'",
            t.page_import
        );
    }
    Ok(())
}

/// A real RGB PNG of `w`×`h` (the header sides are what Figma's limit is checked against).
/// Pixels are a gradient, or random with `noise` (incompressible: about 3·w·h bytes). The
/// image data is zlib in stored deflate blocks, so no compressor is needed.
pub fn png(w: u32, h: u32, noise: bool) -> Vec<u8> {
    let mut raw = Vec::with_capacity(((w * 3 + 1) * h) as usize);
    for y in 0..h {
        raw.push(0);
        for x in 0..w * 3 {
            raw.push(if noise { rand::random() } else { ((x * 7 + y * 13) % 256) as u8 });
        }
    }
    let mut z = vec![0x78, 0x01];
    let blocks: Vec<&[u8]> = raw.chunks(65535).collect();
    for (i, block) in blocks.iter().enumerate() {
        z.push(u8::from(i + 1 == blocks.len()));
        let len = block.len() as u16;
        z.extend_from_slice(&len.to_le_bytes());
        z.extend_from_slice(&(!len).to_le_bytes());
        z.extend_from_slice(block);
    }
    let (mut a, mut b) = (1u32, 0u32);
    for &byte in &raw {
        a = (a + u32::from(byte)) % 65521;
        b = (b + a) % 65521;
    }
    z.extend_from_slice(&((b << 16) | a).to_be_bytes());
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut chunk = |kind: &[u8], data: &[u8]| {
        out.extend_from_slice(&(data.len() as u32).to_be_bytes());
        out.extend_from_slice(kind);
        out.extend_from_slice(data);
        out.extend_from_slice(&crc32(&[kind, data].concat()).to_be_bytes());
    };
    let mut ihdr = Vec::new();
    ihdr.extend_from_slice(&w.to_be_bytes());
    ihdr.extend_from_slice(&h.to_be_bytes());
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
    chunk(b"IHDR", &ihdr);
    chunk(b"IDAT", &z);
    chunk(b"IEND", b"");
    out
}

fn crc32(data: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

#[cfg(test)]
mod tests {
    #[test]
    fn pngs_are_read_as_pngs_of_their_size() {
        for (w, h, noise) in [(1, 1, false), (8, 8, true), (640, 120, true)] {
            let bytes = super::png(w, h, noise);
            assert_eq!(imagesize::image_type(&bytes).unwrap(), imagesize::ImageType::Png);
            let size = imagesize::blob_size(&bytes).unwrap();
            assert_eq!((size.width, size.height), (w as usize, h as usize));
        }
    }
}
