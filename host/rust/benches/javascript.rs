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

use engram::json::{ReadRequest, WriteAnswer, WriteRequest, read_answer};
use engram::{Engram, Mode, SqliteBackend, SqliteOptions};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

/// The i-th write request, as `host/js/bench/io.js` makes it.
fn request(i: usize) -> String {
    format!(
        r#"{{"request_id":"w-{i}","source":{{"agent_id":"bench","component":"COGNITION","actor":"USER"}},"record":{{"record_type":"FACT","key":"user.k{i}","payload":{{"semantic":{{"content":"Fact number {i} about the user","context":"bench","valid_at":1767225600000,"strength":1.0,"last_accessed":1767225600000,"access_count":0,"confidence":0.9,"privacy_tier":"public"}}}}}}}}"#
    )
}

/// µs per write and per read by id of the Rust host.
fn rust(n: usize, path: &Path) -> anyhow::Result<(f64, f64)> {
    let store = Arc::new(SqliteBackend::open_with(path, &SqliteOptions::default())?);
    let engram = Engram::new()?;
    let mut domain = engram.open("bench", Mode::Online, store.clone(), store)?;
    let mut ids = Vec::with_capacity(n);
    let started = Instant::now();
    for i in 0..n {
        let request: WriteRequest = serde_json::from_str(&request(i))?;
        let answer = WriteAnswer::from(domain.write(&request.into())?);
        let text = serde_json::to_string(&answer)?;
        let answer: serde_json::Value = serde_json::from_str(&text)?;
        let id = answer["ACCEPTED"]["stored_id"].as_str();
        ids.push(
            id.ok_or_else(|| anyhow::anyhow!("write {i}: {text}"))?
                .to_owned(),
        );
    }
    let write = started.elapsed();
    let started = Instant::now();
    for (i, id) in ids.iter().enumerate() {
        let text = format!(
            r#"{{"record_type":"FACT","selector":{{"ById":{{"id":"{id}"}}}},"request_id":"r-{i}"}}"#
        );
        let request: ReadRequest = serde_json::from_str(&text)?;
        let answer = serde_json::to_string(&read_answer(domain.read(&request.into())?))?;
        anyhow::ensure!(answer.contains(id.as_str()), "read {i}: {answer}");
    }
    let read = started.elapsed();
    let per = |d: std::time::Duration| d.as_secs_f64() * 1e6 / n as f64;
    Ok((per(write), per(read)))
}

/// The package's folder.
fn package() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../js")
}

/// µs per write and per read by id of the Node host.
fn node(n: usize, path: &Path) -> anyhow::Result<(f64, f64)> {
    let node = package().join("node_modules/.bin/node");
    anyhow::ensure!(
        node.exists() && package().join("gen/engram-js/engram-js.js").exists(),
        "the JavaScript package is not installed and built: run `cargo test --test javascript` first"
    );
    let out = Command::new(node)
        .current_dir(package())
        .arg("bench/io.js")
        .arg(n.to_string())
        .arg(path)
        .output()?;
    anyhow::ensure!(
        out.status.success(),
        "bench/io.js: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let answer: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    let field = |name: &str| answer[name].as_f64();
    match (field("write_us"), field("read_us")) {
        (Some(write), Some(read)) => Ok((write, read)),
        _ => anyhow::bail!("bench/io.js answered {answer}"),
    }
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
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
    let n: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(1000);
    let dir = tempfile::tempdir()?;
    let (mut rust_write, mut rust_read, mut node_write, mut node_read) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for round in 0..3 {
        let (w, r) = rust(n, &dir.path().join(format!("rust-{round}.db")))?;
        rust_write.push(w);
        rust_read.push(r);
        let (w, r) = node(n, &dir.path().join(format!("node-{round}.db")))?;
        node_write.push(w);
        node_read.push(r);
    }
    let (rw, rr) = (median(&mut rust_write), median(&mut rust_read));
    let (nw, nr) = (median(&mut node_write), median(&mut node_read));
    println!("N = {n}, synchronous=FULL, medians of 3 interleaved rounds, µs per call:");
    println!("                      write   read by id");
    println!("  Rust host        {rw:9.1} {rr:12.1}");
    println!("  Node host        {nw:9.1} {nr:12.1}");
    println!("  Node / Rust      {:9.2} {:12.2}", nw / rw, nr / rr);
    let generated = package().join("gen");
    println!(
        "what the package loads: gen/ {} bytes (engram-js {} + engram-algorithms {}), src/ {} bytes",
        size(&generated),
        size(&generated.join("engram-js")),
        size(&generated.join("engram-algorithms")),
        size(&package().join("src"))
    );
    Ok(())
}
