//! Offline maintenance (IO-W7): a faithful export of a domain and its import
//! back, ids, write order and both time axes included.

use crate::bindings::engram::memory::audit::{self, Operation, Outcome};
use crate::bindings::engram::memory::domain::{self, AccessMode};
use crate::bindings::engram::memory::embedder::Model;
use crate::bindings::engram::memory::persistence::{
    self, Direction, Entry, Precondition, StorageError,
};
use crate::bindings::engram::memory::types::{Event, EventPayload};
use crate::bindings::engram::memory::types::{
    MemoryRecord, RecordType, SourceActor, SourceComponent, StoredFact, StoredState, WriteSource,
};
use crate::bindings::exports::engram::memory::maintenance::{
    ExportPage, ExportedItem, ExportedRecord, ExportedRequest, Guest, MaintenanceError,
    ReembedProgress,
};
use crate::keys::{self, Exported};
use crate::writer::{
    Batch, Clock, Idempotency, decode_seq, fact_indexes, lay_vector, timed_indexes,
};
use crate::{
    Engine, Stored, decode, encode, encode_record, get, load_with, storage, tier_rank, validate,
    vectors,
};

// Export and import: the same ids, times and indexes (S-EXPORT).
impl Guest for Engine {
    fn export(start: Option<Vec<u8>>, limit: u32) -> Result<ExportPage, MaintenanceError> {
        let answer = in_maintenance().and_then(|()| export(start.unwrap_or_default(), limit));
        audit::append(&audit::Entry {
            request_id: "maintenance-export".into(),
            operation: Operation::Export,
            source: None,
            record_type: None,
            outcome: match &answer {
                Ok(page) => Outcome::Returned(page.items.len() as u32),
                Err((_, reason)) => Outcome::Failed(reason.clone()),
            },
        });
        answer.map_err(|(error, _)| error)
    }

    fn import(items: Vec<ExportedItem>) -> Result<u32, MaintenanceError> {
        // An import that stores something carries its entry in its commit.
        let answer = in_maintenance().and_then(|()| import(&items));
        match &answer {
            Ok((_, true)) => {}
            Ok((n, false)) => audit::append(&import_entry(Outcome::Applied(*n))),
            Err((_, reason)) => audit::append(&import_entry(Outcome::Rejected(reason.clone()))),
        }
        answer.map(|(n, _)| n).map_err(|(error, _)| error)
    }

    fn vector_model() -> Result<Option<Model>, MaintenanceError> {
        vectors::domain_model(get)
            .map(|m| m.map(|m| m.model))
            .map_err(|_| MaintenanceError::StorageUnavailable)
    }

    fn reembed(limit: u32) -> Result<ReembedProgress, MaintenanceError> {
        // A call that embeds something carries its entry in its commit.
        let answer = in_maintenance().and_then(|()| reembed(limit));
        match &answer {
            Ok((_, true)) => {}
            Ok((progress, false)) => {
                audit::append(&reembed_entry(Outcome::Applied(progress.embedded)))
            }
            Err((_, reason)) => audit::append(&reembed_entry(Outcome::Failed(reason.clone()))),
        }
        answer.map(|(p, _)| p).map_err(|(error, _)| error)
    }

    fn expire(limit: u32) -> Result<u32, MaintenanceError> {
        // Records removed are audited in their commit, one entry each.
        let answer = in_maintenance().and_then(|()| expire(limit));
        let outcome = match &answer {
            Ok(0) => Some(Outcome::Applied(0)),
            Ok(_) => None,
            Err((_, reason)) => Some(Outcome::Failed(reason.clone())),
        };
        if let Some(outcome) = outcome {
            audit::append(&expire_entry(None, outcome));
        }
        answer.map_err(|(error, _)| error)
    }
}

/// The audit entry of an expiry: of one record removed, or of a call that
/// removed none.
fn expire_entry(record_type: Option<RecordType>, outcome: Outcome) -> audit::Entry {
    audit::Entry {
        request_id: "maintenance-expire".into(),
        operation: Operation::Expire,
        source: Some(WriteSource {
            agent_id: domain::agent(),
            component: SourceComponent::Maintenance,
            actor: SourceActor::System,
        }),
        record_type,
        outcome,
    }
}

