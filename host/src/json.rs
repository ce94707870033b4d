//! The JSON form of the contract, in the seeds' own names and spellings:
//! `request_id`, `record_type` (`FACT`/`EVENT`/`STATE`), `COGNITION`,
//! `{"ById":{"id":…}}`, `{"ACCEPTED":{"stored_id":…}}`, `"REJECTED"`.
//!
//! Every object refuses fields it does not know, so a request cannot carry
//! anything the contract has no place for (raw content, a score).

use crate::io::{self, ReadError, ReadSelector, WriteResult};
use crate::types as wit;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// An open `properties` map as written: the JSON text of one object. A
/// [`WriteRequest`] keeps the exact text it was given (numbers such as `1e5`
/// are not re-encoded), so a read or an export gives back the very text
/// written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Object(String);

impl Object {
    /// The object's JSON text.
    pub fn text(&self) -> &str {
        &self.0
    }
}

impl Serialize for Object {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        raw(self.0.clone()).serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Object {
    /// Any JSON object; its text is re-encoded here, and made exact again
    /// by [`WriteRequest`]'s reader.
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Map::<String, Value>::deserialize(deserializer).map(Object::from)
    }
}

impl From<Map<String, Value>> for Object {
    fn from(map: Map<String, Value>) -> Self {
        Object(Value::Object(map).to_string())
    }
}

/// An open `properties` map as the component keeps it: JSON text. On the way
/// in a map is an [`Object`]; an export keeps the stored text itself.
pub trait Properties {
    /// The JSON text the component stores.
    fn into_text(self) -> String;
}

impl Properties for Object {
    fn into_text(self) -> String {
        self.text().to_owned()
    }
}

impl Properties for String {
    fn into_text(self) -> String {
        self
    }
}

/// FACT, EVENT or STATE (IO-R1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum RecordType {
    /// A keyed fact.
    Fact,
    /// A time-ordered event.
    Event,
    /// A time-stamped state snapshot.
    State,
}

/// Which internal module started a write (IO-W4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Component {
    /// Online cognition.
    Cognition,
    /// Offline maintenance.
    Maintenance,
}

/// Who caused a write (IO-W4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Actor {
    /// The system.
    System,
    /// The user.
    User,
    /// An external input.
    External,
}

/// Where a write comes from (IO-W4).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Source {
    /// The agent whose domain the write belongs to.
    pub agent_id: String,
    /// `COGNITION` or `MAINTENANCE`.
    pub component: Component,
    /// `SYSTEM`, `USER` or `EXTERNAL`.
    pub actor: Actor,
}

/// A write request (IO-W1).
#[derive(Clone, Debug, Serialize)]
pub struct WriteRequest {
    /// The record.
    pub record: Record,
    /// Where it comes from.
    pub source: Source,
    /// The caller's id (IO-W2).
    pub request_id: String,
}

impl<'de> Deserialize<'de> for WriteRequest {
    /// Reads the request, then takes the `properties` of its record as the
    /// exact text given: the tagged record form re-encodes numbers.
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Wire {
            record: Box<RawValue>,
            source: Source,
            request_id: String,
        }
        #[derive(Deserialize)]
        struct Shape<'a> {
            #[serde(borrow, default)]
            payload: Option<PayloadShape<'a>>,
        }
        #[derive(Deserialize)]
        struct PayloadShape<'a> {
            #[serde(borrow, default)]
            properties: Option<&'a RawValue>,
            #[serde(borrow, default)]
            entity: Option<Inner<'a>>,
            #[serde(borrow, default)]
            relationship: Option<Inner<'a>>,
        }
        #[derive(Deserialize)]
        struct Inner<'a> {
            #[serde(borrow, default)]
            properties: Option<&'a RawValue>,
        }
        use serde::de::Error;
        let wire = Wire::deserialize(deserializer)?;
        let mut record: Record = serde_json::from_str(wire.record.get())
            .map_err(|e| D::Error::custom(format!("record: {e}")))?;
        let shape: Shape<'_> = serde_json::from_str(wire.record.get()).map_err(D::Error::custom)?;
        let exact = shape.payload.and_then(|p| {
            p.properties
                .or(p.entity.and_then(|i| i.properties))
                .or(p.relationship.and_then(|i| i.properties))
        });
        if let Some(exact) = exact {
            let target = match &mut record {
                Record::Fact {
                    payload: FactPayload::Entity(e),
                    ..
                } => Some(&mut e.properties),
                Record::Fact {
                    payload: FactPayload::Relationship(r),
                    ..
                } => Some(&mut r.properties),
                Record::State { payload, .. } => Some(&mut payload.properties),
                _ => None,
            };
            if let Some(target) = target {
                *target = Object(exact.get().to_owned());
            }
        }
        Ok(WriteRequest {
            record,
            source: wire.source,
            request_id: wire.request_id,
        })
    }
}

