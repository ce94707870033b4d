//! Writes N records through the engine component and reads them back, then
//! does the same work natively on rusqlite in the same run, and prints both
//! with their ratio.
//!
//! `cargo bench --bench io` (N = 2000), or `cargo bench --bench io -- 10000`;
//! `-- 1000000 normal` runs every side at synchronous=NORMAL (to fill a
//! large store in less time; reads are the same).
//!
//! Three native baselines, each one transaction per write at
//! synchronous=FULL:
//! - *layout* does what the engine's layout does for a write, as plain SQL:
//!   reads the idempotency entry and the sequence counter, then puts the
//!   counter, the idempotency entry, the record (the same bytes the engine
//!   stores, under a random id like the engine's), the time-index entry and
//!   one keyword-index entry per keyword, and appends the audit row; so the
//!   gap between it and the engine is the cost of the component boundary,
//!   the encoding and the contract checks.
//! - *minimal* does the same without the keyword entries and the audit row
//!   (the baseline of earlier runs: idempotency, counter, record, time).
//! - *bare* stores each record as one key-value pair (the least any store
//!   must do).

mod common;

use common::record;
use engram::io::{ById, ByTimeRange, ReadRequest, ReadSelector, WriteRequest, WriteResult};
use engram::types::*;
use engram::{
    AuditSink, Backend, Engram, MemoryAudit, MemoryBackend, Mode, SqliteBackend, SqliteOptions,
    Synchronous,
};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use std::sync::Arc;
use std::time::{Duration, Instant};

const PAGE: u32 = 100;

struct Timings {
    write: Duration,
    read_by_id: Duration,
    read_range: Duration,
}

fn engram_run(
    n: usize,
    backend: Arc<dyn Backend>,
    audit: Arc<dyn AuditSink>,
) -> anyhow::Result<Timings> {
    let engram = Engram::new()?;
    let mut domain = engram.open("bench", Mode::Online, backend, audit)?;
    let source = WriteSource {
        agent_id: "bench".into(),
        component: SourceComponent::Cognition,
        actor: SourceActor::System,
    };
    let requests: Vec<WriteRequest> = (0..n)
        .map(|i| WriteRequest {
            record: record(i),
            source: source.clone(),
            request_id: format!("req-{i}"),
        })
        .collect();

    let start = Instant::now();
    let mut ids = Vec::with_capacity(n);
    for request in &requests {
        match domain.write(request)? {
            WriteResult::Accepted(id) => ids.push(id),
            WriteResult::Rejected => anyhow::bail!("a benchmark write was rejected"),
        }
    }
    let write = start.elapsed();

    let start = Instant::now();
    for id in &ids {
        let read = ReadRequest {
            record_type: RecordType::Event,
            selector: ReadSelector::ById(ById { id: id.clone() }),
            request_id: "r".into(),
        };
        let found = domain.read(&read)?.map_err(|e| anyhow::anyhow!("{e:?}"))?;
        assert_eq!(found.records.len(), 1);
    }
    let read_by_id = start.elapsed();

    let start = Instant::now();
    let mut seen = 0;
    for page in 0..n.div_ceil(PAGE as usize) {
        let from = 1_700_000_000_000 + (page * PAGE as usize) as i64;
        let read = ReadRequest {
            record_type: RecordType::Event,
            selector: ReadSelector::ByTimeRange(ByTimeRange {
                from,
                to: from + i64::from(PAGE) - 1,
                limit: PAGE,
            }),
            request_id: "r".into(),
        };
        seen += domain
            .read(&read)?
            .map_err(|e| anyhow::anyhow!("{e:?}"))?
            .records
            .len();
    }
    assert_eq!(seen, n);
    let read_range = start.elapsed();
    Ok(Timings {
        write,
        read_by_id,
        read_range,
    })
}

fn native_connection(path: &std::path::Path, sync: &str) -> anyhow::Result<Connection> {
    let conn = Connection::open(path)?;
    conn.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(()))?;
    conn.execute_batch(&format!(
        "PRAGMA synchronous = {sync};
         CREATE TABLE kv (key BLOB PRIMARY KEY NOT NULL, value BLOB NOT NULL) WITHOUT ROWID;
         CREATE TABLE audit (
             agent_id TEXT NOT NULL, seq INTEGER NOT NULL, at INTEGER NOT NULL,
             request_id TEXT NOT NULL, operation TEXT NOT NULL, source TEXT,
             record_type TEXT, outcome TEXT NOT NULL, stored_id TEXT, count INTEGER,
             reason TEXT, PRIMARY KEY (agent_id, seq)) WITHOUT ROWID;"
    ))?;
    Ok(conn)
}

