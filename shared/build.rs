//! `refinery::embed_migrations!` (src/db.rs) reads ../migrations while this crate compiles, and
//! cargo does not know: without this, adding a migration left an incremental build embedding the
//! old set (and the binaries running an older schema than the tree).
fn main() {
    println!("cargo:rerun-if-changed=../migrations");
}
