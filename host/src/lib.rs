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

#![warn(missing_docs)]

pub mod algorithms;
pub mod audit;
pub mod backend;
pub mod json;
pub mod plans;

pub use algorithms::{Bm25Ranker, Candidate, ExtractiveSummarizer, Ranker, Summarizer, Summary};
pub use audit::{AuditEntry, AuditQuery, AuditSink, MemoryAudit};
pub use backend::{
    Backend, MemoryBackend, PostgresBackend, PostgresOptions, SqliteBackend, SqliteOptions,
    Storage, Synchronous,
};

use anyhow::{Context, Result, bail};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};
use wasmtime::Store;
use wasmtime::component::{Component, HasSelf, Linker};

#[allow(missing_docs)]
mod bindings {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "engine",
        imports: { "engram:memory/audit.append": trappable },
        additional_derives: [PartialEq],
    });
}

use bindings::engram::memory::{
    audit as wit_audit, domain as wit_domain, persistence, ranker as wit_ranker,
    summarizer as wit_summarizer,
};

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

/// The engine component, as built from `guest/` by the build script.
pub const COMPONENT: &[u8] = include_bytes!(env!("ENGRAM_COMPONENT_PATH"));

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

/// What a host sets for every domain it opens.
#[derive(Clone)]
pub struct Config {
    /// The largest `limit` a read may carry (IO-G6). 1,000 by default.
    pub read_limit_ceiling: u32,
    /// The engine's clock; the system clock by default.
    pub clock: Clock,
    /// How many keyword-index entries one RetrieveMemory step may read to
    /// find its candidates (IO-G6). 256 by default.
    pub candidate_limit: u32,
    /// The summarizer cycles call; [`ExtractiveSummarizer`] by default.
    pub summarizer: Arc<dyn Summarizer>,
    /// The ranker cycles call; [`Bm25Ranker`] by default.
    pub ranker: Arc<dyn Ranker>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            read_limit_ceiling: 1_000,
            clock: Arc::new(system_time_ms),
            candidate_limit: 256,
            summarizer: Arc::new(ExtractiveSummarizer::default()),
            ranker: Arc::new(Bm25Ranker),
        }
    }
}

/// Milliseconds since the Unix epoch by the system clock.
pub fn system_time_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// The longest agent id a domain may be opened for, in bytes.
pub const MAX_AGENT_ID_LEN: usize = 256;

/// The engine, compiled once; opens a domain per agent.
pub struct Engram {
    engine: wasmtime::Engine,
    pre: bindings::EnginePre<DomainState>,
    config: Config,
}

impl Engram {
    /// Compiles the engine component with the default [`Config`].
    pub fn new() -> Result<Self> {
        Self::with_config(Config::default())
    }

    /// Compiles the engine component.
    pub fn with_config(config: Config) -> Result<Self> {
        if config.read_limit_ceiling == 0 || config.candidate_limit == 0 {
            bail!("the read-limit ceiling and the candidate limit must be at least 1");
        }
        let engine = wasmtime::Engine::new(&wasmtime::Config::new())?;
        let component = Component::new(&engine, COMPONENT)
            .map_err(anyhow::Error::from)
            .context("compiling the engine component")?;
        let mut linker = Linker::new(&engine);
        bindings::Engine::add_to_linker::<DomainState, HasSelf<DomainState>>(
            &mut linker,
            |state| state,
        )?;
        let pre = bindings::EnginePre::new(linker.instantiate_pre(&component)?)?;
        Ok(Engram {
            engine,
            pre,
            config,
        })
    }

    /// The compiled component, for inspecting its imports and exports.
    pub fn component(&self) -> &Component {
        self.pre.instance_pre().component()
    }

    /// The wasmtime engine the component is compiled for.
    pub fn engine(&self) -> &wasmtime::Engine {
        &self.engine
    }

    /// Opens the memory domain of one agent over `backend`: a fresh instance
    /// of the engine whose storage is scoped to that agent (IO-W6), whose
    /// audit entries go to `audit`, and whose writes are allowed by `mode`
    /// (IO-W7).
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
        let state = DomainState {
            agent_id: agent_id.to_owned(),
            prefix: domain_prefix(agent_id),
            mode,
            backend,
            audit,
            summarizer: self.config.summarizer.clone(),
            ranker: self.config.ranker.clone(),
            config: self.config.clone(),
        };
        let mut store = Store::new(&self.engine, state);
        let instance = self.pre.instantiate(&mut store)?;
        Ok(Domain { store, instance })
    }
}