/// A record as written, tagged by `record_type`. `P` is the form of the
/// open `properties` maps: an object on the way in, the stored JSON text in
/// an export.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "record_type", deny_unknown_fields)]
pub enum Record<P = Object> {
    /// `{"record_type":"FACT","key":…,"payload":{…}}`
    #[serde(rename = "FACT")]
    Fact {
        /// A normalized fact key.
        key: String,
        /// What the fact holds.
        payload: FactPayload<P>,
    },
    /// `{"record_type":"EVENT","timestamp":…,"payload":{…}}`
    #[serde(rename = "EVENT")]
    Event {
        /// When it happened.
        timestamp: i64,
        /// What happened.
        payload: EventPayload,
    },
    /// `{"record_type":"STATE","timestamp":…,"payload":{…}}`
    #[serde(rename = "STATE")]
    State {
        /// When the snapshot was taken.
        timestamp: i64,
        /// The snapshot.
        payload: StateSnapshot<P>,
    },
}

/// What a FACT holds: `{"semantic":{…}}`, `{"procedural":{…}}`,
/// `{"entity":{…}}` or `{"relationship":{…}}`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum FactPayload<P = Object> {
    /// A semantic memory (MT-1).
    Semantic(SemanticMemory),
    /// A procedural rule (MT-4).
    Procedural(ProceduralRule),
    /// An entity (MT-5).
    Entity(Entity<P>),
    /// A relationship (MT-6).
    Relationship(Relationship<P>),
}

/// What an EVENT holds: `{"ingested":{…}}` or `{"episode":{…}}`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum EventPayload {
    /// An ingested memory (B5-S2).
    Ingested(IngestedMemory),
    /// An episode (MT-3).
    Episode(Episode),
}

/// A semantic memory (MT-1).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct SemanticMemory {
    pub content: String,
    pub context: String,
    pub valid_at: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invalid_at: Option<i64>,
    pub strength: f64,
    pub last_accessed: i64,
    pub access_count: u64,
    #[serde(default)]
    pub sources: Vec<String>,
    pub confidence: f64,
    #[serde(default)]
    pub contradictions: Vec<String>,
    pub privacy_tier: PrivacyTier,
}

/// `public`, `sensitive` or `private` (MT-1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs)]
pub enum PrivacyTier {
    Public,
    Sensitive,
    Private,
}

/// A procedural rule (MT-4).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct ProceduralRule {
    pub agent_type: String,
    pub rule: String,
    #[serde(default)]
    pub derived_from: Vec<String>,
    pub confidence: f64,
    pub last_validated: i64,
    pub override_count: u64,
}

/// `person`, `organization`, `place`, `product` or `event` (MT-5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs)]
pub enum EntityType {
    Person,
    Organization,
    Place,
    Product,
    Event,
}

/// An entity (MT-5). `P` is the properties map: an object on the way in,
/// the stored JSON text on the way out.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct Entity<P> {
    pub name: String,
    #[serde(rename = "type")]
    pub entity_type: EntityType,
    pub properties: P,
    pub first_seen: i64,
    pub last_mentioned: i64,
    pub mention_count: u64,
    #[serde(default)]
    pub source_memories: Vec<String>,
}

/// A relationship (MT-6).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct Relationship<P> {
    pub from_entity: String,
    pub to_entity: String,
    #[serde(rename = "type")]
    pub relationship_type: String,
    pub valid_at: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invalid_at: Option<i64>,
    pub properties: P,
    #[serde(default)]
    pub source_memories: Vec<String>,
}

/// An ingested memory (B5-S2): with the event's timestamp and the record's
/// id, exactly the five stored fields.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct IngestedMemory {
    pub session_ref: String,
    pub summary: String,
    #[serde(default)]
    pub keywords: Vec<String>,
}

