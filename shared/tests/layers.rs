//! The layers of `shared` (ARCHITECTURE.md, "The layers of `shared`"), read from the source:
//! every file under `shared/src`, in every folder, is put in its layer, and every path it names
//! through `crate::` is held to what that layer may import. Only `error` and `http` name the
//! answer (`ApiError`, `ErrorCode`): the domain returns its own errors, the adapters theirs, and
//! the HTTP edge alone turns them into statuses and messages.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every top-level module of the crate and the modules it may import, as ARCHITECTURE.md draws
/// them. A module missing here fails the test, so a new folder gets its place in the table
/// before it gets code.
const LAYERS: &[(&str, &[&str])] = &[
    // The bottom: what the service is about, a request's time, the answers. Nothing below.
    ("budget", &[]),
    ("error", &[]),
    ("domain", &[]),
    // Read once, written out.
    ("config", &["budget", "error", "domain"]),
    ("obs", &["budget", "error", "domain", "config"]),
    // The adapters, each speaking one outside thing; neither reaches into the other.
    ("db", &["budget", "error", "domain", "config", "obs"]),
    ("aws", &["budget", "error", "domain", "config", "obs"]),
    // The HTTP edge: of the other adapters, only their error types (`HTTP_ADAPTER_PATHS`).
    ("http", &["budget", "error", "domain", "config", "obs", "db", "aws"]),
    // What ties the adapters together: every layer but the edge.
    ("app", &["budget", "error", "domain", "config", "obs", "db", "aws"]),
];

/// What `http` may name of the adapters: their errors, to turn into answers (`http::faults`).
/// Nothing else, so no SQL and no S3 call is made from the edge.
const HTTP_ADAPTER_PATHS: &[&str] = &["db::error", "aws::bucket::BucketError"];

/// The layers that may name the answer.
const ANSWERING: &[&str] = &["error", "http"];

/// The answer's names, which only [`ANSWERING`] may use.
const ANSWER_NAMES: &[&str] = &["ApiError", "ErrorCode", "QuotaRefusal"];

/// What the layers between the bottom and the edge may use of `error`: its cause chain for
/// their logs and the database's Retry-After setting, nothing that builds an answer.
const ERROR_ITEMS_BELOW_THE_EDGE: &[&str] = &["chain", "RETRY_AFTER_SECS", "set_database_retry_after"];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Each file of `src/` but the crate root, with its top-level module (`db/error.rs`: `db`).
fn files_by_layer() -> Vec<(String, PathBuf)> {
    let root = src();
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    files.sort();
    files
        .into_iter()
        .filter(|f| f != &root.join("lib.rs"))
        .map(|f| {
            let first = f.strip_prefix(&root).unwrap().components().next().unwrap();
            let name = first.as_os_str().to_str().unwrap().trim_end_matches(".rs").to_owned();
            (name, f)
        })
        .collect()
}

/// The file's code without its comments: whole-line comments (`//`, `///`, `//!`) and the tail
/// of a line after ` //`. Prose may name any module; only code imports.
fn code(text: &str) -> String {
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .map(|l| l.find(" //").map_or(l, |i| &l[..i]))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every path the code names through `crate::` (or `$crate::`), without the prefix, with
/// grouped imports spread out: `use crate::db::{a, b::C}` gives `db::a` and `db::b::C`.
fn crate_paths(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        let after = &rest[i + "crate::".len()..];
        let preceded = rest[..i].chars().next_back();
        // `crate::` inside a longer name (`my_crate::`) is another crate's path.
        if !preceded.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            expand("", after, &mut out);
        }
        rest = after;
    }
    out
}

/// Reads one path (`a::b::{c, d::e}`) from the start of `text` into `out`, each with `prefix`.
fn expand(prefix: &str, text: &str, out: &mut Vec<String>) -> usize {
    let mut path = prefix.to_owned();
    let mut i = 0;
    let bytes = text.as_bytes();
    loop {
        let start = i;
        while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
            i += 1;
        }
        if i > start {
            if !path.is_empty() && !path.ends_with("::") {
                path.push_str("::");
            }
            path.push_str(&text[start..i]);
        }
        if text[i..].starts_with("::{") {
            i += 3;
            let group = format!("{path}::");
            loop {
                while i < bytes.len() && (bytes[i].is_ascii_whitespace() || bytes[i] == b',') {
                    i += 1;
                }
                if i >= bytes.len() || bytes[i] == b'}' {
                    return i + 1;
                }
                i += expand(&group, &text[i..], out);
            }
        }
        if text[i..].starts_with("::") {
            i += 2;
            continue;
        }
        // `self` in a group is the group's own path.
        let path = path.strip_suffix("::self").unwrap_or(&path).trim_end_matches("::").to_owned();
        if !path.is_empty() {
            out.push(path);
        }
        // An alias (`x as y`) belongs to the path before it.
        let tail = &text[i..];
        if let Some(alias) = tail.strip_prefix(" as ") {
            let n = alias.bytes().take_while(|b| b.is_ascii_alphanumeric() || *b == b'_').count();
            return i + 4 + n;
        }
        return i;
    }
}

