//! The Python host against the Rust host, in one run: each writes N FACTs
//! into a fresh SQLite store (synchronous=FULL, the default of both) and then
//! reads each back by its id, the requests given as JSON text and the
//! answers made JSON, the way a caller of either uses it: the Rust library
//! through the JSON model of `engram::json`, the Python package
//! (`host/python`, its `bench/io.py`: its native module, the Rust host in
//! CPython) through its API. Three interleaved rounds; medians of µs per
//! call and the ratio.
//!
//! `cargo bench --bench python` (N = 1000), or `cargo bench --bench python
//! -- 3000`. Runs the package installed in the virtual environment that
//! `cargo test --test python` makes (run that first).

#[path = "common/rust_json.rs"]
mod rust_json;

use rust_json::{compare, run_bench};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The package's folder.
fn package() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../python")
}

/// µs per write and per read by id of the Python host.
fn python(n: usize, path: &Path) -> anyhow::Result<(f64, f64)> {
    let python = Path::new(env!("CARGO_TARGET_TMPDIR")).join("python-venv/bin/python");
    anyhow::ensure!(
        python.exists(),
        "the Python package is not installed: run `cargo test --test python` first"
    );
    let mut command = Command::new(python);
    command
        .arg(package().join("bench/io.py"))
        .arg(n.to_string())
        .arg(path);
    run_bench(command, "bench/io.py")
}

fn main() -> anyhow::Result<()> {
    compare("Python", python)
}
