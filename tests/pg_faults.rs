//! PostgreSQL going away under a host: a TCP proxy between the backend and
//! the server severs every connection at a chosen moment of a commit, then
//! lets the next connection through. A batch is applied whole or not at
//! all, the call answers an error within a bound instead of hanging, and the
//! next call on the same backend and the same domain works.
//!
//! And the schema a host finds: created once by hosts starting together,
//! refused when it is newer or not Engram's, keys in byte order on an index.

mod support;

use engram::backend::{Op, Precondition, StoreError};
use engram::io::WriteResult;
use engram::types::*;
use engram::{Backend, Mode, PostgresBackend, PostgresOptions};
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::*;

/// The longest a call may take to give up when the server is gone.
const BOUND: Duration = Duration::from_secs(10);

/// The simple-query message `COMMIT` as the backend sends it.
const COMMIT: &[u8] = b"Q\0\0\0\x0bCOMMIT\0";

/// What the proxy does with the next `COMMIT` it sees.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
enum Trap {
    /// Passes everything through.
    None = 0,
    /// Severs every connection instead of forwarding the `COMMIT`: the
    /// server saw the transaction's statements but never its end.
    BeforeCommit = 1,
    /// Forwards the `COMMIT`, drops the server's answer, then severs every
    /// connection: the transaction is committed, the host never hears so.
    AfterCommit = 2,
    /// Answered a `COMMIT` of `AfterCommit`; severing.
    Severing = 3,
    /// Closes every connection it accepts: the server is unreachable.
    Refuse = 4,
}

/// A TCP proxy in front of the test database.
struct Proxy {
    port: u16,
    trap: Arc<AtomicU8>,
    live: Arc<Mutex<Vec<TcpStream>>>,
}

impl Proxy {
    fn start(upstream: (String, u16)) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let trap = Arc::new(AtomicU8::new(Trap::None as u8));
        let live: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let (t, l) = (trap.clone(), live.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                if t.load(Ordering::SeqCst) == Trap::Refuse as u8 {
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                }
                let Ok(server) = TcpStream::connect((upstream.0.as_str(), upstream.1)) else {
                    continue;
                };
                {
                    let mut live = l.lock().unwrap();
                    live.push(client.try_clone().unwrap());
                    live.push(server.try_clone().unwrap());
                }
                let (t1, l1) = (t.clone(), l.clone());
                let (c1, s1) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                std::thread::spawn(move || pump_to_server(c1, s1, &t1, &l1));
                let (t2, l2) = (t.clone(), l.clone());
                std::thread::spawn(move || pump_to_client(server, client, &t2, &l2));
            }
        });
        Proxy { port, trap, live }
    }

    fn arm(&self, trap: Trap) {
        self.trap.store(trap as u8, Ordering::SeqCst);
    }

    fn trap(&self) -> Trap {
        match self.trap.load(Ordering::SeqCst) {
            0 => Trap::None,
            1 => Trap::BeforeCommit,
            2 => Trap::AfterCommit,
            3 => Trap::Severing,
            _ => Trap::Refuse,
        }
    }
}

/// Closes every connection the proxy holds, both ways.
fn sever(live: &Mutex<Vec<TcpStream>>) {
    for stream in live.lock().unwrap().drain(..) {
        let _ = stream.shutdown(Shutdown::Both);
    }
}

fn pump_to_server(
    mut from: TcpStream,
    mut to: TcpStream,
    trap: &AtomicU8,
    live: &Mutex<Vec<TcpStream>>,
) {
    let mut buffer = [0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let chunk = &buffer[..n];
        let is_commit = chunk.windows(COMMIT.len()).any(|w| w == COMMIT);
        if is_commit {
            let armed = trap.load(Ordering::SeqCst);
            if armed == Trap::BeforeCommit as u8 {
                trap.store(Trap::None as u8, Ordering::SeqCst);
                sever(live);
                break;
            }
            if armed == Trap::AfterCommit as u8 {
                // The answer is dropped by the other pump, which then severs.
                trap.store(Trap::Severing as u8, Ordering::SeqCst);
            }
        }
        if to.write_all(chunk).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Both);
    let _ = from.shutdown(Shutdown::Both);
}

