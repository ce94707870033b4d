//! One agent's memory domain ([`Domain`]): an instance of the engine over
//! the agent's part of the store, made afresh when a call stops it. Its
//! cycle and maintenance calls are in `domain/cycles.rs`, what it is opened
//! with in `domain/settings.rs`.

mod cycles;
mod settings;

pub use cycles::Cycle;

use crate::engine::{Shared, Slot};
use crate::limits::Exceeded;
use crate::state::{DomainState, tier_rank};
use crate::{AuditEntry, Backend, TurnError};
use crate::{RecallArgs, Recalled, RememberArgs, Remembered};
use crate::{audit, bindings, graph, history, io, json, limits, maintenance, types};
use anyhow::{Context, Result, anyhow};
use std::sync::Arc;
use wasmtime::Store;

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
    /// A domain over `state`, its first instance made.
    pub(crate) fn start(
        shared: Arc<Shared>,
        state: DomainState,
        lock: Option<maintenance::LockGuard>,
        slot: Slot,
    ) -> Result<Self> {
        let mut domain = Domain {
            shared,
            state,
            live: None,
            restarts: 0,
            writing: false,
            _lock: lock,
            _slot: slot,
        };
        domain.live()?;
        domain.check_model()?;
        Ok(domain)
    }

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
                let exceeded = live.store.data_mut().limits.take_exceeded();
                self.live = None;
                self.restarts += 1;
                let error = self.stopped(anyhow::Error::from(error), exceeded);
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
                        caller: scope.caller().map(str::to_owned),
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

    /// Names why an instance was stopped (S-TRAP): by its trap, or by the
    /// limit its limiter refused a growth past (`exceeded`).
    fn stopped(&self, error: anyhow::Error, exceeded: Option<Exceeded>) -> anyhow::Error {
        let why = match (error.downcast_ref::<wasmtime::Trap>(), exceeded) {
            (Some(wasmtime::Trap::Interrupt), _) => match self.shared.config.call_timeout {
                Some(limit) => format!("the call ran past its time limit of {limit:?}"),
                None => "the call was interrupted".to_owned(),
            },
            (_, Some(Exceeded::Memory(bytes))) => {
                format!("the engine needed more than its memory limit of {bytes} bytes")
            }
            (_, Some(Exceeded::Table(elements))) => {
                format!("the engine needed more than its table limit of {elements} elements")
            }
            (Some(_), None) => "the engine trapped".to_owned(),
            (None, None) => "a call of the host failed".to_owned(),
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

    /// Names who makes the calls from now on, kept in their audit entries
    /// until called again (a server's token name, never its secret);
    /// `None`: nobody named, as for a library or the command line.
    pub fn set_caller(&mut self, caller: Option<&str>) {
        let caller = caller.map(str::to_owned);
        self.state.scope.set_caller(caller.clone());
        if let Some(live) = self.live.as_mut() {
            live.store.data_mut().scope.set_caller(caller);
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
    /// plan ([`engram_surface::turns::remember_plan`]). With a fresh request
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
        engram_surface::turns::remember(self, args)
    }

    /// The memories that answer `question`, best first, and the prompt
    /// assembled from them, on the built-in plan
    /// ([`engram_surface::turns::recall_plan`]): at most
    /// [`engram_surface::turns::RECALL_TOP_K`]. Persists nothing.
    pub fn recall(&mut self, question: &str) -> Result<Recalled, TurnError> {
        self.recall_with(RecallArgs::new(question))
    }

    /// [`Self::recall`] with every argument: `top_k`, a token budget for
    /// the memories' lines, the request id.
    pub fn recall_with(&mut self, args: RecallArgs) -> Result<Recalled, TurnError> {
        engram_surface::turns::recall(self, args)
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
        let stamp = (now, scope.caller());
        let removed = match &self._lock {
            Some(lock) => {
                maintenance::forget_under(lock, audit.as_ref(), &agent, stamp, &mut |_| {})
            }
            None => maintenance::forget(
                scope.backend().clone(),
                audit.as_ref(),
                &agent,
                stamp,
                &mut |_| {},
            ),
        };
        self.live = None;
        removed
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

/// The domain's vectors were made by another model than its embedder's
/// (S-VECTOR): an online domain refuses to open with it, naming both. Find
/// it with `error.downcast_ref::<ModelChanged>()`.
#[derive(Debug)]
pub struct ModelChanged(pub String);

impl std::fmt::Display for ModelChanged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ModelChanged {}

impl std::fmt::Display for Stopped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}; {}", self.0, engram_model::messages::STOPPED)
    }
}
