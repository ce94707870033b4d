//! What a user installs, built from this repository into one folder
//! (`dist/` at the workspace's top unless `--out` names another) by `cargo
//! run -p engram-dist`:
//!
//! - the Python package's wheel (`host/python`), platform-independent
//!   (`py3-none-any`): the engine's components and the schemas are data in
//!   it, wasmtime-py (a dependency from PyPI) runs them;
//! - the npm package's tarball (`host/js`), the components transpiled into
//!   it by its pinned jco; it has no runtime dependency to download;
//! - `engram-cli.wasm`, the `engram` command line as a WASI 0.2 component,
//!   for `wasmtime run`.
//!
//! The library is what the build shares with the tests: the JavaScript
//! package's npm dependencies installed and the components of this build
//! transpiled into it ([`javascript`]), and the folder that holds those
//! components ([`components`]).

pub mod javascript;

use anyhow::{Context, Result, bail};
use std::io::ErrorKind;
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