fn pump_to_client(
    mut from: TcpStream,
    mut to: TcpStream,
    trap: &AtomicU8,
    live: &Mutex<Vec<TcpStream>>,
) {
    let mut buffer = [0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if trap.load(Ordering::SeqCst) == Trap::Severing as u8 {
            // The server has answered the COMMIT: it is done. Drop it.
            trap.store(Trap::None as u8, Ordering::SeqCst);
            sever(live);
            break;
        }
        if to.write_all(&buffer[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Both);
    let _ = from.shutdown(Shutdown::Both);
}

/// The test database's host and port, and a fresh schema in it.
struct Setup {
    schema: PgSchema,
    proxy: Proxy,
    backend: Arc<PostgresBackend>,
}

fn setup() -> Setup {
    let url = required_postgres_url();
    let config: postgres::Config = url.parse().expect("a valid test URL");
    let host = match &config.get_hosts()[0] {
        postgres::config::Host::Tcp(host) => host.clone(),
        other => panic!("the fault tests need a TCP host, not {other:?}"),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let proxy = Proxy::start((host.clone(), port));
    let schema = PgSchema::fresh(&url, "faults");
    // The same database, through the proxy, under a name of its own so an
    // administrator can find this backend's sessions.
    let user = config.get_user().unwrap_or("postgres");
    let dbname = config.get_dbname().unwrap_or(user);
    let proxied = format!(
        "postgres://{user}@127.0.0.1:{}/{dbname}?application_name={}",
        proxy.port, schema.name
    );
    let backend = Arc::new(
        PostgresBackend::open_with(
            &proxied,
            &PostgresOptions {
                schema: Some(schema.name.clone()),
                connect_timeout: Duration::from_secs(2),
                ..PostgresOptions::default()
            },
        )
        .expect("the store opens through the proxy"),
    );
    Setup {
        schema,
        proxy,
        backend,
    }
}

fn batch(tag: &str, n: usize) -> (Vec<Precondition>, Vec<Op>) {
    let key = |i: usize| format!("{tag}/{i:04}").into_bytes();
    let preconditions = vec![Precondition::Absent(key(0))];
    let ops = (0..n)
        .map(|i| Op::Put(key(i), vec![i as u8; 100]))
        .collect();
    (preconditions, ops)
}

/// How many keys of the batch `tag` the server holds, read beside the
/// backend on a connection of its own.
fn stored(schema: &PgSchema, tag: &str) -> i64 {
    let mut client = schema.connect();
    client
        .query_one(
            &format!(
                "SELECT count(*) FROM {}.engram_kv WHERE key >= $1 AND key < $2",
                schema.name
            ),
            &[
                &format!("{tag}/").into_bytes(),
                &format!("{tag}0").into_bytes(),
            ],
        )
        .unwrap()
        .get(0)
}

fn timed<T>(call: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let value = call();
    assert!(
        start.elapsed() < BOUND,
        "the call took {:?}: it must give up within {BOUND:?}",
        start.elapsed()
    );
    value
}

postgres_test! {
    fn a_commit_cut_off_before_commit_leaves_nothing_and_the_next_call_reconnects() {
        let s = setup();
        let (preconditions, ops) = batch("cut", 200);
        s.proxy.arm(Trap::BeforeCommit);
        let result = timed(|| s.backend.commit(&preconditions, &ops));
        assert!(
            matches!(result, Err(StoreError::Unavailable(_))),
            "{result:?}"
        );
        assert_eq!(s.proxy.trap(), Trap::None, "the proxy saw the COMMIT");
        assert_eq!(stored(&s.schema, "cut"), 0, "none of the batch");
        // The same backend, no restart: it connects again and the batch goes in.
        assert_eq!(s.backend.get(b"cut/0000"), Ok(None));
        s.backend.commit(&preconditions, &ops).unwrap();
        assert_eq!(stored(&s.schema, "cut"), 200, "all of the batch");
    }
}

postgres_test! {
    fn a_commit_whose_answer_is_lost_is_whole_and_reported_unavailable() {
        let s = setup();
        let (preconditions, ops) = batch("lost", 200);
        s.proxy.arm(Trap::AfterCommit);
        let result = timed(|| s.backend.commit(&preconditions, &ops));
        assert!(
            matches!(result, Err(StoreError::Unavailable(_))),
            "{result:?}"
        );
        assert_eq!(s.proxy.trap(), Trap::None, "the proxy dropped the answer");
        assert_eq!(stored(&s.schema, "lost"), 200, "all of the batch");
        // Retrying the same commit now fails its precondition: nothing twice.
        assert_eq!(
            s.backend.commit(&preconditions, &ops),
            Err(StoreError::Conflict)
        );
        assert_eq!(s.backend.get(b"lost/0199"), Ok(Some(vec![199; 100])));
    }
}

postgres_test! {
    fn io_w2_a_write_cut_off_mid_commit_is_rejected_and_its_retry_stores_it_once() {
        // proves IO-W2, IO-G1 when the server goes away: the real component over
        // the PostgreSQL backend, one domain kept open across the faults.
        let s = setup();
        let mut domain = engram()
            .open("alice", Mode::Online, s.backend.clone(), s.backend.clone())
            .unwrap();
        let first = request("alice", "w-1", ingested(1, "Flight to Lisbon"));
        let second = request("alice", "w-2", ingested(2, "Hotel in Porto"));

        // Cut before COMMIT: nothing is stored, the write is REJECTED.
        s.proxy.arm(Trap::BeforeCommit);
        assert_eq!(
            timed(|| domain.write(&first).unwrap()),
            WriteResult::Rejected
        );
        assert_eq!(s.proxy.trap(), Trap::None);
        assert!(records(&mut domain, RecordType::Event, limit(10)).is_empty());
        // The retry on the same domain stores it.
        let WriteResult::Accepted(first_id) = domain.write(&first).unwrap() else {
            panic!("the retry is accepted")
        };

        // COMMIT applied, answer lost: REJECTED, yet stored; the retry with the
        // same request id finds it and answers its id (IO-W2), storing nothing.
        s.proxy.arm(Trap::AfterCommit);
        assert_eq!(
            timed(|| domain.write(&second).unwrap()),
            WriteResult::Rejected
        );
        assert_eq!(s.proxy.trap(), Trap::None);
        let WriteResult::Accepted(second_id) = domain.write(&second).unwrap() else {
            panic!("the retry is accepted")
        };
        assert_ne!(first_id, second_id);
        let events = records(&mut domain, RecordType::Event, limit(10));
        assert_eq!(ids(&events), vec![first_id, second_id.clone()]);
        let outcomes: Vec<_> = fx_trail(&s)
            .into_iter()
            .filter(|e| e.request_id == "w-2")
            .map(|e| e.outcome)
            .collect();
        use engram::audit::Outcome::*;
        // proves IO-W8: the commit that applied carried its ACCEPTED entry,
        // although the answer was lost and REJECTED; the retry is REPLAYED.
        assert_eq!(outcomes, vec![Accepted, Rejected, Replayed]);
    }
}

postgres_test! {
    fn an_unreachable_server_fails_calls_quickly_and_a_returning_one_serves_again() {
        let s = setup();
        let mut domain = engram()
            .open("bob", Mode::Online, s.backend.clone(), s.backend.clone())
            .unwrap();
        accept(&mut domain, "b-1", state(1, "mission.current"));
        s.proxy.arm(Trap::Refuse);
        sever(&s.proxy.live);
        // The backend answers Unavailable, quickly, for every kind of call.
        assert!(matches!(
            timed(|| s.backend.get(b"x")),
            Err(StoreError::Unavailable(_))
        ));
        let (preconditions, ops) = batch("down", 3);
        assert!(matches!(
            timed(|| s.backend.commit(&preconditions, &ops)),
            Err(StoreError::Unavailable(_))
        ));
        // Through the engine, the call fails (its audit entry cannot be kept)
        // rather than hang.
        let write = request("bob", "b-2", state(2, "mission.current"));
        assert!(timed(|| domain.write(&write)).is_err());
        // The server is back: the same backend serves again, no restart.
        s.proxy.arm(Trap::None);
        assert_eq!(s.backend.get(b"x"), Ok(None));
        let mut domain = engram()
            .open("bob", Mode::Online, s.backend.clone(), s.backend.clone())
            .unwrap();
        accept(&mut domain, "b-2", state(2, "mission.current"));
        assert_eq!(records(&mut domain, RecordType::State, latest(10)).len(), 2);
    }
}

postgres_test! {
    fn a_session_the_server_ends_is_replaced_on_the_next_call() {
        let s = setup();
        let mut domain = engram()
            .open("carol", Mode::Online, s.backend.clone(), s.backend.clone())
            .unwrap();
        accept(&mut domain, "c-1", state(1, "mission.current"));
        // An administrator ends this backend's session.
        let mut admin = s.schema.connect();
        let ended: i64 = admin
            .query_one(
                "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                  WHERE application_name = $1) t",
                &[&s.schema.name],
            )
            .unwrap()
            .get(0);
        assert!(ended >= 1);
        // The first call finds the session gone; the one after reconnects.
        let first = s.backend.get(b"y");
        assert!(
            matches!(first, Err(StoreError::Unavailable(_))),
            "{first:?}"
        );
        assert_eq!(s.backend.get(b"y"), Ok(None));
        accept(&mut domain, "c-2", state(2, "mission.current"));
        assert_eq!(records(&mut domain, RecordType::State, latest(10)).len(), 2);
    }
}

fn fx_trail(s: &Setup) -> Vec<engram::AuditEntry> {
    use engram::AuditSink;
    s.backend
        .trail(&engram::AuditQuery {
            limit: 1000,
            ..engram::AuditQuery::default()
        })
        .unwrap()
}

// ---- the schema -------------------------------------------------------------------

postgres_test! {
    fn hosts_opening_a_new_schema_at_once_create_it_once() {
        let url = required_postgres_url();
        let schema = PgSchema::fresh(&url, "schema");
        let opened: Vec<_> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..4)
                .map(|_| scope.spawn(|| PostgresBackend::open_with(&url, &schema.options())))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for backend in &opened {
            assert_eq!(
                backend.as_ref().map(|b| b.schema()).ok(),
                Some(schema.name.as_str())
            );
        }
        let versions: Vec<i32> = schema
            .connect()
            .query(
                &format!("SELECT version FROM {}.engram_schema", schema.name),
                &[],
            )
            .unwrap()
            .iter()
            .map(|row| row.get(0))
            .collect();
        assert_eq!(versions, vec![engram::backend::POSTGRES_SCHEMA_VERSION]);
    }
}

postgres_test! {
    fn a_schema_of_version_1_is_upgraded_keeping_its_trail_and_then_names_callers() {
        use engram::AuditSink;
        let url = required_postgres_url();
        let schema = PgSchema::fresh(&url, "schema");
        let backend = PostgresBackend::open_with(&url, &schema.options()).unwrap();
        let mut entry = engram::AuditEntry {
            at: 1,
            agent_id: "alice".into(),
            request_id: "old".into(),
            operation: engram::audit::Operation::Read,
            source: None,
            record_type: None,
            outcome: engram::audit::Outcome::Returned,
            stored_id: None,
            count: Some(0),
            reason: None,
            caller: None,
        };
        backend.append(&entry).unwrap();
        drop(backend);
        // Version 1 had no `caller` in the trail.
        schema
            .connect()
            .batch_execute(&format!(
                "ALTER TABLE {0}.engram_audit DROP COLUMN caller; UPDATE {0}.engram_schema SET version = 1",
                schema.name
            ))
            .unwrap();
        let backend = PostgresBackend::open_with(&url, &schema.options()).unwrap();
        entry.request_id = "new".into();
        entry.caller = Some("alice-app".into());
        backend.append(&entry).unwrap();
        let trail = backend
            .trail(&engram::AuditQuery::default())
            .unwrap()
            .into_iter()
            .map(|e| (e.request_id, e.caller))
            .collect::<Vec<_>>();
        assert_eq!(
            trail,
            [("old".into(), None), ("new".into(), Some("alice-app".into()))]
        );
        let version: i32 = schema
            .connect()
            .query_one(
                &format!("SELECT version FROM {}.engram_schema", schema.name),
                &[],
            )
            .unwrap()
            .get(0);
        assert_eq!(version, engram::backend::POSTGRES_SCHEMA_VERSION);
    }
}

postgres_test! {
    fn a_schema_of_a_newer_version_is_refused_and_left_untouched() {
        let url = required_postgres_url();
        let schema = PgSchema::fresh(&url, "schema");
        let backend = PostgresBackend::open_with(&url, &schema.options()).unwrap();
        backend
            .commit(&[], &[Op::Put(b"k".to_vec(), b"v".to_vec())])
            .unwrap();
        drop(backend);
        let mut admin = schema.connect();
        admin
            .batch_execute(&format!(
                "UPDATE {}.engram_schema SET version = 99",
                schema.name
            ))
            .unwrap();
        let error = PostgresBackend::open_with(&url, &schema.options())
            .err()
            .expect("a newer schema is refused");
        let message = format!("{error:#}");
        assert!(message.contains("schema version 99"), "{message}");
        let kept: i64 = admin
            .query_one(
                &format!("SELECT count(*) FROM {}.engram_kv", schema.name),
                &[],
            )
            .unwrap()
            .get(0);
        assert_eq!(kept, 1);
    }
}

postgres_test! {
    fn a_schema_holding_tables_of_another_program_is_refused() {
        let url = required_postgres_url();
        let schema = PgSchema::fresh(&url, "schema");
        schema
            .connect()
            .batch_execute(&format!(
                "CREATE SCHEMA {0}; CREATE TABLE {0}.engram_kv (id integer)",
                schema.name
            ))
            .unwrap();
        let message = format!(
            "{:#}",
            PostgresBackend::open_with(&url, &schema.options())
                .err()
                .expect("refused")
        );
        assert!(message.contains("not an Engram store"), "{message}");
    }
}

postgres_test! {
    fn scans_go_in_byte_order_on_the_primary_key_index() {
        let url = required_postgres_url();
        let schema = PgSchema::fresh(&url, "schema");
        let backend = PostgresBackend::open_with(&url, &schema.options()).unwrap();
        // Bytes a collation or a signed comparison would misorder.
        let keys: Vec<Vec<u8>> = vec![
            vec![b'a', 0x00],
            vec![b'a', 0x00, 0x00],
            vec![b'a', 0x01],
            vec![b'a', 0x7f],
            vec![b'a', 0x80],
            vec![b'a', 0xc3, 0xa9],
            vec![b'a', 0xff],
            vec![b'a', 0xff, 0x00],
        ];
        let mut shuffled = keys.clone();
        shuffled.reverse();
        let ops: Vec<Op> = shuffled
            .iter()
            .map(|k| Op::Put(k.clone(), k.clone()))
            .collect();
        backend.commit(&[], &ops).unwrap();
        let ascending = backend
            .scan(b"a", b"b", 100, engram::backend::Order::Ascending)
            .unwrap();
        assert_eq!(
            ascending.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>(),
            keys
        );
        let descending = backend
            .scan(b"a", b"b", 3, engram::backend::Order::Descending)
            .unwrap();
        let mut last_three = keys[keys.len() - 3..].to_vec();
        last_three.reverse();
        assert_eq!(
            descending
                .iter()
                .map(|(k, _)| k.clone())
                .collect::<Vec<_>>(),
            last_three
        );
        // The range's end is excluded, its start included.
        let window = backend
            .scan(&keys[1], &keys[4], 100, engram::backend::Order::Ascending)
            .unwrap();
        assert_eq!(window.len(), 3);

        // With a real amount of data, a bounded scan reads the index, not the table.
        let many: Vec<Op> = (0..20_000u32)
            .map(|i| Op::Put([b"z".as_slice(), &i.to_be_bytes()].concat(), vec![1; 50]))
            .collect();
        backend.commit(&[], &many).unwrap();
        let mut admin = schema.connect();
        admin
            .batch_execute(&format!("ANALYZE {}.engram_kv", schema.name))
            .unwrap();
        let plan: Vec<String> = admin
            .query(
                &format!(
                    "EXPLAIN SELECT key, value FROM {}.engram_kv WHERE key >= $1 AND key < $2
                     ORDER BY key DESC LIMIT 50",
                    schema.name
                ),
                &[&b"z".to_vec(), &b"{".to_vec()],
            )
            .unwrap()
            .iter()
            .map(|row| row.get(0))
            .collect();
        let plan = plan.join("\n");
        assert!(
            plan.contains("Index Scan Backward using engram_kv_pkey"),
            "{plan}"
        );
    }
}
