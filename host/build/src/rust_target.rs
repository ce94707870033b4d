//! Building guests for a Rust target from a build script (the engine and
//! the language packages' components for `wasm32-unknown-unknown`, the WASI
//! components for `wasm32-wasip2`): adding the target, and the cargo
//! command.

use anyhow::{Context, Result, bail};
use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A cargo command run in `workspace` with its own `target_dir`, for the
/// caller to add its subcommand and arguments to: the flags and wrappers
/// meant for the host build (coverage, clippy) do not apply to the guests.
pub fn cargo(workspace: &Path, target_dir: &Path) -> Command {
    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command.current_dir(workspace);
    without_host_flags(&mut command);
    // Not the host build's own target folder: one of the guests'.
    command.env("CARGO_TARGET_DIR", target_dir);
    command
}

/// `command` (a cargo run inside another build or test) without the flags
/// and wrappers meant for the run around it (coverage, clippy).
pub fn without_host_flags(command: &mut Command) -> &mut Command {
    for var in [
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTFLAGS",
        "CARGO_BUILD_RUSTFLAGS",
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
    ] {
        command.env_remove(var);
    }
    command
}

/// `cargo build --locked` of `packages` for `target` with `profile`, as
/// [`cargo`] runs it; the caller may add to it (the environment of a C
/// compiler) before [`run`].
pub fn build(
    workspace: &Path,
    target_dir: &Path,
    target: &str,
    profile: &str,
    packages: &[&str],
) -> Command {
    let mut command = cargo(workspace, target_dir);
    command.args([
        "build",
        "--locked",
        "--target",
        target,
        "--profile",
        profile,
    ]);
    for package in packages {
        command.args(["--package", package]);
    }
    command
}

/// Runs a cargo command that builds `what` for `target`, failing with a
/// line that names it.
pub fn run(mut command: Command, what: &str, target: &str) -> Result<()> {
    let status = command
        .status()
        .with_context(|| format!("running cargo to build {what}"))?;
    if !status.success() {
        bail!("building {what} for {target} failed: {status}");
    }
    Ok(())
}

/// Makes sure the standard library for `target` is installed, so that `what`
/// can be built: a toolchain installed without the target (or with rustup's
/// automatic installs turned off) lacks it. Adds it with rustup when rustup
/// manages the toolchain, otherwise says in one line what to install.
pub fn ensure(target: &str, what: &str) -> Result<()> {
    let rustc = env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let sysroot = Command::new(&rustc)
        .args(["--print", "sysroot"])
        .output()
        .context("running rustc --print sysroot")?;
    let sysroot = PathBuf::from(String::from_utf8_lossy(&sysroot.stdout).trim());
    let installed = |root: &PathBuf| root.join("lib/rustlib").join(target).join("lib").is_dir();
    if installed(&sysroot) {
        return Ok(());
    }
    let mut add = Command::new("rustup");
    add.args(["target", "add", target]);
    if let Some(toolchain) = env::var_os("RUSTUP_TOOLCHAIN") {
        add.arg("--toolchain").arg(toolchain);
    }
    println!("cargo:warning=adding the {target} target with rustup, to build {what}");
    match add.status() {
        Ok(status) if status.success() && installed(&sysroot) => Ok(()),
        Ok(status) => bail!(
            "the {target} target is missing and `rustup target add {target}` failed ({status}); install it, then build again"
        ),
        Err(err) => bail!(
            "the {target} target is missing and rustup could not be run ({err}); install the target's standard library for {}, then build again",
            sysroot.display()
        ),
    }
}
