//! Builds the engine component: compiles `guest/` for `wasm32-unknown-unknown`
//! in a target directory of its own, then encodes the core module as a
//! component with `wit-component`. The crate embeds the result, so a plain
//! `cargo build`, `cargo run` or `cargo test` needs no other step.

use anyhow::{Context, Result};
use engram_build::{Build, rust_target};

const TARGET: &str = "wasm32-unknown-unknown";
const PROFILE: &str = "guest";

/// The engine built already, beside this crate's manifest: what a source
/// distribution (the Python package's sdist) carries instead of `guest/`.
const PREBUILT: &str = "engram.wasm";

fn main() -> Result<()> {
    let Build { out_dir, workspace } =
        Build::new(&["guest/src", "guest/Cargo.toml", "guest/keyspace", "wit"])?;
    let prebuilt = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(PREBUILT);
    let component = if workspace.join("guest/Cargo.toml").is_file() {
        build(&workspace, &out_dir)?
    } else {
        println!("cargo:rerun-if-changed={}", prebuilt.display());
        std::fs::read(&prebuilt).with_context(|| {
            format!(
                "reading {}: a tree without guest/ (a source distribution) carries the engine built",
                prebuilt.display()
            )
        })?
    };
    let component_path = out_dir.join("engram.wasm");
    // The compiled-engine cache names its file by this hash, so a start
    // need not hash the embedded component.
    let hash = xxhash_rust::xxh3::xxh3_128(&component);
    std::fs::write(&component_path, component)?;
    println!(
        "cargo:rustc-env=ENGRAM_ENGINE_PATH={}",
        component_path.display()
    );
    println!("cargo:rustc-env=ENGRAM_ENGINE_XXH3={hash:032x}");
    // For the build scripts of dependent crates (`links`):
    // `DEP_ENGRAM_ENGINE_PATH`.
    println!("cargo::metadata=path={}", component_path.display());
    Ok(())
}

/// The engine built from `guest/` and encoded as a component.
fn build(workspace: &std::path::Path, out_dir: &std::path::Path) -> Result<Vec<u8>> {
    rust_target::ensure(TARGET, "the engine")?;
    let target_dir = out_dir.join("guest-target");
    let mut build = rust_target::cargo(workspace, &target_dir);
    build
        .args(["rustc", "--package", "engram-guest", "--lib"])
        .args(["--crate-type", "cdylib", "--target", TARGET])
        .args(["--profile", PROFILE]);
    rust_target::run(build, "the engine", TARGET)?;

    let module_path = target_dir
        .join(TARGET)
        .join(PROFILE)
        .join("engram_guest.wasm");
    let module = std::fs::read(&module_path)
        .with_context(|| format!("reading {}", module_path.display()))?;
    engram_build::componentize(&module).context("the engine")
}
