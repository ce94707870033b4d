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
use std::path::Path;
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

/// Median and p99 of the time to open a domain (a fresh instance), and of
/// the time to open it and answer one read.
fn open_and_read(
    engram: &Engram,
    backend: &Arc<dyn Backend>,
    audit: &Arc<dyn AuditSink>,
    n: usize,
) -> anyhow::Result<[Duration; 4]> {
    let mut seed = engram.open("bench", Mode::Online, backend.clone(), audit.clone())?;
    if !matches!(seed.write(&record())?, WriteResult::Accepted(_)) {
        anyhow::bail!("the seed write was rejected");
    }
    drop(seed);
    let mut opens = Vec::with_capacity(n);
    let mut totals = Vec::with_capacity(n);
    for _ in 0..n {
        let start = Instant::now();
        let mut domain = engram.open("bench", Mode::Online, backend.clone(), audit.clone())?;
        let opened = start.elapsed();
        let read = domain.read(&latest())?;
        totals.push(start.elapsed());
        opens.push(opened);
        assert_eq!(read.map_err(|e| anyhow::anyhow!("{e:?}"))?.records.len(), 1);
    }
    let pick = |mut times: Vec<Duration>| {
        times.sort();
        (times[n / 2], times[(n * 99 / 100).min(n - 1)])
    };
    let (open_p50, open_p99) = pick(opens);
    let (p50, p99) = pick(totals);
    Ok([open_p50, open_p99, p50, p99])
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

/// RSS before and after opening `live` domains that each answered a read,
/// measured in a process of its own so that neither allocator inherits the
/// other's heap: this program runs itself with `ENGRAM_BENCH_RSS` set.
fn live_domains(pooled: bool, live: usize, cache: &std::path::Path) -> anyhow::Result<(u64, u64)> {
    let out = std::process::Command::new(std::env::current_exe()?)
        .env(
            "ENGRAM_BENCH_RSS",
            if pooled { "pooled" } else { "on-demand" },
        )
        .arg(live.to_string())
        .arg(cache)
        .output()?;
    if !out.status.success() {
        anyhow::bail!(
            "the RSS run failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let text = String::from_utf8(out.stdout)?;
    let mut numbers = text.split_whitespace().map(str::parse::<u64>);
    match (numbers.next(), numbers.next()) {
        (Some(Ok(before)), Some(Ok(after))) => Ok((before, after)),
        _ => anyhow::bail!("the RSS run printed {text:?}"),
    }
}

/// The RSS run: prints the bytes resident before and after.
fn live_domains_here(pooled: bool) -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let live: usize = args.next().unwrap_or_default().parse()?;
    let cache = std::path::PathBuf::from(args.next().unwrap_or_default());
    let engram = engram(pooled, Some(&cache))?;
    let backend: Arc<dyn Backend> = Arc::new(MemoryBackend::new());
    let audit: Arc<dyn AuditSink> = Arc::new(MemoryAudit::new());
    let mut domains = Vec::with_capacity(live);
    let before = rss()?;
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
    println!("{before} {after}");
    Ok(())
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1 << 20) as f64
}

/// The times of starting an Engram: compiling the component, then loading
/// it from `cache` pooled and on demand (the median of 5 each).
fn start_up(cache: &Path) -> anyhow::Result<[Duration; 3]> {
    let start = Instant::now();
    let compiled = engram(true, Some(cache))?;
    let compile = start.elapsed();
    assert_eq!(compiled.origin(), engram::Origin::Compiled);
    drop(compiled);
    let load = |pooled: bool| -> anyhow::Result<Duration> {
        let mut loads = Vec::new();
        for _ in 0..5 {
            let start = Instant::now();
            let loaded = engram(pooled, Some(cache))?;
            loads.push(start.elapsed());
            assert_eq!(loaded.origin(), engram::Origin::Cache);
        }
        loads.sort();
        Ok(loads[loads.len() / 2])
    };
    let load_pooled = load(true)?;
    let load_on_demand = load(false)?;

    Ok([compile, load_pooled, load_on_demand])
}

/// A row of the per-domain table: its name, and p50 and p99 pooled and on
/// demand.
type Row = (String, [Duration; 2], [Duration; 2]);

/// Opening a domain, and opening it plus one read, `n` times per store,
/// pooled and on demand.
fn per_domain(n: usize, dir: &Path, cache: &Path) -> anyhow::Result<Vec<Row>> {
    let pooled = engram(true, Some(cache))?;
    let on_demand = engram(false, Some(cache))?;
    let sqlite = Arc::new(SqliteBackend::open(dir.join("engram.db"))?);
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
        let pooled = open_and_read(&pooled, backend, audit, n)?;
        let on_demand = open_and_read(&on_demand, backend, audit, n)?;
        if rows.is_empty() {
            let open = |t: [Duration; 4]| [t[0], t[1]];
            rows.push((
                "open a domain (instantiate)".to_owned(),
                open(pooled),
                open(on_demand),
            ));
        }
        let total = |t: [Duration; 4]| [t[2], t[3]];
        rows.push((
            format!("open + one read, {store}"),
            total(pooled),
            total(on_demand),
        ));
    }
    Ok(rows)
}

fn main() -> anyhow::Result<()> {
    if let Ok(kind) = std::env::var("ENGRAM_BENCH_RSS") {
        return live_domains_here(kind == "pooled");
    }
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
    let start = start_up(&cache)?;
    let rows = per_domain(n, dir.path(), &cache)?;
    let pooled = live_domains(true, live, &cache)?;
    let on_demand = live_domains(false, live, &cache)?;
    report(n, live, &rows, [pooled, on_demand], start);
    Ok(())
}

/// Prints the tables.
fn report(n: usize, live: usize, rows: &[Row], rss: [(u64, u64); 2], start: [Duration; 3]) {
    let [(pool_before, pool_after), (demand_before, demand_after)] = rss;
    let [compile, load_pooled, load_on_demand] = start;
    println!("engram instances benchmark: {n} opens per case, {live} live domains");
    println!();
    println!(
        "{:<34} {:>12} {:>12} {:>13} {:>13} {:>9}",
        "per domain", "pooled p50", "pooled p99", "on-demand p50", "on-demand p99", "× p50"
    );
    for (name, [pm, pp], [dm, dp]) in rows.iter().cloned() {
        println!(
            "{:<34} {:>10.1}µs {:>10.1}µs {:>11.1}µs {:>11.1}µs {:>9.2}",
            name,
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
    println!("{:<38} {:>8}", "start an Engram", "ms");
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!("{:<38} {:>8.1}", "compile the component", ms(compile));
    println!(
        "{:<38} {:>8.1}",
        "load it from the cache, pooled",
        ms(load_pooled)
    );
    println!(
        "{:<38} {:>8.1}",
        "load it from the cache, on-demand",
        ms(load_on_demand)
    );
    println!(
        "{:<38} {:>8.1}",
        "compile ÷ load (pooled)",
        compile.as_secs_f64() / load_pooled.as_secs_f64()
    );
    println!();
    println!("pooled: Config::max_live_domains = Some(1000); on-demand: None. Loads: median of 5.");
    println!("Both: a 64 MiB memory limit, copy-on-write memory images, epoch interruption.");
}