/// The key prefix of an agent's domain: the id's length, then the id. No
/// domain's prefix is a prefix of another's, whatever bytes the ids hold.
fn domain_prefix(agent_id: &str) -> Vec<u8> {
    let mut prefix = Vec::with_capacity(4 + agent_id.len());
    prefix.extend_from_slice(&(agent_id.len() as u32).to_be_bytes());
    prefix.extend_from_slice(agent_id.as_bytes());
    prefix
}

/// One agent's memory domain: an instance of the engine over that agent's
/// part of the store. Every IO call goes through it.
pub struct Domain {
    store: Store<DomainState>,
    instance: bindings::Engine,
}

impl Domain {
    /// The agent this domain belongs to.
    pub fn agent_id(&self) -> &str {
        &self.store.data().agent_id
    }

    /// Writes one record (IO-W1 … IO-W8). `Ok` carries the contract's
    /// answer, ACCEPTED or REJECTED; `Err` means the call itself failed (the
    /// engine trapped or the audit trail could not be written).
    pub fn write(&mut self, request: &io::WriteRequest) -> Result<io::WriteResult> {
        Ok(self
            .instance
            .engram_memory_io()
            .call_write(&mut self.store, request)?)
    }

    /// The newest versions of one FACT key, newest first (MT-2).
    pub fn versions(
        &mut self,
        request: &history::VersionsRequest,
    ) -> Result<Result<Vec<types::StoredFact>, io::ReadError>> {
        Ok(self
            .instance
            .engram_memory_history()
            .call_versions(&mut self.store, request)?)
    }

    /// The version of one FACT key as of a time, on the valid or the
    /// transaction axis (MT-2).
    pub fn as_of(
        &mut self,
        request: &history::AsOfRequest,
    ) -> Result<Result<Option<types::StoredFact>, io::ReadError>> {
        Ok(self
            .instance
            .engram_memory_history()
            .call_as_of(&mut self.store, request)?)
    }

    /// Writes a value under an id of a namespace (MT-7): a FACT write.
    pub fn put(&mut self, request: &graph::PutRequest) -> Result<io::WriteResult> {
        Ok(self
            .instance
            .engram_memory_graph()
            .call_put(&mut self.store, request)?)
    }

    /// The current version under an id of a namespace (MT-7).
    pub fn get(
        &mut self,
        request_id: &str,
        namespace: &graph::Namespace,
        id: &str,
    ) -> Result<Result<Option<types::StoredFact>, io::ReadError>> {
        Ok(self.instance.engram_memory_graph().call_get(
            &mut self.store,
            &request_id.to_owned(),
            namespace,
            id,
        )?)
    }

    /// The current versions in a namespace, in key order (MT-7).
    pub fn list(
        &mut self,
        request_id: &str,
        namespace: &graph::Namespace,
        limit: u32,
    ) -> Result<Result<Vec<types::StoredFact>, io::ReadError>> {
        Ok(self.instance.engram_memory_graph().call_list(
            &mut self.store,
            &request_id.to_owned(),
            namespace,
            limit,
        )?)
    }

    /// The current entities of one type, in key order (MT-8).
    pub fn entities_of_type(
        &mut self,
        request_id: &str,
        entity_type: types::EntityType,
        limit: u32,
    ) -> Result<Result<Vec<types::StoredFact>, io::ReadError>> {
        Ok(self.instance.engram_memory_graph().call_entities_of_type(
            &mut self.store,
            &request_id.to_owned(),
            entity_type,
            limit,
        )?)
    }

    /// The current relationships of one entity (MT-8).
    pub fn relationships_of(
        &mut self,
        request: &graph::RelationshipsRequest,
    ) -> Result<Result<Vec<types::StoredFact>, io::ReadError>> {
        Ok(self
            .instance
            .engram_memory_graph()
            .call_relationships_of(&mut self.store, request)?)
    }

    /// Walks the graph from one entity within the request's bounds (MT-9).
    pub fn traverse(
        &mut self,
        request: &graph::TraverseRequest,
    ) -> Result<Result<graph::Traversal, io::ReadError>> {
        Ok(self
            .instance
            .engram_memory_graph()
            .call_traverse(&mut self.store, request)?)
    }

