//! What one `engram read` of one FACT by its key costs from a fresh process:
//! `engram-cli.wasm` under the wasmtime CLI (compiled ahead with `wasmtime
//! compile`, run with `--allow-precompiled`: the CLI's compiled cache)
//! against the native `engram` binary (its engine loaded from its cache), on
//! the same store, interleaved; medians, and the size of the component.
//!
//! `cargo bench --bench wasi` (N = 20 of each), or `cargo bench --bench
//! wasi -- 50`. The wasmtime CLI is the pinned one the tests use.

#[path = "common/binary.rs"]
mod binary;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const FACT: &str = r#"{"request_id":"w-1","source":{"agent_id":"a","component":"COGNITION","actor":"USER"},"record":{"record_type":"FACT","key":"user.diet","payload":{"semantic":{"content":"Alice is vegetarian and prefers window seats","context":"dining","valid_at":1767225600000,"strength":1.0,"last_accessed":1767225600000,"access_count":0,"confidence":0.9,"privacy_tier":"public"}}}}"#;

const READ: &str =
    r#"{"record_type":"FACT","selector":{"ByKey":{"key":"user.diet"}},"request_id":"r-1"}"#;

/// Runs `command` with `input` on standard input; its standard output.
fn run(mut command: Command, input: &str) -> anyhow::Result<(Duration, String)> {
    let started = Instant::now();
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    child
        .stdin
        .take()
        .expect("piped")
        .write_all(input.as_bytes())?;
    let out = child.wait_with_output()?;
    let took = started.elapsed();
    anyhow::ensure!(
        out.status.success(),
        "{command:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok((took, String::from_utf8(out.stdout)?))
}

fn median(times: &mut [Duration]) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() -> anyhow::Result<()> {
    let n: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(20);
    let dir = tempfile::tempdir()?;
    let cache = dir.path().join("cache");
    let wasmtime = engram_wasi::wasmtime_cli()?;
    let compiled = dir.path().join("engram-cli.cwasm");
    let status = Command::new(&wasmtime)
        .arg("compile")
        .arg(engram_wasi::CLI)
        .arg("-o")
        .arg(&compiled)
        .status()?;
    anyhow::ensure!(status.success(), "wasmtime compile failed");
    let native = || {
        let mut command = Command::new(binary::engram());
        command
            .current_dir(dir.path())
            .env("ENGRAM_CACHE_DIR", &cache)
            .args(["--store", "engram.db"]);
        command
    };
    let component = || {
        let mut command = Command::new(&wasmtime);
        command
            .arg("run")
            .arg("--allow-precompiled")
            .arg("--dir")
            .arg(format!("{}::/", dir.path().display()))
            .arg(&compiled)
            .args(["--store", "engram.db"]);
        command
    };
    let mut write = native();
    write.args(["write", "--agent", "a"]);
    run(write, FACT)?;
    // Warm: the native engine's cache file written and stamped, the page
    // cache holding both programs.
    for _ in 0..3 {
        let mut read = native();
        read.args(["read", "--agent", "a"]);
        run(read, READ)?;
        let mut read = component();
        read.args(["read", "--agent", "a"]);
        run(read, READ)?;
    }
    let (mut native_times, mut wasm_times) = (Vec::new(), Vec::new());
    for _ in 0..n {
        let mut read = native();
        read.args(["read", "--agent", "a"]);
        let (took, native_answer) = run(read, READ)?;
        native_times.push(took);
        let mut read = component();
        read.args(["read", "--agent", "a"]);
        let (took, wasm_answer) = run(read, READ)?;
        wasm_times.push(took);
        anyhow::ensure!(native_answer == wasm_answer, "the two answers differ");
    }
    let (native_ms, wasm_ms) = (ms(median(&mut native_times)), ms(median(&mut wasm_times)));
    let size = std::fs::metadata(engram_wasi::CLI)?.len();
    let compiled_size = std::fs::metadata(&compiled)?.len();
    println!("engram-cli.wasm: {size} bytes ({compiled_size} compiled by `wasmtime compile`)");
    println!("one `engram read` in a fresh process, median of {n}:");
    println!("  native `engram`                     {native_ms:8.2} ms   1.00");
    println!(
        "  `wasmtime run` engram-cli.wasm      {wasm_ms:8.2} ms   {:.2}",
        wasm_ms / native_ms
    );
    Ok(())
}
