//! Opening a SQLite store: many processes creating one file at once, and a
//! disk that fails while a new store switches to WAL. Real `engram`
//! processes on real files; faults injected with strace.

use std::path::Path;
use std::process::{Command, Output, Stdio};

const CACHE_DIR: &str = concat!(env!("CARGO_TARGET_TMPDIR"), "/engram-cache");

fn request(id: &str) -> String {
    format!(
        r#"{{"request_id":"{id}","source":{{"agent_id":"alice","component":"COGNITION","actor":"USER"}},"record":{{"record_type":"STATE","timestamp":5,"payload":{{"subject":"mission.current","properties":{{}}}}}}}}"#
    )
}

fn engram(prefix: &[&str], store: &Path, args: &[&str], dir: &Path) -> Command {
    let mut command = match prefix.split_first() {
        Some((program, rest)) => {
            let mut c = Command::new(program);
            c.args(rest).arg(env!("CARGO_BIN_EXE_engram"));
            c
        }
        None => Command::new(env!("CARGO_BIN_EXE_engram")),
    };
    command
        .current_dir(dir)
        .env("ENGRAM_CACHE_DIR", CACHE_DIR)
        .env_remove("ENGRAM_STORE")
        .arg("--store")
        .arg(store)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// The journal mode the file's header records: 2 and 2 for WAL.
fn header_says_wal(store: &Path) -> bool {
    let bytes = std::fs::read(store).unwrap_or_default();
    bytes.len() >= 20 && bytes[18..20] == [2, 2]
}

#[test]
fn eight_processes_creating_one_store_at_once_all_write() {
    // Rounds of 8 `engram write` started together on a file that does not
    // exist yet: every one must be ACCEPTED. ENGRAM_OPEN_ROUNDS for more.
    let rounds: usize = std::env::var("ENGRAM_OPEN_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    let dir = tempfile::tempdir().unwrap();
    for i in 0..8 {
        std::fs::write(
            dir.path().join(format!("r{i}.json")),
            request(&format!("w{i}")),
        )
        .unwrap();
    }
    // Compile the engine into the cache first, so the processes race on
    // the store, not on the cache.
    let warm = dir.path().join("warm.db");
    let out = engram(
        &[],
        &warm,
        &["write", "--agent", "alice", "r0.json"],
        dir.path(),
    )
    .output()
    .unwrap();
    assert!(out.status.success());
    for round in 0..rounds {
        let store = dir.path().join(format!("round{round}.db"));
        let children: Vec<_> = (0..8)
            .map(|i| {
                let file = format!("r{i}.json");
                engram(
                    &[],
                    &store,
                    &["write", "--agent", "alice", &file],
                    dir.path(),
                )
                .spawn()
                .unwrap()
            })
            .collect();
        for child in children {
            let out = child.wait_with_output().unwrap();
            assert!(
                out.status.success() && String::from_utf8_lossy(&out.stdout).contains("ACCEPTED"),
                "round {round}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

/// strace, which injects the faults; a machine without it fails these
/// cases rather than skipping them.
fn strace() -> &'static str {
    let found = Command::new("strace")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        found,
        "strace is not on the PATH: these cases inject I/O errors with it (apt-get install strace)"
    );
    "strace"
}

fn one_line_naming(out: &Output, file: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(stderr.contains(file), "{stderr}");
    assert!(!stderr.contains("Error code"), "{stderr}");
}

#[test]
fn a_failed_fsync_while_a_new_store_switches_to_wal_is_never_silent() {
    // Every fsync of a first write into a new file fails in turn: the write
    // either succeeds with the file really in WAL mode, or the command
    // fails with one line naming the file and what failed.
    let strace = strace();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("r.json"), request("w")).unwrap();
    let mut failures = 0;
    for when in 1..=12 {
        let store = dir.path().join(format!("fsync{when}.db"));
        let inject = format!("inject=fsync:error=EIO:when={when}");
        let out = engram(
            &[strace, "-f", "-o", "/dev/null", "-e", &inject],
            &store,
            &["write", "--agent", "alice", "r.json"],
            dir.path(),
        )
        .output()
        .unwrap();
        match out.status.code() {
            Some(0) => assert!(
                header_says_wal(&store),
                "fsync {when}: ACCEPTED without WAL"
            ),
            // The commit's own fsync failed: the write is answered REJECTED.
            Some(1) => {
                failures += 1;
                assert!(String::from_utf8_lossy(&out.stdout).contains("REJECTED"));
            }
            _ => {
                failures += 1;
                one_line_naming(&out, &format!("fsync{when}.db"));
            }
        }
    }
    assert!(
        failures > 0,
        "some injected fsync error must have been seen"
    );
}

#[test]
fn a_lock_that_keeps_failing_ends_the_command_with_one_line() {
    // Every lock call of a read fails from the twelfth on (an I/O error on
    // the file's locks): SQLite gives up after its own bounded retry, and
    // the command fails once, naming the file and the locking, instead of
    // retrying statement after statement.
    let strace = strace();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("r.json"), request("w")).unwrap();
    let store = dir.path().join("locks.db");
    let out = engram(
        &[],
        &store,
        &["write", "--agent", "alice", "r.json"],
        dir.path(),
    )
    .output()
    .unwrap();
    assert!(out.status.success());
    let read = dir.path().join("read.json");
    std::fs::write(
        &read,
        r#"{"record_type":"STATE","selector":{"Latest":{"limit":1}},"request_id":"q"}"#,
    )
    .unwrap();
    let out = engram(
        &[
            strace,
            "-f",
            "-o",
            "/dev/null",
            "-e",
            "trace=fcntl",
            "-e",
            "inject=fcntl:error=EIO:when=12+",
        ],
        &store,
        &["read", "--agent", "alice", "read.json"],
        dir.path(),
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(4));
    one_line_naming(&out, "locks.db");
    assert!(String::from_utf8_lossy(&out.stderr).contains("lock"));
}

#[test]
fn a_version_1_store_is_upgraded_and_a_newer_one_refused() {
    // A store of schema version 1 (no `engram_trail`) with an entry
    // pending in its trail file: opening it upgrades it, and the entry is
    // moved into the table; a newer version is refused with one line.
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("old.db");
    let written = engram(&[], &store, &["write", "--agent", "alice"], dir.path())
        .stdin(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child
                .stdin
                .take()
                .unwrap()
                .write_all(request("w").as_bytes())?;
            child.wait_with_output()
        })
        .unwrap();
    assert!(written.status.success(), "{written:?}");
    {
        let db = rusqlite::Connection::open(&store).unwrap();
        db.execute_batch("DROP TABLE engram_trail; PRAGMA user_version = 1;")
            .unwrap();
    }
    let mut trail = store.as_os_str().to_owned();
    trail.push("-trail");
    std::fs::write(
        &trail,
        "{\"at\":7,\"agent_id\":\"alice\",\"request_id\":\"old-read\",\"operation\":\"READ\",\"record_type\":\"STATE\",\"outcome\":\"RETURNED\",\"count\":0}\n",
    )
    .unwrap();
    let audit = engram(&[], &store, &["audit", "--agent", "alice"], dir.path())
        .output()
        .unwrap();
    assert!(audit.status.success(), "{audit:?}");
    let lines = String::from_utf8(audit.stdout).unwrap();
    let ids: Vec<&str> = lines
        .lines()
        .map(|l| {
            l.split("\"request_id\":\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap()
        })
        .collect();
    assert_eq!(ids, ["w", "old-read"]);
    assert_eq!(std::fs::metadata(&trail).unwrap().len(), 0);
    let version: i32 = rusqlite::Connection::open(&store)
        .unwrap()
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, 2);

    rusqlite::Connection::open(&store)
        .unwrap()
        .execute_batch("PRAGMA user_version = 3;")
        .unwrap();
    let refused = engram(&[], &store, &["audit", "--agent", "alice"], dir.path())
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let message = String::from_utf8(refused.stderr).unwrap();
    assert!(
        message.contains("schema version 3") && message.lines().count() == 1,
        "{message}"
    );
}
