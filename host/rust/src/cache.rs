//! The compiled engine on disk: compiling the component takes Cranelift a
//! while, loading it back takes milliseconds.
//!
//! A cache file is named by a hash of everything the compiled code depends
//! on: the component's bytes (hashed once, by the build script, for the
//! embedded component), the wasmtime version and the engine's compilation
//! settings (`Engine::precompile_compatibility_hash`, which covers the
//! target, the CPU features, the memory layout and the epoch checks). Its
//! content is wasmtime's serialized component followed by a trailer: the
//! length and a 128-bit checksum (XXH3-128) of what precedes it, and a magic
//! number. Files are written to a temporary name, synced and renamed into
//! place, so a reader never sees half a file written by a host.
//!
//! What a start checks, and what each check covers:
//!
//! - **The whole file** (the full check): its length and checksum against
//!   its trailer. It covers a truncated, partial or damaged file, whatever
//!   the cause, and is the only check that covers damage the file system
//!   does not see (a disk that returns other bytes).
//! - **The stamp**: a small file beside the cache file, written after a full
//!   check passed, recording the checked file's device, inode, length,
//!   modification and status-change times (in ns) and checksum. A start
//!   whose stamp matches the file's metadata (`fstat` of the file it opened)
//!   and whose trailer (its last 32 bytes) holds the stamped length and
//!   checksum loads the file without reading it whole. Any change through
//!   the file system since the check — a write in place of the same length,
//!   a truncation, another file renamed or copied over it — changes the
//!   inode or the status-change time, which no process can set back, so the
//!   stamp no longer matches and the start falls back to the full check
//!   (and stamps again, or compiles afresh and replaces the file). A stamp
//!   is trusted only when it passes its own checksum and describes this very
//!   file: a stamp copied from another file names another inode. A file is
//!   stamped only if its last change is older than the check (both times
//!   read from the file system's own clock), so a change made in the same
//!   clock tick as the check cannot keep the stamped times; a file just
//!   written is therefore stamped by the next start that reads it whole.
//!   Without stamps (other platforms) every start makes the full check.
//! - **wasmtime's own checks** when it loads the file: that it was made by
//!   this wasmtime version with compatible settings, refusing anything else.
//!
//! A file that fails any check is ignored, compiled afresh and replaced. A
//! stamped file is mapped into memory rather than copied; a host never
//! changes a cache file in place (it renames a new one over it, and the
//! mapping keeps the old one), so the mapped bytes stay the checked ones.
//! None of this defends against someone who can write the cache folder, who
//! could put any native code there (or truncate a mapped file under a
//! running process): the folder must be as trusted as the executable, as any
//! compilation cache must be. The checks make sure the file loaded is the
//! one a host wrote, whole and unchanged.

use anyhow::{Context, Result};
use std::fs::{File, Metadata};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use wasmtime::Engine;
use wasmtime::component::Component;

/// The last 8 bytes of every cache file.
const MAGIC: &[u8; 8] = b"ENGRAMC2";
/// Length (8) + checksum (16) + magic (8).
const TRAILER: usize = 32;
/// The first 8 bytes of every stamp.
const STAMP_MAGIC: &[u8; 8] = b"ENGRAMS1";
/// Magic (8) + identity (7 × 8) + the file's checksum (16) + the stamp's
/// own checksum (16).
const STAMP_LEN: usize = 8 + 7 * 8 + 16 + 16;

/// XXH3-128 of the embedded component ([`crate::COMPONENT`]), computed by
/// the build script of `engram-engine`.
pub(crate) const COMPONENT_HASH: u128 = engram_engine::COMPONENT_XXH3;

/// Where a compiled component came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// Compiled by Cranelift when the [`crate::Engram`] was made.
    Compiled,
    /// Loaded from a cache file written by an earlier compilation.
    Cache,
}

/// A compiled component, where it came from, and the cache file it was read
/// from or written to (when a cache folder was given).
pub(crate) struct Loaded {
    pub component: Component,
    pub origin: Origin,
    pub path: Option<PathBuf>,
}

/// How a cache file was found whole before it was loaded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Check {
    /// Its stamp matched: only its metadata and trailer were read.
    Stamp,
    /// It was read whole and its checksum matched its trailer.
    Whole,
}

