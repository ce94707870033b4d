//! The provider: a WASI 0.2 component that supplies everything the Engram
//! engine imports (`persistence`, `audit`, `domain`, `summarizer`,
//! `ranker`, `tokenizer` and `types` of `engram:memory@0.2.0`) over a SQLite file, and
//! the `engram:host/store` interface a command uses to choose the store and
//! the domain. Composed with the unchanged engine it makes a store of the
//! same format as the native host's, scoped, bounded and audited by the
//! same code (`engram_store::Scope`).
//!
//! **Limits** are the native host's defaults (`engram_store::Limits`): a
//! read-limit ceiling of 1,000, a candidate limit of 256, answers of at
//! most 16 MiB, records and summaries of at most 1 MiB, commits of at most
//! 10,000 puts and deletes and 16 MiB. The algorithms are the defaults of
//! `engram-algorithms` (`ExtractiveSummarizer`, `Bm25Ranker`, and the
//! `o200k_base` count), the tokenizer's table read from the file
//! `ENGRAM_TOKENIZER` names (`o200k_base.ranks`, beside `engram-cli.wasm`)
//! when a token budget first needs it: a run without a budget reads none.
//!
//! **Standalone.** Composed with the engine alone (no command calls
//! `store.open` or `store.enter`), the provider opens, on the engine's
//! first call, the store the environment variable `ENGRAM_STORE` names
//! (`engram.db` when unset, in a folder the runtime preopened) and enters
//! the domain of `ENGRAM_AGENT`, online, seeing every tier. Without
//! `ENGRAM_AGENT`, store calls answer `unavailable("no agent: set
//! ENGRAM_AGENT")` and `domain.agent` is empty.
//!
//! **Failures the engine cannot be told.** An audit entry that cannot be
//! kept, or a commit whose entries could not be appended to a trail kept
//! apart, must fail the call although the engine's import returned. Driven
//! by a command, the provider keeps the reason for `store.take-failure`;
//! standalone, nobody would ask, so the provider traps instead (the call
//! fails with the reason).
//!
//! The provider is single-threaded, as a WASI 0.2 component is: its state
//! lives in one thread-local cell, borrowed by one call at a time.

wit_bindgen::generate!({
    path: ["../../../wit", "../wit"],
    world: "engram:host/provider",
});

use engram_model::audit::{AuditEntry, AuditQuery};
use engram_store::maintenance::{self, LockGuard};
use engram_store::scope::MAX_AGENT_ID_LEN;
use engram_store::{Limits, Op, Order, Precondition, Scope, Storage, StoreError};
use exports::engram::host::store as host_store;
use exports::engram::memory::{
    audit as wit_audit, domain as wit_domain, embedder as wit_embedder, persistence,
    ranker as wit_ranker, summarizer as wit_summarizer, tokenizer as wit_tokenizer, types,
};

use std::cell::RefCell;
use std::sync::Arc;
use wit_domain::AccessMode;

engram_store::engine_entry_from_wit!(wit_audit, types);

/// The component's exports.
struct Provider;

export!(Provider);

/// What the provider holds between calls.
#[derive(Default)]
struct State {
    /// The store opened last.
    storage: Option<Storage>,
    /// The domain entered last, in that store.
    entered: Option<Entered>,
    /// The time the engine is told instead of the clock's, while set; kept
    /// across `enter`.
    time: Option<i64>,
    /// Who makes the calls, while named (a server's token name); kept
    /// across `enter`.
    caller: Option<String>,
    /// How long what the engine writes is kept, in ms; kept across `enter`.
    expire_after: Option<u64>,
    /// Why the last engine call must err, for `store.take-failure`.
    failure: Option<String>,
    /// Who chose the store and the domain.
    driver: Driver,
}

/// Who chose the store and the domain.
#[derive(Default)]
enum Driver {
    /// Nobody yet: the engine's first call makes the provider standalone.
    #[default]
    Nobody,
    /// A command, through `engram:host/store`.
    Command,
    /// The environment, on the engine's first call (standalone); the
    /// error, when the store or the domain could not be had.
    Environment(Result<(), String>),
}

