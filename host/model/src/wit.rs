//! The conversions between the JSON model and the component's types, written
//! once for every binding of the WIT: the wasmtime host's (`bindgen!`) and a
//! component's own (`wit_bindgen::generate!`) name the types alike, so one
//! macro body serves both.

/// A semantic memory of type `$to` from `$m`, of the other side's type:
/// every field as it is, the privacy tier through `$tier`. For
/// [`json_wit_conversions!`], both ways.
#[doc(hidden)]
#[macro_export]
macro_rules! semantic_memory {
    ($($to:ident)::+, $m:ident, $tier:ident) => {
        $($to)::+ {
            content: $m.content,
            context: $m.context,
            valid_at: $m.valid_at,
            invalid_at: $m.invalid_at,
            strength: $m.strength,
            last_accessed: $m.last_accessed,
            access_count: $m.access_count,
            sources: $m.sources,
            confidence: $m.confidence,
            contradictions: $m.contradictions,
            privacy_tier: $tier($m.privacy_tier),
        }
    };
}

/// Writes the conversions between [`crate::json`] and the component's types
/// into the module it is invoked in, whose parent module must hold the
/// modules `types` (the `engram:memory/types` interface), `io`, `cycle`
/// (the `cycle` interface's types) and `export` (the `maintenance`
/// interface's types) of a binding of the `engram:memory` WIT package.
///
/// Besides the `From` conversions it defines, in a private module
/// `conversions`, and re-exports: `read_answer`, the JSON answer of a read,
/// and the size measures a host limits records by (`record_size`,
/// `fact_payload_size`, `summary_size`: the bytes of a record's strings plus
/// 8 per list item).
#[macro_export]
macro_rules! json_wit_conversions {
    () => {
        pub use self::conversions::{
            fact_payload_size, facts_answer, import_batches, read_answer, record_size,
            record_type, refused_write, stage_line, summary_size, traversal_answer,
        };
        mod conversions {
            use super::super::cycle as wc;
            use super::super::export as wx;
            use super::super::graph as wg;
            use super::super::io::{self, ReadError, ReadSelector, WriteResult};
            use super::super::types as wit;
            #[allow(unused_imports)]
            use $crate::json::{
                Actor, Component, Entity, EntityType, Episode, EventPayload, ExportItem,
                FactPayload, IngestedMemory, Outcome, Plan, PrivacyTier, ProceduralRule,
                Properties, ReadAnswer, ReadFailure, ReadRequest, Record, RecordType, Relationship,
                RetrievedMemory, Selector, SemanticMemory, Source, Stage, StateSnapshot, StepKind,
                StepOutput, StoredEventPayload, StoredFactPayload, StoredRecord, SummarizeInput,
                WriteAnswer, WriteRequest, raw,
            };

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

            impl From<EntityType> for wit::EntityType {
                fn from(kind: EntityType) -> Self {
                    entity_type_to_wit(kind)
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
                        Record::Event { timestamp, payload } => {
                            wit::MemoryRecord::Event(wit::Event {
                                timestamp,
                                payload: payload.into(),
                            })
                        }
                        Record::State { timestamp, payload } => {
                            wit::MemoryRecord::State(wit::State {
                                timestamp,
                                payload: wit::StateSnapshot {
                                    subject: payload.subject,
                                    properties: payload.properties.into_text(),
                                },
                            })
                        }
                    }
                }
            }

            impl<P: Properties> From<FactPayload<P>> for wit::FactPayload {
                fn from(payload: FactPayload<P>) -> Self {
                    match payload {
                        FactPayload::Semantic(m) => wit::FactPayload::Semantic(
                            $crate::semantic_memory!(wit::SemanticMemory, m, tier_to_wit),
                        ),
                        FactPayload::Procedural(r) => {
                            wit::FactPayload::Procedural(wit::ProceduralRule {
                                agent_type: r.agent_type,
                                rule: r.rule,
                                derived_from: r.derived_from,
                                confidence: r.confidence,
                                last_validated: r.last_validated,
                                override_count: r.override_count,
                            })
                        }
                        FactPayload::Entity(e) => wit::FactPayload::Entity(wit::Entity {
                            name: e.name,
                            entity_type: entity_type_to_wit(e.entity_type),
                            properties: e.properties.into_text(),
                            first_seen: e.first_seen,
                            last_mentioned: e.last_mentioned,
                            mention_count: e.mention_count,
                            source_memories: e.source_memories,
                        }),
                        FactPayload::Relationship(r) => {
                            wit::FactPayload::Relationship(wit::Relationship {
                                from_entity: r.from_entity,
                                to_entity: r.to_entity,
                                relationship_type: r.relationship_type,
                                valid_at: r.valid_at,
                                invalid_at: r.invalid_at,
                                properties: r.properties.into_text(),
                                source_memories: r.source_memories,
                            })
                        }
                    }
                }
            }

            impl From<EventPayload> for wit::EventPayload {
                fn from(payload: EventPayload) -> Self {
                    match payload {
                        EventPayload::Ingested(m) => {
                            wit::EventPayload::Ingested(wit::IngestedMemory {
                                session_ref: m.session_ref,
                                summary: m.summary,
                                keywords: m.keywords,
                            })
                        }
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
                            Selector::Latest { limit } => {
                                ReadSelector::Latest(io::Latest { limit })
                            }
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
                        ReadError::AnswerTooLarge(max_bytes) => {
                            ReadFailure::AnswerTooLarge { max_bytes }
                        }
                    }
                }
            }

            /// The JSON answer of a read, history or graph call.
            pub fn read_answer(result: Result<io::ReadResult, ReadError>) -> ReadAnswer {
                match result {
                    Ok(read) => ReadAnswer::Records {
                        records: read.records.into_iter().map(Into::into).collect(),
                    },
                    Err(error) => ReadAnswer::Error {
                        error: error.into(),
                    },
                }
            }

            /// FACT versions as a read answer: `{"records":[…]}` or
            /// `{"error":…}`.
            pub fn facts_answer(result: Result<Vec<wit::StoredFact>, ReadError>) -> ReadAnswer {
                read_answer(result.map(|facts| io::ReadResult {
                    records: facts.into_iter().map(wit::StoredRecord::Fact).collect(),
                }))
            }

            /// A traversal as its line, `{"nodes":[{"key","depth","entity"}…],
            /// "edges":[…]}`, or `{"error":…}`; and whether it was refused.
            pub fn traversal_answer(
                result: Result<wg::Traversal, ReadError>,
            ) -> ($crate::serde_json::Value, bool) {
                let fact = |f: wit::StoredFact| StoredRecord::from(wit::StoredRecord::Fact(f));
                match result {
                    Ok(traversal) => {
                        let nodes: Vec<_> = traversal
                            .nodes
                            .into_iter()
                            .map(|n| {
                                $crate::serde_json::json!({"key": n.key, "depth": n.depth, "entity": n.entity.map(fact)})
                            })
                            .collect();
                        let edges: Vec<_> = traversal.edges.into_iter().map(fact).collect();
                        ($crate::serde_json::json!({"nodes": nodes, "edges": edges}), false)
                    }
                    Err(error) => ($crate::serde_json::json!({"error": ReadFailure::from(error)}), true),
                }
            }

            /// A stage's line: `{"stage","steps":[{"step","output"}…]}`.
            pub fn stage_line(stage: wc::Stage, results: Vec<wc::StepResult>) -> $crate::serde_json::Value {
                let steps: Vec<_> = results
                    .into_iter()
                    .map(|r| $crate::serde_json::json!({"step": r.step, "output": StepOutput::from(r.output)}))
                    .collect();
                $crate::serde_json::json!({"stage": Stage::from(stage).name(), "steps": steps})
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
                                wit::StoredEventPayload::Ingested(m) => {
                                    StoredEventPayload::Ingested {
                                        session_ref: m.session_ref,
                                        summary: m.summary,
                                    }
                                }
                                wit::StoredEventPayload::Episode(e) => {
                                    StoredEventPayload::Episode(e.into())
                                }
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
                    $crate::semantic_memory!(SemanticMemory, m, tier_from_wit)
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

            /// The component's payload, its properties text made into `P`.
            fn fact_payload_from_wit<P>(
                payload: wit::FactPayload,
                properties: impl Fn(String) -> P,
            ) -> FactPayload<P> {
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

            impl From<wit::FactPayload> for StoredFactPayload {
                fn from(payload: wit::FactPayload) -> Self {
                    fact_payload_from_wit(payload, raw)
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

            impl From<wc::Stage> for Stage {
                fn from(s: wc::Stage) -> Self {
                    match s {
                        wc::Stage::ContextSelect => Stage::ContextSelect,
                        wc::Stage::PromptAssemble => Stage::PromptAssemble,
                        wc::Stage::SummarizeMemory => Stage::SummarizeMemory,
                        wc::Stage::PersistMemory => Stage::PersistMemory,
                    }
                }
            }

            impl From<Plan> for wc::ExecutionPlan {
                fn from(plan: Plan) -> Self {
                    wc::ExecutionPlan {
                        metadata: wc::PlanMetadata {
                            top_k: plan.metadata.top_k,
                            token_budget: plan.metadata.token_budget,
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
                                            SummarizeInput::UserMessage => {
                                                wc::SummarizeInput::UserMessage
                                            }
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
                            left_out: p.left_out,
                        },
                        wc::StepOutput::Staged(s) => StepOutput::Staged {
                            summary: s.summary,
                            keywords: s.keywords,
                        },
                    }
                }
            }

            impl From<wit::MemoryRecord> for Record<String> {
                fn from(record: wit::MemoryRecord) -> Self {
                    match record {
                        wit::MemoryRecord::Fact(f) => Record::Fact {
                            key: f.key,
                            payload: fact_payload_from_wit(f.payload, |text| text),
                        },
                        wit::MemoryRecord::Event(e) => Record::Event {
                            timestamp: e.timestamp,
                            payload: match e.payload {
                                wit::EventPayload::Ingested(m) => {
                                    EventPayload::Ingested(IngestedMemory {
                                        session_ref: m.session_ref,
                                        summary: m.summary,
                                        keywords: m.keywords,
                                    })
                                }
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
                            expires_at: r.expires_at,
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
                            expires_at,
                            record,
                        } => wx::ExportedItem::Record(wx::ExportedRecord {
                            id,
                            seq,
                            record: (*record).into(),
                            created_at,
                            superseded_at,
                            expires_at,
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

            /// What a list item costs beyond its own bytes.
            use $crate::size::list_size as text;

            /// Cuts exported items into import commits within the bounds of
            /// [`size::import_batches`]($crate::size::import_batches): a record
            /// costs its size plus 256 bytes and 6 index entries plus one per
            /// keyword; anything else 512 bytes and one entry.
            pub fn import_batches(items: &[wx::ExportedItem]) -> Vec<&[wx::ExportedItem]> {
                $crate::size::import_batches(items, |item| match item {
                    wx::ExportedItem::Record(r) => {
                        let keywords = match &r.record {
                            wit::MemoryRecord::Event(e) => match &e.payload {
                                wit::EventPayload::Ingested(m) => m.keywords.len(),
                                _ => 0,
                            },
                            _ => 0,
                        };
                        (record_size(&r.record) + 256, 6 + keywords)
                    }
                    _ => (512, 1),
                })
            }

            /// The size of a record as the host limits it: the bytes of all its
            /// strings, plus 8 for every list item. Numbers, enums and options are
            /// not counted: a record holds a fixed number of them.
            pub fn record_size(record: &wit::MemoryRecord) -> usize {
                match record {
                    wit::MemoryRecord::Fact(fact) => {
                        fact.key.len() + fact_payload_size(&fact.payload)
                    }
                    wit::MemoryRecord::Event(event) => match &event.payload {
                        wit::EventPayload::Ingested(m) => {
                            m.session_ref.len() + m.summary.len() + text(&m.keywords)
                        }
                        wit::EventPayload::Episode(e) => {
                            e.situation.len()
                                + e.reasoning.len()
                                + e.action.len()
                                + e.user_feedback.as_ref().map_or(0, String::len)
                                + e.agent_type.len()
                                + e.mission_id.len()
                                + text(&e.tags)
                        }
                    },
                    wit::MemoryRecord::State(state) => {
                        state.payload.subject.len() + state.payload.properties.len()
                    }
                }
            }

            /// The size of a FACT's payload, measured as `record_size` does.
            pub fn fact_payload_size(payload: &wit::FactPayload) -> usize {
                match payload {
                    wit::FactPayload::Semantic(m) => {
                        m.content.len()
                            + m.context.len()
                            + text(&m.sources)
                            + text(&m.contradictions)
                    }
                    wit::FactPayload::Procedural(r) => {
                        r.agent_type.len() + r.rule.len() + text(&r.derived_from)
                    }
                    wit::FactPayload::Entity(e) => {
                        e.name.len() + e.properties.len() + text(&e.source_memories)
                    }
                    wit::FactPayload::Relationship(r) => {
                        r.from_entity.len()
                            + r.to_entity.len()
                            + r.relationship_type.len()
                            + r.properties.len()
                            + text(&r.source_memories)
                    }
                }
            }

            pub use $crate::size::summary_size;

            /// The type of a record.
            pub fn record_type(record: &wit::MemoryRecord) -> wit::RecordType {
                match record {
                    wit::MemoryRecord::Fact(_) => wit::RecordType::Fact,
                    wit::MemoryRecord::Event(_) => wit::RecordType::Event,
                    wit::MemoryRecord::State(_) => wit::RecordType::State,
                }
            }

            /// The audit entry of a write the host refused before it
            /// reached the engine (IO-W8), at `at` in `agent_id`'s domain:
            /// `reason` says why, as [`size::record_refusal`]($crate::size::record_refusal)
            /// words a record above the host's limit.
            pub fn refused_write(
                at: i64,
                agent_id: &str,
                request_id: &str,
                source: &wit::WriteSource,
                record_type: wit::RecordType,
                reason: String,
            ) -> $crate::audit::AuditEntry {
                $crate::audit::AuditEntry {
                    at,
                    agent_id: agent_id.to_owned(),
                    request_id: request_id.to_owned(),
                    operation: $crate::audit::Operation::Write,
                    source: Some(source.clone().into()),
                    record_type: Some(record_type.into()),
                    outcome: $crate::audit::Outcome::Rejected,
                    stored_id: None,
                    count: None,
                    reason: Some(reason),
                    caller: None,
                }
            }
        }
    };
}
