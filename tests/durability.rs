//! The embedded default keeps what it accepted: across reopening the file,
//! with WAL and full sync, and it refuses files that are not its own.

mod support;

use engram::types::*;
use engram::{SqliteBackend, SqliteOptions, Synchronous};
use std::sync::Arc;
use support::*;

#[test]
fn records_survive_closing_and_reopening_the_file() {
    // proves S-FILE: an ACCEPTED write is durable
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("engram.db");
    let mut written = Vec::new();
    {
        let store = Arc::new(SqliteBackend::open(&path).unwrap());
        let mut alice = engram()
            .open("alice", engram::Mode::Online, store.clone(), store)
            .unwrap();
        written.push(accept(&mut alice, "f", fact("user.diet", "Vegetarian")));
        written.push(accept(&mut alice, "e", ingested(5, "Asked about Paris")));
        written.push(accept(&mut alice, "s", state(9, "mission.current")));
    }
    let store = Arc::new(SqliteBackend::open(&path).unwrap());
    let mut alice = engram()
        .open("alice", engram::Mode::Online, store.clone(), store.clone())
        .unwrap();
    let mut found = ids(&records(&mut alice, RecordType::Fact, by_key("user.diet")));
    found.extend(ids(&records(&mut alice, RecordType::Event, latest(5))));
    found.extend(ids(&records(&mut alice, RecordType::State, latest(5))));
    assert_eq!(found, written);
    // Idempotency survives too: a retry after the restart stores nothing new.
    assert_eq!(
        accept(&mut alice, "e", ingested(5, "Asked about Paris")),
        written[1]
    );
    assert_eq!(records(&mut alice, RecordType::Event, limit(5)).len(), 1);
    // The audit trail is in the same file.
    assert_eq!(
        store
            .audit_trail(&engram::AuditQuery {
                agent: Some("alice".into()),
                ..engram::AuditQuery::default()
            })
            .unwrap()
            .len(),
        8
    );
}

#[test]
fn the_file_uses_the_wal_journal_and_full_sync_by_default() {
    // proves S-FILE: the journal the file records, and the durability the
    // store's own connection commits with, by default and when asked
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("engram.db");
    let store = SqliteBackend::open(&path).unwrap();
    assert_eq!(store.synchronous().unwrap(), Synchronous::Full);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    drop(store);
    let normal = SqliteBackend::open_with(
        &path,
        &SqliteOptions {
            synchronous: Synchronous::Normal,
            ..SqliteOptions::default()
        },
    )
    .unwrap();
    assert_eq!(normal.synchronous().unwrap(), Synchronous::Normal);
}

#[test]
fn a_file_that_is_not_an_engram_store_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("notes.txt");
    std::fs::write(
        &text,
        "not a database, just some notes that are long enough\n".repeat(20),
    )
    .unwrap();
    let before = std::fs::read(&text).unwrap();
    let error = SqliteBackend::open(&text)
        .err()
        .expect("refused")
        .to_string();
    assert!(error.contains("not an Engram store"), "{error}");
    assert_eq!(std::fs::read(&text).unwrap(), before);

    let other = dir.path().join("other.db");
    rusqlite::Connection::open(&other)
        .unwrap()
        .execute_batch("CREATE TABLE t (x)")
        .unwrap();
    let error = SqliteBackend::open(&other)
        .err()
        .expect("refused")
        .to_string();
    assert!(error.contains("another SQLite database"), "{error}");
}

/// Makes the store's audit table refuse the ACCEPTED entry of one request
/// id, as a full disk or an I/O error would refuse it.
fn refuse_audit_of(fx: &Fixture, request_id: &str) {
    let sql = |table: &str| {
        format!(
            "CREATE TRIGGER refuse_audit BEFORE INSERT ON {table} FOR EACH ROW WHEN (NEW.request_id = '{request_id}' AND NEW.outcome = 'ACCEPTED')"
        )
    };
    if let Some(folder) = fx.folder() {
        let conn = rusqlite::Connection::open(folder.join("engram.db")).unwrap();
        conn.execute_batch(&format!(
            "{} BEGIN SELECT RAISE(ABORT, 'the audit trail refuses'); END;",
            sql("engram_audit")
        ))
        .unwrap();
    } else if let Some(schema) = fx.schema() {
        let mut client = schema.connect();
        let table = format!("{}.engram_audit", schema.name);
        client
            .batch_execute(&format!(
                "CREATE FUNCTION {0}.refuse() RETURNS trigger LANGUAGE plpgsql AS
                   $$ BEGIN RAISE EXCEPTION 'the audit trail refuses'; END $$;
                 CREATE TRIGGER refuse_audit BEFORE INSERT ON {table} FOR EACH ROW
                   WHEN (NEW.request_id = convert_to('{request_id}', 'UTF8') AND NEW.outcome = 'ACCEPTED') EXECUTE FUNCTION {0}.refuse();",
                schema.name
            ))
            .unwrap();
    }
}

