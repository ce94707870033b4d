//! Tells the conformance tests (`tests/`) whether this build runs the
//! PostgreSQL cases: without `ENGRAM_TEST_POSTGRES_URL` they are compiled
//! as ignored (cfg `engram_no_postgres`), so every `cargo test` summary
//! line counts the ones that did not run.

fn main() {
    const VAR: &str = "ENGRAM_TEST_POSTGRES_URL";
    println!("cargo::rerun-if-env-changed={VAR}");
    println!("cargo::rustc-check-cfg=cfg(engram_no_postgres)");
    if std::env::var(VAR).map_or(true, |url| url.trim().is_empty()) {
        println!("cargo::rustc-cfg=engram_no_postgres");
    }
}
