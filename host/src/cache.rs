//! The compiled engine on disk: compiling the component takes Cranelift a
//! while, loading it back takes milliseconds.
//!
//! A cache file is named by a hash of everything the compiled code depends
//! on: the component's bytes, the wasmtime version and the engine's
//! compilation settings (`Engine::precompile_compatibility_hash`, which
//! covers the target, the CPU features, the memory layout and the epoch
//! checks). Its content is wasmtime's serialized component followed by a
//! trailer: the length and a 128-bit checksum of what precedes it, and a
//! magic number. A file whose trailer does not check out, or that wasmtime
//! refuses (another version, another configuration), is ignored, compiled
//! afresh and replaced. Files are written to a temporary name and renamed
//! into place, so a reader never sees half a file.

use anyhow::{Context, Result};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};
use wasmtime::Engine;
use wasmtime::component::Component;

/// The last 8 bytes of every cache file.
const MAGIC: &[u8; 8] = b"ENGRAMC2";
/// Length (8) + checksum (16) + magic (8).
const TRAILER: usize = 32;

/// Where a compiled component came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// Compiled by Cranelift when the [`crate::Engram`] was made.
    Compiled,
    /// Loaded from a cache file written by an earlier compilation.
    Cache,
}

/// A compiled component, where it came from, and the cache file it was read
/// from or written to (when a cache folder was given).
pub(crate) struct Loaded {
    pub component: Component,
    pub origin: Origin,
    pub path: Option<PathBuf>,
}

/// Loads the compiled component from `dir` if a valid one is there;
/// otherwise compiles `bytes` and, when `dir` is given, stores the result
/// there for next time. A cache that cannot be written is not an error: the
/// engine is compiled, and works, all the same.
pub(crate) fn load_or_compile(engine: &Engine, bytes: &[u8], dir: Option<&Path>) -> Result<Loaded> {
    let Some(dir) = dir else {
        return Ok(Loaded {
            component: compile(engine, bytes)?,
            origin: Origin::Compiled,
            path: None,
        });
    };
    let path = dir.join(file_name(engine, bytes));
    if let Some(component) = load(engine, &path) {
        return Ok(Loaded {
            component,
            origin: Origin::Cache,
            path: Some(path),
        });
    }
    let component = compile(engine, bytes)?;
    // Best effort: a read-only or full disk only costs the next start a
    // compilation.
    let _ = store(&component, dir, &path);
    Ok(Loaded {
        component,
        origin: Origin::Compiled,
        path: Some(path),
    })
}

fn compile(engine: &Engine, bytes: &[u8]) -> Result<Component> {
    Component::new(engine, bytes)
        .map_err(anyhow::Error::from)
        .context("compiling the engine component")
}

/// The cache file's name: a 128-bit hash of the component, the wasmtime
/// version and the engine's compilation settings.
fn file_name(engine: &Engine, bytes: &[u8]) -> String {
    let component = xxhash_rust::xxh3::xxh3_128(bytes);
    let hash = |salt: u8| {
        let mut hasher = DefaultHasher::new();
        salt.hash(&mut hasher);
        component.hash(&mut hasher);
        WASMTIME_VERSION.hash(&mut hasher);
        engine.precompile_compatibility_hash().hash(&mut hasher);
        hasher.finish()
    };
    format!("engram-{:016x}{:016x}.cwasm", hash(0), hash(1))
}

/// The wasmtime version the host is built with (it is pinned exactly).
const WASMTIME_VERSION: &str = "48.0.8";

/// A 128-bit checksum of `bytes`: XXH3-128 (the `xxhash-rust` crate),
/// tens of gigabytes a second, so checking the compiled engine costs a
/// start a fraction of a millisecond. Not a defence against someone who can
/// write the cache folder, who could write any code there: a check that the
/// file is the one that was written, whole.
fn checksum(bytes: &[u8]) -> [u8; 16] {
    xxhash_rust::xxh3::xxh3_128(bytes).to_le_bytes()
}

/// The component in `path`, if the file is whole and wasmtime accepts it
/// for this engine.
fn load(engine: &Engine, path: &Path) -> Option<Component> {
    let file = std::fs::read(path).ok()?;
    let artifact = verified(&file)?;
    // SAFETY: the bytes are a wasmtime serialization this host wrote (the
    // trailer's checksum matches, so they are whole and unchanged since),
    // and `deserialize` checks that they were made by this wasmtime version
    // with compatible settings. Whoever can write the cache folder could
    // put any native code there: the folder must be as trusted as the
    // executable, as any compilation cache must be.
    unsafe { Component::deserialize(engine, artifact) }.ok()
}

/// The serialized component inside a cache file, if its trailer checks out.
fn verified(file: &[u8]) -> Option<&[u8]> {
    let body_len = file.len().checked_sub(TRAILER)?;
    let (body, trailer) = file.split_at(body_len);
    let (len, rest) = trailer.split_at(8);
    let (sum, magic) = rest.split_at(16);
    let len = u64::from_le_bytes(len.try_into().ok()?);
    (magic == MAGIC && len == body_len as u64 && sum == checksum(body)).then_some(body)
}

/// Writes the serialized component to a temporary file in `dir`, then
/// renames it to `path`.
fn store(component: &Component, dir: &Path, path: &Path) -> Result<()> {
    let body = component.serialize().map_err(anyhow::Error::from)?;
    std::fs::create_dir_all(dir)?;
    // A name no other writer uses: this process, and a counter.
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let temp = dir.join(format!(".engram-{}-{n}.tmp", std::process::id()));
    let written = (|| -> std::io::Result<()> {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)?;
        file.write_all(&body)?;
        file.write_all(&(body.len() as u64).to_le_bytes())?;
        file.write_all(&checksum(&body))?;
        file.write_all(MAGIC)?;
        file.sync_all()?;
        std::fs::rename(&temp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trailer_must_match_its_body() {
        let body = b"compiled code".to_vec();
        let mut file = body.clone();
        file.extend_from_slice(&(body.len() as u64).to_le_bytes());
        file.extend_from_slice(&checksum(&body));
        file.extend_from_slice(MAGIC);
        assert_eq!(verified(&file), Some(body.as_slice()));

        let mut flipped = file.clone();
        flipped[3] ^= 1;
        assert_eq!(verified(&flipped), None);
        assert_eq!(verified(&file[1..]), None);
        assert_eq!(verified(&file[..file.len() - 1]), None);
        assert_eq!(verified(b"short"), None);
    }
}
