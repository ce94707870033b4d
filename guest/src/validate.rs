//! The checks a record must pass before it is stored (IO-W1, IO-R4).

use crate::bindings::engram::memory::types::{
    Entity, Episode, EventPayload, Fact, FactPayload, IngestedMemory, MemoryRecord, ProceduralRule,
    Relationship, SemanticMemory, State,
};

/// The longest fact key accepted, in bytes.
pub const MAX_FACT_KEY_LEN: usize = 256;

/// The longest keyword accepted, in bytes.
pub const MAX_KEYWORD_LEN: usize = 256;

/// The longest summary of an ingested memory, in bytes: a distilled
/// statement, not a transcript (B5-S1, S-INGEST).
pub const MAX_SUMMARY_LEN: usize = 4096;

/// The most keywords an ingested memory may carry.
pub const MAX_KEYWORDS: usize = 128;

/// The longest session reference, in bytes.
pub const MAX_SESSION_REF_LEN: usize = 256;

/// A request id's longest length in bytes (S-REQUEST-ID).
pub const MAX_REQUEST_ID_LEN: usize = 256;

/// Why a request id is refused: empty, or longer than
/// [`MAX_REQUEST_ID_LEN`] (S-REQUEST-ID); `None` for one that is taken.
pub fn request_id(request_id: &str) -> Option<String> {
    if request_id.is_empty() {
        Some("request_id is empty".into())
    } else if request_id.len() > MAX_REQUEST_ID_LEN {
        Some(format!(
            "request_id is longer than {MAX_REQUEST_ID_LEN} bytes"
        ))
    } else {
        None
    }
}

/// Whether `segment` is one segment of a normalized fact key.
pub fn is_key_segment(segment: &str) -> bool {
    !segment.is_empty()
        && segment
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
}

/// Whether `key` is a normalized fact key (S-KEY): segments of `a-z`,
/// `0-9`, `_` and `-`, joined by single dots, at most [`MAX_FACT_KEY_LEN`]
/// bytes.
pub fn is_normalized_fact_key(key: &str) -> bool {
    !key.is_empty() && key.len() <= MAX_FACT_KEY_LEN && key.split('.').all(is_key_segment)
}

/// Whether `entity` may name an end of a relationship: a normalized fact
/// key, or a pseudo-entity such as `USER` (1 to 256 of `A-Z`, `0-9`, `_`).
pub fn is_entity_ref(entity: &str) -> bool {
    let pseudo = !entity.is_empty()
        && entity.len() <= MAX_FACT_KEY_LEN
        && entity
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
    pseudo || is_normalized_fact_key(entity)
}

/// Why a record is not valid.
pub type Invalid = String;

/// Checks a record; the error names the first field that is wrong.
pub fn record(record: &MemoryRecord) -> Result<(), Invalid> {
    match record {
        MemoryRecord::Fact(fact) => self::fact(fact),
        MemoryRecord::Event(event) => match &event.payload {
            EventPayload::Ingested(memory) => ingested(memory),
            EventPayload::Episode(episode) => self::episode(episode),
        },
        MemoryRecord::State(state) => self::state(state),
    }
}

fn fact(fact: &Fact) -> Result<(), Invalid> {
    if !is_normalized_fact_key(&fact.key) {
        return Err(format!("key {:?} is not a normalized fact key", fact.key));
    }
    match &fact.payload {
        FactPayload::Semantic(memory) => semantic(memory),
        FactPayload::Procedural(rule) => procedural(rule),
        FactPayload::Entity(entity) => self::entity(entity),
        FactPayload::Relationship(relationship) => self::relationship(relationship),
    }
}

fn semantic(memory: &SemanticMemory) -> Result<(), Invalid> {
    not_empty("content", &memory.content)?;
    valid_interval(memory.valid_at, memory.invalid_at)?;
    // Strength and access are the writer's to give (S-ACCESS).
    if !(memory.strength.is_finite() && memory.strength >= 0.0) {
        return Err("strength must be a finite number, not negative".into());
    }
    unit_interval("confidence", memory.confidence)?;
    each_not_empty("sources", &memory.sources)?;
    each_not_empty("contradictions", &memory.contradictions)
}

fn procedural(rule: &ProceduralRule) -> Result<(), Invalid> {
    not_empty("agent_type", &rule.agent_type)?;
    not_empty("rule", &rule.rule)?;
    each_not_empty("derived_from", &rule.derived_from)?;
    unit_interval("confidence", rule.confidence)
}

fn entity(entity: &Entity) -> Result<(), Invalid> {
    not_empty("name", &entity.name)?;
    json_object("properties", &entity.properties)?;
    if entity.last_mentioned < entity.first_seen {
        return Err("last_mentioned is before first_seen".into());
    }
    each_not_empty("source_memories", &entity.source_memories)
}

