//! The host layer of the language hosts: `engram:memory/persistence`,
//! `audit` and `domain` for the engine, `engram:js/host` for the JSON layer
//! and `engram:adapter/domain` for the host, over a raw store the host supplies
//! (`engram:adapter/store`, `host/js-components/adapter/wit/adapter.wit`).
//!
//! Everything a host adds around the engine is `engram-store`'s, the code
//! of the Rust host and the WASI provider: a [`Scope`] puts the domain's
//! prefix on every key, bounds reads and commits, conditions every commit
//! on the maintenance lock and builds the audit entries; the maintenance
//! lock, forgetting and listing domains are its `maintenance` module. What
//! is here is the packing of byte strings for the raw store (a string of one
//! character per byte; lists packed into one), the settings, and the
//! entropy and time the host hands over.

wit_bindgen::generate!({
    path: ["../../../wit", "../json-layer/wit", "wit"],
    world: "engram:adapter/adapter",
    generate_all,
});

use engram::adapter::store;
use engram::memory::types::{self, PrivacyTier};
use engram_model::audit::{self as trail, AuditEntry, AuditQuery, AuditSink, trail_of_pages};
use engram_model::json::PrivacyTier as Tier;
use engram_store::maintenance::{self, LockGuard};
use engram_store::scope::EngineEntry;
use engram_store::settings::Access;
use engram_store::{Backend, Limits, Op, Order, Pair, Precondition, Scope, StoreError};
use exports::engram::adapter::domain::{self as control, DomainError};
use exports::engram::js::host;
use exports::engram::memory::audit;
use exports::engram::memory::domain::{self, AccessMode};
use exports::engram::memory::persistence::{
    Direction, Entry, Guest, Key, Op as WitOp, Precondition as WitPrecondition, StorageError, Value,
};
use serde_json::Value as Json;
use std::cell::RefCell;
use std::sync::Arc;

engram_store::engine_entry_from_wit!(audit, types);

/// The length that stands for no value in a packed list of options.
const NONE: u32 = u32::MAX;

/// Bytes as a string of one character per byte.
fn text(bytes: &[u8]) -> String {
    bytes.iter().map(|&b| char::from(b)).collect()
}

/// A string of one character per byte, as the bytes.
fn bytes(text: &str) -> Result<Vec<u8>, StoreError> {
    text.chars()
        .map(|c| u8::try_from(c).ok())
        .collect::<Option<Vec<u8>>>()
        .ok_or_else(|| broken("a byte string holds a character above U+00FF"))
}

/// What an answer of the store says: its value, `Conflict` for `C`, or
/// why the store could not do it.
fn answer(text: String) -> Result<String, StoreError> {
    let mut chars = text.chars();
    match chars.next() {
        Some('V') => Ok(chars.as_str().to_owned()),
        Some('C') if chars.as_str().is_empty() => Err(StoreError::Conflict),
        Some('U') => Err(StoreError::Unavailable(chars.as_str().to_owned())),
        _ => Err(broken("an answer that starts with none of V, C, U")),
    }
}

fn broken(why: &str) -> StoreError {
    StoreError::Unavailable(format!(
        "the host's store answered a malformed packing: {why}"
    ))
}

/// Writes the packings.
#[derive(Default)]
struct Packer(Vec<u8>);

impl Packer {
    /// Conditions or changes: a byte 0 then the key (absent, delete), or
    /// 1 then the key and the value (holds, put).
    fn tagged<'a>(items: impl Iterator<Item = (&'a Vec<u8>, Option<&'a Vec<u8>>)>) -> String {
        let mut packed = Packer::default();
        for (key, value) in items {
            packed.0.push(u8::from(value.is_some()));
            packed.item(key);
            if let Some(value) = value {
                packed.item(value);
            }
        }
        packed.done()
    }

    fn item(&mut self, item: &[u8]) {
        // A key or value is far below 4 GiB: the scope's bounds see to it.
        self.0.extend_from_slice(&(item.len() as u32).to_be_bytes());
        self.0.extend_from_slice(item);
    }

    fn done(self) -> String {
        text(&self.0)
    }
}

/// Reads the packings.
struct Unpacker {
    bytes: Vec<u8>,
    at: usize,
}