/// Loads the compiled component from `dir` if a valid one is there;
/// otherwise compiles `bytes` (whose XXH3-128 is `hash`) and, when `dir` is
/// given, stores the result there for next time. A cache that cannot be
/// written is not an error: the engine is compiled, and works, all the same.
pub(crate) fn load_or_compile(
    engine: &Engine,
    bytes: &[u8],
    hash: u128,
    dir: Option<&Path>,
) -> Result<Loaded> {
    let Some(dir) = dir else {
        return Ok(Loaded {
            component: compile(engine, bytes)?,
            origin: Origin::Compiled,
            path: None,
        });
    };
    let path = dir.join(file_name(engine, hash));
    if let Some((component, _)) = load(engine, &path) {
        return Ok(Loaded {
            component,
            origin: Origin::Cache,
            path: Some(path),
        });
    }
    let component = compile(engine, bytes)?;
    // Best effort: a read-only or full disk only costs the next start a
    // compilation.
    let _ = store(&component, dir, &path);
    Ok(Loaded {
        component,
        origin: Origin::Compiled,
        path: Some(path),
    })
}

fn compile(engine: &Engine, bytes: &[u8]) -> Result<Component> {
    Component::new(engine, bytes)
        .map_err(anyhow::Error::from)
        .context("compiling the engine component")
}

/// The cache file's name: a 128-bit hash of the component, the wasmtime
/// version and the engine's compilation settings.
fn file_name(engine: &Engine, component: u128) -> String {
    // Hashing the settings walks them all: once.
    let mut settings = DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut settings);
    let settings = settings.finish();
    let hash = |salt: u8| {
        let mut hasher = DefaultHasher::new();
        salt.hash(&mut hasher);
        component.hash(&mut hasher);
        WASMTIME_VERSION.hash(&mut hasher);
        settings.hash(&mut hasher);
        hasher.finish()
    };
    format!("engram-{:016x}{:016x}.cwasm", hash(0), hash(1))
}

/// The wasmtime version the host is built with (it is pinned exactly).
const WASMTIME_VERSION: &str = "48.0.8";

/// A 128-bit checksum of `bytes`: XXH3-128 (the `xxhash-rust` crate). Not
/// a defence against someone who can write the cache folder, who could
/// write any code there: a check that the file is the one that was written,
/// whole.
fn checksum(bytes: &[u8]) -> [u8; 16] {
    xxhash_rust::xxh3::xxh3_128(bytes).to_le_bytes()
}

/// The stamp beside a cache file.
fn stamp_path(path: &Path) -> PathBuf {
    path.with_extension("stamp")
}

/// The component in `path`, if the file is whole and wasmtime accepts it
/// for this engine, and which check found it whole.
fn load(engine: &Engine, path: &Path) -> Option<(Component, Check)> {
    let mut file = File::open(path).ok()?;
    let opened = file.metadata().ok()?;
    if let Some(component) = load_stamped(engine, path, &file, &opened) {
        return Some((component, Check::Stamp));
    }

    // The full check. The stamp's temporary file is made first: its
    // status-change time is the file system's "now" before the cache file
    // is examined.
    let temp = Temp::create(path.parent()?);
    let before = file.metadata().ok()?;
    let mut bytes = Vec::with_capacity(before.len() as usize);
    file.read_to_end(&mut bytes).ok()?;
    let body = verified(&bytes)?;
    // SAFETY: the bytes are a wasmtime serialization this host wrote (the
    // trailer's checksum matches, so they are whole and unchanged since),
    // and `deserialize` checks that they were made by this wasmtime version
    // with compatible settings. Whoever can write the cache folder could
    // put any native code there: the folder must be as trusted as the
    // executable, as any compilation cache must be.
    let component = unsafe { Component::deserialize(engine, body) }.ok()?;
    if let (Some((mut temp, Some(now))), Ok(after)) = (temp, file.metadata()) {
        let checked = identity(&before);
        // Unchanged while it was read, and last changed before the check
        // began: any later change gets a later status-change time.
        if checked.is_some()
            && checked == identity(&after)
            && changed(&before).is_some_and(|last| last < now)
        {
            let trailer: [u8; TRAILER] = bytes[body.len()..].try_into().ok()?;
            let stamp = stamp_of(&before, &trailer);
            let _ = temp.commit(&stamp, &stamp_path(path));
        }
    }
    Some((component, Check::Whole))
}

