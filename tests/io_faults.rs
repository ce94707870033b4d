//! The `engram` command under I/O faults and races: many processes creating
//! one store at once, a disk that fails while a new store switches to WAL,
//! reads, locks and unlocks that fail, and answers that cannot be printed.
//! Real `engram` processes on real files; faults injected with strace.

mod support;

use engram::backend::Pair;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use support::file_pairs;

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

/// A store named `name` in `dir` holding one write (`r.json`, beside it).
fn written(dir: &Path, name: &str) -> std::path::PathBuf {
    std::fs::write(dir.join("r.json"), request("w")).unwrap();
    let store = dir.join(name);
    let out = engram(&[], &store, &["write", "--agent", "alice", "r.json"], dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    store
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
    // Every fsync (SQLite syncs with fdatasync, as its Linux builds do:
    // `.cargo/config.toml`) of a first write into a new file fails in
    // turn: the write either succeeds with the file really in WAL mode, or
    // the command fails with one line naming the file and what failed.
    let strace = strace();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("r.json"), request("w")).unwrap();
    let mut failures = 0;
    for when in 1..=12 {
        let store = dir.path().join(format!("fsync{when}.db"));
        let inject = format!("inject=fsync,fdatasync:error=EIO:when={when}");
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
    let store = written(dir.path(), "locks.db");
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
    // A store of schema version 1 (no `engram_trail`, no `caller` in the
    // trail) with an entry pending in its trail file: opening it upgrades
    // it through every later version, the entry is moved into the table
    // and the entries kept name no caller; a newer version is refused with
    // one line.
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
        db.execute_batch(
            "ALTER TABLE engram_audit DROP COLUMN caller; DROP TABLE engram_trail; PRAGMA user_version = 1;",
        )
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
    assert!(!lines.contains("caller"), "{lines}");
    assert_eq!(std::fs::metadata(&trail).unwrap().len(), 0);
    let version: i32 = rusqlite::Connection::open(&store)
        .unwrap()
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, 4);

    rusqlite::Connection::open(&store)
        .unwrap()
        .execute_batch("PRAGMA user_version = 5;")
        .unwrap();
    let refused = engram(&[], &store, &["audit", "--agent", "alice"], dir.path())
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let message = String::from_utf8(refused.stderr).unwrap();
    assert!(
        message.contains("schema version 5") && message.lines().count() == 1,
        "{message}"
    );
}

/// The request ids of `engram audit`'s lines, in order.
fn audited(out: &Output) -> Vec<String> {
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|line| {
            let entry: serde_json::Value = serde_json::from_str(line).unwrap();
            entry["request_id"].as_str().unwrap().to_owned()
        })
        .collect()
}

