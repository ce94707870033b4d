//! Storing records: one or more writes laid out over the key-value store in
//! one atomic commit, with idempotency (IO-W2), id allocation, supersession
//! of fact versions and the indexes.

use crate::bindings::engram::memory::audit;
use crate::bindings::engram::memory::domain;
use crate::bindings::engram::memory::embedder::Model;
use crate::bindings::engram::memory::persistence::{self, Entry, Op, Precondition, StorageError};
use crate::bindings::engram::memory::types::{
    EntityType, EventPayload, Fact, FactPayload, MemoryRecord, SourceActor, SourceComponent,
    StoredFact, StoredState, WriteSource,
};
use crate::{Stored, decode, encode, encode_record, get, keys, load_with, vectors};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// How often a batch is retried when another writer changed the domain
/// between its reads and its commit.
const MAX_COMMIT_ATTEMPTS: usize = 16;

/// One record to store.
pub struct Write<'a> {
    pub request_id: &'a str,
    pub source: &'a WriteSource,
    pub record: &'a MemoryRecord,
    /// Written by a cycle: a retry of the cycle stamps its memory with a
    /// new time, so the time is left out when a replay is compared.
    pub by_cycle: bool,
    /// An ingested memory's summary vector and the model that made it,
    /// when the host has an embedder (S-VECTOR).
    pub embedded: Option<Embedded>,
}

/// A summary's vector, of a model.
pub struct Embedded {
    pub model: Model,
    pub vector: Vec<f32>,
}

/// What a batch of writes came to.
pub struct Committed {
    /// An answer per write, in order.
    pub written: Vec<Written>,
    /// Whether the audit entries went into the commit; when not (every
    /// write was a replay), the caller appends them.
    pub audited: bool,
}

/// A write that was answered with ACCEPTED.
pub enum Written {
    /// Stored now under this id.
    New(String),
    /// Stored earlier under this id, by the same request (IO-W2).
    Replayed(String),
}

impl Written {
    /// The id the record is stored under.
    pub fn into_id(self) -> String {
        match self {
            Written::New(id) | Written::Replayed(id) => id,
        }
    }
}

/// What the idempotency table keeps for a request id: the id it was
/// answered with and the source it came from. The record itself is compared
/// with the stored one.
#[derive(Serialize, Deserialize, PartialEq)]
pub struct Idempotency {
    pub stored_id: String,
    pub component: SourceComponent,
    pub actor: SourceActor,
}

