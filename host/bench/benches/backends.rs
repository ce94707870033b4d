//! Write and read throughput through the engine on SQLite and on
//! PostgreSQL, in the same run, with 1, 2 and 4 host processes at once.
//!
//! `cargo bench --bench backends` (N = 300 writes and reads per host), or
//! `cargo bench --bench backends -- 1000`. PostgreSQL is measured when
//! `ENGRAM_TEST_POSTGRES_URL` names a database (a fresh schema is made and
//! dropped); otherwise SQLite alone, and the output says so.
//!
//! Each host is this binary run again as a child process: it compiles the
//! engine, opens its store, waits for the others, then writes N EVENT
//! records (one commit each) and reads each back by id. Throughput is all
//! hosts' operations over the wall time from the common start to the last
//! host's end. Each host writes to a domain of its own, except in the
//! "one domain" rows, where every host writes to the same agent and the
//! writers race for its id counter.

use engram::io::{ById, ReadRequest, ReadSelector, WriteRequest, WriteResult};
use engram::types::*;
use engram::{Engram, Mode, PostgresBackend, PostgresOptions, Storage};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

const CHILD: &str = "--host-process";

fn record(host: usize, i: usize) -> MemoryRecord {
    MemoryRecord::Event(Event {
        timestamp: 1_700_000_000_000 + (host * 1_000_000 + i) as i64,
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

/// One host: `--host-process STORE AGENT HOST N`. Prints `ready`, waits
/// for a line, writes, prints `wrote SECS REJECTED`, waits for a line,
/// reads, prints `read SECS`.
fn host_process(args: &[String]) -> anyhow::Result<()> {
    let [store, agent, host, n] = args else {
        anyhow::bail!("usage: {CHILD} STORE AGENT HOST N");
    };
    let (host, n): (usize, usize) = (host.parse()?, n.parse()?);
    let storage = Storage::open(store)?;
    let engram = Engram::new()?;
    let mut domain = engram.open(agent, Mode::Online, storage.backend, storage.audit)?;
    let source = WriteSource {
        agent_id: agent.clone(),
        component: SourceComponent::Cognition,
        actor: SourceActor::System,
    };
    let requests: Vec<WriteRequest> = (0..n)
        .map(|i| WriteRequest {
            record: record(host, i),
            source: source.clone(),
            request_id: format!("h{host}-{i}"),
        })
        .collect();
    let mut stdin = std::io::stdin().lock();
    let mut line = String::new();
    println!("ready");
    stdin.read_line(&mut line)?;

    let start = Instant::now();
    let mut ids = Vec::with_capacity(n);
    let mut rejected = 0;
    for request in &requests {
        match domain.write(request)? {
            WriteResult::Accepted(id) => ids.push(id),
            WriteResult::Rejected => rejected += 1,
        }
    }
    println!("wrote {} {rejected}", start.elapsed().as_secs_f64());
    stdin.read_line(&mut line)?;

    let start = Instant::now();
    for id in &ids {
        let read = ReadRequest {
            record_type: RecordType::Event,
            selector: ReadSelector::ById(ById { id: id.clone() }),
            request_id: "r".into(),
        };
        let found = domain.read(&read)?.map_err(|e| anyhow::anyhow!("{e:?}"))?;
        anyhow::ensure!(found.records.len() == 1, "a record went missing");
    }
    println!("read {}", start.elapsed().as_secs_f64());
    Ok(())
}

struct Run {
    writes: usize,
    rejected: usize,
    write_time: Duration,
    reads: usize,
    read_time: Duration,
}

impl Run {
    fn writes_per_s(&self) -> f64 {
        self.writes as f64 / self.write_time.as_secs_f64()
    }
    fn reads_per_s(&self) -> f64 {
        self.reads as f64 / self.read_time.as_secs_f64()
    }
}

type Hosts = Vec<(Child, BufReader<ChildStdout>)>;

/// Reads one line from every host; each must start with `word`.
fn expect(children: &mut Hosts, word: &str) -> anyhow::Result<Vec<Vec<String>>> {
    let mut all = Vec::new();
    for (_, out) in children.iter_mut() {
        let mut line = String::new();
        out.read_line(&mut line)?;
        let fields: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
        anyhow::ensure!(
            fields.first().map(String::as_str) == Some(word),
            "a host answered {line:?}, not {word}"
        );
        all.push(fields);
    }
    Ok(all)
}

/// Lets every host start its next phase.
fn go(children: &mut Hosts) {
    for (child, _) in children.iter_mut() {
        let _ = writeln!(child.stdin.as_mut().expect("piped"), "go");
    }
}

/// Runs `hosts` host processes on `store` at once.
fn run(store: &str, hosts: usize, n: usize, one_domain: bool, tag: &str) -> anyhow::Result<Run> {
    let exe = std::env::current_exe()?;
    let mut children = Hosts::new();
    for host in 0..hosts {
        let agent = if one_domain {
            format!("{tag}-shared")
        } else {
            format!("{tag}-host{host}")
        };
        let mut child = Command::new(&exe)
            .args([CHILD, store, &agent, &host.to_string(), &n.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()?;
        let stdout = BufReader::new(child.stdout.take().expect("piped"));
        children.push((child, stdout));
    }
    expect(&mut children, "ready")?;
    let start = Instant::now();
    go(&mut children);
    let wrote = expect(&mut children, "wrote")?;
    let write_time = start.elapsed();
    let rejected: usize = wrote
        .iter()
        .map(|f| f[2].parse::<usize>().unwrap_or(0))
        .sum();
    let start = Instant::now();
    go(&mut children);
    expect(&mut children, "read")?;
    let read_time = start.elapsed();
    for (mut child, _) in children {
        anyhow::ensure!(child.wait()?.success(), "a host failed");
    }
    let writes = hosts * n - rejected;
    Ok(Run {
        writes,
        rejected,
        write_time,
        reads: writes,
        read_time,
    })
}

/// The PostgreSQL database of `ENGRAM_TEST_POSTGRES_URL`, if set, with a
/// schema of this run's own made ready: its URL, the schema, and the URL
/// whose search path is the schema.
fn postgres_schema() -> anyhow::Result<Option<(String, String, String)>> {
    Ok(match std::env::var("ENGRAM_TEST_POSTGRES_URL") {
        Ok(url) if !url.is_empty() => {
            let schema = format!("engram_bench_{}", std::process::id());
            // Creates the schema and its tables before the hosts start.
            PostgresBackend::open_with(
                &url,
                &PostgresOptions {
                    schema: Some(schema.clone()),
                    ..PostgresOptions::default()
                },
            )?;
            let separator = if url.contains('?') { '&' } else { '?' };
            Some((
                url.clone(),
                schema.clone(),
                format!("{url}{separator}options=-csearch_path%3D{schema}"),
            ))
        }
        _ => None,
    })
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some(CHILD) {
        return host_process(&args[1..]);
    }
    let n: usize = args
        .iter()
        .find(|a| !a.starts_with('-'))
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(300);
    let dir = tempfile::tempdir()?;
    let sqlite = dir.path().join("bench.db");
    let sqlite = sqlite.to_str().expect("a UTF-8 path").to_owned();
    let postgres = postgres_schema()?;

    println!(
        "engram backends benchmark: per host {n} EVENT writes (one commit each), then {n} reads by id"
    );
    println!(
        "{:<10} {:<16} {:>10} {:>10} {:>9} {:>10} {:>10}",
        "store", "hosts", "writes/s", "reads/s", "rejected", "× SQLite w", "× SQLite r"
    );
    let configs = [
        (1, false, "1"),
        (2, false, "2"),
        (4, false, "4"),
        (4, true, "4, one domain"),
    ];
    for (i, (hosts, one_domain, label)) in configs.into_iter().enumerate() {
        let tag = format!("c{i}");
        let base = run(&sqlite, hosts, n, one_domain, &tag)?;
        let row = |store: &str, r: &Run| {
            println!(
                "{:<10} {:<16} {:>10.0} {:>10.0} {:>9} {:>10.2} {:>10.2}",
                store,
                label,
                r.writes_per_s(),
                r.reads_per_s(),
                r.rejected,
                r.writes_per_s() / base.writes_per_s(),
                r.reads_per_s() / base.reads_per_s()
            )
        };
        row("sqlite", &base);
        if let Some((_, _, store)) = &postgres {
            row("postgres", &run(store, hosts, n, one_domain, &tag)?);
        }
    }
    println!(
        "sqlite: one file, WAL, synchronous=FULL. Ratios are against SQLite in the same run and row."
    );
    match &postgres {
        Some((url, schema, _)) => {
            println!(
                "postgres: schema {schema}, synchronous_commit as the server sets it for records"
            );
            let mut client = postgres::Client::connect(url, postgres::NoTls)?;
            client.batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))?;
        }
        None => println!(
            "PostgreSQL not measured: set ENGRAM_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test"
        ),
    }
    Ok(())
}