/// The component in `path` without reading the file whole, if `file` (the
/// file opened at `path`, with its metadata `opened`) is the file its stamp
/// describes.
fn load_stamped(engine: &Engine, path: &Path, file: &File, opened: &Metadata) -> Option<Component> {
    let stamp = std::fs::read(stamp_path(path)).ok()?;
    let (recorded, sum) = stamp_fields(&stamp)?;
    if Some(recorded) != identity(opened) || !trailer_holds(file, opened.len(), &sum) {
        return None;
    }
    // SAFETY: as in `load`: the file is the one whose bytes a full check
    // found whole (its stamp matches its device, inode, length and times,
    // and its trailer the stamped checksum), and `deserialize_file` checks
    // the wasmtime version and settings. It maps the file rather than
    // copying it: a host never changes a cache file in place, it renames a
    // new one over it, so the mapping keeps the stamped bytes.
    let component = unsafe { Component::deserialize_file(engine, path) }.ok()?;
    // `deserialize_file` opened the path again: it must still name the
    // stamped file (a host may have renamed another over it since).
    let now = std::fs::metadata(path).ok()?;
    (identity(&now) == Some(recorded)).then_some(component)
}

/// Whether the file's last 32 bytes are a trailer with the stamped checksum
/// and the length of what precedes them.
fn trailer_holds(file: &File, len: u64, sum: &[u8; 16]) -> bool {
    let mut trailer = [0u8; TRAILER];
    let Some(at) = len.checked_sub(TRAILER as u64) else {
        return false;
    };
    if read_at(file, &mut trailer, at).is_err() {
        return false;
    }
    let (body_len, rest) = trailer.split_at(8);
    let (stored, magic) = rest.split_at(16);
    magic == MAGIC && body_len == at.to_le_bytes() && stored == sum
}

#[cfg(unix)]
fn read_at(file: &File, buf: &mut [u8], at: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, at)
}

#[cfg(not(unix))]
fn read_at(_: &File, _: &mut [u8], _: u64) -> std::io::Result<()> {
    Err(std::io::ErrorKind::Unsupported.into())
}

/// What a stamp records of a file: device, inode, length, modification
/// time and status-change time (seconds and nanoseconds). `None` where the
/// platform does not give them, and no file is stamped.
#[cfg(unix)]
fn identity(meta: &Metadata) -> Option<[u64; 7]> {
    use std::os::unix::fs::MetadataExt;
    Some([
        meta.dev(),
        meta.ino(),
        meta.size(),
        meta.mtime() as u64,
        meta.mtime_nsec() as u64,
        meta.ctime() as u64,
        meta.ctime_nsec() as u64,
    ])
}

#[cfg(not(unix))]
fn identity(_: &Metadata) -> Option<[u64; 7]> {
    None
}

/// When a file's content or metadata last changed (its status-change time),
/// as the file system's clock gave it.
#[cfg(unix)]
fn changed(meta: &Metadata) -> Option<(i64, i64)> {
    use std::os::unix::fs::MetadataExt;
    Some((meta.ctime(), meta.ctime_nsec()))
}

#[cfg(not(unix))]
fn changed(_: &Metadata) -> Option<(i64, i64)> {
    None
}

/// A stamp for the file whose metadata is `meta` and whose trailer is
/// `trailer`.
fn stamp_of(meta: &Metadata, trailer: &[u8; TRAILER]) -> Vec<u8> {
    let mut stamp = Vec::with_capacity(STAMP_LEN);
    stamp.extend_from_slice(STAMP_MAGIC);
    for field in identity(meta).unwrap_or_default() {
        stamp.extend_from_slice(&field.to_le_bytes());
    }
    stamp.extend_from_slice(&trailer[8..24]);
    let own = checksum(&stamp);
    stamp.extend_from_slice(&own);
    stamp
}