impl Unpacker {
    fn new(packed: &str) -> Result<Self, StoreError> {
        Ok(Self {
            bytes: bytes(packed)?,
            at: 0,
        })
    }

    fn more(&self) -> bool {
        self.at < self.bytes.len()
    }

    fn take(&mut self, n: usize) -> Result<&[u8], StoreError> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&end| end <= self.bytes.len())
            .ok_or_else(|| broken("it ends inside an item"))?;
        let taken = &self.bytes[self.at..end];
        self.at = end;
        Ok(taken)
    }

    fn length(&mut self) -> Result<u32, StoreError> {
        let raw = self.take(4)?;
        Ok(u32::from_be_bytes([raw[0], raw[1], raw[2], raw[3]]))
    }

    fn item(&mut self) -> Result<Vec<u8>, StoreError> {
        let n = self.length()?;
        Ok(self.take(n as usize)?.to_vec())
    }

    fn option(&mut self) -> Result<Option<Vec<u8>>, StoreError> {
        match self.length()? {
            NONE => Ok(None),
            n => Ok(Some(self.take(n as usize)?.to_vec())),
        }
    }
}

/// The host's store as a [`Backend`] and its trail as an [`AuditSink`]: a
/// commit's audit rows always go in its transaction.
struct Raw;

/// The time of an audit entry not stamped yet: it is stamped as its row
/// is handed to the host, one `now` a batch of rows (not a crossing into
/// the host an entry).
const UNSTAMPED: i64 = i64::MIN;

/// A row of the trail as the host's store keeps it: the columns of the
/// store format's `engram_audit` (`seq` aside), a write's source as its
/// JSON text. The store keeps it as it is given and hands it back so, with
/// `seq`, its number in append order (`store.audit-rows`).
#[derive(serde::Serialize, serde::Deserialize)]
struct Row {
    at: i64,
    agent_id: String,
    request_id: String,
    operation: trail::Operation,
    #[serde(default)]
    source: Option<String>,
    #[serde(default)]
    record_type: Option<engram_model::json::RecordType>,
    outcome: trail::Outcome,
    #[serde(default)]
    stored_id: Option<String>,
    #[serde(default)]
    count: Option<u32>,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    caller: Option<String>,
    #[serde(default, skip_serializing)]
    seq: Option<u64>,
}

impl Row {
    /// The row of `entry`, stamped `now` when it is not stamped yet.
    fn of(entry: &AuditEntry, now: &mut impl FnMut() -> i64) -> Row {
        Row {
            at: if entry.at == UNSTAMPED {
                now()
            } else {
                entry.at
            },
            agent_id: entry.agent_id.clone(),
            request_id: entry.request_id.clone(),
            operation: entry.operation,
            source: entry
                .source
                .as_ref()
                .map(|source| serde_json::to_string(source).expect("a source is JSON")),
            record_type: entry.record_type,
            outcome: entry.outcome,
            stored_id: entry.stored_id.clone(),
            count: entry.count,
            reason: entry.reason.clone(),
            caller: entry.caller.clone(),
            seq: None,
        }
    }

    /// The entry the row keeps.
    fn entry(self) -> Result<AuditEntry, StoreError> {
        let source = self
            .source
            .map(|text| serde_json::from_str(&text))
            .transpose()
            .map_err(|e| broken(&format!("an audit row's source is not one: {e}")))?;
        Ok(AuditEntry {
            at: self.at,
            agent_id: self.agent_id,
            request_id: self.request_id,
            operation: self.operation,
            source,
            record_type: self.record_type,
            outcome: self.outcome,
            stored_id: self.stored_id,
            count: self.count,
            reason: self.reason,
            caller: self.caller,
        })
    }
}

impl Raw {
    /// Audit rows as the store keeps them, a JSON line each, stamped with
    /// the host's time (asked for once, when a row needs it).
    fn rows(entries: &[AuditEntry]) -> String {
        let mut time = None;
        let mut now = || *time.get_or_insert_with(store::now);
        let lines: Vec<String> = entries
            .iter()
            .map(|entry| {
                serde_json::to_string(&Row::of(entry, &mut now)).expect("an audit row is JSON")
            })
            .collect();
        lines.join("\n")
    }

