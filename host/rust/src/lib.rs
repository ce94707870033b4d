//! Engram's host: runs the engine component in wasmtime and gives it its
//! storage, its audit trail and the time, scoped to one agent's domain.
//!
//! ```
//! use engram::{Engram, Mode, MemoryBackend, MemoryAudit};
//! use engram::io::{ReadRequest, ReadSelector, Latest, WriteRequest, WriteResult};
//! use engram::types::*;
//! use std::sync::Arc;
//!
//! # fn main() -> anyhow::Result<()> {
//! let engram = Engram::new()?; // compiles the component once
//! let store = Arc::new(MemoryBackend::new());
//! let audit = Arc::new(MemoryAudit::new());
//! let mut alice = engram.open("alice", Mode::Online, store, audit)?;
//!
//! let answer = alice.write(&WriteRequest {
//!     record: MemoryRecord::State(State {
//!         timestamp: 1_700_000_000_000,
//!         payload: StateSnapshot {
//!             subject: "mission.current".into(),
//!             properties: r#"{"goal":"book a flight"}"#.into(),
//!         },
//!     }),
//!     source: WriteSource {
//!         agent_id: "alice".into(),
//!         component: SourceComponent::Cognition,
//!         actor: SourceActor::User,
//!     },
//!     request_id: "req-1".into(),
//! })?;
//! assert!(matches!(answer, WriteResult::Accepted(_)));
//!
//! let read = alice.read(&ReadRequest {
//!     record_type: RecordType::State,
//!     selector: ReadSelector::Latest(Latest { limit: 10 }),
//!     request_id: "req-2".into(),
//! })?;
//! assert_eq!(read.expect("a bounded read").records.len(), 1);
//! # Ok(())
//! # }
//! ```
//!
//! The library is native only: built for `wasm32-wasip2` (the `engram`
//! command's component in `engram-cli.wasm`), the crate holds just the
//! command.

#![cfg(not(target_family = "wasm"))]
#![warn(missing_docs)]

mod cache;
pub mod cli;
mod knowledge_graph;
pub mod limits;
mod mcp;
mod native;
pub mod plans;

use native::{binding, platform};

/// The default algorithms and the traits a plugin host implements
/// (the `engram-algorithms` crate).
pub use engram_algorithms as algorithms;
/// The audit trail (the `engram-model` crate).
pub use engram_model::audit;
/// The persistence backends (the `engram-store` crate).
pub use engram_store as backend;
/// Offline maintenance: the lock, forgetting a domain, listing domains.
pub use engram_store::maintenance;

/// The JSON form of the contract, in the seeds' own names and spellings
/// (the `engram-model` crate), with its conversions to this host's types.
pub mod json {
    pub use engram_model::json::*;
    engram_model::wit_conversions!();
}

pub use algorithms::{
    Bm25Ranker, Candidate, ExtractiveSummarizer, O200kTokenizer, Ranker, Summarizer, Summary,
    Tokenizer,
};
pub use audit::{AuditEntry, AuditQuery, AuditSink, MemoryAudit};
pub use backend::{
    Backend, MemoryBackend, PostgresBackend, PostgresOptions, SqliteBackend, SqliteOptions,
    Storage, Synchronous,
};
pub use cache::Origin;
pub use engram_model::turns::{RecallArgs, Recalled, RememberArgs, Remembered};

/// Why a [`Domain::remember`] or [`Domain::recall`] did not answer: refused
/// by the contract (`Refused`, its `{"plan_error"}` or `{"cycle_error"}`
/// line) or failed in the host (`Failed`). Nothing of it was persisted.
pub type TurnError = engram_model::turns::TurnError<anyhow::Error>;

engram_model::domain_cycles!();
engram_model::domain_engine!();

use anyhow::{Context, Result, anyhow, bail};
use engram_store::Scope;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use wasmtime::component::{Component, HasSelf, Linker};
use wasmtime::{InstanceAllocationStrategy, PoolingAllocationConfig, Store, StoreLimits};

#[allow(missing_docs)]
mod bindings {
    wasmtime::component::bindgen!({
        path: "../../wit",
        world: "engine",
        imports: {
            "engram:memory/audit.append": trappable,
            "engram:memory/domain.id-entropy": trappable,
        },
        additional_derives: [PartialEq],
    });
}

use bindings::engram::memory::{
    audit as wit_audit, domain as wit_domain, persistence, ranker as wit_ranker,
    summarizer as wit_summarizer, tokenizer as wit_tokenizer,
};

engram_algorithms::wit_conversions!(wit_ranker, wit_summarizer);

/// Export and import of a domain (`engram:memory/maintenance`, IO-W7).
pub mod export {
    pub use crate::bindings::exports::engram::memory::maintenance::*;
}

/// The record model of the contract (`engram:memory/types`).
pub mod types {
    pub use crate::bindings::engram::memory::types::*;
}

/// The IO contract (`engram:memory/io`): requests, answers, selectors.
pub mod io {
    pub use crate::bindings::exports::engram::memory::io::*;
}

/// Versions of a FACT in time (`engram:memory/history`, MT-2).
pub mod history {
    pub use crate::bindings::exports::engram::memory::history::*;
}

/// Entities and relationships in namespaces, and their lookups
/// (`engram:memory/graph`, MT-7, MT-8).
pub mod graph {
    pub use crate::bindings::exports::engram::memory::graph::*;
}

/// Execution cycles (`engram:memory/cycle`): plans, stages, step outputs.
pub mod cycle {
    pub use crate::bindings::exports::engram::memory::cycle::{
        AssembledPrompt, CycleError, Damage, ExecutionPlan, PlanError, PlanErrorKind, PlanMetadata,
        PlanStep, RetrievedMemory, Stage, StepKind, StepOutput, StepResult, SummarizeInput,
        Summarized, TurnInput,
    };
}

/// The engine component, as built from `guest/` by the build script of
/// `engram-component`.
pub const COMPONENT: &[u8] = engram_component::COMPONENT;

/// How a domain is opened (IO-W7).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Normal operation: only COGNITION writes are accepted.
    Online,
    /// Offline migration or manual maintenance: only MAINTENANCE writes are
    /// accepted.
    Maintenance,
}

/// A source of the engine's transaction time, in milliseconds since the
/// Unix epoch.
pub type Clock = Arc<dyn Fn() -> i64 + Send + Sync>;