#[test]
fn s_file_s_audit_a_version_3_store_written_by_the_build_before_opens_holding_everything() {
    // proves S-FILE, S-AUDIT: tests/fixtures/store-v3.db, written by the
    // build before schema version 4 (tests/fixtures/store-v3.sh): two
    // agents' records and audit entries in the file, and four read entries
    // pending in the trail file beside it. Opened by `engram`, it is of
    // version 4 (the audit rows keyed by agent, no index beside them): the
    // reads answer what that build answered, every key-value pair is as it
    // was, every audit row keeps its `seq`, the pending entries and the new
    // reads' follow them, an agent's trail is its entries in the order they
    // were made, and a new write's entry comes last.
    let dir = tempfile::tempdir().unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
    let store = dir.path().join("v3.db");
    std::fs::copy(fixtures.join("store-v3.db"), &store).unwrap();
    let trail = dir.path().join("v3.db-trail");
    std::fs::copy(fixtures.join("store-v3.db-trail"), &trail).unwrap();
    type Row = (String, i64, String);
    let held = |order: &str| -> (i32, Vec<Pair>, Vec<Row>, i64) {
        let db = rusqlite::Connection::open(&store).unwrap();
        let pairs = file_pairs(&store);
        let rows = db
            .prepare(&format!(
                "SELECT agent_id, seq, request_id FROM engram_audit ORDER BY {order}"
            ))
            .unwrap()
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let version = db
            .query_row("PRAGMA user_version", [], |row| row.get(0))
            .unwrap();
        let indexes = db
            .query_row(
                "SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND name = 'engram_audit_agent'",
                [],
                |row| row.get(0),
            )
            .unwrap();
        (version, pairs, rows, indexes)
    };
    let (version, pairs, rows, indexes) = held("seq");
    assert_eq!((version, indexes), (3, 1));
    let pending: Vec<String> = std::fs::read_to_string(&trail)
        .unwrap()
        .lines()
        .map(|line| {
            let entry: serde_json::Value = serde_json::from_str(line).unwrap();
            entry["request_id"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(pending, ["q-1", "q-2", "q-3", "q-4"]);

    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../samples/reads.jsonl");
    let samples = samples.to_str().unwrap();
    let read = engram(
        &[],
        &store,
        &["read", "--agent", "alice", "--batch", samples],
        dir.path(),
    )
    .output()
    .unwrap();
    assert!(read.status.success(), "{read:?}");
    assert_eq!(
        String::from_utf8(read.stdout).unwrap(),
        std::fs::read_to_string(fixtures.join("store-v3.reads.jsonl")).unwrap(),
        "the reads answer what the build before answered"
    );
    let everyone = audited(
        &engram(&[], &store, &["audit", "--limit", "1000"], dir.path())
            .output()
            .unwrap(),
    );
    let (version, pairs_now, rows_now, indexes) = held("agent_id, seq");
    assert_eq!((version, indexes), (4, 0));
    assert!(pairs_now == pairs, "the key-value pairs changed");
    for row in &rows {
        assert!(rows_now.contains(row), "{row:?} is gone or has another seq");
    }
    let mut expected: Vec<String> = rows.iter().map(|(_, _, id)| id.clone()).collect();
    expected.extend(pending.iter().cloned());
    expected.extend(pending.iter().cloned());
    assert_eq!(everyone, expected, "every agent's trail, in the order made");
    assert_eq!(rows_now.len(), expected.len());

    let write = dir.path().join("bob.json");
    std::fs::write(
        &write,
        r#"{"request_id":"bob-4","source":{"agent_id":"bob","component":"COGNITION","actor":"USER"},"record":{"record_type":"STATE","timestamp":4000,"payload":{"subject":"mission.current","properties":{}}}}"#,
    )
    .unwrap();
    let written = engram(
        &[],
        &store,
        &["write", "--agent", "bob", write.to_str().unwrap()],
        dir.path(),
    )
    .output()
    .unwrap();
    assert!(written.status.success(), "{written:?}");
    let bob = audited(
        &engram(&[], &store, &["audit", "--agent", "bob"], dir.path())
            .output()
            .unwrap(),
    );
    let mut expected: Vec<String> = rows
        .iter()
        .filter(|(agent, _, _)| agent == "bob")
        .map(|(_, _, id)| id.clone())
        .collect();
    expected.push("bob-4".into());
    assert_eq!(bob, expected);
}

/// A STATE write of agent `io`, `request_id` `io-{n}`.
fn io_write(n: usize) -> String {
    format!(
        r#"{{"request_id":"io-{n}","source":{{"agent_id":"io","component":"COGNITION","actor":"USER"}},"record":{{"record_type":"STATE","timestamp":{n},"payload":{{"subject":"s","properties":{{}}}}}}}}"#
    )
}

/// A store holding the sample memories, and ten writes of agent `io`
/// (`ten.jsonl`) beside it.
fn store_with_samples(dir: &Path, name: &str) -> std::path::PathBuf {
    let store = dir.join(name);
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../samples/memories.jsonl");
    let out = engram(
        &[],
        &store,
        &[
            "write",
            "--agent",
            "alice",
            "--batch",
            samples.to_str().unwrap(),
        ],
        dir,
    )
    .output()
    .unwrap();
    assert!(out.status.success(), "{out:?}");
    let ten: Vec<String> = (1..=10).map(io_write).collect();
    std::fs::write(dir.join("ten.jsonl"), ten.join("\n") + "\n").unwrap();
    store
}

/// How many STATE records agent `io` holds, and its WRITE audit entries'
/// outcomes.
fn io_states_and_outcomes(store: &Path, dir: &Path) -> (usize, Vec<String>) {
    std::fs::write(
        dir.join("latest.json"),
        r#"{"record_type":"STATE","selector":{"Latest":{"limit":50}},"request_id":"check"}"#,
    )
    .unwrap();
    let read = engram(&[], store, &["read", "--agent", "io", "latest.json"], dir)
        .output()
        .unwrap();
    assert!(read.status.success(), "{read:?}");
    let answer: serde_json::Value = serde_json::from_slice(&read.stdout).unwrap();
    let states = answer["records"].as_array().map_or(0, Vec::len);
    let audit = engram(&[], store, &["audit", "--agent", "io"], dir)
        .output()
        .unwrap();
    let outcomes = String::from_utf8_lossy(&audit.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["operation"] == "WRITE")
        .map(|e| e["outcome"].as_str().unwrap_or_default().to_owned())
        .collect();
    (states, outcomes)
}

#[test]
fn io_w8_one_failed_unlock_of_the_shm_file_costs_one_write_not_every_later_one() {
    // A batch of ten writes on a store holding the sample memories; one
    // `fcntl` unlock of a read mark of the `-shm` file fails with EIO (the
    // unlock after a writer took that mark alone). SQLite cannot tell: its
    // own record of the file's locks is wrong from then on, and every
    // later call of the connection waited ~10 s and was REJECTED. The
    // connection is now opened again after the call that failed: at most
    // that one write is REJECTED (and stored nowhere), the others are
    // ACCEPTED and stored, and every one is audited.
    let strace = strace();
    let dir = tempfile::tempdir().unwrap();
    // A dry run on a twin store finds where the unlock comes.
    let twin = store_with_samples(dir.path(), "twin.db");
    let trace = dir.path().join("fcntl.txt");
    let out = engram(
        &[
            strace,
            "-f",
            "-o",
            trace.to_str().unwrap(),
            "-e",
            "trace=fcntl",
        ],
        &twin,
        &["write", "--agent", "io", "--batch", "ten.jsonl"],
        dir.path(),
    )
    .output()
    .unwrap();
    assert!(out.status.success(), "{out:?}");
    let calls: Vec<String> = std::fs::read_to_string(&trace)
        .unwrap()
        .lines()
        .filter(|l| l.contains("fcntl("))
        .map(str::to_owned)
        .collect();
    // A read mark's byte is 123 + i. A writer that starts the WAL afresh
    // lets go of mark 0 (byte 123), takes mark 1 alone and lets it go: that
    // last unlock is the one that fails.
    let lock = |call: &str, kind: &str, at: u32| {
        call.contains(&format!(
            "l_type={kind}, l_whence=SEEK_SET, l_start={at}, l_len=1"
        ))
    };
    let when = calls
        .windows(3)
        .position(|w| {
            lock(&w[0], "F_UNLCK", 123)
                && lock(&w[1], "F_WRLCK", 124)
                && lock(&w[2], "F_UNLCK", 124)
        })
        .map(|i| i + 3)
        .expect("a writer takes read mark 1 alone, then lets it go");
    let store = store_with_samples(dir.path(), "t.db");
    let inject = format!("inject=fcntl:error=EIO:when={when}");
    let out = engram(
        &[
            strace,
            "-f",
            "-o",
            "/dev/null",
            "-e",
            "trace=fcntl",
            "-e",
            &inject,
        ],
        &store,
        &["write", "--agent", "io", "--batch", "ten.jsonl"],
        dir.path(),
    )
    .output()
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let rejected = stdout.lines().filter(|l| l.contains("REJECTED")).count();
    let accepted = stdout.lines().filter(|l| l.contains("ACCEPTED")).count();
    assert_eq!(
        (accepted + rejected, out.status.code()),
        (10, Some(if rejected > 0 { 1 } else { 0 })),
        "{out:?}"
    );
    assert!(
        rejected <= 1,
        "{rejected} writes REJECTED after one failed unlock:\n{stdout}"
    );
    let (states, outcomes) = io_states_and_outcomes(&store, dir.path());
    assert_eq!(
        states, accepted,
        "ACCEPTED writes stored, REJECTED ones not"
    );
    assert_eq!(outcomes.len(), 10, "every write audited: {outcomes:?}");
    assert_eq!(
        outcomes.iter().filter(|o| *o == "REJECTED").count(),
        rejected
    );
}

#[test]
fn an_io_error_while_a_new_store_is_read_is_named_as_one_never_as_damage() {
    // Each `pread` of a first write into a new file fails in turn, once or
    // from then on. A read that fails once while the store opens is tried
    // again: the write is ACCEPTED. Reads that keep failing end the
    // command with one line that names a failed read or an I/O error, or,
    // once the store is open, REJECT the write with the reason audited;
    // never is the file called damaged: a user told a healthy store is
    // damaged may delete it.
    let strace = strace();
    let dir = tempfile::tempdir().unwrap();
    // The engine compiled into the cache first.
    written(dir.path(), "warm.db");
    let mut named = 0;
    for when in (3..=9).flat_map(|n| [format!("{n}"), format!("{n}+")]) {
        let store = dir
            .path()
            .join(format!("new{}.db", when.replace('+', "on")));
        let inject = format!("inject=pread64:error=EIO:when={when}");
        let out = engram(
            &[
                strace,
                "-f",
                "-o",
                "/dev/null",
                "-e",
                "trace=pread64",
                "-e",
                &inject,
            ],
            &store,
            &["write", "--agent", "alice", "r.json"],
            dir.path(),
        )
        .output()
        .unwrap();
        let name = format!("new{}.db", when.replace('+', "on"));
        let stderr = String::from_utf8_lossy(&out.stderr);
        // A verdict of damage; "inconsistent, or a read of it failed" is
        // what SQLite's own answer allows.
        let damage = |text: &str| text.contains("damaged");
        match out.status.code() {
            Some(0) => {
                // A read that failed once, tried again.
                assert!(!when.ends_with('+'), "pread {when}: {out:?}");
                assert!(String::from_utf8_lossy(&out.stdout).contains("ACCEPTED"));
            }
            Some(1) => {
                // Opened before the reads began to fail: the write is
                // REJECTED, and its audit entry says why.
                named += 1;
                assert!(String::from_utf8_lossy(&out.stdout).contains("REJECTED"));
                let audit = engram(&[], &store, &["audit", "--agent", "alice"], dir.path())
                    .output()
                    .unwrap();
                let trail = String::from_utf8_lossy(&audit.stdout);
                assert!(
                    trail.contains("REJECTED") && !damage(&trail),
                    "pread {when}: {trail}"
                );
            }
            _ => {
                named += 1;
                one_line_naming(&out, &name);
                assert!(
                    !damage(&stderr),
                    "pread {when}: an I/O error named as damage: {stderr}"
                );
                assert!(
                    stderr.contains("I/O error") || stderr.contains("read"),
                    "pread {when}: {stderr}"
                );
            }
        }
    }
    assert!(named > 0, "some injected read error must have been seen");
}

#[test]
fn b5_d1_a_cycle_whose_line_cannot_be_printed_stops_before_it_commits() {
    // Writing the cycle's stage lines to standard output fails at the
    // first, second or third line (the first `write` of the process is
    // the audit entry of the cycle's retrieval, appended to the trail): the cycle stops at once with
    // `writing the answer: …` and exit 4, as `write` and `read` do, and
    // commits nothing (B5-D1: nothing persists before the whole cycle has
    // finished).
    let strace = strace();
    let dir = tempfile::tempdir().unwrap();
    let plan = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../samples/plan.json");
    let plan = plan.to_str().unwrap();
    let cycle = [
        "cycle",
        plan,
        "--agent",
        "alice",
        "--message",
        "Where should I eat?",
        "--response",
        "Try the vegetarian place.",
    ];
    for when in 2..=4 {
        let store = dir.path().join(format!("cycle{when}.db"));
        let inject = format!("inject=write:error=EIO:when={when}");
        let out = engram(
            &[
                strace,
                "-f",
                "-o",
                "/dev/null",
                "-e",
                "trace=write",
                "-e",
                &inject,
            ],
            &store,
            &cycle,
            dir.path(),
        )
        .output()
        .unwrap();
        assert_eq!(out.status.code(), Some(4), "write {when}: {out:?}");
        one_line_naming(&out, "writing the answer");
        let printed = String::from_utf8_lossy(&out.stdout);
        assert!(!printed.contains("committed"), "write {when}: {printed}");
        std::fs::write(
            dir.path().join("events.json"),
            r#"{"record_type":"EVENT","selector":{"Latest":{"limit":5}},"request_id":"q"}"#,
        )
        .unwrap();
        let read = engram(
            &[],
            &store,
            &["read", "--agent", "alice", "events.json"],
            dir.path(),
        )
        .output()
        .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&read.stdout).trim(),
            r#"{"records":[]}"#,
            "write {when}: the cycle stored its memory"
        );
    }
}

/// The outcomes of the writes of `agent`'s trail in `store`, oldest first:
/// `(request_id, outcome, stored_id)`.
fn written_outcomes(store: &Path, agent: &str, dir: &Path) -> Vec<(String, String, String)> {
    let audit = engram(&[], store, &["audit", "--agent", agent], dir)
        .output()
        .unwrap();
    assert!(audit.status.success(), "{audit:?}");
    String::from_utf8(audit.stdout)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .filter(|entry| entry["operation"] == "WRITE")
        .map(|entry| {
            let field = |name: &str| entry[name].as_str().unwrap_or_default().to_owned();
            (field("request_id"), field("outcome"), field("stored_id"))
        })
        .collect()
}

/// `/dev/full`: every write to it fails with ENOSPC.
fn full() -> Stdio {
    Stdio::from(std::fs::File::create("/dev/full").expect("/dev/full"))
}

#[test]
fn an_unwritable_standard_error_never_turns_a_failure_into_a_panic() {
    // The error of a store that cannot be opened, said on a standard error
    // that cannot be written: the exit code is still the failure's (4), not
    // a panic's (101). So for a turn that committed and whose answer and
    // error both cannot be written: exit 4, the turn kept.
    let dir = tempfile::tempdir().unwrap();
    let reads = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../samples/reads.jsonl");
    let missing = Path::new("/nonexistent/x.db");
    let out = engram(
        &[],
        missing,
        &["read", "--agent", "a", "--batch", reads.to_str().unwrap()],
        dir.path(),
    )
    .stderr(full())
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(4), "{out:?}");

    let store = dir.path().join("turns.db");
    let remember = ["remember", "I am vegetarian.", "Noted.", "--agent", "a"];
    let out = engram(&[], &store, &remember, dir.path())
        .args(["--request-id", "turn-1"])
        .stdout(full())
        .stderr(full())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    // The first run committed: its write is in the trail before any retry.
    let first = written_outcomes(&store, "a", dir.path());
    assert_eq!(
        first
            .iter()
            .map(|(id, outcome, _)| (id.as_str(), outcome.as_str()))
            .collect::<Vec<_>>(),
        [("turn-1#persist", "ACCEPTED")],
        "{first:?}"
    );
    let again = engram(&[], &store, &remember, dir.path())
        .args(["--request-id", "turn-1"])
        .output()
        .unwrap();
    let answer: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(
        answer["committed"],
        serde_json::json!([first[0].2]),
        "{answer}"
    );
    let after = written_outcomes(&store, "a", dir.path());
    assert_eq!(after.len(), 2, "{after:?}");
    assert_eq!(
        after[1].1, "REPLAYED",
        "the retry stored nothing: {after:?}"
    );
}

