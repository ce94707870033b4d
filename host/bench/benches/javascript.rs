//! The JavaScript host against the Rust host, in one run: each writes N FACTs
//! into a fresh SQLite store (synchronous=FULL, the default of both) and then
//! reads each back by its id, the requests given as JSON text and the
//! answers made JSON, the way a caller of either uses it: the Rust library
//! through the JSON model of `engram::json`, the Node host (`host/js`, its
//! `bench/io.js`: its addon, the Rust host in Node, under the Node the
//! package pins) through its API. Three interleaved rounds; medians of µs
//! per call and the ratio, and the size of what the package loads.
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
        node.exists() && addon().is_some(),
        "the JavaScript package is not installed and built with its addon: run `cargo test --test javascript` first"
    );
    let mut command = Command::new(node);
    command
        .current_dir(package())
        .arg("bench/io.js")
        .arg(n.to_string())
        .arg(path);
    run_bench(command, "bench/io.js")
}

/// The bytes of a file, or of every file under a folder.
fn size(dir: &Path) -> u64 {
    if dir.is_file() {
        return std::fs::metadata(dir).map(|m| m.len()).unwrap_or(0);
    }
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

/// The addon built beside the package (`engram-memory.<platform>.node`).
fn addon() -> Option<PathBuf> {
    std::fs::read_dir(package())
        .ok()?
        .flatten()
        .map(|entry| entry.path())
        .find(|path| path.extension().is_some_and(|ext| ext == "node"))
}

fn main() -> anyhow::Result<()> {
    compare("Node", node)?;
    let addon = addon().map(|path| size(&path)).unwrap_or(0);
    let generated = package().join("gen");
    println!(
        "what the package loads in Node: the addon {addon} bytes, src/ {} bytes; in a browser or a Worker: gen/ {} bytes (engram-host {} + engram-host-builtin {} + engram-algorithms {})",
        size(&package().join("src")),
        size(&generated),
        size(&generated.join("engram-host")),
        size(&generated.join("engram-host-builtin")),
        size(&generated.join("engram-algorithms")),
    );
    Ok(())
}
