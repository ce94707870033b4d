//! Offline maintenance (IO-W7): the lock that keeps online writers out,
//! across processes; export and import that round-trip a domain exactly;
//! forget that leaves nothing of a domain behind.

mod support;

use engram::Mode;
use engram::audit::{Operation, Outcome as Audited};
use engram::export::{ExportedItem, MaintenanceError};
use engram::io::WriteResult;
use engram::types::*;
use support::*;

backend_test! {
    fn export_then_import_gives_back_the_domain_byte_for_byte(fx) {
        // proves S-EXPORT: maintenance round-trips a domain exactly (ids, write
        // order, both time axes, indexes, request ids), and an import repeats
        populate(&mut fx.open("alice"), 600);
        populate(&mut fx.open("bob"), 5);
        let before = domain_pairs(&fx, "alice");
        let bob = domain_pairs(&fx, "bob");
        let items = export_all(&mut fx.open_in("alice", Mode::Maintenance));
        assert!(items.len() > 4_000, "{}", items.len());
        for kind in ["Record", "Request", "KeyTier"] {
            let count = items
                .iter()
                .filter(|i| format!("{i:?}").starts_with(&format!("ExportedItem::{kind}")))
                .count();
            assert!(count > 0, "{}: no {kind} item", fx.name);
        }

        fx.forget("alice");
        assert!(domain_pairs(&fx, "alice").is_empty());
        let mut domain = fx.open_in("alice", Mode::Maintenance);
        let mut new = 0;
        for batch in items.chunks(500) {
            new += domain.import(batch).unwrap().unwrap();
        }
        assert_eq!(new as usize, items.len());
        assert_eq!(domain_pairs(&fx, "alice"), before, "{}", fx.name);
        assert_eq!(export_all(&mut domain), items);
        // Again: nothing new, nothing changed.
        for batch in items.chunks(500) {
            assert_eq!(domain.import(batch).unwrap().unwrap(), 0);
        }
        drop(domain);
        assert_eq!(domain_pairs(&fx, "alice"), before);
        assert_eq!(domain_pairs(&fx, "bob"), bob);
        // A retry of a request made before the move still gets its id.
        let mut alice = fx.open("alice");
        let first = items
            .iter()
            .find_map(|item| match item {
                ExportedItem::Request(r) if r.request_id == "i0" => Some(r.stored_id.clone()),
                _ => None,
            })
            .unwrap();
        assert_eq!(
            accept(&mut alice, "i0", ingested(0, "flight to paris")),
            first
        );
        assert_eq!(fx.trail().pop().unwrap().outcome, Audited::Replayed);
    }
}

backend_test! {
    fn an_import_that_contradicts_the_domain_stores_nothing(fx) {
        // proves S-EXPORT: an import batch is all or nothing
        populate(&mut fx.open("alice"), 3);
        let mut domain = fx.open_in("alice", Mode::Maintenance);
        let mut items = export_all(&mut domain);
        let before = domain_pairs(&fx, "alice");
        // Same ids, other content.
        for item in &mut items {
            if let ExportedItem::Record(r) = item {
                r.seq += 1_000;
                if let MemoryRecord::State(s) = &mut r.record {
                    s.payload.subject = "changed".into();
                }
            }
        }
        match domain.import(&items).unwrap() {
            Err(MaintenanceError::InvalidItem(why)) => assert!(why.contains("other content")),
            other => panic!("{}: {other:?}", fx.name),
        }
        assert_eq!(domain_pairs(&fx, "alice"), before);
        // An online domain neither exports nor imports.
        drop(domain);
        let mut online = fx.open("alice");
        assert!(matches!(
            online.export_page(None, 10).unwrap(),
            Err(MaintenanceError::NotInMaintenance)
        ));
        assert!(matches!(
            online.import(&items).unwrap(),
            Err(MaintenanceError::NotInMaintenance)
        ));
    }
}

