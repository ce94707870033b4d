//! One agent's domain over a store: what every host does between the
//! engine's imports (`persistence`, `audit`, the limits of `domain`) and a
//! [`Backend`], written once for the wasmtime host and the WASI provider
//! alike, in plain types.
//!
//! A [`Scope`] prefixes every key the engine names with the domain's prefix
//! ([`domain_prefix`]), so the engine can neither see nor reach another
//! domain (IO-W6); bounds what one call may read and what one commit may
//! carry ([`Limits`]); conditions every commit on the domain's maintenance
//! lock (IO-W7) and names the lock when it is why a commit was refused; and
//! keeps the audit entries of a commit with it, or appends them to a trail
//! kept apart right after it (IO-W8).
//!
//! The engine's own audit entries come through a binding of the WIT; the
//! [`engine_entry_from_wit!`](crate::engine_entry_from_wit) macro turns
//! them into [`EngineEntry`], the same code for every binding, and
//! [`Scope::audit_entry`] into the trail's [`AuditEntry`].

use crate::maintenance::{lock_key, lock_refusal};
use crate::{Backend, Op, Order, Pair, Precondition, StoreError, domain_prefix};
use engram_model::audit::{self, AuditEntry, AuditSink};
use std::sync::Arc;

/// The model's names an [`EngineEntry`] is made of, for the
/// [`engine_entry_from_wit!`](crate::engine_entry_from_wit) macro.
pub use engram_model::audit::Operation;
pub use engram_model::json::{Actor, Component, RecordType, Source};

/// The longest agent id a domain may be opened for, in bytes (S-AGENT).
pub const MAX_AGENT_ID_LEN: usize = 256;

/// Why `agent` may not name a domain (S-AGENT): none when it may.
pub fn agent_id_problem(agent: &str) -> Option<String> {
    (agent.is_empty() || agent.len() > MAX_AGENT_ID_LEN)
        .then(|| format!("an agent id must be 1 to {MAX_AGENT_ID_LEN} bytes long"))
}

/// A source of the time, in milliseconds since the Unix epoch.
pub type Clock = Arc<dyn Fn() -> i64 + Send + Sync>;

/// What a host lets the engine ask of the store, and the limits the engine
/// is told through `domain` (S-LIMITS). `Limits::default()` holds every
/// host's defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The largest `limit` a read may carry (IO-G6). 1,000 by default.
    pub read_limit_ceiling: u32,
    /// How many keyword-index entries one retrieval may read (IO-G6). 256
    /// by default.
    pub candidate_limit: u32,
    /// The most bytes the records of one answer may take in the store,
    /// before the bound by memory ([`Limits::answer_byte_limit`]). 16 MiB
    /// by default.
    pub max_answer_bytes: u64,
    /// The engine's linear memory limit: an answer may take a quarter of
    /// it at most. 64 MiB by default.
    pub max_memory_bytes: u64,
    /// The largest record a write may carry, and the largest summary a
    /// summarizer may answer (bytes of strings, plus 8 per list item).
    /// 1 MiB by default.
    pub max_record_bytes: usize,
    /// The most puts and deletes one commit may carry. 10,000 by default.
    pub max_batch_ops: u32,
    /// The most bytes of keys and values one commit may carry. 16 MiB by
    /// default.
    pub max_batch_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            read_limit_ceiling: 1_000,
            candidate_limit: 256,
            max_answer_bytes: 16 << 20,
            max_memory_bytes: 64 << 20,
            max_record_bytes: 1 << 20,
            max_batch_ops: 10_000,
            max_batch_bytes: 16 << 20,
        }
    }
}

impl Limits {
    /// The most bytes the records of one answer may take in the store, as
    /// `domain.answer-byte-limit` tells the engine: `max_answer_bytes`, at
    /// most a quarter of the engine's memory, at least 1.
    pub fn answer_byte_limit(&self) -> u64 {
        self.max_answer_bytes.min(self.max_memory_bytes / 4).max(1)
    }

    /// The most keys one `get-many` may ask for and the largest `limit` of
    /// a scan: one read's or one retrieval's worth of entries.
    pub fn scan_ceiling(&self) -> u32 {
        self.read_limit_ceiling.max(self.candidate_limit)
    }

