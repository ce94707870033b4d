//! Persistence backends: ordered, transactional key-value stores over bytes,
//! with the audit trail kept beside them, shared by every host that keeps a
//! store (the wasmtime host and the WASI build alike).
//!
//! A backend knows nothing of records, agents or the contract. A host puts
//! one agent's domain in front of it by prefixing every key
//! ([`domain_prefix`]), so the engine can neither see nor reach another
//! domain.

#![warn(missing_docs)]

#[cfg(feature = "sqlite")]
mod group;
pub mod maintenance;
mod memory;
#[cfg(feature = "postgres")]
mod postgres;
pub mod postgres_defaults;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod schema;
pub mod scope;
pub mod settings;
#[cfg(feature = "sqlite")]
mod sqlite;
#[cfg(feature = "sqlite")]
mod trail;
mod turns;

pub use memory::MemoryBackend;
#[cfg(feature = "postgres")]
pub use postgres::{PostgresBackend, PostgresOptions, SCHEMA_VERSION as POSTGRES_SCHEMA_VERSION};
pub use scope::{Limits, Scope};
#[cfg(feature = "sqlite")]
pub use sqlite::{EMPTY_PATH, SqliteBackend, SqliteOptions, Synchronous};

use engram_model::audit::{AuditEntry, AuditSink, MemoryAudit};
#[cfg(feature = "sqlite")]
use std::path::Path;
use std::sync::Arc;

/// A persistence backend together with the audit trail kept beside it: what
/// a host needs to open domains.
#[derive(Clone)]
pub struct Storage {
    /// Where the key-value pairs of every domain live.
    pub backend: Arc<dyn Backend>,
    /// Where the audit trail lives.
    pub audit: Arc<dyn AuditSink>,
}

impl Storage {
    /// A store and a trail that live in memory only.
    pub fn memory() -> Self {
        Storage {
            backend: Arc::new(MemoryBackend::new()),
            audit: Arc::new(MemoryAudit::new()),
        }
    }

    /// A SQLite file holding both, created if absent.
    #[cfg(feature = "sqlite")]
    pub fn sqlite(path: impl AsRef<Path>) -> anyhow::Result<Self> {
        let store = Arc::new(SqliteBackend::open(path)?);
        Ok(Storage {
            backend: store.clone(),
            audit: store,
        })
    }

    /// A PostgreSQL database holding both, its tables created if absent
    /// (`postgres://user@host:port/database?…`).
    #[cfg(feature = "postgres")]
    pub fn postgres(url: &str) -> anyhow::Result<Self> {
        let store = Arc::new(PostgresBackend::open(url)?);
        Ok(Storage {
            backend: store.clone(),
            audit: store,
        })
    }

    /// Opens the store `spec` names: a `postgres://` or `postgresql://` URL,
    /// or else a SQLite file path (the default kind). Any other URL scheme is
    /// refused.
    #[cfg(feature = "sqlite")]
    pub fn open(spec: &str) -> anyhow::Result<Self> {
        match spec.split_once("://") {
            Some((scheme, _))
                if scheme.eq_ignore_ascii_case("postgres")
                    || scheme.eq_ignore_ascii_case("postgresql") =>
            {
                #[cfg(feature = "postgres")]
                return Self::postgres(spec);
                #[cfg(not(feature = "postgres"))]
                anyhow::bail!("{spec}: this build of Engram opens no PostgreSQL store")
            }
            Some((scheme, _)) => anyhow::bail!(
                "{scheme}://: not a kind of store Engram opens (give a SQLite file path or a postgres:// URL)"
            ),
            None => Self::sqlite(spec),
        }
    }
}

/// One pair read by a scan.
pub type Pair = (Vec<u8>, Vec<u8>);

/// The order of a scan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Smallest key first.
    Ascending,
    /// Largest key first.
    Descending,
}

/// A condition a commit checks before it changes anything.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Precondition {
    /// The key holds no value.
    Absent(Vec<u8>),
    /// The key holds exactly this value.
    Holds(Vec<u8>, Vec<u8>),
}

/// One change in a commit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// Store a value, replacing any value under the key.
    Put(Vec<u8>, Vec<u8>),
    /// Remove a key if present.
    Delete(Vec<u8>),
}

/// Why a backend call failed.
#[derive(Debug, PartialEq, Eq)]
pub enum StoreError {
    /// A precondition did not hold; nothing changed.
    Conflict,
    /// The store could not do it; nothing changed.
    Unavailable(String),
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::Conflict => f.write_str("a precondition did not hold"),
            StoreError::Unavailable(why) => write!(f, "storage unavailable: {why}"),
        }
    }
}

impl std::error::Error for StoreError {}

