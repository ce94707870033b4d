//! The `engram` binary the benches that start processes run: built in
//! release by cargo (a nested run, the flags of the run around it left
//! out), once per bench process, in this workspace's target folder.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The path of the release `engram` binary, built first if it is not up
/// to date; a bench that cannot have it stops saying why.
pub fn engram() -> &'static Path {
    static ENGRAM: OnceLock<PathBuf> = OnceLock::new();
    ENGRAM.get_or_init(|| build().unwrap_or_else(|e| panic!("building `engram`: {e:#}")))
}

fn build() -> anyhow::Result<PathBuf> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.toml");
    let mut command = Command::new(env!("CARGO"));
    engram_build::rust_target::without_host_flags(&mut command)
        .args([
            "build",
            "--release",
            "--locked",
            "--quiet",
            "--manifest-path",
        ])
        .arg(&manifest)
        .args(["-p", "engram", "--bin", "engram", "--message-format=json"]);
    let out = command.output()?;
    anyhow::ensure!(
        out.status.success(),
        "cargo build of `engram` failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)?
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|message| message["target"]["name"] == "engram")
        .find_map(|message| message["executable"].as_str().map(PathBuf::from))
        .ok_or_else(|| anyhow::anyhow!("cargo named no `engram` executable"))
}