/// `success`, `failure` or `partial` (MT-3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs)]
pub enum Outcome {
    Success,
    Failure,
    Partial,
}

/// An episode (MT-3).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct Episode {
    pub situation: String,
    pub reasoning: String,
    pub action: String,
    pub outcome: Outcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_feedback: Option<String>,
    pub agent_type: String,
    pub mission_id: String,
    #[serde(default)]
    pub tags: Vec<String>,
}

/// A state snapshot.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct StateSnapshot<P> {
    pub subject: String,
    pub properties: P,
}

/// The answer to a write (IO-W8): `{"ACCEPTED":{"stored_id":…}}` or
/// `"REJECTED"`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum WriteAnswer {
    /// Stored.
    #[serde(rename = "ACCEPTED")]
    Accepted {
        /// The id of the stored record.
        stored_id: String,
    },
    /// Not stored.
    #[serde(rename = "REJECTED")]
    Rejected,
}

/// A read request (IO-R1).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadRequest {
    /// The one record type read.
    pub record_type: RecordType,
    /// The selector.
    pub selector: Selector,
    /// The caller's id.
    pub request_id: String,
}

/// The selectors of IO-R4, as `{"ById":{"id":…}}` and so on.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub enum Selector {
    ById { id: String },
    ByKey { key: String },
    ByTimeRange { from: i64, to: i64, limit: u32 },
    Latest { limit: u32 },
    Limit { limit: u32 },
}

/// The answer to a read: `{"records":[…]}` or `{"error":…}`.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum ReadAnswer {
    /// The records, possibly none (IO-R6).
    Records {
        /// In the type's order (IO-R7).
        records: Vec<StoredRecord>,
    },
    /// A refused read.
    Error {
        /// Why.
        error: ReadFailure,
    },
}

/// Why a read was refused: `"SelectorNotAllowed"`,
/// `{"LimitOutOfBounds":{"max":…}}`, `"InvalidRange"`, `"InvalidKey"`,
/// `"InvalidRequestId"`, `"StorageUnavailable"` or
/// `{"AnswerTooLarge":{"max_bytes":…}}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub enum ReadFailure {
    SelectorNotAllowed,
    LimitOutOfBounds { max: u32 },
    InvalidRange,
    InvalidKey,
    InvalidRequestId,
    StorageUnavailable,
    AnswerTooLarge { max_bytes: u64 },
}

/// A record as read back, tagged by `record_type`, with its `id`.
#[derive(Debug, Serialize)]
#[serde(tag = "record_type")]
pub enum StoredRecord {
    /// A FACT version.
    #[serde(rename = "FACT")]
    Fact {
        /// Its id.
        id: String,
        /// The engine's transaction time.
        created_at: i64,
        /// When a later write of the key superseded it.
        #[serde(skip_serializing_if = "Option::is_none")]
        superseded_at: Option<i64>,
        /// Its key.
        key: String,
        /// What it holds.
        payload: StoredFactPayload,
    },
    /// An EVENT.
    #[serde(rename = "EVENT")]
    Event {
        /// Its id.
        id: String,
        /// When it happened.
        timestamp: i64,
        /// What happened, less index data.
        payload: StoredEventPayload,
    },
    /// A STATE.
    #[serde(rename = "STATE")]
    State {
        /// Its id.
        id: String,
        /// When the snapshot was taken.
        timestamp: i64,
        /// The snapshot.
        payload: StateSnapshot<Box<RawValue>>,
    },
}

/// What a stored EVENT holds: an ingested memory comes back without its
/// keywords (B5-S3).
#[derive(Debug, Serialize)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum StoredEventPayload {
    Ingested {
        session_ref: String,
        summary: String,
    },
    Episode(Episode),
}

/// What a stored FACT holds; properties are the stored JSON text.
pub type StoredFactPayload = FactPayload<Box<RawValue>>;

// ---- into the component's types -------------------------------------------

fn entity_type_to_wit(kind: EntityType) -> wit::EntityType {
    match kind {
        EntityType::Person => wit::EntityType::Person,
        EntityType::Organization => wit::EntityType::Organization,
        EntityType::Place => wit::EntityType::Place,
        EntityType::Product => wit::EntityType::Product,
        EntityType::Event => wit::EntityType::Event,
    }
}

