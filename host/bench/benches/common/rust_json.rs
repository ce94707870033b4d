//! The Rust host's side of the host benches (`javascript`, `python`): the
//! same write requests, timed through the JSON model of `engram::json`.

use engram::json::{ReadRequest, WriteAnswer, WriteRequest, read_answer};
use engram::{Engram, Mode, SqliteBackend, SqliteOptions};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// The i-th write request, as `host/js/bench/io.js` and
/// `host/python/bench/io.py` make it.
pub fn request(i: usize) -> String {
    request_named(&format!("w-{i}"), &format!("k{i}"), i)
}

/// A write request under `request_id` of the FACT `user.<key>`.
fn request_named(request_id: &str, key: &str, i: usize) -> String {
    format!(
        r#"{{"request_id":"{request_id}","source":{{"agent_id":"bench","component":"COGNITION","actor":"USER"}},"record":{{"record_type":"FACT","key":"user.{key}","payload":{{"semantic":{{"content":"Fact number {i} about the user","context":"bench","valid_at":1767225600000,"strength":1.0,"last_accessed":1767225600000,"access_count":0,"confidence":0.9,"privacy_tier":"public"}}}}}}}}"#
    )
}

/// How many writes, and reads of them, every host makes untimed before it
/// is timed, out of N: a tenth, at least 100 (so that a JIT, a cache or a
/// lazily made part has had its first calls on both sides).
pub fn warm_up(n: usize) -> usize {
    (n / 10).max(100)
}

/// µs per write and per read by id of the Rust host: each read's answer
/// made JSON text, and with `parsed` parsed back into a `serde_json::Value`
/// too (what a language host's caller gets: an object), as each write's is.
pub fn rust(n: usize, path: &Path, parsed: bool) -> anyhow::Result<(f64, f64)> {
    let store = Arc::new(SqliteBackend::open_with(path, &SqliteOptions::default())?);
    let engram = Engram::new()?;
    let mut domain = engram.open("bench", Mode::Online, store.clone(), store)?;
    for i in 0..warm_up(n) {
        let request: WriteRequest =
            serde_json::from_str(&request_named(&format!("warm-{i}"), &format!("warm{i}"), i))?;
        if let WriteAnswer::Accepted { stored_id } =
            WriteAnswer::from(domain.write(&request.into())?)
        {
            let text = format!(
                r#"{{"record_type":"FACT","selector":{{"ById":{{"id":"{stored_id}"}}}},"request_id":"warm-r-{i}"}}"#
            );
            let request: ReadRequest = serde_json::from_str(&text)?;
            serde_json::to_string(&read_answer(domain.read(&request.into())?))?;
        }
    }
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
        if parsed {
            let value: serde_json::Value = serde_json::from_str(&answer)?;
            anyhow::ensure!(
                value["records"][0]["id"] == id.as_str(),
                "read {i}: {answer}"
            );
        } else {
            anyhow::ensure!(answer.contains(id.as_str()), "read {i}: {answer}");
        }
    }
    let read = started.elapsed();
    let per = |d: std::time::Duration| d.as_secs_f64() * 1e6 / n as f64;
    Ok((per(write), per(read)))
}

/// Three interleaved rounds of N writes and reads by id (N the first
/// numeric argument, else 1000) on the Rust host and on `host` (its label
/// `name`, its runner `other`, each round on a fresh store, each host
/// warmed up first with [`warm_up`] writes and reads of its own, untimed);
/// prints the medians of µs per call and the ratios.
pub fn compare(
    name: &str,
    other: impl Fn(usize, &Path) -> anyhow::Result<(f64, f64)>,
) -> anyhow::Result<()> {
    let n: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(1000);
    let dir = tempfile::tempdir()?;
    let (mut rust_write, mut rust_read, mut other_write, mut other_read) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut rust_parsed = Vec::new();
    for round in 0..3 {
        let (w, r) = rust(n, &dir.path().join(format!("rust-{round}.db")), false)?;
        rust_write.push(w);
        rust_read.push(r);
        let (_, r) = rust(n, &dir.path().join(format!("parsed-{round}.db")), true)?;
        rust_parsed.push(r);
        let (w, r) = other(n, &dir.path().join(format!("other-{round}.db")))?;
        other_write.push(w);
        other_read.push(r);
    }
    let (rw, rr) = (median(&mut rust_write), median(&mut rust_read));
    let rp = median(&mut rust_parsed);
    let (ow, or) = (median(&mut other_write), median(&mut other_read));
    println!(
        "N = {n} (after {} untimed), synchronous=FULL, medians of 3 interleaved rounds, µs per call:",
        warm_up(n)
    );
    println!("                      write   read by id");
    println!("  Rust host        {rw:9.1} {rr:12.1}");
    println!("  {:<15}{ow:9.1} {or:12.1}", format!("{name} host"));
    println!(
        "  {:<15}{:9.2} {:12.2}",
        format!("{name} / Rust"),
        ow / rw,
        or / rr
    );
    // The language host hands its caller each answer as an object: the
    // Rust host doing that too (a write's answer is parsed above already).
    println!(
        "  the Rust host's reads with each answer parsed back (a serde_json::Value): {rp:.1} µs; {name} / that: {:.2}",
        or / rp
    );
    Ok(())
}

/// The median of `values`.
fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// µs per write and per read by id that a host's bench script answers
/// (`{"write_us","read_us"}` on its standard output), run by `command`.
pub fn run_bench(mut command: std::process::Command, what: &str) -> anyhow::Result<(f64, f64)> {
    let out = command.output()?;
    anyhow::ensure!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let answer: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    let field = |name: &str| answer[name].as_f64();
    match (field("write_us"), field("read_us")) {
        (Some(write), Some(read)) => Ok((write, read)),
        _ => anyhow::bail!("{what} answered {answer}"),
    }
}