/// What a host sets for every domain it opens: the engine's bounds, its
/// algorithms, and how its instances are made.
///
/// The limits, with their defaults (`Config::default()`):
///
/// | limit | default | when it is hit |
/// |---|---|---|
/// | [`read_limit_ceiling`](Config::read_limit_ceiling) | 1,000 | the read is refused with a typed error |
/// | [`max_answer_bytes`](Config::max_answer_bytes) | 16 MiB | the read is refused with `AnswerTooLarge` |
/// | [`candidate_limit`](Config::candidate_limit) | 256 | a retrieval reads no more index entries |
/// | [`max_record_bytes`](Config::max_record_bytes) | 1 MiB | the write is REJECTED and audited with the reason, before the engine runs |
/// | [`max_batch_ops`](Config::max_batch_ops) | 10,000 | the commit is refused: the write is REJECTED or the cycle's commit fails, reason audited |
/// | [`max_batch_bytes`](Config::max_batch_bytes) | 16 MiB | as for `max_batch_ops` |
/// | [`max_memory_bytes`](Config::max_memory_bytes) | 64 MiB | the instance is stopped (a trap): the call errs, the next gets a fresh instance |
/// | [`max_table_elements`](Config::max_table_elements) | 10,000 | as for `max_memory_bytes` |
/// | [`call_timeout`](Config::call_timeout) | 10 s | as for `max_memory_bytes` |
/// | [`max_live_domains`](Config::max_live_domains) | 1,000 | [`Engram::open`] fails at once |
#[derive(Clone)]
pub struct Config {
    /// The largest `limit` a read may carry (IO-G6). 1,000 by default.
    pub read_limit_ceiling: u32,
    /// The most bytes the records of one answer may take in the store: a
    /// read, history or graph call whose records hold more is refused with
    /// `AnswerTooLarge` and returns nothing (IO-G6). A quarter of
    /// [`max_memory_bytes`](Config::max_memory_bytes) at most, whatever is
    /// set here, so no valid read over valid data can run the engine out
    /// of memory. 16 MiB by default.
    pub max_answer_bytes: u64,
    /// The engine's clock; the system clock by default.
    pub clock: Clock,
    /// How many keyword-index entries one RetrieveMemory step may read to
    /// find its candidates (IO-G6). 256 by default.
    pub candidate_limit: u32,
    /// The summarizer cycles call; [`ExtractiveSummarizer`] by default.
    pub summarizer: Arc<dyn Summarizer>,
    /// The ranker cycles call; [`Bm25Ranker`] by default.
    pub ranker: Arc<dyn Ranker>,
    /// What counts the tokens of a prompt's memory lines for a plan with a
    /// token budget; [`O200kTokenizer`] (OpenAI's `o200k_base`) by default.
    pub tokenizer: Arc<dyn Tokenizer>,
    /// The largest record a write may carry, measured by
    /// [`limits::record_size`] (the bytes of its strings, plus 8 per list
    /// item). A larger write is answered REJECTED, and the reason audited,
    /// before it reaches the engine; a summarizer answer larger than this
    /// fails its cycle. 1 MiB by default.
    pub max_record_bytes: usize,
    /// The most puts and deletes one atomic commit may carry: a write with
    /// its indexes, or every memory a cycle persists. A larger commit is
    /// refused by the host: the write is REJECTED or the cycle's commit
    /// fails, and the reason is in the audit trail. 10,000 by default.
    pub max_batch_ops: u32,
    /// The most bytes (keys and values) one atomic commit may carry; like
    /// [`max_batch_ops`](Config::max_batch_ops). 16 MiB by default.
    pub max_batch_bytes: usize,
    /// The largest linear memory an instance may grow to, in bytes (rounded
    /// up to whole 64 KiB pages; at least 2 MiB: the engine starts with
    /// a little over 1 MiB). Growing past it stops the
    /// instance (a trap). Each instance's slot reserves this much address
    /// space (plus a guard region); only what is touched is resident. 64 MiB
    /// by default.
    pub max_memory_bytes: usize,
    /// The most elements a table of an instance may hold; growing past it
    /// stops the instance. 10,000 by default.
    pub max_table_elements: u32,
    /// How long one call into the engine may run, host calls it makes
    /// included (wall-clock, by epoch interruption). A call past it is
    /// stopped between the limit and the limit plus a tenth; a host call
    /// that blocks is not cut short, the engine is stopped when it returns.
    /// `None` for no limit. 10 s by default.
    pub call_timeout: Option<Duration>,
    /// `Some(n)`: instances come from wasmtime's pooling allocator, with
    /// slots for `n` live domains made ready up front (copy-on-write memory
    /// images make an instance in microseconds); opening one more fails at
    /// once. `None`: each instance is allocated on demand, with no cap.
    /// `Some(1000)` by default.
    pub max_live_domains: Option<u32>,
    /// A folder to keep the compiled component in, so the next
    /// [`Engram`] made with the same settings loads it instead of compiling
    /// it (see [`Engram::origin`]). `None` (the default) compiles every time.
    pub cache_dir: Option<PathBuf>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            read_limit_ceiling: 1_000,
            max_answer_bytes: 16 << 20,
            clock: Arc::new(system_time_ms),
            candidate_limit: 256,
            summarizer: Arc::new(ExtractiveSummarizer::default()),
            ranker: Arc::new(Bm25Ranker),
            tokenizer: Arc::new(O200kTokenizer),
            max_record_bytes: 1 << 20,
            max_batch_ops: 10_000,
            max_batch_bytes: 16 << 20,
            max_memory_bytes: 64 << 20,
            max_table_elements: 10_000,
            call_timeout: Some(Duration::from_secs(10)),
            max_live_domains: Some(1_000),
            cache_dir: None,
        }
    }
}

impl Config {
    /// The limits a domain's [`Scope`] holds the engine's store calls to.
    fn scope_limits(&self) -> engram_store::Limits {
        engram_store::Limits {
            read_limit_ceiling: self.read_limit_ceiling,
            candidate_limit: self.candidate_limit,
            max_answer_bytes: self.max_answer_bytes,
            max_memory_bytes: self.max_memory_bytes as u64,
            max_record_bytes: self.max_record_bytes,
            max_batch_ops: self.max_batch_ops,
            max_batch_bytes: self.max_batch_bytes,
        }
    }
}

/// Where a host keeps the compiled engine unless told otherwise
/// ([`Config::cache_dir`]): `ENGRAM_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/engram`, else `$HOME/.cache/engram`; none without a
/// home. The `engram` command and the language packages keep it there.
pub fn default_cache_dir() -> Option<PathBuf> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    var("ENGRAM_CACHE_DIR")
        .map(PathBuf::from)
        .or_else(|| var("XDG_CACHE_HOME").map(|d| PathBuf::from(d).join("engram")))
        .or_else(|| var("HOME").map(|d| PathBuf::from(d).join(".cache").join("engram")))
}