/// The audit entry of an import.
fn import_entry(outcome: Outcome) -> audit::Entry {
    audit::Entry {
        request_id: "maintenance-import".into(),
        operation: Operation::Import,
        source: Some(WriteSource {
            agent_id: domain::agent(),
            component: SourceComponent::Maintenance,
            actor: SourceActor::System,
        }),
        record_type: None,
        outcome,
    }
}

/// The audit entry of a re-embedding call.
fn reembed_entry(outcome: Outcome) -> audit::Entry {
    audit::Entry {
        request_id: "maintenance-reembed".into(),
        operation: Operation::Write,
        source: Some(WriteSource {
            agent_id: domain::agent(),
            component: SourceComponent::Maintenance,
            actor: SourceActor::System,
        }),
        record_type: Some(RecordType::Event),
        outcome,
    }
}

/// A refused call: the typed error and the reason for the audit trail.
type Refusal = (MaintenanceError, String);

fn in_maintenance() -> Result<(), Refusal> {
    match domain::mode() {
        AccessMode::Maintenance => Ok(()),
        AccessMode::Online => Err((
            MaintenanceError::NotInMaintenance,
            "export, import, expire and reembed need a domain opened for maintenance (IO-W7)"
                .into(),
        )),
    }
}

fn fault(reason: String) -> Refusal {
    (MaintenanceError::StorageUnavailable, reason)
}

fn invalid(reason: String) -> Refusal {
    (MaintenanceError::InvalidItem(reason.clone()), reason)
}

/// Checks a maintenance call's limit against the host's ceiling (IO-G6).
fn bounded(limit: u32) -> Result<u32, Refusal> {
    let ceiling = domain::read_limit_ceiling().max(1);
    if limit == 0 || limit > ceiling {
        return Err((
            MaintenanceError::LimitOutOfBounds(ceiling),
            format!("limit {limit} is outside 1..={ceiling}"),
        ));
    }
    Ok(limit)
}

fn export(start: Vec<u8>, limit: u32) -> Result<ExportPage, Refusal> {
    let limit = bounded(limit)?;
    let mut items = Vec::new();
    let ranges = keys::export_ranges();
    // A continuation lies in the range its page stopped in: the ones
    // before it are done. A start in none of them (but the empty one, the
    // first page's) has nothing after it.
    let resume = match ranges
        .iter()
        .position(|(from, end)| *from <= start && start < *end)
    {
        Some(at) => at,
        None if start.is_empty() => 0,
        None => ranges.len(),
    };
    for (i, (from, end)) in ranges.into_iter().enumerate().skip(resume) {
        let mut from = if i == resume {
            from.max(start.clone())
        } else {
            from
        };
        loop {
            let wanted = limit - items.len() as u32;
            let entries = persistence::scan(&from, &end, wanted, Direction::Ascending)
                .map_err(|e| fault(storage(e)))?;
            let scanned = entries.len() as u32;
            let Some(last) = entries.last().map(|entry| entry.key.clone()) else {
                break;
            };
            for entry in entries {
                items.extend(item(entry).map_err(fault)?);
            }
            let next = [last.as_slice(), &[0]].concat();
            if items.len() as u32 == limit {
                return Ok(ExportPage {
                    items,
                    next: Some(next),
                });
            }
            if scanned < wanted {
                break;
            }
            // Some entries stood for no item (a current version that its
            // version entry exports): the range goes on.
            from = next;
        }
    }
    Ok(ExportPage { items, next: None })
}

