//! The JavaScript host against the Rust host, in one run: each writes N FACTs
//! into a fresh SQLite store (synchronous=FULL, the default of both) and then
//! reads each back by its id, the requests given as JSON text and the
//! answers made JSON, the way a caller of either uses it: the Rust library
//! through the JSON model of `engram::json`, the Node host (`host/js`, its
//! `bench/io.js`, on node:sqlite, under the Node the package pins) through its
//! API. Three interleaved rounds; medians of µs per call and the ratio, and
//! the size of what the package loads.
//!
//! `cargo bench --bench javascript` (N = 1000), or `cargo bench --bench
//! javascript -- 3000`. Needs the package installed and built (`cargo test
//! --test javascript` does both).

#[path = "common/rust_json.rs"]
mod rust_json;

use rust_json::{compare, run_bench};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The package's folder.
fn package() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../js")
}

/// µs per write and per read by id of the Node host.
fn node(n: usize, path: &Path) -> anyhow::Result<(f64, f64)> {
    let node = package().join("node_modules/.bin/node");
    anyhow::ensure!(
        node.exists() && package().join("gen/engram-host/engram-host.js").exists(),
        "the JavaScript package is not installed and built: run `cargo test --test javascript` first"
    );
    let mut command = Command::new(node);
    command
        .current_dir(package())
        .arg("bench/io.js")
        .arg(n.to_string())
        .arg(path);
    run_bench(command, "bench/io.js")
}

/// The bytes of every file under `dir`.
fn size(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| match e.file_type() {
                    Ok(t) if t.is_dir() => size(&e.path()),
                    _ => e.metadata().map(|m| m.len()).unwrap_or(0),
                })
                .sum()
        })
        .unwrap_or(0)
}

fn main() -> anyhow::Result<()> {
    compare("Node", node)?;
    let generated = package().join("gen");
    println!(
        "what the package loads: gen/ {} bytes (engram-host {} + engram-host-builtin {} + engram-algorithms {}), src/ {} bytes",
        size(&generated),
        size(&generated.join("engram-host")),
        size(&generated.join("engram-host-builtin")),
        size(&generated.join("engram-algorithms")),
        size(&package().join("src"))
    );
    Ok(())
}