    /// Replaces the summarizer this domain's cycles call.
    pub fn with_summarizer(mut self, summarizer: Arc<dyn Summarizer>) -> Self {
        self.store.data_mut().summarizer = summarizer;
        self
    }

    /// Replaces the ranker this domain's cycles call.
    pub fn with_ranker(mut self, ranker: Arc<dyn Ranker>) -> Self {
        self.store.data_mut().ranker = ranker;
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
        let begun = self.instance.engram_memory_cycle().cycle().call_begin(
            &mut self.store,
            plan,
            session_ref,
            request_id,
        )?;
        Ok(begun.map(Cycle))
    }

    /// Runs one stage of a cycle with the transient inputs given.
    pub fn run_stage(
        &mut self,
        cycle: &Cycle,
        stage: cycle::Stage,
        input: &cycle::TurnInput,
    ) -> Result<Result<Vec<cycle::StepResult>, cycle::CycleError>> {
        Ok(self.instance.engram_memory_cycle().cycle().call_run_stage(
            &mut self.store,
            cycle.0,
            stage,
            input,
        )?)
    }

    /// The output of a step of a cycle, if it ran.
    pub fn step_output(&mut self, cycle: &Cycle, step: &str) -> Result<Option<cycle::StepOutput>> {
        Ok(self.instance.engram_memory_cycle().cycle().call_output(
            &mut self.store,
            cycle.0,
            step,
        )?)
    }

    /// Commits a cycle: every staged memory in one atomic commit (B5-D1).
    pub fn commit_cycle(
        &mut self,
        cycle: &Cycle,
    ) -> Result<Result<Vec<String>, cycle::CycleError>> {
        Ok(self
            .instance
            .engram_memory_cycle()
            .cycle()
            .call_commit(&mut self.store, cycle.0)?)
    }

    /// Drops a cycle; anything it staged and did not commit is gone.
    pub fn drop_cycle(&mut self, cycle: Cycle) -> Result<()> {
        Ok(cycle.0.resource_drop(&mut self.store)?)
    }

    /// Reads records (IO-R1 … IO-R7). `Ok(Err(_))` is a refused read, a
    /// typed error; `Err` means the call itself failed.
    pub fn read(
        &mut self,
        request: &io::ReadRequest,
    ) -> Result<Result<io::ReadResult, io::ReadError>> {
        Ok(self
            .instance
            .engram_memory_io()
            .call_read(&mut self.store, request)?)
    }
}

/// A cycle in flight in a [`Domain`]; pass it back to the domain's cycle
/// calls, and to [`Domain::drop_cycle`] when done.
#[derive(Debug)]
pub struct Cycle(wasmtime::component::ResourceAny);

/// What one engine instance may reach: its agent's part of the store.
struct DomainState {
    agent_id: String,
    prefix: Vec<u8>,
    mode: Mode,
    backend: Arc<dyn Backend>,
    audit: Arc<dyn AuditSink>,
    summarizer: Arc<dyn Summarizer>,
    ranker: Arc<dyn Ranker>,
    config: Config,
}

impl DomainState {
    fn scoped(&self, key: &[u8]) -> Vec<u8> {
        [self.prefix.as_slice(), key].concat()
    }
}

fn storage_error(error: backend::StoreError) -> persistence::StorageError {
    match error {
        backend::StoreError::Conflict => persistence::StorageError::Conflict,
        backend::StoreError::Unavailable(why) => persistence::StorageError::Unavailable(why),
    }
}

impl persistence::Host for DomainState {
    fn get(&mut self, key: Vec<u8>) -> Result<Option<Vec<u8>>, persistence::StorageError> {
        self.backend.get(&self.scoped(&key)).map_err(storage_error)
    }

    fn scan(
        &mut self,
        start: Vec<u8>,
        end: Vec<u8>,
        limit: u32,
        order: persistence::Direction,
    ) -> Result<Vec<persistence::Entry>, persistence::StorageError> {
        // The engine never needs more than one read's or one retrieval's
        // worth of entries.
        let ceiling = self
            .config
            .read_limit_ceiling
            .max(self.config.candidate_limit);
        if limit > ceiling {
            return Err(persistence::StorageError::Unavailable(format!(
                "a scan of {limit} entries is above the ceiling of {ceiling}"
            )));
        }
        let order = match order {
            persistence::Direction::Ascending => backend::Order::Ascending,
            persistence::Direction::Descending => backend::Order::Descending,
        };
        let pairs = self
            .backend
            .scan(&self.scoped(&start), &self.scoped(&end), limit, order)
            .map_err(storage_error)?;
        let prefix = self.prefix.len();
        Ok(pairs
            .into_iter()
            .map(|(key, value)| persistence::Entry {
                key: key[prefix..].to_vec(),
                value,
            })
            .collect())
    }

