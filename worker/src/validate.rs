//! `code2des-worker validate <artifact.json> [--images DIR] [--manifest FILE]`: the result
//! route's checks on a local artifact and its images, before production refuses it.
//!
//! The checks are the result route's own functions (`shared::domain::artifact::validate_all`,
//! the same checks as the route's `validate` with every problem reported, `check_image`, and
//! the route's `check_answer`: its answer fits a compressed Lambda response), under the same
//! `Limits`; only the reading differs: files instead of S3 objects.
//!
//! What the artifact must agree with comes from `--manifest` (the job's `manifest.json`) when
//! given, else from the artifact itself (its `code2des_id`, `attempt`, `nonce` and `kind`): then
//! only its shape, limits and images are checked. An image's file is found under `--images` by
//! its key without the job's prefix (`code2des/{id}/{attempt}/images/hero.png` →
//! `DIR/images/hero.png`), else by the whole key (`DIR/code2des/{id}/{attempt}/images/hero.png`).

use std::path::{Path, PathBuf};

use serde_json::Value;
use shared::domain::artifact::{self, Expect, Kind, Limits, Problem};
use shared::domain::ids::Code2desId;
use shared::domain::job::Nonce;
use shared::domain::keys::job_prefix;
use shared::domain::protocol::Manifest;
use shared::domain::wire::member;

/// What to validate.
#[derive(Debug, Clone)]
pub struct Options {
    pub artifact: PathBuf,
    pub images: Option<PathBuf>,
    pub manifest: Option<PathBuf>,
}

/// What the checks found: every problem, and what was looked at.
#[derive(Debug, Default)]
pub struct Outcome {
    pub problems: Vec<Problem>,
    /// Images the document uses (each checked when `--images` was given).
    pub images_used: usize,
    pub images_checked: usize,
}

fn problem(path: impl Into<String>, message: impl Into<String>) -> Problem {
    Problem { path: path.into(), message: message.into() }
}

/// Runs the checks; an `Err` is only for what could not be read at all (no artifact file, a
/// manifest that is not one).
pub fn run(opts: &Options, limits: &Limits) -> Result<Outcome, String> {
    let bytes = std::fs::read(&opts.artifact).map_err(|e| format!("{}: {e}", opts.artifact.display()))?;
    let mut out = Outcome::default();
    // The route refuses an artifact over the size limit before reading it (one GET, its size).
    if let Err(reason) = artifact::check_size(bytes.len() as u64, limits) {
        out.problems.push(problem("$", reason));
        return Ok(out);
    }
    let own: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let (id, attempt, nonce) = match &opts.manifest {
        Some(path) => {
            let text = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
            let m = Manifest::from_slice(&text).map_err(|e| format!("{}: not a manifest: {e}", path.display()))?;
            (m.code2des_id, m.attempt, m.nonce)
        }
        None => (
            own["code2des_id"].as_str().unwrap_or_default().to_owned(),
            own["attempt"].as_i64().and_then(|a| i32::try_from(a).ok()).unwrap_or(1),
            own["nonce"].as_str().unwrap_or_default().to_owned(),
        ),
    };
    // The route expects the kind the job's status says; here, the one the artifact says.
    let kind = if own["kind"] == "failure" { Kind::Failure } else { Kind::Result };
    let prefix = match Code2desId::parse(&id) {
        Ok(parsed) => job_prefix(parsed, attempt),
        Err(_) => {
            // The route would never hold such a job; the keys are still checked against its form.
            out.problems.push(problem("$.code2des_id", "code2des_id is not a job id (a UUID)"));
            format!("code2des/{id}/{attempt}/")
        }
    };
    let nonce = Nonce::from_db(nonce);
    let expect = Expect { code2des_id: &id, attempt, nonce: &nonce, prefix: &prefix, kind };
    let art = match artifact::validate_all(&bytes, &expect, limits) {
        Ok(a) => a,
        Err(problems) => {
            out.problems = problems;
            return Ok(out);
        }
    };
    out.images_used = art.images().count();
    // The answer the route makes of it must fit a compressed Lambda response, as the worker
    // checks before it reports `completed`.
    if let Ok(parsed) = Code2desId::parse(&id) {
        if let Err(reason) = code2des_result::handler::check_answer(parsed, &art, limits) {
            out.problems.push(problem("$", reason));
        }
    }
    let Some(dir) = &opts.images else { return Ok(out) };
    for (name, entry) in art.images() {
        let at = format!("$.images{}", member(name));
        let Some(file) = image_file(dir, &prefix, &entry.key) else {
            out.problems
                .push(problem(format!("{at}.key"), format!("no file for {} under {}", entry.key, dir.display())));
            continue;
        };
        let bytes = std::fs::read(&file).map_err(|e| format!("{}: {e}", file.display()))?;
        out.images_checked += 1;
        if bytes.len() as u64 > limits.max_image_bytes {
            out.problems.push(problem(
                &at,
                format!("image {name:?} is {} bytes, over the limit of {}", bytes.len(), limits.max_image_bytes),
            ));
            continue;
        }
        if let Err(reason) = artifact::check_entry(&bytes, entry, limits) {
            out.problems.push(problem(&at, format!("image {name:?} ({}): {reason}", file.display())));
        }
    }
    Ok(out)
}

