//! The Engram engine component.
//!
//! It enforces the Memory IO contract (`engram:memory/io`) and lays its
//! records and indexes out over the ordered key-value store its host imports
//! (`engram:memory/persistence`). It has no storage, clock or randomness of
//! its own and imports nothing from WASI.

mod keys;
mod validate;

wit_bindgen::generate!({
    world: "engine",
    path: "../wit",
    additional_derives: [serde::Serialize, serde::Deserialize, PartialEq],
});

use engram::memory::audit::{self, Operation, Outcome};
use engram::memory::domain::{self, AccessMode as Mode};
use engram::memory::persistence::{self, Direction, Entry, Op, Precondition, StorageError};
use engram::memory::types;
use exports::engram::memory::io::{
    Guest, ReadError, ReadRequest, ReadResult, ReadSelector, WriteRequest, WriteResult,
};
use serde::{Deserialize, Serialize};
use types::{
    Event, EventPayload, IngestedMemoryView, MemoryRecord, RecordType, SourceActor,
    SourceComponent, StoredEvent, StoredEventPayload, StoredFact, StoredRecord, StoredState,
};

/// How often a write is retried when another writer changed the domain
/// between its reads and its commit.
const MAX_COMMIT_ATTEMPTS: usize = 16;

/// The first byte of every stored value: the layout version.
const FORMAT: u8 = 1;

struct Engine;

export!(Engine);

impl Guest for Engine {
    fn write(request: WriteRequest) -> WriteResult {
        let answer = write(&request);
        let (result, outcome) = match answer {
            Ok(Written::New(id)) => (WriteResult::Accepted(id.clone()), Outcome::Accepted(id)),
            Ok(Written::Replayed(id)) => (WriteResult::Accepted(id.clone()), Outcome::Replayed(id)),
            Err(reason) => (WriteResult::Rejected, Outcome::Rejected(reason)),
        };
        audit::append(&audit::Entry {
            request_id: request.request_id,
            operation: Operation::Write,
            source: Some(request.source),
            record_type: Some(record_type(&request.record)),
            outcome,
        });
        result
    }

    fn read(request: ReadRequest) -> Result<ReadResult, ReadError> {
        let answer = read(&request);
        let outcome = match &answer {
            Ok(records) => Outcome::Returned(records.len() as u32),
            Err(Refused { reason, .. }) => Outcome::Failed(reason.clone()),
        };
        audit::append(&audit::Entry {
            request_id: request.request_id,
            operation: Operation::Read,
            source: None,
            record_type: Some(request.record_type),
            outcome,
        });
        answer
            .map(|records| ReadResult { records })
            .map_err(|refused| refused.error)
    }
}

/// A write that was answered with ACCEPTED.
enum Written {
    /// Stored now under this id.
    New(String),
    /// Stored earlier under this id, by the same request (IO-W2).
    Replayed(String),
}

fn record_type(record: &MemoryRecord) -> RecordType {
    match record {
        MemoryRecord::Fact(_) => RecordType::Fact,
        MemoryRecord::Event(_) => RecordType::Event,
        MemoryRecord::State(_) => RecordType::State,
    }
}

/// What the idempotency table keeps for a request id: the id it was
/// answered with and the source it came from. The record itself is compared
/// with the stored one.
#[derive(Serialize, Deserialize)]
struct Idempotency {
    stored_id: String,
    component: SourceComponent,
    actor: SourceActor,
}

fn write(request: &WriteRequest) -> Result<Written, String> {
    if request.request_id.is_empty() {
        return Err("request_id is empty".into());
    }
    if request.source.agent_id != domain::agent() {
        return Err("source.agent_id is not the agent of this domain (IO-W6)".into());
    }
    match (domain::mode(), request.source.component) {
        (Mode::Online, SourceComponent::Cognition)
        | (Mode::Maintenance, SourceComponent::Maintenance) => {}
        (Mode::Online, SourceComponent::Maintenance) => {
            return Err(
                "MAINTENANCE may write only while the domain is in maintenance mode (IO-W7)".into(),
            );
        }
        (Mode::Maintenance, SourceComponent::Cognition) => {
            return Err(
                "COGNITION may not write while the domain is in maintenance mode (IO-W7)".into(),
            );
        }
    }
    validate::record(&request.record).map_err(|why| format!("invalid record: {why}"))?;

    for _ in 0..MAX_COMMIT_ATTEMPTS {
        match try_write(request)? {
            Some(written) => return Ok(written),
            None => continue,
        }
    }
    Err("the domain kept changing under the write; gave up".into())
}

