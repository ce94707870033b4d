//! The `engram` command line: the memory IO contract and execution cycles
//! on a store. One source for both builds of the command: native (over this
//! crate's library) and for `wasm32-wasip2` (`engram-cli.wasm`, over the
//! engine's exports and a provider's store); each gives it a binding of the
//! WIT (`crate::binding`, which names the same types, modules and `Domain`
//! calls in both) and a `crate::platform` (how a store and a domain are
//! opened): `native.rs` and `wasi.rs`.
//!
//! - `args.rs`: the commands and options (clap), and their value parsers;
//! - `commands.rs`: `write`, `read`, `remember`, `recall`, the lookups,
//!   `audit` and `mcp`, a function each;
//! - `cycle.rs`: `cycle`, one turn or a batch; `demo.rs`: `demo`;
//! - `maintenance.rs`: `engram maintenance …`;
//! - `output.rs`: reading requests and printing answers.

mod args;
mod commands;
mod cycle;
mod demo;
mod maintenance;
mod output;

pub use args::McpTools;

use crate::binding as engram;
use crate::platform::{self, Store};
use args::{Cli, Command};
use clap::Parser;
use engram::Mode;
use engram::types::PrivacyTier;
use std::path::Path;

/// Every write was accepted and every read answered with records.
const OK: u8 = 0;
/// A write was REJECTED or a read refused; the answers were printed.
const REFUSED: u8 = 1;
/// Bad usage: options that do not make a command.
const USAGE: u8 = 2;
/// The input could not be read or is not valid JSON for the command;
/// nothing was run and nothing written.
const BAD_INPUT: u8 = 3;
/// The store could not be opened or the engine failed.
const FAILURE: u8 = 4;

/// A failure that ends the command: its exit code and one-line message.
struct Exit(u8, String);

/// A failure of the store or the engine, shown on one line (`--verbose`:
/// in full).
fn failure(e: impl Into<anyhow::Error>) -> Exit {
    Exit(FAILURE, shown(&e.into()))
}

/// The options every command shares: where the store is and what its
/// reads may return.
struct Global {
    store: String,
    ceiling: PrivacyTier,
}

/// What every domain the command opens is told: how long what it writes is
/// kept (`--expire-after`) and the time it runs at (`--now`).
#[derive(Clone, Copy, Default)]
struct Opening {
    expire_after: Option<u64>,
    now: Option<i64>,
}

static OPENING: std::sync::OnceLock<Opening> = std::sync::OnceLock::new();

fn opening() -> Opening {
    OPENING.get().copied().unwrap_or_default()
}

/// Whether failures are printed in full (`--verbose`).
static VERBOSE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Runs the command line of the process: its exit code. A usage error is
/// printed by clap and answered 2, help and the version 0.
pub fn main() -> u8 {
    main_with(std::env::args_os())
}

/// Runs the command line `args` (the program's name first) in this
/// process, printing to its standard output and error: its exit code, as
/// [`main`]. Output that cannot be written (a closed pipe, a full disk)
/// never panics: an answer that cannot be printed is a failure (exit 4),
/// and a message that cannot be printed is lost, its exit code kept.
pub fn main_with<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(error) => {
            let _ = error.print();
            return u8::try_from(error.exit_code()).unwrap_or(USAGE);
        }
    };
    let endpoint = match (cli.embedder_url, cli.embedder_model) {
        (Some(url), Some(model)) => Some(engram_model::embedding::Endpoint {
            url,
            model,
            key: cli.embedder_key,
            prefixes: cli.embedder_query_prefix.zip(cli.embedder_passage_prefix),
            timeout: std::time::Duration::from_millis(cli.embedder_timeout),
        }),
        (Some(_), None) => {
            output::say("engram: --embedder-url needs --embedder-model (ENGRAM_EMBEDDER_MODEL)");
            return USAGE;
        }
        _ => None,
    };
    platform::configure(cli.no_cache, endpoint);
    VERBOSE.store(cli.verbose, std::sync::atomic::Ordering::Relaxed);
    let _ = OPENING.set(Opening {
        expire_after: cli.expire_after,
        now: cli.now,
    });
    let global = Global {
        store: cli.store,
        ceiling: cli.tier_ceiling,
    };
    match run(&global, cli.command) {
        Ok(code) => code,
        Err(Exit(code, message)) => {
            output::say(&format!(
                "engram: {}",
                engram_model::size::one_line(&message)
            ));
            code
        }
    }
}

