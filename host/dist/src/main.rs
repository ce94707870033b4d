//! `cargo run -p engram-dist [-- --out DIR]`: builds the Python wheel, the
//! npm package's tarball and `engram-cli.wasm` into `DIR` (`dist/` at the
//! workspace's top by default) and prints each one's path and size. A
//! failure is one line naming the step that failed (then what it printed).

use anyhow::{Context, Result, bail, ensure};
use clap::Parser;
use engram_dist::{components, javascript, run, workspace};
use flate2::read::GzDecoder;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

/// Builds what a user installs into one folder: the Python wheel, the npm
/// package's tarball and engram-cli.wasm.
#[derive(Parser)]
#[command(name = "engram-dist")]
struct Args {
    /// The folder to write them into (created if absent).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

/// What the Python package carries besides its code, from [`components`]
/// (`host/python/setup.py` copies them into `engram/wasm/`).
const PYTHON_DATA: [&str; 5] = [
    "engram-host.wasm",
    "engram-host-builtin.wasm",
    "engram-algorithms.wasm",
    "sqlite-schema.sql",
    "postgres-schema.sql",
];

/// The components transpiled into the npm package (`gen/<name>/`).
const JS_COMPONENTS: [&str; 3] = ["engram-host", "engram-host-builtin", "engram-algorithms"];

/// The command component's name in the folder.
const CLI: &str = "engram-cli.wasm";

fn main() -> ExitCode {
    let args = Args::parse();
    match build(args.out.unwrap_or_else(|| workspace().join("dist"))) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("engram-dist: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn build(out: PathBuf) -> Result<()> {
    fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let out = out
        .canonicalize()
        .with_context(|| format!("finding {}", out.display()))?;
    remove_earlier(&out)?;
    let artifacts = [
        step("the Python wheel", || wheel(&out))?,
        step("the npm package", || tarball(&out))?,
        step(CLI, || cli(&out))?,
    ];
    println!("{}", out.display());
    for path in artifacts {
        let size = fs::metadata(&path)
            .with_context(|| format!("reading {}", path.display()))?
            .len();
        println!("  {}  {} ({size} bytes)", path.display(), human(size));
    }
    Ok(())
}

/// Runs one build step, saying on stderr how long it took.
fn step(what: &str, f: impl FnOnce() -> Result<PathBuf>) -> Result<PathBuf> {
    let start = Instant::now();
    let path = f().with_context(|| format!("building {what}"))?;
    eprintln!(
        "engram-dist: {what} in {:.1} s",
        start.elapsed().as_secs_f64()
    );
    Ok(path)
}

/// Removes what an earlier run wrote into `out`, so that a failed step
/// leaves nothing stale behind and a version bump leaves one file each.
fn remove_earlier(out: &Path) -> Result<()> {
    for entry in fs::read_dir(out).with_context(|| format!("listing {}", out.display()))? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let ours = (name.starts_with("engram_memory-") && name.ends_with(".whl"))
            || (name.starts_with("engram-memory-") && name.ends_with(".tgz"))
            || name == CLI;
        if ours {
            fs::remove_file(entry.path())
                .with_context(|| format!("removing {}", entry.path().display()))?;
        }
    }
    Ok(())
}

/// `pip wheel` of `host/python` with [`components`] as `ENGRAM_WASM_DIR`
/// (so that its `setup.py` copies them rather than running cargo), into
/// `out`. It builds from a copy of the package's folder without the build
/// folders an earlier install left there, whose stale files setuptools
/// would put into the wheel.
fn wheel(out: &Path) -> Result<PathBuf> {
    let package = workspace().join("host/python");
    let staging = tempfile::Builder::new()
        .prefix("engram-dist-python")
        .tempdir()
        .context("creating a temporary folder")?;
    let source = staging.path().join("python");
    copy_sources(&package, &source)?;
    run(
        Command::new("python3")
            .args(["-m", "pip", "wheel", "--no-deps", "--no-input"])
            .args(["--disable-pip-version-check", "-w"])
            .arg(out)
            .arg(&source)
            .env("ENGRAM_WASM_DIR", components()),
        "python3 -m pip wheel ./host/python",
        "the Python wheel needs Python 3 (python3) with pip",
    )?;
    let wheel = only(out, "engram_memory-", ".whl")?;
    let name = wheel.file_name().unwrap().to_string_lossy().into_owned();
    ensure!(
        name.ends_with("-py3-none-any.whl"),
        "{name} is not platform-independent: its tag is not py3-none-any"
    );
    // A zip names its files, uncompressed, in its central directory.
    let bytes = fs::read(&wheel).with_context(|| format!("reading {}", wheel.display()))?;
    for file in PYTHON_DATA {
        let inside = format!("engram/wasm/{file}");
        ensure!(
            contains(&bytes, inside.as_bytes()),
            "{name} does not hold {inside}"
        );
    }
    Ok(wheel)
}

/// Copies the package's folder `from` to `to`, leaving out what builds,
/// installs and test runs leave in it.
fn copy_sources(from: &Path, to: &Path) -> Result<()> {
    const LEFT_OUT: [&str; 9] = [
        "build",
        "dist",
        "__pycache__",
        ".venv",
        "venv",
        ".pytest_cache",
        ".mypy_cache",
        ".ruff_cache",
        "node_modules",
    ];
    fs::create_dir_all(to).with_context(|| format!("creating {}", to.display()))?;
    for entry in fs::read_dir(from).with_context(|| format!("listing {}", from.display()))? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if LEFT_OUT.contains(&name.as_str())
            || name.ends_with(".egg-info")
            || name.ends_with(".pyc")
        {
            continue;
        }
        let (source, target) = (entry.path(), to.join(&name));
        if entry.file_type()?.is_dir() {
            copy_sources(&source, &target)?;
        } else {
            fs::copy(&source, &target).with_context(|| format!("copying {}", source.display()))?;
        }
    }
    Ok(())
}