#[test]
fn b5_d1_a_committed_turn_whose_answer_cannot_be_printed_says_so_and_names_its_request_id() {
    // `remember` and `cycle --batch` commit, then cannot print: the one
    // line says the request was committed and names its id, and a retry
    // with that id answers the same ids without storing anything twice.
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("turns.db");
    let remember = ["remember", "I am vegetarian.", "Noted.", "--agent", "a"];
    let out = engram(&[], &store, &remember, dir.path())
        .args(["--request-id", "turn-1"])
        .stdout(full())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    one_line_naming(&out, "turn-1");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("was committed"), "{stderr}");
    let kept = written_outcomes(&store, "a", dir.path());
    assert_eq!(kept.len(), 1, "committed before any retry: {kept:?}");
    assert_eq!(kept[0].1, "ACCEPTED", "{kept:?}");
    let again = engram(&[], &store, &remember, dir.path())
        .args(["--request-id", "turn-1"])
        .output()
        .unwrap();
    let first: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
    let ids = first["committed"].clone();
    assert_eq!(ids, serde_json::json!([kept[0].2]), "{first}");

    let plan = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../samples/plan.json");
    std::fs::write(
        dir.path().join("turns.jsonl"),
        r#"{"message":"Where should I eat?","response":"Try the vegetarian place.","request_id":"batch-1"}"#,
    )
    .unwrap();
    let batch = [
        "cycle",
        plan.to_str().unwrap(),
        "--agent",
        "a",
        "--batch",
        "turns.jsonl",
    ];
    let out = engram(&[], &store, &batch, dir.path())
        .stdout(full())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    one_line_naming(&out, "batch-1");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("was committed"), "{stderr}");
    let kept = written_outcomes(&store, "a", dir.path());
    let accepted = |entries: &[(String, String, String)]| {
        entries
            .iter()
            .filter(|(id, outcome, _)| id.starts_with("batch-1") && outcome == "ACCEPTED")
            .count()
    };
    assert_eq!(
        accepted(&kept),
        1,
        "the batch's turn committed before any retry: {kept:?}"
    );
    let again = engram(&[], &store, &batch, dir.path()).output().unwrap();
    let line: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(line["request_id"], "batch-1", "{line}");
    assert_eq!(
        line["committed"].as_array().map(Vec::len),
        Some(1),
        "{line}"
    );
    // The memories: one from each turn, none twice.
    let recall = ["recall", "vegetarian", "--agent", "a"];
    let out = engram(&[], &store, &recall, dir.path()).output().unwrap();
    let recalled: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        recalled["memories"].as_array().map(Vec::len),
        Some(2),
        "{recalled}"
    );
}