backend_test! {
    [sqlite, postgres]
    fn a_write_or_cycle_is_stored_only_with_its_audit_entry(fx) {
        // proves S-AUDIT, B5-D1: the entry of a write goes into the write's own
        // transaction, so a trail that cannot take it keeps the record out too;
        // a committed write always has its ACCEPTED entry.
        let mut alice = fx.open("alice");
        let kept = accept(&mut alice, "kept", ingested(1, "Asked about Paris"));
        refuse_audit_of(&fx, "lost");
        let before = fx.dump();
        let answer = alice.write(&request("alice", "lost", ingested(2, "Asked about Rome")));
        assert!(
            !matches!(answer, Ok(engram::io::WriteResult::Accepted(_))),
            "{}: {answer:?}",
            fx.name
        );
        assert_eq!(
            fx.dump(),
            before,
            "{}: nothing of the write is stored",
            fx.name
        );
        // A cycle whose commit cannot be audited persists nothing either.
        refuse_audit_of_cycle(&fx);
        let plan = engram::plans::ingest();
        let cycle = alice.begin_cycle(&plan, "s", "cyc").unwrap().unwrap();
        let input = engram::cycle::TurnInput {
            user_message: Some("Book me a table at Green Leaf on Friday".into()),
            model_response: Some("Booked Green Leaf for Friday at seven".into()),
        };
        for stage in [
            engram::cycle::Stage::SummarizeMemory,
            engram::cycle::Stage::PersistMemory,
        ] {
            alice.run_stage(&cycle, stage, &input).unwrap().unwrap();
        }
        let committed = alice.commit_cycle(&cycle);
        assert!(
            !matches!(committed, Ok(Ok(_))),
            "{}: {committed:?}",
            fx.name
        );
        let _ = alice.drop_cycle(cycle);
        assert_eq!(
            fx.dump(),
            before,
            "{}: nothing of the cycle is stored",
            fx.name
        );
        // What was stored has its entry.
        let trail = fx.trail();
        assert!(
            trail.iter().any(|e| e.request_id == "kept"
                && e.outcome == engram::audit::Outcome::Accepted
                && e.stored_id.as_deref() == Some(kept.as_str())),
            "{}",
            fx.name
        );
        let mut alice = fx.open("alice");
        assert_eq!(records(&mut alice, RecordType::Event, limit(10)).len(), 1);
    }
}

/// Refuses the entries of the ingest cycle `cyc` too.
fn refuse_audit_of_cycle(fx: &Fixture) {
    if let Some(folder) = fx.folder() {
        let conn = rusqlite::Connection::open(folder.join("engram.db")).unwrap();
        conn.execute_batch(
            "CREATE TRIGGER refuse_cycle BEFORE INSERT ON engram_audit FOR EACH ROW
               WHEN (NEW.request_id LIKE 'cyc#%' AND NEW.outcome = 'ACCEPTED')
               BEGIN SELECT RAISE(ABORT, 'the audit trail refuses'); END;",
        )
        .unwrap();
    } else if let Some(schema) = fx.schema() {
        let mut client = schema.connect();
        client
            .batch_execute(&format!(
                "CREATE TRIGGER refuse_cycle BEFORE INSERT ON {0}.engram_audit FOR EACH ROW
                   WHEN (convert_from(NEW.request_id, 'UTF8') LIKE 'cyc#%' AND NEW.outcome = 'ACCEPTED')
                   EXECUTE FUNCTION {0}.refuse();",
                schema.name
            ))
            .unwrap();
    }
}

