//! `code2des-worker validate` as a worker author runs it: every problem on its own line with its
//! JSON path, exit status 1 when there is any, 0 and one `ok:` line when there is none.

use std::process::Command;

use serde_json::json;

const ID: &str = "01890a5d-ac96-774b-bcce-b302099a8057";

fn validate(args: &[&std::ffi::OsStr]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_code2des-worker"))
        .arg("validate")
        .args(args)
        .env_remove("WEBHOOK_SIGNING_KEY")
        .output()
        .expect("code2des-worker runs");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn a_bad_artifact_prints_every_problem_and_exits_1_a_good_one_exits_0() {
    let dir = tempfile::tempdir().unwrap();
    let prefix = format!("code2des/{ID}/1/");
    let good = json!({"version": 1, "kind": "result", "code2des_id": ID, "attempt": 1, "nonce": "n",
        "document": {"type": "FRAME", "children": [{"type": "RECTANGLE", "fills": [{"type": "IMAGE", "imageRef": "hero"}]}]},
        "images": {"hero": {"key": format!("{prefix}images/hero.png"), "mime_type": "image/png"}}});
    let path = dir.path().join("result.json");
    std::fs::write(&path, good.to_string()).unwrap();
    std::fs::create_dir_all(dir.path().join("images")).unwrap();
    std::fs::write(dir.path().join("images/hero.png"), code2des_worker::HERO_PNG).unwrap();
    let (code, out) = validate(&[path.as_os_str(), "--images".as_ref(), dir.path().as_os_str()]);
    assert_eq!(code, 0, "{out}");
    assert!(out.starts_with("ok: ") && out.contains("1 of 1 used images checked"), "{out}");

    let mut bad = good.clone();
    bad["version"] = json!(3);
    bad["document"]["children"][0]["fills"][0]["imageRef"] = json!("missing");
    std::fs::write(&path, bad.to_string()).unwrap();
    let (code, out) = validate(&[path.as_os_str()]);
    assert_eq!(code, 1, "{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines,
        [
            "$.version: unknown version",
            "$.document.children[0].fills[0].imageRef: imageRef \"missing\" is not in images"
        ],
        "{out}"
    );
    // A node of a type the plugin cannot build: the document is read as typed nodes, so its
    // reading stops there.
    bad["document"]["children"][0]["type"] = json!("BUTTON");
    std::fs::write(&path, bad.to_string()).unwrap();
    let (code, out) = validate(&[path.as_os_str()]);
    assert_eq!(code, 1, "{out}");
    let second = out.lines().nth(1).unwrap_or_default();
    assert!(
        second.starts_with("$.document.children[0].type: unknown variant `BUTTON`, expected one of `FRAME`"),
        "{out}"
    );

    // Not an artifact file at all: a usage error, not a verdict.
    let (code, _) = validate(&[dir.path().join("nope.json").as_os_str()]);
    assert_eq!(code, 2);
}
