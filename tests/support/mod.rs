//! What the conformance tests share: one compiled engine, the backends every
//! rule is proven against, fault-injecting and counting wrappers around a
//! real backend, and builders for requests.
#![allow(dead_code)]

pub mod e5;
pub mod javascript;
pub mod python;

use engram::backend::{Order, Pair, Precondition, StoreError};
use engram::graph::PutRequest;
use engram::io::{
    ById, ByKey, ByTimeRange, Latest, Limit, ReadError, ReadRequest, ReadSelector, WriteRequest,
    WriteResult,
};
use engram::types::*;
use engram::{
    AuditEntry, AuditQuery, AuditSink, Backend, Config, Domain, Engram, MemoryAudit, MemoryBackend,
    Mode, PostgresBackend, PostgresOptions, SqliteBackend,
};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock};

/// The read-limit ceiling the tests run with.
pub const CEILING: u32 = 50;

/// The engine, compiled once for every test in a binary.
pub fn engram() -> &'static Engram {
    static ENGRAM: LazyLock<Engram> = LazyLock::new(|| {
        Engram::with_config(Config {
            read_limit_ceiling: CEILING,
            ..Config::default()
        })
        .expect("the engine compiles")
    });
    &ENGRAM
}

/// A store to prove rules against, with the audit trail it keeps.
pub struct Fixture {
    pub name: &'static str,
    pub backend: Arc<dyn Backend>,
    pub audit: Arc<dyn AuditSink>,
    trail: Trail,
    _dir: Option<tempfile::TempDir>,
    _schema: Option<PgSchema>,
}

enum Trail {
    Memory(Arc<MemoryAudit>),
    Sqlite(Arc<SqliteBackend>),
    Postgres(Arc<PostgresBackend>),
}

/// The variable that names the PostgreSQL database the PostgreSQL cases run
/// against.
pub const POSTGRES_URL_VAR: &str = "ENGRAM_TEST_POSTGRES_URL";

/// The PostgreSQL URL to test against, if the variable is set.
pub fn postgres_url() -> Option<String> {
    std::env::var(POSTGRES_URL_VAR)
        .ok()
        .filter(|url| !url.trim().is_empty())
}

/// A schema name no other fixture, test binary or run uses.
pub fn unique_schema(what: &str) -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!(
        "engram_{what}_{}_{}_{nanos}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::SeqCst)
    )
}

/// A schema of the test database, dropped with everything in it when this
/// is dropped.
pub struct PgSchema {
    pub url: String,
    pub name: String,
}

impl PgSchema {
    /// Names a fresh schema; the backend opened on it creates it.
    pub fn fresh(url: &str, what: &str) -> Self {
        PgSchema {
            url: url.to_owned(),
            name: unique_schema(what),
        }
    }

    /// Backend options that put the tables in this schema.
    pub fn options(&self) -> PostgresOptions {
        PostgresOptions {
            schema: Some(self.name.clone()),
            ..PostgresOptions::default()
        }
    }

    /// A backend on this schema, which it creates if absent.
    pub fn backend(&self) -> Arc<PostgresBackend> {
        Arc::new(
            PostgresBackend::open_with(&self.url, &self.options())
                .expect("a PostgreSQL store opens"),
        )
    }

    /// The URL of the database with this schema first on the search path,
    /// for a host that takes only a URL (the CLI).
    pub fn store_url(&self) -> String {
        let separator = if self.url.contains('?') { '&' } else { '?' };
        format!(
            "{}{separator}options=-csearch_path%3D{}",
            self.url, self.name
        )
    }

    /// A direct connection to the database, beside any backend.
    pub fn connect(&self) -> postgres::Client {
        postgres::Client::connect(&self.url, postgres::NoTls).expect("the test database connects")
    }
}

impl Drop for PgSchema {
    fn drop(&mut self) {
        if let Ok(mut client) = postgres::Client::connect(&self.url, postgres::NoTls) {
            let _ = client.batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.name));
        }
    }
}

impl Fixture {
    /// An in-memory store.
    pub fn memory() -> Self {
        let audit = Arc::new(MemoryAudit::new());
        Fixture {
            name: "memory",
            backend: Arc::new(MemoryBackend::new()),
            audit: audit.clone(),
            trail: Trail::Memory(audit),
            _dir: None,
            _schema: None,
        }
    }