/// The exported item an index entry stands for, if any: a fact key's
/// entry laid out by earlier builds stands for none (the current version's
/// version entry exports it).
fn item(entry: Entry) -> Result<Option<ExportedItem>, String> {
    let damaged = || format!("an entry of the export range is damaged: {:?}", entry.key);
    let text = |bytes: &[u8]| String::from_utf8(bytes.to_vec()).map_err(|_| damaged());
    let (id, seq) = match keys::exported(&entry.key).ok_or_else(damaged)? {
        Exported::Current => match keys::indexed(&entry.value).ok_or_else(damaged)? {
            (id, Some(seq)) => (id.to_owned(), seq),
            (_, None) => return Ok(None),
        },
        Exported::Time(seq) | Exported::Version(seq) => (text(&entry.value)?, seq),
        Exported::Request(request_id) => {
            let kept: Idempotency = decode(&entry.value)?;
            return Ok(Some(ExportedItem::Request(ExportedRequest {
                request_id: text(request_id)?,
                stored_id: kept.stored_id,
                component: kept.component,
                actor: kept.actor,
            })));
        }
        Exported::Tier(key) => {
            let tier = match entry.value.as_slice() {
                [0] => crate::types::PrivacyTier::Public,
                [1] => crate::types::PrivacyTier::Sensitive,
                [2] => crate::types::PrivacyTier::Private,
                _ => return Err(damaged()),
            };
            return Ok(Some(ExportedItem::KeyTier((text(key)?, tier))));
        }
    };
    let record = match load_with(&id, get)? {
        Some((Stored::Fact(fact), expires_at)) => ExportedRecord {
            id,
            seq,
            record: MemoryRecord::Fact(fact.fact),
            created_at: Some(fact.created_at),
            superseded_at: fact.superseded_at,
            expires_at,
        },
        Some((Stored::Event { id, event }, expires_at)) => ExportedRecord {
            id,
            seq,
            record: MemoryRecord::Event(event),
            created_at: None,
            superseded_at: None,
            expires_at,
        },
        Some((Stored::State(state), expires_at)) => ExportedRecord {
            id,
            seq,
            record: MemoryRecord::State(state.state),
            created_at: None,
            superseded_at: None,
            expires_at,
        },
        None => return Err(format!("index entry for {id} points nowhere")),
    };
    Ok(Some(ExportedItem::Record(record)))
}

/// Imports a batch: how many items were new, and whether the audit entry
/// went into the commit.
fn import(items: &[ExportedItem]) -> Result<(u32, bool), Refusal> {
    let mut batch = Batch::default();
    let seq_value = get(keys::SEQ).map_err(fault)?;
    let first_seq = match &seq_value {
        Some(bytes) => decode_seq(bytes).map_err(fault)?,
        None => 0,
    };
    let mut seq = first_seq;
    // The domain's transaction clock moves past every imported version's
    // times, so a write after the import is later than all of them (MT-2).
    let mut clock = Clock::unread();
    let mut new = 0;
    // The ingested memories imported, for their vectors (S-VECTOR): the
    // export carries none; the host's embedder makes them here.
    let mut ingested: Vec<(u64, &str, &str)> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let stored = match item {
            ExportedItem::Record(record) => {
                seq = seq.max(record.seq);
                for time in record.created_at.into_iter().chain(record.superseded_at) {
                    clock.witness(&batch, time).map_err(fault)?;
                }
                let stored = import_record(&mut batch, record);
                if let (
                    Ok(true),
                    MemoryRecord::Event(Event {
                        payload: EventPayload::Ingested(memory),
                        ..
                    }),
                ) = (&stored, &record.record)
                {
                    ingested.push((record.seq, &record.id, &memory.summary));
                }
                stored
            }
            ExportedItem::Request(request) => import_request(&mut batch, request),
            ExportedItem::KeyTier((key, tier)) => import_tier(&mut batch, key, *tier),
        }
        .map_err(|why| invalid(format!("item {i}: {why}")))?;
        new += u32::from(stored);
    }
    if new == 0 {
        return Ok((0, false));
    }
    import_vectors(&mut batch, &ingested, first_seq == 0)?;
    batch.preconditions.push(match seq_value {
        Some(value) => Precondition::Holds(Entry {
            key: keys::SEQ.to_vec(),
            value,
        }),
        None => Precondition::Absent(keys::SEQ.to_vec()),
    });
    batch.put(
        keys::SEQ.to_vec(),
        seq.max(first_seq).to_be_bytes().to_vec(),
    );
    clock.keep(&mut batch);
    let trail = [import_entry(Outcome::Applied(new))];
    match persistence::commit(&batch.preconditions, &batch.ops, &trail) {
        Ok(()) => Ok((new, true)),
        Err(StorageError::Conflict) => Err(fault(
            "the domain changed during the import; nothing of the batch was stored".into(),
        )),
        Err(StorageError::Unavailable(why)) => Err(fault(format!("storage unavailable: {why}"))),
    }
}

