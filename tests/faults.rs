//! I/O faults at every operation: for a write, a cycle that persists, a
//! cycle that retrieves, a graph put and a maintenance import, the k-th
//! persistence or audit call fails, for every k. The answer is always the
//! contract's (REJECTED, a typed error, or `Err`), never a panic; nothing
//! partial is stored (the store is exactly as before, or exactly as the
//! same call leaves it without a fault, new record ids aside); and the next
//! call on the same domain is served.

mod support;

use engram::audit::{AuditEntry, AuditQuery, AuditSink};
use engram::backend::{Op, Order, Pair, Precondition, StoreError};
use engram::cycle::{Stage, TurnInput};
use engram::io::WriteResult;
use engram::types::*;
use engram::{Backend, Config, Domain, Engram, MemoryAudit, MemoryBackend, Mode, SqliteBackend};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};
use support::*;

/// A SQLite store whose k-th call (persistence or audit) fails.
struct Countdown {
    inner: Arc<SqliteBackend>,
    calls: AtomicU64,
    fail_at: AtomicU64,
}

impl Countdown {
    fn new(inner: Arc<SqliteBackend>) -> Arc<Self> {
        Arc::new(Countdown {
            inner,
            calls: AtomicU64::new(0),
            fail_at: AtomicU64::new(u64::MAX),
        })
    }

    /// Counts a call; `true` when it is the one to fail.
    fn fails(&self) -> bool {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        n == self.fail_at.load(Ordering::SeqCst)
    }

    fn arm(&self, k: u64) {
        self.calls.store(0, Ordering::SeqCst);
        self.fail_at.store(k, Ordering::SeqCst);
    }

    fn fault() -> StoreError {
        StoreError::Unavailable("injected I/O error".into())
    }
}

impl Backend for Countdown {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        if self.fails() {
            return Err(Self::fault());
        }
        self.inner.get(key)
    }

    fn get_many(&self, keys: &[Vec<u8>]) -> Result<Vec<Option<Vec<u8>>>, StoreError> {
        if self.fails() {
            return Err(Self::fault());
        }
        self.inner.get_many(keys)
    }

    fn scan(
        &self,
        start: &[u8],
        end: &[u8],
        limit: u32,
        order: Order,
    ) -> Result<Vec<Pair>, StoreError> {
        if self.fails() {
            return Err(Self::fault());
        }
        self.inner.scan(start, end, limit, order)
    }

    fn commit(&self, preconditions: &[Precondition], ops: &[Op]) -> Result<(), StoreError> {
        if self.fails() {
            return Err(Self::fault());
        }
        self.inner.commit(preconditions, ops)
    }

    fn commit_audited(
        &self,
        preconditions: &[Precondition],
        ops: &[Op],
        trail: &[AuditEntry],
        _sink: &dyn AuditSink,
    ) -> Result<bool, StoreError> {
        if self.fails() {
            return Err(Self::fault());
        }
        // The trail is the inner store's own: one transaction.
        self.inner
            .commit_audited(preconditions, ops, trail, self.inner.as_ref())
    }
}

impl AuditSink for Countdown {
    fn append(&self, entry: &AuditEntry) -> anyhow::Result<()> {
        if self.fails() {
            anyhow::bail!("injected I/O error on the audit trail");
        }
        self.inner.append(entry)
    }

    fn trail(&self, query: &AuditQuery) -> anyhow::Result<Vec<AuditEntry>> {
        self.inner.trail(query)
    }
}

/// The engine these cases run on: a clock that stands still, so that a
/// call run twice stores the same times.
fn engine() -> &'static Engram {
    static ENGRAM: LazyLock<Engram> = LazyLock::new(|| {
        Engram::with_config(Config {
            read_limit_ceiling: CEILING,
            clock: Arc::new(|| 1_767_225_600_000),
            ..Config::default()
        })
        .expect("the engine compiles")
    });
    &ENGRAM
}

/// Every pair of the store.
fn dump(store: &dyn Backend) -> Vec<Pair> {
    store
        .scan(&[], &[0xff; 8], 100_000, Order::Ascending)
        .unwrap()
}

/// The ids of the records (`R` entries) in `pairs`.
fn record_ids(pairs: &[Pair]) -> Vec<Vec<u8>> {
    let prefix = engram::backend::domain_prefix("alice");
    pairs
        .iter()
        .filter_map(|(key, _)| key.strip_prefix(prefix.as_slice()))
        .filter_map(|key| key.strip_prefix(b"R"))
        .map(<[u8]>::to_vec)
        .collect()
}

