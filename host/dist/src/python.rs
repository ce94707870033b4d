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
    crate::as_shipped(&mut command);
    crate::with_built_engine(&mut command)?;
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

/// This machine's wheel, built by maturin (which finds the manylinux tag
/// its symbols allow); into `out`.
pub fn wheel(out: &Path) -> Result<PathBuf> {
    let staging = tempfile::Builder::new()
        .prefix("engram-dist-wheel")
        .tempdir()
        .context("creating a temporary folder")?;
    let (mut command, _) = maturin()?;
    command
        .args(["build", "--release", "--locked", "--out"])
        .arg(staging.path());
    crate::run(
        &mut command,
        "maturin build of this machine's Python wheel",
        NEEDS_MATURIN,
    )?;
    moved(staging.path(), ".whl", out)
}

/// The wheel of another `platform`: `host_wheel` (this machine's, which
/// maturin made) with the platform's native module in its place, cross-
/// built with the platform's Node addon ([`crate::native::cross_build`]:
/// one build of the Rust host a platform), tagged manylinux2014 (glibc
/// 2.17) for its machine, its `RECORD` made again; into `out`. Every other
/// file of a wheel (the Python package, its metadata, the `engram`
/// command's entry point) is the same on every platform.
pub fn cross_wheel(host_wheel: &Path, platform: &Platform, out: &Path) -> Result<PathBuf> {
    let module = crate::native::cross_build(platform)?.python;
    let module = fs::read(&module).with_context(|| format!("reading {}", module.display()))?;
    let host_name = host_wheel
        .file_name()
        .and_then(|name| name.to_str())
        .and_then(|name| name.strip_suffix(".whl"))
        .context("a wheel's file name")?;
    // name-version-python-abi-platform.whl
    let [dist, version, python, abi, _] =
        <[&str; 5]>::try_from(host_name.split('-').collect::<Vec<_>>())
            .map_err(|_| anyhow::anyhow!("{host_name}.whl is not a wheel's name"))?;
    let arch = platform.target.split('-').next().unwrap_or_default();
    let glibc = crate::native::GLIBC.replace('.', "_");
    let tags = [
        format!("manylinux_{glibc}_{arch}"),
        format!("manylinux2014_{arch}"),
    ];
    let name = format!("{dist}-{version}-{python}-{abi}-{}.whl", tags.join("."));

    let file =
        fs::File::open(host_wheel).with_context(|| format!("opening {}", host_wheel.display()))?;
    let mut archive = zip::ZipArchive::new(file)
        .with_context(|| format!("reading {} as a zip archive", host_wheel.display()))?;
    let mut files: Vec<(String, u32, Vec<u8>)> = Vec::new();
    let mut replaced = false;
    for index in 0..archive.len() {
        let mut entry = archive.by_index(index)?;
        let path = entry.name()?.into_owned();
        let mode = entry.unix_mode().unwrap_or(0o644);
        let mut data = Vec::new();
        entry.read_to_end(&mut data)?;
        if path == MODULE {
            data.clone_from(&module);
            replaced = true;
        } else if path.ends_with(".dist-info/WHEEL") {
            let text = String::from_utf8(data).context("the wheel's WHEEL file")?;
            let mut lines: Vec<String> = text
                .lines()
                .filter(|line| !line.starts_with("Tag: "))
                .map(str::to_owned)
                .collect();
            lines.extend(tags.iter().map(|tag| format!("Tag: {python}-{abi}-{tag}")));
            data = (lines.join("\n") + "\n").into_bytes();
        } else if path.ends_with(".dist-info/RECORD") {
            continue; // made again below
        }
        files.push((path, mode, data));
    }
    anyhow::ensure!(replaced, "{} holds no {MODULE}", host_wheel.display());
    let record_path = format!("{dist}-{version}.dist-info/RECORD");
    let mut record = String::new();
    for (path, _, data) in &files {
        use base64::Engine as _;
        use sha2::Digest as _;
        let digest =
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(data));
        record.push_str(&format!("{path},sha256={digest},{}\n", data.len()));
    }
    record.push_str(&format!("{record_path},,\n"));
    files.push((record_path, 0o644, record.into_bytes()));

    let target = out.join(&name);
    let mut writer = zip::ZipWriter::new(
        fs::File::create(&target).with_context(|| format!("creating {}", target.display()))?,
    );
    for (path, mode, data) in files {
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated)
            .unix_permissions(mode);
        writer.start_file(path, options)?;
        std::io::Write::write_all(&mut writer, &data)?;
    }
    writer.finish()?;
    Ok(target)
}

/// What the source distribution carries besides what maturin puts in it
/// (the Rust crates the module depends on, the package): the WIT contract
/// the host's bindings are generated from, the sample conversation the
/// command line's demo embeds, and the engine built (beside
/// `engram-engine`, which embeds it when the tree has no `guest/`), so
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
            "host/engine/engram.wasm".to_owned(),
            engram_engine::COMPONENT.to_vec(),
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

/// Where a wheel holds the native module.
const MODULE: &str = "engram_memory/_native.abi3.so";

/// The native module a wheel holds ([`MODULE`]).
pub fn native_module(wheel: &Path) -> Result<Vec<u8>> {
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
