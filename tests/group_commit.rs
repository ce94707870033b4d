//! Many agents, one process: threads that each hold their own domain commit
//! at once over one SQLite store, whose commits are then written in groups
//! (one transaction for many). Each commit keeps its own answer: stored and
//! audited when ACCEPTED, apart from the others, and a conflict fails alone.

mod support;

use engram::audit::{Operation, Outcome};
use engram::backend::{Op, Precondition, StoreError};
use engram::io::WriteResult;
use engram::types::*;
use engram::{AuditEntry, AuditQuery, Backend, Domain, SqliteBackend, SqliteOptions};
use std::collections::BTreeSet;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};
use support::*;

const AGENTS: usize = 12;
const WRITES: usize = 6;

fn options(group_commit: bool) -> SqliteOptions {
    SqliteOptions {
        group_commit,
        // The tests run on a busy machine: no commit should give up on a
        // lock held by a slow neighbour.
        busy_timeout: Duration::from_secs(60),
        ..SqliteOptions::default()
    }
}

fn open(store: &Arc<SqliteBackend>, agent: &str) -> Domain {
    engram()
        .open(agent, engram::Mode::Online, store.clone(), store.clone())
        .expect("the domain opens")
}

fn agent(i: usize) -> String {
    format!("agent-{i}")
}

/// The entries of `agent`'s trail with this operation and outcome.
fn audited(
    store: &SqliteBackend,
    agent: &str,
    operation: Operation,
    outcome: Outcome,
) -> Vec<AuditEntry> {
    store
        .audit_trail(&AuditQuery {
            agent: Some(agent.into()),
            operation: Some(operation),
            outcome: Some(outcome),
            limit: 10_000,
            ..AuditQuery::default()
        })
        .expect("the trail reads")
}

