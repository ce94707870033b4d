//! `cargo run -p engram-dist [-- --out DIR]`: builds the Python wheels
//! (`engram-memory-engine`, one a platform) and sdist, the npm packages
//! (`engram-memory` and its addon's package for each platform) and
//! `engram-cli.wasm` into `DIR` (`dist/` at the workspace's top by
//! default) and prints each one's path and size
//! ([`engram_dist::artifacts::build`]). A failure is one line naming the
//! step that failed (then what it printed).

use anyhow::{Context, Result};
use clap::Parser;
use engram_dist::{artifacts, workspace};
use std::fs;
use std::path::PathBuf;
use std::process::ExitCode;

/// Builds what a user installs into one folder: the Python wheels and
/// sdist, the npm packages and engram-cli.wasm.
#[derive(Parser)]
#[command(name = "engram-dist")]
struct Args {
    /// The folder to write them into (created if absent).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    match build(args.out.unwrap_or_else(|| workspace().join("dist"))) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("engram-dist: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn build(out: PathBuf) -> Result<()> {
    let (out, built) = artifacts::build(&out)?;
    println!("{}", out.display());
    for path in built {
        let size = fs::metadata(&path)
            .with_context(|| format!("reading {}", path.display()))?
            .len();
        println!(
            "  {}  {} ({size} bytes)",
            path.display(),
            artifacts::human(size)
        );
    }
    Ok(())
}