    fn commit(
        &mut self,
        preconditions: Vec<persistence::Precondition>,
        ops: Vec<persistence::Op>,
    ) -> Result<(), persistence::StorageError> {
        let preconditions: Vec<_> = preconditions
            .into_iter()
            .map(|p| match p {
                persistence::Precondition::Absent(key) => {
                    backend::Precondition::Absent(self.scoped(&key))
                }
                persistence::Precondition::Holds(e) => {
                    backend::Precondition::Holds(self.scoped(&e.key), e.value)
                }
            })
            .collect();
        let ops: Vec<_> = ops
            .into_iter()
            .map(|op| match op {
                persistence::Op::Put(e) => backend::Op::Put(self.scoped(&e.key), e.value),
                persistence::Op::Delete(key) => backend::Op::Delete(self.scoped(&key)),
            })
            .collect();
        self.backend
            .commit(&preconditions, &ops)
            .map_err(storage_error)
    }
}

impl wit_audit::Host for DomainState {
    fn append(&mut self, entry: wit_audit::Entry) -> wasmtime::Result<()> {
        let (outcome, stored_id, count, reason) = match entry.outcome {
            wit_audit::Outcome::Accepted(id) => (audit::Outcome::Accepted, Some(id), None, None),
            wit_audit::Outcome::Replayed(id) => (audit::Outcome::Replayed, Some(id), None, None),
            wit_audit::Outcome::Rejected(why) => (audit::Outcome::Rejected, None, None, Some(why)),
            wit_audit::Outcome::Returned(n) => (audit::Outcome::Returned, None, Some(n), None),
            wit_audit::Outcome::Failed(why) => (audit::Outcome::Failed, None, None, Some(why)),
        };
        let entry = AuditEntry {
            at: (self.config.clock)(),
            agent_id: self.agent_id.clone(),
            request_id: entry.request_id,
            operation: match entry.operation {
                wit_audit::Operation::Write => audit::Operation::Write,
                wit_audit::Operation::Read => audit::Operation::Read,
            },
            source: entry.source.map(Into::into),
            record_type: entry.record_type.map(Into::into),
            outcome,
            stored_id,
            count,
            reason,
        };
        self.audit
            .append(&entry)
            .map_err(wasmtime::Error::from_anyhow)
    }
}

impl wit_domain::Host for DomainState {
    fn agent(&mut self) -> String {
        self.agent_id.clone()
    }

    fn mode(&mut self) -> wit_domain::AccessMode {
        match self.mode {
            Mode::Online => wit_domain::AccessMode::Online,
            Mode::Maintenance => wit_domain::AccessMode::Maintenance,
        }
    }

    fn now(&mut self) -> i64 {
        (self.config.clock)()
    }

    fn read_limit_ceiling(&mut self) -> u32 {
        self.config.read_limit_ceiling
    }

    fn candidate_limit(&mut self) -> u32 {
        self.config.candidate_limit
    }
}

impl wit_summarizer::Host for DomainState {
    fn summarize(
        &mut self,
        user_message: String,
        model_response: Option<String>,
    ) -> Result<wit_summarizer::Summary, String> {
        let summary = self
            .summarizer
            .summarize(&user_message, model_response.as_deref())?;
        Ok(wit_summarizer::Summary {
            summary: summary.summary,
            keywords: summary.keywords,
        })
    }
}

impl wit_ranker::Host for DomainState {
    fn rank(
        &mut self,
        query_keywords: Vec<String>,
        candidates: Vec<wit_ranker::Candidate>,
        k: u32,
    ) -> Result<Vec<String>, String> {
        let candidates: Vec<Candidate> = candidates
            .into_iter()
            .map(|c| Candidate {
                id: c.id,
                summary: c.summary,
                keywords: c.keywords,
                timestamp: c.timestamp,
            })
            .collect();
        self.ranker.rank(&query_keywords, &candidates, k)
    }
}

impl bindings::engram::memory::types::Host for DomainState {}
