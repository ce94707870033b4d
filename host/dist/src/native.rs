//! The native libraries of a platform other than this machine's: the Node
//! addon (`engram-node`) and the Python module (`engram-python`), both the
//! Rust host, cross-built with cargo-zigbuild in one cargo invocation, so
//! that every crate they share is built once for the platform.

use anyhow::{Context, Result};
use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Mutex, OnceLock};

use crate::javascript::Platform;

/// The oldest glibc the cross-built libraries need (manylinux2014's).
pub const GLIBC: &str = "2.17";

/// A platform's native libraries.
#[derive(Clone)]
pub struct Built {
    /// The Node addon (`libengram_node.so`).
    pub addon: PathBuf,
    /// The Python module (`libengram_python.so`), CPython's stable ABI.
    pub python: PathBuf,
}

/// The native libraries of `platform`, built once a process.
pub fn cross_build(platform: &Platform) -> Result<Built> {
    static BUILT: OnceLock<Mutex<HashMap<&'static str, Built>>> = OnceLock::new();
    let mut built = BUILT
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(libraries) = built.get(platform.target) {
        return Ok(libraries.clone());
    }
    let libraries = build(platform)?;
    built.insert(platform.target, libraries.clone());
    Ok(libraries)
}

fn build(platform: &Platform) -> Result<Built> {
    engram_build::rust_target::ensure(platform.target, "the native libraries")?;
    let (zigbuild, python_bin) = engram_wasi::cargo_zigbuild()?;
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(zigbuild);
    command
        .arg("zigbuild")
        .arg("--target")
        .arg(format!("{}.{GLIBC}", platform.target))
        .args(["--release", "--locked"])
        .args(["--package", "engram-node", "--package", "engram-python"])
        .args(["--message-format", "json-render-diagnostics"])
        .current_dir(crate::workspace())
        .env("PATH", crate::zig_path(python_bin)?)
        .env("CARGO", &cargo)
        // A Python extension module: libpython is the interpreter's, not
        // linked (PyO3 reads this as maturin sets it).
        .env("PYO3_BUILD_EXTENSION_MODULE", "1");
    crate::as_shipped(&mut command);
    crate::with_built_engine(&mut command)?;
    let what = format!("building the native libraries for {}", platform.name);
    let output = crate::run(&mut command, &what, "the build needs cargo")?;
    let library = |name: &str| {
        built_library(&output.stdout, name)
            .with_context(|| format!("{what}: cargo named no {name} library it built"))
    };
    Ok(Built {
        addon: library("engram_node")?,
        python: library("engram_python")?,
    })
}

/// What cargo said (`--message-format json`, its standard output) it
/// built of the crate target `name`: each such message.
pub fn artifacts(messages: &[u8], name: &str) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(messages)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|message| {
            message["reason"] == "compiler-artifact" && message["target"]["name"] == name
        })
        .collect()
}

/// The shared library cargo said (`--message-format json`, its standard
/// output) it built of the crate target `name`.
pub fn built_library(messages: &[u8], name: &str) -> Option<PathBuf> {
    artifacts(messages, name)
        .into_iter()
        .flat_map(|message| message["filenames"].as_array().cloned().unwrap_or_default())
        .filter_map(|file| file.as_str().map(PathBuf::from))
        .find(|path| {
            path.extension()
                .is_some_and(|ext| ext == "so" || ext == "dylib" || ext == "dll")
        })
}
