//! The adapters return their own error types and the HTTP edge alone decides the answer
//! (ARCHITECTURE.md, "The layers of `shared`"): no file of `db/` or the bucket adapter names
//! `ApiError`, so a new statement cannot answer a client directly.

use std::path::Path;

#[test]
fn the_adapters_never_build_an_answer() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files: Vec<_> = std::fs::read_dir(src.join("db")).unwrap().map(|e| e.unwrap().path()).collect();
    files.push(src.join("aws/bucket.rs"));
    assert!(files.len() > 10, "db/ and the bucket adapter are where they were");
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        assert!(!text.contains("ApiError"), "{} names ApiError; return DbError / BucketError instead", f.display());
    }
}