/// Every agent writes at once, each from its own thread and domain; returns
/// the ids each one got, by agent.
fn write_at_once(store: &Arc<SqliteBackend>) -> Vec<Vec<String>> {
    let start = Barrier::new(AGENTS);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..AGENTS)
            .map(|i| {
                let mut domain = open(store, &agent(i));
                let start = &start;
                scope.spawn(move || {
                    start.wait();
                    (0..WRITES)
                        .map(|w| {
                            let record = if w % 2 == 0 {
                                ingested(w as i64, &format!("agent {i} asked about trip {w}"))
                            } else {
                                fact(&format!("trip.n{w}"), &format!("agent {i}, trip {w}"))
                            };
                            accept(&mut domain, &format!("w-{w}"), record)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("the writer ends"))
            .collect()
    })
}

#[test]
fn every_write_of_many_agents_committing_at_once_is_stored_and_audited() {
    // proves S-GROUP, S-AUDIT: every ACCEPTED write is readable and has its ACCEPTED
    // entry, with group commit and without
    for group_commit in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("engram.db");
        let written = {
            let store = Arc::new(SqliteBackend::open_with(&path, &options(group_commit)).unwrap());
            write_at_once(&store)
        };
        // Reopened: what was acknowledged is on the file.
        let store = Arc::new(SqliteBackend::open(&path).unwrap());
        for (i, own) in written.iter().enumerate() {
            let mut domain = open(&store, &agent(i));
            for (w, id) in own.iter().enumerate() {
                let record_type = if w % 2 == 0 {
                    RecordType::Event
                } else {
                    RecordType::Fact
                };
                let found = records(&mut domain, record_type, by_id(id));
                assert_eq!(
                    ids(&found),
                    std::slice::from_ref(id),
                    "group commit {group_commit}"
                );
            }
            let accepted: BTreeSet<String> =
                audited(&store, &agent(i), Operation::Write, Outcome::Accepted)
                    .into_iter()
                    .filter_map(|entry| entry.stored_id)
                    .collect();
            let own: BTreeSet<String> = own.iter().cloned().collect();
            assert_eq!(accepted, own, "group commit {group_commit}");
        }
        let conn = rusqlite::Connection::open(&path).unwrap();
        let check: String = conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(check, "ok");
    }
}

#[test]
fn io_w6_agents_committing_in_one_group_never_see_each_others_records() {
    // proves IO-W6, S-GROUP
    let dir = tempfile::tempdir().unwrap();
    let store =
        Arc::new(SqliteBackend::open_with(dir.path().join("engram.db"), &options(true)).unwrap());
    let written = write_at_once(&store);
    for (i, own) in written.iter().enumerate() {
        let mut domain = open(&store, &agent(i));
        let mut seen = ids(&records(&mut domain, RecordType::Event, limit(CEILING)));
        seen.extend(ids(&records(&mut domain, RecordType::Fact, limit(CEILING))));
        seen.sort();
        let mut own = own.clone();
        own.sort();
        assert_eq!(seen, own, "agent {i} sees exactly its own records");
        for (j, others) in written.iter().enumerate().filter(|(j, _)| *j != i) {
            for id in others {
                for record_type in [RecordType::Event, RecordType::Fact] {
                    // Ids are random: another agent's id names nothing here.
                    let found = records(&mut domain, record_type, by_id(id));
                    assert!(found.is_empty(), "agent {i} reached a record of agent {j}");
                }
            }
        }
    }
}

#[test]
fn io_w2_one_request_sent_by_many_hosts_of_one_agent_at_once_is_stored_once() {
    // proves IO-W2: the hosts' commits conflict in the groups they share;
    // one stores the record, every other answer names its id
    let dir = tempfile::tempdir().unwrap();
    let store =
        Arc::new(SqliteBackend::open_with(dir.path().join("engram.db"), &options(true)).unwrap());
    const HOSTS: usize = 8;
    for round in 0..3 {
        let start = Barrier::new(HOSTS);
        let request_id = format!("same-{round}");
        let answers: Vec<WriteResult> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..HOSTS)
                .map(|_| {
                    let mut domain = open(&store, "alice");
                    let request = request("alice", &request_id, ingested(round, "one summary"));
                    let start = &start;
                    scope.spawn(move || {
                        start.wait();
                        domain.write(&request).expect("the call succeeds")
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let ids: BTreeSet<String> = answers
            .iter()
            .map(|answer| match answer {
                WriteResult::Accepted(id) => id.clone(),
                WriteResult::Rejected => panic!("a retry of {request_id} was rejected"),
            })
            .collect();
        assert_eq!(ids.len(), 1, "round {round}: {answers:?}");
    }
    let mut alice = open(&store, "alice");
    assert_eq!(
        records(&mut alice, RecordType::Event, limit(CEILING)).len(),
        3
    );
    assert_eq!(
        audited(&store, "alice", Operation::Write, Outcome::Accepted).len(),
        3
    );
    assert_eq!(
        audited(&store, "alice", Operation::Write, Outcome::Replayed).len(),
        3 * (HOSTS - 1)
    );
}

#[test]
fn reads_and_writes_of_many_agents_at_once_are_all_audited() {
    // proves S-AUDIT, S-GROUP: the entries of reads, appended beside the store while
    // other threads' commits move that file into the table, are all kept
    let dir = tempfile::tempdir().unwrap();
    let store =
        Arc::new(SqliteBackend::open_with(dir.path().join("engram.db"), &options(true)).unwrap());
    const READS: usize = 4;
    let start = Barrier::new(AGENTS);
    std::thread::scope(|scope| {
        for i in 0..AGENTS {
            let mut domain = open(&store, &agent(i));
            let start = &start;
            scope.spawn(move || {
                start.wait();
                for w in 0..WRITES {
                    let id = accept(&mut domain, &format!("w-{w}"), ingested(w as i64, "a trip"));
                    for _ in 0..READS {
                        assert_eq!(records(&mut domain, RecordType::Event, by_id(&id)).len(), 1);
                    }
                }
            });
        }
    });
    for i in 0..AGENTS {
        assert_eq!(
            audited(&store, &agent(i), Operation::Write, Outcome::Accepted).len(),
            WRITES
        );
        assert_eq!(
            audited(&store, &agent(i), Operation::Read, Outcome::Returned).len(),
            WRITES * READS,
            "agent {i}"
        );
    }
}

fn entry(request_id: &str) -> AuditEntry {
    AuditEntry {
        at: 1,
        agent_id: "backend".into(),
        request_id: request_id.into(),
        operation: Operation::Write,
        source: None,
        record_type: Some(RecordType::Event.into()),
        outcome: Outcome::Accepted,
        stored_id: Some(request_id.into()),
        count: None,
        reason: None,
        caller: None,
    }
}

#[test]
fn a_conflicting_commit_in_a_group_fails_alone() {
    // proves S-GROUP: in one group, exactly one of the commits competing for
    // a key wins; each loser gets a conflict, stores nothing and leaves no
    // entry; the unrelated commits of the group are stored with theirs
    const RIVALS: usize = 6;
    const OTHERS: usize = 6;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("engram.db");
    let store = Arc::new(SqliteBackend::open_with(&path, &options(true)).unwrap());
    // Another connection holds the write lock: the first commit to come
    // waits for it, alone, and every later one queues behind it; once all
    // of them are queued the lock is let go, and they are one group.
    let blocker = rusqlite::Connection::open(&path).unwrap();
    blocker.execute_batch("BEGIN IMMEDIATE").unwrap();
    let answers: Vec<(String, Result<bool, StoreError>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..RIVALS + OTHERS)
            .map(|n| {
                let store = &store;
                scope.spawn(move || {
                    let (name, mut preconditions) = if n < RIVALS {
                        let name = format!("rival-{n}");
                        let contested = Precondition::Absent(b"contested".to_vec());
                        (name, vec![contested])
                    } else {
                        (format!("other-{n}"), vec![])
                    };
                    preconditions.push(Precondition::Absent(name.clone().into_bytes()));
                    let mut ops = vec![Op::Put(name.clone().into_bytes(), b"stored".to_vec())];
                    if n < RIVALS {
                        ops.push(Op::Put(b"contested".to_vec(), name.clone().into_bytes()));
                    }
                    let trail = [entry(&name)];
                    let answer = store.commit_audited(&preconditions, &ops, &trail, store.as_ref());
                    (name, answer)
                })
            })
            .collect();
        // A bounded wait: the test fails rather than hang.
        let deadline = Instant::now() + Duration::from_secs(50);
        while store.waiting_commits() < RIVALS + OTHERS - 1 {
            assert!(Instant::now() < deadline, "the commits never queued");
            std::thread::sleep(Duration::from_millis(5));
        }
        blocker.execute_batch("COMMIT").unwrap();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let won: Vec<&String> = answers
        .iter()
        .filter(|(name, answer)| name.starts_with("rival") && *answer == Ok(true))
        .map(|(name, _)| name)
        .collect();
    assert_eq!(won.len(), 1, "{answers:?}");
    let winner = won[0].clone();
    for (name, answer) in &answers {
        if name.starts_with("rival") && *name != winner {
            assert_eq!(*answer, Err(StoreError::Conflict), "{name}");
            assert_eq!(store.get(name.as_bytes()).unwrap(), None, "{name}");
        } else {
            assert_eq!(*answer, Ok(true), "{name}");
            assert_eq!(
                store.get(name.as_bytes()).unwrap().as_deref(),
                Some(&b"stored"[..]),
                "{name}"
            );
        }
    }
    assert_eq!(
        store.get(b"contested").unwrap(),
        Some(winner.clone().into_bytes())
    );
    let stored: BTreeSet<String> = audited(&store, "backend", Operation::Write, Outcome::Accepted)
        .into_iter()
        .map(|entry| entry.request_id)
        .collect();
    let expected: BTreeSet<String> = answers
        .iter()
        .filter(|(_, answer)| answer.is_ok())
        .map(|(name, _)| name.clone())
        .collect();
    assert_eq!(stored, expected);
}
