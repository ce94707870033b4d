//! What one CLI call costs from a cold process: `engram read` of one FACT by
//! its key, against the `sqlite3` shell reading that record's row with one
//! SELECT, each a fresh process, interleaved.
//!
//! `cargo bench --bench start` (N = 50 of each), or `cargo bench --bench
//! start -- 200`. The bench has cargo build the release `engram` binary
//! (a nested run) and runs it; it compiles no engine itself. Before the
//! timed runs, the engine is compiled into a cache folder of the bench's own
//! and loaded back until its cache file is stamped, so every timed call
//! starts as a warm CLI does. The baseline needs `sqlite3` on the PATH; without
//! it the bench says so and times `engram read` alone.

#[path = "common/binary.rs"]
mod binary;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const AGENT: &str = "a";
const CONTENT: &str = "Alice is vegetarian and prefers window seats";

const FACT: &str = r#"{"request_id":"w-1","source":{"agent_id":"a","component":"COGNITION","actor":"USER"},
"record":{"record_type":"FACT","key":"user.diet","payload":{"semantic":{"content":"Alice is vegetarian and prefers window seats",
"context":"dining","valid_at":1767225600000,"invalid_at":null,"strength":1.0,"last_accessed":1767225600000,
"access_count":0,"sources":["episode-1"],"confidence":0.9,"contradictions":[],"privacy_tier":"public"}}}}"#;

const READ: &str =
    r#"{"record_type":"FACT","selector":{"ByKey":{"key":"user.diet"}},"request_id":"r-1"}"#;

fn engram(store: &Path, cache: &Path) -> Command {
    let mut command = Command::new(binary::engram());
    command
        .env_remove("ENGRAM_STORE")
        .env_remove("ENGRAM_AGENT")
        .env("ENGRAM_CACHE_DIR", cache)
        .arg("--store")
        .arg(store);
    command
}

fn checked(what: &str, out: std::io::Result<Output>) -> anyhow::Result<Output> {
    let out = out.map_err(|e| anyhow::anyhow!("{what}: {e}"))?;
    anyhow::ensure!(
        out.status.success(),
        "{what} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(out)
}

fn median(times: &mut [Duration]) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The `sqlite3` shell's version, when one is on the PATH.
fn sqlite3_version() -> Option<String> {
    let out = Command::new("sqlite3").arg("--version").output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// The key of the row that holds the FACT itself: the largest value that
/// carries its content.
fn record_key(store: &Path) -> anyhow::Result<Vec<u8>> {
    let conn =
        rusqlite::Connection::open_with_flags(store, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let mut rows = conn.prepare("SELECT key, value FROM engram_kv")?;
    let mut best: Option<(usize, Vec<u8>)> = None;
    for row in rows.query_map([], |row| {
        Ok((row.get::<_, Vec<u8>>(0)?, row.get::<_, Vec<u8>>(1)?))
    })? {
        let (key, value) = row?;
        let holds = value
            .windows(CONTENT.len())
            .any(|w| w == CONTENT.as_bytes());
        if holds && best.as_ref().is_none_or(|(len, _)| value.len() > *len) {
            best = Some((value.len(), key));
        }
    }
    best.map(|(_, key)| key)
        .ok_or_else(|| anyhow::anyhow!("no row of the store holds the FACT"))
}

/// Writes the FACT to the store, then reads it until the engine is compiled
/// into the cache and its cache file stamped, as a warm CLI finds it.
fn warm_up(store: &Path, cache: &Path, request: &Path) -> anyhow::Result<()> {
    let mut write = engram(store, cache)
        .args(["write", "--agent", AGENT])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    write
        .stdin
        .take()
        .expect("a piped stdin")
        .write_all(FACT.replace('\n', "").as_bytes())?;
    checked("engram write", write.wait_with_output())?;

    let read = || {
        engram(store, cache)
            .args(["read", "--agent", AGENT])
            .arg(request)
            .output()
    };
    // The first call compiles the engine into the cache; the next reads the
    // file whole and stamps it, once its last change is older than the
    // check; from then on a start checks the stamp.
    let mut warm = 0;
    while warm < 20 && !stamped(cache) {
        checked("engram read", read())?;
        std::thread::sleep(Duration::from_millis(20));
        warm += 1;
    }
    let answer = checked("engram read", read())?;
    anyhow::ensure!(
        String::from_utf8_lossy(&answer.stdout).contains(CONTENT),
        "engram read did not return the FACT: {}",
        String::from_utf8_lossy(&answer.stdout)
    );
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let n: usize = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(50)
        .max(1);
    let dir = tempfile::tempdir()?;
    let store = dir.path().join("engram.db");
    let cache = dir.path().join("cache");
    let request = dir.path().join("read.json");
    std::fs::write(&request, READ)?;

    warm_up(&store, &cache, &request)?;
    let read = || {
        engram(&store, &cache)
            .args(["read", "--agent", AGENT])
            .arg(&request)
            .output()
    };

    let key = record_key(&store)?;
    let hex: String = key.iter().map(|b| format!("{b:02X}")).collect();
    let select = format!("SELECT value FROM engram_kv WHERE key = X'{hex}'");
    let sqlite3 = sqlite3_version();
    let query = || Command::new("sqlite3").arg(&store).arg(&select).output();
    match &sqlite3 {
        Some(version) => {
            let out = checked("sqlite3", query())?;
            anyhow::ensure!(
                !String::from_utf8_lossy(&out.stdout).trim().is_empty(),
                "sqlite3 found no row for the key"
            );
            println!("baseline: sqlite3 {version}");
        }
        None => println!("sqlite3 is not on the PATH: the baseline is skipped"),
    }

    let mut engram_times = Vec::with_capacity(n);
    let mut sqlite_times = Vec::with_capacity(n);
    for _ in 0..n {
        let start = Instant::now();
        checked("engram read", read())?;
        engram_times.push(start.elapsed());
        if sqlite3.is_some() {
            let start = Instant::now();
            checked("sqlite3", query())?;
            sqlite_times.push(start.elapsed());
        }
    }

    println!(
        "{n} fresh processes each, interleaved: one FACT read by key (engram read) \
         and one SELECT of its row (sqlite3)"
    );
    println!("{:<28} {:>12}", "process", "median ms");
    let engram_median = median(&mut engram_times);
    println!("{:<28} {:>12.2}", "engram read", ms(engram_median));
    if sqlite3.is_some() {
        let sqlite_median = median(&mut sqlite_times);
        println!("{:<28} {:>12.2}", "sqlite3 SELECT", ms(sqlite_median));
        println!(
            "{:<28} {:>12.2}",
            "ratio engram / sqlite3",
            engram_median.as_secs_f64() / sqlite_median.as_secs_f64()
        );
    }
    Ok(())
}

/// Whether the cache folder holds a stamped cache file.
fn stamped(cache: &Path) -> bool {
    std::fs::read_dir(cache).is_ok_and(|entries| {
        entries
            .filter_map(Result::ok)
            .any(|e| e.file_name().to_string_lossy().ends_with(".stamp"))
    })
}
