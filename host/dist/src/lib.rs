//! What a user installs, built from this repository into one folder
//! (`dist/` at the workspace's top unless `--out` names another) by `cargo
//! run -p engram-dist`:
//!
//! - the Python package's wheel (`host/python`), platform-independent
//!   (`py3-none-any`): the engine's components and the schemas are data in
//!   it, wasmtime-py (a dependency from PyPI) runs them;
//! - the npm packages: `engram-memory` (`host/js`, the components
//!   transpiled into it by its pinned jco), and its Node addon for each
//!   platform built ([`javascript::PLATFORMS`]: linux-x64-gnu with cargo,
//!   linux-arm64-gnu cross-built with cargo-zigbuild), each a package of its
//!   own that `engram-memory` names as an optional dependency; nothing else
//!   to download;
//! - `engram-cli.wasm`, the `engram` command line as a WASI 0.2 component,
//!   for `wasmtime run`.
//!
//! The library is what the build shares with the tests: the JavaScript
//! package's npm dependencies installed, the components of this build
//! transpiled into it and its addon built beside it ([`javascript`]), the
//! folder that holds those components ([`components`]), and the reading of
//! an npm tarball ([`tar_entries`]).

pub mod javascript;

use anyhow::{Context, Result, bail};
use flate2::read::GzDecoder;
use std::io::ErrorKind;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The workspace's top folder.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The folder of the components the Python and JavaScript packages carry,
/// with the SQLite and PostgreSQL schemas and the limits' defaults beside
/// them: the output folder of `engram-host-components`' build script.
pub fn components() -> &'static Path {
    Path::new(engram_host_components::HOST)
        .parent()
        .expect("the components are in a folder")
}

/// Runs `command` (`what` names the step), its output captured: the output
/// when it succeeds; otherwise an error that names the step and says why,
/// with what the command printed. A program missing from the `PATH` is
/// named with `needed_for`, what it is needed for.
pub fn run(command: &mut Command, what: &str, needed_for: &str) -> Result<Output> {
    let output = match command.output() {
        Ok(output) => output,
        Err(e) if e.kind() == ErrorKind::NotFound => bail!(
            "{what}: {} not found on the PATH: {needed_for}",
            command.get_program().to_string_lossy()
        ),
        Err(e) => return Err(e).with_context(|| format!("{what}: could not start it")),
    };
    if !output.status.success() {
        let mut printed = String::new();
        for (name, text) in [("stdout", &output.stdout), ("stderr", &output.stderr)] {
            let text = String::from_utf8_lossy(text);
            if !text.trim().is_empty() {
                printed.push_str(&format!("\n--- {name}\n{}", text.trim_end()));
            }
        }
        bail!("{what} failed ({}){printed}", output.status);
    }
    Ok(output)
}

/// The files of a gzipped tar archive (ustar, with pax extended headers
/// for long names, as npm writes it): each path and content.
pub fn tar_entries(gzipped: &[u8]) -> Result<Vec<(String, Vec<u8>)>> {
    let mut data = Vec::new();
    GzDecoder::new(gzipped)
        .read_to_end(&mut data)
        .context("gunzip")?;
    let mut entries = Vec::new();
    let mut long_name = None;
    let mut at = 0;
    while at + 512 <= data.len() {
        let header = &data[at..at + 512];
        if header.iter().all(|&b| b == 0) {
            break;
        }
        let field = |start: usize, end: usize| {
            let bytes = &header[start..end];
            let len = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
            String::from_utf8_lossy(&bytes[..len]).into_owned()
        };
        let size = usize::from_str_radix(field(124, 136).trim(), 8)
            .with_context(|| format!("the size of the entry at byte {at}"))?;
        let body = data
            .get(at + 512..at + 512 + size)
            .with_context(|| format!("the entry at byte {at} is cut short"))?;
        match header[156] {
            // A pax header: `<length> <key>=<value>\n` records.
            b'x' => {
                long_name = String::from_utf8_lossy(body)
                    .lines()
                    .find_map(|record| record.split_once(" path=").map(|(_, p)| p.to_owned()));
            }
            b'g' => {}
            _ => {
                let (prefix, name) = (field(345, 500), field(0, 100));
                let path = long_name.take().unwrap_or(if prefix.is_empty() {
                    name
                } else {
                    format!("{prefix}/{name}")
                });
                entries.push((path, body.to_vec()));
            }
        }
        at += 512 + size.div_ceil(512) * 512;
    }
    Ok(entries)
}
