//! The tools folder: where the WASI build keeps the tools it installs once
//! per machine (zig, the C compiler for SQLite on `wasm32-wasip2`, and the
//! wasmtime CLI the tests run), shared by every checkout and target folder.
//! Compiled into the library and, by path, into the build script.

use anyhow::{Context, Result, bail};

/// The zig release installed from PyPI (the `ziglang` package), in
/// `<tools>/zig-<version>`: a Python virtual environment.
pub const ZIG_VERSION: &str = "0.17.0";
use std::env;
use std::fs::{self, File};
use std::path::{Path, PathBuf};

/// The tools folder: `ENGRAM_TOOLS_DIR` when set, otherwise `engram-dev` in
/// the user's cache folder (`$XDG_CACHE_HOME`, else `$HOME/.cache`).
pub fn dir() -> Result<PathBuf> {
    let non_empty = |name: &str| env::var_os(name).filter(|value| !value.is_empty());
    let dir = if let Some(dir) = non_empty("ENGRAM_TOOLS_DIR") {
        PathBuf::from(dir)
    } else if let Some(cache) = non_empty("XDG_CACHE_HOME") {
        PathBuf::from(cache).join("engram-dev")
    } else if let Some(home) = non_empty("HOME").or_else(|| non_empty("USERPROFILE")) {
        PathBuf::from(home).join(".cache").join("engram-dev")
    } else {
        bail!("no folder for the build's tools: set ENGRAM_TOOLS_DIR (or HOME)");
    };
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}

/// Holds `<dir>/<name>.lock` exclusively until the returned file is
/// dropped, so that two builds or test processes do not install the same
/// tool at once; the second waits, then finds the tool installed.
pub fn lock(dir: &Path, name: &str) -> Result<File> {
    let path = dir.join(format!("{name}.lock"));
    let file = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .with_context(|| format!("opening {}", path.display()))?;
    file.lock()
        .with_context(|| format!("locking {}", path.display()))?;
    Ok(file)
}