/// The npm package's dependencies installed and this build's components
/// transpiled into it, then `npm pack` into `out`.
fn tarball(out: &Path) -> Result<PathBuf> {
    javascript::ready()?;
    let output = javascript::npm(
        &[
            "pack",
            "--json",
            "--pack-destination",
            out.to_str()
                .context("the output folder is not valid UTF-8")?,
        ],
        &[],
    )?;
    let packed: serde_json::Value =
        serde_json::from_slice(&output.stdout).context("reading what npm pack --json printed")?;
    let name = packed[0]["filename"]
        .as_str()
        .context("npm pack --json named no file")?;
    let tarball = out.join(name);
    let bytes = fs::read(&tarball).with_context(|| format!("reading {}", tarball.display()))?;
    let entries = tar_entries(&bytes).with_context(|| format!("reading {name}"))?;
    let manifest = entries
        .iter()
        .find(|(path, _)| path == "package/package.json")
        .with_context(|| format!("{name} holds no package/package.json"))?;
    let manifest: serde_json::Value =
        serde_json::from_slice(&manifest.1).with_context(|| format!("{name}'s package.json"))?;
    for field in ["dependencies", "optionalDependencies", "peerDependencies"] {
        if let Some(listed) = manifest[field].as_object() {
            // A peer marked optional (the PostgreSQL store's `pg`) is one npm
            // never installs for the package: the user adds it.
            let downloaded: Vec<&String> = listed
                .keys()
                .filter(|dependency| {
                    field != "peerDependencies"
                        || manifest["peerDependenciesMeta"][dependency.as_str()]["optional"] != true
                })
                .collect();
            ensure!(
                downloaded.is_empty(),
                "{name}'s package.json lists {field}, which an install would download: {downloaded:?}"
            );
        }
    }
    for component in JS_COMPONENTS {
        let folder = format!("package/gen/{component}/");
        ensure!(
            entries.iter().any(|(path, _)| path.starts_with(&folder)),
            "{name} holds no {folder}: the components were not transpiled into it"
        );
    }
    Ok(tarball)
}

/// Copies `engram-cli.wasm` into `out`.
fn cli(out: &Path) -> Result<PathBuf> {
    let target = out.join(CLI);
    fs::copy(engram_wasi::CLI, &target)
        .with_context(|| format!("copying {} to {}", engram_wasi::CLI, target.display()))?;
    Ok(target)
}

/// The only file in `dir` whose name starts with `prefix` and ends with
/// `suffix`.
fn only(dir: &Path, prefix: &str, suffix: &str) -> Result<PathBuf> {
    let mut found = Vec::new();
    for entry in fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))? {
        let path = entry?.path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with(prefix) && name.ends_with(suffix) {
            found.push(path);
        }
    }
    match found.len() {
        1 => Ok(found.pop().unwrap()),
        0 => bail!("no {prefix}*{suffix} in {}", dir.display()),
        _ => bail!(
            "more than one {prefix}*{suffix} in {}: {found:?}",
            dir.display()
        ),
    }
}

/// Whether `needle` occurs in `haystack`.
fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle)
}

/// The files of a gzipped tar archive (ustar, with pax extended headers
/// for long names, as npm writes it): each path and content.
fn tar_entries(gzipped: &[u8]) -> Result<Vec<(String, Vec<u8>)>> {
    let mut data = Vec::new();
    GzDecoder::new(gzipped)
        .read_to_end(&mut data)
        .context("gunzip")?;
    let mut entries = Vec::new();
    let mut long_name = None;
    let mut at = 0;
    while at + 512 <= data.len() {
        let header = &data[at..at + 512];
        if header.iter().all(|&b| b == 0) {
            break;
        }
        let field = |start: usize, end: usize| {
            let bytes = &header[start..end];
            let len = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
            String::from_utf8_lossy(&bytes[..len]).into_owned()
        };
        let size = usize::from_str_radix(field(124, 136).trim(), 8)
            .with_context(|| format!("the size of the entry at byte {at}"))?;
        let body = data
            .get(at + 512..at + 512 + size)
            .with_context(|| format!("the entry at byte {at} is cut short"))?;
        match header[156] {
            // A pax header: `<length> <key>=<value>\n` records.
            b'x' => {
                long_name = String::from_utf8_lossy(body)
                    .lines()
                    .find_map(|record| record.split_once(" path=").map(|(_, p)| p.to_owned()));
            }
            b'g' => {}
            _ => {
                let (prefix, name) = (field(345, 500), field(0, 100));
                let path = long_name.take().unwrap_or(if prefix.is_empty() {
                    name
                } else {
                    format!("{prefix}/{name}")
                });
                entries.push((path, body.to_vec()));
            }
        }
        at += 512 + size.div_ceil(512) * 512;
    }
    Ok(entries)
}

/// A size as people read it.
fn human(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / f64::from(1 << 20)),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / f64::from(1 << 10)),
        b => format!("{b} B"),
    }
}