    /// Why a summarizer's answer is refused, if it is: above
    /// `max_record_bytes` in the measure of a record's size (the bytes of
    /// the summary and of each keyword, plus 8 per keyword).
    pub fn summary_refusal(&self, summary: &str, keywords: &[String]) -> Option<String> {
        engram_model::size::summary_refusal(summary, keywords, self.max_record_bytes)
    }

    /// Why a commit of `ops` is refused before it reaches the store, if it
    /// is: above `max_batch_ops` or `max_batch_bytes`.
    fn batch_refusal(&self, ops: &[Op]) -> Option<String> {
        let max_ops = self.max_batch_ops;
        if ops.len() > max_ops as usize {
            return Some(format!(
                "a batch of {} puts and deletes is above the host's limit of {max_ops} (max_batch_ops)",
                ops.len()
            ));
        }
        let bytes: usize = ops
            .iter()
            .map(|op| match op {
                Op::Put(key, value) => key.len() + value.len(),
                Op::Delete(key) => key.len(),
            })
            .sum();
        let max_bytes = self.max_batch_bytes;
        (bytes > max_bytes).then(|| {
            format!(
                "a batch of {bytes} bytes is above the host's limit of {max_bytes} (max_batch_bytes)"
            )
        })
    }
}

/// An audit entry as the engine makes it (`engram:memory/audit.entry`), in
/// plain types.
#[derive(Clone, Debug, PartialEq)]
pub struct EngineEntry {
    /// The request id as given.
    pub request_id: String,
    /// The call.
    pub operation: Operation,
    /// The source of a write.
    pub source: Option<Source>,
    /// The record type written or read.
    pub record_type: Option<RecordType>,
    /// How it ended.
    pub outcome: EngineOutcome,
}

/// How a call ended, as the engine tells it (`audit.outcome`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EngineOutcome {
    /// A write was stored under this id.
    Accepted(String),
    /// A write repeated an earlier request and got its id.
    Replayed(String),
    /// A write was refused, for this reason.
    Rejected(String),
    /// A read returned this many records.
    Returned(u32),
    /// A read was refused, for this reason.
    Failed(String),
    /// An import stored this many new items.
    Applied(u32),
    /// Maintenance removed this record, whose expiry had passed.
    Expired(String),
    /// A RetrieveMemory step returned memories from its candidates.
    Retrieved(Retrieval),
}

/// What a RetrieveMemory step read (`audit.retrieval`, IO-G6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retrieval {
    /// How many memories it returned.
    pub returned: u32,
    /// How many keyword-index entries it read.
    pub entries_read: u32,
    /// How many distinct memories those entries named.
    pub candidates: u32,
    /// Whether it stopped at the candidate limit with entries left unread.
    pub bound_reached: bool,
    /// How many candidates came by meaning alone; `None` when the recall
    /// was by keywords alone.
    pub by_meaning: Option<u32>,
}