/// Milliseconds since the Unix epoch by the system clock.
pub fn system_time_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// The longest agent id a domain may be opened for, in bytes.
pub const MAX_AGENT_ID_LEN: usize = engram_store::scope::MAX_AGENT_ID_LEN;

/// What one domain's instance may hold at most, for sizing the pool: the
/// component instantiates a few core modules (the engine and the adapter
/// shims `wit-component` adds), one linear memory and a few tables.
const CORE_INSTANCES_PER_DOMAIN: u32 = 8;
const TABLES_PER_DOMAIN: u32 = 4;
const MEMORIES_PER_DOMAIN: u32 = 1;
const WASM_PAGE: usize = 64 << 10;

/// The engine, compiled once; opens a domain per agent.
pub struct Engram {
    shared: Arc<Shared>,
    origin: Origin,
    cache_file: Option<PathBuf>,
}

/// What an [`Engram`] and every [`Domain`] it opened share.
struct Shared {
    engine: wasmtime::Engine,
    pre: bindings::EnginePre<DomainState>,
    config: Config,
    /// The memory limit, in whole pages.
    memory_bytes: usize,
    /// How many epoch ticks a call may run, when calls have a time limit.
    deadline_ticks: Option<u64>,
    /// How many domains are open, when their number is capped.
    live: AtomicU32,
    _ticker: Option<limits::Ticker>,
}

impl Engram {
    /// Compiles the engine component with the default [`Config`].
    pub fn new() -> Result<Self> {
        Self::with_config(Config::default())
    }

    /// Compiles the engine component, or loads it from
    /// [`Config::cache_dir`] when an earlier compilation with the same
    /// settings left it there.
    pub fn with_config(config: Config) -> Result<Self> {
        if config.read_limit_ceiling == 0
            || config.candidate_limit == 0
            || config.max_answer_bytes == 0
        {
            bail!("the read-limit ceiling and the candidate limit must be at least 1");
        }
        if config.max_record_bytes == 0 || config.max_batch_ops == 0 || config.max_batch_bytes == 0
        {
            bail!("the record and batch limits must be at least 1");
        }
        if config.max_memory_bytes < (2 << 20) || config.max_memory_bytes > (1 << 32) {
            bail!("the memory limit must be between 2 MiB and 4 GiB");
        }
        if config.call_timeout == Some(Duration::ZERO) {
            bail!("a call time limit must be above zero (or None, for no limit)");
        }
        if config.max_live_domains == Some(0) {
            bail!("the number of live domains must be at least 1 (or None, for no cap)");
        }
        let memory_bytes = config.max_memory_bytes.div_ceil(WASM_PAGE) * WASM_PAGE;

        let mut settings = wasmtime::Config::new();
        // Each instance's memory is reserved at the size of its limit, so a
        // pool of slots costs the limit (and a guard) per domain in address
        // space rather than 4 GiB; the price is explicit bounds checks.
        settings.memory_reservation(memory_bytes as u64);
        settings.memory_init_cow(true);
        let epoch = config.call_timeout.map(limits::epoch_plan);
        settings.epoch_interruption(epoch.is_some());
        if let Some(domains) = config.max_live_domains {
            let mut pool = PoolingAllocationConfig::new();
            pool.total_component_instances(domains)
                .total_core_instances(domains.saturating_mul(CORE_INSTANCES_PER_DOMAIN))
                .max_core_instances_per_component(CORE_INSTANCES_PER_DOMAIN)
                .total_memories(domains.saturating_mul(MEMORIES_PER_DOMAIN))
                .max_memories_per_component(MEMORIES_PER_DOMAIN)
                .total_tables(domains.saturating_mul(TABLES_PER_DOMAIN))
                .max_tables_per_component(TABLES_PER_DOMAIN)
                .max_tables_per_module(TABLES_PER_DOMAIN)
                .max_memory_size(memory_bytes)
                .table_elements(config.max_table_elements as usize);
            settings.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        }
        let engine = wasmtime::Engine::new(&settings)
            .map_err(anyhow::Error::from)
            .context("setting up the wasmtime engine")?;
        let loaded = cache::load_or_compile(
            &engine,
            COMPONENT,
            cache::COMPONENT_HASH,
            config.cache_dir.as_deref(),
        )?;
        let mut linker = Linker::new(&engine);
        bindings::Engine::add_to_linker::<DomainState, HasSelf<DomainState>>(
            &mut linker,
            |state| state,
        )?;
        let pre = bindings::EnginePre::new(linker.instantiate_pre(&loaded.component)?)?;
        let ticker = match epoch {
            Some((tick, _)) => {
                Some(limits::Ticker::start(&engine, tick).context("starting the epoch ticker")?)
            }
            None => None,
        };
        Ok(Engram {
            shared: Arc::new(Shared {
                engine,
                pre,
                config,
                memory_bytes,
                deadline_ticks: epoch.map(|(_, ticks)| ticks),
                live: AtomicU32::new(0),
                _ticker: ticker,
            }),
            origin: loaded.origin,
            cache_file: loaded.path,
        })
    }

    /// The compiled component, for inspecting its imports and exports.
    pub fn component(&self) -> &Component {
        self.shared.pre.instance_pre().component()
    }

    /// The wasmtime engine the component is compiled for.
    pub fn engine(&self) -> &wasmtime::Engine {
        &self.shared.engine
    }

    /// Whether the component was compiled now or loaded from the cache.
    pub fn origin(&self) -> Origin {
        self.origin
    }

    /// The cache file the component was loaded from or written to, when
    /// [`Config::cache_dir`] is set.
    pub fn cache_file(&self) -> Option<&Path> {
        self.cache_file.as_deref()
    }

    /// How many domains this engine has open now.
    pub fn live_domains(&self) -> u32 {
        self.shared.live.load(Ordering::SeqCst)
    }

    /// Opens the memory domain of one agent, online, in the store `store`
    /// names: a SQLite file (created if absent) or a `postgres://` URL
    /// ([`Storage::open`]).
    pub fn open_store(&self, store: &str, agent_id: &str) -> Result<Domain> {
        let storage = Storage::open(store)?;
        self.open(agent_id, Mode::Online, storage.backend, storage.audit)
    }