/// The domain the engine's imports are scoped to.
struct Entered {
    scope: Scope,
    mode: AccessMode,
    ceiling: types::PrivacyTier,
    /// The domain's maintenance lock, held while entered in maintenance;
    /// released when dropped.
    lock: Option<LockGuard>,
}

thread_local! {
    static STATE: RefCell<State> = RefCell::new(State::default());
}

/// Runs `f` on the provider's state.
fn with<R>(f: impl FnOnce(&mut State) -> R) -> R {
    STATE.with_borrow_mut(f)
}

/// The limits: the native host's defaults.
fn limits() -> Limits {
    Limits::default()
}

/// Milliseconds since the Unix epoch by the system clock (`wasi:clocks`).
fn system_time_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

impl State {
    /// Closes the domain (its lock goes), then the store (its journal is
    /// checkpointed).
    fn close(&mut self) {
        if let Some(entered) = self.entered.take() {
            drop(entered.lock);
        }
        self.storage = None;
    }

    /// Opens the store `spec` names, closing the one open before.
    fn open(&mut self, spec: &str) -> Result<(), String> {
        self.close();
        self.storage = Some(Storage::open(spec).map_err(|e| format!("{e:#}"))?);
        Ok(())
    }

    /// Scopes the engine's imports to `agent`'s domain in the store open.
    fn enter(
        &mut self,
        agent: &str,
        mode: AccessMode,
        ceiling: types::PrivacyTier,
    ) -> Result<(), String> {
        if let Some(entered) = self.entered.take() {
            drop(entered.lock);
        }
        if agent.is_empty() || agent.len() > MAX_AGENT_ID_LEN {
            return Err(format!(
                "an agent id must be 1 to {MAX_AGENT_ID_LEN} bytes long"
            ));
        }
        let storage = self.storage()?;
        let lock = match mode {
            AccessMode::Online => None,
            AccessMode::Maintenance => Some(
                LockGuard::acquire(storage.backend.clone(), agent, system_time_ms())
                    .map_err(|e| format!("{e:#}"))?,
            ),
        };
        let mut scope = Scope::new(
            agent,
            storage.backend.clone(),
            storage.audit.clone(),
            lock.as_ref().map(|l| l.value().to_vec()),
            limits(),
            Arc::new(system_time_ms),
        );
        scope.set_time(self.time);
        scope.set_caller(self.caller.clone());
        self.entered = Some(Entered {
            scope,
            mode,
            ceiling,
            lock,
        });
        Ok(())
    }

    /// The store open, or why there is none.
    fn storage(&self) -> Result<&Storage, String> {
        self.storage
            .as_ref()
            .ok_or_else(|| "no store is open: call store.open first".to_owned())
    }

    /// Makes the provider standalone on the engine's first call, when no
    /// command chose a store: the store of `ENGRAM_STORE` (or
    /// `engram.db`), the domain of `ENGRAM_AGENT`, online, every tier seen.
    fn standalone(&mut self) {
        if !matches!(self.driver, Driver::Nobody) {
            return;
        }
        let entered = match std::env::var("ENGRAM_AGENT") {
            Ok(agent) if !agent.is_empty() => {
                let spec = std::env::var("ENGRAM_STORE")
                    .ok()
                    .filter(|s| !s.is_empty())
                    .unwrap_or_else(|| "engram.db".to_owned());
                self.open(&spec).and_then(|()| {
                    self.enter(&agent, AccessMode::Online, types::PrivacyTier::Private)
                })
            }
            _ => Err("no agent: set ENGRAM_AGENT".to_owned()),
        };
        self.driver = Driver::Environment(entered);
    }

    /// The domain the engine's imports are scoped to, made standalone first
    /// if nobody chose one; or why there is none.
    fn scope(&mut self) -> Result<&mut Scope, String> {
        self.standalone();
        if let Some(entered) = self.entered.as_mut() {
            return Ok(&mut entered.scope);
        }
        Err(match &self.driver {
            Driver::Environment(Err(why)) => why.clone(),
            _ => "no domain is entered: call store.enter first".to_owned(),
        })
    }

    /// The engine's call must fail although the import returned: kept for
    /// the command, or a trap when standalone.
    fn fail(&mut self, why: String) {
        match self.driver {
            Driver::Command => self.failure = Some(why),
            Driver::Nobody | Driver::Environment(_) => panic!("{why}"),
        }
    }
}

