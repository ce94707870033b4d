//! What a user installs, built from this repository into one folder
//! (`dist/` at the workspace's top unless `--out` names another) by `cargo
//! run -p engram-dist`:
//!
//! - the Python package (`host/python`, `engram-memory-engine`): a wheel
//!   per platform ([`javascript::PLATFORMS`]' Rust targets: x86_64 built
//!   with cargo, aarch64 cross-built with zig), each carrying the native
//!   module (the Rust host) and depending on nothing, and the source
//!   distribution, which builds with cargo alone ([`python`]);
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
//! Python package's builds ([`python`]), the folder that holds those
//! components ([`components`]), and the reading of a tarball
//! ([`tar_entries`]).

pub mod artifacts;
pub mod javascript;
pub mod native;
pub mod python;

use anyhow::{Context, Result, bail};
use flate2::Compression;
use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
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
/// them: the output folder of `engram-js-components`' build script.
pub fn components() -> &'static Path {
    Path::new(engram_js_components::HOST)
        .parent()
        .expect("the components are in a folder")
}

/// The `PATH` a tool run with zig takes (cargo-zigbuild, maturin `--zig`):
/// the folder of the Python that has zig first (`python_bin`), then this
/// cargo's folder (they run the `cargo` of the `PATH`), then this process's.
pub fn zig_path(python_bin: PathBuf) -> Result<std::ffi::OsString> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut paths = vec![python_bin];
    paths.extend(
        Path::new(&cargo)
            .parent()
            .filter(|dir| !dir.as_os_str().is_empty())
            .map(Path::to_path_buf),
    );
    paths.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    Ok(std::env::join_paths(paths)?)
}

/// `command`, a release build of what ships (the Node addon, the Python
/// module, the sdist's build), without the release profile's line tables:
/// what ships is stripped of them (`strip = "symbols"`), so making them
/// is time lost; every such build the same, so that they share their
/// crates.
pub fn as_shipped(command: &mut Command) -> &mut Command {
    engram_build::rust_target::without_host_flags(command);
    command.env("CARGO_PROFILE_RELEASE_DEBUG", "false")
}

/// `command` (a release build of a crate that embeds the engine) told to
/// take the engine this build embeds ([`engram_engine::COMPONENT`],
/// written once to a file named by its hash in the temporary folder) rather
/// than build it from `guest/` again for its profile and target: the
/// engine's own profile and target are fixed, so the bytes are the same.
pub fn with_built_engine(command: &mut Command) -> Result<&mut Command> {
    let path = std::env::temp_dir().join(format!(
        "engram-engine-{:032x}.wasm",
        engram_engine::COMPONENT_XXH3
    ));
    // Named by its bytes' hash and put in place whole: there, it is them.
    if !path.is_file() {
        let partial = path.with_extension(format!("wasm.{}", std::process::id()));
        std::fs::write(&partial, engram_engine::COMPONENT)
            .with_context(|| format!("writing {}", partial.display()))?;
        std::fs::rename(&partial, &path)
            .with_context(|| format!("renaming {}", partial.display()))?;
    }
    Ok(command.env("ENGRAM_ENGINE_BUILT", path))
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

/// The files of a gzipped tar archive (npm's tarballs, an sdist): each
/// path and content, in order.
pub fn tar_entries(gzipped: &[u8]) -> Result<Vec<(String, Vec<u8>)>> {
    let mut archive = tar::Archive::new(GzDecoder::new(gzipped));
    let mut entries = Vec::new();
    for entry in archive.entries().context("reading the tar archive")? {
        let mut entry = entry.context("reading an entry of the tar archive")?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let path = entry.path()?.to_string_lossy().into_owned();
        let mut body = Vec::new();
        entry
            .read_to_end(&mut body)
            .with_context(|| format!("reading {path} in the tar archive"))?;
        entries.push((path, body));
    }
    Ok(entries)
}

/// Writes `entries` (paths and contents) as a gzipped tar archive at
/// `path`, every file with mode 0644 and time 0.
pub fn write_tar_gz(path: &Path, entries: &[(String, Vec<u8>)]) -> Result<()> {
    let file =
        std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut archive = tar::Builder::new(GzEncoder::new(file, Compression::default()));
    for (name, data) in entries {
        let mut header = tar::Header::new_gnu();
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        header.set_mtime(0);
        header.set_entry_type(tar::EntryType::Regular);
        archive
            .append_data(&mut header, name, data.as_slice())
            .with_context(|| format!("adding {name} to {}", path.display()))?;
    }
    archive
        .into_inner()
        .and_then(|gz| gz.finish())
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}