/// The vectors of imported memories, in one call of the host's embedder,
/// under the domain's model; none without an embedder (the domain's
/// vectors are then incomplete until `reembed`).
fn import_vectors(
    batch: &mut Batch,
    ingested: &[(u64, &str, &str)],
    fresh: bool,
) -> Result<(), Refusal> {
    if ingested.is_empty() {
        return Ok(());
    }
    let embedded = match vectors::host_model().map_err(embedder_failed)? {
        Some(model) => {
            model_is_the_domains(batch, &model)?;
            let summaries: Vec<String> = ingested.iter().map(|(_, _, s)| (*s).to_owned()).collect();
            crate::embed_passages(&model, &summaries).map_err(embedder_failed)?
        }
        None => Vec::new(),
    };
    let mut embedded = embedded.into_iter();
    for (seq, id, _) in ingested {
        lay_vector(batch, embedded.next().as_ref(), id, *seq, fresh).map_err(fault)?;
    }
    Ok(())
}

fn embedder_failed(why: String) -> Refusal {
    (
        MaintenanceError::EmbedderFailed(why.clone()),
        format!("the embedder failed: {why}"),
    )
}

/// Refuses a host model that is not the domain's.
fn model_is_the_domains(batch: &Batch, model: &Model) -> Result<(), Refusal> {
    let domain = vectors::domain_model(|k| batch.get(k)).map_err(fault)?;
    match domain {
        Some(domain) if domain.model != *model => Err((
            MaintenanceError::ModelChanged((domain.model.clone(), model.clone())),
            vectors::changed(&domain.model, model),
        )),
        _ => Ok(()),
    }
}

/// Removes an expired version `seq` of a FACT, and its key's entry and
/// lookup indexes when it is the current version (they follow it only).
fn expire_fact_version(
    batch: &mut Batch,
    fact: &StoredFact,
    seq: u64,
    id: &str,
) -> Result<(), Refusal> {
    let key = &fact.fact.key;
    batch.delete(keys::version(key, seq));
    let key_entry = keys::fact_key(key);
    let current = batch.get(&key_entry).map_err(fault)?;
    if current
        .as_deref()
        .and_then(keys::indexed)
        .is_some_and(|(current, _)| current == id)
    {
        batch.delete(key_entry);
        for index in fact_indexes(key, &fact.fact.payload) {
            batch.delete(index);
        }
    }
    Ok(())
}

/// Removes an expired EVENT's indexes, and a memory's vectors in every
/// `generation`, which moves the vectors' epoch on.
fn expire_event(
    batch: &mut Batch,
    event: &Event,
    seq: u64,
    generations: &[u32],
) -> Result<(), Refusal> {
    for index in timed_indexes(&MemoryRecord::Event(event.clone()), seq) {
        batch.delete(index);
    }
    if matches!(event.payload, EventPayload::Ingested(_)) && !generations.is_empty() {
        for generation in generations {
            batch.delete(vectors::key(*generation, seq));
        }
        // A vector removed: what instances kept is no longer the store's.
        let epoch = batch.get(vectors::EPOCH).map_err(fault)?;
        batch.put(
            vectors::EPOCH.to_vec(),
            vectors::next_epoch(epoch.as_deref()),
        );
    }
    Ok(())
}

/// A FACT key with no version left after an expiry keeps nothing, not
/// even its tier: `keys_left`, each key with how many versions it lost.
fn drop_tiers_of_keys_left_bare(
    batch: &mut Batch,
    keys_left: Vec<(String, u32)>,
) -> Result<(), Refusal> {
    for (key, lost) in keys_left {
        let (from, to) = keys::version_range(&key);
        let versions = persistence::scan(&from, &to, lost + 1, Direction::Ascending)
            .map_err(|e| fault(storage(e)))?;
        // The current version, unless it expired now, is left too.
        let mut left = batch.get(&keys::fact_key(&key)).map_err(fault)?.is_some();
        for version in versions {
            left |= batch.get(&version.key).map_err(fault)?.is_some();
        }
        if !left {
            batch.delete(keys::tier(&key));
        }
    }
    Ok(())
}