/// The identity and file checksum a stamp records, if it is whole.
fn stamp_fields(stamp: &[u8]) -> Option<([u64; 7], [u8; 16])> {
    if stamp.len() != STAMP_LEN || &stamp[..8] != STAMP_MAGIC {
        return None;
    }
    let (content, own) = stamp.split_at(STAMP_LEN - 16);
    if own != checksum(content) {
        return None;
    }
    let mut identity = [0u64; 7];
    for (field, bytes) in identity.iter_mut().zip(content[8..].chunks_exact(8)) {
        *field = u64::from_le_bytes(bytes.try_into().ok()?);
    }
    let sum = content[8 + 7 * 8..].try_into().ok()?;
    Some((identity, sum))
}

/// The serialized component inside a cache file, if its trailer checks out.
fn verified(file: &[u8]) -> Option<&[u8]> {
    let body_len = file.len().checked_sub(TRAILER)?;
    let (body, trailer) = file.split_at(body_len);
    let (len, rest) = trailer.split_at(8);
    let (sum, magic) = rest.split_at(16);
    let len = u64::from_le_bytes(len.try_into().ok()?);
    (magic == MAGIC && len == body_len as u64 && sum == checksum(body)).then_some(body)
}

/// A new file under a name no other writer uses (this process, and a
/// counter), removed unless it is committed (renamed into place).
struct Temp {
    path: PathBuf,
    file: Option<File>,
}

