//! Crash consistency: `engram` processes killed with SIGKILL at random
//! moments, many times, on a real SQLite file. After every kill: every
//! acknowledged write (an answer printed before the kill) is readable and
//! has its audit entry; a replay of its request answers the same id; every
//! record is reached through every index that should reach it, and every
//! index entry reaches a record (time, keyword and idempotency indexes, the
//! audit trail, reads by id and by time); the file passes
//! `integrity_check`. Each run must have killed at least one process in
//! the middle of its batch, and acknowledged at least one write.
//!
//! `ENGRAM_CRASH_RUNS` sets how many kills of each kind (12 by default);
//! `ENGRAM_CRASH_SEED` replays a run.

mod support;

use engram::backend::Order;
use engram::export::ExportedItem;
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

/// Runs `engram` once to the end, so that the engine is compiled into the
/// cache before the runs that are killed: a process killed while it
/// compiles would never get as far as writing.
fn warm_cache() {
    static WARM: std::sync::Once = std::sync::Once::new();
    WARM.call_once(|| {
        let dir = tempfile::tempdir().unwrap();
        let line = dir.path().join("warm.json");
        std::fs::write(&line, write_line("warm", 0)).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_engram"))
            .env("ENGRAM_CACHE_DIR", CACHE_DIR)
            .env_remove("ENGRAM_STORE")
            .arg("--store")
            .arg(dir.path().join("warm.db"))
            .args(["write", "--agent", "alice"])
            .arg(&line)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    });
}

/// What a run printed before its process was killed, and whether the kill
/// landed while the process was still running (rather than after it had
/// finished its batch).
struct Run {
    lines: Vec<String>,
    killed_mid_batch: bool,
}

/// Starts `engram ARGS`, reads answer lines until a random moment, kills
/// the process with SIGKILL, and answers the lines it printed.
fn run_and_kill(store: &Path, args: &[&str], rng: &mut Rng) -> Run {
    use std::os::unix::process::ExitStatusExt;
    warm_cache();
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
    let mut finished = false;
    while started.elapsed() < kill_after {
        if child.try_wait().unwrap().is_some() {
            finished = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let _ = child.kill();
    let status = child.wait().unwrap();
    let killed_mid_batch = !finished && status.signal() == Some(9);
    let mut lines = reader.join().unwrap();
    // A line cut by the kill is no acknowledgement.
    if lines
        .last()
        .is_some_and(|l| serde_json::from_str::<serde_json::Value>(l).is_err())
    {
        lines.pop();
    }
    Run {
        lines,
        killed_mid_batch,
    }
}

/// Every EVENT a read by time reaches, by id, read in windows: the time
/// index as the engine follows it.
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
            assert!(
                found
                    .insert(id_of(&record).to_owned(), timestamp_of(&record))
                    .is_none(),
                "{} read twice by time",
                id_of(&record)
            );
        }
        from = to + 1;
    }
    found
}

/// Alice's domain as the store holds it, key by key (the layout of
/// `guest/src/keys.rs`): the records, and the entries of each index with
/// the record id each one holds.
#[derive(Default)]
struct Layout {
    records: BTreeSet<String>,
    /// Time index: record id → (timestamp, sequence), one entry each.
    time: BTreeMap<String, (i64, u64)>,
    /// Keyword index: record id → its keywords.
    keywords: BTreeMap<String, BTreeSet<String>>,
    /// Idempotency entries.
    requests: usize,
}

fn layout(store: &SqliteBackend) -> Layout {
    let prefix = engram::backend::domain_prefix("alice");
    let mut end = prefix.clone();
    end.push(0xff);
    let pairs = engram::Backend::scan(store, &prefix, &end, 1_000_000, Order::Ascending).unwrap();
    let mut found = Layout::default();
    for (key, value) in pairs {
        let key = &key[prefix.len()..];
        let (tag, rest) = (key[0], &key[1..]);
        let target = || String::from_utf8(value.clone()).expect("an index entry holds an id");
        match tag {
            b'R' => {
                found
                    .records
                    .insert(String::from_utf8(rest.to_vec()).unwrap());
            }
            b'T' => {
                assert_eq!(rest[0], b'E', "only EVENTs are written here");
                let stamp = u64::from_be_bytes(rest[1..9].try_into().unwrap()) ^ (1 << 63);
                let seq = u64::from_be_bytes(rest[9..17].try_into().unwrap());
                let earlier = found.time.insert(target(), (stamp as i64, seq));
                assert!(earlier.is_none(), "{} has two time entries", target());
            }
            b'W' => {
                let len = usize::from(u16::from_be_bytes([rest[0], rest[1]]));
                let keyword = String::from_utf8(rest[2..2 + len].to_vec()).unwrap();
                found.keywords.entry(target()).or_default().insert(keyword);
            }
            b'I' => found.requests += 1,
            b'M' => {}
            other => panic!("an entry of an unexpected kind: {}", other as char),
        }
    }
    found
}