    /// Opens the memory domain of one agent over `backend`: a fresh instance
    /// of the engine whose storage is scoped to that agent (IO-W6), whose
    /// audit entries go to `audit`, and whose writes are allowed by `mode`
    /// (IO-W7). Opening for maintenance takes the domain's maintenance lock,
    /// held until the domain is dropped, and fails while another holds it;
    /// online writes fail while it is held (see [`maintenance`]). Fails at
    /// once when [`Config::max_live_domains`] domains are open.
    pub fn open(
        &self,
        agent_id: &str,
        mode: Mode,
        backend: Arc<dyn Backend>,
        audit: Arc<dyn AuditSink>,
    ) -> Result<Domain> {
        if agent_id.is_empty() || agent_id.len() > MAX_AGENT_ID_LEN {
            bail!("an agent id must be 1 to {MAX_AGENT_ID_LEN} bytes long");
        }
        let slot = Slot::take(&self.shared)?;
        let config = &self.shared.config;
        let lock = match mode {
            Mode::Online => None,
            Mode::Maintenance => Some(maintenance::LockGuard::acquire(
                backend.clone(),
                agent_id,
                (config.clock)(),
            )?),
        };
        let state = DomainState {
            scope: Scope::new(
                agent_id,
                backend,
                audit,
                lock.as_ref().map(|l| l.value().to_vec()),
                config.scope_limits(),
                config.clock.clone(),
            ),
            mode,
            summarizer: config.summarizer.clone(),
            ranker: config.ranker.clone(),
            tokenizer: config.tokenizer.clone(),
            tier_ceiling: types::PrivacyTier::Private,
            expire_after: None,
            limits: wasmtime::StoreLimitsBuilder::new()
                .memory_size(self.shared.memory_bytes)
                .table_elements(config.max_table_elements as usize)
                .trap_on_grow_failure(true)
                .build(),
        };
        let mut domain = Domain {
            shared: self.shared.clone(),
            state,
            live: None,
            restarts: 0,
            writing: false,
            _lock: lock,
            _slot: slot,
        };
        domain.live()?;
        Ok(domain)
    }
}

/// A domain's claim on one of [`Config::max_live_domains`]; given back when
/// the domain is dropped.
struct Slot(Arc<Shared>);

impl Slot {
    fn take(shared: &Arc<Shared>) -> Result<Self> {
        let max = shared.config.max_live_domains.unwrap_or(u32::MAX);
        shared
            .live
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < max).then_some(n + 1)
            })
            .map_err(|_| {
                anyhow!(
                    "all {max} domain slots are in use: close a domain first, \
                     or raise Config::max_live_domains"
                )
            })?;
        Ok(Slot(shared.clone()))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.live.fetch_sub(1, Ordering::SeqCst);
    }
}

pub use engram_store::domain_prefix;

/// One agent's memory domain: an instance of the engine over that agent's
/// part of the store. Every IO call goes through it.
///
/// A call that stops the instance (a trap: it ran past
/// [`Config::call_timeout`], grew past [`Config::max_memory_bytes`], or the
/// audit trail could not be written) answers `Err`. The instance is then
/// dropped with everything it held, cycles in flight included, and the next
/// call gets a fresh one with the same agent, mode, storage, audit trail and
/// algorithms. A call stopped before its commit has stored nothing (the
/// commit is its last step, and atomic).
pub struct Domain {
    shared: Arc<Shared>,
    /// What every instance of this domain is made with.
    state: DomainState,
    live: Option<Live>,
    restarts: u64,
    /// Whether [`Domain::exclusively`] holds the domain's write lock now.
    writing: bool,
    /// The maintenance lock, held while a maintenance domain is open.
    _lock: Option<maintenance::LockGuard>,
    _slot: Slot,
}

/// The instance a domain is running now, and its store.
struct Live {
    store: Store<DomainState>,
    instance: bindings::Engine,
}

/// What the host audits for an IO call that stopped the instance.
struct Audited<'a> {
    operation: audit::Operation,
    request_id: &'a str,
    source: Option<&'a types::WriteSource>,
    record_type: Option<types::RecordType>,
}

impl Domain {
    /// The agent this domain belongs to.
    pub fn agent_id(&self) -> &str {
        self.state.scope.agent_id()
    }

    /// How many times this domain's instance was stopped and replaced.
    pub fn restarts(&self) -> u64 {
        self.restarts
    }

    /// The running instance; a fresh one if the last was stopped.
    fn live(&mut self) -> Result<&mut Live> {
        if self.live.is_none() {
            let mut store = Store::new(&self.shared.engine, self.state.clone());
            store.limiter(|state| &mut state.limits);
            if self.shared.deadline_ticks.is_some() {
                store.epoch_deadline_trap();
            }
            self.arm(&mut store);
            let instance = self
                .shared
                .pre
                .instantiate(&mut store)
                .map_err(anyhow::Error::from)
                .context("instantiating the engine")?;
            self.live = Some(Live { store, instance });
        }
        Ok(self.live.as_mut().expect("an instance was just made"))
    }

    /// Gives the next call into `store` its full time.
    fn arm(&self, store: &mut Store<DomainState>) {
        if let Some(ticks) = self.shared.deadline_ticks {
            store.set_epoch_deadline(ticks);
        }
    }

    /// Calls into the instance. An error stops it: the store is dropped, and
    /// the next call makes a new one.
    fn call<R>(
        &mut self,
        audited: Option<Audited<'_>>,
        f: impl FnOnce(&bindings::Engine, &mut Store<DomainState>) -> wasmtime::Result<R>,
    ) -> Result<R> {
        let ticks = self.shared.deadline_ticks;
        let live = self.live()?;
        if let Some(ticks) = ticks {
            live.store.set_epoch_deadline(ticks);
        }
        match f(&live.instance, &mut live.store) {
            Ok(answer) => match live.store.data_mut().scope.take_unaudited() {
                Some(why) => Err(anyhow!(why)),
                None => Ok(answer),
            },
            Err(error) => {
                self.live = None;
                self.restarts += 1;
                let error = self.stopped(anyhow::Error::from(error));
                if let Some(audited) = audited {
                    // Best effort: the trail itself may be what failed.
                    let scope = &self.state.scope;
                    let _ = scope.audit().append(&AuditEntry {
                        at: scope.clock_time(),
                        agent_id: scope.agent_id().to_owned(),
                        request_id: audited.request_id.to_owned(),
                        operation: audited.operation,
                        source: audited.source.cloned().map(Into::into),
                        record_type: audited.record_type.map(Into::into),
                        outcome: audit::Outcome::Failed,
                        stored_id: None,
                        count: None,
                        reason: Some(format!("{error:#}")),
                    });
                }
                Err(error)
            }
        }
    }

    /// Calls into the instance as one writer of the domain: on a store that
    /// serializes the writers of a domain ([`Backend::lock_domain`]), the
    /// call waits its turn instead of losing races it would retry.
    fn call_exclusive<R>(
        &mut self,
        audited: Option<Audited<'_>>,
        f: impl FnOnce(&bindings::Engine, &mut Store<DomainState>) -> wasmtime::Result<R>,
    ) -> Result<R> {
        if self.writing {
            return self.call(audited, f);
        }
        let backend = self.state.scope.backend().clone();
        let locked = backend
            .lock_domain(self.state.scope.prefix())
            .map_err(|e| anyhow!("waiting for the other writers of the domain: {e}"))?;
        let answer = self.call(audited, f);
        if locked {
            backend.unlock_domain(self.state.scope.prefix());
        }
        answer
    }