    /// A SQLite file in a fresh temporary folder.
    pub fn sqlite() -> Self {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let store =
            Arc::new(SqliteBackend::open(dir.path().join("engram.db")).expect("a new store opens"));
        Fixture {
            name: "sqlite",
            backend: store.clone(),
            audit: store.clone(),
            trail: Trail::Sqlite(store),
            _dir: Some(dir),
            _schema: None,
        }
    }

    /// A PostgreSQL store in a fresh schema of the database `url` names,
    /// dropped with the fixture.
    pub fn postgres(url: &str) -> Self {
        let schema = PgSchema::fresh(url, "test");
        let store = schema.backend();
        Fixture {
            name: "postgres",
            backend: store.clone(),
            audit: store.clone(),
            trail: Trail::Postgres(store),
            _dir: None,
            _schema: Some(schema),
        }
    }

    /// A fresh, empty store of the same backend.
    pub fn another(&self) -> Self {
        match (&self._dir, &self._schema) {
            (Some(_), _) => Fixture::sqlite(),
            (_, Some(schema)) => Fixture::postgres(&schema.url),
            _ => Fixture::memory(),
        }
    }

    /// What another process passes as `--store` to reach this store: the
    /// SQLite file or the PostgreSQL URL; none for an in-memory store.
    pub fn store_spec(&self) -> Option<String> {
        match (&self._dir, &self._schema) {
            (Some(dir), _) => Some(dir.path().join("engram.db").display().to_string()),
            (_, Some(schema)) => Some(schema.store_url()),
            _ => None,
        }
    }

    /// Opens an agent's domain online.
    pub fn open(&self, agent: &str) -> Domain {
        self.open_in(agent, Mode::Online)
    }

    /// Opens an agent's domain in the given mode.
    pub fn open_in(&self, agent: &str, mode: Mode) -> Domain {
        engram()
            .open(agent, mode, self.backend.clone(), self.audit.clone())
            .expect("the domain opens")
    }

    /// Opens an agent's domain over another backend (a wrapper around this
    /// one), keeping this fixture's audit trail.
    pub fn open_over(&self, agent: &str, backend: Arc<dyn Backend>) -> Domain {
        engram()
            .open(agent, Mode::Online, backend, self.audit.clone())
            .expect("the domain opens")
    }

    /// The PostgreSQL schema of a PostgreSQL fixture.
    pub fn schema(&self) -> Option<&PgSchema> {
        self._schema.as_ref()
    }

    /// The folder of a SQLite fixture's file.
    pub fn folder(&self) -> Option<&std::path::Path> {
        self._dir.as_ref().map(|d| d.path())
    }

    /// Forgets `agent`'s domain, as `engram maintenance forget` does: how
    /// many entries went.
    pub fn forget(&self, agent: &str) -> u64 {
        engram::maintenance::forget(
            self.backend.clone(),
            self.audit.as_ref(),
            agent,
            (1, None),
            &mut |_| {},
        )
        .unwrap()
    }

    /// The whole audit trail, oldest first.
    pub fn trail(&self) -> Vec<AuditEntry> {
        let everything = AuditQuery {
            limit: 100_000,
            ..AuditQuery::default()
        };
        match &self.trail {
            Trail::Memory(audit) => audit.entries(),
            Trail::Sqlite(store) => store.audit_trail(&everything).expect("the trail reads"),
            Trail::Postgres(store) => store.trail(&everything).expect("the trail reads"),
        }
    }

    /// Every key-value pair in the store, all domains.
    pub fn dump(&self) -> Vec<Pair> {
        let mut pairs = Vec::new();
        let mut start = Vec::new();
        loop {
            let page = self
                .backend
                .scan(&start, &[0xFF; 64], 1000, Order::Ascending)
                .expect("the store scans");
            let Some((last, _)) = page.last() else { break };
            start = [last.as_slice(), &[0]].concat();
            let done = page.len() < 1000;
            pairs.extend(page);
            if done {
                break;
            }
        }
        pairs
    }
}