/// Writes, in the module it is invoked in, `fn engine_entry(entry:
/// $audit::Entry) -> EngineEntry`: the engine's audit entry from a binding
/// of the WIT into [`EngineEntry`]. `$audit` and `$types` name, in that
/// module, the binding's modules of the `engram:memory/audit` and
/// `engram:memory/types` interfaces; the wasmtime host's `bindgen!` and a
/// component's `wit_bindgen::generate!` name their items alike, so one body
/// serves both.
#[macro_export]
macro_rules! engine_entry_from_wit {
    ($audit:ident, $types:ident) => {
        /// The engine's audit entry in plain types.
        fn engine_entry(entry: $audit::Entry) -> $crate::scope::EngineEntry {
            use $crate::scope::{
                Actor, Component, EngineEntry, EngineOutcome, Operation, RecordType, Retrieval,
                Source,
            };
            EngineEntry {
                request_id: entry.request_id,
                operation: match entry.operation {
                    $audit::Operation::Write => Operation::Write,
                    $audit::Operation::Read => Operation::Read,
                    $audit::Operation::Export => Operation::Export,
                    $audit::Operation::Import => Operation::Import,
                    $audit::Operation::Expire => Operation::Expire,
                },
                source: entry.source.map(|s| Source {
                    agent_id: s.agent_id,
                    component: match s.component {
                        $types::SourceComponent::Cognition => Component::Cognition,
                        $types::SourceComponent::Maintenance => Component::Maintenance,
                    },
                    actor: match s.actor {
                        $types::SourceActor::System => Actor::System,
                        $types::SourceActor::User => Actor::User,
                        $types::SourceActor::External => Actor::External,
                    },
                }),
                record_type: entry.record_type.map(|t| match t {
                    $types::RecordType::Fact => RecordType::Fact,
                    $types::RecordType::Event => RecordType::Event,
                    $types::RecordType::State => RecordType::State,
                }),
                outcome: match entry.outcome {
                    $audit::Outcome::Accepted(id) => EngineOutcome::Accepted(id),
                    $audit::Outcome::Replayed(id) => EngineOutcome::Replayed(id),
                    $audit::Outcome::Rejected(why) => EngineOutcome::Rejected(why),
                    $audit::Outcome::Returned(n) => EngineOutcome::Returned(n),
                    $audit::Outcome::Failed(why) => EngineOutcome::Failed(why),
                    $audit::Outcome::Applied(n) => EngineOutcome::Applied(n),
                    $audit::Outcome::Expired(id) => EngineOutcome::Expired(id),
                    $audit::Outcome::Retrieved(r) => EngineOutcome::Retrieved(Retrieval {
                        returned: r.returned,
                        entries_read: r.entries_read,
                        candidates: r.candidates,
                        bound_reached: r.bound_reached,
                        by_meaning: r.by_meaning,
                    }),
                },
            }
        }
    };
}

/// One agent's domain over a store, as the engine's imports reach it: keys
/// scoped to the domain, calls bounded by [`Limits`], commits conditioned
/// on the maintenance lock and audited.
///
/// Cloning a scope is cheap (the store and the trail are shared); each
/// clone keeps its own time override and its own pending failure.
#[derive(Clone)]
pub struct Scope {
    agent_id: String,
    prefix: Vec<u8>,
    backend: Arc<dyn Backend>,
    audit: Arc<dyn AuditSink>,
    /// The key of the domain's maintenance lock, and the value it holds
    /// while this scope holds it (maintenance mode).
    lock_key: Vec<u8>,
    lock_held: Option<Vec<u8>>,
    limits: Limits,
    clock: Clock,
    /// The time the engine is told instead of the clock's, while set.
    time: Option<i64>,
    /// Set when a commit stored something but its audit entries, kept in
    /// a trail apart from the store, could not be appended.
    unaudited: Option<String>,
    /// Who makes the calls, while set: the name of the token a server
    /// authenticated them by, kept in their audit entries.
    caller: Option<String>,
}

impl Scope {
    /// The domain of `agent_id` over `backend`, audited to `audit`.
    /// `lock_held` is the value of the domain's maintenance lock while this
    /// scope holds it ([`LockGuard::value`](crate::maintenance::LockGuard::value),
    /// maintenance mode), `None` online. `clock` stamps audit entries and
    /// is the engine's time unless [`Scope::set_time`] says otherwise.
    pub fn new(
        agent_id: &str,
        backend: Arc<dyn Backend>,
        audit: Arc<dyn AuditSink>,
        lock_held: Option<Vec<u8>>,
        limits: Limits,
        clock: Clock,
    ) -> Self {
        Scope {
            agent_id: agent_id.to_owned(),
            prefix: domain_prefix(agent_id),
            backend,
            audit,
            lock_key: lock_key(agent_id),
            lock_held,
            limits,
            clock,
            time: None,
            unaudited: None,
            caller: None,
        }
    }

    /// The agent whose domain this is.
    pub fn agent_id(&self) -> &str {
        &self.agent_id
    }

    /// The prefix of every key of the domain in the store.
    pub fn prefix(&self) -> &[u8] {
        &self.prefix
    }

    /// The store the domain lives in.
    pub fn backend(&self) -> &Arc<dyn Backend> {
        &self.backend
    }

    /// The audit trail the domain's entries go to.
    pub fn audit(&self) -> &Arc<dyn AuditSink> {
        &self.audit
    }

    /// The limits calls are held to.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Holds calls to `limits` from now on.
    pub fn set_limits(&mut self, limits: Limits) {
        self.limits = limits;
    }

