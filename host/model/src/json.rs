//! The JSON form of the contract, in the seeds' own names and spellings:
//! `request_id`, `record_type` (`FACT`/`EVENT`/`STATE`), `COGNITION`,
//! `{"ById":{"id":…}}`, `{"ACCEPTED":{"stored_id":…}}`, `"REJECTED"`.
//!
//! Every object refuses fields it does not know, so a request cannot carry
//! anything the contract has no place for (raw content, a score).

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

    /// The object whose JSON text is `text`, kept to the letter; `None`
    /// when `text` is not one JSON object.
    pub fn from_text(text: &str) -> Option<Self> {
        match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(_)) => Some(Object(text.to_owned())),
            _ => None,
        }
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
        use serde::de::{Error, Unexpected};
        match Value::deserialize(deserializer)? {
            Value::Object(map) => Ok(Object::from(map)),
            other => {
                let unexpected = match &other {
                    Value::Null => Unexpected::Unit,
                    Value::Bool(b) => Unexpected::Bool(*b),
                    Value::Number(_) => Unexpected::Other("number"),
                    Value::String(s) => Unexpected::Str(s),
                    Value::Array(_) => Unexpected::Seq,
                    Value::Object(_) => Unexpected::Map,
                };
                Err(D::Error::invalid_type(
                    unexpected,
                    &"`properties` as one JSON object",
                ))
            }
        }
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
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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

impl<P> Entity<P> {
    /// The same entity with `properties` in another form.
    pub fn with_properties<Q>(self, properties: Q) -> Entity<Q> {
        Entity {
            name: self.name,
            entity_type: self.entity_type,
            properties,
            first_seen: self.first_seen,
            last_mentioned: self.last_mentioned,
            mention_count: self.mention_count,
            source_memories: self.source_memories,
        }
    }
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

impl<P> Relationship<P> {
    /// The same relationship with `properties` in another form.
    pub fn with_properties<Q>(self, properties: Q) -> Relationship<Q> {
        Relationship {
            from_entity: self.from_entity,
            to_entity: self.to_entity,
            relationship_type: self.relationship_type,
            valid_at: self.valid_at,
            invalid_at: self.invalid_at,
            properties,
            source_memories: self.source_memories,
        }
    }
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

/// The engine checked that properties are one JSON object; should a stored
/// value not parse all the same, it is shown as a JSON string.
#[doc(hidden)]
pub fn raw(text: String) -> Box<RawValue> {
    RawValue::from_string(text.clone()).unwrap_or_else(|_| {
        RawValue::from_string(Value::String(text).to_string()).expect("a JSON string is valid JSON")
    })
}

// ---- execution plans ------------------------------------------------------------

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

/// `{"top_k":3,"token_budget":500}`; `top_k` is required when the plan
/// retrieves (B5-P4).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanMetadata {
    /// How many memories RetrieveMemory keeps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_k: Option<u32>,
    /// The most tokens the memory lines of the prompt may take, counted by
    /// the host's tokenizer; none: every selected memory is listed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_budget: Option<u32>,
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

impl Stage {
    /// Every stage, in the order a turn runs them.
    pub const ALL: [Stage; 4] = [
        Stage::ContextSelect,
        Stage::PromptAssemble,
        Stage::SummarizeMemory,
        Stage::PersistMemory,
    ];

    /// The stage's name in the JSON model (`{"stage":…}` lines).
    pub fn name(self) -> &'static str {
        match self {
            Stage::ContextSelect => "ContextSelect",
            Stage::PromptAssemble => "PromptAssemble",
            Stage::SummarizeMemory => "SummarizeMemory",
            Stage::PersistMemory => "PersistMemory",
        }
    }
}

/// Why a domain refuses a host's model, each a name and a dimension: the
/// words every host says it in (the engine's own refusal, in its audit
/// trail, says the same).
pub fn model_changed(domain: (&str, u32), host: (&str, u32)) -> String {
    format!(
        "the domain's vectors were made by {} ({} dimensions), the host's embedder is {} ({} \
         dimensions): run maintenance reembed",
        domain.0, domain.1, host.0, host.1
    )
}

/// A typed error's name and payload, without its type's path: how the
/// answers name a plan's or a cycle's error (`{"cycle_error":…}`).
pub fn error_name(error: &impl std::fmt::Debug) -> String {
    let text = format!("{error:?}");
    match text.split_once("::") {
        Some((_, rest)) => rest.to_owned(),
        None => text,
    }
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

/// A retrieved memory: exactly `id`, `summary`, `timestamp` (B5-D2).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
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
        /// How many selected memories the token budget left out.
        left_out: u32,
    },
    Staged {
        summary: String,
        keywords: Vec<String>,
    },
}

// ---- maintenance export -------------------------------------------------------

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
        /// When it expires; absent when it is kept until removed otherwise.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        expires_at: Option<i64>,
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