    /// Names why an instance was stopped.
    fn stopped(&self, error: anyhow::Error) -> anyhow::Error {
        let why = match error.downcast_ref::<wasmtime::Trap>() {
            Some(wasmtime::Trap::Interrupt) => match self.shared.config.call_timeout {
                Some(limit) => format!("the call ran past its time limit of {limit:?}"),
                None => "the call was interrupted".to_owned(),
            },
            Some(_) => "the engine trapped".to_owned(),
            // What the store's limiter answers a growth past the limits.
            None if format!("{error:#}").contains("growing memory") => format!(
                "the engine needed more than its memory limit of {} bytes",
                self.shared.memory_bytes
            ),
            None if format!("{error:#}").contains("growing table") => format!(
                "the engine needed more than its table limit of {} elements",
                self.shared.config.max_table_elements
            ),
            None => "a call of the host failed".to_owned(),
        };
        error.context(Stopped(why))
    }

    /// Runs `f` as the one writer of the domain: on a store that serializes
    /// the writers of a domain ([`Backend::lock_domain`]; SQLite and
    /// PostgreSQL do, across processes), every other writer waits until `f`
    /// returns, so what `f` reads is still so when its writes commit. Calls
    /// nest.
    pub fn exclusively<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> Result<T> {
        if self.writing {
            return Ok(f(self));
        }
        let backend = self.state.scope.backend().clone();
        let prefix = self.state.scope.prefix().to_vec();
        let locked = backend
            .lock_domain(&prefix)
            .map_err(|e| anyhow!("waiting for the other writers of the domain: {e}"))?;
        /// Lets the lock go however `f` ends.
        struct Unlock<'a>(&'a dyn Backend, &'a [u8], bool);
        impl Drop for Unlock<'_> {
            fn drop(&mut self) {
                if self.2 {
                    self.0.unlock_domain(self.1);
                }
            }
        }
        let _unlock = Unlock(backend.as_ref(), &prefix, locked);
        self.writing = locked;
        let answer = f(self);
        self.writing = false;
        Ok(answer)
    }

    /// Why `record` is too large to write, if it is: the reason a write of
    /// it would be REJECTED with.
    pub fn oversized_record(&self, record: &types::MemoryRecord) -> Option<String> {
        self.oversized(limits::record_size(record))
    }

    /// The reason a record is too large to write, if it is.
    fn oversized(&self, size: usize) -> Option<String> {
        engram_model::size::record_refusal(size, self.state.scope.limits().max_record_bytes)
    }

    /// Answers a write REJECTED without running it, and audits why (IO-W8).
    fn reject(
        &mut self,
        request_id: &str,
        source: &types::WriteSource,
        record_type: types::RecordType,
        reason: String,
    ) -> Result<io::WriteResult> {
        let scope = &self.state.scope;
        scope.audit().append(&json::refused_write(
            scope.clock_time(),
            scope.agent_id(),
            request_id,
            source,
            record_type,
            reason,
        ))?;
        Ok(io::WriteResult::Rejected)
    }

    /// Writes one record (IO-W1 … IO-W8). `Ok` carries the contract's
    /// answer, ACCEPTED or REJECTED; `Err` means the call itself failed (the
    /// engine was stopped or the audit trail could not be written). A
    /// record above [`Config::max_record_bytes`] is REJECTED before it
    /// reaches the engine.
    pub fn write(&mut self, request: &io::WriteRequest) -> Result<io::WriteResult> {
        let record_type = json::record_type(&request.record);
        if let Some(reason) = self.oversized(limits::record_size(&request.record)) {
            return self.reject(&request.request_id, &request.source, record_type, reason);
        }
        let audited = Audited {
            operation: audit::Operation::Write,
            request_id: &request.request_id,
            source: Some(&request.source),
            record_type: Some(record_type),
        };
        self.call_exclusive(Some(audited), |engine, store| {
            engine.engram_memory_io().call_write(store, request)
        })
    }

    /// The newest versions of one FACT key, newest first (MT-2).
    pub fn versions(
        &mut self,
        request: &history::VersionsRequest,
    ) -> Result<Result<Vec<types::StoredFact>, io::ReadError>> {
        self.call(None, |engine, store| {
            engine.engram_memory_history().call_versions(store, request)
        })
    }

    /// The version of one FACT key as of a time, on the valid or the
    /// transaction axis (MT-2).
    pub fn as_of(
        &mut self,
        request: &history::AsOfRequest,
    ) -> Result<Result<Option<types::StoredFact>, io::ReadError>> {
        self.call(None, |engine, store| {
            engine.engram_memory_history().call_as_of(store, request)
        })
    }

    /// Writes a value under an id of a namespace (MT-7): a FACT write. A
    /// value above [`Config::max_record_bytes`] (with its namespace and id)
    /// is REJECTED before it reaches the engine.
    pub fn put(&mut self, request: &graph::PutRequest) -> Result<io::WriteResult> {
        let size = limits::fact_payload_size(&request.value)
            + request.id.len()
            + request.namespace.iter().map(|s| s.len() + 1).sum::<usize>();
        if let Some(reason) = self.oversized(size) {
            return self.reject(
                &request.request_id,
                &request.source,
                types::RecordType::Fact,
                reason,
            );
        }
        let audited = Audited {
            operation: audit::Operation::Write,
            request_id: &request.request_id,
            source: Some(&request.source),
            record_type: Some(types::RecordType::Fact),
        };
        self.call_exclusive(Some(audited), |engine, store| {
            engine.engram_memory_graph().call_put(store, request)
        })
    }

    /// The current version under an id of a namespace (MT-7).
    pub fn get(
        &mut self,
        request_id: &str,
        namespace: &graph::Namespace,
        id: &str,
    ) -> Result<Result<Option<types::StoredFact>, io::ReadError>> {
        self.call(None, |engine, store| {
            engine
                .engram_memory_graph()
                .call_get(store, &request_id.to_owned(), namespace, id)
        })
    }

    /// The current versions in a namespace, in key order, at most `limit`
    /// (MT-7).
    pub fn list(
        &mut self,
        request_id: &str,
        namespace: &graph::Namespace,
        limit: u32,
    ) -> Result<Result<Vec<types::StoredFact>, io::ReadError>> {
        self.list_after(request_id, namespace, limit, None)
    }

    /// The current versions in a namespace whose keys follow `after`, in
    /// key order, at most `limit`: the next page of a namespace after the
    /// page that ended with the FACT keyed `after` (MT-7).
    pub fn list_after(
        &mut self,
        request_id: &str,
        namespace: &graph::Namespace,
        limit: u32,
        after: Option<&str>,
    ) -> Result<Result<Vec<types::StoredFact>, io::ReadError>> {
        let after = after.map(str::to_owned);
        self.call(None, |engine, store| {
            engine.engram_memory_graph().call_list(
                store,
                &request_id.to_owned(),
                namespace,
                limit,
                after.as_ref(),
            )
        })
    }

    /// The current entities of one type, in key order (MT-8).
    pub fn entities_of_type(
        &mut self,
        request_id: &str,
        entity_type: types::EntityType,
        limit: u32,
    ) -> Result<Result<Vec<types::StoredFact>, io::ReadError>> {
        self.call(None, |engine, store| {
            engine.engram_memory_graph().call_entities_of_type(
                store,
                &request_id.to_owned(),
                entity_type,
                limit,
            )
        })
    }

    /// The current relationships of one entity (MT-8).
    pub fn relationships_of(
        &mut self,
        request: &graph::RelationshipsRequest,
    ) -> Result<Result<Vec<types::StoredFact>, io::ReadError>> {
        self.call(None, |engine, store| {
            engine
                .engram_memory_graph()
                .call_relationships_of(store, request)
        })
    }

    /// Walks the graph from one entity within the request's bounds (MT-9).
    pub fn traverse(
        &mut self,
        request: &graph::TraverseRequest,
    ) -> Result<Result<graph::Traversal, io::ReadError>> {
        self.call(None, |engine, store| {
            engine.engram_memory_graph().call_traverse(store, request)
        })
    }

    /// Tells the engine `time` as the current time (its transaction time,
    /// MT-2; the time a cycle stamps on what it persists) until called again
    /// with `None`, which goes back to the clock: for ingesting a past
    /// conversation turn by turn at the turns' own times. The audit trail
    /// keeps the clock's time.
    pub fn set_time(&mut self, time: Option<i64>) {
        self.state.scope.set_time(time);
        if let Some(live) = self.live.as_mut() {
            live.store.data_mut().scope.set_time(time);
        }
    }

    /// The time the engine is told instead of the clock's, while one is
    /// set ([`Domain::set_time`]).
    pub fn time(&self) -> Option<i64> {
        self.state.scope.time()
    }

    /// 128 random bits from the system, for a fresh request id.
    pub fn entropy(&mut self) -> Result<[u64; 2]> {
        let random = || getrandom::u64().map_err(|e| anyhow!("no entropy: {e}"));
        Ok([random()?, random()?])
    }

    /// Remembers one finished turn: the user's `message` and the model's
    /// `response` are summarized and the summary stored as one memory, in
    /// one commit (the raw text is never stored, B5-S1), on the built-in
    /// plan ([`engram_model::turns::remember_plan`]). With a fresh request
    /// id, the default session and the clock's time; [`Self::remember_with`]
    /// takes them.
    pub fn remember(&mut self, message: &str, response: &str) -> Result<Remembered, TurnError> {
        self.remember_with(RememberArgs {
            message: message.into(),
            response: response.into(),
            ..RememberArgs::default()
        })
    }

    /// [`Self::remember`] with every argument: the same request id again
    /// stores nothing new (IO-W2) and answers the first time's ids.
    pub fn remember_with(&mut self, args: RememberArgs) -> Result<Remembered, TurnError> {
        engram_model::turns::remember(self, args)
    }

    /// The memories that answer `question`, best first, and the prompt
    /// assembled from them, on the built-in plan
    /// ([`engram_model::turns::recall_plan`]): at most
    /// [`engram_model::turns::RECALL_TOP_K`]. Persists nothing.
    pub fn recall(&mut self, question: &str) -> Result<Recalled, TurnError> {
        self.recall_with(RecallArgs::new(question))
    }

    /// [`Self::recall`] with every argument: `top_k`, a token budget for
    /// the memories' lines, the request id.
    pub fn recall_with(&mut self, args: RecallArgs) -> Result<Recalled, TurnError> {
        engram_model::turns::recall(self, args)
    }

    /// Lowers the highest privacy tier this domain's reads may return
    /// (MT-1); a domain opens with `private`, seeing everything. Every read
    /// path then answers as if records above `tier` did not exist. The
    /// ceiling is never raised: a higher `tier` than the current one leaves
    /// it as it is.
    pub fn restrict_to(mut self, tier: types::PrivacyTier) -> Self {
        if tier_rank(tier) < tier_rank(self.state.tier_ceiling) {
            self.state.tier_ceiling = tier;
            if let Some(live) = &mut self.live {
                live.store.data_mut().tier_ceiling = tier;
            }
        }
        self
    }

    /// Forgets this agent (S-FORGET): removes every key of its domain under
    /// its maintenance lock (the one this domain holds, opened for
    /// maintenance; else one taken for the purpose and let go after), then
    /// records in the audit trail that it happened and how many entries
    /// went. Answers how many. The next call gets a fresh instance.
    pub fn forget(&mut self) -> Result<u64> {
        let scope = &self.state.scope;
        let (agent, now, audit) = (
            scope.agent_id().to_owned(),
            scope.clock_time(),
            scope.audit().clone(),
        );
        let removed = match &self._lock {
            Some(lock) => maintenance::forget_under(lock, audit.as_ref(), &agent, now, &mut |_| {}),
            None => maintenance::forget(
                scope.backend().clone(),
                audit.as_ref(),
                &agent,
                now,
                &mut |_| {},
            ),
        };
        self.live = None;
        removed
    }

    /// Holds this domain's calls to `limits` instead of its engine's
    /// ([`Config`]'s read ceiling, candidate, answer, record and batch
    /// limits). The memory its instances may grow to stays its engine's
    /// ([`Config::max_memory_bytes`]); `limits.max_memory_bytes` bounds its
    /// answers to a quarter of it.
    pub fn with_limits(mut self, limits: engram_store::Limits) -> Self {
        self.state.scope.set_limits(limits);
        if let Some(live) = &mut self.live {
            live.store.data_mut().scope.set_limits(limits);
        }
        self
    }

    /// Takes this domain's time (the engine's transaction time and the
    /// audit entries' stamps) from `clock` instead of its engine's
    /// ([`Config::clock`]).
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.state.scope.set_clock(clock.clone());
        if let Some(live) = &mut self.live {
            live.store.data_mut().scope.set_clock(clock);
        }
        self
    }

    /// The highest privacy tier this domain's reads may return (MT-1).
    pub fn tier_ceiling(&self) -> types::PrivacyTier {
        self.state.tier_ceiling
    }

    /// Keeps what this domain writes from now on for `ms` milliseconds only
    /// (`domain.expire-after`), or, with `None`, until it is removed
    /// otherwise (the default). A record expires at its time of writing (a
    /// FACT's transaction time, the engine's time for an EVENT or STATE)
    /// plus `ms`; from then on no read answers it, and
    /// [`Domain::expire`] removes it.
    pub fn set_expire_after(&mut self, ms: Option<u64>) {
        self.state.expire_after = ms;
        if let Some(live) = self.live.as_mut() {
            live.store.data_mut().expire_after = ms;
        }
    }

    /// How long this domain keeps what it writes, in milliseconds; `None`
    /// until removed otherwise.
    pub fn expire_after(&self) -> Option<u64> {
        self.state.expire_after
    }

    /// Replaces the summarizer this domain's cycles call.
    pub fn with_summarizer(mut self, summarizer: Arc<dyn Summarizer>) -> Self {
        self.state.summarizer = summarizer.clone();
        if let Some(live) = &mut self.live {
            live.store.data_mut().summarizer = summarizer;
        }
        self
    }

    /// Replaces the ranker this domain's cycles call.
    pub fn with_ranker(mut self, ranker: Arc<dyn Ranker>) -> Self {
        self.state.ranker = ranker.clone();
        if let Some(live) = &mut self.live {
            live.store.data_mut().ranker = ranker;
        }
        self
    }

    /// Replaces the tokenizer this domain's cycles count a prompt's tokens
    /// with.
    pub fn with_tokenizer(mut self, tokenizer: Arc<dyn Tokenizer>) -> Self {
        self.state.tokenizer = tokenizer.clone();
        if let Some(live) = &mut self.live {
            live.store.data_mut().tokenizer = tokenizer;
        }
        self
    }

    /// Validates `plan` and begins a cycle (B-005). `Ok(Err(_))` is a
    /// refused plan: nothing ran.
    pub fn begin_cycle(
        &mut self,
        plan: &cycle::ExecutionPlan,
        session_ref: &str,
        request_id: &str,
    ) -> Result<Result<Cycle, cycle::PlanError>> {
        let begun = self.call(None, |engine, store| {
            engine
                .engram_memory_cycle()
                .cycle()
                .call_begin(store, plan, session_ref, request_id)
        })?;
        let instance = self.restarts;
        Ok(begun.map(|resource| Cycle { resource, instance }))
    }

    /// The cycle's resource, if the instance it was begun in still runs.
    fn resource(&self, cycle: &Cycle) -> Result<wasmtime::component::ResourceAny> {
        if cycle.instance != self.restarts || self.live.is_none() {
            bail!(
                "this cycle was lost when its instance was stopped; \
                 nothing it staged was persisted (B5-D1)"
            );
        }
        Ok(cycle.resource)
    }

    /// Runs one stage of a cycle with the transient inputs given.
    pub fn run_stage(
        &mut self,
        cycle: &Cycle,
        stage: cycle::Stage,
        input: &cycle::TurnInput,
    ) -> Result<Result<Vec<cycle::StepResult>, cycle::CycleError>> {
        let resource = self.resource(cycle)?;
        self.call(None, |engine, store| {
            engine
                .engram_memory_cycle()
                .cycle()
                .call_run_stage(store, resource, stage, input)
        })
    }

    /// The output of a step of a cycle, if it ran.
    pub fn step_output(&mut self, cycle: &Cycle, step: &str) -> Result<Option<cycle::StepOutput>> {
        let resource = self.resource(cycle)?;
        self.call(None, |engine, store| {
            engine
                .engram_memory_cycle()
                .cycle()
                .call_output(store, resource, step)
        })
    }

    /// Commits a cycle: every staged memory in one atomic commit (B5-D1).
    /// A cycle whose instance was stopped answers `Err`: nothing it staged
    /// is left to commit.
    pub fn commit_cycle(
        &mut self,
        cycle: &Cycle,
    ) -> Result<Result<Vec<String>, cycle::CycleError>> {
        let resource = self.resource(cycle)?;
        self.call_exclusive(None, |engine, store| {
            engine
                .engram_memory_cycle()
                .cycle()
                .call_commit(store, resource)
        })
    }

    /// Drops a cycle; anything it staged and did not commit is gone. A
    /// cycle whose instance was stopped is gone already.
    pub fn drop_cycle(&mut self, cycle: Cycle) -> Result<()> {
        let Ok(resource) = self.resource(&cycle) else {
            return Ok(());
        };
        self.call(None, |_, store| resource.resource_drop(store))
    }

    /// One page of a maintenance export of the domain, from `start` (none
    /// for the first page), at most `limit` items (IO-W7).
    pub fn export_page(
        &mut self,
        start: Option<&[u8]>,
        limit: u32,
    ) -> Result<Result<export::ExportPage, export::MaintenanceError>> {
        self.call(None, |engine, store| {
            engine
                .engram_memory_maintenance()
                .call_export(store, start, limit)
        })
    }

    /// Removes at most `limit` records whose expiry has passed from every
    /// index, in one commit with an audit entry each (IO-W7): how many
    /// went. Fewer than `limit` means none is left.
    pub fn expire(&mut self, limit: u32) -> Result<Result<u32, export::MaintenanceError>> {
        self.call_exclusive(None, |engine, store| {
            engine.engram_memory_maintenance().call_expire(store, limit)
        })
    }

    /// Imports exported items in one commit (IO-W7): how many were new.
    pub fn import(
        &mut self,
        items: &[export::ExportedItem],
    ) -> Result<Result<u32, export::MaintenanceError>> {
        self.call_exclusive(None, |engine, store| {
            engine.engram_memory_maintenance().call_import(store, items)
        })
    }

    /// Reads records (IO-R1 … IO-R7). `Ok(Err(_))` is a refused read, a
    /// typed error; `Err` means the call itself failed.
    pub fn read(
        &mut self,
        request: &io::ReadRequest,
    ) -> Result<Result<io::ReadResult, io::ReadError>> {
        let audited = Audited {
            operation: audit::Operation::Read,
            request_id: &request.request_id,
            source: None,
            record_type: Some(request.record_type),
        };
        self.call(Some(audited), |engine, store| {
            engine.engram_memory_io().call_read(store, request)
        })
    }
}

