//! Builds Engram's WASI 0.2 components and composes them with the engine
//! component, unchanged (`engram-engine`):
//!
//! 1. adds the `wasm32-wasip2` target with rustup when the toolchain lacks it;
//! 2. installs zig from PyPI (`ziglang`, pinned) in the tools folder when it
//!    is not there yet, with two wrapper scripts beside it: the C compiler
//!    and the archiver that build SQLite for `wasm32-wasip2`;
//! 3. builds the provider (`host/wasi/provider`), the `engram` command
//!    (`host/rust`, whose library is empty on wasm) and the HTTP front
//!    (`host/wasi/http`) for `wasm32-wasip2` with
//!    the `guest` profile, in a target folder of their own in `OUT_DIR`;
//! 4. composes them with `wac-graph`: `engram-cli.wasm` (command, engine,
//!    provider: a `wasi:cli/run` command), `engram-http.wasm` (the HTTP
//!    front of `host/wasi/http`, engine, provider: a `wasi:http` proxy) and
//!    `engram-standalone.wasm` (engine and provider, exporting the engine's
//!    interfaces), whose only imports are WASI's;
//! 5. writes both to `OUT_DIR` only (`ENGRAM_WASI_CLI`,
//!    `ENGRAM_WASI_STANDALONE` for the crate), with the tokenizer's table
//!    they read when a token budget first needs it (`o200k_base.ranks`,
//!    `ENGRAM_WASI_TOKENIZER`); the crate's binary prints that folder.

#[path = "src/tools.rs"]
mod tools;
use tools::ZIG_VERSION;

use anyhow::{Context, Result, ensure};
use engram_algorithms::o200k;
use engram_build::compose::{Part, read, wire, write_if_changed};
use engram_build::{Build, rust_target};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use wac_graph::{CompositionGraph, EncodeOptions};

/// The target the WASI components are built for.
const TARGET: &str = "wasm32-wasip2";
/// The workspace's profile for components: small (`opt-level = "s"`, LTO,
/// no debug information).
const PROFILE: &str = "guest";
/// The provider's package, and its component as cargo names it.
const PROVIDER: (&str, &str) = ("engram-wasi-provider", "engram_wasi_provider.wasm");
/// The command's package, and its component as cargo names it.
const COMMAND: (&str, &str) = ("engram", "engram.wasm");
/// The HTTP front's package, and its component as cargo names it.
const FRONT: (&str, &str) = ("engram-wasi-http", "engram_wasi_http.wasm");
/// The composed HTTP server.
const HTTP_FILE: &str = "engram-http.wasm";
/// The composed command.
const CLI_FILE: &str = "engram-cli.wasm";
/// The composed engine and provider.
const STANDALONE_FILE: &str = "engram-standalone.wasm";
/// The parts of SQLite the bundled build turns on that the store never uses
/// (full-text search, R-trees, `dbstat`, STAT4, `soundex()`, JSON
/// functions, loading extensions), left out of the WASI components, where
/// every kilobyte is downloaded and compiled at start. The store's file
/// format is SQLite's either way.
const SQLITE_FLAGS: &str = "-USQLITE_ENABLE_FTS3 -USQLITE_ENABLE_FTS3_PARENTHESIS \
    -USQLITE_ENABLE_FTS5 -USQLITE_ENABLE_RTREE -USQLITE_ENABLE_DBSTAT_VTAB -USQLITE_ENABLE_STAT4 \
    -USQLITE_SOUNDEX -USQLITE_ENABLE_LOAD_EXTENSION -DSQLITE_OMIT_LOAD_EXTENSION -DSQLITE_OMIT_JSON";
/// What the compositions may leave for the runtime to supply: WASI 0.2.
const WASI: &[&str] = &["wasi:"];

