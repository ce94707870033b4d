//! `engram mcp` against the library, in one run: N turns remembered (one
//! ingest cycle each) and N questions recalled (ContextSelect, top_k 5),
//! each call timed, through the Rust library on a fresh SQLite file, then
//! through the stdio server (this crate's `engram`, release build) driven
//! by the MCP Python SDK's client (`host/python/bench/mcp_client.py`, in
//! the virtual environment `cargo test --test python` makes) on another.
//! Prints the medians and the ratios.
//!
//! `cargo bench --bench mcp` (N = 100), or `cargo bench --bench mcp -- 300`.

#[path = "common/binary.rs"]
mod binary;

use engram::cycle::{ExecutionPlan, Stage, TurnInput};
use engram::{Domain, Engram, Mode, Storage, plans};
use std::path::Path;
use std::process::Command;
use std::time::Instant;

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// One cycle of `plan` through its stages and the commit, as the server
/// runs `remember` (`commit`) and `recall` (no commit).
fn cycle(
    domain: &mut Domain,
    plan: &ExecutionPlan,
    id: &str,
    input: &TurnInput,
    commit: bool,
) -> anyhow::Result<()> {
    let cycle = domain
        .begin_cycle(plan, "bench", id)?
        .map_err(|e| anyhow::anyhow!("{e:?}"))?;
    for stage in [
        Stage::ContextSelect,
        Stage::SummarizeMemory,
        Stage::PersistMemory,
    ] {
        if plan.steps.iter().any(|s| s.stage == stage) {
            domain
                .run_stage(&cycle, stage, input)?
                .map_err(|e| anyhow::anyhow!("{e:?}"))?;
        }
    }
    if commit {
        domain
            .commit_cycle(&cycle)?
            .map_err(|e| anyhow::anyhow!("{e:?}"))?;
    } else {
        domain.step_output(&cycle, "select")?;
    }
    domain.drop_cycle(cycle)?;
    Ok(())
}

/// Median µs of remember and recall through the library.
fn library(n: usize, path: &Path) -> anyhow::Result<(f64, f64)> {
    let storage = Storage::open(path.to_str().unwrap())?;
    let engram = Engram::new()?;
    let mut domain = engram.open("bench", Mode::Online, storage.backend, storage.audit)?;
    let (ingest, recall) = (plans::ingest(), plans::recall(5));
    let (mut remember_us, mut recall_us) = (Vec::new(), Vec::new());
    for i in 0..n {
        let input = TurnInput {
            user_message: Some(format!(
                "Turn {i}: I booked the hotel number {i} in Lisbon for the trip."
            )),
            model_response: Some(format!("Noted, hotel {i} is booked.")),
        };
        let started = Instant::now();
        cycle(&mut domain, &ingest, &format!("t{i}"), &input, true)?;
        remember_us.push(started.elapsed().as_secs_f64() * 1e6);
    }
    for i in 0..n {
        let input = TurnInput {
            user_message: Some(format!("Which hotel number {i} did I book in Lisbon?")),
            model_response: None,
        };
        let started = Instant::now();
        cycle(&mut domain, &recall, &format!("q{i}"), &input, false)?;
        recall_us.push(started.elapsed().as_secs_f64() * 1e6);
    }
    Ok((median(remember_us), median(recall_us)))
}

/// Median µs of remember and recall through `engram mcp` over stdio.
fn server(n: usize, path: &Path) -> anyhow::Result<(f64, f64)> {
    let python = Path::new(env!("CARGO_TARGET_TMPDIR")).join("python-venv/bin/python");
    anyhow::ensure!(
        python.exists(),
        "the MCP client is not installed: run `cargo test --test python` first"
    );
    let client = Path::new(env!("CARGO_MANIFEST_DIR")).join("../python/bench/mcp_client.py");
    let out = Command::new(python)
        .arg(client)
        .arg(binary::engram())
        .arg(n.to_string())
        .arg(path)
        .output()?;
    anyhow::ensure!(
        out.status.success(),
        "mcp_client.py: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let answer: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    match (answer["remember_us"].as_f64(), answer["recall_us"].as_f64()) {
        (Some(remember), Some(recall)) => Ok((remember, recall)),
        _ => anyhow::bail!("mcp_client.py answered {answer}"),
    }
}

fn main() -> anyhow::Result<()> {
    let n: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(100);
    let dir = tempfile::tempdir()?;
    let (lib_remember, lib_recall) = library(n, &dir.path().join("library.db"))?;
    let (mcp_remember, mcp_recall) = server(n, &dir.path().join("mcp.db"))?;
    println!("N = {n} calls each, synchronous=FULL, medians, µs per call:");
    println!("                           remember     recall");
    println!("  library (Rust)        {lib_remember:11.1} {lib_recall:10.1}");
    println!("  engram mcp (stdio)    {mcp_remember:11.1} {mcp_recall:10.1}");
    println!(
        "  MCP / library         {:11.2} {:10.2}",
        mcp_remember / lib_remember,
        mcp_recall / lib_recall
    );
    Ok(())
}