/// What a call's error says when it stopped the domain's instance (it ran
/// past its time, grew past its memory, trapped, or a call of the host it
/// made failed): why. The domain's next call gets a fresh instance. Find it
/// with `error.downcast_ref::<Stopped>()`.
#[derive(Debug)]
pub struct Stopped(String);

impl std::fmt::Display for Stopped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}; its instance was stopped, and the next call gets a fresh one",
            self.0
        )
    }
}

/// A cycle in flight in a [`Domain`]; pass it back to the domain's cycle
/// calls, and to [`Domain::drop_cycle`] when done. It lives as long as the
/// instance it was begun in.
#[derive(Debug)]
pub struct Cycle {
    resource: wasmtime::component::ResourceAny,
    /// The domain's restart count when the cycle began: which instance.
    instance: u64,
}

/// What one engine instance may reach: its agent's part of the store (the
/// [`Scope`] every host shares), its algorithms, and how it was opened.
#[derive(Clone)]
struct DomainState {
    scope: Scope,
    mode: Mode,
    summarizer: Arc<dyn Summarizer>,
    ranker: Arc<dyn Ranker>,
    tokenizer: Arc<dyn Tokenizer>,
    tier_ceiling: types::PrivacyTier,
    expire_after: Option<u64>,
    limits: StoreLimits,
}