/// Stores every write, or none: one commit, which carries the audit entries
/// `trail` makes of the answers, so a stored write never lacks its entry.
/// The error is the reason, for the audit trail.
pub fn write_all(
    writes: &[Write<'_>],
    trail: impl Fn(&[Written]) -> Vec<audit::Entry>,
) -> Result<Committed, String> {
    for _ in 0..MAX_COMMIT_ATTEMPTS {
        if let Some(committed) = try_write_all(writes, &trail)? {
            return Ok(committed);
        }
    }
    Err("the domain kept changing under the write; gave up".into())
}

/// The changes of one commit, and what they make the store look like to the
/// rest of the batch.
#[derive(Default)]
pub struct Batch {
    overlay: HashMap<Vec<u8>, Option<Vec<u8>>>,
    /// Values read ahead of need, in one call ([`Batch::read_ahead`]).
    read: HashMap<Vec<u8>, Option<Vec<u8>>>,
    pub preconditions: Vec<Precondition>,
    pub ops: Vec<Op>,
}

impl Batch {
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, String> {
        match self.overlay.get(key).or_else(|| self.read.get(key)) {
            Some(value) => Ok(value.clone()),
            None => get(key),
        }
    }

    /// Reads `wanted` in as few calls as the host allows (one, unless it
    /// answers a prefix), so that the batch's later reads of them cross to
    /// the host no more.
    pub fn read_ahead(&mut self, mut wanted: Vec<Vec<u8>>) -> Result<(), String> {
        wanted.sort();
        wanted.dedup();
        wanted.retain(|key| !self.read.contains_key(key));
        let mut done = 0;
        while done < wanted.len() {
            let values = persistence::get_many(&wanted[done..]).map_err(crate::storage)?;
            if values.is_empty() || values.len() > wanted.len() - done {
                return Err(
                    "the host answered a read of many keys with no or too many values".into(),
                );
            }
            for value in values {
                self.read.insert(wanted[done].clone(), value);
                done += 1;
            }
        }
        Ok(())
    }

    pub fn put(&mut self, key: Vec<u8>, value: Vec<u8>) {
        self.overlay.insert(key.clone(), Some(value.clone()));
        self.ops.push(Op::Put(Entry { key, value }));
    }

    pub fn delete(&mut self, key: Vec<u8>) {
        self.overlay.insert(key.clone(), None);
        self.ops.push(Op::Delete(key));
    }
}

/// One attempt: `Ok(None)` when another writer got in between.
fn try_write_all(
    writes: &[Write<'_>],
    trail: &impl Fn(&[Written]) -> Vec<audit::Entry>,
) -> Result<Option<Committed>, String> {
    let mut batch = Batch::default();
    let ids: Vec<String> = writes
        .iter()
        .map(|_| keys::record_id(domain::id_entropy()))
        .collect();
    read_ahead(&mut batch, writes, &ids)?;
    let seq_value = batch.get(keys::SEQ)?;
    let mut clock = if writes
        .iter()
        .any(|w| matches!(w.record, MemoryRecord::Fact(_)))
    {
        Clock::of(batch.get(keys::CLOCK)?)?
    } else {
        Clock::unread()
    };
    let mut ids = ids.into_iter();
    let first_seq = match &seq_value {
        Some(bytes) => decode_seq(bytes)?,
        None => 0,
    };
    let mut seq = first_seq;
    let mut written = Vec::with_capacity(writes.len());
    // How long the host keeps what this batch stores, asked once.
    let mut expire_after = None;
    for write in writes {
        let idempotency_key = keys::idempotency(write.request_id);
        if let Some(bytes) = batch.get(&idempotency_key)? {
            written.push(replay(write, decode(&bytes)?, &batch)?);
            continue;
        }
        seq += 1;
        let id = fresh_id(&mut batch, ids.next())?;
        let expire_after = *expire_after.get_or_insert_with(domain::expire_after);
        let at = Placed {
            id: &id,
            seq,
            fresh_domain: first_seq == 0,
            expire_after,
        };
        lay_out_new(&mut batch, write, idempotency_key, &at, &mut clock)?;
        written.push(Written::New(id));
    }
    clock.keep(&mut batch);
    if seq == first_seq {
        // Every write was a replay: nothing to commit.
        return Ok(Some(Committed {
            written,
            audited: false,
        }));
    }
    // Every write and cycle raises the counter and is conditioned on the
    // value it read, so two writers can never both commit from the same
    // reads: the condition stands for the reads the batch made (the new
    // record id still free, the fact key's current version, its tier).
    batch.preconditions.push(match seq_value {
        Some(value) => Precondition::Holds(Entry {
            key: keys::SEQ.to_vec(),
            value,
        }),
        None => Precondition::Absent(keys::SEQ.to_vec()),
    });
    batch.put(keys::SEQ.to_vec(), seq.to_be_bytes().to_vec());
    match persistence::commit(&batch.preconditions, &batch.ops, &trail(&written)) {
        Ok(()) => Ok(Some(Committed {
            written,
            audited: true,
        })),
        Err(StorageError::Conflict) => Ok(None),
        Err(StorageError::Unavailable(why)) => Err(format!("storage unavailable: {why}")),
    }
}

/// Reads into `batch`, in one call, everything writing `writes` (with the
/// new record ids `ids`) is sure to read: the sequence counter, each
/// request id's idempotency entry, each new record id (to see it is free)
/// and, for a FACT, the transaction clock, its key's current version and
/// its key's tier; the domain's embedding model when one is an ingested
/// memory. (Replacing a current version reads that version next.)
fn read_ahead(batch: &mut Batch, writes: &[Write<'_>], ids: &[String]) -> Result<(), String> {
    let mut wanted = vec![keys::SEQ.to_vec()];
    if writes.iter().any(|w| is_ingested(w.record)) {
        wanted.push(vectors::MODEL.to_vec());
    }
    for (write, id) in writes.iter().zip(ids) {
        wanted.push(keys::idempotency(write.request_id));
        wanted.push(keys::record(id));
        if let MemoryRecord::Fact(fact) = write.record {
            wanted.extend([
                keys::CLOCK.to_vec(),
                keys::fact_key(&fact.key),
                keys::tier(&fact.key),
            ]);
        }
    }
    batch.read_ahead(wanted)
}

/// Where a new record goes: its id and sequence number, whether the domain
/// held nothing before this batch, and how long the host keeps it.
struct Placed<'a> {
    id: &'a str,
    seq: u64,
    fresh_domain: bool,
    expire_after: Option<u64>,
}

/// Lays out a write that is not a replay: its idempotency entry (under
/// `idempotency_key`, conditioned on its absence: an import may commit
/// without raising the counter, as it keeps the sequence numbers it is
/// given), the record with its indexes, and an ingested memory's vector.
fn lay_out_new(
    batch: &mut Batch,
    write: &Write<'_>,
    idempotency_key: Vec<u8>,
    at: &Placed<'_>,
    clock: &mut Clock,
) -> Result<(), String> {
    batch
        .preconditions
        .push(Precondition::Absent(idempotency_key.clone()));
    let entry = Idempotency {
        stored_id: at.id.to_owned(),
        component: write.source.component,
        actor: write.source.actor,
    };
    batch.put(idempotency_key, encode(&entry));
    lay_out(batch, write.record, at.id, at.seq, clock, at.expire_after)?;
    if is_ingested(write.record) {
        lay_vector(
            batch,
            write.embedded.as_ref(),
            at.id,
            at.seq,
            at.fresh_domain,
        )?;
    }
    Ok(())
}

/// Whether a record is an ingested memory, which has a summary vector
/// when the host has an embedder.
pub fn is_ingested(record: &MemoryRecord) -> bool {
    matches!(record, MemoryRecord::Event(event) if matches!(event.payload, EventPayload::Ingested(_)))
}

/// Lays out an ingested memory's vector, if it has one, under the domain's
/// model, which the domain's first vector records (S-VECTOR): `complete`
/// while every ingested memory has one (`fresh`: the domain held nothing
/// before this batch). A memory written with no vector makes the domain's
/// vectors incomplete; one of another model than the domain's is refused.
pub fn lay_vector(
    batch: &mut Batch,
    embedded: Option<&Embedded>,
    id: &str,
    seq: u64,
    fresh: bool,
) -> Result<(), String> {
    let current = vectors::domain_model(|k| batch.get(k))?;
    match (embedded, current) {
        (Some(embedded), None) => {
            let model = vectors::DomainModel {
                generation: 0,
                model: embedded.model.clone(),
                complete: fresh,
            };
            batch.put(vectors::MODEL.to_vec(), vectors::encode_model(&model));
            batch.put(vectors::key(0, seq), vectors::value(id, &embedded.vector));
        }
        (Some(embedded), Some(domain)) if domain.model == embedded.model => {
            batch.put(
                vectors::key(domain.generation, seq),
                vectors::value(id, &embedded.vector),
            );
        }
        (Some(embedded), Some(domain)) => {
            return Err(vectors::changed(&domain.model, &embedded.model));
        }
        (None, Some(domain)) if domain.complete => {
            let model = vectors::DomainModel {
                complete: false,
                ..domain
            };
            batch.put(vectors::MODEL.to_vec(), vectors::encode_model(&model));
        }
        (None, _) => {}
    }
    Ok(())
}

/// A new record id no record of the store or the batch holds (MT-1: ids
/// are random, so they reveal nothing of other records): `drawn`, the one
/// drawn for the write (and read ahead), unless it is taken. The commit's
/// condition on the sequence counter keeps it free until the commit (an
/// import, which may leave the counter as it is, brings ids drawn the same
/// way: 128 random bits, so a clash is not a practical event).
fn fresh_id(batch: &mut Batch, mut drawn: Option<String>) -> Result<String, String> {
    for _ in 0..4 {
        let id = drawn
            .take()
            .unwrap_or_else(|| keys::record_id(domain::id_entropy()));
        if batch.get(&keys::record(&id))?.is_none() {
            return Ok(id);
        }
    }
    Err("the host's id entropy keeps repeating ids".into())
}

/// The domain's transaction clock (MT-2): every FACT version is given a
/// transaction time later than every one given before it in the domain,
/// whatever the host's clock does (repeats a millisecond, steps back, differs
/// between two processes or two hosts of one store). The last time given is
/// kept under [`keys::CLOCK`], read and written in the commit, whose
/// condition on the sequence counter keeps two writers from giving the same
/// time.
pub struct Clock {
    /// The last time given, once read (with the sequence counter for a
    /// batch that holds a FACT; an import reads it at its first version).
    last: Option<Option<i64>>,
    changed: bool,
}

impl Clock {
    /// The domain's clock, not read yet.
    pub fn unread() -> Self {
        Clock {
            last: None,
            changed: false,
        }
    }

    /// The domain's clock, read already: its stored value.
    pub fn of(value: Option<Vec<u8>>) -> Result<Self, String> {
        Ok(Clock {
            last: Some(decode_clock(value)?),
            changed: false,
        })
    }

    /// The last time given, as the batch sees it.
    fn last(&mut self, batch: &Batch) -> Result<Option<i64>, String> {
        if let Some(last) = self.last {
            return Ok(last);
        }
        let last = decode_clock(batch.get(keys::CLOCK)?)?;
        self.last = Some(last);
        Ok(last)
    }

    /// The next transaction time: the host's time, unless that is not after
    /// the last one given or `after` (the version it supersedes, in a store
    /// kept before the clock was); then one millisecond later.
    pub fn tick(&mut self, batch: &Batch, after: Option<i64>) -> Result<i64, String> {
        let host = domain::now();
        let now = match self.last(batch)?.max(after) {
            Some(floor) if host <= floor => floor
                .checked_add(1)
                .ok_or("the transaction clock is at its end")?,
            _ => host,
        };
        self.witness(batch, now)?;
        Ok(now)
    }

    /// Takes a time given elsewhere (an imported version's) into account.
    pub fn witness(&mut self, batch: &Batch, time: i64) -> Result<(), String> {
        if self.last(batch)?.is_none_or(|last| time > last) {
            self.last = Some(Some(time));
            self.changed = true;
        }
        Ok(())
    }

    /// Puts the last time given into the batch, when it moved.
    pub fn keep(&self, batch: &mut Batch) {
        if let (true, Some(Some(last))) = (self.changed, self.last) {
            batch.put(keys::CLOCK.to_vec(), last.to_be_bytes().to_vec());
        }
    }
}

/// The transaction clock's stored value: eight bytes, big-endian.
fn decode_clock(value: Option<Vec<u8>>) -> Result<Option<i64>, String> {
    value
        .map(|bytes| {
            <[u8; 8]>::try_from(bytes.as_slice())
                .map(i64::from_be_bytes)
                .map_err(|_| "the transaction clock is damaged".to_string())
        })
        .transpose()
}

/// Lays out a new FACT version's key entries: its key's tier (a key keeps
/// the tier of its first version, MT-1), the version it supersedes closed,
/// its lookup indexes and its key's current-version entry. Answers its
/// transaction time: later than the one it supersedes and than any the
/// domain gave before (MT-2).
fn lay_out_fact(
    batch: &mut Batch,
    fact: &Fact,
    id: &str,
    seq: u64,
    clock: &mut Clock,
) -> Result<i64, String> {
    let key_entry = keys::fact_key(&fact.key);
    let current = batch.get(&key_entry)?;
    let tier = version_tier(batch, &fact.payload)?;
    let key_tier = crate::key_tier(&fact.key, |k| batch.get(k))?;
    if current.is_none() && tier > key_tier {
        batch.put(keys::tier(&fact.key), vec![tier]);
    } else if tier > key_tier {
        return Err(format!(
            "the version's privacy tier ({}) is above key {:?}'s ({}); a key's tier \
             never rises: write it under a new key (MT-1)",
            crate::tier_name(tier),
            fact.key,
            crate::tier_name(key_tier),
        ));
    }
    let now = match current {
        Some(current) => supersede(batch, fact, &current, clock)?,
        None => clock.tick(batch, None)?,
    };
    for entry in fact_indexes(&fact.key, &fact.payload) {
        batch.put(entry, id.as_bytes().to_vec());
    }
    batch.put(key_entry, keys::current(id, seq));
    Ok(now)
}

/// Closes the current version of `fact`'s key (`current`, its key entry)
/// in transaction time (MT-2): it stays readable by id, is found through
/// its version entry from now on (a key laid out by earlier builds has
/// it), and the lookup indexes it alone had go. Answers the new version's
/// transaction time.
fn supersede(
    batch: &mut Batch,
    fact: &Fact,
    current: &[u8],
    clock: &mut Clock,
) -> Result<i64, String> {
    let (current_id, current_seq) =
        keys::indexed(current).ok_or("a fact-key index entry is damaged")?;
    let current_id = current_id.to_owned();
    if let Some(current_seq) = current_seq {
        batch.put(
            keys::version(&fact.key, current_seq),
            current_id.as_bytes().to_vec(),
        );
    }
    let Some((Stored::Fact(mut previous), previous_expiry)) =
        load_with(&current_id, |k| batch.get(k))?
    else {
        return Err("a fact-key index entry points nowhere".into());
    };
    let now = clock.tick(batch, Some(previous.created_at))?;
    // The lookup indexes follow the current version.
    let replaced = fact_indexes(&fact.key, &previous.fact.payload);
    let kept = fact_indexes(&fact.key, &fact.payload);
    for entry in replaced.into_iter().filter(|e| !kept.contains(e)) {
        batch.delete(entry);
    }
    previous.superseded_at = Some(now);
    batch.put(
        keys::record(&current_id),
        encode_record(&Stored::Fact(previous), previous_expiry),
    );
    Ok(now)
}

/// Adds a new record, its indexes and, for a FACT, the closing of the
/// version it supersedes; a record kept `expire_after` milliseconds only
/// gets its expiry and an expiry-index entry.
fn lay_out(
    batch: &mut Batch,
    record: &MemoryRecord,
    id: &str,
    seq: u64,
    clock: &mut Clock,
    expire_after: Option<u64>,
) -> Result<(), String> {
    // A FACT expires counting from its transaction time, an EVENT or STATE
    // from the host's time of writing.
    let expiry = |written_at: i64| {
        expire_after
            .map(|after| written_at.saturating_add(i64::try_from(after).unwrap_or(i64::MAX)))
    };
    let expires_at;
    let stored = match record.clone() {
        MemoryRecord::Fact(fact) => {
            let now = lay_out_fact(batch, &fact, id, seq, clock)?;
            expires_at = expiry(now);
            Stored::Fact(StoredFact {
                id: id.to_owned(),
                created_at: now,
                superseded_at: None,
                fact,
            })
        }
        MemoryRecord::Event(event) => {
            for entry in timed_indexes(record, seq) {
                batch.put(entry, id.as_bytes().to_vec());
            }
            expires_at = expire_after.and_then(|_| expiry(domain::now()));
            Stored::Event {
                id: id.to_owned(),
                event,
            }
        }
        MemoryRecord::State(state) => {
            for entry in timed_indexes(record, seq) {
                batch.put(entry, id.as_bytes().to_vec());
            }
            expires_at = expire_after.and_then(|_| expiry(domain::now()));
            Stored::State(StoredState {
                id: id.to_owned(),
                state,
            })
        }
    };
    if let Some(at) = expires_at {
        batch.put(keys::expiry(at, seq), id.as_bytes().to_vec());
    }
    batch.put(keys::record(id), encode_record(&stored, expires_at));
    Ok(())
}

/// Answers a request id that was seen before (IO-W2): the same record from
/// the same source gets the same id; anything else is refused. Records are
/// compared as [`same_record`] does, so a retry is the same request however
/// its host ordered an object's keys; the answer names the record first
/// written, whose text is kept as it was given.
fn replay(write: &Write<'_>, entry: Idempotency, batch: &Batch) -> Result<Written, String> {
    let reused = || Err("request_id was already used for a different write (IO-W2)".to_string());
    if entry.component != write.source.component || entry.actor != write.source.actor {
        return reused();
    }
    // Records go only by expiring (a forget takes the entry with them).
    let gone = || Err("the record request_id stored has expired (IO-W2)".to_string());
    let stored = match load_with(&entry.stored_id, |k| batch.get(k))? {
        Some((_, expires_at)) if crate::Now::default().passed(expires_at) => return gone(),
        Some((Stored::Fact(stored), _)) => MemoryRecord::Fact(stored.fact),
        Some((Stored::Event { event, .. }, _)) => MemoryRecord::Event(event),
        Some((Stored::State(stored), _)) => MemoryRecord::State(stored.state),
        None => return gone(),
    };
    let same = match (&stored, write.record) {
        // A cycle's memory carries the time of the attempt that wrote it.
        (MemoryRecord::Event(stored), MemoryRecord::Event(event)) if write.by_cycle => {
            stored.payload == event.payload
        }
        (stored, record) => same_record(stored, record),
    };
    if same {
        Ok(Written::Replayed(entry.stored_id))
    } else {
        reused()
    }
}

/// Whether two records are one write: equal, their JSON texts (the
/// `properties` of an entity, a relationship or a STATE) compared as JSON
/// values, not as texts: an object's keys in any order, a number by its
/// value (`1e5` is `100000`). JSON objects are unordered, and hosts order
/// keys differently (a JavaScript object puts integer-like keys first).
fn same_record(a: &MemoryRecord, b: &MemoryRecord) -> bool {
    let (a, a_texts) = json_apart(a);
    let (b, b_texts) = json_apart(b);
    a == b
        && a_texts.len() == b_texts.len()
        && a_texts
            .iter()
            .zip(&b_texts)
            .all(|(x, y)| same_json_text(x, y))
}

/// A record with its JSON texts emptied, and the texts.
fn json_apart(record: &MemoryRecord) -> (MemoryRecord, Vec<String>) {
    let mut record = record.clone();
    let mut texts = Vec::new();
    match &mut record {
        MemoryRecord::Fact(fact) => match &mut fact.payload {
            FactPayload::Entity(e) => texts.push(std::mem::take(&mut e.properties)),
            FactPayload::Relationship(r) => texts.push(std::mem::take(&mut r.properties)),
            FactPayload::Semantic(_) | FactPayload::Procedural(_) => {}
        },
        MemoryRecord::State(state) => texts.push(std::mem::take(&mut state.payload.properties)),
        MemoryRecord::Event(_) => {}
    }
    (record, texts)
}

/// Two JSON texts as values; texts that do not parse are compared as texts.
fn same_json_text(a: &str, b: &str) -> bool {
    match (
        serde_json::from_str::<serde_json::Value>(a),
        serde_json::from_str::<serde_json::Value>(b),
    ) {
        (Ok(a), Ok(b)) => same_json(&a, &b),
        _ => a == b,
    }
}

/// JSON equality: objects by their keys (in any order) and values, arrays
/// item by item, numbers by value.
fn same_json(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .all(|(key, x)| b.get(key).is_some_and(|y| same_json(x, y)))
        }
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same_json(x, y))
        }
        (Value::Number(a), Value::Number(b)) => {
            match (a.as_i64(), b.as_i64(), a.as_u64(), b.as_u64()) {
                (Some(x), Some(y), _, _) => x == y,
                (_, _, Some(x), Some(y)) => x == y,
                _ => a.as_f64() == b.as_f64(),
            }
        }
        _ => a == b,
    }
}