    /// The newest `query.limit` entries of the trail that match `query`,
    /// oldest first: the store's rows read a page at a time, newest first,
    /// filtered as every host filters them ([`trail_of_pages`]).
    fn trail(query: &AuditQuery) -> Result<Vec<AuditEntry>, StoreError> {
        let page = |before: Option<u64>, limit: u32| {
            let page = answer(store::audit_rows(before, limit))?;
            page.lines()
                .filter(|line| !line.is_empty())
                .map(|line| {
                    let row: Row = serde_json::from_str(line)
                        .map_err(|e| broken(&format!("an audit row is not one: {e}")))?;
                    let seq = row
                        .seq
                        .ok_or_else(|| broken("an audit row without its seq"))?;
                    Ok((seq, row.entry()?))
                })
                .collect::<Result<Vec<_>, StoreError>>()
        };
        trail_of_pages(query, page, broken)
    }

    /// Commits with the audit rows of `trail`, after the rows of calls
    /// that committed nothing before it in this host call (kept for the
    /// host to take otherwise: [`control::Guest::take_trail`]); those stay
    /// kept when the commit fails.
    fn commit_rows(
        preconditions: &[Precondition],
        ops: &[Op],
        trail: &[AuditEntry],
    ) -> Result<(), StoreError> {
        let conditions = Packer::tagged(preconditions.iter().map(|p| match p {
            Precondition::Absent(key) => (key, None),
            Precondition::Holds(key, value) => (key, Some(value)),
        }));
        let changes = Packer::tagged(ops.iter().map(|op| match op {
            Op::Delete(key) => (key, None),
            Op::Put(key, value) => (key, Some(value)),
        }));
        let mut entries = PENDING.take();
        let pending = entries.len();
        entries.extend_from_slice(trail);
        let answered = answer(store::commit(&conditions, &changes, &Self::rows(&entries)));
        if answered.is_err() {
            entries.truncate(pending);
            PENDING.set(entries);
        }
        match answered? {
            rest if rest.is_empty() => Ok(()),
            _ => Err(broken("a commit answered a value")),
        }
    }
}

impl Backend for Raw {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        let mut values = self.get_many(&[key.to_vec()])?;
        match (values.pop(), values.is_empty()) {
            (Some(value), true) => Ok(value),
            _ => Err(broken("not one value for one key")),
        }
    }

    fn get_many(&self, keys: &[Vec<u8>]) -> Result<Vec<Option<Vec<u8>>>, StoreError> {
        let values = self.get_many_within(keys, u64::MAX)?;
        if values.len() != keys.len() {
            return Err(broken("not one value for each key"));
        }
        Ok(values)
    }

    /// One call into the host, which stops at the budget itself.
    fn get_many_within(
        &self,
        keys: &[Vec<u8>],
        budget: u64,
    ) -> Result<Vec<Option<Vec<u8>>>, StoreError> {
        let mut packed = Packer::default();
        for key in keys {
            packed.item(key);
        }
        let mut found = Unpacker::new(&answer(store::get_many(&packed.done(), budget))?)?;
        let mut values = Vec::with_capacity(keys.len());
        while found.more() {
            values.push(found.option()?);
        }
        if values.len() > keys.len() || values.is_empty() && !keys.is_empty() {
            return Err(broken("not a value for each key of a prefix"));
        }
        Ok(values)
    }

    fn scan(
        &self,
        start: &[u8],
        end: &[u8],
        limit: u32,
        order: Order,
    ) -> Result<Vec<Pair>, StoreError> {
        let descending = order == Order::Descending;
        let found = answer(store::scan(&text(start), &text(end), limit, descending))?;
        let mut found = Unpacker::new(&found)?;
        let mut pairs = Vec::new();
        while found.more() {
            let key = found.item()?;
            let value = found.item()?;
            pairs.push((key, value));
        }
        if pairs.len() > limit as usize {
            return Err(broken("more pairs than the limit"));
        }
        Ok(pairs)
    }

    fn commit(&self, preconditions: &[Precondition], ops: &[Op]) -> Result<(), StoreError> {
        Self::commit_rows(preconditions, ops, &[])
    }

    fn commit_audited(
        &self,
        preconditions: &[Precondition],
        ops: &[Op],
        trail: &[AuditEntry],
        _sink: &dyn AuditSink,
    ) -> Result<bool, StoreError> {
        Self::commit_rows(preconditions, ops, trail).map(|()| true)
    }
}

