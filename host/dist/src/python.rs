//! The Python package (`host/python`) built as users install it: a wheel
//! per platform (the native module, the Rust host, built by maturin, the
//! package's build backend) and the source distribution.

use anyhow::{Context, Result, bail};
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::javascript::Platform;

/// What maturin is needed for, said when it fails to start.
const NEEDS_MATURIN: &str = "the Python package's build needs Python 3 (python3) with pip";

/// The package's folder.
pub fn package() -> PathBuf {
    crate::workspace().join("host/python")
}

/// The distribution's name on the Python package index, as its files are
/// named (`engram_memory_engine-<version>…`).
pub const FILE_PREFIX: &str = "engram_memory_engine-";

/// The maturin the package's `pyproject.toml` builds with
/// (`requires = ["maturin==X"]`): its version, read from there.
pub fn maturin_version() -> Result<String> {
    let manifest = package().join("pyproject.toml");
    let text =
        fs::read_to_string(&manifest).with_context(|| format!("reading {}", manifest.display()))?;
    text.lines()
        .find_map(|line| {
            let (_, rest) = line.split_once("\"maturin==")?;
            rest.split_once('"').map(|(version, _)| version.to_owned())
        })
        .with_context(|| format!("{} pins no maturin==X", manifest.display()))
}

/// maturin of the pinned version, in zig's virtual environment (so it
/// cross-builds with `--zig`), and a `PATH` for it: zig's Python first,
/// then this cargo's folder.
fn maturin() -> Result<(Command, std::ffi::OsString)> {
    let (exe, python_bin) = engram_wasi::zig_tool("maturin", &maturin_version()?)?;
    let path = crate::zig_path(python_bin)?;
    let mut command = Command::new(exe);
    command.current_dir(package()).env("PATH", &path);
    engram_build::rust_target::without_host_flags(&mut command);
    Ok((command, path))
}

/// The one file of `dir` (a fresh folder a tool wrote into) that ends with
/// `suffix`.
fn only(dir: &Path, suffix: &str) -> Result<PathBuf> {
    let mut found = Vec::new();
    for entry in fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))? {
        let path = entry?.path();
        if path.to_string_lossy().ends_with(suffix) {
            found.push(path);
        }
    }
    match <[PathBuf; 1]>::try_from(found) {
        Ok([file]) => Ok(file),
        Err(found) => bail!(
            "{} holds {} *{suffix} files, not one",
            dir.display(),
            found.len()
        ),
    }
}

/// [`only`], copied into `out`.
fn moved(dir: &Path, suffix: &str, out: &Path) -> Result<PathBuf> {
    let file = only(dir, suffix)?;
    let target = out.join(file.file_name().context("a file name")?);
    fs::copy(&file, &target).with_context(|| format!("copying {}", file.display()))?;
    Ok(target)
}

/// The wheel for `platform`: built with cargo for this machine (maturin
/// finds the manylinux tag its symbols allow), else cross-built with zig
/// for manylinux2014 (glibc 2.17); into `out`.
pub fn wheel(platform: &Platform, out: &Path) -> Result<PathBuf> {
    let staging = tempfile::Builder::new()
        .prefix("engram-dist-wheel")
        .tempdir()
        .context("creating a temporary folder")?;
    let (mut command, _) = maturin()?;
    command
        .args(["build", "--release", "--locked", "--out"])
        .arg(staging.path());
    if !platform.is_host() {
        engram_build::rust_target::ensure(platform.target, "the Python module")?;
        // A target folder of its own: maturin's zig wrappers are not
        // cargo-zigbuild's, and in one folder each build would find the
        // other's C compiler settings changed and build everything again.
        let target_dir = std::env::var_os("CARGO_TARGET_DIR")
            .map_or_else(|| crate::workspace().join("target"), PathBuf::from)
            .join("maturin-zig");
        command
            .args(["--target", platform.target, "--zig"])
            .args(["--compatibility", "manylinux2014"])
            .env("CARGO_TARGET_DIR", target_dir);
    }
    let what = format!("maturin build of the Python wheel for {}", platform.target);
    crate::run(&mut command, &what, NEEDS_MATURIN)?;
    moved(staging.path(), ".whl", out)
}