    /// Takes the time from `clock` from now on.
    pub fn set_clock(&mut self, clock: Clock) {
        self.clock = clock;
    }

    /// The clock's time: what audit entries are stamped with.
    pub fn clock_time(&self) -> i64 {
        (self.clock)()
    }

    /// The engine's time (`domain.now`): the override while set, else the
    /// clock's.
    pub fn now(&self) -> i64 {
        self.time.unwrap_or_else(|| (self.clock)())
    }

    /// Tells the engine `time` instead of the clock's until called again
    /// with `None`. Audit entries keep the clock's time.
    pub fn set_time(&mut self, time: Option<i64>) {
        self.time = time;
    }

    /// The time override, while set.
    pub fn time(&self) -> Option<i64> {
        self.time
    }

    /// Names who makes the calls from now on (a server's token name), kept
    /// in every audit entry until called again; `None`: nobody named.
    pub fn set_caller(&mut self, caller: Option<String>) {
        self.caller = caller;
    }

    /// Who makes the calls, while named ([`Scope::set_caller`]).
    pub fn caller(&self) -> Option<&str> {
        self.caller.as_deref()
    }

    /// Why the last call must err although it returned, if it must: a
    /// commit stored something but its audit entries could not be
    /// appended to a trail kept apart. Taking it clears it.
    pub fn take_unaudited(&mut self) -> Option<String> {
        self.unaudited.take()
    }

    fn scoped(&self, key: &[u8]) -> Vec<u8> {
        [self.prefix.as_slice(), key].concat()
    }