/// Runs one command.
fn run(global: &Global, command: Command) -> Result<u8, Exit> {
    match command {
        Command::Write(io) => commands::write(&global.store, &io, Mode::Online),
        Command::Read(io) => commands::read(global, &io),
        Command::Cycle(args) => cycle::cycle(global, args),
        Command::Remember(args) => commands::remember(global, args),
        Command::Recall(args) => commands::recall(global, args),
        Command::Demo(args) => demo::demo(&global.store, &args.question, args.token_budget),
        Command::History(args) => commands::history(global, args),
        Command::AsOf(args) => commands::as_of(global, args),
        Command::List(args) => commands::list(global, args),
        Command::Entities(args) => commands::entities(global, args),
        Command::Relationships(args) => commands::relationships(global, args),
        Command::Traverse(args) => commands::traverse(global, args),
        Command::Maintenance(command) => maintenance::run(&global.store, command),
        Command::Mcp(args) => commands::mcp(global, args),
        Command::Serve(args) => commands::serve(global, args),
        Command::Audit(args) => commands::audit(&global.store, args),
    }
}

/// An error as the user sees it: each cause's first line, the engine's
/// wasm backtrace left out; everything with `--verbose`.
pub fn shown(error: &anyhow::Error) -> String {
    if VERBOSE.load(std::sync::atomic::Ordering::Relaxed) {
        return format!("{error:?}");
    }
    let mut parts: Vec<String> = Vec::new();
    for cause in error.chain() {
        let text = cause.to_string();
        let first = text.lines().next().unwrap_or("").trim().to_owned();
        if first.is_empty() || first.starts_with("error while executing at wasm backtrace") {
            continue;
        }
        // anyhow repeats a source's text in a context that formats it in.
        if parts.last().is_some_and(|p| p.ends_with(&first)) {
            continue;
        }
        parts.push(first);
    }
    parts.join(": ")
}

/// Opens the store `spec` names. A SQLite file that does not exist yet is
/// created only by commands that write; a URL (`postgres://…`) is opened by
/// every command, and its tables created if absent.
fn open_store(spec: &str, create: bool) -> Result<Store, Exit> {
    if !create && !spec.contains("://") && !Path::new(spec).exists() {
        return Err(Exit(
            FAILURE,
            format!("{spec}: no store here (write to it first, or pass --store)"),
        ));
    }
    platform::open_store(spec).map_err(failure)
}

/// Opens an agent's domain in `mode`, its reads restricted to `ceiling`,
/// as the command's options say ([`Opening`]).
fn open_in(
    store: &Store,
    agent: &str,
    mode: Mode,
    ceiling: PrivacyTier,
) -> Result<engram::Domain, Exit> {
    let mut domain = platform::open_domain(store, agent, mode, ceiling).map_err(failure)?;
    let Opening { expire_after, now } = opening();
    domain.set_expire_after(expire_after);
    if now.is_some() {
        domain.set_time(now);
    }
    Ok(domain)
}

/// Opens an agent's domain online, its reads restricted to the command's
/// ceiling; the store is created when `create` (a command that writes).
fn open_domain(global: &Global, agent: &str, create: bool) -> Result<engram::Domain, Exit> {
    let store = open_store(&global.store, create)?;
    open_in(&store, agent, Mode::Online, global.ceiling)
}