fn entity_type_from_wit(kind: wit::EntityType) -> EntityType {
    match kind {
        wit::EntityType::Person => EntityType::Person,
        wit::EntityType::Organization => EntityType::Organization,
        wit::EntityType::Place => EntityType::Place,
        wit::EntityType::Product => EntityType::Product,
        wit::EntityType::Event => EntityType::Event,
    }
}

fn tier_from_wit(tier: wit::PrivacyTier) -> PrivacyTier {
    match tier {
        wit::PrivacyTier::Public => PrivacyTier::Public,
        wit::PrivacyTier::Sensitive => PrivacyTier::Sensitive,
        wit::PrivacyTier::Private => PrivacyTier::Private,
    }
}

fn tier_to_wit(tier: PrivacyTier) -> wit::PrivacyTier {
    match tier {
        PrivacyTier::Public => wit::PrivacyTier::Public,
        PrivacyTier::Sensitive => wit::PrivacyTier::Sensitive,
        PrivacyTier::Private => wit::PrivacyTier::Private,
    }
}

impl From<RecordType> for wit::RecordType {
    fn from(t: RecordType) -> Self {
        match t {
            RecordType::Fact => wit::RecordType::Fact,
            RecordType::Event => wit::RecordType::Event,
            RecordType::State => wit::RecordType::State,
        }
    }
}

impl From<wit::RecordType> for RecordType {
    fn from(t: wit::RecordType) -> Self {
        match t {
            wit::RecordType::Fact => RecordType::Fact,
            wit::RecordType::Event => RecordType::Event,
            wit::RecordType::State => RecordType::State,
        }
    }
}

impl From<Source> for wit::WriteSource {
    fn from(s: Source) -> Self {
        wit::WriteSource {
            agent_id: s.agent_id,
            component: match s.component {
                Component::Cognition => wit::SourceComponent::Cognition,
                Component::Maintenance => wit::SourceComponent::Maintenance,
            },
            actor: match s.actor {
                Actor::System => wit::SourceActor::System,
                Actor::User => wit::SourceActor::User,
                Actor::External => wit::SourceActor::External,
            },
        }
    }
}

impl From<wit::WriteSource> for Source {
    fn from(s: wit::WriteSource) -> Self {
        Source {
            agent_id: s.agent_id,
            component: match s.component {
                wit::SourceComponent::Cognition => Component::Cognition,
                wit::SourceComponent::Maintenance => Component::Maintenance,
            },
            actor: match s.actor {
                wit::SourceActor::System => Actor::System,
                wit::SourceActor::User => Actor::User,
                wit::SourceActor::External => Actor::External,
            },
        }
    }
}

impl From<WriteRequest> for io::WriteRequest {
    fn from(r: WriteRequest) -> Self {
        io::WriteRequest {
            record: r.record.into(),
            source: r.source.into(),
            request_id: r.request_id,
        }
    }
}

impl<P: Properties> From<Record<P>> for wit::MemoryRecord {
    fn from(record: Record<P>) -> Self {
        match record {
            Record::Fact { key, payload } => wit::MemoryRecord::Fact(wit::Fact {
                key,
                payload: payload.into(),
            }),
            Record::Event { timestamp, payload } => wit::MemoryRecord::Event(wit::Event {
                timestamp,
                payload: payload.into(),
            }),
            Record::State { timestamp, payload } => wit::MemoryRecord::State(wit::State {
                timestamp,
                payload: wit::StateSnapshot {
                    subject: payload.subject,
                    properties: payload.properties.into_text(),
                },
            }),
        }
    }
}