/// The tier a FACT version needs: its own (a semantic memory's) or, when
/// higher, the tier of a record it names (MT-1).
fn version_tier(batch: &Batch, payload: &FactPayload) -> Result<u8, String> {
    let (own, named): (u8, &[String]) = match payload {
        FactPayload::Semantic(m) => (crate::tier_rank(m.privacy_tier), &m.sources),
        FactPayload::Procedural(r) => (0, &r.derived_from),
        FactPayload::Entity(e) => (0, &e.source_memories),
        FactPayload::Relationship(r) => (0, &r.source_memories),
    };
    let contradictions = match payload {
        FactPayload::Semantic(m) => m.contradictions.as_slice(),
        _ => &[],
    };
    let mut tier = own;
    for name in named.iter().chain(contradictions) {
        if !keys::is_record_id(name) {
            continue;
        }
        if let Some((Stored::Fact(fact), _)) = load_with(name, |k| batch.get(k))? {
            tier = tier.max(crate::key_tier(&fact.fact.key, |k| batch.get(k))?);
        }
    }
    Ok(tier)
}

/// The index entries of an EVENT or STATE record written with `seq`: its
/// time-index entry and an ingested memory's keyword entries.
pub fn timed_indexes(record: &MemoryRecord, seq: u64) -> Vec<Vec<u8>> {
    match record {
        MemoryRecord::Event(event) => {
            let mut entries = vec![keys::time(keys::EVENT, event.timestamp, seq)];
            if let EventPayload::Ingested(memory) = &event.payload {
                let mut keywords: Vec<&String> = memory.keywords.iter().collect();
                keywords.sort();
                keywords.dedup();
                entries.extend(keywords.into_iter().map(|k| keys::keyword(k, seq)));
            }
            entries
        }
        MemoryRecord::State(state) => vec![keys::time(keys::STATE, state.timestamp, seq)],
        MemoryRecord::Fact(_) => Vec::new(),
    }
}