/// What must hold of the store after a kill: the acknowledged writes are
/// there, and the records, the indexes, the audit trail and the reads
/// agree both ways. `request_of` names the idempotency request id of an
/// acknowledged answer's request id.
fn check_store(
    path: &Path,
    acknowledged: &BTreeMap<String, String>,
    until: i64,
    request_of: fn(&str) -> String,
) {
    let store = Arc::new(SqliteBackend::open(path).expect("the store opens after a kill"));
    let conn = rusqlite::Connection::open(path).unwrap();
    let integrity: String = conn
        .query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .unwrap();
    assert_eq!(integrity, "ok");
    let stored = layout(&store);
    let records = &stored.records;

    // The time index: one entry per record, none without one.
    let timed: BTreeSet<String> = stored.time.keys().cloned().collect();
    assert_eq!(&timed, records, "records and the time index");

    // The audit trail: one ACCEPTED entry per record, none without one.
    let mut audited = BTreeSet::new();
    for entry in store
        .audit_trail(&AuditQuery {
            limit: 1_000_000,
            ..AuditQuery::default()
        })
        .unwrap()
        .into_iter()
        .filter(|e| e.outcome == engram::audit::Outcome::Accepted)
    {
        let id = entry.stored_id.expect("an ACCEPTED entry names its record");
        assert!(audited.insert(id.clone()), "{id} audited twice");
    }
    assert_eq!(&audited, records, "records and the audit trail");

    // What the engine keeps of each record, and its answered request ids.
    let mut maintainer = engram()
        .open("alice", Mode::Maintenance, store.clone(), store.clone())
        .unwrap();
    let (mut exported, mut answered) = (BTreeMap::new(), BTreeMap::new());
    let mut start = None;
    loop {
        let page = maintainer
            .export_page(start.as_deref(), CEILING)
            .unwrap()
            .unwrap();
        for item in page.items {
            match item {
                ExportedItem::Record(r) => {
                    exported.insert(r.id.clone(), r);
                }
                ExportedItem::Request(q) => {
                    assert!(answered.insert(q.request_id, q.stored_id).is_none());
                }
                ExportedItem::KeyTier(_) => panic!("no FACT was written"),
            }
        }
        match page.next {
            Some(next) => start = Some(next),
            None => break,
        }
    }
    drop(maintainer);
    assert_eq!(
        exported.keys().cloned().collect::<BTreeSet<_>>(),
        *records,
        "records and the export"
    );

    // The idempotency index: each record answered one request, and each
    // answered request names a record.
    assert_eq!(stored.requests, answered.len());
    let mut answering: BTreeMap<&String, usize> = BTreeMap::new();
    for id in answered.values() {
        *answering.entry(id).or_default() += 1;
    }
    assert!(
        answering.values().all(|&n| n == 1),
        "a record answers one request"
    );
    assert_eq!(
        answering
            .keys()
            .map(|id| (*id).clone())
            .collect::<BTreeSet<_>>(),
        *records,
        "records and the idempotency index"
    );

    // The keyword index: each record under exactly its keywords, and no
    // entry for anything else.
    assert!(
        stored.keywords.keys().all(|id| records.contains(id)),
        "a keyword entry without its record"
    );
    for (id, record) in &exported {
        let MemoryRecord::Event(Event {
            timestamp,
            payload: EventPayload::Ingested(memory),
        }) = &record.record
        else {
            panic!("{id} is not an ingested memory");
        };
        let written: BTreeSet<String> = memory.keywords.iter().cloned().collect();
        assert!(!written.is_empty());
        assert_eq!(stored.keywords.get(id), Some(&written), "keywords of {id}");
        assert_eq!(
            stored.time[id],
            (*timestamp, record.seq),
            "time entry of {id}"
        );
    }

    // The reads: every record by its id, and by time exactly the records.
    let mut alice = engram()
        .open("alice", Mode::Online, store.clone(), store.clone())
        .unwrap();
    for (id, (timestamp, _)) in &stored.time {
        let found = records_of(&mut alice, id);
        assert_eq!(found.len(), 1, "{id} by id");
        assert_eq!(timestamp_of(&found[0]), *timestamp);
    }
    let by_time = events_by_time(&mut alice, until);
    assert_eq!(
        by_time.keys().cloned().collect::<BTreeSet<_>>(),
        *records,
        "records and a read by time"
    );

    // Every acknowledged write is stored, under the request it answered.
    for (request_id, id) in acknowledged {
        assert!(
            records.contains(id),
            "acknowledged {request_id} ({id}) is stored"
        );
        assert_eq!(
            answered.get(&request_of(request_id)),
            Some(id),
            "acknowledged {request_id} answers its id"
        );
    }
}