/// An ordered key-value store with atomic, conditional batches.
///
/// Implementations must make [`Backend::commit`] all or nothing, and
/// durable when it returns `Ok`.
pub trait Backend: Send + Sync {
    /// The value under `key`, if any.
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError>;

    /// The value under each of `keys`, in their order. The default asks
    /// [`Backend::get`] for each; a store that can read them together
    /// should.
    fn get_many(&self, keys: &[Vec<u8>]) -> Result<Vec<Option<Vec<u8>>>, StoreError> {
        keys.iter().map(|key| self.get(key)).collect()
    }

    /// The value under each key of a prefix of `keys`, in their order:
    /// every key's, unless the values reach `budget` bytes first; then
    /// those up to the value that reaches it (so at least one). The
    /// default reads 16 keys at a time through [`Backend::get_many`], so it
    /// never holds much more than the budget; a store whose every call
    /// costs a crossing into another runtime answers in one.
    fn get_many_within(
        &self,
        keys: &[Vec<u8>],
        budget: u64,
    ) -> Result<Vec<Option<Vec<u8>>>, StoreError> {
        let mut values = Vec::with_capacity(keys.len());
        let mut bytes = 0u64;
        for chunk in keys.chunks(16) {
            for value in self.get_many(chunk)? {
                bytes += value.as_ref().map_or(0, |v| v.len() as u64);
                values.push(value);
                if bytes >= budget {
                    return Ok(values);
                }
            }
        }
        Ok(values)
    }

    /// At most `limit` pairs with keys in `start..end`, in `order`.
    fn scan(
        &self,
        start: &[u8],
        end: &[u8],
        limit: u32,
        order: Order,
    ) -> Result<Vec<Pair>, StoreError>;

    /// Checks every precondition, then applies every op, atomically.
    fn commit(&self, preconditions: &[Precondition], ops: &[Op]) -> Result<(), StoreError>;

    /// Waits until this host is the only one writing the domain whose keys
    /// start with `prefix`, so writers of one domain queue instead of
    /// losing commits to each other; `Ok(true)` when it holds the domain
    /// and [`Backend::unlock_domain`] must follow. The default holds
    /// nothing (`Ok(false)`).
    fn lock_domain(&self, prefix: &[u8]) -> Result<bool, StoreError> {
        let _ = prefix;
        Ok(false)
    }

    /// Lets the next writer of the domain in.
    fn unlock_domain(&self, prefix: &[u8]) {
        let _ = prefix;
    }

    /// Commits as [`Backend::commit`] and, when `sink` is this backend's
    /// own trail, appends `trail` in the same transaction: then the answer
    /// is `Ok(true)`, and a commit that stored something always has its
    /// audit entries. `Ok(false)` means the entries were not written and
    /// the caller appends them to `sink` after the commit (not atomic: the
    /// default, for a backend and a trail kept apart). A backend that
    /// wraps another forwards this call.
    fn commit_audited(
        &self,
        preconditions: &[Precondition],
        ops: &[Op],
        trail: &[AuditEntry],
        sink: &dyn AuditSink,
    ) -> Result<bool, StoreError> {
        let _ = (trail, sink);
        self.commit(preconditions, ops).map(|()| false)
    }
}

/// The write-lock key of a domain: 64 bits of a hash of its prefix, stable
/// across hosts and builds (FNV-1a, from a basis of its own). PostgreSQL
/// takes it as an advisory lock; a SQLite store locks a byte of its trail
/// file chosen by it (docs/store-format.md, "Sharing a file").
pub fn domain_lock_key(prefix: &[u8]) -> i64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325 ^ 0x656e_6772_616d; // "engram"
    for byte in prefix {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash as i64
}

/// Whether `sink` is the very object `backend` is: a store that keeps its
/// own trail, which can then take a commit's entries in its transaction.
pub fn same_object<T>(backend: &T, sink: &dyn AuditSink) -> bool {
    std::ptr::addr_eq(backend as *const T, sink as *const dyn AuditSink)
}

/// A unit enum's name as its JSON holds it (`WRITE`, `ACCEPTED`): an audit
/// query's filters as a store matches them against its rows.
pub fn name_of(value: impl serde::Serialize) -> anyhow::Result<String> {
    match serde_json::to_value(value)? {
        serde_json::Value::String(name) => Ok(name),
        other => anyhow::bail!("not a name: {other}"),
    }
}

/// The key prefix of an agent's domain: the id's length, then the id. No
/// domain's prefix is a prefix of another's, whatever bytes the ids hold.
pub fn domain_prefix(agent_id: &str) -> Vec<u8> {
    let mut prefix = Vec::with_capacity(4 + agent_id.len());
    prefix.extend_from_slice(&(agent_id.len() as u32).to_be_bytes());
    prefix.extend_from_slice(agent_id.as_bytes());
    prefix
}
