//! Many hosts, one store: several `engram` processes write to the same agent
//! domain at once, on one PostgreSQL schema (and on one SQLite file), and
//! every record is then counted and checked.

mod support;

use engram::types::*;
use engram::{AuditQuery, AuditSink, Backend, Config, Engram, Mode, SqliteBackend};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::Arc;
use support::*;

const AGENT: &str = "team";
/// How many host processes write at once.
const HOSTS: usize = 4;
/// Requests only one host sends, on PostgreSQL.
const OWN_POSTGRES: usize = 30;
/// Requests only one host sends, on SQLite, whose writes are quicker.
const OWN_SQLITE: usize = 100;
/// Requests every host sends, the same record under the same request id.
const SHARED: usize = 15;
/// How often a host sends again what came back REJECTED, with the same
/// request ids (a client's retry).
const RETRY_ROUNDS: usize = 5;

fn engram_bin() -> &'static str {
    env!("CARGO_BIN_EXE_engram")
}

fn write_line(request_id: &str, timestamp: i64) -> String {
    serde_json::json!({
        "request_id": request_id,
        "source": {"agent_id": AGENT, "component": "COGNITION", "actor": "SYSTEM"},
        "record": {"record_type": "EVENT", "timestamp": timestamp,
            "payload": {"ingested": {"session_ref": "multihost",
                "summary": format!("note {request_id}"), "keywords": ["multihost"]}}}
    })
    .to_string()
}

/// What one host sends: its own requests with every shared one woven in,
/// the shared ones in the same order on every host so that they race.
fn requests_of(host: usize, own: usize) -> Vec<(String, i64)> {
    let mut lines = Vec::new();
    for i in 0..own.max(SHARED) {
        if i < SHARED {
            lines.push((format!("shared-{i}"), 1_000 + i as i64));
        }
        if i < own {
            lines.push((format!("host{host}-{i}"), 10_000 + (host * 1000 + i) as i64));
        }
    }
    lines
}

