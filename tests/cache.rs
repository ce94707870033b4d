//! The compiled engine kept on disk: the second start loads it instead of
//! compiling, a damaged or foreign file is never used and is replaced, a
//! stamped file changed in any way since its stamp is read whole again, and
//! the CLI keeps its copy where it is told to.

mod support;

use engram::io::WriteResult;
use engram::types::RecordType;
use engram::{Config, Engram, MemoryAudit, MemoryBackend, Mode, Origin};
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use support::*;

fn cached(dir: &Path) -> Config {
    Config {
        cache_dir: Some(dir.to_owned()),
        ..Config::default()
    }
}

/// Opens a domain and writes and reads a record: the engine works.
fn works(engram: &Engram) {
    let mut domain = engram
        .open(
            "alice",
            Mode::Online,
            Arc::new(MemoryBackend::new()),
            Arc::new(MemoryAudit::new()),
        )
        .expect("the domain opens");
    let answer = domain
        .write(&request("alice", "w-1", state(1, "mission.current")))
        .expect("the call succeeds");
    let WriteResult::Accepted(id) = answer else {
        panic!("the write was rejected")
    };
    let found = records(&mut domain, RecordType::State, by_id(&id));
    assert_eq!(ids(&found), vec![id]);
}

fn cache_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn the_second_engine_loads_the_compiled_component_from_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let first = Engram::with_config(cached(dir.path())).unwrap();
    assert_eq!(first.origin(), Origin::Compiled);
    let file = first.cache_file().expect("a cache file").to_owned();
    assert!(file.exists(), "the compiled component was written");
    assert_eq!(
        cache_files(dir.path()).len(),
        1,
        "one file, no temporary left"
    );

    let second = Engram::with_config(cached(dir.path())).unwrap();
    assert_eq!(second.origin(), Origin::Cache);
    assert_eq!(second.cache_file(), Some(file.as_path()));
    works(&second);
    works(&first);
}

#[test]
fn without_a_cache_folder_the_component_is_compiled() {
    let engram = Engram::new().unwrap();
    assert_eq!(engram.origin(), Origin::Compiled);
    assert_eq!(engram.cache_file(), None);
}

#[test]
fn a_damaged_cache_file_is_ignored_and_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let file = Engram::with_config(cached(dir.path()))
        .unwrap()
        .cache_file()
        .unwrap()
        .to_owned();
    let good = std::fs::read(&file).unwrap();

    let mut flipped = good.clone();
    flipped[good.len() / 2] ^= 0x40; // a flipped bit in the compiled code
    let damages: [(&str, Vec<u8>); 4] = [
        ("a flipped bit", flipped),
        ("a truncated file", good[..good.len() / 3].to_vec()),
        ("an empty file", Vec::new()),
        ("garbage", b"not a compiled component".repeat(100)),
    ];
    for (damage, bytes) in damages {
        std::fs::write(&file, bytes).unwrap();
        let engram = Engram::with_config(cached(dir.path())).unwrap();
        assert_eq!(engram.origin(), Origin::Compiled, "{damage}");
        works(&engram);
        assert_eq!(std::fs::read(&file).unwrap(), good, "{damage}: replaced");
        let again = Engram::with_config(cached(dir.path())).unwrap();
        assert_eq!(again.origin(), Origin::Cache, "{damage}");
    }
}

#[test]
fn a_file_compiled_with_other_settings_is_never_used() {
    let dir = tempfile::tempdir().unwrap();
    let small = Config {
        max_memory_bytes: 16 << 20,
        ..cached(dir.path())
    };
    let other = Engram::with_config(small.clone()).unwrap();
    let mine = Engram::with_config(cached(dir.path())).unwrap();
    // Another memory layout is another compilation, under another name.
    assert_eq!(mine.origin(), Origin::Compiled);
    assert_ne!(other.cache_file(), mine.cache_file());

    // Even under this engine's name, wasmtime refuses the other's code.
    let foreign = std::fs::read(other.cache_file().unwrap()).unwrap();
    std::fs::write(mine.cache_file().unwrap(), &foreign).unwrap();
    let engram = Engram::with_config(cached(dir.path())).unwrap();
    assert_eq!(engram.origin(), Origin::Compiled);
    works(&engram);
    assert_eq!(
        Engram::with_config(small).unwrap().origin(),
        Origin::Cache,
        "the other engine still finds its own"
    );
}