/// One call of a re-embedding (S-VECTOR): embeds at most `limit` ingested
/// memories, oldest first, into a new generation, then makes it the
/// domain's, then drops the old generation's vectors, `limit` at a time;
/// each call one commit that records how far it came. `true` when the
/// commit carried the audit entry.
fn reembed(limit: u32) -> Result<(ReembedProgress, bool), Refusal> {
    let limit = bounded(limit)?;
    let model = vectors::host_model()
        .map_err(embedder_failed)?
        .ok_or_else(|| {
            (
                MaintenanceError::NoEmbedder,
                "reembed needs a host with an embedder".to_string(),
            )
        })?;
    let mut batch = Batch::default();
    let Some(mut state) = reembedding(&model, &mut batch)? else {
        let done = ReembedProgress {
            embedded: 0,
            done: true,
        };
        return Ok((done, false));
    };
    let (embedded, finished) = if state.dropping {
        (0, drop_other_generations(&state, limit, &mut batch)?)
    } else {
        (embed_next(&mut state, &model, limit, &mut batch)?, false)
    };
    if finished {
        batch.delete(vectors::REEMBED.to_vec());
    } else {
        batch.put(vectors::REEMBED.to_vec(), vectors::encode_reembed(&state));
    }
    let trail = [reembed_entry(Outcome::Applied(embedded))];
    match persistence::commit(&batch.preconditions, &batch.ops, &trail) {
        Ok(()) => Ok((
            ReembedProgress {
                embedded,
                done: finished,
            },
            true,
        )),
        Err(StorageError::Conflict) => Err(fault(
            "the domain changed during the re-embedding; nothing of the call was stored".into(),
        )),
        Err(StorageError::Unavailable(why)) => Err(fault(format!("storage unavailable: {why}"))),
    }
}

/// The re-embedding into `model` to go on with: the one under way, or a
/// new one in a generation after the domain's and any other under way;
/// none when the domain's vectors are all of `model` already. The batch
/// is made to hold only while the domain's model and the re-embedding
/// under way are as read.
fn reembedding(model: &Model, batch: &mut Batch) -> Result<Option<vectors::Reembed>, Refusal> {
    let domain_value = get(vectors::MODEL).map_err(fault)?;
    let reembed_value = get(vectors::REEMBED).map_err(fault)?;
    let domain = domain_value
        .as_deref()
        .map(vectors::decode_model)
        .transpose()
        .map_err(fault)?;
    let under_way = reembed_value
        .as_deref()
        .map(vectors::decode_reembed)
        .transpose()
        .map_err(fault)?;
    // The domain and the store may not change under the call.
    batch.preconditions.push(held(vectors::MODEL, domain_value));
    batch
        .preconditions
        .push(held(vectors::REEMBED, reembed_value));
    let generation = match under_way {
        Some(state) if state.model == *model => return Ok(Some(state)),
        // Another model's re-embedding was under way: start over with this
        // one, in a generation after both.
        Some(state) => state.generation.wrapping_add(1),
        None => match &domain {
            Some(domain) if domain.model == *model && domain.complete => return Ok(None),
            domain => domain.as_ref().map_or(0, |d| d.generation.wrapping_add(1)),
        },
    };
    Ok(Some(vectors::Reembed {
        generation,
        model: model.clone(),
        dropping: false,
        cursor: Vec::new(),
    }))
}

/// Embeds the next `limit` ingested memories of the re-embedding, oldest
/// first, into its generation: how many. After the last the generation
/// becomes the domain's, and the vectors of any other go next.
fn embed_next(
    state: &mut vectors::Reembed,
    model: &Model,
    limit: u32,
    batch: &mut Batch,
) -> Result<u32, Refusal> {
    let (all_start, end) = keys::time_all(keys::EVENT);
    let start = if state.cursor.is_empty() {
        all_start
    } else {
        state.cursor.clone()
    };
    let entries = persistence::scan(&start, &end, limit, Direction::Ascending)
        .map_err(|e| fault(storage(e)))?;
    let found = summaries_to_embed(&entries)?;
    let summaries: Vec<String> = found.iter().map(|(_, _, s)| s.clone()).collect();
    let made = vectors::embed(model, &summaries, vectors::PASSAGE).map_err(embedder_failed)?;
    for ((seq, id, _), vector) in found.iter().zip(&made) {
        batch.put(
            vectors::key(state.generation, *seq),
            vectors::value(id, vector),
        );
    }
    match entries.last() {
        Some(last) if entries.len() as u32 == limit => {
            let mut next = last.key.clone();
            next.push(0);
            state.cursor = next;
        }
        // Every memory has its vector: the generation is the domain's,
        // and the vectors of any other go next.
        _ => {
            let made = vectors::DomainModel {
                generation: state.generation,
                model: model.clone(),
                complete: true,
            };
            batch.put(vectors::MODEL.to_vec(), vectors::encode_model(&made));
            state.dropping = true;
        }
    }
    Ok(found.len() as u32)
}

