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
mod config;
mod domain;
mod endpoint;
mod engine;
pub mod limits;
mod native;
pub mod plans;
mod serve;
mod state;
pub mod surface;

pub use config::Config;
pub use domain::{Cycle, Domain, ModelChanged, Stopped};
pub use endpoint::{EndpointEmbedder, endpoint_embedder};
pub use engine::Engram;
pub use engram_model::embedding::{ENDPOINT_TIMEOUT, Endpoint};

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
    engram_model::json_wit_conversions!();
}

pub use algorithms::{
    Bm25Ranker, Candidate, Embedder, ExtractiveSummarizer, Model, O200kTokenizer, Ranker, Role,
    Summarizer, Summary, Tokenizer,
};
pub use audit::{AuditEntry, AuditQuery, AuditSink, MemoryAudit};
pub use backend::{
    Backend, MemoryBackend, PostgresBackend, PostgresOptions, SqliteBackend, SqliteOptions,
    Storage, Synchronous,
};
pub use cache::Origin;
pub use engram_surface::turns::{RecallArgs, Recalled, RememberArgs, Remembered};

/// Why a [`Domain::remember`] or [`Domain::recall`] did not answer: refused
/// by the contract (`Refused`, its `{"plan_error"}` or `{"cycle_error"}`
/// line) or failed in the host (`Failed`). Nothing of it was persisted.
pub type TurnError = engram_surface::turns::TurnError<anyhow::Error>;

engram_surface::domain_cycles!();
engram_surface::domain_engine!();
engram_mcp::domain_graph!();

use std::path::PathBuf;
use std::sync::Arc;

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

use bindings::engram::memory::{ranker as wit_ranker, summarizer as wit_summarizer};

engram_algorithms::ranker_summarizer_conversions!(wit_ranker, wit_summarizer);

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
/// `engram-engine`.
pub const COMPONENT: &[u8] = engram_engine::COMPONENT;

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
pub use engram_model::system_time_ms;

/// The longest agent id a domain may be opened for, in bytes.
pub const MAX_AGENT_ID_LEN: usize = engram_store::scope::MAX_AGENT_ID_LEN;

pub use engram_store::domain_prefix;