impl<P: Properties> From<FactPayload<P>> for wit::FactPayload {
    fn from(payload: FactPayload<P>) -> Self {
        match payload {
            FactPayload::Semantic(m) => wit::FactPayload::Semantic(wit::SemanticMemory {
                content: m.content,
                context: m.context,
                valid_at: m.valid_at,
                invalid_at: m.invalid_at,
                strength: m.strength,
                last_accessed: m.last_accessed,
                access_count: m.access_count,
                sources: m.sources,
                confidence: m.confidence,
                contradictions: m.contradictions,
                privacy_tier: tier_to_wit(m.privacy_tier),
            }),
            FactPayload::Procedural(r) => wit::FactPayload::Procedural(wit::ProceduralRule {
                agent_type: r.agent_type,
                rule: r.rule,
                derived_from: r.derived_from,
                confidence: r.confidence,
                last_validated: r.last_validated,
                override_count: r.override_count,
            }),
            FactPayload::Entity(e) => wit::FactPayload::Entity(wit::Entity {
                name: e.name,
                entity_type: entity_type_to_wit(e.entity_type),
                properties: e.properties.into_text(),
                first_seen: e.first_seen,
                last_mentioned: e.last_mentioned,
                mention_count: e.mention_count,
                source_memories: e.source_memories,
            }),
            FactPayload::Relationship(r) => wit::FactPayload::Relationship(wit::Relationship {
                from_entity: r.from_entity,
                to_entity: r.to_entity,
                relationship_type: r.relationship_type,
                valid_at: r.valid_at,
                invalid_at: r.invalid_at,
                properties: r.properties.into_text(),
                source_memories: r.source_memories,
            }),
        }
    }
}

impl From<EventPayload> for wit::EventPayload {
    fn from(payload: EventPayload) -> Self {
        match payload {
            EventPayload::Ingested(m) => wit::EventPayload::Ingested(wit::IngestedMemory {
                session_ref: m.session_ref,
                summary: m.summary,
                keywords: m.keywords,
            }),
            EventPayload::Episode(e) => wit::EventPayload::Episode(wit::Episode {
                situation: e.situation,
                reasoning: e.reasoning,
                action: e.action,
                outcome: match e.outcome {
                    Outcome::Success => wit::Outcome::Success,
                    Outcome::Failure => wit::Outcome::Failure,
                    Outcome::Partial => wit::Outcome::Partial,
                },
                user_feedback: e.user_feedback,
                agent_type: e.agent_type,
                mission_id: e.mission_id,
                tags: e.tags,
            }),
        }
    }
}

impl From<ReadRequest> for io::ReadRequest {
    fn from(r: ReadRequest) -> Self {
        io::ReadRequest {
            record_type: r.record_type.into(),
            selector: match r.selector {
                Selector::ById { id } => ReadSelector::ById(io::ById { id }),
                Selector::ByKey { key } => ReadSelector::ByKey(io::ByKey { key }),
                Selector::ByTimeRange { from, to, limit } => {
                    ReadSelector::ByTimeRange(io::ByTimeRange { from, to, limit })
                }
                Selector::Latest { limit } => ReadSelector::Latest(io::Latest { limit }),
                Selector::Limit { limit } => ReadSelector::Limit(io::Limit { limit }),
            },
            request_id: r.request_id,
        }
    }
}

// ---- out of the component's types -----------------------------------------

impl From<WriteResult> for WriteAnswer {
    fn from(result: WriteResult) -> Self {
        match result {
            WriteResult::Accepted(stored_id) => WriteAnswer::Accepted { stored_id },
            WriteResult::Rejected => WriteAnswer::Rejected,
        }
    }
}

impl From<ReadError> for ReadFailure {
    fn from(error: ReadError) -> Self {
        match error {
            ReadError::SelectorNotAllowed => ReadFailure::SelectorNotAllowed,
            ReadError::LimitOutOfBounds(max) => ReadFailure::LimitOutOfBounds { max },
            ReadError::InvalidRange => ReadFailure::InvalidRange,
            ReadError::InvalidKey => ReadFailure::InvalidKey,
            ReadError::InvalidRequestId => ReadFailure::InvalidRequestId,
            ReadError::StorageUnavailable => ReadFailure::StorageUnavailable,
            ReadError::AnswerTooLarge(max_bytes) => ReadFailure::AnswerTooLarge { max_bytes },
        }
    }
}

impl From<Result<io::ReadResult, ReadError>> for ReadAnswer {
    fn from(result: Result<io::ReadResult, ReadError>) -> Self {
        match result {
            Ok(read) => ReadAnswer::Records {
                records: read.records.into_iter().map(Into::into).collect(),
            },
            Err(error) => ReadAnswer::Error {
                error: error.into(),
            },
        }
    }
}

/// The engine checked that properties are one JSON object; should a stored
/// value not parse all the same, it is shown as a JSON string.
fn raw(text: String) -> Box<RawValue> {
    RawValue::from_string(text.clone()).unwrap_or_else(|_| {
        RawValue::from_string(Value::String(text).to_string()).expect("a JSON string is valid JSON")
    })
}