fn records_of(domain: &mut engram::Domain, id: &str) -> Vec<StoredRecord> {
    records(domain, RecordType::Event, by_id(id))
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
    let mut mid_batch = 0;
    for _ in 0..runs() {
        let run = run_and_kill(
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
        mid_batch += usize::from(run.killed_mid_batch);
        for (i, answer) in run.lines.iter().enumerate() {
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
        check_store(&path, &acknowledged, WRITES as i64, str::to_owned);
    }
    assert!(!acknowledged.is_empty(), "no write was acknowledged");
    assert!(mid_batch > 0, "no kill landed in the middle of a batch");
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
        "{mid_batch} of {} writers killed mid-batch, {} acknowledged writes",
        runs(),
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
    let mut mid_batch = 0;
    for _ in 0..runs() {
        let run = run_and_kill(&path, &args, &mut rng);
        mid_batch += usize::from(run.killed_mid_batch);
        for answer in run.lines {
            let answer: serde_json::Value = serde_json::from_str(&answer).unwrap();
            let request_id = answer["request_id"].as_str().unwrap().to_owned();
            let ids = answer["committed"].as_array().expect("the turn committed");
            assert_eq!(ids.len(), 1, "{answer}");
            let id = ids[0].as_str().unwrap().to_owned();
            if let Some(earlier) = acknowledged.insert(request_id.clone(), id.clone()) {
                assert_eq!(earlier, id, "{request_id} replayed");
            }
        }
        // A turn's record answers the request id of its persist step.
        check_store(&path, &acknowledged, TURNS as i64, |turn| {
            format!("{turn}#persist")
        });
    }
    assert!(!acknowledged.is_empty(), "no turn was acknowledged");
    assert!(mid_batch > 0, "no kill landed in the middle of a batch");
    eprintln!(
        "{mid_batch} of {} cycle batches killed mid-batch, {} acknowledged turns",
        runs(),
        acknowledged.len()
    );
}

/// The store at `path` as its file holds it, read with SQLite alone
/// (whatever its schema version): its schema version, its key-value pairs
/// and its audit rows (agent, seq, time, request id, operation, outcome),
/// each in order.
type Held = (
    i32,
    Vec<engram::backend::Pair>,
    Vec<(String, i64, i64, String, String, String)>,
);

fn held(path: &Path) -> Held {
    let conn = rusqlite::Connection::open(path).unwrap();
    let integrity: String = conn
        .query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .unwrap();
    assert_eq!(integrity, "ok");
    let version = conn
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .unwrap();
    let pairs = file_pairs(path);
    let rows = conn
        .prepare(
            "SELECT agent_id, seq, at, request_id, operation, outcome FROM engram_audit
             ORDER BY agent_id, seq",
        )
        .unwrap()
        .query_map([], |row| {
            Ok((
                row.get(0)?,
                row.get(1)?,
                row.get(2)?,
                row.get(3)?,
                row.get(4)?,
                row.get(5)?,
            ))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    (version, pairs, rows)
}

#[test]
fn s_file_s_audit_a_format_upgrade_killed_at_random_points_leaves_a_store_that_opens_holding_everything()
 {
    // proves S-FILE, S-AUDIT: a store of schema version 3, as the build
    // before version 4 wrote it (tests/fixtures/store-v3.sh), grown to
    // 50,000 audit rows so that its upgrade (the audit rows copied into the
    // table keyed by agent) takes a while, is opened by `engram` processes
    // killed with SIGKILL at random moments, each on a fresh copy. After
    // every kill the file passes `integrity_check` and is of version 3 with
    // its old index, or of version 4 without it, never between; opened, it
    // is of version 4 and holds every key-value pair and every audit row
    // it held, each row with its `seq`, and the trail reads every entry.
    // At least one kill must land inside the upgrade's transaction.
    use std::os::unix::process::ExitStatusExt;
    warm_cache();
    let dir = tempfile::tempdir().unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/store-v3.db");
    let source = dir.path().join("v3.db");
    std::fs::copy(&fixture, &source).unwrap();
    rusqlite::Connection::open(&source)
        .unwrap()
        .execute_batch(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 50000)
             INSERT INTO engram_audit (at, agent_id, request_id, operation, record_type, outcome, count)
             SELECT 1000 + i, CASE i % 3 WHEN 0 THEN 'bob' ELSE 'alice' END, 'grown-' || i,
                    'READ', 'FACT', 'RETURNED', i % 7 FROM n;",
        )
        .unwrap();
    let before = held(&source);
    assert_eq!(before.0, 3);
    assert_eq!(before.2.len(), 50_016);
    let version = |db: &rusqlite::Connection| -> i32 {
        db.query_row("PRAGMA user_version", [], |row| row.get(0))
            .unwrap()
    };
    let has_agent_index = |db: &rusqlite::Connection| -> bool {
        db.query_row(
            "SELECT count(*) FROM sqlite_schema WHERE name = 'engram_audit_agent'",
            [],
            |row| row.get::<_, i64>(0),
        )
        .unwrap()
            == 1
    };
    let upgrade = |path: &Path| {
        Command::new(env!("CARGO_BIN_EXE_engram"))
            .env("ENGRAM_CACHE_DIR", CACHE_DIR)
            .env_remove("ENGRAM_STORE")
            .arg("--store")
            .arg(path)
            .args(["audit", "--agent", "bob", "--limit", "1"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    // How long one process takes, unkilled: the kills land over it.
    let timed = dir.path().join("timed.db");
    std::fs::copy(&source, &timed).unwrap();
    let started = Instant::now();
    assert!(upgrade(&timed).wait().unwrap().success());
    let span = started.elapsed().as_millis() as u64;
    assert_eq!(held(&timed).0, 4);

    let seed = seed();
    eprintln!("ENGRAM_CRASH_SEED={seed}");
    let mut rng = Rng(seed);
    let (mut inside, mut after) = (0, 0);
    for run in 0..runs().max(12) {
        let path = dir.path().join(format!("run-{run}.db"));
        std::fs::copy(&source, &path).unwrap();
        let mut child = upgrade(&path);
        std::thread::sleep(Duration::from_millis(rng.below(span + span / 2 + 1)));
        let finished = child.try_wait().unwrap().is_some();
        let _ = child.kill();
        let status = child.wait().unwrap();
        let killed = !finished && status.signal() == Some(9);
        let wal = std::fs::metadata(path.with_extension("db-wal")).map_or(0, |m| m.len());
        {
            let db = rusqlite::Connection::open(&path).unwrap();
            let integrity: String = db
                .query_row("PRAGMA integrity_check", [], |row| row.get(0))
                .unwrap();
            assert_eq!(integrity, "ok", "run {run}");
            match version(&db) {
                3 => {
                    assert!(has_agent_index(&db), "run {run}");
                    inside += usize::from(killed && wal > 0);
                }
                4 => {
                    assert!(!has_agent_index(&db), "run {run}");
                    after += 1;
                }
                other => panic!("run {run}: schema version {other}"),
            }
        }
        let store = SqliteBackend::open(&path).expect("the store opens after a kill");
        let trail = store
            .audit_trail(&AuditQuery {
                limit: 1_000_000,
                ..AuditQuery::default()
            })
            .unwrap();
        drop(store);
        let now = held(&path);
        assert_eq!(now.0, 4, "run {run}");
        assert!(now.1 == before.1, "run {run}: the key-value pairs changed");
        assert!(now.2 == before.2, "run {run}: the audit rows changed");
        assert_eq!(trail.len(), before.2.len(), "run {run}");
    }
    eprintln!(
        "{inside} kills inside the upgrade, {after} after it, of {} (one process: {span} ms)",
        runs().max(12)
    );
    assert!(inside > 0, "no kill landed inside the upgrade");
}