fn main() -> Result<()> {
    let build = Build::new(&[
        "host/wasi/provider",
        "host/wasi/guest",
        "host/wasi/http",
        "host/http",
        "host/wasi/wit",
        "host/rust/src/main.rs",
        "host/rust/src/cli",
        "host/rust/src/wasi.rs",
        "host/mcp/src",
        "host/mcp/Cargo.toml",
        "guest/keyspace",
        "host/rust/Cargo.toml",
        "host/store",
        "host/model",
        "host/algorithms",
        "wit",
    ])?;
    let (out_dir, workspace) = (&build.out_dir, build.workspace.as_path());
    for var in ["ENGRAM_TOOLS_DIR", "XDG_CACHE_HOME", "HOME"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    let engine = build.engine()?;

    rust_target::ensure(TARGET, "the WASI components")?;
    let tools = tools::dir()?;
    let zig = ensure_zig(&tools)?;
    let built = build_components(workspace, &out_dir.join("guest-target"), &zig)?;
    let provider = read(&built.join(PROVIDER.1))?;
    let command = read(&built.join(COMMAND.1))?;
    let front = read(&built.join(FRONT.1))?;

    let cli = compose_front(
        &engine,
        &provider,
        ("engram:command", &command),
        "wasi:cli/run@",
    )
    .context("composing engram-cli.wasm")?;
    let standalone =
        compose_standalone(&engine, &provider).context("composing engram-standalone.wasm")?;
    let http = compose_front(
        &engine,
        &provider,
        ("engram:http-front", &front),
        "wasi:http/incoming-handler@",
    )
    .context("composing engram-http.wasm")?;

    for (name, bytes, var) in [
        (CLI_FILE, &cli[..], "ENGRAM_WASI_CLI"),
        (STANDALONE_FILE, &standalone[..], "ENGRAM_WASI_STANDALONE"),
        (HTTP_FILE, &http[..], "ENGRAM_WASI_HTTP"),
        (o200k::RANKS_FILE, o200k::RANKS, "ENGRAM_WASI_TOKENIZER"),
    ] {
        let path = out_dir.join(name);
        write_if_changed(&path, bytes)?;
        println!("cargo:rustc-env={var}={}", path.display());
    }
    Ok(())
}

/// The C toolchain for `wasm32-wasip2`: the wrapper scripts around zig, and
/// zig's cache folder.
struct Zig {
    cc: PathBuf,
    ar: PathBuf,
    cache: PathBuf,
}

/// Finds zig in `<tools>/zig-<version>` (a Python virtual environment with
/// the `ziglang` package), installing it there first when absent, and
/// writes the two wrapper scripts in its `wrappers/` folder.
fn ensure_zig(tools: &Path) -> Result<Zig> {
    let name = format!("zig-{ZIG_VERSION}");
    let root = tools.join(&name);
    let _lock = tools::lock(tools, &name)?;
    if find_zig(&root).is_none() {
        install_zig(&root)?;
    }
    find_zig(&root).with_context(|| {
        format!(
            "zig is not in {} after installing `ziglang=={ZIG_VERSION}`",
            root.display()
        )
    })?;
    let wrappers = root.join("wrappers");
    fs::create_dir_all(&wrappers).with_context(|| format!("creating {}", wrappers.display()))?;
    let cc = wrappers.join(format!("{TARGET}-cc"));
    let ar = wrappers.join(format!("{TARGET}-ar"));
    write_script(&cc, CC_WRAPPER)?;
    write_script(&ar, AR_WRAPPER)?;
    Ok(Zig {
        cc,
        ar,
        cache: tools.join("zig-cache"),
    })
}

/// The zig binary of the `ziglang` package installed under `root`
/// (`lib/python*/site-packages/ziglang/zig`), if there is one.
fn find_zig(root: &Path) -> Option<PathBuf> {
    fs::read_dir(root.join("lib")).ok()?.find_map(|entry| {
        let entry = entry.ok()?;
        let python = entry.file_name().to_string_lossy().starts_with("python");
        let zig = entry.path().join("site-packages/ziglang/zig");
        (python && zig.is_file()).then_some(zig)
    })
}

/// Installs `ziglang==<version>` from PyPI with pip into a virtual
/// environment at `root`; where Python cannot make one (no `venv` module),
/// into `root/lib/python/site-packages` with `pip install --target`.
fn install_zig(root: &Path) -> Result<()> {
    println!(
        "cargo:warning=installing zig {ZIG_VERSION} from PyPI (`ziglang`) into {}, once: the C compiler for SQLite on {TARGET}",
        root.display()
    );
    let python = ["python3", "python"]
        .into_iter()
        .find(|python| {
            Command::new(python)
                .arg("--version")
                .output()
                .is_ok_and(|output| output.status.success())
        })
        .context(
            "Python 3 (`python3`) is needed to install zig from PyPI; install it, then build again",
        )?;
    let requirement = format!("ziglang=={ZIG_VERSION}");
    let pip_flags = ["--disable-pip-version-check", "--no-input", "--quiet"];
    if root.exists() {
        fs::remove_dir_all(root).with_context(|| format!("removing {}", root.display()))?;
    }
    let venv = Command::new(python)
        .args(["-m", "venv"])
        .arg(root)
        .output()
        .context("running python -m venv")?;
    let venv_python = root.join("bin/python");
    if venv.status.success() && venv_python.is_file() {
        let mut pip = Command::new(&venv_python);
        pip.args(["-m", "pip", "install"])
            .args(pip_flags)
            .arg(&requirement);
        return checked(pip, "installing zig with pip into a virtual environment");
    }
    // No venv module (some distributions package it apart): a plain folder.
    if root.exists() {
        fs::remove_dir_all(root).with_context(|| format!("removing {}", root.display()))?;
    }
    let mut pip = Command::new(python);
    pip.args(["-m", "pip", "install"])
        .args(pip_flags)
        .arg("--target")
        .arg(root.join("lib/python/site-packages"))
        .arg(&requirement);
    checked(pip, "installing zig with pip")
}

/// The C compiler for the `cc` crate (`CC_wasm32_wasip2`): `zig cc`, with
/// the target renamed (zig knows `wasm32-wasi`, not `wasm32-wasip2`). It
/// only compiles; rustc links with its own WASI libc.
const CC_WRAPPER: &str = r#"#!/bin/sh
# C compiler for wasm32-wasip2 (the cc crate's CC_wasm32_wasip2): zig cc from
# the ziglang package installed one folder up. zig does not know the OS
# "wasip2": the target is passed to it as "wasm32-wasi".
set -e
here=$(cd "$(dirname "$0")" && pwd)
ZIG=
for z in "$here"/../lib/python*/site-packages/ziglang/zig; do if [ -x "$z" ]; then ZIG=$z; fi; done
[ -n "$ZIG" ] || { echo "wasm32-wasip2-cc: no zig under $here/../lib" >&2; exit 127; }
n=$#
i=0
while [ "$i" -lt "$n" ]; do
  a=$1; shift; i=$((i+1))
  case "$a" in
    --target=wasm32-wasi*) set -- "$@" -target wasm32-wasi ;;
    -target|--target) shift; i=$((i+1)); set -- "$@" -target wasm32-wasi ;;
    *) set -- "$@" "$a" ;;
  esac