/// One attempt at a write: `Ok(None)` when another writer got in between.
fn try_write(request: &WriteRequest) -> Result<Option<Written>, String> {
    let idempotency_key = keys::idempotency(&request.request_id);
    if let Some(bytes) = get(&idempotency_key)? {
        let entry: Idempotency = decode(&bytes)?;
        return replay(request, entry).map(Some);
    }

    let seq_value = get(keys::SEQ)?;
    let seq = match &seq_value {
        Some(bytes) => decode_seq(bytes)?,
        None => 0,
    };
    let seq = seq + 1;
    let id = keys::record_id(seq);

    let mut preconditions = vec![
        Precondition::Absent(idempotency_key.clone()),
        match seq_value {
            Some(value) => Precondition::Holds(Entry {
                key: keys::SEQ.to_vec(),
                value,
            }),
            None => Precondition::Absent(keys::SEQ.to_vec()),
        },
    ];
    let mut ops = vec![
        put(keys::SEQ.to_vec(), seq.to_be_bytes().to_vec()),
        put(
            idempotency_key,
            encode(&Idempotency {
                stored_id: id.clone(),
                component: request.source.component,
                actor: request.source.actor,
            }),
        ),
    ];

    let stored = match request.record.clone() {
        MemoryRecord::Fact(fact) => {
            let now = domain::now();
            let key_entry = keys::fact_key(&fact.key);
            match get(&key_entry)? {
                Some(current) => {
                    // Close the current version in transaction time (MT-2);
                    // it stays readable by id.
                    let current_id = String::from_utf8(current.clone())
                        .map_err(|_| "a fact-key index entry is damaged".to_string())?;
                    let mut previous = match load(&current_id)? {
                        Some(Stored::Fact(previous)) => previous,
                        _ => return Err("a fact-key index entry points nowhere".into()),
                    };
                    previous.superseded_at = Some(now);
                    ops.push(put(
                        keys::record(&current_id),
                        encode(&Stored::Fact(previous)),
                    ));
                    preconditions.push(Precondition::Holds(Entry {
                        key: key_entry.clone(),
                        value: current,
                    }));
                }
                None => preconditions.push(Precondition::Absent(key_entry.clone())),
            }
            ops.push(put(key_entry, id.as_bytes().to_vec()));
            Stored::Fact(StoredFact {
                id: id.clone(),
                created_at: now,
                superseded_at: None,
                fact,
            })
        }
        MemoryRecord::Event(event) => {
            ops.push(put(
                keys::time(keys::EVENT, event.timestamp, seq),
                id.as_bytes().to_vec(),
            ));
            Stored::Event {
                id: id.clone(),
                event,
            }
        }
        MemoryRecord::State(state) => {
            ops.push(put(
                keys::time(keys::STATE, state.timestamp, seq),
                id.as_bytes().to_vec(),
            ));
            Stored::State(StoredState {
                id: id.clone(),
                state,
            })
        }
    };
    ops.push(put(keys::record(&id), encode(&stored)));

    match persistence::commit(&preconditions, &ops) {
        Ok(()) => Ok(Some(Written::New(id))),
        Err(StorageError::Conflict) => Ok(None),
        Err(StorageError::Unavailable(why)) => Err(format!("storage unavailable: {why}")),
    }
}

