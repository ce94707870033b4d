//! Crash consistency: `engram` processes killed with SIGKILL at random
//! moments, many times, on a real SQLite file. After every kill: every
//! acknowledged write (an answer printed before the kill) is readable and
//! has its audit entry; a replay of its request answers the same id; no
//! record is visible through one index and not another; the file passes
//! `integrity_check`.
//!
//! `ENGRAM_CRASH_RUNS` sets how many kills of each kind (12 by default);
//! `ENGRAM_CRASH_SEED` replays a run.

mod support;

use engram::io::{ReadSelector, WriteResult};
use engram::types::*;
use engram::{AuditQuery, Mode, SqliteBackend};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::*;

const CACHE_DIR: &str = concat!(env!("CARGO_TARGET_TMPDIR"), "/engram-cache");
const WRITES: usize = 3_000;
const TURNS: usize = 400;

/// A small deterministic generator (xorshift64*), so a failing run can be
/// replayed from its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn runs() -> usize {
    std::env::var("ENGRAM_CRASH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(12)
}

fn seed() -> u64 {
    std::env::var("ENGRAM_CRASH_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
                | 1
        })
}

fn write_line(request_id: &str, timestamp: i64) -> String {
    serde_json::json!({
        "request_id": request_id,
        "source": {"agent_id": "alice", "component": "COGNITION", "actor": "USER"},
        "record": {"record_type": "EVENT", "timestamp": timestamp,
            "payload": {"ingested": {"session_ref": "crash",
                "summary": format!("note {request_id}"), "keywords": ["crash", request_id]}}}
    })
    .to_string()
}

/// Starts `engram ARGS`, reads answer lines until a random moment, kills
/// the process with SIGKILL, and answers the lines it printed.
fn run_and_kill(store: &Path, args: &[&str], rng: &mut Rng) -> Vec<String> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_engram"))
        .env("ENGRAM_CACHE_DIR", CACHE_DIR)
        .env_remove("ENGRAM_STORE")
        .arg("--store")
        .arg(store)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let kill_after = Duration::from_millis(20 + rng.below(400));
    let reader = std::thread::spawn(move || {
        let mut lines = Vec::new();
        for line in BufReader::new(stdout).lines() {
            match line {
                Ok(line) => lines.push(line),
                Err(_) => break,
            }
        }
        lines
    });
    let started = Instant::now();
    while started.elapsed() < kill_after {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let _ = child.kill();
    let _ = child.wait();
    let mut lines = reader.join().unwrap();
    // A line cut by the kill is no acknowledgement.
    if lines
        .last()
        .is_some_and(|l| serde_json::from_str::<serde_json::Value>(l).is_err())
    {
        lines.pop();
    }
    lines
}

/// Every EVENT the time index reaches, by id, read in windows.
fn events_by_time(domain: &mut engram::Domain, until: i64) -> BTreeMap<String, i64> {
    let mut found = BTreeMap::new();
    let mut from = 0;
    while from <= until {
        let to = from + 40;
        let window = records(
            domain,
            RecordType::Event,
            ReadSelector::ByTimeRange(engram::io::ByTimeRange {
                from,
                to,
                limit: CEILING,
            }),
        );
        assert!(
            window.len() < CEILING as usize,
            "a window holds fewer than the ceiling"
        );
        for record in window {
            found.insert(id_of(&record).to_owned(), timestamp_of(&record));
        }
        from = to + 1;
    }
    found
}

/// What must hold of the store after a kill.
fn check_store(path: &Path, acknowledged: &BTreeMap<String, String>, until: i64) {
    let store = Arc::new(SqliteBackend::open(path).expect("the store opens after a kill"));
    let conn = rusqlite::Connection::open(path).unwrap();
    let integrity: String = conn
        .query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .unwrap();
    assert_eq!(integrity, "ok");
    let mut alice = engram()
        .open("alice", Mode::Online, store.clone(), store.clone())
        .unwrap();
    let by_time = events_by_time(&mut alice, until);
    // A record the time index reaches is readable by its id (a sample of
    // them, every 16th, to keep the check quick).
    for (id, timestamp) in by_time.iter().step_by(16) {
        let found = records(&mut alice, RecordType::Event, by_id(id));
        assert_eq!(found.len(), 1, "{id} by id");
        assert_eq!(timestamp_of(&found[0]), *timestamp);
    }
    let trail: BTreeSet<String> = store
        .audit_trail(&AuditQuery {
            limit: 1_000_000,
            ..AuditQuery::default()
        })
        .unwrap()
        .into_iter()
        .filter(|e| e.outcome == engram::audit::Outcome::Accepted)
        .filter_map(|e| e.stored_id)
        .collect();
    for (request_id, id) in acknowledged {
        assert!(
            by_time.contains_key(id),
            "acknowledged {request_id} ({id}) is stored"
        );
        assert!(
            trail.contains(id),
            "acknowledged {request_id} ({id}) is audited"
        );
    }
}