/// The lookup-index entries of a FACT's current version (MT-8).
pub fn fact_indexes(key: &str, payload: &FactPayload) -> Vec<Vec<u8>> {
    match payload {
        FactPayload::Entity(entity) => {
            vec![keys::entity_type(entity_type_byte(entity.entity_type), key)]
        }
        FactPayload::Relationship(r) => vec![
            keys::edge(keys::OUTGOING, &r.from_entity, &r.relationship_type, key),
            keys::edge(keys::INCOMING, &r.to_entity, &r.relationship_type, key),
        ],
        FactPayload::Semantic(_) | FactPayload::Procedural(_) => Vec::new(),
    }
}

/// The byte an entity type is indexed under.
pub fn entity_type_byte(kind: EntityType) -> u8 {
    match kind {
        EntityType::Person => b'p',
        EntityType::Organization => b'o',
        EntityType::Place => b'l',
        EntityType::Product => b'r',
        EntityType::Event => b'e',
    }
}

pub fn decode_seq(bytes: &[u8]) -> Result<u64, String> {
    <[u8; 8]>::try_from(bytes)
        .map(u64::from_be_bytes)
        .map_err(|_| "the sequence counter is damaged".to_string())
}

#[cfg(test)]
mod same_json_tests {
    use super::same_json_text;

    #[test]
    fn io_w2_json_texts_are_compared_as_values() {
        assert!(same_json_text(
            r#"{"a":1,"b":[1,{"c":2,"d":3}]}"#,
            r#"{"b":[1,{"d":3,"c":2}],"a":1}"#
        ));
        assert!(same_json_text(r#"{"n":1e5}"#, r#"{"n":100000}"#));
        assert!(same_json_text(
            r#"{"1":"x","a":"y"}"#,
            r#"{"a":"y","1":"x"}"#
        ));
        assert!(!same_json_text(r#"{"a":1}"#, r#"{"a":2}"#));
        assert!(!same_json_text(r#"{"a":1}"#, r#"{"a":1,"b":null}"#));
        assert!(!same_json_text(r#"{"a":[1,2]}"#, r#"{"a":[2,1]}"#));
        assert!(!same_json_text(r#"{"a":"1"}"#, r#"{"a":1}"#));
    }
}