    /// The value under the domain's `key` (`persistence.get`).
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        self.backend.get(&self.scoped(key))
    }

    /// The values under a prefix of `keys` (`persistence.get-many`): every
    /// key, unless the values reach a quarter of the answer bound first;
    /// then the answer stops after the value that reaches it, so the engine
    /// never holds much more than one answer. More keys than
    /// [`Limits::scan_ceiling`] are refused.
    pub fn get_many(&self, keys: &[Vec<u8>]) -> Result<Vec<Option<Vec<u8>>>, StoreError> {
        let ceiling = self.limits.scan_ceiling();
        if keys.len() > ceiling as usize {
            return Err(StoreError::Unavailable(format!(
                "a read of {} keys is above the ceiling of {ceiling}",
                keys.len()
            )));
        }
        let budget = self.limits.answer_byte_limit() / 4;
        let scoped: Vec<Vec<u8>> = keys.iter().map(|key| self.scoped(key)).collect();
        let values = self.backend.get_many_within(&scoped, budget)?;
        if values.is_empty() && !keys.is_empty() || values.len() > keys.len() {
            return Err(StoreError::Unavailable(
                "the store answered a read of many keys with no or too many values".into(),
            ));
        }
        Ok(values)
    }

    /// At most `limit` pairs of the domain with keys in `start..end`, in
    /// `order`, their keys as the engine named them (`persistence.scan`).
    /// A `limit` above [`Limits::scan_ceiling`] is refused: the engine
    /// never needs more than one read's or one retrieval's worth.
    pub fn scan(
        &self,
        start: &[u8],
        end: &[u8],
        limit: u32,
        order: Order,
    ) -> Result<Vec<Pair>, StoreError> {
        let ceiling = self.limits.scan_ceiling();
        if limit > ceiling {
            return Err(StoreError::Unavailable(format!(
                "a scan of {limit} entries is above the ceiling of {ceiling}"
            )));
        }
        let pairs = self
            .backend
            .scan(&self.scoped(start), &self.scoped(end), limit, order)?;
        let prefix = self.prefix.len();
        Ok(pairs
            .into_iter()
            .map(|(mut key, value)| {
                key.drain(..prefix);
                (key, value)
            })
            .collect())
    }

    /// Commits the engine's batch (`persistence.commit`): keys as the
    /// engine named them, `trail` the audit entries of what it stores.
    ///
    /// A batch above `max_batch_ops` or `max_batch_bytes` is refused before
    /// it reaches the store. Every commit carries one more precondition:
    /// online, that the domain's maintenance lock is absent; in
    /// maintenance, that it still holds this scope's value; a commit the
    /// lock refused says so instead of `Conflict`. The entries go in the
    /// commit's transaction when the trail is the store's own; else they
    /// are appended right after it, and should that fail the commit still
    /// answers `Ok`, but [`Scope::take_unaudited`] tells why the call must
    /// err.
    pub fn commit(
        &mut self,
        preconditions: Vec<Precondition>,
        ops: Vec<Op>,
        trail: Vec<EngineEntry>,
    ) -> Result<(), StoreError> {
        if let Some(why) = self.limits.batch_refusal(&ops) {
            return Err(StoreError::Unavailable(why));
        }
        let mut preconditions: Vec<Precondition> = preconditions
            .into_iter()
            .map(|p| match p {
                Precondition::Absent(key) => Precondition::Absent(self.scoped(&key)),
                Precondition::Holds(key, value) => Precondition::Holds(self.scoped(&key), value),
            })
            .collect();
        let ops: Vec<Op> = ops
            .into_iter()
            .map(|op| match op {
                Op::Put(key, value) => Op::Put(self.scoped(&key), value),
                Op::Delete(key) => Op::Delete(self.scoped(&key)),
            })
            .collect();
        // Online writers keep out of a domain under maintenance; a
        // maintenance domain writes only while it still holds the lock.
        preconditions.push(match &self.lock_held {
            None => Precondition::Absent(self.lock_key.clone()),
            Some(value) => Precondition::Holds(self.lock_key.clone(), value.clone()),
        });
        let trail: Vec<AuditEntry> = trail.into_iter().map(|e| self.audit_entry(e)).collect();
        match self
            .backend
            .commit_audited(&preconditions, &ops, &trail, self.audit.as_ref())
        {
            Err(StoreError::Conflict) => Err(lock_refusal(
                self.backend.as_ref(),
                &self.lock_key,
                self.lock_held.as_deref(),
            )
            .unwrap_or(StoreError::Conflict)),
            Err(error) => Err(error),
            Ok(true) => Ok(()),
            Ok(false) => {
                // A trail kept apart from the store: appended after the
                // commit. Should that fail, the call errs once it returns.
                for entry in &trail {
                    if let Err(error) = self.audit.append(entry) {
                        self.unaudited = Some(format!(
                            "committed, but the audit trail could not be written: {error:#}"
                        ));
                    }
                }
                Ok(())
            }
        }
    }

    /// Appends an entry the engine made for a call that commits nothing
    /// (`audit.append`). An error must fail the call.
    pub fn append(&self, entry: EngineEntry) -> anyhow::Result<()> {
        self.audit.append(&self.audit_entry(entry))
    }

    /// The trail's form of an entry the engine made, stamped with the
    /// clock's time and this domain's agent. A retrieval is a read: what it
    /// read is told in words.
    pub fn audit_entry(&self, entry: EngineEntry) -> AuditEntry {
        let (outcome, stored_id, count, reason) = match entry.outcome {
            EngineOutcome::Accepted(id) => (audit::Outcome::Accepted, Some(id), None, None),
            EngineOutcome::Replayed(id) => (audit::Outcome::Replayed, Some(id), None, None),
            EngineOutcome::Rejected(why) => (audit::Outcome::Rejected, None, None, Some(why)),
            EngineOutcome::Returned(n) => (audit::Outcome::Returned, None, Some(n), None),
            EngineOutcome::Failed(why) => (audit::Outcome::Failed, None, None, Some(why)),
            EngineOutcome::Applied(n) => (audit::Outcome::Applied, None, Some(n), None),
            EngineOutcome::Expired(id) => (audit::Outcome::Expired, Some(id), None, None),
            EngineOutcome::Retrieved(r) => (
                audit::Outcome::Returned,
                None,
                Some(r.returned),
                Some(format!(
                    "{} keyword-index entries read, {} candidates, {}; {}",
                    r.entries_read,
                    r.candidates,
                    if r.bound_reached {
                        "the candidate limit was reached"
                    } else {
                        "every entry of the query's keywords read"
                    },
                    match r.by_meaning {
                        None => "by keywords alone".to_owned(),
                        Some(n) => format!("{n} more by meaning"),
                    }
                )),
            ),
        };
        AuditEntry {
            at: self.clock_time(),
            agent_id: self.agent_id.clone(),
            request_id: entry.request_id,
            operation: entry.operation,
            source: entry.source,
            record_type: entry.record_type,
            outcome,
            stored_id,
            count,
            reason,
            caller: self.caller.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemoryBackend;
    use crate::maintenance::LockGuard;
    use engram_model::audit::MemoryAudit;

    fn scope(backend: Arc<dyn Backend>, audit: Arc<dyn AuditSink>) -> Scope {
        Scope::new(
            "alice",
            backend,
            audit,
            None,
            Limits::default(),
            Arc::new(|| 7),
        )
    }

    #[test]
    fn keys_are_scoped_and_given_back_as_named() {
        let backend = Arc::new(MemoryBackend::new());
        let audit = Arc::new(MemoryAudit::new());
        let mut alice = scope(backend.clone(), audit.clone());
        alice
            .commit(
                vec![Precondition::Absent(b"k".to_vec())],
                vec![Op::Put(b"k".to_vec(), b"v".to_vec())],
                vec![],
            )
            .unwrap();
        assert_eq!(
            backend.get(&[domain_prefix("alice"), b"k".to_vec()].concat()),
            Ok(Some(b"v".to_vec()))
        );
        assert_eq!(alice.get(b"k"), Ok(Some(b"v".to_vec())));
        assert_eq!(
            alice.scan(b"", b"\xff", 10, Order::Ascending),
            Ok(vec![(b"k".to_vec(), b"v".to_vec())])
        );
        let bob = Scope::new(
            "bob",
            backend,
            audit,
            None,
            Limits::default(),
            Arc::new(|| 7),
        );
        assert_eq!(bob.get(b"k"), Ok(None));
    }

    #[test]
    fn ceilings_and_batches_are_bounded() {
        let mut alice = scope(Arc::new(MemoryBackend::new()), Arc::new(MemoryAudit::new()));
        assert!(alice.scan(b"", b"\xff", 1_001, Order::Ascending).is_err());
        assert!(alice.get_many(&vec![b"k".to_vec(); 1_001]).is_err());
        let ops = vec![Op::Delete(b"k".to_vec()); 10_001];
        let Err(StoreError::Unavailable(why)) = alice.commit(vec![], ops, vec![]) else {
            panic!("a batch above the limit went through");
        };
        assert!(why.contains("max_batch_ops"), "{why}");
        assert_eq!(Limits::default().answer_byte_limit(), 16 << 20);
    }

    #[test]
    fn the_maintenance_lock_refuses_online_commits_by_name() {
        let backend: Arc<dyn Backend> = Arc::new(MemoryBackend::new());
        let mut alice = scope(backend.clone(), Arc::new(MemoryAudit::new()));
        let lock = LockGuard::acquire(backend, "alice", 1).unwrap();
        let refused = alice.commit(vec![], vec![Op::Delete(b"k".to_vec())], vec![]);
        assert_eq!(
            refused,
            Err(StoreError::Unavailable(
                "the domain is locked for maintenance (IO-W7)".into()
            ))
        );
        drop(lock);
        assert_eq!(
            alice.commit(vec![], vec![Op::Delete(b"k".to_vec())], vec![]),
            Ok(())
        );
    }

    #[test]
    fn a_trail_apart_gets_the_entries_after_the_commit() {
        let audit = Arc::new(MemoryAudit::new());
        let mut alice = scope(Arc::new(MemoryBackend::new()), audit.clone());
        let entry = EngineEntry {
            request_id: "r".into(),
            operation: Operation::Read,
            source: None,
            record_type: Some(RecordType::Event),
            outcome: EngineOutcome::Retrieved(Retrieval {
                returned: 2,
                entries_read: 256,
                candidates: 9,
                bound_reached: true,
                by_meaning: None,
            }),
        };
        alice.commit(vec![], vec![], vec![entry]).unwrap();
        let entries = audit.entries();
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].at, 7);
        assert_eq!(entries[0].agent_id, "alice");
        assert_eq!(entries[0].outcome, audit::Outcome::Returned);
        assert_eq!(entries[0].count, Some(2));
        assert_eq!(
            entries[0].reason.as_deref(),
            Some(
                "256 keyword-index entries read, 9 candidates, the candidate limit was reached; \
                 by keywords alone"
            )
        );
        assert_eq!(alice.take_unaudited(), None);
    }
}