fn varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn text(out: &mut Vec<u8>, s: &str) {
    varint(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

/// The record in the engine's stored encoding (format 2), so values are
/// the same bytes.
fn value(i: usize) -> Vec<u8> {
    let MemoryRecord::Event(event) = record(i) else {
        unreachable!()
    };
    let EventPayload::Ingested(m) = event.payload else {
        unreachable!()
    };
    let mut bytes = vec![2u8, 1];
    text(&mut bytes, &id(i));
    varint(
        &mut bytes,
        ((event.timestamp << 1) ^ (event.timestamp >> 63)) as u64,
    );
    bytes.push(0);
    text(&mut bytes, &m.session_ref);
    text(&mut bytes, &m.summary);
    varint(&mut bytes, m.keywords.len() as u64);
    for keyword in &m.keywords {
        text(&mut bytes, keyword);
    }
    bytes
}

/// A record id that looks random, as the engine's do (32 hex digits).
fn id(i: usize) -> String {
    let a = (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let b = a.rotate_left(29).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    format!("{a:016x}{b:016x}")
}

fn time_key(i: usize) -> Vec<u8> {
    let mut key = b"bench/TE".to_vec();
    key.extend_from_slice(&((1_700_000_000_000 + i as i64) as u64 ^ (1 << 63)).to_be_bytes());
    key.extend_from_slice(&(i as u64).to_be_bytes());
    key
}

fn keyword_key(keyword: &str, i: usize) -> Vec<u8> {
    let mut key = b"bench/W".to_vec();
    key.extend_from_slice(&(keyword.len() as u16).to_be_bytes());
    key.extend_from_slice(keyword.as_bytes());
    key.extend_from_slice(&(i as u64).to_be_bytes());
    key
}

/// What a native baseline does per write (see the doc comment).
#[derive(Clone, Copy, PartialEq)]
enum Baseline {
    Layout,
    Minimal,
    Bare,
}

/// The value of `key`, if the store holds it.
fn native_get(tx: &Connection, key: &[u8]) -> rusqlite::Result<Option<Vec<u8>>> {
    tx.prepare_cached("SELECT value FROM kv WHERE key = ?1")?
        .query_row([key], |r| r.get(0))
        .optional()
}

/// The key of the `i`-th record in `baseline`'s layout.
fn native_record_key(baseline: Baseline, i: usize) -> Vec<u8> {
    match baseline {
        Baseline::Bare => format!("bench/R{i:016x}").into_bytes(),
        _ => format!("bench/R{}", id(i)).into_bytes(),
    }
}

/// Writes `n` records as `baseline` lays them out, a transaction each.
fn native_writes(conn: &mut Connection, n: usize, baseline: Baseline) -> anyhow::Result<()> {
    let indexed = baseline != Baseline::Bare;
    let MemoryRecord::Event(Event {
        payload: EventPayload::Ingested(memory),
        ..
    }) = record(0)
    else {
        unreachable!()
    };
    let get = native_get;
    let record_key = |i| native_record_key(baseline, i);
    for i in 0..n {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        {
            let mut put =
                tx.prepare_cached("INSERT OR REPLACE INTO kv (key, value) VALUES (?1, ?2)")?;
            let stored_id = id(i);
            if indexed {
                let idem = format!("bench/Ireq-{i}").into_bytes();
                assert!(get(&tx, &idem)?.is_none());
                let seq = get(&tx, b"bench/Mseq")?
                    .map_or(0, |v| u64::from_be_bytes(v.try_into().unwrap()))
                    + 1;
                put.execute(params![
                    b"bench/Mseq".as_slice(),
                    seq.to_be_bytes().as_slice()
                ])?;
                put.execute(params![idem, stored_id.as_bytes()])?;
                put.execute(params![time_key(i), stored_id.as_bytes()])?;
            }
            if baseline == Baseline::Layout {
                for keyword in &memory.keywords {
                    put.execute(params![keyword_key(keyword, i), stored_id.as_bytes()])?;
                }
                tx.prepare_cached(
                    "INSERT INTO audit (seq, at, agent_id, request_id, operation, source,
                                        record_type, outcome, stored_id)
                     VALUES (?5, ?1, 'bench', ?2, 'write', ?3, 'EVENT', 'ACCEPTED', ?4)",
                )?
                .execute(params![
                    1_700_000_000_000i64 + i as i64,
                    format!("req-{i}"),
                    r#"{"agent_id":"bench","component":"COGNITION","actor":"SYSTEM"}"#,
                    stored_id,
                    i as i64,
                ])?;
            }
            put.execute(params![record_key(i), value(i)])?;
        }
        tx.commit()?;
    }
    Ok(())
}

/// Reads the `n` records page by page in time order (through the time
/// index when `baseline` has one).
fn native_range(conn: &Connection, n: usize, baseline: Baseline) -> anyhow::Result<()> {
    let indexed = baseline != Baseline::Bare;
    let get = native_get;
    let record_key = |i| native_record_key(baseline, i);
    let mut seen = 0;
    let mut scan = conn.prepare_cached(
        "SELECT key, value FROM kv WHERE key >= ?1 AND key < ?2 ORDER BY key LIMIT ?3",
    )?;
    for page in 0..n.div_ceil(PAGE as usize) {
        let first = page * PAGE as usize;
        if indexed {
            // Index entries, then each record by id, as the layout needs.
            let ids: Vec<Vec<u8>> = scan
                .query_map(
                    params![time_key(first), time_key(first + PAGE as usize), PAGE],
                    |r| r.get(1),
                )?
                .collect::<Result<_, _>>()?;
            for id in ids {
                let key = [b"bench/R".as_slice(), &id].concat();
                seen += usize::from(get(conn, &key)?.is_some());
            }
        } else {
            let rows: Vec<(Vec<u8>, Vec<u8>)> = scan
                .query_map(
                    params![record_key(first), record_key(first + PAGE as usize), PAGE],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )?
                .collect::<Result<_, _>>()?;
            seen += rows.len();
        }
    }
    assert_eq!(seen, n);
    Ok(())
}

fn native_run(
    n: usize,
    dir: &std::path::Path,
    baseline: Baseline,
    sync: Synchronous,
) -> anyhow::Result<Timings> {
    let name = match baseline {
        Baseline::Layout => "layout.db",
        Baseline::Minimal => "minimal.db",
        Baseline::Bare => "bare.db",
    };
    let sync = match sync {
        Synchronous::Full => "FULL",
        Synchronous::Normal => "NORMAL",
    };
    let mut conn = native_connection(&dir.join(name), sync)?;
    let start = Instant::now();
    native_writes(&mut conn, n, baseline)?;
    let write = start.elapsed();
    let start = Instant::now();
    for i in 0..n {
        assert!(native_get(&conn, &native_record_key(baseline, i))?.is_some());
    }
    let read_by_id = start.elapsed();
    let start = Instant::now();
    native_range(&conn, n, baseline)?;
    let read_range = start.elapsed();
    Ok(Timings {
        write,
        read_by_id,
        read_range,
    })
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let n: usize = args.first().map(|a| a.parse()).transpose()?.unwrap_or(2000);
    let sync = match args.get(1).map(String::as_str) {
        Some("normal") => Synchronous::Normal,
        _ => Synchronous::Full,
    };
    let dir = tempfile::tempdir()?;
    let options = SqliteOptions {
        synchronous: sync,
        ..SqliteOptions::default()
    };
    let store = Arc::new(SqliteBackend::open_with(
        dir.path().join("engram.db"),
        &options,
    )?);
    let engram = engram_run(n, store.clone(), store)?;
    let in_memory = engram_run(
        n,
        Arc::new(MemoryBackend::new()),
        Arc::new(MemoryAudit::new()),
    )?;
    let layout = native_run(n, dir.path(), Baseline::Layout, sync)?;
    let minimal = native_run(n, dir.path(), Baseline::Minimal, sync)?;
    let bare = native_run(n, dir.path(), Baseline::Bare, sync)?;

    println!(
        "engram io benchmark: {n} EVENT records, SQLite WAL, synchronous={sync:?}, one commit per write"
    );
    println!(
        "{:<24} {:>10} {:>10} {:>10} {:>10} {:>10} {:>9} {:>9} {:>9}",
        "operation (per record)",
        "engram µs",
        "layout µs",
        "minimal µs",
        "bare µs",
        "in-mem µs",
        "× layout",
        "× minimal",
        "× bare"
    );
    let rows = [
        ("write", &|t: &Timings| t.write as Duration),
        ("read by id", &|t: &Timings| t.read_by_id),
        ("read range (100/page)", &|t: &Timings| t.read_range),
    ] as [(&str, &dyn Fn(&Timings) -> Duration); 3];
    let per = |d: Duration| d.as_secs_f64() * 1e6 / n as f64;
    for (name, pick) in rows {
        let e = pick(&engram);
        let (l, mi, b) = (pick(&layout), pick(&minimal), pick(&bare));
        println!(
            "{:<24} {:>10.2} {:>10.2} {:>10.2} {:>10.2} {:>10.2} {:>9.2} {:>9.2} {:>9.2}",
            name,
            per(e),
            per(l),
            per(mi),
            per(b),
            per(pick(&in_memory)),
            e.as_secs_f64() / l.as_secs_f64(),
            e.as_secs_f64() / mi.as_secs_f64(),
            e.as_secs_f64() / b.as_secs_f64()
        );
    }
    println!(
        "engram: the component on SQLite. layout, minimal, bare: rusqlite natively (see the doc comment)."
    );
    println!("in-mem: the component on the in-memory store and trail: the engine's own cost.");
    Ok(())
}
