//! The Engram engine component.
//!
//! It enforces the Memory IO contract (`engram:memory/io`) and lays its
//! records and indexes out over the ordered key-value store its host imports
//! (`engram:memory/persistence`). It has no storage, clock or randomness of
//! its own and imports nothing from WASI.

mod cycle;
mod graph;
mod history;
mod keys;
mod maintenance;
mod time;
mod validate;
mod vectors;
mod writer;

/// The WIT package's bindings (`engram:memory`, the `engine` world): the
/// imports the engine calls and the exports it implements.
mod bindings {
    wit_bindgen::generate!({
        world: "engine",
        path: "../wit",
        additional_derives: [serde::Serialize, serde::Deserialize, PartialEq],
    });
}

use bindings::engram::memory::audit::{self, Operation, Outcome};
use bindings::engram::memory::domain::{self, AccessMode as Mode};
use bindings::engram::memory::embedder::Model;
use bindings::engram::memory::persistence::{self, Direction, StorageError};
use bindings::engram::memory::types;
use bindings::exports::engram::memory::io::{
    Guest, ReadError, ReadRequest, ReadResult, ReadSelector, WriteRequest, WriteResult,
};
use serde::{Deserialize, Serialize};
use types::{
    Event, EventPayload, IngestedMemoryView, MemoryRecord, RecordType, SourceComponent,
    StoredEvent, StoredEventPayload, StoredFact, StoredRecord, StoredState,
};
use writer::{Write, Written};

/// The first byte of every stored value: its encoding. Values are written
/// in [`FORMAT`]. See `keys.rs` for the layout.
const FORMAT: u8 = 2;
/// The first encoding, JSON text, written by the builds before
/// [`FORMAT`]: no longer read (S-FORMAT), refused by name.
const FORMAT_JSON: u8 = 1;
/// A record that expires: its expiry time, then the record as [`FORMAT`]
/// holds it.
const FORMAT_EXPIRING: u8 = 3;

struct Engine;

bindings::export!(Engine with_types_in bindings);