/// Answers a request id that was seen before (IO-W2): the same record from
/// the same source gets the same id; anything else is refused.
fn replay(request: &WriteRequest, entry: Idempotency) -> Result<Written, String> {
    let reused = || Err("request_id was already used for a different write (IO-W2)".to_string());
    if entry.component != request.source.component || entry.actor != request.source.actor {
        return reused();
    }
    let same = match (load(&entry.stored_id)?, &request.record) {
        (Some(Stored::Fact(stored)), MemoryRecord::Fact(fact)) => stored.fact == *fact,
        (Some(Stored::Event { event: stored, .. }), MemoryRecord::Event(event)) => stored == *event,
        (Some(Stored::State(stored)), MemoryRecord::State(state)) => stored.state == *state,
        (None, _) => return Err("an idempotency entry points nowhere".into()),
        _ => false,
    };
    if same {
        Ok(Written::Replayed(entry.stored_id))
    } else {
        reused()
    }
}

/// A refused read: the typed error for the caller and the reason for the
/// audit trail.
struct Refused {
    error: ReadError,
    reason: String,
}

impl Refused {
    fn new(error: ReadError, reason: impl Into<String>) -> Self {
        Refused {
            error,
            reason: reason.into(),
        }
    }
}

impl From<String> for Refused {
    /// Storage faults reach the caller without their details (IO-G4).
    fn from(reason: String) -> Self {
        Refused::new(ReadError::StorageUnavailable, reason)
    }
}

fn read(request: &ReadRequest) -> Result<Vec<StoredRecord>, Refused> {
    if request.request_id.is_empty() {
        return Err(Refused::new(
            ReadError::InvalidRequestId,
            "request_id is empty",
        ));
    }
    let kind = request.record_type;
    let time_kind = match kind {
        RecordType::Fact => None,
        RecordType::Event => Some(keys::EVENT),
        RecordType::State => Some(keys::STATE),
    };
    // EVENT is read oldest first, STATE newest first (IO-R7).
    let time_order = match kind {
        RecordType::State => Direction::Descending,
        _ => Direction::Ascending,
    };
    match (&request.selector, time_kind) {
        (ReadSelector::ById(by), _) => Ok(load(&by.id)?
            .filter(|record| record.record_type() == kind)
            .map(Stored::view)
            .into_iter()
            .collect()),
        (ReadSelector::ByKey(by), None) => {
            if !validate::is_normalized_fact_key(&by.key) {
                return Err(Refused::new(
                    ReadError::InvalidKey,
                    format!("key {:?} is not a normalized fact key", by.key),
                ));
            }
            match get(&keys::fact_key(&by.key))? {
                Some(id) => Ok(load(&id_text(id)?)?.map(Stored::view).into_iter().collect()),
                None => Ok(Vec::new()),
            }
        }
        (ReadSelector::ByKey(_), Some(_)) => Err(not_allowed("by-key reads FACT only")),
        (ReadSelector::ByTimeRange(_) | ReadSelector::Latest(_), None) => Err(not_allowed(
            "by-time-range and latest read EVENT and STATE only",
        )),
        (ReadSelector::ByTimeRange(range), Some(time_kind)) => {
            let limit = bounded(range.limit)?;
            if range.from > range.to {
                return Err(Refused::new(ReadError::InvalidRange, "from is after to"));
            }
            let (start, end) = keys::time_range(time_kind, range.from, range.to);
            load_indexed(&start, &end, limit, time_order)
        }
        (ReadSelector::Latest(latest), Some(time_kind)) => {
            let limit = bounded(latest.limit)?;
            let (start, end) = keys::time_all(time_kind);
            let mut records = load_indexed(&start, &end, limit, Direction::Descending)?;
            if time_order == Direction::Ascending {
                records.reverse();
            }
            Ok(records)
        }
        (ReadSelector::Limit(truncate), _) => {
            let limit = bounded(truncate.limit)?;
            let (start, end) = match time_kind {
                Some(time_kind) => keys::time_all(time_kind),
                None => keys::fact_key_range(),
            };
            load_indexed(&start, &end, limit, time_order)
        }
    }
}

