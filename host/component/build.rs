//! Builds the engine component: compiles `guest/` for `wasm32-unknown-unknown`
//! in a target directory of its own, then encodes the core module as a
//! component with `wit-component`. The crate embeds the result, so a plain
//! `cargo build`, `cargo run` or `cargo test` needs no other step.

#[path = "rust_target.rs"]
mod rust_target;

use anyhow::{Context, Result, bail};
use std::env;
use std::path::PathBuf;

const TARGET: &str = "wasm32-unknown-unknown";
const PROFILE: &str = "guest";

fn main() -> Result<()> {
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").context("OUT_DIR is not set")?);
    let manifest_dir =
        PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").context("CARGO_MANIFEST_DIR is not set")?);
    let workspace = manifest_dir
        .ancestors()
        .nth(2)
        .context("the component crate is not two folders below the workspace")?;
    for watched in [
        "guest/src",
        "guest/Cargo.toml",
        "wit",
        "Cargo.toml",
        "Cargo.lock",
    ] {
        println!(
            "cargo:rerun-if-changed={}",
            workspace.join(watched).display()
        );
    }

    rust_target::ensure(TARGET, "the engine")?;
    let target_dir = out_dir.join("guest-target");
    let mut build = rust_target::cargo(workspace, &target_dir);
    build
        .args(["rustc", "--package", "engram-guest", "--lib"])
        .args(["--crate-type", "cdylib", "--target", TARGET])
        .args(["--profile", PROFILE]);
    let status = build
        .status()
        .context("running cargo to build the engine")?;
    if !status.success() {
        bail!("building the engine component failed: {status}");
    }

    let module_path = target_dir
        .join(TARGET)
        .join(PROFILE)
        .join("engram_guest.wasm");
    let module = std::fs::read(&module_path)
        .with_context(|| format!("reading {}", module_path.display()))?;
    let component = wit_component::ComponentEncoder::default()
        .module(&module)
        .context("reading the engine's component type")?
        .validate(true)
        .encode()
        .context("encoding the engine as a component")?;
    let component_path = out_dir.join("engram.wasm");
    // The compiled-engine cache names its file by this hash, so a start
    // need not hash the embedded component.
    let hash = xxhash_rust::xxh3::xxh3_128(&component);
    std::fs::write(&component_path, component)?;
    println!(
        "cargo:rustc-env=ENGRAM_COMPONENT_PATH={}",
        component_path.display()
    );
    println!("cargo:rustc-env=ENGRAM_COMPONENT_XXH3={hash:032x}");
    // For the build scripts of dependent crates (`links`):
    // `DEP_ENGRAM_COMPONENT_PATH`.
    println!("cargo::metadata=path={}", component_path.display());
    Ok(())
}
