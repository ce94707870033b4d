//! The `engram` command: the memory IO contract on an embedded SQLite file.

use anyhow::Context;
use clap::{Parser, Subcommand};
use engram::json::{ReadAnswer, ReadRequest, WriteAnswer, WriteRequest};
use engram::{Engram, Mode, SqliteBackend};
use serde::de::DeserializeOwned;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

/// Every write was accepted and every read answered with records.
const OK: u8 = 0;
/// A write was REJECTED or a read refused; the answers were printed.
const REFUSED: u8 = 1;
/// The input could not be read or is not valid JSON for the command;
/// nothing was run and nothing written.
const BAD_INPUT: u8 = 3;
/// The store could not be opened or the engine failed.
const FAILURE: u8 = 4;

/// Engram: a memory engine for AI agents.
///
/// Exit codes: 0 done; 1 a write was REJECTED or a read refused (the answers
/// are printed); 2 bad usage; 3 unreadable or malformed input (nothing was
/// run); 4 the store or the engine failed.
#[derive(Parser)]
#[command(name = "engram", version)]
struct Cli {
    /// The SQLite file of the store.
    #[arg(long, global = true, env = "ENGRAM_STORE", default_value = "engram.db")]
    store: PathBuf,

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Write records: one request as JSON, or JSON Lines with --batch.
    Write(Io),
    /// Read records: one request as JSON, or JSON Lines with --batch.
    Read(Io),
    /// Print the audit trail as JSON Lines, oldest first.
    Audit {
        /// Only this agent's domain.
        #[arg(long)]
        agent: Option<String>,
        /// How many of the newest entries to print.
        #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=100_000))]
        limit: u32,
    },
}

#[derive(clap::Args)]
struct Io {
    /// The agent whose memory domain the requests go to.
    #[arg(long, env = "ENGRAM_AGENT")]
    agent: String,
    /// Read JSON Lines, one request a line, and answer a line each.
    #[arg(long)]
    batch: bool,
    /// The request file; standard input when absent or `-`.
    file: Option<PathBuf>,
}

/// A failure that ends the command: its one-line message and exit code.
struct Exit(u8, String);

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(Exit(code, message)) => {
            eprintln!("engram: {message}");
            ExitCode::from(code)
        }
    }
}

fn run(cli: Cli) -> Result<u8, Exit> {
    match cli.command {
        Command::Write(io) => {
            let requests: Vec<WriteRequest> = parse_input(&io, "write request")?;
            let mut domain = open_domain(&cli.store, &io.agent, true)?;
            answer_each(requests, |request| {
                let answer = WriteAnswer::from(domain.write(&request.into())?);
                let refused = answer == WriteAnswer::Rejected;
                Ok((serde_json::to_string(&answer)?, refused))
            })
        }
        Command::Read(io) => {
            let requests: Vec<ReadRequest> = parse_input(&io, "read request")?;
            let mut domain = open_domain(&cli.store, &io.agent, false)?;
            answer_each(requests, |request| {
                let answer = ReadAnswer::from(domain.read(&request.into())?);
                let refused = matches!(answer, ReadAnswer::Error { .. });
                Ok((serde_json::to_string(&answer)?, refused))
            })
        }
        Command::Audit { agent, limit } => {
            let store = open_store(&cli.store, false)?;
            let entries = store
                .audit_trail(agent.as_deref(), limit)
                .map_err(|e| Exit(FAILURE, format!("{e:#}")))?;
            let lines = entries
                .iter()
                .map(serde_json::to_string)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| Exit(FAILURE, e.to_string()))?;
            print_lines(lines)?;
            Ok(OK)
        }
    }
}

/// Reads and parses every request before any is run, so malformed input
/// changes nothing.
fn parse_input<T: DeserializeOwned>(io: &Io, what: &str) -> Result<Vec<T>, Exit> {
    let (name, text) = match io.file.as_deref() {
        None => ("standard input".to_string(), read_stdin()?),
        Some(path) if path == Path::new("-") => ("standard input".to_string(), read_stdin()?),
        Some(path) => {
            let name = path.display().to_string();
            let text = std::fs::read_to_string(path)
                .map_err(|e| Exit(BAD_INPUT, format!("{name}: {e}")))?;
            (name, text)
        }
    };
    let bad = |line: Option<usize>, e: serde_json::Error| {
        let at = line.map(|n| format!(" line {n}:")).unwrap_or_default();
        Exit(BAD_INPUT, format!("{name}:{at} not a valid {what}: {e}"))
    };
    if !io.batch {
        return serde_json::from_str(&text)
            .map(|r| vec![r])
            .map_err(|e| bad(None, e));
    }
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(i, line)| serde_json::from_str(line).map_err(|e| bad(Some(i + 1), e)))
        .collect()
}

fn read_stdin() -> Result<String, Exit> {
    let mut text = String::new();
    std::io::stdin()
        .read_to_string(&mut text)
        .map_err(|e| Exit(BAD_INPUT, format!("standard input: {e}")))?;
    Ok(text)
}

fn open_store(path: &Path, create: bool) -> Result<Arc<SqliteBackend>, Exit> {
    if !create && !path.exists() {
        return Err(Exit(
            FAILURE,
            format!(
                "{}: no store here (write to it first, or pass --store)",
                path.display()
            ),
        ));
    }
    SqliteBackend::open(path)
        .map(Arc::new)
        .map_err(|e| Exit(FAILURE, format!("{e:#}")))
}

fn open_domain(path: &Path, agent: &str, create: bool) -> Result<engram::Domain, Exit> {
    let store = open_store(path, create)?;
    let engram = Engram::new().map_err(|e| Exit(FAILURE, format!("{e:#}")))?;
    engram
        .open(agent, Mode::Online, store.clone(), store)
        .map_err(|e| Exit(FAILURE, format!("{e:#}")))
}

/// Runs each request in order and prints its answer on a line of its own.
fn answer_each<T>(
    requests: Vec<T>,
    mut answer: impl FnMut(T) -> anyhow::Result<(String, bool)>,
) -> Result<u8, Exit> {
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let mut code = OK;
    for request in requests {
        let (line, refused) = answer(request).map_err(|e| Exit(FAILURE, format!("{e:#}")))?;
        writeln!(out, "{line}")
            .and_then(|()| out.flush())
            .context("writing the answer")
            .map_err(|e| Exit(FAILURE, format!("{e:#}")))?;
        if refused {
            code = REFUSED;
        }
    }
    Ok(code)
}

fn print_lines(lines: Vec<String>) -> Result<(), Exit> {
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    for line in lines {
        writeln!(out, "{line}").map_err(|e| Exit(FAILURE, e.to_string()))?;
    }
    out.flush().map_err(|e| Exit(FAILURE, e.to_string()))
}
