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

/// Names a file holding the engine another build of this crate made from
/// the same tree (for another profile or target: the engine's own profile
/// and target are fixed, so its bytes are the same), which this build takes
/// instead of building it again: `engram-dist` sets it for its release
/// builds, to the engine its own build embeds.
const BUILT_VAR: &str = "ENGRAM_ENGINE_BUILT";

fn main() -> Result<()> {
    let Build { out_dir, workspace } =
        Build::new(&["guest/src", "guest/Cargo.toml", "guest/keyspace", "wit"])?;
    // Read when the script runs, not when it is compiled: a tree unpacked
    // elsewhere (the sdist) may run a build script compiled from another.
    let prebuilt = std::path::PathBuf::from(
        std::env::var_os("CARGO_MANIFEST_DIR").context("CARGO_MANIFEST_DIR is not set")?,
    )
    .join(PREBUILT);
    println!("cargo:rerun-if-env-changed={BUILT_VAR}");
    let component = if let Some(built) = std::env::var_os(BUILT_VAR) {
        let built = std::path::PathBuf::from(built);
        println!("cargo:rerun-if-changed={}", built.display());
        std::fs::read(&built)
            .with_context(|| format!("reading {} ({BUILT_VAR})", built.display()))?
    } else if workspace.join("guest/Cargo.toml").is_file() {
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