impl AuditSink for Raw {
    /// Keeps the entry of a call that commits nothing: it goes with the
    /// next commit of the host call, or to the host when the call is over
    /// ([`control::Guest::take_trail`]), which appends it before it answers
    /// the caller (a crossing into the host saved per read).
    fn append(&self, entry: &AuditEntry) -> anyhow::Result<()> {
        PENDING.with_borrow_mut(|pending| pending.push(entry.clone()));
        Ok(())
    }

    fn trail(&self, query: &AuditQuery) -> anyhow::Result<Vec<AuditEntry>> {
        Ok(Raw::trail(query)?)
    }
}

/// The fixed settings of the instance's domain (`store.settings`),
/// checked as every host checks them.
struct Settings {
    agent: String,
    mode: AccessMode,
    tier_ceiling: PrivacyTier,
    pid: u32,
    limits: Limits,
    /// How long what the domain writes is kept, in ms (`expire_after_ms`).
    expire_after: Option<u64>,
}

impl Settings {
    /// The settings the host answers, checked.
    fn read() -> Result<Self, DomainError> {
        let settings = engram_store::settings::Settings::parse(&store::settings())
            .map_err(DomainError::Invalid)?;
        Ok(Settings {
            agent: settings.agent,
            mode: match settings.mode {
                Access::Online => AccessMode::Online,
                Access::Maintenance => AccessMode::Maintenance,
            },
            tier_ceiling: match settings.tier_ceiling {
                Tier::Public => PrivacyTier::Public,
                Tier::Sensitive => PrivacyTier::Sensitive,
                Tier::Private => PrivacyTier::Private,
            },
            pid: settings.pid,
            limits: settings.limits,
            expire_after: settings.expire_after,
        })
    }
}

/// The instance's domain: its settings, its scope and the maintenance lock
/// it holds.
struct State {
    settings: Settings,
    scope: Scope,
    lock: Option<LockGuard>,
}

impl State {
    fn new(settings: Settings, lock: Option<LockGuard>) -> Self {
        let raw = Arc::new(Raw);
        let scope = Scope::new(
            &settings.agent,
            raw.clone(),
            raw,
            lock.as_ref().map(|lock| lock.value().to_vec()),
            settings.limits,
            // Audit entries are stamped as their rows go to the host (`Raw::rows`).
            Arc::new(|| UNSTAMPED),
        );
        State {
            settings,
            scope,
            lock,
        }
    }
}