impl Guest for Engine {
    fn write(request: WriteRequest) -> WriteResult {
        let answer = write(&request);
        answered(&request, answer)
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

/// Turns a write's answer into the binary result (IO-W8). An accepted
/// write was audited by `write`; a rejected one is audited here.
fn answered(request: &WriteRequest, answer: Result<Written, String>) -> WriteResult {
    match answer {
        Ok(Written::New(id) | Written::Replayed(id)) => WriteResult::Accepted(id),
        Err(reason) => {
            audit::append(&write_entry(request, Outcome::Rejected(reason)));
            WriteResult::Rejected
        }
    }
}

/// The audit entry of a write.
fn write_entry(request: &WriteRequest, outcome: Outcome) -> audit::Entry {
    audit::Entry {
        request_id: request.request_id.clone(),
        operation: Operation::Write,
        source: Some(request.source.clone()),
        record_type: Some(record_type(&request.record)),
        outcome,
    }
}

/// What the audit trail says of an accepted write.
fn accepted(written: &Written) -> Outcome {
    match written {
        Written::New(id) => Outcome::Accepted(id.clone()),
        Written::Replayed(id) => Outcome::Replayed(id.clone()),
    }
}

fn record_type(record: &MemoryRecord) -> RecordType {
    match record {
        MemoryRecord::Fact(_) => RecordType::Fact,
        MemoryRecord::Event(_) => RecordType::Event,
        MemoryRecord::State(_) => RecordType::State,
    }
}

pub(crate) fn write(request: &WriteRequest) -> Result<Written, String> {
    if let Some(why) = validate::request_id(&request.request_id) {
        return Err(why);
    }
    if request.source.agent_id != domain::agent() {
        return Err("source.agent_id is not the agent of this domain (IO-W6)".into());
    }
    // The mode admits one component's writes (IO-W7, S-MODE).
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

    // An ingested memory's summary is embedded for its commit (S-VECTOR).
    let embedded = match &request.record {
        MemoryRecord::Event(Event {
            payload: EventPayload::Ingested(memory),
            ..
        }) => {
            let failed = |why: String| format!("the embedder failed: {why}");
            match vectors::host_model().map_err(failed)? {
                Some(model) => embed_passages(&model, std::slice::from_ref(&memory.summary))
                    .map_err(failed)?
                    .pop(),
                None => None,
            }
        }
        _ => None,
    };
    let write = Write {
        request_id: &request.request_id,
        source: &request.source,
        record: &request.record,
        by_cycle: false,
        embedded,
    };
    // The entry of an accepted write goes into its commit.
    let mut committed = writer::write_all(&[write], |written| {
        written
            .iter()
            .map(|w| write_entry(request, accepted(w)))
            .collect()
    })?;
    let written = committed
        .written
        .pop()
        .ok_or_else(|| "the write produced no answer".to_string())?;
    if !committed.audited {
        audit::append(&write_entry(request, accepted(&written)));
    }
    Ok(written)
}

/// The vectors of memories' summaries, one call (role `passage`), with the
/// host's `model`.
pub(crate) fn embed_passages(
    model: &Model,
    summaries: &[String],
) -> Result<Vec<writer::Embedded>, String> {
    Ok(vectors::embed(model, summaries, vectors::PASSAGE)?
        .into_iter()
        .map(|vector| writer::Embedded {
            model: model.clone(),
            vector,
        })
        .collect())
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
    request_id_given(&request.request_id)?;
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
            // A closed range, `from..=to` (S-RANGE), in the type's order
            // with ties in write order (S-ORDER).
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

/// Refuses an empty request id (IO-W2), or one too long (S-REQUEST-ID).
fn request_id_given(request_id: &str) -> Result<(), Refused> {
    match validate::request_id(request_id) {
        Some(why) => Err(Refused::new(ReadError::InvalidRequestId, why)),
        None => Ok(()),
    }
}

/// Answers a read of FACTs made through an extension of the IO, audited:
/// its facts, `found` of them, or why it was refused.
fn audited_fact_read<T>(
    request_id: &str,
    answer: Result<T, Refused>,
    found: impl FnOnce(&T) -> usize,
) -> Result<T, ReadError> {
    audit::append(&audit::Entry {
        request_id: request_id.to_owned(),
        operation: Operation::Read,
        source: None,
        record_type: Some(RecordType::Fact),
        outcome: match &answer {
            Ok(facts) => Outcome::Returned(found(facts) as u32),
            Err(refused) => Outcome::Failed(refused.reason.clone()),
        },
    });
    answer.map_err(|refused| refused.error)
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

/// The bytes one answer holds so far, against the host's ceiling (IO-G6).
pub(crate) struct Answer {
    used: u64,
    limit: u64,
}

impl Answer {
    /// An empty answer under the host's ceiling.
    pub(crate) fn new() -> Self {
        Answer {
            used: 0,
            limit: domain::answer_byte_limit().max(1),
        }
    }

    /// Counts a record stored in `bytes` bytes into the answer; refuses the
    /// whole answer once it would hold more than the ceiling.
    pub(crate) fn take(&mut self, bytes: usize) -> Result<(), Refused> {
        self.used = self.used.saturating_add(bytes as u64);
        if self.used > self.limit {
            return Err(Refused::new(
                ReadError::AnswerTooLarge(self.limit),
                format!(
                    "the records asked for hold more than the answer ceiling of {} bytes",
                    self.limit
                ),
            ));
        }
        Ok(())
    }
}

/// Loads the records an index range points at, at most `limit` of them.
fn load_indexed(
    start: &[u8],
    end: &[u8],
    limit: u32,
    order: Direction,
) -> Result<Vec<StoredRecord>, Refused> {
    Ok(load_range(start, end, limit, order, &mut Answer::new())?
        .into_iter()
        .map(Stored::view)
        .collect())
}

/// Loads the records an index range points at, at most `limit` of them in
/// `order`; an entry that points nowhere is a storage fault. Records the
/// reader may not see are passed over and take no place in the limit
/// (MT-1). The records it returns count into `answer`.
fn load_range(
    start: &[u8],
    end: &[u8],
    limit: u32,
    order: Direction,
    answer: &mut Answer,
) -> Result<Vec<Stored>, Refused> {
    let (mut start, mut end) = (start.to_vec(), end.to_vec());
    let mut records = Vec::new();
    let mut now = Now::default();
    loop {
        let wanted = limit - records.len() as u32;
        let entries = persistence::scan(&start, &end, wanted, order).map_err(storage)?;
        let more = entries.len() as u32 == wanted;
        let last = entries.last().map(|entry| entry.key.clone());
        let ids = entries
            .into_iter()
            .map(|entry| id_text(entry.value))
            .collect::<Result<Vec<_>, _>>()?;
        load_ids(&ids, &mut records, answer, &mut now)?;
        match last {
            Some(last) if more && (records.len() as u32) < limit => match order {
                Direction::Ascending => start = [last.as_slice(), &[0]].concat(),
                Direction::Descending => end = last,
            },
            _ => return Ok(records),
        }
    }
}

/// Loads the records index entries name, in their order, onto `records`:
/// those the reader may see, each counted into `answer`; an entry that
/// points nowhere is a storage fault.
fn load_ids(
    ids: &[String],
    records: &mut Vec<Stored>,
    answer: &mut Answer,
    now: &mut Now,
) -> Result<(), Refused> {
    let record_keys: Vec<Vec<u8>> = ids.iter().map(|id| keys::record(id)).collect();
    // The host answers a prefix at a time when the values are large; each
    // part is counted into the answer before the next is asked for.
    let mut done = 0;
    while done < record_keys.len() {
        let values = persistence::get_many(&record_keys[done..]).map_err(storage)?;
        if values.is_empty() || done + values.len() > record_keys.len() {
            return Err("the store answered a read of many keys with another count"
                .to_string()
                .into());
        }
        for (id, bytes) in ids[done..].iter().zip(values) {
            done += 1;
            let Some(bytes) = bytes else {
                return Err(format!("index entry for {id} points nowhere").into());
            };
            let (record, expires_at) = decode_record(&bytes)?;
            if shown(&record, expires_at, now)? {
                answer.take(bytes.len())?;
                records.push(record);
            }
        }
    }
    Ok(())
}

/// Ranks a privacy tier: 0 public, 1 sensitive, 2 private (MT-1).
fn tier_rank(tier: types::PrivacyTier) -> u8 {
    match tier {
        types::PrivacyTier::Public => 0,
        types::PrivacyTier::Sensitive => 1,
        types::PrivacyTier::Private => 2,
    }
}

/// The name of a ranked tier, for reasons.
fn tier_name(rank: u8) -> &'static str {
    match rank {
        0 => "public",
        1 => "sensitive",
        _ => "private",
    }
}

/// The tier of a fact key, read through `get` (MT-1).
fn key_tier(
    key: &str,
    get: impl Fn(&[u8]) -> Result<Option<Vec<u8>>, String>,
) -> Result<u8, String> {
    match get(&keys::tier(key))?.as_deref() {
        None => Ok(0),
        Some(&[rank]) if rank <= 2 => Ok(rank),
        Some(_) => Err(format!("the tier entry of key {key:?} is damaged")),
    }
}

/// Whether the reader may see `record`: not once it has expired
/// (`domain.expire-after`, S-EXPIRY); and a FACT whose key's tier is above the
/// ceiling is withheld, and so is a relationship that joins an entity whose
/// key is (MT-1).
fn shown(record: &Stored, expires_at: Option<i64>, now: &mut Now) -> Result<bool, String> {
    if now.passed(expires_at) {
        return Ok(false);
    }
    let Stored::Fact(fact) = record else {
        return Ok(true);
    };
    // A record above the reader's tier is answered as if absent (S-TIER).
    let ceiling = tier_rank(domain::tier_ceiling());
    if ceiling == 2 {
        return Ok(true);
    }
    if key_tier(&fact.fact.key, get)? > ceiling {
        return Ok(false);
    }
    if let types::FactPayload::Relationship(r) = &fact.fact.payload {
        for entity in [&r.from_entity, &r.to_entity] {
            if key_tier(entity, get)? > ceiling {
                return Ok(false);
            }
        }
    }
    Ok(true)
}

/// Loads the FACTs an index range points at; any other record is a fault.
fn load_facts(
    start: &[u8],
    end: &[u8],
    limit: u32,
    order: Direction,
    answer: &mut Answer,
) -> Result<Vec<StoredFact>, Refused> {
    facts(load_range(start, end, limit, order, answer)?)
}

/// The FACTs of records a FACT index named; any other record is a fault.
fn facts(records: Vec<Stored>) -> Result<Vec<StoredFact>, Refused> {
    records
        .into_iter()
        .map(|record| match record {
            Stored::Fact(fact) => Ok(fact),
            _ => Err("a FACT index entry points at another record type"
                .to_string()
                .into()),
        })
        .collect()
}

/// The record id an index entry's value names (a fact key's entry keeps
/// its version's sequence number beside it: [`keys::indexed`]).
fn id_text(bytes: Vec<u8>) -> Result<String, String> {
    keys::indexed(&bytes)
        .map(|(id, _)| id.to_owned())
        .ok_or_else(|| "an index entry is damaged".to_string())
}

/// The host's time, asked at most once for the records one answer looks
/// at, and only when one of them expires.
#[derive(Default)]
struct Now(Option<i64>);

impl Now {
    /// Whether a record that expires at `expires_at` has expired: the
    /// host's time is at or after it.
    fn passed(&mut self, expires_at: Option<i64>) -> bool {
        expires_at.is_some_and(|at| *self.0.get_or_insert_with(domain::now) >= at)
    }
}

/// Loads a record the reader may see (MT-1) and that has not expired.
fn load(id: &str) -> Result<Option<Stored>, String> {
    match load_with(id, get)? {
        Some((record, expires_at)) if shown(&record, expires_at, &mut Now::default())? => {
            Ok(Some(record))
        }
        _ => Ok(None),
    }
}

/// Loads a record and its expiry through `get`, which may see changes not
/// yet committed; expired or not.
fn load_with(
    id: &str,
    get: impl Fn(&[u8]) -> Result<Option<Vec<u8>>, String>,
) -> Result<Option<(Stored, Option<i64>)>, String> {
    get(&keys::record(id))?
        .map(|bytes| decode_record(&bytes))
        .transpose()
}

/// A record's stored value: [`FORMAT`] when it does not expire, so a
/// record is kept as before expiry was; [`FORMAT_EXPIRING`] when it does.
fn encode_record(record: &Stored, expires_at: Option<i64>) -> Vec<u8> {
    match expires_at {
        None => encode(record),
        // Serializing these plain data types into a vector cannot fail.
        Some(at) => postcard::to_extend(&(at, record), vec![FORMAT_EXPIRING])
            .expect("stored values serialize"),
    }
}

/// A record and its expiry, from its stored value.
fn decode_record(bytes: &[u8]) -> Result<(Stored, Option<i64>), String> {
    match bytes.split_first() {
        Some((&FORMAT_EXPIRING, body)) => match postcard::take_from_bytes(body) {
            Ok(((at, record), [])) => Ok((record, Some(at))),
            Ok(_) => Err("a stored value is damaged: bytes after its end".into()),
            Err(e) => Err(format!("a stored value is damaged: {e}")),
        },
        _ => Ok((decode(bytes)?, None)),
    }
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

/// A stored value: the format byte, then the value in postcard's wire
/// format (its 1.0 specification: variants and lengths as varints, fields
/// in declaration order, no names).
fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    // Serializing these plain data types into a vector cannot fail.
    postcard::to_extend(value, vec![FORMAT]).expect("stored values serialize")
}

fn decode<T: for<'de> Deserialize<'de>>(bytes: &[u8]) -> Result<T, String> {
    let damaged = |e: &dyn std::fmt::Display| format!("a stored value is damaged: {e}");
    match bytes.split_first() {
        Some((&FORMAT, body)) => match postcard::take_from_bytes(body) {
            Ok((value, [])) => Ok(value),
            Ok(_) => Err(damaged(&"bytes after its end")),
            Err(e) => Err(damaged(&e)),
        },
        Some((&FORMAT_JSON, _)) => Err(
            "a stored value is in the first store format (format byte 1, JSON text), which \
             this build does not read: export the domain with a build that reads it and \
             import the export (docs/store-format.md)"
                .into(),
        ),
        _ => Err("a stored value has an unknown format".into()),
    }
}