/// `pairs` with the id of the one record `before` does not hold (a
/// random id, different in every run) written as `NEW-ID` wherever it
/// appears; `pairs` as they are when every record is in `before` or the
/// new ones are named by the call itself (an import).
fn new_id_named(pairs: Vec<Pair>, before: &[Pair], other: &[Pair]) -> Vec<Pair> {
    let old = record_ids(before);
    let theirs = record_ids(other);
    let new: Vec<Vec<u8>> = record_ids(&pairs)
        .into_iter()
        .filter(|id| !old.contains(id) && !theirs.contains(id))
        .collect();
    let [id] = new.as_slice() else {
        return pairs;
    };
    let replace = |bytes: &[u8]| -> Vec<u8> {
        let mut out = Vec::with_capacity(bytes.len());
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i..].starts_with(id) {
                out.extend_from_slice(b"NEW-ID");
                i += id.len();
            } else {
                out.push(bytes[i]);
                i += 1;
            }
        }
        out
    };
    let mut named: Vec<Pair> = pairs
        .iter()
        .map(|(key, value)| (replace(key), replace(value)))
        .collect();
    named.sort();
    named
}

/// The pairs of alice's domain (not, say, a maintenance lock, which holds
/// a random token).
fn of_alice(pairs: &[Pair]) -> Vec<Pair> {
    let prefix = engram::backend::domain_prefix("alice");
    pairs
        .iter()
        .filter(|(key, _)| key.starts_with(&prefix))
        .cloned()
        .collect()
}

/// What the same call stores in alice's domain without a fault, run on a
/// store holding what the domain held `before`.
fn fault_free(case: &Case, k: u64, before: &[Pair]) -> Vec<Pair> {
    let store = Arc::new(MemoryBackend::new());
    let puts: Vec<Op> = of_alice(before)
        .into_iter()
        .map(|(key, value)| Op::Put(key, value))
        .collect();
    store.commit(&[], &puts).unwrap();
    let mut domain = engine()
        .open(
            "alice",
            case.mode,
            store.clone(),
            Arc::new(MemoryAudit::new()),
        )
        .unwrap();
    assert!(
        matches!((case.run)(&mut domain, k), Ended::Stored),
        "{}: the call stores without a fault",
        case.name
    );
    of_alice(&dump(store.as_ref()))
}

/// How an operation ended.
enum Ended {
    /// It stored its whole result.
    Stored,
    /// It was refused or failed, storing nothing.
    Refused,
}

struct Case {
    name: &'static str,
    mode: Mode,
    run: fn(&mut Domain, u64) -> Ended,
}

fn turn_input() -> TurnInput {
    TurnInput {
        user_message: Some("I adopted a beagle named Max last weekend.".into()),
        model_response: Some("Congratulations on Max, beagles are great company.".into()),
    }
}

fn write_case(domain: &mut Domain, k: u64) -> Ended {
    let request = request(
        "alice",
        &format!("w-{k}"),
        ingested(1_000 + k as i64, "Asked about Max"),
    );
    match domain.write(&request) {
        Ok(WriteResult::Accepted(_)) => Ended::Stored,
        Ok(WriteResult::Rejected) | Err(_) => Ended::Refused,
    }
}

fn cycle_case(domain: &mut Domain, k: u64) -> Ended {
    let Ok(Ok(cycle)) = domain.begin_cycle(&engram::plans::turn(3), "s", &format!("c-{k}")) else {
        return Ended::Refused;
    };
    let mut ok = true;
    for stage in [
        Stage::ContextSelect,
        Stage::PromptAssemble,
        Stage::SummarizeMemory,
        Stage::PersistMemory,
    ] {
        ok = ok && matches!(domain.run_stage(&cycle, stage, &turn_input()), Ok(Ok(_)));
    }
    let committed = ok && matches!(domain.commit_cycle(&cycle), Ok(Ok(ids)) if ids.len() == 1);
    let _ = domain.drop_cycle(cycle);
    if committed {
        Ended::Stored
    } else {
        Ended::Refused
    }
}

fn recall_case(domain: &mut Domain, k: u64) -> Ended {
    let Ok(Ok(cycle)) = domain.begin_cycle(&engram::plans::recall(3), "s", &format!("r-{k}"))
    else {
        return Ended::Refused;
    };
    let _ = domain.run_stage(&cycle, Stage::ContextSelect, &turn_input());
    let _ = domain.drop_cycle(cycle);
    Ended::Refused // a recall stores nothing, whatever it answers
}