engram_store::engine_entry_from_wit!(wit_audit, types);

fn storage_error(error: backend::StoreError) -> persistence::StorageError {
    match error {
        backend::StoreError::Conflict => persistence::StorageError::Conflict,
        backend::StoreError::Unavailable(why) => persistence::StorageError::Unavailable(why),
    }
}

impl persistence::Host for DomainState {
    fn get(&mut self, key: Vec<u8>) -> Result<Option<Vec<u8>>, persistence::StorageError> {
        self.scope.get(&key).map_err(storage_error)
    }

    fn get_many(
        &mut self,
        keys: Vec<Vec<u8>>,
    ) -> Result<Vec<Option<Vec<u8>>>, persistence::StorageError> {
        self.scope.get_many(&keys).map_err(storage_error)
    }

    fn scan(
        &mut self,
        start: Vec<u8>,
        end: Vec<u8>,
        limit: u32,
        order: persistence::Direction,
    ) -> Result<Vec<persistence::Entry>, persistence::StorageError> {
        let order = match order {
            persistence::Direction::Ascending => backend::Order::Ascending,
            persistence::Direction::Descending => backend::Order::Descending,
        };
        let pairs = self
            .scope
            .scan(&start, &end, limit, order)
            .map_err(storage_error)?;
        Ok(pairs
            .into_iter()
            .map(|(key, value)| persistence::Entry { key, value })
            .collect())
    }