done
exec "$ZIG" cc "$@"
"#;

/// The archiver for the `cc` crate (`AR_wasm32_wasip2`): `zig ar`.
const AR_WRAPPER: &str = r#"#!/bin/sh
# Archiver for wasm32-wasip2 (the cc crate's AR_wasm32_wasip2): zig ar from
# the ziglang package installed one folder up.
here=$(cd "$(dirname "$0")" && pwd)
ZIG=
for z in "$here"/../lib/python*/site-packages/ziglang/zig; do if [ -x "$z" ]; then ZIG=$z; fi; done
[ -n "$ZIG" ] || { echo "wasm32-wasip2-ar: no zig under $here/../lib" >&2; exit 127; }
exec "$ZIG" ar "$@"
"#;

/// Writes an executable script, unless it already holds `text`.
fn write_script(path: &Path, text: &str) -> Result<()> {
    write_if_changed(path, text.as_bytes())?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(path, fs::Permissions::from_mode(0o755))
            .with_context(|| format!("making {} executable", path.display()))?;
    }
    Ok(())
}

/// Builds the provider and the command for `wasm32-wasip2` in `target_dir`;
/// the folder their components are in.
fn build_components(workspace: &Path, target_dir: &Path, zig: &Zig) -> Result<PathBuf> {
    let mut build = rust_target::build(
        workspace,
        target_dir,
        TARGET,
        PROFILE,
        &[PROVIDER.0, COMMAND.0, FRONT.0],
    );
    let target_var = TARGET.replace('-', "_");
    build
        .env(format!("CC_{target_var}"), &zig.cc)
        .env(format!("AR_{target_var}"), &zig.ar)
        .env("ZIG_GLOBAL_CACHE_DIR", &zig.cache)
        .env("ZIG_LOCAL_CACHE_DIR", &zig.cache)
        .env("LIBSQLITE3_FLAGS", SQLITE_FLAGS);
    rust_target::run(build, "the WASI components", TARGET)?;
    Ok(target_dir.join(TARGET).join(PROFILE))
}