fn put_case(domain: &mut Domain, k: u64) -> Ended {
    let request = engram::graph::PutRequest {
        request_id: format!("p-{k}"),
        source: source("alice"),
        namespace: vec!["entities".into(), "alice".into()],
        id: format!("max{k}"),
        value: FactPayload::Entity(Entity {
            name: "Max".into(),
            entity_type: EntityType::Person,
            properties: "{}".into(),
            first_seen: 1,
            last_mentioned: 2,
            mention_count: 1,
            source_memories: vec![],
        }),
    };
    match domain.put(&request) {
        Ok(WriteResult::Accepted(_)) => Ended::Stored,
        _ => Ended::Refused,
    }
}

fn import_case(domain: &mut Domain, k: u64) -> Ended {
    // Items exported from another store's domain (kept in a static).
    let items = exported_items();
    let _ = k;
    match domain.import(&items) {
        Ok(Ok(n)) if n > 0 => Ended::Stored,
        _ => Ended::Refused,
    }
}

/// A few records exported from a domain of another store.
fn exported_items() -> Vec<engram::export::ExportedItem> {
    static ITEMS: std::sync::OnceLock<Vec<engram::export::ExportedItem>> =
        std::sync::OnceLock::new();
    ITEMS
        .get_or_init(|| {
            let dir = tempfile::tempdir().unwrap();
            let store = Arc::new(SqliteBackend::open(dir.path().join("source.db")).unwrap());
            {
                let mut alice = engine()
                    .open("alice", Mode::Online, store.clone(), store.clone())
                    .unwrap();
                accept(&mut alice, "x1", fact("user.dog", "Max is a beagle"));
                accept(&mut alice, "x2", ingested(7, "Asked about dog parks"));
                accept(&mut alice, "x3", state(9, "mission.current"));
            }
            let mut maintainer = engine()
                .open("alice", Mode::Maintenance, store.clone(), store)
                .unwrap();
            maintainer
                .export_page(None, CEILING)
                .unwrap()
                .unwrap()
                .items
        })
        .clone()
}

#[test]
fn io_w8_b5_d1_b5_f2_a_fault_at_any_call_leaves_nothing_partial_and_the_next_call_is_served() {
    // proves IO-W8, IO-G1, B5-D1, B5-F1, B5-F2
    let cases = [
        Case {
            name: "write",
            mode: Mode::Online,
            run: write_case,
        },
        Case {
            name: "cycle",
            mode: Mode::Online,
            run: cycle_case,
        },
        Case {
            name: "recall",
            mode: Mode::Online,
            run: recall_case,
        },
        Case {
            name: "graph put",
            mode: Mode::Online,
            run: put_case,
        },
        Case {
            name: "import",
            mode: Mode::Maintenance,
            run: import_case,
        },
    ];
    let (mut injected, mut stored) = (0, 0);
    for case in cases {
        let mut k = 1;
        loop {
            let dir = tempfile::tempdir().unwrap();
            let inner = Arc::new(SqliteBackend::open(dir.path().join("faults.db")).unwrap());
            {
                // Something to retrieve and to supersede.
                let mut seed = engine()
                    .open("alice", Mode::Online, inner.clone(), inner.clone())
                    .unwrap();
                accept(
                    &mut seed,
                    "seed",
                    ingested(5, "Asked about beagles named Max"),
                );
            }
            let store = Countdown::new(inner.clone());
            let mut domain = engine()
                .open("alice", case.mode, store.clone(), store.clone())
                .unwrap();
            let before = dump(inner.as_ref());
            store.arm(k);
            let ended = (case.run)(&mut domain, k);
            let calls = store.calls.load(Ordering::SeqCst);
            store.arm(u64::MAX);
            let after = dump(inner.as_ref());
            match ended {
                Ended::Refused => {
                    assert!(after == before, "{}: fault {k}: nothing partial", case.name)
                }
                Ended::Stored => {
                    // The whole result: what the call stores without a fault.
                    let expected = fault_free(&case, k, &before);
                    let after = of_alice(&after);
                    assert!(
                        new_id_named(after.clone(), &before, &expected)
                            == new_id_named(expected.clone(), &before, &after),
                        "{}: fault {k}: the store holds the whole result",
                        case.name
                    );
                    if calls >= k {
                        stored += 1;
                    }
                }
            }
            // The next call on the same domain is served.
            let next = domain.read(&read(RecordType::Event, latest(5)));
            assert!(
                matches!(next, Ok(Ok(_))),
                "{}: after fault {k}: {next:?}",
                case.name
            );
            if calls < k {
                break; // the operation made fewer than k calls: every one was failed
            }
            injected += 1;
            k += 1;
        }
        eprintln!("{}: a fault at each of its {} calls", case.name, k - 1);
    }
    eprintln!("{injected} faults injected; {stored} calls stored their whole result despite one");
    assert!(injected > 20);
}
