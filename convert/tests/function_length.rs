//! The converter's functions stay short (issue 38, item 3): no function in `src/` is over
//! [`MAX_LINES`] lines, counted from its `fn` line to its closing brace, which rustfmt puts at
//! the `fn` line's indentation. A function nested in another counts on its own, and in the
//! other's length too. `#[cfg(test)]` modules are not measured: their tests are tables of
//! cases, not code to read.

use std::path::{Path, PathBuf};

const MAX_LINES: usize = 60;

/// A function found: where, its name, and its length in lines.
#[derive(Debug)]
struct Function {
    file: PathBuf,
    line: usize,
    name: String,
    lines: usize,
}

#[test]
fn no_function_is_over_60_lines() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let functions = functions_under(&src);
    // The scan reads the code it is meant to: the entry of the conversion is among what it found.
    assert!(functions.len() > 100, "only {} functions found under {}", functions.len(), src.display());
    assert!(
        functions.iter().any(|f| f.name == "convert" && f.file.ends_with("convert/mod.rs")),
        "convert::convert not found"
    );
    let long: Vec<String> = functions
        .iter()
        .filter(|f| f.lines > MAX_LINES)
        .map(|f| format!("{}:{} fn {}: {} lines", f.file.display(), f.line, f.name, f.lines))
        .collect();
    assert!(
        long.is_empty(),
        "functions over {MAX_LINES} lines (split them at their natural seams):\n{}",
        long.join("\n")
    );
}

#[test]
fn the_count_runs_from_fn_to_its_closing_brace() {
    let code = "pub(crate) fn a() {\n    x();\n}\n\nfn b(\n    y: u8,\n) -> u8 {\n    y\n}\n\
        fn c() {}\ntrait T {\n    fn d(&self);\n    async fn e() {\n        let f = || {\n        };\n    }\n}\n\
        #[cfg(test)]\nmod tests {\n    fn g() {\n    }\n}\n";
    let found: Vec<(String, usize)> =
        functions_in(Path::new("x.rs"), code).into_iter().map(|f| (f.name, f.lines)).collect();
    let expected = [("a", 3), ("b", 5), ("c", 1), ("e", 4)];
    assert_eq!(found, expected.map(|(n, l)| (n.to_owned(), l)));
}

fn functions_under(dir: &Path) -> Vec<Function> {
    let mut files = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d).expect("a source folder") {
            let path = entry.expect("a folder entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files.iter().flat_map(|f| functions_in(f, &std::fs::read_to_string(f).expect("a source file"))).collect()
}

/// The functions with a body in one file's code, outside `#[cfg(test)]` modules.
fn functions_in(file: &Path, code: &str) -> Vec<Function> {
    let lines: Vec<&str> = code.lines().collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let indent = &line[..line.len() - line.trim_start().len()];
        let next_is_mod = lines.get(i + 1).is_some_and(|n| n.trim_start().starts_with("mod ") && n.ends_with('{'));
        if line.trim() == "#[cfg(test)]" && next_is_mod {
            // Past the module's closing brace, at its `mod` line's indentation.
            let mod_indent = &lines[i + 1][..lines[i + 1].len() - lines[i + 1].trim_start().len()];
            i = closing(&lines, i + 1, mod_indent).map_or(lines.len(), |end| end + 1);
            continue;
        }
        if let Some(name) = fn_name(line.trim_start()).filter(|_| !line.trim_end().ends_with(';')) {
            let end = if line.trim_end().ends_with('}') { Some(i) } else { closing(&lines, i, indent) };
            let end = end.unwrap_or_else(|| panic!("{}:{}: fn {name} has no closing brace", file.display(), i + 1));
            found.push(Function { file: file.to_path_buf(), line: i + 1, name, lines: end - i + 1 });
        }
        i += 1;
    }
    found
}

/// The line of the brace closing the item that starts at line `start`, at indentation `indent`.
fn closing(lines: &[&str], start: usize, indent: &str) -> Option<usize> {
    (start + 1..lines.len()).find(|j| lines[*j].strip_prefix(indent).is_some_and(|rest| rest.trim_end() == "}"))
}

/// The name of the function a line declares, if it does: visibility and qualifiers, `fn`, name.
fn fn_name(line: &str) -> Option<String> {
    let mut rest = line;
    if let Some(r) = rest.strip_prefix("pub") {
        rest = match r.strip_prefix('(') {
            Some(r) => r.split_once(')')?.1,
            None => r,
        }
        .trim_start();
    }
    for qualifier in ["const ", "async ", "unsafe ", "extern \"C\" "] {
        rest = rest.strip_prefix(qualifier).unwrap_or(rest);
    }
    let name: String = rest.strip_prefix("fn ")?.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
    (!name.is_empty()).then_some(name)
}
