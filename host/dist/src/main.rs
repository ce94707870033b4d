//! `cargo run -p engram-dist [-- --out DIR]`: builds the Python wheel, the
//! npm packages (`engram-memory` and its addon's package for each platform)
//! and `engram-cli.wasm` into `DIR` (`dist/` at the workspace's top by
//! default) and prints each one's path and size. A
//! failure is one line naming the step that failed (then what it printed).

use anyhow::{Context, Result, bail, ensure};
use clap::Parser;
use engram_dist::{components, javascript, run, tar_entries, workspace};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

/// Builds what a user installs into one folder: the Python wheel, the npm
/// packages and engram-cli.wasm.
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
    let mut artifacts = vec![step("the Python wheel", || wheel(&out))?];
    artifacts.extend(step("the npm packages", || tarball(&out))?);
    artifacts.push(step(CLI, || cli(&out))?);
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
fn step<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
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

/// The files of the npm package that go into its tarball (its `files`, and
/// `package.json`).
const JS_FILES: [&str; 7] = [
    "package.json",
    "src",
    "gen",
    "worker",
    "bin",
    "index.d.ts",
    "README.md",
];

/// The files of a tarball: each path and content.
type Entries = Vec<(String, Vec<u8>)>;

/// `npm pack` of the package in `folder` into `out`: the tarball, read back
/// (its path and its files).
fn pack(folder: &Path, out: &Path) -> Result<(PathBuf, Entries)> {
    let mut command = Command::new("npm");
    command
        .args(["pack", "--json", "--pack-destination"])
        .arg(out)
        .current_dir(folder);
    let output = run(
        &mut command,
        &format!("npm pack in {}", folder.display()),
        "the npm package needs Node.js with npm",
    )?;
    let packed: serde_json::Value =
        serde_json::from_slice(&output.stdout).context("reading what npm pack --json printed")?;
    let name = packed[0]["filename"]
        .as_str()
        .context("npm pack --json named no file")?;
    let tarball = out.join(name);
    let bytes = fs::read(&tarball).with_context(|| format!("reading {}", tarball.display()))?;
    let entries = tar_entries(&bytes).with_context(|| format!("reading {name}"))?;
    Ok((tarball, entries))
}

/// The package.json of a tarball, parsed.
fn manifest(name: &Path, entries: &[(String, Vec<u8>)]) -> Result<serde_json::Value> {
    let name = name.display();
    let manifest = entries
        .iter()
        .find(|(path, _)| path == "package/package.json")
        .with_context(|| format!("{name} holds no package/package.json"))?;
    serde_json::from_slice(&manifest.1).with_context(|| format!("{name}'s package.json"))
}

/// The npm packages: one per platform the addon is built for
/// (`engram-memory-<platform>`, the addon alone, npm installing it only
/// where its `os`, `cpu` and `libc` say), and the package itself, its
/// dependencies installed and this build's components transpiled into it,
/// naming each platform package as an optional dependency of the same
/// version: `npm pack` of each into `out`. The tarballs' paths, the
/// platforms' first.
fn tarball(out: &Path) -> Result<Vec<PathBuf>> {
    javascript::ready()?;
    let source = javascript::package();
    let source_manifest: serde_json::Value = serde_json::from_slice(
        &fs::read(source.join("package.json")).context("reading host/js/package.json")?,
    )
    .context("host/js/package.json")?;
    let version = source_manifest["version"]
        .as_str()
        .context("host/js/package.json has no version")?
        .to_owned();
    let staging = tempfile::Builder::new()
        .prefix("engram-dist-npm")
        .tempdir()
        .context("creating a temporary folder")?;

    let mut optional = serde_json::Map::new();
    let mut tarballs = Vec::new();
    for platform in &javascript::PLATFORMS {
        let started = Instant::now();
        let built = javascript::build_addon(platform)?;
        let folder = staging.path().join(platform.package());
        fs::create_dir_all(&folder).with_context(|| format!("creating {}", folder.display()))?;
        fs::copy(&built, folder.join(platform.addon_file()))
            .with_context(|| format!("copying {}", built.display()))?;
        let manifest = serde_json::json!({
            "name": platform.package(),
            "version": version,
            "description": format!("The Node addon of engram-memory for {}: the Rust host, installed by npm with engram-memory where it runs", platform.name),
            "main": platform.addon_file(),
            "files": [platform.addon_file()],
            "os": [platform.os],
            "cpu": [platform.cpu],
            "libc": [platform.libc],
            "license": source_manifest["license"],
            "engines": source_manifest["engines"],
        });
        fs::write(
            folder.join("package.json"),
            serde_json::to_string_pretty(&manifest)? + "\n",
        )
        .context("writing a platform package's package.json")?;
        let (tarball, entries) = pack(&folder, out)?;
        let addon = format!("package/{}", platform.addon_file());
        let size = entries
            .iter()
            .find(|(path, _)| *path == addon)
            .map(|(_, bytes)| bytes.len())
            .with_context(|| format!("{} holds no {addon}", tarball.display()))?;
        eprintln!(
            "engram-dist: {} ({} of addon) in {:.1} s",
            tarball.display(),
            human(size as u64),
            started.elapsed().as_secs_f64()
        );
        optional.insert(
            platform.package(),
            serde_json::Value::String(version.clone()),
        );
        tarballs.push(tarball);
    }

    let folder = staging.path().join("engram-memory");
    fs::create_dir_all(&folder).with_context(|| format!("creating {}", folder.display()))?;
    for file in JS_FILES {
        copy_tree(&source.join(file), &folder.join(file))?;
    }
    let mut main_manifest = source_manifest.clone();
    main_manifest["optionalDependencies"] = serde_json::Value::Object(optional.clone());
    fs::write(
        folder.join("package.json"),
        serde_json::to_string_pretty(&main_manifest)? + "\n",
    )
    .context("writing the package's package.json")?;
    let (tarball, entries) = pack(&folder, out)?;
    let name = tarball.display().to_string();
    let manifest = manifest(&tarball, &entries)?;
    for field in ["dependencies", "peerDependencies"] {
        if let Some(listed) = manifest[field].as_object() {
            ensure!(
                listed.is_empty(),
                "{name}'s package.json lists {field}, which an install would download: {:?}",
                listed.keys().collect::<Vec<_>>()
            );
        }
    }
    ensure!(
        manifest["optionalDependencies"] == serde_json::Value::Object(optional),
        "{name}'s optional dependencies are not exactly its platform packages of its version"
    );
    for component in JS_COMPONENTS {
        let folder = format!("package/gen/{component}/");
        ensure!(
            entries.iter().any(|(path, _)| path.starts_with(&folder)),
            "{name} holds no {folder}: the components were not transpiled into it"
        );
    }
    ensure!(
        !entries.iter().any(|(path, _)| path.ends_with(".node")),
        "{name} holds an addon: they go in the platform packages"
    );
    tarballs.push(tarball);
    Ok(tarballs)
}

/// Copies `from` (a file or a folder) to `to`.
fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    if from.is_dir() {
        fs::create_dir_all(to).with_context(|| format!("creating {}", to.display()))?;
        for entry in fs::read_dir(from).with_context(|| format!("listing {}", from.display()))? {
            let entry = entry?;
            copy_tree(&entry.path(), &to.join(entry.file_name()))?;
        }
        Ok(())
    } else {
        fs::copy(from, to)
            .map(|_| ())
            .with_context(|| format!("copying {}", from.display()))
    }
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

/// A size as people read it.
fn human(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / f64::from(1 << 20)),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / f64::from(1 << 10)),
        b => format!("{b} B"),
    }
}