/// The ingested memories of time-index `entries` that have not expired:
/// each one's place in time, id and summary.
fn summaries_to_embed(entries: &[Entry]) -> Result<Vec<(u64, String, String)>, Refusal> {
    let mut now = crate::Now::default();
    let mut found = Vec::new();
    for entry in entries {
        let seq = keys::time_seq(&entry.key)
            .ok_or_else(|| fault(format!("a time-index entry is damaged: {:?}", entry.key)))?;
        let id = String::from_utf8(entry.value.clone())
            .map_err(|_| fault("a time-index entry is damaged".into()))?;
        match load_with(&id, get).map_err(fault)? {
            // An expired memory waits for expiry, with no vector.
            Some((_, expires_at)) if now.passed(expires_at) => {}
            Some((
                Stored::Event {
                    event:
                        Event {
                            payload: EventPayload::Ingested(memory),
                            ..
                        },
                    ..
                },
                _,
            )) => found.push((seq, id, memory.summary)),
            Some(_) => {}
            None => return Err(fault(format!("time-index entry for {id} points nowhere"))),
        }
    }
    Ok(found)
}

/// Deletes the next `limit` vectors of generations other than the
/// re-embedding's: whether none is left.
fn drop_other_generations(
    state: &vectors::Reembed,
    limit: u32,
    batch: &mut Batch,
) -> Result<bool, Refusal> {
    let (all, end) = vectors::all();
    let (ours, after_ours) = vectors::range(state.generation);
    let mut removed = 0;
    for (start, end) in [(all, ours), (after_ours, end)] {
        let entries = persistence::scan(&start, &end, limit - removed, Direction::Ascending)
            .map_err(|e| fault(storage(e)))?;
        removed += entries.len() as u32;
        for entry in entries {
            batch.delete(entry.key);
        }
        if removed == limit {
            break;
        }
    }
    Ok(removed < limit)
}

/// The precondition that a key still holds what was read.
fn held(key: &[u8], value: Option<Vec<u8>>) -> Precondition {
    match value {
        Some(value) => Precondition::Holds(Entry {
            key: key.to_vec(),
            value,
        }),
        None => Precondition::Absent(key.to_vec()),
    }
}

/// Lays out one exported record with its indexes; `false` when the record
/// is already held exactly so.
fn import_record(batch: &mut Batch, exported: &ExportedRecord) -> Result<bool, String> {
    let id = &exported.id;
    if !keys::is_record_id(id) {
        return Err(format!("{id:?} is not a record id"));
    }
    validate::record(&exported.record).map_err(|why| format!("invalid record {id}: {why}"))?;
    let stored = match (&exported.record, exported.created_at) {
        (MemoryRecord::Fact(fact), Some(created_at)) => Stored::Fact(StoredFact {
            id: id.clone(),
            created_at,
            superseded_at: exported.superseded_at,
            fact: fact.clone(),
        }),
        (MemoryRecord::Fact(_), None) => return Err(format!("FACT {id} has no created-at")),
        (MemoryRecord::Event(event), None) => Stored::Event {
            id: id.clone(),
            event: event.clone(),
        },
        (MemoryRecord::State(state), None) => Stored::State(StoredState {
            id: id.clone(),
            state: state.clone(),
        }),
        _ => return Err(format!("only a FACT has transaction times ({id})")),
    };
    let value = encode_record(&stored, exported.expires_at);
    match batch.get(&keys::record(id))? {
        Some(held) if held == value => return Ok(false),
        Some(_) => return Err(format!("record {id} is held with other content")),
        None => {}
    }
    let owned = id.as_bytes().to_vec();
    match &exported.record {
        // A current version is found through its key's entry, a superseded
        // one through its version entry.
        MemoryRecord::Fact(fact) if exported.superseded_at.is_none() => {
            let key_entry = keys::fact_key(&fact.key);
            if batch.get(&key_entry)?.is_some() {
                return Err(format!("key {:?} already has a current version", fact.key));
            }
            batch.put(key_entry, keys::current(id, exported.seq));
            for entry in fact_indexes(&fact.key, &fact.payload) {
                batch.put(entry, owned.clone());
            }
        }
        MemoryRecord::Fact(fact) => {
            batch.put(keys::version(&fact.key, exported.seq), owned.clone());
        }
        record => {
            for entry in timed_indexes(record, exported.seq) {
                batch.put(entry, owned.clone());
            }
        }
    }
    if let Some(at) = exported.expires_at {
        batch.put(keys::expiry(at, exported.seq), owned);
    }
    batch.put(keys::record(id), value);
    Ok(true)
}

