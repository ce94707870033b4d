//! What the build scripts of `engram-engine` (the engine),
//! `engram-js-components` (the components of the JavaScript package's
//! wasm driver) and `engram-wasi` (the WASI components) share, as their
//! build-dependency: the cargo command that builds guests and the targets
//! it needs ([`rust_target`]), the wiring of a composition ([`compose`]),
//! and a build script's folders and the paths it watches ([`Build`]).

pub mod compose;
pub mod rust_target;

use anyhow::{Context, Result};
use std::env;
use std::path::{Path, PathBuf};

/// A build script's folders: its output folder and the workspace.
pub struct Build {
    /// `OUT_DIR`: where the build script writes, and nowhere else.
    pub out_dir: PathBuf,
    /// The workspace's root folder.
    pub workspace: PathBuf,
}

impl Build {
    /// The folders of the build script of a crate two folders below the
    /// workspace (`host/<crate>`), which is rebuilt when any of `watched`
    /// (paths in the workspace) changes.
    pub fn new(watched: &[&str]) -> Result<Self> {
        let out_dir = PathBuf::from(env::var_os("OUT_DIR").context("OUT_DIR is not set")?);
        let manifest_dir = PathBuf::from(
            env::var_os("CARGO_MANIFEST_DIR").context("CARGO_MANIFEST_DIR is not set")?,
        );
        let workspace = manifest_dir
            .ancestors()
            .nth(2)
            .context("the crate is not two folders below the workspace")?
            .to_path_buf();
        for path in watched.iter().chain(&["Cargo.toml", "Cargo.lock"]) {
            println!("cargo:rerun-if-changed={}", workspace.join(path).display());
        }
        Ok(Build { out_dir, workspace })
    }

    /// The engine component the crate's `engram-engine` dependency
    /// built (`DEP_ENGRAM_ENGINE_PATH`).
    pub fn engine(&self) -> Result<Vec<u8>> {
        let path = env::var_os("DEP_ENGRAM_ENGINE_PATH")
            .context("engram-engine gave no component path (DEP_ENGRAM_ENGINE_PATH)")?;
        compose::read(Path::new(&path))
    }
}

/// Encodes a core module built with `wit-bindgen` as a component (its
/// component type is in the module), validated.
pub fn componentize(module: &[u8]) -> Result<Vec<u8>> {
    wit_component::ComponentEncoder::default()
        .module(module)
        .context("reading the module's component type")?
        .validate(true)
        .encode()
        .context("encoding the module as a component")
}