/// Whole words of the code: `ApiError` but not `IsApiErrorish`.
fn names_word(code: &str, word: &str) -> bool {
    code.match_indices(word).any(|(i, _)| {
        let before = code[..i].chars().next_back();
        let after = code[i + word.len()..].chars().next();
        let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
        !ident(before) && !ident(after)
    })
}

#[test]
fn every_folder_of_the_crate_has_a_layer() {
    let layers: BTreeSet<&str> = LAYERS.iter().map(|(l, _)| *l).collect();
    let mut seen = BTreeSet::new();
    for entry in std::fs::read_dir(src()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().trim_end_matches(".rs").to_owned();
        if name == "lib" {
            continue;
        }
        assert!(
            layers.contains(name.as_str()),
            "src/{name} has no place in LAYERS (ARCHITECTURE.md, \"The layers of `shared`\")"
        );
        seen.insert(name);
    }
    let missing: Vec<_> = layers.iter().filter(|l| !seen.contains(**l)).collect();
    assert!(missing.is_empty(), "LAYERS names modules that are gone: {missing:?}");
}

#[test]
fn every_file_imports_only_the_layers_it_stands_on() {
    let allowed: BTreeMap<&str, &[&str]> = LAYERS.iter().copied().collect();
    let files = files_by_layer();
    let folders: BTreeSet<&str> = files.iter().map(|(l, _)| l.as_str()).collect();
    assert_eq!(folders.len(), LAYERS.len(), "every layer has files: {folders:?}");
    let mut wrong = Vec::new();
    for (layer, file) in &files {
        let text = code(&std::fs::read_to_string(file).unwrap());
        for path in crate_paths(&text) {
            let target = path.split("::").next().unwrap();
            if target == layer {
                continue;
            }
            let ok = allowed[layer.as_str()].contains(&target)
                && (layer != "http"
                    || !["db", "aws"].contains(&target)
                    || HTTP_ADAPTER_PATHS.iter().any(|p| path == *p || path.starts_with(&format!("{p}::"))))
                && (target != "error"
                    || ANSWERING.contains(&layer.as_str())
                    || ERROR_ITEMS_BELOW_THE_EDGE.iter().any(|item| path == format!("error::{item}")));
            if !ok {
                wrong.push(format!("{}: crate::{path}", file.strip_prefix(src()).unwrap().display()));
            }
        }
    }
    assert!(wrong.is_empty(), "imports against the layers (ARCHITECTURE.md):\n{}", wrong.join("\n"));
}

#[test]
fn only_the_edge_names_the_answer() {
    let mut wrong = Vec::new();
    for (layer, file) in files_by_layer() {
        if ANSWERING.contains(&layer.as_str()) {
            continue;
        }
        let text = code(&std::fs::read_to_string(&file).unwrap());
        for name in ANSWER_NAMES.iter().filter(|n| names_word(&text, n)) {
            wrong.push(format!("{} names {name}", file.strip_prefix(src()).unwrap().display()));
        }
    }
    assert!(
        wrong.is_empty(),
        "only error/ and http/ may name the answer; return the layer's own error and map it in http:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_reader_of_paths_reads_groups_aliases_and_comments() {
    let text = code(
        "use crate::db::{error::DbError, trigger::{self, Inserted}};\n\
         // use crate::http::faults;\n\
         let x = crate::error::chain(&e); // crate::http::view\n\
         use crate::domain::standard_webhooks::{self as sw, Keys};\n\
         $crate::db::sql::x!(); my_crate::http::y();",
    );
    assert_eq!(
        crate_paths(&text),
        [
            "db::error::DbError",
            "db::trigger",
            "db::trigger::Inserted",
            "error::chain",
            "domain::standard_webhooks",
            "domain::standard_webhooks::Keys",
            "db::sql::x",
        ]
    );
    assert!(names_word("Result<(), ApiError>", "ApiError") && !names_word("NotApiErrors", "ApiError"));
}