backend_test! {
    fn forget_leaves_nothing_of_the_domain_and_keeps_no_content(fx) {
        // proves S-FORGET: forget removes every record, index and idempotency
        // entry of one domain, and the trail says so without what they held
        populate(&mut fx.open("alice"), 40);
        populate(&mut fx.open("alice2"), 3);
        let held = domain_pairs(&fx, "alice").len() as u64;
        let other = domain_pairs(&fx, "alice2");
        assert!(held > 500);
        assert_eq!(fx.forget("alice"), held);
        assert!(domain_pairs(&fx, "alice").is_empty(), "{}", fx.name);
        assert_eq!(domain_pairs(&fx, "alice2"), other);
        // Nothing of alice anywhere in the store, lock included.
        let prefix = b"\x00\x00\x00\x05alice";
        assert!(
            fx.dump()
                .iter()
                .all(|(key, value)| !contains(key, prefix) && !contains(value, b"note 39")),
        );
        let entry = fx.trail().pop().unwrap();
        assert_eq!(entry.operation, Operation::Forget);
        assert_eq!(entry.outcome, Audited::Applied);
        assert_eq!(entry.count, Some(held as u32));
        let text = serde_json::to_string(&entry).unwrap();
        for content in ["note", "paris", "booking", "person", "mission"] {
            assert!(!text.contains(content), "{text}");
        }
        // The domain is usable again, and empty.
        let mut alice = fx.open("alice");
        assert!(records(&mut alice, RecordType::Event, latest(10)).is_empty());
        accept(&mut alice, "i0", ingested(0, "a new start"));
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

backend_test! {
    fn io_w7_one_maintenance_lock_per_domain_and_online_writes_wait_for_it(fx) {
        // proves IO-W7: the lock excludes a second maintainer and online writers
        let mut maintainer = fx.open_in("alice", Mode::Maintenance);
        let second = engram().open(
            "alice",
            Mode::Maintenance,
            fx.backend.clone(),
            fx.audit.clone(),
        );
        assert!(second.err().unwrap().to_string().contains("locked"));
        let mut online = fx.open("alice");
        let answer = online
            .write(&request("alice", "w1", ingested(1, "blocked")))
            .unwrap();
        assert_eq!(answer, WriteResult::Rejected);
        let reason = fx.trail().pop().unwrap().reason.unwrap();
        assert!(reason.contains("locked for maintenance"), "{reason}");
        // Maintenance writes go on meanwhile; other domains are not locked.
        let mut write = request("alice", "m1", ingested(1, "maintained"));
        write.source.component = SourceComponent::Maintenance;
        assert!(matches!(
            maintainer.write(&write).unwrap(),
            WriteResult::Accepted(_)
        ));
        accept(&mut fx.open("bob"), "b1", ingested(1, "free"));
        drop(maintainer);
        accept(&mut online, "w1", ingested(1, "blocked"));
        // A lock left by a dead holder is broken by hand.
        let stale = fx.open_in("alice", Mode::Maintenance);
        std::mem::forget(stale);
        assert!(
            fx.open("alice")
                .write(&request("alice", "w2", ingested(2, "x")))
                .unwrap()
                == WriteResult::Rejected
        );
        assert!(engram::maintenance::break_lock(fx.backend.as_ref(), "alice").unwrap());
        accept(&mut fx.open("alice"), "w2", ingested(2, "x"));
    }
}

// ---- the CLI, other processes ---------------------------------------------------

const WRITE: &str = r#"{"request_id":"cli-1","source":{"agent_id":"alice","component":"COGNITION","actor":"USER"},"record":{"record_type":"EVENT","timestamp":5,"payload":{"ingested":{"session_ref":"s","summary":"from another process","keywords":["x"]}}}}"#;

backend_test! {
    [sqlite, postgres]
    fn io_w7_a_lock_taken_by_one_host_holds_against_writers_in_other_processes(fx) {
        // proves IO-W7 across processes, on one SQLite file and on one
        // PostgreSQL database shared by the hosts
        let store = fx.store_spec().expect("a store other processes reach");
        lock_across_processes(&fx, &store);
    }
}

fn lock_across_processes(fx: &Fixture, store: &str) {
    accept(&mut fx.open("alice"), "first", ingested(1, "before"));
    let maintainer = fx.open_in("alice", Mode::Maintenance);
    let blocked = engram_cli(store, &["write", "--agent", "alice"], WRITE);
    assert_eq!(blocked.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&blocked.stdout).trim(),
        r#""REJECTED""#
    );
    let reason = fx.trail().pop().unwrap().reason.unwrap();
    assert!(reason.contains("locked for maintenance"), "{reason}");
    let export = engram_cli(store, &["maintenance", "export", "--agent", "alice"], "");
    assert_eq!(export.status.code(), Some(4));
    assert!(String::from_utf8_lossy(&export.stderr).contains("locked for maintenance"));
    drop(maintainer);
    let written = engram_cli(store, &["write", "--agent", "alice"], WRITE);
    assert_eq!(written.status.code(), Some(0), "{written:?}");
    // `engram maintenance write` takes MAINTENANCE writes only.
    let cognition = engram_cli(store, &["maintenance", "write", "--agent", "alice"], WRITE);
    assert_eq!(cognition.status.code(), Some(1));
    let maintenance = WRITE
        .replace("COGNITION", "MAINTENANCE")
        .replace("cli-1", "cli-2");
    let fixed = engram_cli(
        store,
        &["maintenance", "write", "--agent", "alice"],
        &maintenance,
    );
    assert_eq!(fixed.status.code(), Some(0), "{fixed:?}");
    // A maintainer in another process keeps this one out, and lets go.
    let mut held = fx.open_in("alice", Mode::Maintenance);
    let other = engram_cli(
        store,
        &["maintenance", "write", "--agent", "alice"],
        &maintenance,
    );
    assert_eq!(other.status.code(), Some(4));
    let mut write = request("alice", "m-3", ingested(3, "mine"));
    write.source.component = SourceComponent::Maintenance;
    assert!(matches!(
        held.write(&write).unwrap(),
        WriteResult::Accepted(_)
    ));
}

#[test]
fn the_cli_exports_forgets_and_imports_back_the_same_store() {
    // proves S-EXPORT, S-FORGET (through the CLI): export, forget, import, export again
    let fx = Fixture::sqlite();
    let dir = fx.folder().unwrap();
    let store = dir.join("engram.db");
    populate(&mut fx.open("alice"), 700);
    populate(&mut fx.open("bob"), 10);
    let before = fx.dump();
    let first = dir.join("first.jsonl");
    let out = engram_cli(
        &store,
        &["maintenance", "export", "--out", first.to_str().unwrap()],
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(out.stderr.is_empty(), "no progress bar off a terminal");
    let exported = std::fs::read_to_string(&first).unwrap();
    assert!(exported.lines().count() > 5_000);
    for agent in ["alice", "bob"] {
        let out = engram_cli(&store, &["maintenance", "forget", "--agent", agent], "");
        assert_eq!(out.status.code(), Some(0), "{out:?}");
    }
    assert!(fx.dump().is_empty());
    let import = engram_cli(
        &store,
        &["maintenance", "import", first.to_str().unwrap()],
        "",
    );
    assert_eq!(import.status.code(), Some(0), "{import:?}");
    assert!(import.stderr.is_empty());
    assert_eq!(fx.dump(), before);
    let second = dir.join("second.jsonl");
    engram_cli(
        &store,
        &["maintenance", "export", "--out", second.to_str().unwrap()],
        "",
    );
    assert_eq!(std::fs::read_to_string(&second).unwrap(), exported);
    // Again, from standard input: nothing new.
    let again = engram_cli(&store, &["maintenance", "import"], &exported);
    assert_eq!(again.status.code(), Some(0));
    let answers: Vec<serde_json::Value> = String::from_utf8_lossy(&again.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(answers.len(), 2);
    assert!(answers.iter().all(|a| a["new"] == 0));
    assert_eq!(fx.dump(), before);
    // A malformed line: one line naming it, exit 3, nothing imported.
    let bad = engram_cli(
        &store,
        &["maintenance", "import"],
        "{\"agent_id\":\"carol\"}\n",
    );
    assert_eq!(bad.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("line 1"));
    assert_eq!(fx.dump(), before);
}
