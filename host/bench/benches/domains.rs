//! Many agents, one process: 1, 8 and 64 threads, each with its own domain,
//! write EVENT records at once through one `Engram` over one SQLite store at
//! `synchronous=FULL` (WAL), with group commit and without, and prints
//! writes per second, µs per write and the ratio.
//!
//! `cargo bench --bench domains` (N = 1024 writes per run, shared by the
//! threads), or `cargo bench --bench domains -- 4096`.
//!
//! Each run starts from an empty store in a folder of its own; the runs of a
//! count alternate between the two settings, three rounds, and the median
//! is printed.

mod common;

use common::record;
use engram::io::{WriteRequest, WriteResult};
use engram::types::*;
use engram::{Engram, Mode, SqliteBackend, SqliteOptions, Synchronous};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

const COUNTS: [usize; 3] = [1, 8, 64];
const ROUNDS: usize = 3;

/// `n` writes shared by `domains` threads, one domain each; the wall time
/// from the moment they all start to the last answer.
fn run(engram: &Engram, domains: usize, n: usize, group_commit: bool) -> anyhow::Result<Duration> {
    let dir = tempfile::tempdir()?;
    let options = SqliteOptions {
        synchronous: Synchronous::Full,
        group_commit,
        ..SqliteOptions::default()
    };
    let store = Arc::new(SqliteBackend::open_with(
        dir.path().join("engram.db"),
        &options,
    )?);
    // Every domain is open and every request built before any thread runs.
    let mut writers = Vec::with_capacity(domains);
    for d in 0..domains {
        let agent = format!("agent-{d}");
        let domain = engram.open(&agent, Mode::Online, store.clone(), store.clone())?;
        let source = WriteSource {
            agent_id: agent,
            component: SourceComponent::Cognition,
            actor: SourceActor::System,
        };
        // The writes of thread d: every domains-th of the n.
        let requests: Vec<WriteRequest> = (d..n)
            .step_by(domains)
            .map(|i| WriteRequest {
                record: record(i),
                source: source.clone(),
                request_id: format!("req-{i}"),
            })
            .collect();
        writers.push((domain, requests));
    }
    let start = Barrier::new(domains + 1);
    std::thread::scope(|scope| {
        let handles: Vec<_> = writers
            .into_iter()
            .map(|(mut domain, requests)| {
                let start = &start;
                scope.spawn(move || -> anyhow::Result<()> {
                    start.wait();
                    for request in &requests {
                        match domain.write(request)? {
                            WriteResult::Accepted(_) => {}
                            WriteResult::Rejected => {
                                anyhow::bail!("a benchmark write was rejected")
                            }
                        }
                    }
                    Ok(())
                })
            })
            .collect();
        start.wait();
        let began = Instant::now();
        for handle in handles {
            handle
                .join()
                .map_err(|_| anyhow::anyhow!("a writer panicked"))??;
        }
        Ok(began.elapsed())
    })
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn main() -> anyhow::Result<()> {
    let n: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(1024);
    let engram = Engram::new()?;
    println!(
        "{n} EVENT writes per run through the component, one process, one SQLite store \
         (WAL, synchronous=FULL), median of {ROUNDS} rounds"
    );
    println!();
    println!(
        "{:>7}  {:>22}  {:>22}  {:>8}",
        "domains", "group commit", "one commit each", "ratio"
    );
    println!(
        "{:>7}  {:>10} {:>11}  {:>10} {:>11}  {:>8}",
        "", "writes/s", "µs/write", "writes/s", "µs/write", ""
    );
    for domains in COUNTS {
        let mut grouped = Vec::with_capacity(ROUNDS);
        let mut alone = Vec::with_capacity(ROUNDS);
        for _ in 0..ROUNDS {
            grouped.push(run(&engram, domains, n, true)?);
            alone.push(run(&engram, domains, n, false)?);
        }
        let (grouped, alone) = (median(grouped), median(alone));
        let rate = |t: Duration| n as f64 / t.as_secs_f64();
        let micros = |t: Duration| t.as_secs_f64() * 1e6 / n as f64;
        println!(
            "{:>7}  {:>10.0} {:>11.1}  {:>10.0} {:>11.1}  {:>7.2}x",
            domains,
            rate(grouped),
            micros(grouped),
            rate(alone),
            micros(alone),
            rate(grouped) / rate(alone)
        );
    }
    println!();
    println!("µs/write: the run's wall time over its writes (all threads together).");
    Ok(())
}