/// A line strace wrote with `-f -o`, without the thread id in front.
fn traced_call(line: &str) -> &str {
    line.trim_start_matches(|c: char| c.is_ascii_digit())
        .trim_start()
}

/// The `pread64` calls strace wrote to `trace`, in order: each one's file
/// descriptor, offset and return value, and whether strace injected its
/// answer.
fn preads(trace: &Path) -> Vec<(String, u64, i64, bool)> {
    std::fs::read_to_string(trace)
        .unwrap()
        .lines()
        .filter_map(|line| {
            let call = traced_call(line).strip_prefix("pread64(")?;
            // strace pads a short call with spaces before its ` = `.
            let (args, answer) = call.rsplit_once(" = ")?;
            let args = args.trim_end().strip_suffix(')')?;
            let fd = args.split(',').next()?.trim().to_owned();
            let offset = args.rsplit(',').next()?.trim().parse().ok()?;
            let returned = answer.split_whitespace().next()?.parse().ok()?;
            Some((fd, offset, returned, answer.contains("(INJECTED)")))
        })
        .collect()
}

/// The file descriptor of the first `openat` in `trace` that opened `name`.
fn opened_fd(trace: &Path, name: &str) -> String {
    std::fs::read_to_string(trace)
        .unwrap()
        .lines()
        .map(traced_call)
        .filter(|line| line.starts_with("openat(") && line.contains(&format!("{name}\"")))
        .find_map(|line| line.rsplit_once(" = ").map(|(_, fd)| fd.trim().to_owned()))
        .unwrap_or_else(|| panic!("{name} is never opened"))
}