/// Removes at most `limit` expired records from every index, in one commit
/// carrying an audit entry for each; answers how many.
fn expire(limit: u32) -> Result<u32, Refusal> {
    let limit = bounded(limit)?;
    let (start, end) = keys::expired_range(domain::now());
    let entries = persistence::scan(&start, &end, limit, Direction::Ascending)
        .map_err(|e| fault(storage(e)))?;
    let mut batch = Batch::default();
    let mut trail = Vec::with_capacity(entries.len());
    // Every generation a memory's vector may be of.
    let generations = vectors::generations(get).map_err(fault)?;
    // The versions each FACT key loses, to find a key left with none.
    let mut keys_left: Vec<(String, u32)> = Vec::new();
    for entry in entries {
        let damaged = || fault(format!("an expiry-index entry is damaged: {:?}", entry.key));
        let seq = keys::expiry_seq(&entry.key).ok_or_else(damaged)?;
        let id = String::from_utf8(entry.value.clone()).map_err(|_| damaged())?;
        let Some((record, _)) = load_with(&id, |k| batch.get(k)).map_err(fault)? else {
            return Err(fault(format!("expiry-index entry for {id} points nowhere")));
        };
        match &record {
            Stored::Fact(fact) => {
                expire_fact_version(&mut batch, fact, seq, &id)?;
                let key = &fact.fact.key;
                match keys_left.iter_mut().find(|(k, _)| k == key) {
                    Some((_, lost)) => *lost += 1,
                    None => keys_left.push((key.clone(), 1)),
                }
            }
            Stored::Event { event, .. } => expire_event(&mut batch, event, seq, &generations)?,
            Stored::State(state) => {
                for index in timed_indexes(&MemoryRecord::State(state.state.clone()), seq) {
                    batch.delete(index);
                }
            }
        }
        batch.preconditions.push(Precondition::Holds(entry.clone()));
        batch.delete(entry.key);
        batch.delete(keys::record(&id));
        trail.push(expire_entry(
            Some(record.record_type()),
            Outcome::Expired(id),
        ));
    }
    drop_tiers_of_keys_left_bare(&mut batch, keys_left)?;
    if trail.is_empty() {
        return Ok(0);
    }
    match persistence::commit(&batch.preconditions, &batch.ops, &trail) {
        Ok(()) => Ok(trail.len() as u32),
        Err(StorageError::Conflict) => Err(fault(
            "the domain changed during the expiry; nothing was removed".into(),
        )),
        Err(StorageError::Unavailable(why)) => Err(fault(format!("storage unavailable: {why}"))),
    }
}

fn import_request(batch: &mut Batch, request: &ExportedRequest) -> Result<bool, String> {
    if request.request_id.is_empty() {
        return Err("an empty request id".into());
    }
    let entry = Idempotency {
        stored_id: request.stored_id.clone(),
        component: request.component,
        actor: request.actor,
    };
    let key = keys::idempotency(&request.request_id);
    match batch.get(&key)? {
        Some(held) if decode::<Idempotency>(&held)? == entry => Ok(false),
        Some(_) => Err(format!(
            "request id {:?} is held for another write",
            request.request_id
        )),
        None => {
            batch.put(key, encode(&entry));
            Ok(true)
        }
    }
}

fn import_tier(
    batch: &mut Batch,
    key: &str,
    tier: crate::types::PrivacyTier,
) -> Result<bool, String> {
    if !validate::is_normalized_fact_key(key) {
        return Err(format!("{key:?} is not a normalized fact key"));
    }
    let rank = tier_rank(tier);
    match batch.get(&keys::tier(key))? {
        Some(held) if held == [rank] => Ok(false),
        Some(_) => Err(format!("key {key:?} is held with another tier")),
        None if rank == 0 => Ok(false),
        None => {
            batch.put(keys::tier(key), vec![rank]);
            Ok(true)
        }
    }
}