/// Starts engines with `config` until one stamps their cache file (a start
/// that reads the file whole stamps it once its last change is older than
/// that check); returns the cache file and its stamp.
fn stamped(config: &Config) -> (PathBuf, PathBuf) {
    for _ in 0..1_000 {
        let engram = Engram::with_config(config.clone()).unwrap();
        assert_eq!(engram.origin(), Origin::Cache);
        let file = engram.cache_file().unwrap().to_owned();
        let stamp = file.with_extension("stamp");
        if stamp.exists() {
            return (file, stamp);
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    panic!("no start stamped the cache file");
}

/// Flips one bit in the middle of `file`, in place: the same inode, the
/// same length.
fn flip_in_place(file: &Path) {
    let before = std::fs::metadata(file).unwrap();
    let mut bytes = std::fs::read(file).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x40;
    let mut open = std::fs::OpenOptions::new().write(true).open(file).unwrap();
    open.seek(SeekFrom::Start(middle as u64)).unwrap();
    open.write_all(&bytes[middle..=middle]).unwrap();
    drop(open);
    let after = std::fs::metadata(file).unwrap();
    assert_eq!(after.len(), before.len());
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        assert_eq!(after.ino(), before.ino());
    }
}

#[test]
fn a_stamped_file_changed_in_place_is_read_whole_and_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let first = Engram::with_config(cached(dir.path())).unwrap();
    assert_eq!(first.origin(), Origin::Compiled);
    let (file, stamp) = stamped(&cached(dir.path()));
    assert_eq!(
        cache_files(dir.path()).len(),
        2,
        "the file and its stamp, no temporary left"
    );
    let good = std::fs::read(&file).unwrap();

    flip_in_place(&file);
    let engram = Engram::with_config(cached(dir.path())).unwrap();
    assert_eq!(engram.origin(), Origin::Compiled, "the change was seen");
    works(&engram);
    assert_eq!(std::fs::read(&file).unwrap(), good, "replaced");
    assert!(!stamp.exists(), "the replaced file's stamp is gone");

    // Truncated in place: cut in the middle, or by its last byte.
    for keep in [good.len() / 2, good.len() - 1] {
        let (file, _) = stamped(&cached(dir.path()));
        std::fs::OpenOptions::new()
            .write(true)
            .open(&file)
            .unwrap()
            .set_len(keep as u64)
            .unwrap();
        let engram = Engram::with_config(cached(dir.path())).unwrap();
        assert_eq!(engram.origin(), Origin::Compiled, "truncated to {keep}");
        works(&engram);
        assert_eq!(std::fs::read(&file).unwrap(), good, "{keep}: replaced");
    }
}

#[test]
fn a_stamp_from_another_file_is_not_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let small = Config {
        max_memory_bytes: 16 << 20,
        ..cached(dir.path())
    };
    Engram::with_config(small.clone()).unwrap();
    Engram::with_config(cached(dir.path())).unwrap();
    let (_, other_stamp) = stamped(&small);
    let (file, stamp) = stamped(&cached(dir.path()));
    assert_ne!(other_stamp, stamp);
    let good = std::fs::read(&file).unwrap();

    // The other file's stamp, over this file's, with this file changed.
    flip_in_place(&file);
    std::fs::copy(&other_stamp, &stamp).unwrap();
    let engram = Engram::with_config(cached(dir.path())).unwrap();
    assert_eq!(engram.origin(), Origin::Compiled, "another file's stamp");
    assert_eq!(std::fs::read(&file).unwrap(), good);

    // This file's stamp, kept while another file of the same length is
    // renamed over it.
    let (file, stamp) = stamped(&cached(dir.path()));
    let kept = std::fs::read(&stamp).unwrap();
    let mut damaged = good.clone();
    let middle = damaged.len() / 2;
    damaged[middle] ^= 0x40;
    let replacement = dir.path().join("replacement");
    std::fs::write(&replacement, &damaged).unwrap();
    std::fs::rename(&replacement, &file).unwrap();
    assert_eq!(
        std::fs::read(&stamp).unwrap(),
        kept,
        "the stamp is untouched"
    );
    let engram = Engram::with_config(cached(dir.path())).unwrap();
    assert_eq!(engram.origin(), Origin::Compiled, "a file renamed over it");
    works(&engram);
    assert_eq!(std::fs::read(&file).unwrap(), good);
}

#[test]
fn an_unwritable_cache_folder_only_costs_a_compilation() {
    let dir = tempfile::tempdir().unwrap();
    let blocked = dir.path().join("file-not-folder");
    std::fs::write(&blocked, b"").unwrap();
    let engram = Engram::with_config(cached(&blocked)).unwrap();
    assert_eq!(engram.origin(), Origin::Compiled);
    works(&engram);
}

#[test]
fn the_cli_keeps_the_compiled_engine_in_its_cache_folder() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("engram.db");
    let cache = dir.path().join("cache");
    engram::SqliteBackend::open(&store).unwrap();

    let run = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_engram"))
            .env_remove("ENGRAM_STORE")
            .env("ENGRAM_CACHE_DIR", &cache)
            .arg("--store")
            .arg(&store)
            .args(extra)
            .args(["history", "user.diet", "--agent", "alice"])
            .output()
            .expect("the CLI runs")
    };
    let out = run(&["--no-cache"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(cache_files(&cache), Vec::<String>::new());

    let out = run(&[]);
    assert!(out.status.success(), "{out:?}");
    let files = cache_files(&cache);
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(files[0].ends_with(".cwasm"));
    let written = std::fs::metadata(cache.join(&files[0])).unwrap();

    // A later run reads the file whole and stamps it; the runs after it
    // check the stamp.
    let stamp = cache.join(&files[0]).with_extension("stamp");
    for _ in 0..200 {
        if stamp.exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
        let out = run(&[]);
        assert!(out.status.success(), "{out:?}");
    }
    assert!(stamp.exists(), "no run stamped the cache file");
    let out = run(&[]);
    assert!(out.status.success(), "{out:?}");

    // A damaged copy is replaced by the next run, which still answers.
    std::fs::write(cache.join(&files[0]), b"damaged").unwrap();
    let out = run(&[]);
    assert!(out.status.success(), "{out:?}");
    let rewritten = std::fs::metadata(cache.join(&files[0])).unwrap();
    assert_eq!(rewritten.len(), written.len());
    assert_eq!(cache_files(&cache), files);
}
