//! What an agent's domain costs: the time to open one (a fresh instance of
//! the engine) and answer one read, with wasmtime's pooling allocator and,
//! as the baseline in the same run, with on-demand allocation; the resident
//! memory of 1,000 live domains with each; and the time to start an
//! [`Engram`] by compiling the component versus loading it from the cache.
//!
//! `cargo bench --bench instances` (N = 2000 opens per case, 1,000 live
//! domains), or `cargo bench --bench instances -- 5000 1000`.

use engram::io::{Latest, ReadRequest, ReadSelector, WriteRequest, WriteResult};
use engram::types::*;
use engram::{AuditSink, Backend, Config, Engram, MemoryAudit, MemoryBackend, Mode, SqliteBackend};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A store to measure on: its name, its backend and its audit trail.
type Store = (&'static str, Arc<dyn Backend>, Arc<dyn AuditSink>);

fn record() -> WriteRequest {
    WriteRequest {
        record: MemoryRecord::State(State {
            timestamp: 1_700_000_000_000,
            payload: StateSnapshot {
                subject: "mission.current".into(),
                properties: r#"{"goal":"book a flight to Lisbon"}"#.into(),
            },
        }),
        source: WriteSource {
            agent_id: "bench".into(),
            component: SourceComponent::Cognition,
            actor: SourceActor::System,
        },
        request_id: "seed".into(),
    }
}

fn latest() -> ReadRequest {
    ReadRequest {
        record_type: RecordType::State,
        selector: ReadSelector::Latest(Latest { limit: 1 }),
        request_id: "r".into(),
    }
}

fn engram(pooled: bool, cache: Option<&std::path::Path>) -> anyhow::Result<Engram> {
    Engram::with_config(Config {
        max_live_domains: pooled.then_some(1_000),
        cache_dir: cache.map(Into::into),
        ..Config::default()
    })
}

/// Median and p99 of the time to open the domain and answer one read.
fn open_and_read(
    engram: &Engram,
    backend: &Arc<dyn Backend>,
    audit: &Arc<dyn AuditSink>,
    n: usize,
) -> anyhow::Result<(Duration, Duration)> {
    let mut seed = engram.open("bench", Mode::Online, backend.clone(), audit.clone())?;
    if !matches!(seed.write(&record())?, WriteResult::Accepted(_)) {
        anyhow::bail!("the seed write was rejected");
    }
    drop(seed);
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        let start = Instant::now();
        let mut domain = engram.open("bench", Mode::Online, backend.clone(), audit.clone())?;
        let read = domain.read(&latest())?;
        times.push(start.elapsed());
        assert_eq!(read.map_err(|e| anyhow::anyhow!("{e:?}"))?.records.len(), 1);
    }
    times.sort();
    Ok((times[n / 2], times[(n * 99 / 100).min(n - 1)]))
}

/// Resident memory of the process, in bytes.
fn rss() -> anyhow::Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    let line = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .ok_or_else(|| anyhow::anyhow!("no VmRSS in /proc/self/status"))?;
    let kb: u64 = line
        .trim_start_matches("VmRSS:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()?;
    Ok(kb * 1024)
}

/// RSS before and after opening `live` domains that each answered a read.
fn live_domains(engram: &Engram, live: usize) -> anyhow::Result<(u64, u64)> {
    let backend: Arc<dyn Backend> = Arc::new(MemoryBackend::new());
    let audit: Arc<dyn AuditSink> = Arc::new(MemoryAudit::new());
    let before = rss()?;
    let mut domains = Vec::with_capacity(live);
    for i in 0..live {
        let mut domain = engram.open(
            &format!("agent-{i}"),
            Mode::Online,
            backend.clone(),
            audit.clone(),
        )?;
        domain
            .read(&latest())?
            .map_err(|e| anyhow::anyhow!("{e:?}"))?;
        domains.push(domain);
    }
    let after = rss()?;
    drop(domains);
    Ok((before, after))
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1 << 20) as f64
}

fn main() -> anyhow::Result<()> {
    let numbers: Vec<usize> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .map(|a| a.parse())
        .collect::<Result<_, _>>()?;
    let n = numbers.first().copied().unwrap_or(2000);
    let live = numbers.get(1).copied().unwrap_or(1000);
    let dir = tempfile::tempdir()?;

    // Start-up: compile, then load what the compilation left in the cache.
    let cache = dir.path().join("cache");
    let start = Instant::now();
    let compiled = engram(true, Some(&cache))?;
    let compile = start.elapsed();
    assert_eq!(compiled.origin(), engram::Origin::Compiled);
    drop(compiled);
    let mut loads = Vec::new();
    for _ in 0..5 {
        let start = Instant::now();
        let loaded = engram(true, Some(&cache))?;
        loads.push(start.elapsed());
        assert_eq!(loaded.origin(), engram::Origin::Cache);
    }
    loads.sort();
    let load = loads[loads.len() / 2];

    let pooled = engram(true, Some(&cache))?;
    let on_demand = engram(false, Some(&cache))?;
    let sqlite = Arc::new(SqliteBackend::open(dir.path().join("engram.db"))?);
    let stores: [Store; 2] = [
        (
            "in memory",
            Arc::new(MemoryBackend::new()),
            Arc::new(MemoryAudit::new()),
        ),
        ("SQLite", sqlite.clone(), sqlite),
    ];
    let mut rows = Vec::new();
    for (store, backend, audit) in &stores {
        let (pm, pp) = open_and_read(&pooled, backend, audit, n)?;
        let (dm, dp) = open_and_read(&on_demand, backend, audit, n)?;
        rows.push((*store, pm, pp, dm, dp));
    }
    let (pool_before, pool_after) = live_domains(&pooled, live)?;
    let (demand_before, demand_after) = live_domains(&on_demand, live)?;

    println!("engram instances benchmark: {n} opens per case, {live} live domains");
    println!();
    println!(
        "{:<34} {:>12} {:>12} {:>12} {:>12} {:>9}",
        "open a domain + one read",
        "pooled p50",
        "pooled p99",
        "on-demand p50",
        "on-demand p99",
        "× p50"
    );
    for (store, pm, pp, dm, dp) in rows {
        println!(
            "{:<34} {:>10.1}µs {:>10.1}µs {:>11.1}µs {:>11.1}µs {:>9.2}",
            store,
            us(pm),
            us(pp),
            us(dm),
            us(dp),
            dm.as_secs_f64() / pm.as_secs_f64()
        );
    }
    println!();
    println!(
        "{:<34} {:>12} {:>12} {:>12} {:>12}",
        "resident memory (VmRSS)", "before MiB", "after MiB", "added MiB", "KiB/domain"
    );
    for (name, before, after) in [
        ("pooled, {live} live domains", pool_before, pool_after),
        (
            "on-demand, {live} live domains",
            demand_before,
            demand_after,
        ),
    ] {
        let added = after.saturating_sub(before);
        println!(
            "{:<34} {:>12.1} {:>12.1} {:>12.1} {:>12.1}",
            name.replace("{live}", &live.to_string()),
            mib(before),
            mib(after),
            mib(added),
            added as f64 / 1024.0 / live as f64
        );
    }
    println!();
    println!("{:<34} {:>12}", "start an Engram", "ms");
    println!(
        "{:<34} {:>12.1}",
        "compile the component",
        compile.as_secs_f64() * 1e3
    );
    println!(
        "{:<34} {:>12.1}",
        "load it from the cache (median of 5)",
        load.as_secs_f64() * 1e3
    );
    println!(
        "{:<34} {:>12.1}",
        "× faster",
        compile.as_secs_f64() / load.as_secs_f64()
    );
    Ok(())
}