thread_local! {
    static STATE: RefCell<Option<State>> = const { RefCell::new(None) };
    static BITS: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    /// Audit entries of this host call that no commit has carried yet.
    static PENDING: RefCell<Vec<AuditEntry>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f` on the domain, opened online at the first need if the host has
/// not opened it. Settings the host cannot give stop the instance: nothing
/// can be done without them.
fn with<R>(f: impl FnOnce(&mut State) -> R) -> R {
    STATE.with_borrow_mut(|state| {
        let state = state.get_or_insert_with(|| {
            let settings = Settings::read()
                .unwrap_or_else(|why| panic!("the host's settings are refused: {why:?}"));
            State::new(settings, None)
        });
        f(state)
    })
}

/// 16 random bytes from the host, asked for in batches.
fn entropy() -> [u64; 2] {
    BITS.with_borrow_mut(|bits| {
        if bits.len() < 16 {
            let fresh = bytes(&store::entropy())
                .unwrap_or_else(|_| panic!("the host's entropy is no byte string"));
            assert!(
                !fresh.is_empty() && fresh.len().is_multiple_of(16),
                "the host's entropy is not a positive multiple of 16 bytes"
            );
            *bits = fresh;
        }
        let rest = bits.split_off(16);
        let taken = std::mem::replace(bits, rest);
        let half = |at: usize| u64::from_be_bytes(taken[at..at + 8].try_into().expect("8 bytes"));
        [half(0), half(8)]
    })
}

/// The error of a call of `engram:adapter/domain` that failed, by kind: a
/// lock someone else holds, or the store (or the host layer) failing.
fn failed(error: anyhow::Error) -> DomainError {
    let why = format!("{error:#}");
    if error.downcast_ref::<maintenance::Locked>().is_some() {
        DomainError::Locked(why)
    } else {
        DomainError::Store(why)
    }
}

fn storage_error(error: StoreError) -> StorageError {
    match error {
        StoreError::Conflict => StorageError::Conflict,
        StoreError::Unavailable(why) => StorageError::Unavailable(why),
    }
}

struct Adapter;

impl Guest for Adapter {
    fn get(key: Key) -> Result<Option<Value>, StorageError> {
        with(|state| state.scope.get(&key)).map_err(storage_error)
    }

    fn get_many(keys: Vec<Key>) -> Result<Vec<Option<Value>>, StorageError> {
        with(|state| state.scope.get_many(&keys)).map_err(storage_error)
    }

    fn scan(
        start: Key,
        end: Key,
        limit: u32,
        order: Direction,
    ) -> Result<Vec<Entry>, StorageError> {
        let order = match order {
            Direction::Ascending => Order::Ascending,
            Direction::Descending => Order::Descending,
        };
        let pairs = with(|state| state.scope.scan(&start, &end, limit, order));
        Ok(pairs
            .map_err(storage_error)?
            .into_iter()
            .map(|(key, value)| Entry { key, value })
            .collect())
    }

    fn commit(
        preconditions: Vec<WitPrecondition>,
        ops: Vec<WitOp>,
        trail: Vec<audit::Entry>,
    ) -> Result<(), StorageError> {
        let preconditions = preconditions
            .into_iter()
            .map(|p| match p {
                WitPrecondition::Absent(key) => Precondition::Absent(key),
                WitPrecondition::Holds(entry) => Precondition::Holds(entry.key, entry.value),
            })
            .collect();
        let ops = ops
            .into_iter()
            .map(|op| match op {
                WitOp::Put(entry) => Op::Put(entry.key, entry.value),
                WitOp::Delete(key) => Op::Delete(key),
            })
            .collect();
        let trail: Vec<EngineEntry> = trail.into_iter().map(engine_entry).collect();
        with(|state| state.scope.commit(preconditions, ops, trail)).map_err(storage_error)
    }
}

impl audit::Guest for Adapter {
    fn append(entry: audit::Entry) {
        // Kept for the host (`Raw`'s `append`), which cannot fail.
        if let Err(error) = with(|state| state.scope.append(engine_entry(entry))) {
            panic!("the audit trail could not be written: {error:#}");
        }
    }
}

impl domain::Guest for Adapter {
    fn agent() -> String {
        with(|state| state.settings.agent.clone())
    }

    fn mode() -> AccessMode {
        with(|state| state.settings.mode)
    }

    fn now() -> i64 {
        with(|state| state.scope.time()).unwrap_or_else(store::now)
    }

    fn read_limit_ceiling() -> u32 {
        with(|state| state.settings.limits.read_limit_ceiling)
    }

    fn candidate_limit() -> u32 {
        with(|state| state.settings.limits.candidate_limit)
    }

    fn answer_byte_limit() -> u64 {
        with(|state| state.settings.limits.answer_byte_limit())
    }

    fn tier_ceiling() -> PrivacyTier {
        with(|state| state.settings.tier_ceiling)
    }

    fn expire_after() -> Option<u64> {
        with(|state| state.settings.expire_after)
    }

    fn id_entropy() -> (u64, u64) {
        let [high, low] = entropy();
        (high, low)
    }
}

impl host::Guest for Adapter {
    fn agent() -> String {
        with(|state| state.settings.agent.clone())
    }

    fn max_record_bytes() -> u64 {
        with(|state| state.settings.limits.max_record_bytes as u64)
    }

    fn append_audit(entry: String) {
        // The JSON layer's own entry (a write it refused before the engine
        // ran), in the line form without `at` and `agent_id`.
        let appended = with(|state| -> anyhow::Result<()> {
            let mut line: Json = serde_json::from_str(&entry)?;
            line["at"] = state.scope.clock_time().into();
            line["agent_id"] = state.settings.agent.clone().into();
            let entry: AuditEntry = serde_json::from_value(line)?;
            state.scope.audit().append(&entry)
        });
        if let Err(error) = appended {
            panic!("the audit trail could not be written: {error:#}");
        }
    }

    fn take_trail() -> String {
        Raw::rows(&PENDING.take())
    }

    fn set_time(time: Option<i64>) -> Option<i64> {
        with(|state| {
            let before = state.scope.time();
            state.scope.set_time(time);
            before
        })
    }

    fn entropy() -> (u64, u64) {
        let [high, low] = entropy();
        (high, low)
    }
}

impl control::Guest for Adapter {
    fn open(held: Option<String>) -> Result<String, DomainError> {
        let settings = Settings::read()?;
        let backend: Arc<dyn Backend> = Arc::new(Raw);
        let lock = match (settings.mode, held) {
            (AccessMode::Online, _) => None,
            (AccessMode::Maintenance, Some(value)) => Some(LockGuard::resume(
                backend,
                &settings.agent,
                value.into_bytes(),
            )),
            (AccessMode::Maintenance, None) => Some(
                LockGuard::acquire_as(
                    backend,
                    &settings.agent,
                    store::now(),
                    settings.pid,
                    entropy(),
                )
                .map_err(failed)?,
            ),
        };
        let value = lock.as_ref().map_or_else(String::new, |lock| {
            String::from_utf8_lossy(lock.value()).into_owned()
        });
        STATE.with_borrow_mut(|state| *state = Some(State::new(settings, lock)));
        Ok(value)
    }

    fn close() {
        // Dropping the guard lets the lock go.
        with(|state| state.lock = None);
    }

    fn forget() -> Result<u64, DomainError> {
        with(|state| {
            let agent = state.settings.agent.clone();
            let now = store::now();
            let taken;
            let lock = match &state.lock {
                Some(lock) => lock,
                None => {
                    taken = LockGuard::acquire_as(
                        Arc::new(Raw),
                        &agent,
                        now,
                        state.settings.pid,
                        entropy(),
                    )
                    .map_err(failed)?;
                    &taken
                }
            };
            maintenance::forget_under(lock, &Raw, &agent, (now, None), &mut |_| {}).map_err(failed)
        })
    }

    fn break_lock() -> Result<bool, DomainError> {
        let agent = with(|state| state.settings.agent.clone());
        maintenance::break_lock(&Raw, &agent).map_err(failed)
    }

    fn domains() -> Result<Vec<String>, DomainError> {
        maintenance::domains(&Raw).map_err(failed)
    }

    fn audit(query: String, domain_only: bool) -> Result<String, DomainError> {
        let agent = domain_only.then(|| with(|state| state.settings.agent.clone()));
        let query = AuditQuery::of_args(agent.as_deref(), &query).map_err(DomainError::Invalid)?;
        let entries = Raw::trail(&query).map_err(|e| failed(e.into()))?;
        Ok(serde_json::to_string(&entries).expect("audit entries are JSON"))
    }

    fn stopped_row(operation: String, request: String, why: String) -> String {
        let Ok(request) = serde_json::from_str::<Json>(&request) else {
            return String::new();
        };
        let Some(request_id) = request["request_id"].as_str() else {
            return String::new();
        };
        let operation = match operation.as_str() {
            "WRITE" => trail::Operation::Write,
            "READ" => trail::Operation::Read,
            _ => return String::new(),
        };
        let writes = operation == trail::Operation::Write;
        let record = if writes { &request["record"] } else { &request };
        let source = writes
            .then(|| serde_json::from_value(request["source"].clone()).ok())
            .flatten();
        let record_type = serde_json::from_value(record["record_type"].clone()).ok();
        with(|state| {
            let entry = AuditEntry {
                at: state.scope.clock_time(),
                agent_id: state.settings.agent.clone(),
                request_id: request_id.to_owned(),
                operation,
                source,
                record_type,
                outcome: trail::Outcome::Failed,
                stored_id: None,
                count: None,
                reason: Some(why),
                caller: None,
            };
            Raw::rows(&[entry])
        })
    }

    fn prefix() -> String {
        with(|state| text(state.scope.prefix()))
    }

    fn lock_key() -> i64 {
        with(|state| engram_store::domain_lock_key(state.scope.prefix()))
    }

    fn take_trail() -> String {
        <Adapter as host::Guest>::take_trail()
    }
}

export!(Adapter);