#[test]
fn a_read_is_audited_before_it_is_answered_and_survives_a_killed_process() {
    // proves S-AUDIT: a read's entry is appended (to the file beside
    // the store) before its answer is printed, so every read a killed
    // process answered is in the trail; the next commit moves it into the
    // table.
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("engram.db");
    let id = {
        let store = Arc::new(SqliteBackend::open(&path).unwrap());
        let mut alice = engram()
            .open("alice", engram::Mode::Online, store.clone(), store)
            .unwrap();
        accept(&mut alice, "seed", ingested(5, "Asked about Paris"))
    };
    let line = format!(
        r#"{{"record_type":"EVENT","selector":{{"ById":{{"id":"{id}"}}}},"request_id":"r"}}"#
    );
    let reads = dir.path().join("reads.jsonl");
    std::fs::write(&reads, format!("{line}\n").repeat(20_000)).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_engram"))
        .arg("--store")
        .arg(&path)
        .args(["read", "--agent", "alice", "--batch"])
        .arg(&reads)
        .env(
            "ENGRAM_CACHE_DIR",
            concat!(env!("CARGO_TARGET_TMPDIR"), "/engram-cache"),
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Take a few answers, then kill it in the middle of its batch (it
    // cannot finish: its answers do not fit in the pipe we stopped
    // reading), then take every answer it printed before it died.
    use std::os::unix::process::ExitStatusExt;
    let mut answers = BufReader::new(child.stdout.take().unwrap());
    let mut answered = 0;
    let mut text = String::new();
    while answered < 200 && answers.read_line(&mut text).unwrap() > 0 {
        answered += 1;
    }
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(9), "killed, not finished: {status}");
    while answers.read_line(&mut text).unwrap() > 0 {
        answered += 1;
    }
    let store = Arc::new(SqliteBackend::open(&path).unwrap());
    let trail = store
        .audit_trail(&engram::AuditQuery {
            operation: Some(engram::audit::Operation::Read),
            limit: 100_000,
            ..engram::AuditQuery::default()
        })
        .unwrap();
    assert!(
        trail.len() >= answered,
        "{} read entries for {answered} answers",
        trail.len()
    );
    assert!(
        trail.len() < 20_000,
        "the process was killed before it finished"
    );
    assert!(
        trail
            .iter()
            .all(|e| e.request_id == "r" && e.count == Some(1))
    );
}

#[test]
fn reads_and_writes_of_processes_sharing_a_file_leave_every_entry_once() {
    // proves S-AUDIT: read entries appended with no lock by two processes
    // while a third commits (and so moves the trail file past what it
    // read) all reach the table, each exactly once, with every write's.
    use std::process::{Command, Stdio};
    const READS: usize = 1500;
    const WRITES: usize = 150;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("engram.db");
    let id = {
        let store = Arc::new(SqliteBackend::open(&path).unwrap());
        let mut alice = engram()
            .open("alice", engram::Mode::Online, store.clone(), store)
            .unwrap();
        accept(&mut alice, "seed", ingested(5, "Asked about Paris"))
    };
    let batch = |name: &str, lines: Vec<String>| {
        let file = dir.path().join(name);
        std::fs::write(&file, lines.join("\n")).unwrap();
        file
    };
    let reads = |reader: &str| {
        batch(
            &format!("{reader}.jsonl"),
            (0..READS)
                .map(|i| {
                    format!(
                        r#"{{"record_type":"EVENT","selector":{{"ById":{{"id":"{id}"}}}},"request_id":"{reader}-{i}"}}"#
                    )
                })
                .collect(),
        )
    };
    let writes = batch(
        "writes.jsonl",
        (0..WRITES)
            .map(|i| {
                format!(
                    r#"{{"request_id":"w-{i}","source":{{"agent_id":"alice","component":"COGNITION","actor":"USER"}},"record":{{"record_type":"FACT","key":"user.note{i}","payload":{{"semantic":{{"content":"Note {i}","context":"notes","valid_at":1767225600000,"strength":1.0,"last_accessed":1767225600000,"access_count":0,"sources":[],"confidence":0.9,"privacy_tier":"public"}}}}}}}}"#
                )
            })
            .collect(),
    );
    let spawn = |op: &str, file: &std::path::Path| {
        Command::new(env!("CARGO_BIN_EXE_engram"))
            .arg("--store")
            .arg(&path)
            .args([op, "--agent", "alice", "--batch"])
            .arg(file)
            .env(
                "ENGRAM_CACHE_DIR",
                concat!(env!("CARGO_TARGET_TMPDIR"), "/engram-cache"),
            )
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let children = [
        spawn("read", &reads("ra")),
        spawn("write", &writes),
        spawn("read", &reads("rb")),
    ];
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let store = Arc::new(SqliteBackend::open(&path).unwrap());
    let trail = store
        .audit_trail(&engram::AuditQuery {
            agent: Some("alice".into()),
            limit: 100_000,
            ..engram::AuditQuery::default()
        })
        .unwrap();
    let mut seen = std::collections::BTreeMap::<&str, usize>::new();
    for entry in &trail {
        *seen.entry(entry.request_id.as_str()).or_default() += 1;
    }
    for reader in ["ra", "rb"] {
        for i in 0..READS {
            assert_eq!(seen.get(format!("{reader}-{i}").as_str()), Some(&1));
        }
    }
    for i in 0..WRITES {
        assert_eq!(seen.get(format!("w-{i}").as_str()), Some(&1));
    }
    assert_eq!(trail.len(), 2 * READS + WRITES + 1);
    // Everything moved and nobody else has the store open: the file was
    // emptied by the last move.
    let mut trail_file = path.as_os_str().to_owned();
    trail_file.push("-trail");
    assert_eq!(std::fs::metadata(trail_file).unwrap().len(), 0);
}

#[test]
fn a_write_of_a_long_lived_process_survives_other_processes_opening_and_closing_the_file() {
    // proves S-FILE IO-W8: a process that holds the store open keeps what
    // it writes while other processes open the file, write and close it.
    // SQLite in WAL mode keeps a lock on the database file for as long as a
    // connection is open, and a closing connection that finds no other
    // lock deletes the WAL; a host that opened and closed the file itself
    // (to read its header) would let go of that lock, and another process
    // closing the store would then take the WAL from under its writes.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("engram.db");
    // The store exists, in WAL mode, before the long-lived process opens it.
    drop(SqliteBackend::open(&path).unwrap());
    let store = Arc::new(SqliteBackend::open(&path).unwrap());
    let mut alice = engram()
        .open("alice", engram::Mode::Online, store.clone(), store)
        .unwrap();
    let mut mine = Vec::new();
    for round in 0..3 {
        let line = serde_json::json!({
            "request_id": format!("cli-{round}"),
            "source": {"agent_id": "alice", "component": "COGNITION", "actor": "USER"},
            "record": {"record_type": "STATE", "timestamp": round,
                "payload": {"subject": "cli", "properties": {}}}
        });
        let other = engram_cli(&path, &["write", "--agent", "alice"], &line.to_string());
        assert!(other.status.success(), "{other:?}");
        // The long-lived connection's lock kept the WAL from being deleted.
        assert!(
            dir.path().join("engram.db-wal").exists(),
            "round {round}: another process's close deleted the WAL under an open store"
        );
        mine.push(accept(
            &mut alice,
            &format!("mine-{round}"),
            state(round, "mine"),
        ));
    }
    // A fresh process sees every write the long-lived one acknowledged,
    // while it still holds the store open.
    let read = engram_cli(
        &path,
        &["read", "--agent", "alice"],
        r#"{"record_type":"STATE","selector":{"Limit":{"limit":50}},"request_id":"q"}"#,
    );
    let answer = String::from_utf8_lossy(&read.stdout);
    for id in &mine {
        assert!(answer.contains(id.as_str()), "{id} is lost: {answer}");
    }
    drop(alice);
}

#[test]
fn s_audit_the_trail_of_every_agent_lists_entries_in_the_order_made_and_each_agents_in_its_own() {
    // proves S-AUDIT: entries of three agents made one after another, in
    // the same millisecond and with the clock stepping back, some moved
    // from the trail file and some written in commits: listed together
    // they are in the order made, the newest `limit` of them are the last
    // made, and each agent's are its own in order (the audit rows keyed by
    // agent, schema version 4)
    use engram::AuditSink;
    use engram::audit::{AuditEntry, AuditQuery, Operation, Outcome};
    use engram::backend::Backend;
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteBackend::open(dir.path().join("order.db")).unwrap();
    let entry = |agent: &str, n: usize, at: i64| AuditEntry {
        at,
        agent_id: agent.into(),
        request_id: format!("{agent}-{n}"),
        operation: Operation::Read,
        source: None,
        record_type: None,
        outcome: Outcome::Returned,
        stored_id: None,
        count: Some(0),
        reason: None,
        caller: None,
    };
    let agents = ["carol", "alice", "bob"];
    let mut made = Vec::new();
    for n in 0..30 {
        let agent = agents[(n * 7) % 3];
        // Ten in one millisecond, then the clock steps back.
        let at = 5_000 - (n as i64 / 10) * 1_000;
        let e = entry(agent, n, at);
        made.push(e.request_id.clone());
        if n % 4 == 0 {
            store.commit_audited(&[], &[], &[e], &store).unwrap();
        } else {
            store.append(&e).unwrap();
        }
    }
    let listed = |agent: Option<&str>, limit: u32| -> Vec<String> {
        store
            .audit_trail(&AuditQuery {
                agent: agent.map(str::to_owned),
                limit,
                ..AuditQuery::default()
            })
            .unwrap()
            .into_iter()
            .map(|e| e.request_id)
            .collect()
    };
    assert_eq!(listed(None, 100), made);
    assert_eq!(listed(None, 4), made[26..]);
    for agent in agents {
        let own: Vec<String> = made
            .iter()
            .filter(|id| id.starts_with(&format!("{agent}-")))
            .cloned()
            .collect();
        assert_eq!(listed(Some(agent), 100), own);
        assert_eq!(listed(Some(agent), 2), own[own.len() - 2..]);
    }
}