impl From<wit::StoredRecord> for StoredRecord {
    fn from(record: wit::StoredRecord) -> Self {
        match record {
            wit::StoredRecord::Fact(f) => StoredRecord::Fact {
                id: f.id,
                created_at: f.created_at,
                superseded_at: f.superseded_at,
                key: f.fact.key,
                payload: f.fact.payload.into(),
            },
            wit::StoredRecord::Event(e) => StoredRecord::Event {
                id: e.id,
                timestamp: e.timestamp,
                payload: match e.payload {
                    wit::StoredEventPayload::Ingested(m) => StoredEventPayload::Ingested {
                        session_ref: m.session_ref,
                        summary: m.summary,
                    },
                    wit::StoredEventPayload::Episode(e) => StoredEventPayload::Episode(e.into()),
                },
            },
            wit::StoredRecord::State(s) => StoredRecord::State {
                id: s.id,
                timestamp: s.state.timestamp,
                payload: StateSnapshot {
                    subject: s.state.payload.subject,
                    properties: raw(s.state.payload.properties),
                },
            },
        }
    }
}

impl From<wit::SemanticMemory> for SemanticMemory {
    fn from(m: wit::SemanticMemory) -> Self {
        SemanticMemory {
            content: m.content,
            context: m.context,
            valid_at: m.valid_at,
            invalid_at: m.invalid_at,
            strength: m.strength,
            last_accessed: m.last_accessed,
            access_count: m.access_count,
            sources: m.sources,
            confidence: m.confidence,
            contradictions: m.contradictions,
            privacy_tier: tier_from_wit(m.privacy_tier),
        }
    }
}

impl From<wit::ProceduralRule> for ProceduralRule {
    fn from(r: wit::ProceduralRule) -> Self {
        ProceduralRule {
            agent_type: r.agent_type,
            rule: r.rule,
            derived_from: r.derived_from,
            confidence: r.confidence,
            last_validated: r.last_validated,
            override_count: r.override_count,
        }
    }
}

impl<P> FactPayload<P> {
    /// The component's payload, its properties text made into `P`.
    fn from_wit(payload: wit::FactPayload, properties: impl Fn(String) -> P) -> Self {
        match payload {
            wit::FactPayload::Semantic(m) => FactPayload::Semantic(m.into()),
            wit::FactPayload::Procedural(r) => FactPayload::Procedural(r.into()),
            wit::FactPayload::Entity(e) => FactPayload::Entity(Entity {
                name: e.name,
                entity_type: entity_type_from_wit(e.entity_type),
                properties: properties(e.properties),
                first_seen: e.first_seen,
                last_mentioned: e.last_mentioned,
                mention_count: e.mention_count,
                source_memories: e.source_memories,
            }),
            wit::FactPayload::Relationship(r) => FactPayload::Relationship(Relationship {
                from_entity: r.from_entity,
                to_entity: r.to_entity,
                relationship_type: r.relationship_type,
                valid_at: r.valid_at,
                invalid_at: r.invalid_at,
                properties: properties(r.properties),
                source_memories: r.source_memories,
            }),
        }
    }
}

impl From<wit::FactPayload> for StoredFactPayload {
    fn from(payload: wit::FactPayload) -> Self {
        FactPayload::from_wit(payload, raw)
    }
}

impl From<wit::Episode> for Episode {
    fn from(e: wit::Episode) -> Self {
        Episode {
            situation: e.situation,
            reasoning: e.reasoning,
            action: e.action,
            outcome: match e.outcome {
                wit::Outcome::Success => Outcome::Success,
                wit::Outcome::Failure => Outcome::Failure,
                wit::Outcome::Partial => Outcome::Partial,
            },
            user_feedback: e.user_feedback,
            agent_type: e.agent_type,
            mission_id: e.mission_id,
            tags: e.tags,
        }
    }
}

// ---- execution plans ------------------------------------------------------------

use crate::cycle as wc;

/// An execution plan as JSON: `{"metadata":{"top_k":3},"steps":[…]}`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    /// The plan's metadata; none is empty metadata, so a plan that
    /// retrieves without it is refused by the engine (B5-P4), not here.
    #[serde(default)]
    pub metadata: PlanMetadata,
    /// Its steps, in order.
    pub steps: Vec<PlanStep>,
}