fn relationship(relationship: &Relationship) -> Result<(), Invalid> {
    for (field, value) in [
        ("from_entity", &relationship.from_entity),
        ("to_entity", &relationship.to_entity),
    ] {
        if !is_entity_ref(value) {
            return Err(format!(
                "{field} {value:?} is neither a normalized fact key nor an upper-case pseudo-entity"
            ));
        }
    }
    if relationship.relationship_type.len() > MAX_FACT_KEY_LEN {
        return Err(format!(
            "relationship_type is longer than {MAX_FACT_KEY_LEN} bytes"
        ));
    }
    let kind = &relationship.relationship_type;
    if kind.is_empty()
        || !kind
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
    {
        return Err(format!(
            "relationship_type {kind:?} must be one or more of A-Z, 0-9 and _"
        ));
    }
    valid_interval(relationship.valid_at, relationship.invalid_at)?;
    json_object("properties", &relationship.properties)?;
    each_not_empty("source_memories", &relationship.source_memories)
}

fn ingested(memory: &IngestedMemory) -> Result<(), Invalid> {
    not_empty("session_ref", &memory.session_ref)?;
    not_empty("summary", &memory.summary)?;
    if memory.session_ref.len() > MAX_SESSION_REF_LEN {
        return Err(format!(
            "session_ref is longer than {MAX_SESSION_REF_LEN} bytes"
        ));
    }
    if memory.summary.len() > MAX_SUMMARY_LEN {
        return Err(format!("summary is longer than {MAX_SUMMARY_LEN} bytes"));
    }
    if memory.keywords.len() > MAX_KEYWORDS {
        return Err(format!("more than {MAX_KEYWORDS} keywords"));
    }
    each_not_empty("keywords", &memory.keywords)?;
    match memory
        .keywords
        .iter()
        .position(|k| k.len() > MAX_KEYWORD_LEN)
    {
        Some(i) => Err(format!(
            "keywords[{i}] is longer than {MAX_KEYWORD_LEN} bytes"
        )),
        None => Ok(()),
    }
}

fn episode(episode: &Episode) -> Result<(), Invalid> {
    not_empty("situation", &episode.situation)?;
    not_empty("agent_type", &episode.agent_type)?;
    not_empty("mission_id", &episode.mission_id)?;
    each_not_empty("tags", &episode.tags)
}

fn state(state: &State) -> Result<(), Invalid> {
    not_empty("subject", &state.payload.subject)?;
    json_object("properties", &state.payload.properties)
}

fn not_empty(field: &str, value: &str) -> Result<(), Invalid> {
    if value.is_empty() {
        return Err(format!("{field} is empty"));
    }
    Ok(())
}

fn each_not_empty(field: &str, values: &[String]) -> Result<(), Invalid> {
    match values.iter().position(String::is_empty) {
        Some(i) => Err(format!("{field}[{i}] is empty")),
        None => Ok(()),
    }
}

fn unit_interval(field: &str, value: f64) -> Result<(), Invalid> {
    if !(0.0..=1.0).contains(&value) {
        return Err(format!("{field} must lie between 0.0 and 1.0"));
    }
    Ok(())
}

fn valid_interval(valid_at: i64, invalid_at: Option<i64>) -> Result<(), Invalid> {
    match invalid_at {
        Some(end) if end < valid_at => Err("invalid_at is before valid_at".into()),
        _ => Ok(()),
    }
}

fn json_object(field: &str, text: &str) -> Result<(), Invalid> {
    serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(text)
        .map(drop)
        .map_err(|e| format!("{field} is not the text of one JSON object: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalized_fact_keys() {
        for good in ["a", "user.diet", "entity.person.sarah-k", "x_1.y-2.z3"] {
            assert!(is_normalized_fact_key(good), "{good}");
        }
        let long = "a".repeat(MAX_FACT_KEY_LEN + 1);
        for bad in [
            "",
            "User.diet",
            "user diet",
            "user..diet",
            ".user",
            "user.",
            "user/diet",
            "café",
            " user",
            "user\0",
            &long,
        ] {
            assert!(!is_normalized_fact_key(bad), "{bad:?}");
        }
        assert!(is_normalized_fact_key(&"a".repeat(MAX_FACT_KEY_LEN)));
    }

    #[test]
    fn properties_must_be_one_json_object() {
        assert!(json_object("p", r#"{"a":[1,{"b":null}]}"#).is_ok());
        for bad in ["", "[]", "1", "{", r#"{"a":1} {}"#, "null"] {
            assert!(json_object("p", bad).is_err(), "{bad:?}");
        }
    }
}
