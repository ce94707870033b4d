//! The embedded default keeps what it accepted: across reopening the file,
//! with WAL and full sync, and it refuses files that are not its own.

mod support;

use engram::types::*;
use engram::{SqliteBackend, SqliteOptions, Synchronous};
use std::sync::Arc;
use support::*;

#[test]
fn records_survive_closing_and_reopening_the_file() {
    // proves IO-W8: an ACCEPTED write is durable
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
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("engram.db");
    let _store = SqliteBackend::open(&path).unwrap();
    assert_eq!(SqliteOptions::default().synchronous, Synchronous::Full);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
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