/// `{"top_k":3}`; `top_k` is required when the plan retrieves (B5-P4).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanMetadata {
    /// How many memories RetrieveMemory keeps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_k: Option<u32>,
}

/// `{"name":"retrieve","stage":"ContextSelect","kind":"RetrieveMemory","inputs":["query"]}`
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanStep {
    /// Unique in the plan.
    pub name: String,
    /// `ContextSelect`, `PromptAssemble`, `SummarizeMemory` or `PersistMemory`.
    pub stage: Stage,
    /// What it does.
    pub kind: StepKind,
    /// Earlier steps whose outputs it takes.
    #[serde(default)]
    pub inputs: Vec<String>,
}

/// The stages of a turn, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub enum Stage {
    ContextSelect,
    PromptAssemble,
    SummarizeMemory,
    PersistMemory,
}

/// A step's kind; `{"SummarizeMemory":{"of":"user_message"|"turn"}}` or a
/// plain name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub enum StepKind {
    SummarizeMemory { of: SummarizeInput },
    PersistMemory,
    RetrieveMemory,
    ContextSelect,
    PromptAssemble,
}

/// What a SummarizeMemory step summarizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum SummarizeInput {
    UserMessage,
    Turn,
}

impl From<Stage> for wc::Stage {
    fn from(s: Stage) -> Self {
        match s {
            Stage::ContextSelect => wc::Stage::ContextSelect,
            Stage::PromptAssemble => wc::Stage::PromptAssemble,
            Stage::SummarizeMemory => wc::Stage::SummarizeMemory,
            Stage::PersistMemory => wc::Stage::PersistMemory,
        }
    }
}

impl From<Plan> for wc::ExecutionPlan {
    fn from(plan: Plan) -> Self {
        wc::ExecutionPlan {
            metadata: wc::PlanMetadata {
                top_k: plan.metadata.top_k,
            },
            steps: plan
                .steps
                .into_iter()
                .map(|s| wc::PlanStep {
                    name: s.name,
                    stage: s.stage.into(),
                    kind: match s.kind {
                        StepKind::SummarizeMemory { of } => {
                            wc::StepKind::SummarizeMemory(match of {
                                SummarizeInput::UserMessage => wc::SummarizeInput::UserMessage,
                                SummarizeInput::Turn => wc::SummarizeInput::Turn,
                            })
                        }
                        StepKind::PersistMemory => wc::StepKind::PersistMemory,
                        StepKind::RetrieveMemory => wc::StepKind::RetrieveMemory,
                        StepKind::ContextSelect => wc::StepKind::ContextSelect,
                        StepKind::PromptAssemble => wc::StepKind::PromptAssemble,
                    },
                    inputs: s.inputs,
                })
                .collect(),
        }
    }
}

/// A retrieved memory: exactly `id`, `summary`, `timestamp` (B5-D2).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[allow(missing_docs)]
pub struct RetrievedMemory {
    pub id: String,
    pub summary: String,
    pub timestamp: i64,
}

/// A step's output as JSON.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum StepOutput {
    Summarized {
        summary: String,
        keywords: Vec<String>,
    },
    Retrieved(Vec<RetrievedMemory>),
    Selected(Vec<RetrievedMemory>),
    Prompt {
        context: Vec<RetrievedMemory>,
        text: String,
    },
    Staged {
        summary: String,
        keywords: Vec<String>,
    },
}

fn retrieved(memories: Vec<wc::RetrievedMemory>) -> Vec<RetrievedMemory> {
    memories
        .into_iter()
        .map(|m| RetrievedMemory {
            id: m.id,
            summary: m.summary,
            timestamp: m.timestamp,
        })
        .collect()
}

impl From<wc::StepOutput> for StepOutput {
    fn from(output: wc::StepOutput) -> Self {
        match output {
            wc::StepOutput::Summarized(s) => StepOutput::Summarized {
                summary: s.summary,
                keywords: s.keywords,
            },
            wc::StepOutput::Retrieved(m) => StepOutput::Retrieved(retrieved(m)),
            wc::StepOutput::Selected(m) => StepOutput::Selected(retrieved(m)),
            wc::StepOutput::Prompt(p) => StepOutput::Prompt {
                context: retrieved(p.context),
                text: p.text,
            },
            wc::StepOutput::Staged(s) => StepOutput::Staged {
                summary: s.summary,
                keywords: s.keywords,
            },
        }
    }
}