    fn commit(
        &mut self,
        preconditions: Vec<persistence::Precondition>,
        ops: Vec<persistence::Op>,
        trail: Vec<wit_audit::Entry>,
    ) -> Result<(), persistence::StorageError> {
        let preconditions = preconditions
            .into_iter()
            .map(|p| match p {
                persistence::Precondition::Absent(key) => backend::Precondition::Absent(key),
                persistence::Precondition::Holds(e) => backend::Precondition::Holds(e.key, e.value),
            })
            .collect();
        let ops = ops
            .into_iter()
            .map(|op| match op {
                persistence::Op::Put(e) => backend::Op::Put(e.key, e.value),
                persistence::Op::Delete(key) => backend::Op::Delete(key),
            })
            .collect();
        let trail = trail.into_iter().map(engine_entry).collect();
        self.scope
            .commit(preconditions, ops, trail)
            .map_err(storage_error)
    }
}

impl wit_audit::Host for DomainState {
    fn append(&mut self, entry: wit_audit::Entry) -> wasmtime::Result<()> {
        self.scope
            .append(engine_entry(entry))
            .map_err(wasmtime::Error::from_anyhow)
    }
}

impl wit_domain::Host for DomainState {
    fn agent(&mut self) -> String {
        self.scope.agent_id().to_owned()
    }

    fn mode(&mut self) -> wit_domain::AccessMode {
        match self.mode {
            Mode::Online => wit_domain::AccessMode::Online,
            Mode::Maintenance => wit_domain::AccessMode::Maintenance,
        }
    }

    fn now(&mut self) -> i64 {
        self.scope.now()
    }

    fn answer_byte_limit(&mut self) -> u64 {
        self.scope.limits().answer_byte_limit()
    }

    fn read_limit_ceiling(&mut self) -> u32 {
        self.scope.limits().read_limit_ceiling
    }

    fn candidate_limit(&mut self) -> u32 {
        self.scope.limits().candidate_limit
    }

    fn tier_ceiling(&mut self) -> types::PrivacyTier {
        self.tier_ceiling
    }

    fn expire_after(&mut self) -> Option<u64> {
        self.expire_after
    }

    fn id_entropy(&mut self) -> wasmtime::Result<(u64, u64)> {
        let random = || {
            getrandom::u64().map_err(|e| {
                wasmtime::Error::from_anyhow(anyhow::anyhow!("no entropy for record ids: {e}"))
            })
        };
        Ok((random()?, random()?))
    }
}

/// Ranks a privacy tier: public < sensitive < private.
fn tier_rank(tier: types::PrivacyTier) -> u8 {
    match tier {
        types::PrivacyTier::Public => 0,
        types::PrivacyTier::Sensitive => 1,
        types::PrivacyTier::Private => 2,
    }
}

impl wit_summarizer::Host for DomainState {
    fn summarize(
        &mut self,
        user_message: String,
        model_response: Option<String>,
    ) -> Result<wit_summarizer::Summary, String> {
        let summarizer = &self.summarizer;
        let summary = plugin("summarizer", || {
            summarizer.summarize(&user_message, model_response.as_deref())
        })?;
        if let Some(why) = self
            .scope
            .limits()
            .summary_refusal(&summary.summary, &summary.keywords)
        {
            return Err(why);
        }
        Ok(summary.into())
    }
}

impl wit_ranker::Host for DomainState {
    fn rank(
        &mut self,
        query_keywords: Vec<String>,
        candidates: Vec<wit_ranker::Candidate>,
        k: u32,
    ) -> Result<Vec<String>, String> {
        let candidates: Vec<Candidate> = candidates.into_iter().map(Candidate::from).collect();
        let ranker = &self.ranker;
        plugin("ranker", || ranker.rank(&query_keywords, &candidates, k))
    }
}

impl wit_tokenizer::Host for DomainState {
    fn count_tokens(&mut self, text: String) -> Result<u32, String> {
        let tokenizer = &self.tokenizer;
        plugin("tokenizer", || tokenizer.count_tokens(&text))
    }
}

/// Calls an algorithm of the host's: one that panics fails the cycle (its
/// error says which), never the host.
fn plugin<T>(name: &str, call: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(call))
        .map_err(|_| format!("the {name} panicked"))?
}

impl bindings::engram::memory::types::Host for DomainState {}
