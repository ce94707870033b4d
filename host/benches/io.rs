//! Writes N records through the engine component and reads them back, then
//! does the same work natively on rusqlite in the same run, and prints both
//! with their ratio.
//!
//! `cargo bench --bench io` (N = 2000), or `cargo bench --bench io -- 10000`.
//!
//! Two native baselines: *bare* stores each record as one key-value pair in
//! one transaction (the least any store must do); *same layout* does in one
//! transaction the reads and puts the engine's layout does for a write
//! (idempotency check, sequence counter, record, time index), so the gap
//! between it and the engine is the cost of the component boundary, the
//! encoding and the contract checks.

use engram::io::{ById, ByTimeRange, ReadRequest, ReadSelector, WriteRequest, WriteResult};
use engram::types::*;
use engram::{AuditSink, Backend, Engram, MemoryAudit, MemoryBackend, Mode, SqliteBackend};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use std::sync::Arc;
use std::time::{Duration, Instant};

const PAGE: u32 = 100;

fn record(i: usize) -> MemoryRecord {
    MemoryRecord::Event(Event {
        timestamp: 1_700_000_000_000 + i as i64,
        payload: EventPayload::Ingested(IngestedMemory {
            session_ref: format!("session-{}", i / 20),
            summary: format!(
                "The user asked about trip {i} to Lisbon and preferred a direct morning flight."
            ),
            keywords: ["trip", "lisbon", "flight", "morning", "direct"]
                .map(String::from)
                .to_vec(),
        }),
    })
}

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

fn native_connection(path: &std::path::Path) -> anyhow::Result<Connection> {
    let conn = Connection::open(path)?;
    conn.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(()))?;
    conn.execute_batch(
        "PRAGMA synchronous = FULL;
         CREATE TABLE kv (key BLOB PRIMARY KEY NOT NULL, value BLOB NOT NULL) WITHOUT ROWID;",
    )?;
    Ok(conn)
}

/// The record as the engine would encode it, so values are the same size.
fn value(i: usize) -> Vec<u8> {
    let MemoryRecord::Event(event) = record(i) else {
        unreachable!()
    };
    let EventPayload::Ingested(m) = event.payload else {
        unreachable!()
    };
    let mut bytes = vec![1u8];
    bytes.extend(
        format!(
            r#"{{"Event":{{"id":"{i:016x}","event":{{"timestamp":{},"payload":{{"Ingested":{{"session_ref":"{}","summary":"{}","keywords":{:?}}}}}}}}}}}"#,
            event.timestamp, m.session_ref, m.summary, m.keywords
        )
        .bytes(),
    );
    bytes
}

fn time_key(i: usize) -> Vec<u8> {
    let mut key = b"bench/TE".to_vec();
    key.extend_from_slice(&((1_700_000_000_000 + i as i64) as u64 ^ (1 << 63)).to_be_bytes());
    key.extend_from_slice(&(i as u64).to_be_bytes());
    key
}

fn native_run(n: usize, dir: &std::path::Path, same_layout: bool) -> anyhow::Result<Timings> {
    let name = if same_layout { "layout.db" } else { "bare.db" };
    let mut conn = native_connection(&dir.join(name))?;
    let record_key = |i: usize| format!("bench/R{i:016x}").into_bytes();
    let get = |tx: &Connection, key: &[u8]| -> rusqlite::Result<Option<Vec<u8>>> {
        tx.prepare_cached("SELECT value FROM kv WHERE key = ?1")?
            .query_row([key], |r| r.get(0))
            .optional()
    };

    let start = Instant::now();
    for i in 0..n {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        {
            let mut put =
                tx.prepare_cached("INSERT OR REPLACE INTO kv (key, value) VALUES (?1, ?2)")?;
            if same_layout {
                let idem = format!("bench/Ireq-{i}").into_bytes();
                assert!(get(&tx, &idem)?.is_none());
                let seq = get(&tx, b"bench/Mseq")?
                    .map_or(0, |v| u64::from_be_bytes(v.try_into().unwrap()))
                    + 1;
                put.execute(params![
                    b"bench/Mseq".as_slice(),
                    seq.to_be_bytes().as_slice()
                ])?;
                put.execute(params![idem, format!("{i:016x}").into_bytes()])?;
                put.execute(params![time_key(i), format!("{i:016x}").into_bytes()])?;
            }
            put.execute(params![record_key(i), value(i)])?;
        }
        tx.commit()?;
    }
    let write = start.elapsed();

    let start = Instant::now();
    for i in 0..n {
        assert!(get(&conn, &record_key(i))?.is_some());
    }
    let read_by_id = start.elapsed();

    let start = Instant::now();
    let mut seen = 0;
    let mut scan = conn.prepare_cached(
        "SELECT key, value FROM kv WHERE key >= ?1 AND key < ?2 ORDER BY key LIMIT ?3",
    )?;
    for page in 0..n.div_ceil(PAGE as usize) {
        let first = page * PAGE as usize;
        if same_layout {
            // Index entries, then each record by id, as the engine does.
            let ids: Vec<Vec<u8>> = scan
                .query_map(
                    params![time_key(first), time_key(first + PAGE as usize), PAGE],
                    |r| r.get(1),
                )?
                .collect::<Result<_, _>>()?;
            for id in ids {
                let key = [b"bench/R".as_slice(), &id].concat();
                seen += usize::from(get(&conn, &key)?.is_some());
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
    let read_range = start.elapsed();
    Ok(Timings {
        write,
        read_by_id,
        read_range,
    })
}

fn main() -> anyhow::Result<()> {
    let n: usize = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(2000);
    let dir = tempfile::tempdir()?;
    let store = Arc::new(SqliteBackend::open(dir.path().join("engram.db"))?);
    let engram = engram_run(n, store.clone(), store)?;
    let in_memory = engram_run(
        n,
        Arc::new(MemoryBackend::new()),
        Arc::new(MemoryAudit::new()),
    )?;
    let layout = native_run(n, dir.path(), true)?;
    let bare = native_run(n, dir.path(), false)?;

    println!(
        "engram io benchmark: {n} EVENT records, SQLite WAL, synchronous=FULL, one commit per write"
    );
    println!(
        "{:<24} {:>10} {:>10} {:>10} {:>10} {:>9} {:>9}",
        "operation (per record)",
        "engram µs",
        "layout µs",
        "bare µs",
        "in-mem µs",
        "× layout",
        "× bare"
    );
    let rows = [
        ("write", &|t: &Timings| t.write as Duration),
        ("read by id", &|t: &Timings| t.read_by_id),
        ("read range (100/page)", &|t: &Timings| t.read_range),
    ] as [(&str, &dyn Fn(&Timings) -> Duration); 3];
    let per = |d: Duration| d.as_secs_f64() * 1e6 / n as f64;
    for (name, pick) in rows {
        let (e, l, b, m) = (pick(&engram), pick(&layout), pick(&bare), pick(&in_memory));
        println!(
            "{:<24} {:>10.2} {:>10.2} {:>10.2} {:>10.2} {:>9.2} {:>9.2}",
            name,
            per(e),
            per(l),
            per(b),
            per(m),
            e.as_secs_f64() / l.as_secs_f64(),
            e.as_secs_f64() / b.as_secs_f64()
        );
    }
    println!(
        "engram: the component on SQLite. layout, bare: rusqlite natively (see the doc comment)."
    );
    println!("in-mem: the component on the in-memory store and trail: the engine's own cost.");
    Ok(())
}