/// The engine and the provider composed with a front (`name`, `front`): the
/// front's imports of the engine's interfaces wired to the engine, its
/// `engram:host/store` (and `types`) to the provider, the engine's imports
/// to the provider; exports the front's export whose name starts with
/// `export` alone. `engram-cli.wasm`'s front is the command (`wasi:cli/run`),
/// `engram-http.wasm`'s the HTTP front (`wasi:http/incoming-handler`).
fn compose_front(
    engine: &[u8],
    provider: &[u8],
    (name, front): (&'static str, &[u8]),
    export: &str,
) -> Result<Vec<u8>> {
    let mut graph = CompositionGraph::new();
    let engine = Part::register(&mut graph, "engram:engine", engine)?;
    let provider = Part::register(&mut graph, "engram:provider", provider)?;
    let front = Part::register(&mut graph, name, front)?;
    wire(&mut graph, &provider, &[], WASI)?;
    wire(&mut graph, &engine, &[&provider], WASI)?;
    wire(&mut graph, &front, &[&engine, &provider], WASI)?;
    let exported = front
        .exports(&graph)
        .into_iter()
        .find(|exported| exported.starts_with(export))
        .with_context(|| format!("{name} exports no `{export}`"))?;
    let node = graph.alias_instance_export(front.node, &exported)?;
    graph.export(node, &exported)?;
    encode(&graph)
}

/// `engram-standalone.wasm`: the engine's imports wired to the provider;
/// exports `engram:memory/types` (first: the engine's interfaces refer to
/// its types) and every interface the engine exports.
fn compose_standalone(engine: &[u8], provider: &[u8]) -> Result<Vec<u8>> {
    let mut graph = CompositionGraph::new();
    let engine = Part::register(&mut graph, "engram:engine", engine)?;
    let provider = Part::register(&mut graph, "engram:provider", provider)?;
    wire(&mut graph, &provider, &[], WASI)?;
    wire(&mut graph, &engine, &[&provider], WASI)?;
    let types = provider
        .exports(&graph)
        .into_iter()
        .find(|name| name.starts_with("engram:memory/types@"))
        .context("the provider does not export `engram:memory/types`")?;
    let node = graph.alias_instance_export(provider.node, &types)?;
    graph.export(node, &types)?;
    for name in engine.exports(&graph) {
        let node = graph.alias_instance_export(engine.node, &name)?;
        graph.export(node, &name)?;
    }
    encode(&graph)
}

/// Encodes (and validates) a composition; the components are embedded
/// whole, unchanged.
fn encode(graph: &CompositionGraph) -> Result<Vec<u8>> {
    Ok(graph.encode(EncodeOptions::default())?)
}

/// Runs `command`; on failure, the error carries its output.
fn checked(mut command: Command, what: &str) -> Result<()> {
    let Output {
        status,
        stdout,
        stderr,
    } = command
        .output()
        .with_context(|| format!("{what}: running {command:?}"))?;
    ensure!(
        status.success(),
        "{what} failed ({status}):\n{}{}",
        String::from_utf8_lossy(&stdout),
        String::from_utf8_lossy(&stderr)
    );
    Ok(())
}