fn image_file(dir: &Path, prefix: &str, key: &str) -> Option<PathBuf> {
    let relative = key.strip_prefix(prefix).map(|k| dir.join(k));
    relative.into_iter().chain([dir.join(key)]).find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const ID: &str = "01890a5d-ac96-774b-bcce-b302099a8057";

    fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
        let p = dir.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, bytes).unwrap();
        p
    }

    fn artifact(images: Value, doc: Value) -> Vec<u8> {
        serde_json::to_vec(&json!({"version": 1, "kind": "result", "code2des_id": ID, "attempt": 1,
            "nonce": "n", "warning_count": 0, "document": doc, "images": images}))
        .unwrap()
    }

    #[test]
    fn the_reference_workers_own_output_passes() {
        let dir = tempfile::tempdir().unwrap();
        let prefix = format!("code2des/{ID}/1/");
        let images = json!({"hero": {"key": format!("{prefix}images/hero.png"), "mime_type": "image/png"},
                            "logo": {"key": format!("{prefix}images/logo.svg"), "mime_type": "image/svg+xml"}});
        let doc = json!({"type": "FRAME", "children": [
            {"type": "RECTANGLE", "fills": [{"type": "IMAGE", "imageRef": "hero"}]},
            {"type": "SVG", "imageRef": "logo"}]});
        let a = write(dir.path(), "result.json", &artifact(images, doc));
        write(dir.path(), "images/hero.png", crate::HERO_PNG);
        write(dir.path(), "images/logo.svg", crate::LOGO_SVG);
        let opts = Options { artifact: a, images: Some(dir.path().to_owned()), manifest: None };
        let out = run(&opts, &Limits::default()).unwrap();
        assert!(out.problems.is_empty(), "{:?}", out.problems);
        assert_eq!((out.images_used, out.images_checked), (2, 2));
    }

    #[test]
    fn bad_images_and_a_foreign_manifest_are_reported_each() {
        let dir = tempfile::tempdir().unwrap();
        let prefix = format!("code2des/{ID}/1/");
        let images = json!({"hero": {"key": format!("{prefix}images/hero.png"), "mime_type": "image/jpeg"},
                            "gone": {"key": format!("{prefix}images/gone.png"), "mime_type": "image/png"}});
        let doc = json!({"type": "FRAME", "children": [
            {"type": "RECTANGLE", "fills": [{"type": "IMAGE", "imageRef": "hero"}]},
            {"type": "RECTANGLE", "fills": [{"type": "IMAGE", "imageRef": "gone"}]}]});
        let a = write(dir.path(), "result.json", &artifact(images, doc));
        write(dir.path(), "images/hero.png", crate::HERO_PNG);
        let opts = Options { artifact: a.clone(), images: Some(dir.path().to_owned()), manifest: None };
        let out = run(&opts, &Limits::default()).unwrap();
        let got: Vec<String> = out.problems.iter().map(ToString::to_string).collect();
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(
            got[0].starts_with("$.images.hero: image \"hero\"") && got[0].contains("declared image/jpeg"),
            "{got:?}"
        );
        assert!(got[1].starts_with("$.images.gone.key: no file for"), "{got:?}");

        // Against a manifest of another attempt: the envelope does not match the job.
        let manifest = json!({"version": 1, "code2des_id": ID, "attempt": 2, "nonce": "other",
            "organization_id": 1, "project_id": 1, "page_import_id": "p", "capture_url": null,
            "figma_file_key": "f", "screen_id": "s", "placement_target": null,
            "callback_url": "http://127.0.0.1/code2des/webhook", "result_prefix": "s3://b/x/"});
        let m = write(dir.path(), "manifest.json", manifest.to_string().as_bytes());
        let out = run(&Options { artifact: a, images: None, manifest: Some(m) }, &Limits::default()).unwrap();
        let paths: Vec<&str> = out.problems.iter().map(|p| p.path.as_str()).collect();
        assert!(paths.contains(&"$.attempt") && paths.contains(&"$.nonce"), "{:?}", out.problems);
        assert!(paths.iter().any(|p| p.ends_with(".key")), "keys outside attempt 2's prefix: {:?}", out.problems);
    }
}