// ---- maintenance export -------------------------------------------------------

use crate::export as wx;

/// One line of an export file (`engram maintenance export`, IO-W7): one
/// item of one agent's domain, e.g.
/// `{"agent_id":"alice","item":{"kind":"request","request_id":…}}`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExportLine {
    /// The domain the item belongs to.
    pub agent_id: String,
    /// The item.
    pub item: ExportItem,
}

/// An exported item, tagged by `kind`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum ExportItem {
    /// A stored record with its id, its place in write order and, for a
    /// FACT, both transaction times.
    Record {
        /// The record's id.
        id: String,
        /// Its place in the domain's write order.
        seq: u64,
        /// When the engine stored it (FACT only).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        created_at: Option<i64>,
        /// When a newer version closed it (FACT only).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        superseded_at: Option<i64>,
        /// The record as written, keywords included; `properties` are the
        /// exact JSON text stored.
        record: Box<Record<String>>,
    },
    /// An answered request id (IO-W2).
    Request {
        /// The caller's request id.
        request_id: String,
        /// The id it was answered with.
        stored_id: String,
        /// The component of the write's source.
        component: Component,
        /// The actor of the write's source.
        actor: Actor,
    },
    /// The privacy tier of a FACT key above public (MT-1).
    KeyTier {
        /// The fact key.
        key: String,
        /// Its tier.
        privacy_tier: PrivacyTier,
    },
}

impl From<wit::MemoryRecord> for Record<String> {
    fn from(record: wit::MemoryRecord) -> Self {
        match record {
            wit::MemoryRecord::Fact(f) => Record::Fact {
                key: f.key,
                payload: FactPayload::from_wit(f.payload, |text| text),
            },
            wit::MemoryRecord::Event(e) => Record::Event {
                timestamp: e.timestamp,
                payload: match e.payload {
                    wit::EventPayload::Ingested(m) => EventPayload::Ingested(IngestedMemory {
                        session_ref: m.session_ref,
                        summary: m.summary,
                        keywords: m.keywords,
                    }),
                    wit::EventPayload::Episode(e) => EventPayload::Episode(e.into()),
                },
            },
            wit::MemoryRecord::State(s) => Record::State {
                timestamp: s.timestamp,
                payload: StateSnapshot {
                    subject: s.payload.subject,
                    properties: s.payload.properties,
                },
            },
        }
    }
}

impl From<wx::ExportedItem> for ExportItem {
    fn from(item: wx::ExportedItem) -> Self {
        match item {
            wx::ExportedItem::Record(r) => ExportItem::Record {
                id: r.id,
                seq: r.seq,
                created_at: r.created_at,
                superseded_at: r.superseded_at,
                record: Box::new(r.record.into()),
            },
            wx::ExportedItem::Request(r) => {
                let source = Source::from(wit::WriteSource {
                    agent_id: String::new(),
                    component: r.component,
                    actor: r.actor,
                });
                ExportItem::Request {
                    request_id: r.request_id,
                    stored_id: r.stored_id,
                    component: source.component,
                    actor: source.actor,
                }
            }
            wx::ExportedItem::KeyTier((key, tier)) => ExportItem::KeyTier {
                key,
                privacy_tier: tier_from_wit(tier),
            },
        }
    }
}

impl From<ExportItem> for wx::ExportedItem {
    fn from(item: ExportItem) -> Self {
        match item {
            ExportItem::Record {
                id,
                seq,
                created_at,
                superseded_at,
                record,
            } => wx::ExportedItem::Record(wx::ExportedRecord {
                id,
                seq,
                record: (*record).into(),
                created_at,
                superseded_at,
            }),
            ExportItem::Request {
                request_id,
                stored_id,
                component,
                actor,
            } => {
                let source = wit::WriteSource::from(Source {
                    agent_id: String::new(),
                    component,
                    actor,
                });
                wx::ExportedItem::Request(wx::ExportedRequest {
                    request_id,
                    stored_id,
                    component: source.component,
                    actor: source.actor,
                })
            }
            ExportItem::KeyTier { key, privacy_tier } => {
                wx::ExportedItem::KeyTier((key, tier_to_wit(privacy_tier)))
            }
        }
    }
}