impl Temp {
    /// Creates the file in `dir`; with it, its status-change time where the
    /// platform gives it.
    fn create(dir: &Path) -> Option<(Temp, Option<(i64, i64)>)> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!(".engram-{}-{n}.tmp", std::process::id()));
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .ok()?;
        let temp = Temp {
            path,
            file: Some(file),
        };
        let created = temp
            .file
            .as_ref()
            .and_then(|f| f.metadata().ok())
            .and_then(|m| changed(&m));
        Some((temp, created))
    }

    /// Writes `bytes`, then renames the file to `to`.
    fn commit(&mut self, bytes: &[u8], to: &Path) -> std::io::Result<()> {
        let mut file = self.file.take().ok_or(std::io::ErrorKind::NotFound)?;
        file.write_all(bytes)?;
        std::fs::rename(&self.path, to)?;
        self.path = PathBuf::new();
        Ok(())
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        if !self.path.as_os_str().is_empty() {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Writes the serialized component to a temporary file in `dir`, syncs it,
/// then renames it to `path`. The file is stamped by the next start that
/// checks it whole.
fn store(component: &Component, dir: &Path, path: &Path) -> Result<()> {
    let body = component.serialize().map_err(anyhow::Error::from)?;
    std::fs::create_dir_all(dir)?;
    let (mut temp, _) = Temp::create(dir).context("creating a temporary file")?;
    let file = temp.file.as_mut().context("the temporary file")?;
    file.write_all(&body)?;
    file.write_all(&(body.len() as u64).to_le_bytes())?;
    file.write_all(&checksum(&body))?;
    file.write_all(MAGIC)?;
    file.sync_all()?;
    // The stamp of the file being replaced describes another inode; remove
    // it all the same.
    let _ = std::fs::remove_file(stamp_path(path));
    temp.commit(&[], path)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The smallest component: a header and nothing else.
    const EMPTY: &[u8] = b"\0asm\x0d\0\x01\0";

    fn empty_hash() -> u128 {
        xxhash_rust::xxh3::xxh3_128(EMPTY)
    }

    #[test]
    fn a_trailer_must_match_its_body() {
        let body = b"compiled code".to_vec();
        let mut file = body.clone();
        file.extend_from_slice(&(body.len() as u64).to_le_bytes());
        file.extend_from_slice(&checksum(&body));
        file.extend_from_slice(MAGIC);
        assert_eq!(verified(&file), Some(body.as_slice()));

        let mut flipped = file.clone();
        flipped[3] ^= 1;
        assert_eq!(verified(&flipped), None);
        assert_eq!(verified(&file[1..]), None);
        assert_eq!(verified(&file[..file.len() - 1]), None);
        assert_eq!(verified(b"short"), None);
    }

    #[test]
    fn the_build_script_hashed_the_embedded_component() {
        assert_eq!(
            COMPONENT_HASH,
            xxhash_rust::xxh3::xxh3_128(crate::COMPONENT)
        );
    }

    #[test]
    fn a_stamp_must_be_whole() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, b"x").unwrap();
        let meta = std::fs::metadata(&file).unwrap();
        let stamp = stamp_of(&meta, &[7; TRAILER]);
        assert_eq!(stamp.len(), STAMP_LEN);
        let (recorded, sum) = stamp_fields(&stamp).unwrap();
        assert_eq!(Some(recorded), identity(&meta));
        assert_eq!(sum, [7; 16]);
        for at in [0, 9, STAMP_LEN - 17, STAMP_LEN - 1] {
            let mut flipped = stamp.clone();
            flipped[at] ^= 1;
            assert_eq!(stamp_fields(&flipped), None, "byte {at}");
        }
        assert_eq!(stamp_fields(&stamp[1..]), None);
        assert_eq!(stamp_fields(&stamp[..STAMP_LEN - 1]), None);
    }

    /// Checks the file until a full check stamps it (once its last change
    /// is older than a check), then returns how the next start checked it.
    fn stamped(engine: &Engine, path: &Path) -> Check {
        for _ in 0..1_000 {
            let (_, check) = load(engine, path).expect("the file loads");
            if check == Check::Stamp {
                return check;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        panic!("the file was never stamped");
    }

    #[cfg(unix)]
    #[test]
    fn a_stamped_file_is_loaded_without_reading_it_whole_until_it_changes() {
        let engine = Engine::default();
        let dir = tempfile::tempdir().unwrap();
        let loaded = load_or_compile(&engine, EMPTY, empty_hash(), Some(dir.path())).unwrap();
        assert_eq!(loaded.origin, Origin::Compiled);
        let path = loaded.path.unwrap();
        assert!(
            !stamp_path(&path).exists(),
            "a file just written is not stamped"
        );
        assert_eq!(stamped(&engine, &path), Check::Stamp);
        assert_eq!(load(&engine, &path).unwrap().1, Check::Stamp);

        // A write in place, even of the same bytes, changes the file's
        // status-change time: the next start reads it whole, then stamps
        // it again.
        let good = std::fs::read(&path).unwrap();
        let mut file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        file.write_all(&good[..1]).unwrap();
        drop(file);
        assert_eq!(load(&engine, &path).unwrap().1, Check::Whole);
        assert_eq!(stamped(&engine, &path), Check::Stamp);

        // Another file's stamp names another inode.
        let other = dir.path().join("other.cwasm");
        std::fs::copy(&path, &other).unwrap();
        assert_eq!(stamped(&engine, &other), Check::Stamp);
        std::fs::copy(stamp_path(&other), stamp_path(&path)).unwrap();
        assert_eq!(load(&engine, &path).unwrap().1, Check::Whole);

        // A stamp is refused when the trailer does not hold its checksum.
        assert_eq!(stamped(&engine, &path), Check::Stamp);
        let mut stamp = std::fs::read(stamp_path(&path)).unwrap();
        stamp[8 + 7 * 8] ^= 1;
        let content = stamp.len() - 16;
        let own = checksum(&stamp[..content]);
        stamp[content..].copy_from_slice(&own);
        std::fs::write(stamp_path(&path), &stamp).unwrap();
        assert_eq!(load(&engine, &path).unwrap().1, Check::Whole);
    }

    #[test]
    fn a_damaged_file_fails_the_full_check_whatever_its_stamp() {
        let engine = Engine::default();
        let dir = tempfile::tempdir().unwrap();
        let path = load_or_compile(&engine, EMPTY, empty_hash(), Some(dir.path()))
            .unwrap()
            .path
            .unwrap();
        stamped(&engine, &path);
        let mut bytes = std::fs::read(&path).unwrap();
        let middle = bytes.len() / 2;
        bytes[middle] ^= 1;
        let mut file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        file.write_all(&bytes).unwrap();
        drop(file);
        assert!(load(&engine, &path).is_none());
        let again = load_or_compile(&engine, EMPTY, empty_hash(), Some(dir.path())).unwrap();
        assert_eq!(again.origin, Origin::Compiled);
        assert_eq!(load(&engine, &path).unwrap().1, Check::Whole);
    }
}
