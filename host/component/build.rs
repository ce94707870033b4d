//! Builds the engine component: compiles `guest/` for `wasm32-unknown-unknown`
//! in a target directory of its own, then encodes the core module as a
//! component with `wit-component`. The crate embeds the result, so a plain
//! `cargo build`, `cargo run` or `cargo test` needs no other step.

use anyhow::{Context, Result, bail};
use std::env;
use std::path::PathBuf;
use std::process::Command;

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

    ensure_target()?;
    let target_dir = out_dir.join("guest-target");
    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut build = Command::new(cargo);
    build
        .current_dir(workspace)
        .args(["rustc", "--package", "engram-guest", "--lib"])
        .args(["--crate-type", "cdylib", "--target", TARGET])
        .args(["--profile", PROFILE])
        .arg("--target-dir")
        .arg(&target_dir);
    // Flags and wrappers meant for the host build (coverage, clippy) do not
    // apply to the guest.
    for var in [
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTFLAGS",
        "CARGO_BUILD_RUSTFLAGS",
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
        "CARGO_TARGET_DIR",
    ] {
        build.env_remove(var);
    }
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

/// The engine needs the standard library for `wasm32-unknown-unknown`.
/// `rust-toolchain.toml` names the target, but a toolchain installed without
/// it (or with rustup's automatic installs turned off) lacks it: add it with
/// rustup when rustup manages the toolchain, otherwise say in one line what to
/// install.
fn ensure_target() -> Result<()> {
    let rustc = env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let sysroot = Command::new(&rustc)
        .args(["--print", "sysroot"])
        .output()
        .context("running rustc --print sysroot")?;
    let sysroot = PathBuf::from(String::from_utf8_lossy(&sysroot.stdout).trim());
    let installed = |root: &PathBuf| root.join("lib/rustlib").join(TARGET).join("lib").is_dir();
    if installed(&sysroot) {
        return Ok(());
    }
    let mut add = Command::new("rustup");
    add.args(["target", "add", TARGET]);
    if let Some(toolchain) = env::var_os("RUSTUP_TOOLCHAIN") {
        add.arg("--toolchain").arg(toolchain);
    }
    println!("cargo:warning=adding the {TARGET} target with rustup (the engine is built for it)");
    match add.status() {
        Ok(status) if status.success() && installed(&sysroot) => Ok(()),
        Ok(status) => bail!(
            "the {TARGET} target is missing and `rustup target add {TARGET}` failed ({status}); install it, then build again"
        ),
        Err(err) => bail!(
            "the {TARGET} target is missing and rustup could not be run ({err}); install the target's standard library for {}, then build again",
            sysroot.display()
        ),
    }
}