#[test]
fn io_w8_b5_d1_killed_writers_lose_no_acknowledged_write_and_leave_nothing_half_done() {
    // proves IO-W8, IO-W2, B5-D1 under SIGKILL at random moments
    let seed = seed();
    eprintln!("crash seed {seed} (ENGRAM_CRASH_SEED={seed} replays it)");
    let mut rng = Rng(seed);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crash.db");
    let batch = dir.path().join("writes.jsonl");
    let lines: String = (0..WRITES)
        .map(|i| write_line(&format!("w{i}"), i as i64) + "\n")
        .collect();
    std::fs::write(&batch, lines).unwrap();
    let mut acknowledged: BTreeMap<String, String> = BTreeMap::new();
    let (mut kills, mut checked) = (0, 0);
    for _ in 0..runs() {
        let answers = run_and_kill(
            &path,
            &[
                "write",
                "--agent",
                "alice",
                "--batch",
                batch.to_str().unwrap(),
            ],
            &mut rng,
        );
        kills += 1;
        for (i, answer) in answers.iter().enumerate() {
            let answer: serde_json::Value = serde_json::from_str(answer).unwrap();
            let id = answer["ACCEPTED"]["stored_id"]
                .as_str()
                .expect("every write is accepted")
                .to_owned();
            // A replay answers the id it had before the kill.
            if let Some(earlier) = acknowledged.insert(format!("w{i}"), id.clone()) {
                assert_eq!(earlier, id, "w{i} replayed");
            }
        }
        check_store(&path, &acknowledged, WRITES as i64);
        checked += acknowledged.len();
    }
    // Replays through the library answer the same ids.
    let store = Arc::new(SqliteBackend::open(&path).unwrap());
    let mut alice = engram()
        .open("alice", Mode::Online, store.clone(), store)
        .unwrap();
    for (request_id, id) in acknowledged.iter().take(200) {
        let i: i64 = request_id[1..].parse().unwrap();
        let request: engram::json::WriteRequest =
            serde_json::from_str(&write_line(request_id, i)).unwrap();
        assert_eq!(
            alice.write(&request.into()).unwrap(),
            WriteResult::Accepted(id.clone())
        );
    }
    eprintln!(
        "{kills} kills of a writer, {checked} acknowledged writes checked, {} distinct",
        acknowledged.len()
    );
}

#[test]
fn b5_d1_killed_cycles_persist_whole_turns_or_nothing_and_replay_their_ids() {
    // proves B5-D1, IO-W2 for cycles under SIGKILL at random moments
    let seed = seed() ^ 0x5eed;
    eprintln!("crash seed {seed}");
    let mut rng = Rng(seed);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cycles.db");
    let plan = dir.path().join("ingest.json");
    std::fs::write(
        &plan,
        r#"{"steps":[
            {"name":"summary","stage":"SummarizeMemory","kind":{"SummarizeMemory":{"of":"turn"}}},
            {"name":"persist","stage":"PersistMemory","kind":"PersistMemory","inputs":["summary"]}]}"#,
    )
    .unwrap();
    let turns = dir.path().join("turns.jsonl");
    let lines: String = (0..TURNS)
        .map(|i| {
            serde_json::json!({
                "message": format!("I planted {i} tomato seedlings in the garden bed number {i}."),
                "response": format!("Great, bed {i} will get plenty of sun."),
                "request_id": format!("t{i}"),
                "timestamp": i,
            })
            .to_string()
                + "\n"
        })
        .collect();
    std::fs::write(&turns, lines).unwrap();
    let args = [
        "cycle",
        plan.to_str().unwrap(),
        "--agent",
        "alice",
        "--batch",
        turns.to_str().unwrap(),
    ];
    let mut acknowledged: BTreeMap<String, String> = BTreeMap::new();
    let mut kills = 0;
    for _ in 0..runs() {
        let answers = run_and_kill(&path, &args, &mut rng);
        kills += 1;
        for answer in answers {
            let answer: serde_json::Value = serde_json::from_str(&answer).unwrap();
            let request_id = answer["request_id"].as_str().unwrap().to_owned();
            let ids = answer["committed"].as_array().expect("the turn committed");
            assert_eq!(ids.len(), 1, "{answer}");
            let id = ids[0].as_str().unwrap().to_owned();
            if let Some(earlier) = acknowledged.insert(request_id.clone(), id.clone()) {
                assert_eq!(earlier, id, "{request_id} replayed");
            }
        }
        check_store(&path, &acknowledged, TURNS as i64);
    }
    eprintln!(
        "{kills} kills of a cycle batch, {} acknowledged turns checked",
        acknowledged.len()
    );
}
