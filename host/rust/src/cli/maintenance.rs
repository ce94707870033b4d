//! `engram maintenance …`: offline work on whole domains under their
//! maintenance lock (IO-W7).

use super::{BAD_INPUT, Exit, FAILURE, OK, REFUSED, open_store};
use crate::binding as engram;
use crate::knowledge_graph;
use crate::platform::{self, Progress, Store};
use engram::Mode;
use engram::export::{ExportedItem, MaintenanceError};
use engram::json::ExportLine as Line;
use engram::types::PrivacyTier;
use std::io::{BufRead, BufWriter, Write};
use std::path::PathBuf;

/// The maintenance commands.
#[derive(clap::Subcommand)]
pub enum Maintenance {
    /// Write records as MAINTENANCE: one request as JSON, or JSON Lines with
    /// --batch. COGNITION writes are REJECTED here (IO-W7).
    Write(super::Io),
    /// Export domains as JSON Lines: every record with its id, write order
    /// and transaction times, every answered request id, every key tier.
    Export {
        /// Only these agents' domains; every domain in the store when absent.
        #[arg(long)]
        agent: Vec<String>,
        /// The file to write; standard output when absent.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Import an export back: same ids, same times, every index rebuilt.
    /// Items already held exactly so are passed over, so an import can be
    /// run again.
    Import {
        /// The export file; standard input when absent or `-`.
        file: Option<PathBuf>,
    },
    /// Import the knowledge graph of the reference MCP memory server (its
    /// `memory.jsonl`) into an agent's domain, as `engram mcp --tools
    /// knowledge-graph` keeps it: entities the domain lacks are created,
    /// observations they lack added, relations it lacks created. The file is
    /// read and checked whole first: a line that is not an entity or a
    /// relation imports nothing. Importing the same file again changes
    /// nothing.
    ImportGraph {
        /// The agent whose domain gets the graph.
        #[arg(long, value_parser = super::parse_agent)]
        agent: String,
        /// The `memory.jsonl` file; standard input when absent or `-`.
        file: Option<PathBuf>,
    },
    /// Forget an agent: every record, index entry and idempotency entry of
    /// its domain is removed; the audit trail keeps only that it happened.
    Forget {
        /// The agent whose domain goes.
        #[arg(long, value_parser = super::parse_agent)]
        agent: String,
    },
    /// Remove every record whose expiry has passed (`--expire-after`) from
    /// every index, each with an EXPIRE entry in the audit trail. Answers
    /// `{"agent_id","expired"}` per domain.
    Expire {
        /// Only these agents' domains; every domain in the store when absent.
        #[arg(long)]
        agent: Vec<String>,
    },
    /// Break the maintenance lock of an agent's domain, left behind by a
    /// process that died while holding it.
    Unlock {
        /// The agent whose lock goes.
        #[arg(long, value_parser = super::parse_agent)]
        agent: String,
    },
}

/// Items one export call returns at most: the default read-limit ceiling
/// of the engine the CLI opens.
const EXPORT_PAGE: u32 = 1_000;
pub fn run(store: &str, command: Maintenance) -> Result<u8, Exit> {
    match command {
        Maintenance::Write(io) => super::write(store, &io, Mode::Maintenance),
        Maintenance::Export { agent, out } => {
            let storage = open_store(store, false)?;
            let agents = if agent.is_empty() {
                platform::domains(&storage).map_err(failure)?
            } else {
                agent
            };
            export(&storage, &agents, out)
        }
        Maintenance::Import { file } => {
            let lines = read_lines(file)?;
            let storage = open_store(store, true)?;
            import(&storage, lines)
        }
        Maintenance::ImportGraph { agent, file } => {
            let (name, text) = read_text(file)?;
            let items = knowledge_graph::parse_jsonl(&text)
                .map_err(|why| Exit(BAD_INPUT, format!("{name}, {why}")))?;
            let storage = open_store(store, true)?;
            let mut domain =
                super::open_in(&storage, &agent, Mode::Maintenance, PrivacyTier::Private)
                    .map_err(failure)?;
            let mut graph = knowledge_graph::KnowledgeGraph::new(
                &mut domain,
                &agent,
                engram::types::SourceComponent::Maintenance,
            );
            if let Some((line, why)) = graph.check(&items) {
                return Err(Exit(
                    BAD_INPUT,
                    format!("{name}, line {line}: {why}; nothing was imported"),
                ));
            }
            let merged = graph.merge(&items).map_err(|e| match e {
                knowledge_graph::Error::Failed(error) => failure(error),
                refused => Exit(REFUSED, format!("{name}: {refused}")),
            })?;
            let mut answer = serde_json::json!({"agent_id": agent});
            answer["graph"] = serde_json::json!(merged);
            println!("{answer}");
            Ok(OK)
        }
        Maintenance::Forget { agent } => {
            let storage = open_store(store, false)?;
            let bar = Progress::new(None, "forgetting");
            let removed = platform::forget(&storage, &agent, &bar).map_err(failure)?;
            bar.finish_and_clear();
            println!(
                "{}",
                serde_json::json!({"agent_id": agent, "removed": removed})
            );
            Ok(OK)
        }
        Maintenance::Expire { agent } => {
            let storage = open_store(store, false)?;
            let agents = if agent.is_empty() {
                platform::domains(&storage).map_err(failure)?
            } else {
                agent
            };
            for agent in agents {
                let mut domain =
                    super::open_in(&storage, &agent, Mode::Maintenance, PrivacyTier::Private)
                        .map_err(failure)?;
                let expired = engram_model::size::expire_all(
                    |limit| {
                        domain
                            .expire(limit)
                            .map_err(Err)
                            .and_then(|a| a.map_err(Ok))
                    },
                    |e| match e {
                        Ok(MaintenanceError::LimitOutOfBounds(ceiling)) => Some(*ceiling),
                        _ => None,
                    },
                )
                .map_err(|e| match e {
                    Ok(refusal) => refused_expiry(&agent, refusal),
                    Err(error) => failure(error),
                })?;
                println!(
                    "{}",
                    serde_json::json!({"agent_id": agent, "expired": expired})
                );
            }
            Ok(OK)
        }
        Maintenance::Unlock { agent } => {
            let storage = open_store(store, false)?;
            let broken = platform::break_lock(&storage, &agent).map_err(failure)?;
            println!(
                "{}",
                serde_json::json!({"agent_id": agent, "unlocked": broken})
            );
            Ok(OK)
        }
    }
}

fn failure(e: impl Into<anyhow::Error>) -> Exit {
    Exit(FAILURE, super::shown(&e.into()))
}

fn refused(agent: &str, e: MaintenanceError) -> Exit {
    let why = match e {
        MaintenanceError::InvalidItem(why) => why,
        other => format!("{other:?}"),
    };
    Exit(
        REFUSED,
        format!("{agent}: nothing of the batch was imported: {why}"),
    )
}

fn refused_expiry(agent: &str, e: MaintenanceError) -> Exit {
    Exit(
        REFUSED,
        format!("{agent}: expired records could not be removed: {e:?}"),
    )
}

fn export(storage: &Store, agents: &[String], out: Option<PathBuf>) -> Result<u8, Exit> {
    let sink: Box<dyn Write> = match &out {
        Some(path) => Box::new(
            std::fs::File::create(path)
                .map_err(|e| Exit(FAILURE, format!("{}: {e}", path.display())))?,
        ),
        None => Box::new(std::io::stdout().lock()),
    };
    let mut sink = BufWriter::new(sink);
    let bar = Progress::new(None, "exporting");
    for agent in agents {
        let mut domain = super::open_in(storage, agent, Mode::Maintenance, PrivacyTier::Private)
            .map_err(failure)?;
        let mut start: Option<Vec<u8>> = None;
        loop {
            let page = domain
                .export_page(start.as_deref(), EXPORT_PAGE)
                .map_err(failure)?
                .map_err(|e| refused(agent, e))?;
            for item in page.items {
                let line = Line {
                    agent_id: agent.clone(),
                    item: item.into(),
                };
                serde_json::to_writer(&mut sink, &line).map_err(failure)?;
                sink.write_all(b"\n").map_err(failure)?;
                bar.inc(1);
            }
            match page.next {
                Some(next) => start = Some(next),
                None => break,
            }
        }
    }
    sink.flush().map_err(failure)?;
    bar.finish_and_clear();
    Ok(OK)
}

/// Reads and parses every line before anything runs.
/// The text of `file` (standard input when absent or `-`) and its name.
fn read_text(file: Option<PathBuf>) -> Result<(String, String), Exit> {
    use std::io::Read;
    let (name, bytes) = match file {
        Some(path) if path.as_os_str() != "-" => {
            let name = path.display().to_string();
            let bytes =
                std::fs::read(&path).map_err(|e| Exit(BAD_INPUT, format!("{name}: {e}")))?;
            (name, bytes)
        }
        _ => {
            let mut bytes = Vec::new();
            std::io::stdin()
                .read_to_end(&mut bytes)
                .map_err(|e| Exit(BAD_INPUT, format!("standard input: {e}")))?;
            ("standard input".to_owned(), bytes)
        }
    };
    match String::from_utf8(bytes) {
        Ok(text) => Ok((name, text)),
        Err(e) => {
            let at = e.utf8_error().valid_up_to();
            let line = e.as_bytes()[..at].iter().filter(|b| **b == b'\n').count() + 1;
            Err(Exit(
                BAD_INPUT,
                format!("{name}, line {line}: not UTF-8 (byte {at})"),
            ))
        }
    }
}

fn read_lines(file: Option<PathBuf>) -> Result<Vec<Line>, Exit> {
    let (name, reader): (String, Box<dyn BufRead>) = match file {
        Some(path) if path.as_os_str() != "-" => {
            let file = std::fs::File::open(&path)
                .map_err(|e| Exit(BAD_INPUT, format!("{}: {e}", path.display())))?;
            (
                path.display().to_string(),
                Box::new(std::io::BufReader::new(file)),
            )
        }
        _ => ("standard input".into(), Box::new(std::io::stdin().lock())),
    };
    let mut lines = Vec::new();
    for (i, text) in reader.lines().enumerate() {
        let text = text.map_err(|e| Exit(BAD_INPUT, format!("{name}: {e}")))?;
        if text.trim().is_empty() {
            continue;
        }
        let line = serde_json::from_str(&text)
            .map_err(|e| Exit(BAD_INPUT, format!("{name}, line {}: {e}", i + 1)))?;
        lines.push(line);
    }
    Ok(lines)
}

fn import(storage: &Store, lines: Vec<Line>) -> Result<u8, Exit> {
    let bar = Progress::new(Some(lines.len() as u64), "importing");
    let mut groups: Vec<(String, Vec<ExportedItem>)> = Vec::new();
    for line in lines {
        match groups.last_mut() {
            Some((agent, items)) if *agent == line.agent_id => items.push(line.item.into()),
            _ => groups.push((line.agent_id, vec![line.item.into()])),
        }
    }
    let mut answers = Vec::new();
    for (agent, items) in groups {
        let mut domain = super::open_in(storage, &agent, Mode::Maintenance, PrivacyTier::Private)
            .map_err(failure)?;
        let mut new = 0;
        for batch in engram::json::import_batches(&items) {
            new += domain
                .import(batch)
                .map_err(failure)?
                .map_err(|e| refused(&agent, e))?;
            bar.inc(batch.len() as u64);
        }
        answers.push(serde_json::json!({"agent_id": agent, "items": items.len(), "new": new}));
    }
    bar.finish_and_clear();
    for answer in answers {
        println!("{answer}");
    }
    Ok(OK)
}
