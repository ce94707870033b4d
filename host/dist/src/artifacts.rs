//! What `cargo run -p engram-dist` builds, in one call the tests make too
//! ([`build`]): the Python wheels and sdist, the npm packages,
//! `engram-cli.wasm` and `engram-http.wasm`.

use crate::{javascript, python, run, tar_entries};
use anyhow::{Context, Result, ensure};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// The components transpiled into the npm package (`gen/<name>/`).
const JS_COMPONENTS: [&str; 5] = [
    "engram-host",
    "engram-host-builtin",
    "engram-algorithms",
    "engram-tokenizer",
    "engram-http-api",
];

/// The command component's name in the folder.
pub const CLI: &str = "engram-cli.wasm";

/// The `wasi:http` server component's name in the folder.
pub const HTTP: &str = "engram-http.wasm";

/// The tokenizer's table the command component reads when a token budget
/// first needs it, beside it.
const TOKENIZER: &str = engram_wasi::TOKENIZER_FILE;

/// Builds every artifact into `out` (created if absent; what an earlier run
/// wrote there removed first), saying on stderr how long each step took:
/// the folder, canonical, and the artifacts' paths.
pub fn build(out: &Path) -> Result<(PathBuf, Vec<PathBuf>)> {
    fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let out = out
        .canonicalize()
        .with_context(|| format!("finding {}", out.display()))?;
    remove_earlier(&out)?;
    let mut artifacts = step("the Python wheels and sdist", || python_packages(&out))?;
    artifacts.extend(step("the npm packages", || tarball(&out))?);
    artifacts.extend(step(CLI, || cli(&out))?);
    Ok((out, artifacts))
}

/// A size as people read it.
pub fn human(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / f64::from(1 << 20)),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / f64::from(1 << 10)),
        b => format!("{b} B"),
    }
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
        let ours = (name.starts_with(python::FILE_PREFIX)
            && (name.ends_with(".whl") || name.ends_with(".tar.gz")))
            || (name.starts_with("engram-memory-") && name.ends_with(".tgz"))
            || name == CLI
            || name == HTTP
            || name == TOKENIZER;
        if ours {
            fs::remove_file(entry.path())
                .with_context(|| format!("removing {}", entry.path().display()))?;
        }
    }
    Ok(())
}

/// The Python package's wheel for each platform (this machine's first,
/// built by maturin; then the others, this machine's with their native
/// module), each checked to hold the native module of its machine and to
/// be tagged for its platform and for CPython's stable ABI from 3.10
/// (`cp310-abi3`), and its sdist.
fn python_packages(out: &Path) -> Result<Vec<PathBuf>> {
    let host = javascript::host_platform().context(
        "the packages are built on a machine of a platform they ship for (linux-x64-gnu, linux-arm64-gnu)",
    )?;
    let mut platforms: Vec<&javascript::Platform> = vec![host];
    platforms.extend(javascript::PLATFORMS.iter().filter(|p| !p.is_host()));
    let mut built: Vec<PathBuf> = Vec::new();
    for platform in platforms {
        let started = Instant::now();
        let wheel = match built.first() {
            None => python::wheel(out)?,
            Some(host_wheel) => python::cross_wheel(host_wheel, platform, out)?,
        };
        let name = wheel.file_name().unwrap().to_string_lossy().into_owned();
        let arch = platform.target.split('-').next().unwrap_or_default();
        ensure!(
            name.contains("-cp310-abi3-manylinux") && name.ends_with(&format!("_{arch}.whl")),
            "{name} is not tagged cp310-abi3 manylinux for {arch}"
        );
        let machine = python::elf_machine(&python::native_module(&wheel)?)
            .with_context(|| format!("{name}'s native module"))?;
        ensure!(
            machine == platform.elf_machine,
            "{name}'s native module is built for ELF machine {machine}, not {}",
            platform.elf_machine
        );
        eprintln!(
            "engram-dist: {} in {:.1} s",
            wheel.display(),
            started.elapsed().as_secs_f64()
        );
        built.push(wheel);
    }
    built.push(python::sdist(out)?);
    Ok(built)
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
        let tarball = platform_tarball(platform, &source_manifest, staging.path(), out)?;
        optional.insert(
            platform.package(),
            serde_json::Value::String(version.clone()),
        );
        tarballs.push(tarball);
    }
    let mut main_manifest = source_manifest;
    main_manifest["optionalDependencies"] = serde_json::Value::Object(optional);
    tarballs.push(main_tarball(&source, &main_manifest, staging.path(), out)?);
    Ok(tarballs)
}

/// The package of one platform's addon (`engram-memory-<platform>`), of the
/// version and license of the package whose manifest is `source`, packed
/// into `out` from a folder under `staging`.
fn platform_tarball(
    platform: &javascript::Platform,
    source: &serde_json::Value,
    staging: &Path,
    out: &Path,
) -> Result<PathBuf> {
    let started = Instant::now();
    let built = javascript::build_addon(platform)?;
    let folder = staging.join(platform.package());
    fs::create_dir_all(&folder).with_context(|| format!("creating {}", folder.display()))?;
    fs::copy(&built, folder.join(platform.addon_file()))
        .with_context(|| format!("copying {}", built.display()))?;
    let manifest = serde_json::json!({
        "name": platform.package(),
        "version": source["version"],
        "description": format!("The Node addon of engram-memory for {}: the Rust host, installed by npm with engram-memory where it runs", platform.name),
        "main": platform.addon_file(),
        "files": [platform.addon_file()],
        "os": [platform.os],
        "cpu": [platform.cpu],
        "libc": [platform.libc],
        "license": source["license"],
        "engines": source["engines"],
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
    Ok(tarball)
}

/// The package itself, with `manifest` (its platform packages as optional
/// dependencies), packed into `out` from a folder under `staging`, and
/// checked: it downloads nothing, carries the components transpiled and no
/// addon.
fn main_tarball(
    source: &Path,
    manifest: &serde_json::Value,
    staging: &Path,
    out: &Path,
) -> Result<PathBuf> {
    let folder = staging.join("engram-memory");
    fs::create_dir_all(&folder).with_context(|| format!("creating {}", folder.display()))?;
    for file in JS_FILES {
        copy_tree(&source.join(file), &folder.join(file))?;
    }
    fs::write(
        folder.join("package.json"),
        serde_json::to_string_pretty(manifest)? + "\n",
    )
    .context("writing the package's package.json")?;
    let (tarball, entries) = pack(&folder, out)?;
    let name = tarball.display().to_string();
    let packed = self::manifest(&tarball, &entries)?;
    for field in ["dependencies", "peerDependencies"] {
        if let Some(listed) = packed[field].as_object() {
            ensure!(
                listed.is_empty(),
                "{name}'s package.json lists {field}, which an install would download: {:?}",
                listed.keys().collect::<Vec<_>>()
            );
        }
    }
    ensure!(
        packed["optionalDependencies"] == manifest["optionalDependencies"],
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
    Ok(tarball)
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

/// Copies `engram-cli.wasm`, its tokenizer's table and `engram-http.wasm`
/// into `out`.
fn cli(out: &Path) -> Result<Vec<PathBuf>> {
    [
        (engram_wasi::CLI, CLI),
        (engram_wasi::TOKENIZER, TOKENIZER),
        (engram_wasi::HTTP, HTTP),
    ]
    .into_iter()
    .map(|(from, name)| {
        let target = out.join(name);
        fs::copy(from, &target)
            .with_context(|| format!("copying {from} to {}", target.display()))?;
        Ok(target)
    })
    .collect()
}