/// What the source distribution carries besides what maturin puts in it
/// (the Rust crates the module depends on, the package): the WIT contract
/// the host's bindings are generated from, the sample conversation the
/// command line's demo embeds, and the engine built (beside
/// `engram-component`, which embeds it when the tree has no `guest/`), so
/// that `pip install` of it needs cargo alone and builds the same engine
/// bytes.
fn sdist_extras() -> Result<Vec<(String, Vec<u8>)>> {
    let root = crate::workspace();
    let mut extras = vec![
        (
            "samples/conversation.jsonl".to_owned(),
            fs::read(root.join("samples/conversation.jsonl"))
                .context("reading samples/conversation.jsonl")?,
        ),
        (
            "host/component/engram.wasm".to_owned(),
            engram_component::COMPONENT.to_vec(),
        ),
    ];
    let mut wit: Vec<PathBuf> = Vec::new();
    let mut folders = vec![root.join("wit")];
    while let Some(folder) = folders.pop() {
        for entry in
            fs::read_dir(&folder).with_context(|| format!("listing {}", folder.display()))?
        {
            let path = entry?.path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|ext| ext == "wit") {
                wit.push(path);
            }
        }
    }
    wit.sort();
    for path in wit {
        let name = path
            .strip_prefix(&root)?
            .to_str()
            .context("a WIT file's path is not UTF-8")?
            .to_owned();
        extras.push((name, fs::read(&path)?));
    }
    Ok(extras)
}

/// The source distribution: `maturin sdist`, with [`sdist_extras`] added
/// under its top folder; into `out`.
pub fn sdist(out: &Path) -> Result<PathBuf> {
    let staging = tempfile::Builder::new()
        .prefix("engram-dist-sdist")
        .tempdir()
        .context("creating a temporary folder")?;
    let (mut command, _) = maturin()?;
    command.args(["sdist", "--out"]).arg(staging.path());
    crate::run(&mut command, "maturin sdist", NEEDS_MATURIN)?;
    let built = only(staging.path(), ".tar.gz")?;
    let bytes = fs::read(&built).with_context(|| format!("reading {}", built.display()))?;
    let top = built
        .file_name()
        .and_then(|name| name.to_str())
        .and_then(|name| name.strip_suffix(".tar.gz"))
        .context("the sdist's name")?
        .to_owned();
    let mut entries = crate::tar_entries(&bytes)?;
    for (name, data) in sdist_extras()? {
        let path = format!("{top}/{name}");
        if !entries.iter().any(|(held, _)| *held == path) {
            entries.push((path, data));
        }
    }
    let target = out.join(built.file_name().context("a file name")?);
    crate::write_tar_gz(&target, &entries)?;
    Ok(target)
}

/// The native module a wheel holds (`engram_memory/_native.abi3.so`).
pub fn native_module(wheel: &Path) -> Result<Vec<u8>> {
    const MODULE: &str = "engram_memory/_native.abi3.so";
    let file = fs::File::open(wheel).with_context(|| format!("opening {}", wheel.display()))?;
    let mut archive = zip::ZipArchive::new(file)
        .with_context(|| format!("reading {} as a zip archive", wheel.display()))?;
    let mut data = Vec::new();
    archive
        .by_name(MODULE)
        .with_context(|| format!("{} holds no {MODULE}", wheel.display()))?
        .read_to_end(&mut data)?;
    Ok(data)
}

/// The ELF machine (`e_machine`) of a shared library's bytes.
pub fn elf_machine(library: &[u8]) -> Result<u16> {
    if library.get(..4) != Some(b"\x7fELF") || library.len() < 20 {
        bail!("not an ELF file");
    }
    Ok(u16::from_le_bytes([library[18], library[19]]))
}