fn storage_error(error: StoreError) -> persistence::StorageError {
    match error {
        StoreError::Conflict => persistence::StorageError::Conflict,
        StoreError::Unavailable(why) => persistence::StorageError::Unavailable(why),
    }
}

/// Runs a store call of the engine in the domain entered.
fn in_scope<R>(
    f: impl FnOnce(&mut Scope) -> Result<R, StoreError>,
) -> Result<R, persistence::StorageError> {
    with(|state| match state.scope() {
        Ok(scope) => f(scope).map_err(storage_error),
        Err(why) => Err(persistence::StorageError::Unavailable(why)),
    })
}

impl persistence::Guest for Provider {
    fn get(key: persistence::Key) -> Result<Option<persistence::Value>, persistence::StorageError> {
        in_scope(|scope| scope.get(&key))
    }

    fn get_many(
        keys: Vec<persistence::Key>,
    ) -> Result<Vec<Option<persistence::Value>>, persistence::StorageError> {
        in_scope(|scope| scope.get_many(&keys))
    }

    fn scan(
        start: persistence::Key,
        end: persistence::Key,
        limit: u32,
        order: persistence::Direction,
    ) -> Result<Vec<persistence::Entry>, persistence::StorageError> {
        let order = match order {
            persistence::Direction::Ascending => Order::Ascending,
            persistence::Direction::Descending => Order::Descending,
        };
        let pairs = in_scope(|scope| scope.scan(&start, &end, limit, order))?;
        Ok(pairs
            .into_iter()
            .map(|(key, value)| persistence::Entry { key, value })
            .collect())
    }

    fn commit(
        preconditions: Vec<persistence::Precondition>,
        ops: Vec<persistence::Op>,
        trail: Vec<persistence::AuditEntry>,
    ) -> Result<(), persistence::StorageError> {
        let preconditions = preconditions
            .into_iter()
            .map(|p| match p {
                persistence::Precondition::Absent(key) => Precondition::Absent(key),
                persistence::Precondition::Holds(e) => Precondition::Holds(e.key, e.value),
            })
            .collect();
        let ops = ops
            .into_iter()
            .map(|op| match op {
                persistence::Op::Put(e) => Op::Put(e.key, e.value),
                persistence::Op::Delete(key) => Op::Delete(key),
            })
            .collect();
        let trail = trail.into_iter().map(engine_entry).collect();
        with(|state| {
            let scope = match state.scope() {
                Ok(scope) => scope,
                Err(why) => return Err(persistence::StorageError::Unavailable(why)),
            };
            let committed = scope.commit(preconditions, ops, trail);
            if let Some(why) = scope.take_unaudited() {
                state.fail(why);
            }
            committed.map_err(storage_error)
        })
    }
}

impl wit_audit::Guest for Provider {
    fn append(entry: wit_audit::Entry) {
        let entry = engine_entry(entry);
        with(|state| {
            let appended = state
                .scope()
                .and_then(|scope| scope.append(entry).map_err(|e| format!("{e:#}")));
            if let Err(why) = appended {
                state.fail(format!("the audit trail could not be written: {why}"));
            }
        })
    }
}

impl wit_domain::Guest for Provider {
    fn agent() -> String {
        with(|state| {
            state
                .scope()
                .map(|scope| scope.agent_id().to_owned())
                .unwrap_or_default()
        })
    }

    fn mode() -> AccessMode {
        with(|state| {
            state.standalone();
            state
                .entered
                .as_ref()
                .map_or(AccessMode::Online, |entered| entered.mode)
        })
    }

    fn now() -> i64 {
        with(|state| match state.scope() {
            Ok(scope) => scope.now(),
            Err(_) => state.time.unwrap_or_else(system_time_ms),
        })
    }

    fn read_limit_ceiling() -> u32 {
        limits().read_limit_ceiling
    }

    fn candidate_limit() -> u32 {
        limits().candidate_limit
    }

    fn answer_byte_limit() -> u64 {
        limits().answer_byte_limit()
    }