#[test]
fn a_short_read_of_the_header_is_read_again_and_never_called_no_database() {
    // `pread` answers 0 bytes (end of file) for the header of a store that
    // holds a write: once, it is read again and the store answers; from then
    // on, the one line names a failed read, never "not a SQLite database":
    // a user told so may delete a healthy store. A dry run under strace
    // says which `pread` is the header's first read (the dynamic loader's
    // come first); each run checks the injected one was that read.
    let strace = strace();
    let dir = tempfile::tempdir().unwrap();
    let store = written(dir.path(), "kept.db");
    std::fs::write(
        dir.path().join("q.json"),
        r#"{"record_type":"STATE","selector":{"Latest":{"limit":5}},"request_id":"q"}"#,
    )
    .unwrap();
    let trace = dir.path().join("trace");
    let read = ["read", "--agent", "alice", "q.json"];
    let traced = |inject: &str| {
        let trace = trace.to_str().unwrap();
        let mut prefix = vec![strace, "-f", "-o", trace, "-e", "trace=openat,pread64"];
        if !inject.is_empty() {
            prefix.extend(["-e", inject]);
        }
        engram(&prefix, &store, &read, dir.path()).output().unwrap()
    };
    let dry = traced("");
    assert!(dry.status.success(), "{dry:?}");
    let fd = opened_fd(&trace, "kept.db");
    let header = preads(&trace)
        .iter()
        .position(|(read_fd, offset, _, _)| *read_fd == fd && *offset == 0)
        .expect("the store's header is read")
        + 1;

    // Once: read again, and the store answers.
    let out = traced(&format!("inject=pread64:retval=0:when={header}"));
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("mission.current"));
    let calls = preads(&trace);
    let injected = calls
        .iter()
        .position(|call| call.3)
        .expect("the fault was injected");
    assert_eq!(
        (&calls[injected].0, calls[injected].1),
        (&fd, 0),
        "the injected read is the header's"
    );
    assert!(
        calls[injected + 1..]
            .iter()
            .any(|(read_fd, offset, returned, _)| *read_fd == fd && *offset == 0 && *returned > 0),
        "and the header is read again, whole"
    );

    // Every read from then on: one line naming a failed read.
    for when in [format!("{header}+"), format!("{header}..{}", header + 1)] {
        let out = traced(&format!("inject=pread64:retval=0:when={when}"));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !stderr.contains("not a SQLite database") && !stderr.contains("not an Engram store"),
            "pread {when}: {stderr}"
        );
        if !out.status.success() {
            one_line_naming(&out, "kept.db");
            assert!(
                stderr.contains("read") && stderr.contains("I/O error"),
                "pread {when}: {stderr}"
            );
        } else {
            assert!(String::from_utf8_lossy(&out.stdout).contains("mission.current"));
        }
        assert!(
            preads(&trace).iter().any(|call| call.3),
            "pread {when}: injected"
        );
    }
}
