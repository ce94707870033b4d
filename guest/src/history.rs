//! Bounded reads of a FACT's versions in time (MT-2), beside the five
//! selectors of the IO.

use crate::bindings::engram::memory::persistence::Direction;
use crate::bindings::engram::memory::types::{FactPayload, StoredFact};
use crate::bindings::exports::engram::memory::history::{
    AsOfRequest, Guest, TimeAxis, VersionsRequest,
};
use crate::bindings::exports::engram::memory::io::ReadError;
use crate::{
    Answer, Engine, Now, Refused, audited_fact_read, bounded, facts, get, keys, load_facts,
    load_ids, request_id_given, validate,
};

impl Guest for Engine {
    fn versions(request: VersionsRequest) -> Result<Vec<StoredFact>, ReadError> {
        let answer = checked(&request.request_id, &request.key)
            .and_then(|()| versions(&request.key, request.limit));
        audited_fact_read(&request.request_id, answer, Vec::len)
    }

    fn as_of(request: AsOfRequest) -> Result<Option<StoredFact>, ReadError> {
        let answer = checked(&request.request_id, &request.key)
            .and_then(|()| versions(&request.key, request.limit))
            .map(|versions| {
                versions.into_iter().find(|v| match request.axis {
                    TimeAxis::Valid => valid_at(v, request.at),
                    TimeAxis::Transaction => {
                        v.created_at <= request.at
                            && v.superseded_at.is_none_or(|end| request.at < end)
                    }
                })
            });
        audited_fact_read(&request.request_id, answer, |found| {
            usize::from(found.is_some())
        })
    }
}

fn checked(request_id: &str, key: &str) -> Result<(), Refused> {
    request_id_given(request_id)?;
    if !validate::is_normalized_fact_key(key) {
        return Err(Refused::new(
            ReadError::InvalidKey,
            format!("key {key:?} is not a normalized fact key"),
        ));
    }
    Ok(())
}

/// The newest `limit` versions of a key, newest first: the current one
/// (through the key's entry, unless the key is laid out as earlier builds
/// did, with every version in the version index), then the superseded ones.
fn versions(key: &str, limit: u32) -> Result<Vec<StoredFact>, Refused> {
    let limit = bounded(limit)?;
    let mut answer = Answer::new();
    let mut current = Vec::new();
    if let Some(value) = get(&keys::fact_key(key))? {
        match keys::indexed(&value) {
            Some((id, Some(_))) => load_ids(
                &[id.to_owned()],
                &mut current,
                &mut answer,
                &mut Now::default(),
            )?,
            // Its version entry holds it.
            Some((_, None)) => {}
            None => return Err("a fact-key index entry is damaged".to_string().into()),
        }
    }
    let mut found = facts(current)?;
    let left = limit - found.len() as u32;
    if left > 0 {
        let (start, end) = keys::version_range(key);
        found.extend(load_facts(
            &start,
            &end,
            left,
            Direction::Descending,
            &mut answer,
        )?);
    }
    Ok(found)
}

/// Whether a version held in the world at `at` (valid time, MT-2).
fn valid_at(version: &StoredFact, at: i64) -> bool {
    let (from, to) = match &version.fact.payload {
        FactPayload::Semantic(m) => (m.valid_at, m.invalid_at),
        FactPayload::Relationship(r) => (r.valid_at, r.invalid_at),
        FactPayload::Procedural(_) | FactPayload::Entity(_) => return true,
    };
    from <= at && to.is_none_or(|end| at < end)
}