/// The key-value pairs of the SQLite store at `path` in key order, read
/// with SQLite alone (whatever the file's schema version, before or after
/// a host opens it).
pub fn file_pairs(path: &std::path::Path) -> Vec<Pair> {
    rusqlite::Connection::open(path)
        .unwrap()
        .prepare("SELECT key, value FROM engram_kv ORDER BY key")
        .unwrap()
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// The PostgreSQL URL a PostgreSQL case runs against. Such a case is marked
/// ignored (and counted so in the harness's summary) when the build saw no
/// `ENGRAM_TEST_POSTGRES_URL`; run anyway, it fails saying what it needs.
pub fn required_postgres_url() -> String {
    postgres_url().unwrap_or_else(|| {
        panic!("this case needs PostgreSQL: set {POSTGRES_URL_VAR}=postgres://postgres@127.0.0.1:5432/test")
    })
}

/// A test that needs PostgreSQL: ignored, and so counted in the summary
/// line of `cargo test`, when the build saw no `ENGRAM_TEST_POSTGRES_URL`
/// (the `engram_no_postgres` cfg of `host/rust/build.rs`).
#[allow(unused_macros)]
macro_rules! postgres_test {
    ($(#[$meta:meta])* fn $name:ident() $body:block) => {
        #[test]
        #[cfg_attr(
            engram_no_postgres,
            ignore = "needs PostgreSQL: set ENGRAM_TEST_POSTGRES_URL"
        )]
        $(#[$meta])*
        fn $name() $body
    };
}
#[allow(unused_imports)]
pub(crate) use postgres_test;

/// One test per backend a rule is proven against: `NAME::memory`,
/// `NAME::sqlite` and `NAME::postgres` (or those listed first), each
/// running the body on a fresh [`Fixture`] of its backend. The PostgreSQL
/// case is a [`postgres_test!`].
#[allow(unused_macros)]
macro_rules! backend_test {
    ($(#[$meta:meta])* fn $name:ident($fx:pat_param) $body:block) => {
        $crate::support::backend_test!([memory, sqlite, postgres] $(#[$meta])* fn $name($fx) $body);
    };
    ([$($backend:ident),+] $(#[$meta:meta])* fn $name:ident($fx:pat_param) $body:block) => {
        $(#[$meta])*
        mod $name {
            // The body sees the test file's names, not the cases' below.
            mod body {
                #[allow(unused_imports)]
                use super::super::*;

                pub fn run($fx: $crate::support::Fixture) $body
            }

            $($crate::support::backend_test!(@case $backend);)+
        }
    };
    (@case memory) => {
        #[test]
        fn memory() {
            body::run($crate::support::Fixture::memory())
        }
    };
    (@case sqlite) => {
        #[test]
        fn sqlite() {
            body::run($crate::support::Fixture::sqlite())
        }
    };
    (@case postgres) => {
        $crate::support::postgres_test! {
            fn postgres() {
                body::run($crate::support::Fixture::postgres(&$crate::support::required_postgres_url()))
            }
        }
    };
}
#[allow(unused_imports)]
pub(crate) use backend_test;

/// What a stalled read does before it reads.
pub type Stall = Arc<dyn Fn() + Send + Sync>;

/// A real backend whose calls can be made to fail, and which counts what it
/// hands out.
pub struct Faulty {
    pub inner: Arc<dyn Backend>,
    /// While set, every read calls it first: a read that blocks, or one
    /// that takes longer than a deadline.
    pub stall_reads: std::sync::Mutex<Option<Stall>>,
    pub fail_reads: AtomicBool,
    pub fail_commits: AtomicBool,
    pub gets: AtomicU64,
    pub scanned: AtomicU64,
    pub largest_scan_limit: AtomicU64,
}

impl Faulty {
    pub fn over(inner: Arc<dyn Backend>) -> Arc<Self> {
        Arc::new(Faulty {
            inner,
            stall_reads: std::sync::Mutex::new(None),
            fail_reads: AtomicBool::new(false),
            fail_commits: AtomicBool::new(false),
            gets: AtomicU64::new(0),
            scanned: AtomicU64::new(0),
            largest_scan_limit: AtomicU64::new(0),
        })
    }

    /// Makes every read call `stall` first, or (`None`) stop.
    pub fn stall(&self, stall: Option<Stall>) {
        *self.stall_reads.lock().unwrap() = stall;
    }

    fn stall_read(&self) {
        let stall = self.stall_reads.lock().unwrap().clone();
        if let Some(stall) = stall {
            stall();
        }
    }

    pub fn reset_counts(&self) {
        self.gets.store(0, Ordering::SeqCst);
        self.scanned.store(0, Ordering::SeqCst);
        self.largest_scan_limit.store(0, Ordering::SeqCst);
    }
}

/// The detail a failing backend reports; it must never reach a caller.
pub const FAULT_DETAIL: &str = "disk I/O error in table engram_kv";

impl Backend for Faulty {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        self.stall_read();
        if self.fail_reads.load(Ordering::SeqCst) {
            return Err(StoreError::Unavailable(FAULT_DETAIL.into()));
        }
        self.gets.fetch_add(1, Ordering::SeqCst);
        self.inner.get(key)
    }

    fn scan(
        &self,
        start: &[u8],
        end: &[u8],
        limit: u32,
        order: Order,
    ) -> Result<Vec<Pair>, StoreError> {
        self.stall_read();
        if self.fail_reads.load(Ordering::SeqCst) {
            return Err(StoreError::Unavailable(FAULT_DETAIL.into()));
        }
        self.largest_scan_limit
            .fetch_max(u64::from(limit), Ordering::SeqCst);
        let pairs = self.inner.scan(start, end, limit, order)?;
        self.scanned.fetch_add(pairs.len() as u64, Ordering::SeqCst);
        Ok(pairs)
    }

    fn commit(
        &self,
        preconditions: &[Precondition],
        ops: &[engram::backend::Op],
    ) -> Result<(), StoreError> {
        if self.fail_commits.load(Ordering::SeqCst) {
            return Err(StoreError::Unavailable(FAULT_DETAIL.into()));
        }
        self.inner.commit(preconditions, ops)
    }

    fn commit_audited(
        &self,
        preconditions: &[Precondition],
        ops: &[engram::backend::Op],
        trail: &[AuditEntry],
        sink: &dyn AuditSink,
    ) -> Result<bool, StoreError> {
        if self.fail_commits.load(Ordering::SeqCst) {
            return Err(StoreError::Unavailable(FAULT_DETAIL.into()));
        }
        self.inner.commit_audited(preconditions, ops, trail, sink)
    }
}

/// Runs the `engram` command on `store` with `args`, `stdin` as its input.
pub fn engram_cli(store: impl AsRef<std::ffi::OsStr>, args: &[&str], stdin: &str) -> Output {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_engram"))
        .env_remove("ENGRAM_STORE")
        .env_remove("ENGRAM_AGENT")
        .arg("--store")
        .arg(store)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let _ = input.write_all(stdin.as_bytes());
    drop(input);
    child.wait_with_output().unwrap()
}

/// Whether `path` exists, after installing Debian's `package` with apt-get
/// (`update`, then `install -y --no-install-recommends`) when it is missing
/// and this process runs as root where apt-get is. The tests that run a
/// tool from Debian's packages take it this way, and fail saying what is
/// missing when it is not there.
pub fn debian_package(path: &str, package: &str) -> bool {
    let root = std::fs::read_to_string("/proc/self/status").is_ok_and(|status| {
        status
            .lines()
            .find_map(|line| line.strip_prefix("Uid:"))
            .and_then(|ids| ids.split_whitespace().nth(1))
            == Some("0")
    });
    let apt = std::path::Path::new("/usr/bin/apt-get");
    if !std::path::Path::new(path).exists() && root && apt.exists() {
        eprintln!(
            "{path} is missing: installing Debian's {package} package (apt-get update; apt-get install -y --no-install-recommends {package})"
        );
        for args in [
            &["update"][..],
            &["install", "-y", "--no-install-recommends", package],
        ] {
            let status = Command::new(apt)
                .args(args)
                .env("DEBIAN_FRONTEND", "noninteractive")
                .status();
            eprintln!("apt-get {}: {status:?}", args.join(" "));
        }
    }
    std::path::Path::new(path).exists()
}

// ---- builders ----------------------------------------------------------------

/// Writes `n` rounds of every kind of record into `agent`'s domain: events
/// of both kinds, states, semantic memories of every tier (three versions
/// per key), procedural rules, entities and relationships.
pub fn populate(domain: &mut Domain, n: usize) {
    let agent = domain.agent_id().to_owned();
    for i in 0..n {
        accept(
            domain,
            &format!("i{i}"),
            ingested(i as i64, "flight to paris"),
        );
        accept(domain, &format!("e{i}"), episode(i as i64, "booking"));
        accept(domain, &format!("s{i}"), state(i as i64, "mission.current"));
        let mut memory = semantic(&format!("note {i}"));
        memory.privacy_tier = [
            PrivacyTier::Public,
            PrivacyTier::Sensitive,
            PrivacyTier::Private,
        ][(i / 3) % 3];
        accept(
            domain,
            &format!("f{i}"),
            MemoryRecord::Fact(Fact {
                key: format!("notes.k{}", i / 3),
                payload: FactPayload::Semantic(memory),
            }),
        );
        accept(
            domain,
            &format!("p{i}"),
            MemoryRecord::Fact(Fact {
                key: format!("rules.r{}", i % 7),
                payload: FactPayload::Procedural(ProceduralRule {
                    agent_type: "travel".into(),
                    rule: format!("rule {i}"),
                    derived_from: vec![],
                    confidence: 0.5,
                    last_validated: i as i64,
                    override_count: 0,
                }),
            }),
        );
        let put = |domain: &mut Domain, namespace: &str, id: String, value: FactPayload| {
            let request = PutRequest {
                namespace: vec![namespace.into(), agent.clone()],
                id: id.clone(),
                value,
                source: source(&agent),
                request_id: format!("put-{namespace}-{id}-{i}"),
            };
            let answer = domain.put(&request).unwrap();
            assert!(
                matches!(answer, WriteResult::Accepted(_)),
                "{}",
                request.request_id
            );
        };
        put(
            domain,
            "entities",
            format!("p{}", i % 50),
            FactPayload::Entity(Entity {
                name: format!("person {i}"),
                entity_type: EntityType::Person,
                properties: format!(r#"{{"seen":{i}}}"#),
                first_seen: 0,
                last_mentioned: i as i64,
                mention_count: i as u64,
                source_memories: vec![],
            }),
        );
        put(
            domain,
            "relationships",
            format!("r{}", i % 40),
            FactPayload::Relationship(Relationship {
                from_entity: format!("entities.{agent}.p{}", i % 50),
                to_entity: format!("entities.{agent}.p{}", (i + 1) % 50),
                relationship_type: "KNOWS".into(),
                valid_at: i as i64,
                invalid_at: None,
                properties: "{}".into(),
                source_memories: vec![],
            }),
        );
    }
}

/// The pairs of one agent's domain, prefix included.
pub fn domain_pairs(fx: &Fixture, agent: &str) -> Vec<Pair> {
    let prefix = [&(agent.len() as u32).to_be_bytes()[..], agent.as_bytes()].concat();
    fx.dump()
        .into_iter()
        .filter(|(key, _)| key.starts_with(&prefix))
        .collect()
}

pub fn source(agent: &str) -> WriteSource {
    WriteSource {
        agent_id: agent.into(),
        component: SourceComponent::Cognition,
        actor: SourceActor::User,
    }
}

pub fn request(agent: &str, request_id: &str, record: MemoryRecord) -> WriteRequest {
    WriteRequest {
        record,
        source: source(agent),
        request_id: request_id.into(),
    }
}

pub fn semantic(content: &str) -> SemanticMemory {
    SemanticMemory {
        content: content.into(),
        context: "dining".into(),
        valid_at: 1_000,
        invalid_at: None,
        strength: 1.0,
        last_accessed: 1_000,
        access_count: 0,
        sources: vec!["episode-1".into()],
        confidence: 0.9,
        contradictions: vec![],
        privacy_tier: PrivacyTier::Sensitive,
    }
}

pub fn fact(key: &str, content: &str) -> MemoryRecord {
    MemoryRecord::Fact(Fact {
        key: key.into(),
        payload: FactPayload::Semantic(semantic(content)),
    })
}

pub fn ingested(timestamp: i64, summary: &str) -> MemoryRecord {
    MemoryRecord::Event(Event {
        timestamp,
        payload: EventPayload::Ingested(IngestedMemory {
            session_ref: "session-1".into(),
            summary: summary.into(),
            keywords: vec!["flight".into(), "paris".into()],
        }),
    })
}

pub fn episode(timestamp: i64, situation: &str) -> MemoryRecord {
    MemoryRecord::Event(Event {
        timestamp,
        payload: EventPayload::Episode(Episode {
            situation: situation.into(),
            reasoning: "compared fares".into(),
            action: "booked the direct flight".into(),
            outcome: Outcome::Success,
            user_feedback: Some("thanks".into()),
            agent_type: "travel".into(),
            mission_id: "mission-7".into(),
            tags: vec!["booking".into(), "flight".into()],
        }),
    })
}

pub fn state(timestamp: i64, subject: &str) -> MemoryRecord {
    MemoryRecord::State(State {
        timestamp,
        payload: StateSnapshot {
            subject: subject.into(),
            properties: r#"{"step":1}"#.into(),
        },
    })
}

pub fn read(record_type: RecordType, selector: ReadSelector) -> ReadRequest {
    ReadRequest {
        record_type,
        selector,
        request_id: "read".into(),
    }
}

pub fn by_id(id: &str) -> ReadSelector {
    ReadSelector::ById(ById { id: id.into() })
}

pub fn by_key(key: &str) -> ReadSelector {
    ReadSelector::ByKey(ByKey { key: key.into() })
}

pub fn range(from: i64, to: i64, limit: u32) -> ReadSelector {
    ReadSelector::ByTimeRange(ByTimeRange { from, to, limit })
}

pub fn latest(limit: u32) -> ReadSelector {
    ReadSelector::Latest(Latest { limit })
}

pub fn limit(limit: u32) -> ReadSelector {
    ReadSelector::Limit(Limit { limit })
}

/// Writes a record and returns its id; panics unless ACCEPTED.
pub fn accept(domain: &mut Domain, request_id: &str, record: MemoryRecord) -> String {
    let agent = domain.agent_id().to_owned();
    match domain
        .write(&request(&agent, request_id, record))
        .expect("the call succeeds")
    {
        WriteResult::Accepted(id) => id,
        WriteResult::Rejected => panic!("write {request_id} was rejected"),
    }
}

/// Reads and returns the records; panics on a refused read.
pub fn records(
    domain: &mut Domain,
    record_type: RecordType,
    selector: ReadSelector,
) -> Vec<StoredRecord> {
    domain
        .read(&read(record_type, selector))
        .expect("the call succeeds")
        .expect("the read is not refused")
        .records
}

/// Reads and returns the typed error; panics if the read succeeded.
pub fn refused(domain: &mut Domain, record_type: RecordType, selector: ReadSelector) -> ReadError {
    match domain
        .read(&read(record_type, selector))
        .expect("the call succeeds")
    {
        Ok(result) => panic!(
            "expected a refused read, got {} records",
            result.records.len()
        ),
        Err(error) => error,
    }
}

pub fn id_of(record: &StoredRecord) -> &str {
    match record {
        StoredRecord::Fact(f) => &f.id,
        StoredRecord::Event(e) => &e.id,
        StoredRecord::State(s) => &s.id,
    }
}

pub fn ids(records: &[StoredRecord]) -> Vec<String> {
    records.iter().map(|r| id_of(r).to_owned()).collect()
}

pub fn timestamp_of(record: &StoredRecord) -> i64 {
    match record {
        StoredRecord::Fact(f) => f.created_at,
        StoredRecord::Event(e) => e.timestamp,
        StoredRecord::State(s) => s.state.timestamp,
    }
}

/// Every item of a maintenance export of the domain, page by page (each
/// page within the read ceiling).
pub fn export_all(domain: &mut Domain) -> Vec<engram::export::ExportedItem> {
    let mut items = Vec::new();
    let mut start = None;
    loop {
        let page = domain
            .export_page(start.as_deref(), CEILING)
            .unwrap()
            .unwrap();
        assert!(page.items.len() <= CEILING as usize);
        items.extend(page.items);
        match page.next {
            Some(next) => start = Some(next),
            None => return items,
        }
    }
}