    fn tier_ceiling() -> types::PrivacyTier {
        with(|state| {
            state.standalone();
            state
                .entered
                .as_ref()
                .map_or(types::PrivacyTier::Private, |entered| entered.ceiling)
        })
    }

    fn expire_after() -> Option<u64> {
        with(|state| state.expire_after)
    }

    fn id_entropy() -> (u64, u64) {
        let random =
            || getrandom::u64().unwrap_or_else(|e| panic!("no entropy for record ids: {e}"));
        (random(), random())
    }
}

engram_algorithms::wit_guests!(Provider, wit_ranker, wit_summarizer, |s| {
    limits().summary_refusal(&s.summary, &s.keywords)
});
engram_algorithms::wit_tokenizer!(Provider, wit_tokenizer, engram_algorithms::o200k::from_file);

// The command line under wasmtime has no embedder: recall by keywords
// alone (S-VECTOR).
impl wit_embedder::Guest for Provider {
    fn identity() -> Option<wit_embedder::Model> {
        None
    }

    fn embed(_: Vec<String>, _: wit_embedder::Role) -> Result<Vec<Vec<f32>>, String> {
        Err("the host has no embedder".into())
    }
}

impl host_store::Guest for Provider {
    fn open(path: String) -> Result<(), String> {
        with(|state| {
            state.driver = Driver::Command;
            state.open(&path)
        })
    }

    fn enter(agent: String, mode: AccessMode, ceiling: types::PrivacyTier) -> Result<(), String> {
        with(|state| {
            state.driver = Driver::Command;
            state.enter(&agent, mode, ceiling)
        })
    }

    fn set_time(time: Option<i64>) {
        with(|state| {
            state.time = time;
            if let Some(entered) = state.entered.as_mut() {
                entered.scope.set_time(time);
            }
        })
    }

    fn set_caller(caller: Option<String>) {
        with(|state| {
            state.caller.clone_from(&caller);
            if let Some(entered) = state.entered.as_mut() {
                entered.scope.set_caller(caller);
            }
        })
    }

    fn set_expire_after(ms: Option<u64>) {
        with(|state| state.expire_after = ms)
    }

    fn append_audit(entry: String) -> Result<(), String> {
        let mut entry: AuditEntry =
            serde_json::from_str(&entry).map_err(|e| format!("not an audit entry: {e}"))?;
        with(|state| {
            if entry.caller.is_none() {
                entry.caller.clone_from(&state.caller);
            }
            state
                .storage()?
                .audit
                .append(&entry)
                .map_err(|e| format!("the audit trail could not be written: {e:#}"))
        })
    }

    fn audit_trail(query: String) -> Result<Vec<String>, String> {
        let query: AuditQuery =
            serde_json::from_str(&query).map_err(|e| format!("not an audit query: {e}"))?;
        with(|state| {
            let entries = state
                .storage()?
                .audit
                .trail(&query)
                .map_err(|e| format!("{e:#}"))?;
            entries
                .iter()
                .map(|entry| serde_json::to_string(entry).map_err(|e| e.to_string()))
                .collect()
        })
    }

    fn take_failure() -> Option<String> {
        with(|state| {
            let unaudited = state
                .entered
                .as_mut()
                .and_then(|entered| entered.scope.take_unaudited());
            state.failure.take().or(unaudited)
        })
    }

    fn domains() -> Result<Vec<String>, String> {
        with(|state| {
            maintenance::domains(state.storage()?.backend.as_ref()).map_err(|e| format!("{e:#}"))
        })
    }

    fn forget(agent: String) -> Result<u64, String> {
        with(|state| {
            let storage = state.storage()?;
            maintenance::forget(
                storage.backend.clone(),
                storage.audit.as_ref(),
                &agent,
                (system_time_ms(), state.caller.as_deref()),
                &mut |_| {},
            )
            .map_err(|e| format!("{e:#}"))
        })
    }

    fn unlock(agent: String) -> Result<bool, String> {
        with(|state| {
            maintenance::break_lock(state.storage()?.backend.as_ref(), &agent)
                .map_err(|e| format!("{e:#}"))
        })
    }

    fn max_record_bytes() -> u64 {
        limits().max_record_bytes as u64
    }

    fn close() {
        with(State::close)
    }
}