/// Starts one host process writing `requests` as a batch to `store`.
fn spawn_host(store: &str, requests: &[(String, i64)]) -> std::process::Child {
    let mut child = Command::new(engram_bin())
        .env_remove("ENGRAM_STORE")
        .env_remove("ENGRAM_AGENT")
        .args(["--store", store, "write", "--agent", AGENT, "--batch"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the engram binary starts");
    let input: String = requests
        .iter()
        .map(|(id, ts)| write_line(id, *ts) + "\n")
        .collect();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).unwrap();
    child
}

/// Each request id and the answers it got, from every host, in order.
type Answers = BTreeMap<String, Vec<Option<String>>>;

/// Runs every host at once, then again with what each got REJECTED (the
/// engine gives up a write after many lost races; REJECTED is a normal
/// answer a client retries, IO-G1). Answers how many retries it took.
fn run_hosts(store: &str, own: usize, answers: &mut Answers) -> usize {
    let mut pending: Vec<Vec<(String, i64)>> = (0..HOSTS).map(|h| requests_of(h, own)).collect();
    let mut retried = 0;
    for round in 0..=RETRY_ROUNDS {
        let children: Vec<_> = pending
            .iter()
            .filter(|requests| !requests.is_empty())
            .map(|requests| (requests.clone(), spawn_host(store, requests)))
            .collect();
        if children.is_empty() {
            return retried;
        }
        assert!(round < RETRY_ROUNDS, "writes still rejected after retries");
        pending = Vec::new();
        for (requests, child) in children {
            let output = child.wait_with_output().unwrap();
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert!(
                matches!(output.status.code(), Some(0 | 1)),
                "a host failed ({:?}): {stderr}",
                output.status
            );
            let lines: Vec<serde_json::Value> = String::from_utf8(output.stdout)
                .unwrap()
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
            assert_eq!(lines.len(), requests.len(), "one answer per request");
            let mut again = Vec::new();
            for ((request_id, ts), answer) in requests.into_iter().zip(lines) {
                match answer["ACCEPTED"]["stored_id"].as_str() {
                    Some(id) => answers
                        .entry(request_id)
                        .or_default()
                        .push(Some(id.to_owned())),
                    None => {
                        assert_eq!(answer, serde_json::json!("REJECTED"));
                        answers.entry(request_id.clone()).or_default().push(None);
                        again.push((request_id, ts));
                    }
                }
            }
            retried += again.len();
            pending.push(again);
        }
    }
    unreachable!("the last round asserts")
}

/// Checks the answers and the store after the hosts are done: every
/// request stored exactly once under one id, no id given twice.
fn check(
    answers: &Answers,
    own: usize,
    must_interleave: bool,
    backend: Arc<dyn Backend>,
    audit: Arc<dyn AuditSink>,
) {
    let expected = HOSTS * own + SHARED;
    assert_eq!(answers.len(), expected);
    // IO-W2: a request id sent to several hosts at once names one id
    // in every ACCEPTED answer.
    let mut id_of = BTreeMap::new();
    for (request_id, got) in answers {
        let ids: BTreeSet<&String> = got.iter().flatten().collect();
        assert_eq!(
            ids.len(),
            1,
            "{request_id} was answered with {got:?}: exactly one id"
        );
        id_of.insert(request_id.clone(), ids.into_iter().next().unwrap().clone());
    }
    for i in 0..SHARED {
        let got = &answers[&format!("shared-{i}")];
        assert_eq!(
            got.len() - got.iter().filter(|a| a.is_none()).count(),
            HOSTS
        );
    }
    // IO-W2: no id is handed out twice.
    let distinct: BTreeSet<&String> = id_of.values().collect();
    assert_eq!(
        distinct.len(),
        expected,
        "every request has an id of its own"
    );

    // No write lost: the store holds exactly these records, each one the
    // record its request carried.
    let engram = Engram::with_config(Config {
        read_limit_ceiling: 1000,
        ..Config::default()
    })
    .unwrap();
    let mut domain = engram
        .open(AGENT, Mode::Online, backend, audit.clone())
        .unwrap();
    let stored = domain
        .read(&read(RecordType::Event, limit(1000)))
        .unwrap()
        .unwrap()
        .records;
    assert_eq!(stored.len(), expected, "one record per request, no more");
    let by_id: BTreeMap<String, String> = stored
        .iter()
        .map(|r| match r {
            StoredRecord::Event(e) => match &e.payload {
                StoredEventPayload::Ingested(m) => (e.id.clone(), m.summary.clone()),
                other => panic!("not an ingested memory: {other:?}"),
            },
            other => panic!("not an event: {other:?}"),
        })
        .collect();
    for (request_id, id) in &id_of {
        assert_eq!(
            by_id.get(id),
            Some(&format!("note {request_id}")),
            "{id} holds the record of {request_id}"
        );
    }

    // The trail agrees: one ACCEPTED per request id, the rest REPLAYED.
    let trail = audit
        .trail(&AuditQuery {
            agent: Some(AGENT.into()),
            operation: Some(engram::audit::Operation::Write),
            limit: 100_000,
            ..AuditQuery::default()
        })
        .unwrap();
    let mut accepted: BTreeMap<&str, usize> = BTreeMap::new();
    for entry in &trail {
        if entry.outcome == engram::audit::Outcome::Accepted {
            *accepted.entry(entry.request_id.as_str()).or_default() += 1;
            assert_eq!(entry.stored_id.as_ref(), Some(&id_of[&entry.request_id]));
        }
    }
    assert_eq!(accepted.len(), expected);
    assert!(accepted.values().all(|&n| n == 1), "{accepted:?}");
    // The hosts really wrote at the same time: their writes interleave in
    // the trail rather than follow one another host by host. (SQLite's
    // lock lets one process keep writing while the others back off, so
    // there they may not.)
    let hosts_in_order: Vec<&str> = trail
        .iter()
        .filter(|e| e.outcome == engram::audit::Outcome::Accepted)
        .filter_map(|e| e.request_id.split_once('-').map(|(host, _)| host))
        .filter(|host| host.starts_with("host"))
        .collect();
    let switches = hosts_in_order.windows(2).filter(|w| w[0] != w[1]).count();
    eprintln!("{switches} switches between hosts in the trail");
    assert!(
        !must_interleave || switches >= 2 * HOSTS,
        "the hosts' writes barely overlap ({switches} switches)"
    );
    let replayed = trail
        .iter()
        .filter(|e| e.outcome == engram::audit::Outcome::Replayed)
        .count();
    assert_eq!(replayed, (HOSTS - 1) * SHARED);
}

postgres_test! {
    fn io_w2_io_w8_hosts_sharing_one_postgres_domain_lose_nothing_and_share_no_id() {
        // proves IO-W2, IO-W8, IO-W6 across hosts: four processes, one domain,
        // one PostgreSQL schema.
        let url = required_postgres_url();
        let help = Command::new(engram_bin()).arg("--help").output().unwrap();
        assert!(
            String::from_utf8_lossy(&help.stdout).contains("postgres://"),
            "{} is not a build that opens PostgreSQL",
            engram_bin()
        );
        let schema = PgSchema::fresh(&url, "multihost");
        let mut answers = Answers::new();
        let retried = run_hosts(&schema.store_url(), OWN_POSTGRES, &mut answers);
        eprintln!("postgres: {retried} writes were REJECTED under contention and retried");
        let store = schema.backend();
        check(&answers, OWN_POSTGRES, true, store.clone(), store);
    }
}

#[test]
fn io_w2_io_w8_hosts_sharing_one_sqlite_file_lose_nothing_and_share_no_id() {
    // proves IO-W2, IO-W8 across processes on one SQLite file
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.db");
    let mut answers = Answers::new();
    let retried = run_hosts(path.to_str().unwrap(), OWN_SQLITE, &mut answers);
    eprintln!("sqlite: {retried} writes were REJECTED under contention and retried");
    let store = Arc::new(SqliteBackend::open(&path).unwrap());
    check(&answers, OWN_SQLITE, false, store.clone(), store);
}

postgres_test! {
    fn hosts_on_different_domains_of_one_schema_see_only_their_own() {
        // proves IO-W6 across hosts: two processes, two agents, one schema.
        let url = required_postgres_url();
        let schema = PgSchema::fresh(&url, "multihost");
        let store = schema.store_url();
        let children: Vec<_> = ["alice", "bob"]
            .iter()
            .map(|agent| {
                let mut child = Command::new(engram_bin())
                    .env_remove("ENGRAM_STORE")
                    .env_remove("ENGRAM_AGENT")
                    .args(["--store", &store, "write", "--agent", agent, "--batch"])
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap();
                let lines: String = (0..10)
                    .map(|i| {
                        serde_json::json!({
                            "request_id": format!("r{i}"),
                            "source": {"agent_id": agent, "component": "COGNITION", "actor": "USER"},
                            "record": {"record_type": "STATE", "timestamp": i,
                                "payload": {"subject": format!("{agent}.state"), "properties": {"i": i}}}
                        })
                        .to_string()
                            + "\n"
                    })
                    .collect();
                child
                    .stdin
                    .take()
                    .unwrap()
                    .write_all(lines.as_bytes())
                    .unwrap();
                child
            })
            .collect();
        for child in children {
            let output = child.wait_with_output().unwrap();
            assert!(
                output.status.success(),
                "{}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        let backend = schema.backend();
        for agent in ["alice", "bob"] {
            let mut domain = engram()
                .open(agent, Mode::Online, backend.clone(), backend.clone())
                .unwrap();
            let states = records(&mut domain, RecordType::State, latest(50));
            assert_eq!(states.len(), 10, "{agent}");
            for record in states {
                let StoredRecord::State(s) = record else {
                    panic!("not a state")
                };
                assert_eq!(s.state.payload.subject, format!("{agent}.state"));
            }
        }
    }
}

/// Runs `engram --store STORE audit` and checks it fails with exit 4 and
/// one line that says `says`.
fn refused_store(store: &str, says: &str) {
    let output = Command::new(engram_bin())
        .env_remove("ENGRAM_STORE")
        .args(["--store", store, "audit"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(4), "{store}: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{store}: {stderr}");
    assert!(stderr.contains(says), "{store}: {stderr}");
    assert!(output.stdout.is_empty());
}

#[test]
fn a_malformed_or_unknown_store_url_is_refused_with_exit_4_and_one_line() {
    let cases = [
        (
            "postgres://postgres@127.0.0.1:notaport/test".to_owned(),
            "not a valid PostgreSQL URL",
        ),
        (
            "postgres://postgres@127.0.0.1:5432/test?no_such_option=1".to_owned(),
            "not a valid PostgreSQL URL",
        ),
        (
            "mysql://root@127.0.0.1/test".to_owned(),
            "not a kind of store",
        ),
    ];
    for (store, says) in cases {
        refused_store(&store, says);
    }
}

postgres_test! {
    fn a_store_url_naming_a_schema_engram_does_not_use_is_refused() {
        let url = required_postgres_url();
        let separator = if url.contains('?') { '&' } else { '?' };
        refused_store(
            &format!("{url}{separator}options=-csearch_path%3DBad-Name"),
            "not a schema name Engram uses",
        );
    }
}

/// Eight host processes write 60 records each to one domain of `store` at
/// once: every write is ACCEPTED, none under an id given twice.
fn eight_writers_queue(store: &str, label: &str) {
    // Create the store once, before the hosts start together.
    let first = spawn_host(store, &[("warm".to_string(), 1)])
        .wait_with_output()
        .unwrap();
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let per_host = 60;
    let started = std::time::Instant::now();
    let children: Vec<_> = (0..8)
        .map(|h| {
            let requests: Vec<(String, i64)> = (0..per_host)
                .map(|i| (format!("q{h}-{i}"), 100_000 + (h * 1000 + i) as i64))
                .collect();
            spawn_host(store, &requests)
        })
        .collect();
    let mut accepted = std::collections::HashSet::new();
    for child in children {
        let output = child.wait_with_output().unwrap();
        assert_eq!(
            output.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        for line in String::from_utf8(output.stdout).unwrap().lines() {
            let answer: serde_json::Value = serde_json::from_str(line).unwrap();
            let id = answer["ACCEPTED"]["stored_id"].as_str().expect("ACCEPTED");
            assert!(accepted.insert(id.to_owned()), "{id} given twice");
        }
    }
    assert_eq!(accepted.len(), 8 * per_host);
    eprintln!(
        "{label}, 8 writers on one domain: {} writes in {:?}",
        accepted.len(),
        started.elapsed()
    );
}

postgres_test! {
    fn io_w8_eight_postgres_writers_of_one_domain_queue_and_none_is_rejected() {
        // proves IO-W8, IO-G1: contention alone rejects nothing: the writers of
        // one domain take turns (an advisory lock per domain) instead of losing
        // races.
        let url = required_postgres_url();
        let schema = PgSchema::fresh(&url, "queue");
        eight_writers_queue(&schema.store_url(), "postgres");
    }
}

#[test]
fn io_w8_eight_sqlite_writers_of_one_domain_queue_and_none_is_rejected() {
    // proves IO-W8, IO-G1 on one SQLite file: the writers of a domain take
    // turns (a byte of the trail file locked per domain).
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("queue.db");
    eight_writers_queue(path.to_str().unwrap(), "sqlite");
}
