//! `engram maintenance …`: offline work on whole domains under their
//! maintenance lock (IO-W7).

use super::args::Maintenance;
use super::output::{print_lines, write_lines};
use super::{BAD_INPUT, Exit, FAILURE, OK, REFUSED, failure, open_in, open_store};
use crate::binding as engram;
use crate::platform::{self, Progress, Store};
use engram::Mode;
use engram::json::ExportLine as Line;
use engram::types::PrivacyTier;
use engram_mcp::graph as knowledge_graph;
use std::io::{BufRead, BufWriter, Write};
use std::path::PathBuf;

/// Runs one maintenance command on the store `store` names.
pub(super) fn run(store: &str, command: Maintenance) -> Result<u8, Exit> {
    match command {
        Maintenance::Write(io) => super::commands::write(store, &io, Mode::Maintenance),
        Maintenance::Export { agent, out } => {
            let storage = open_store(store, false)?;
            let agents = agents_or_all(&storage, agent)?;
            export(&storage, &agents, out)
        }
        Maintenance::Import { file } => {
            let lines = read_lines(file)?;
            let storage = open_store(store, true)?;
            import(&storage, lines)
        }
        Maintenance::ImportGraph { agent, file } => import_graph(store, &agent, file),
        Maintenance::Forget { agent } => forget(store, &agent),
        Maintenance::Expire { agent } => expire(store, agent),
        Maintenance::Reembed { agent, batch } => reembed(store, agent, batch),
        Maintenance::Unlock { agent } => {
            let storage = open_store(store, false)?;
            let broken = platform::break_lock(&storage, &agent).map_err(failure)?;
            print_value(&serde_json::json!({"agent_id": agent, "unlocked": broken}))
        }
    }
}

/// Prints one answer line.
fn print_value(value: &serde_json::Value) -> Result<u8, Exit> {
    print_lines(vec![value.to_string()])?;
    Ok(OK)
}

/// The agents named, or every domain the store holds when none is.
fn agents_or_all(storage: &Store, agents: Vec<String>) -> Result<Vec<String>, Exit> {
    if agents.is_empty() {
        platform::domains(storage).map_err(failure)
    } else {
        Ok(agents)
    }
}

/// Imports the reference MCP memory server's `memory.jsonl` into an
/// agent's domain: checked whole, then merged.
fn import_graph(store: &str, agent: &str, file: Option<PathBuf>) -> Result<u8, Exit> {
    let (name, text) = read_text(file)?;
    let items = knowledge_graph::parse_jsonl(&text)
        .map_err(|why| Exit(BAD_INPUT, format!("{name}, {why}")))?;
    let storage = open_store(store, true)?;
    let mut domain = open_in(&storage, agent, Mode::Maintenance, PrivacyTier::Private)?;
    let mut graph = knowledge_graph::KnowledgeGraph::new(
        &mut domain,
        agent,
        engram::json::Component::Maintenance,
    );
    if let Some((line, why)) = graph.check(&items) {
        let why = format!("{name}, line {line}: {why}; nothing was imported");
        return Err(Exit(BAD_INPUT, why));
    }
    let merged = graph.merge(&items).map_err(|e| match e {
        knowledge_graph::Error::Failed(error) => failure(error),
        refused => Exit(REFUSED, format!("{name}: {refused}")),
    })?;
    print_value(&serde_json::json!({"agent_id": agent, "graph": merged}))
}

/// Forgets an agent's domain.
fn forget(store: &str, agent: &str) -> Result<u8, Exit> {
    let storage = open_store(store, false)?;
    let bar = Progress::new(None, "forgetting");
    let removed = platform::forget(&storage, agent, &bar).map_err(failure)?;
    bar.finish_and_clear();
    print_value(&serde_json::json!({"agent_id": agent, "removed": removed}))
}

/// Removes the expired records of the agents' domains (every domain when
/// none is named), a line per domain.
fn expire(store: &str, agents: Vec<String>) -> Result<u8, Exit> {
    let storage = open_store(store, false)?;
    let agents = agents_or_all(&storage, agents)?;
    engram_surface::expire_domains(&agents, maintenance_domain(&storage), |answer| {
        Ok(write_lines(vec![answer.to_string()])?)
    })
    .map_err(failure)?
    .map_err(|refused| refused_in(refused, "expired records could not be removed"))?;
    Ok(OK)
}

/// Makes the vectors of the agents' domains (every domain when none is
/// named) again, `batch` memories a commit, a line per domain.
fn reembed(store: &str, agents: Vec<String>, batch: u32) -> Result<u8, Exit> {
    let storage = open_store(store, false)?;
    for agent in agents_or_all(&storage, agents)? {
        let mut domain = open_in(&storage, &agent, Mode::Maintenance, PrivacyTier::Private)?;
        let embedded = engram_surface::Engine::reembed(&mut domain, batch)
            .map_err(failure)?
            .map_err(|refused| {
                Exit(
                    REFUSED,
                    format!(
                        "{agent}: the vectors could not be made: {}",
                        refused["error"].as_str().unwrap_or_default()
                    ),
                )
            })?;
        print_value(&serde_json::json!({"agent_id": agent, "embedded": embedded}))?;
    }
    Ok(OK)
}

/// Opens each agent's domain for maintenance in `storage`, as every
/// command of the store opens it.
fn maintenance_domain(storage: &Store) -> impl FnMut(&str) -> anyhow::Result<engram::Domain> {
    |agent| {
        open_in(storage, agent, Mode::Maintenance, PrivacyTier::Private)
            .map_err(|Exit(_, why)| anyhow::anyhow!(why))
    }
}

/// The refusal of a domain of a store-wide call: its agent, what could not
/// be done, and the engine's words.
fn refused_in((agent, refused): engram_surface::DomainRefusal, what: &str) -> Exit {
    let why = match refused.get("error") {
        Some(serde_json::Value::String(why)) => why.clone(),
        _ => refused.to_string(),
    };
    Exit(REFUSED, format!("{agent}: {what}: {why}"))
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
    engram_surface::export_domains(agents, maintenance_domain(storage), |line| {
        serde_json::to_writer(&mut sink, &line)?;
        sink.write_all(b"\n")?;
        bar.inc(1);
        Ok(())
    })
    .map_err(failure)?
    .map_err(|refused| refused_in(refused, "the domain could not be exported"))?;
    sink.flush().map_err(failure)?;
    bar.finish_and_clear();
    Ok(OK)
}

/// The text of `file` (standard input when absent or `-`) and its name.
fn read_text(file: Option<PathBuf>) -> Result<(String, String), Exit> {
    let (name, bytes) = super::output::read_input(file.as_deref())?;
    match String::from_utf8(bytes) {
        Ok(text) => Ok((name, text)),
        Err(e) => {
            let at = e.utf8_error().valid_up_to();
            let line = e.as_bytes()[..at].iter().filter(|b| **b == b'\n').count() + 1;
            let why = format!("{name}, line {line}: not UTF-8 (byte {at})");
            Err(Exit(BAD_INPUT, why))
        }
    }
}

/// Reads and parses every line of an export before anything runs.
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
    let mut answers = Vec::new();
    engram_surface::import_lines(lines, maintenance_domain(storage), |answer| {
        bar.inc(answer["items"].as_u64().unwrap_or_default());
        answers.push(answer.to_string());
        Ok(())
    })
    .map_err(failure)?
    .map_err(|refused| refused_in(refused, "nothing of the batch was imported"))?;
    bar.finish_and_clear();
    print_lines(answers)?;
    Ok(OK)
}