fn not_allowed(reason: &str) -> Refused {
    Refused::new(ReadError::SelectorNotAllowed, reason)
}

/// Checks a read limit against the host's ceiling (IO-G6).
fn bounded(limit: u32) -> Result<u32, Refused> {
    let ceiling = domain::read_limit_ceiling().max(1);
    if limit == 0 || limit > ceiling {
        return Err(Refused::new(
            ReadError::LimitOutOfBounds(ceiling),
            format!("limit {limit} is outside 1..={ceiling}"),
        ));
    }
    Ok(limit)
}

/// A record as the engine keeps it: what was written, its id, and for a
/// FACT its transaction times.
#[derive(Serialize, Deserialize)]
enum Stored {
    Fact(StoredFact),
    Event { id: String, event: Event },
    State(StoredState),
}

impl Stored {
    fn record_type(&self) -> RecordType {
        match self {
            Stored::Fact(_) => RecordType::Fact,
            Stored::Event { .. } => RecordType::Event,
            Stored::State(_) => RecordType::State,
        }
    }

    /// The record as the IO returns it: less index data (B5-S3, IO-G4).
    fn view(self) -> StoredRecord {
        match self {
            Stored::Fact(fact) => StoredRecord::Fact(fact),
            Stored::State(state) => StoredRecord::State(state),
            Stored::Event { id, event } => StoredRecord::Event(StoredEvent {
                id,
                timestamp: event.timestamp,
                payload: match event.payload {
                    EventPayload::Ingested(memory) => {
                        StoredEventPayload::Ingested(IngestedMemoryView {
                            session_ref: memory.session_ref,
                            summary: memory.summary,
                        })
                    }
                    EventPayload::Episode(episode) => StoredEventPayload::Episode(episode),
                },
            }),
        }
    }
}

/// Loads the records an index range points at, at most `limit` of them.
fn load_indexed(
    start: &[u8],
    end: &[u8],
    limit: u32,
    order: Direction,
) -> Result<Vec<StoredRecord>, Refused> {
    let entries = persistence::scan(start, end, limit, order).map_err(storage)?;
    let mut records = Vec::with_capacity(entries.len());
    for entry in entries.into_iter().take(limit as usize) {
        let id = id_text(entry.value)?;
        match load(&id)? {
            Some(record) => records.push(record.view()),
            None => return Err(format!("index entry for {id} points nowhere").into()),
        }
    }
    Ok(records)
}

fn id_text(bytes: Vec<u8>) -> Result<String, String> {
    String::from_utf8(bytes).map_err(|_| "an index entry is damaged".to_string())
}

fn load(id: &str) -> Result<Option<Stored>, String> {
    get(&keys::record(id))?
        .map(|bytes| decode(&bytes))
        .transpose()
}

fn get(key: &[u8]) -> Result<Option<Vec<u8>>, String> {
    persistence::get(key).map_err(storage)
}

fn storage(error: StorageError) -> String {
    match error {
        StorageError::Conflict => "storage reported a conflict on a read".into(),
        StorageError::Unavailable(why) => format!("storage unavailable: {why}"),
    }
}

fn put(key: Vec<u8>, value: Vec<u8>) -> Op {
    Op::Put(Entry { key, value })
}

fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    let mut bytes = vec![FORMAT];
    // Serializing these plain data types cannot fail.
    serde_json::to_writer(&mut bytes, value).expect("stored values serialize");
    bytes
}

fn decode<T: for<'de> Deserialize<'de>>(bytes: &[u8]) -> Result<T, String> {
    match bytes.split_first() {
        Some((&FORMAT, json)) => {
            serde_json::from_slice(json).map_err(|e| format!("a stored value is damaged: {e}"))
        }
        _ => Err("a stored value has an unknown format".into()),
    }
}

fn decode_seq(bytes: &[u8]) -> Result<u64, String> {
    <[u8; 8]>::try_from(bytes)
        .map(u64::from_be_bytes)
        .map_err(|_| "the sequence counter is damaged".to_string())
}
