//! The knowledge graph of the reference MCP memory server
//! (`@modelcontextprotocol/server-memory`) on an agent's domain: its
//! entities, observations and relations, in its names and shapes, kept as
//! Engram FACTs. `engram mcp --tools knowledge-graph` serves its nine tools
//! from here, and `engram maintenance import-graph` reads its `memory.jsonl`
//! through the same code.
//!
//! - An entity is an entity FACT (MT-5) under `kg.entities.<id>`, the id made
//!   from its name (a readable part and a hash of the exact name). Its
//!   reference type and its observations, in the order added, are in the
//!   FACT's properties: `{"entityType","observations"}`. The FACT's own type
//!   is the nearest of Engram's five ([`engram_type`]).
//! - A relation is a relationship FACT (MT-6) under `kg.relations.<hash>`,
//!   from and to the entities' keys, its type in Engram's form
//!   ([`relationship_type`]); the exact names and type are in its
//!   properties: `{"from","to","relationType"}`.
//! - Nothing is erased: COGNITION cannot delete. Every change is a new
//!   version of the key, the earlier ones kept in history. A deleted relation
//!   is closed in valid time (`invalid_at`); a deleted entity gets a version
//!   with no observations and `"deleted_at"` in its properties, and its
//!   relations are closed. Only `engram maintenance forget` erases for good.
//! - A call that changes the graph holds the domain's write lock from its
//!   first read to its last write, so two servers on one store never write
//!   over each other's changes.

use crate::Domain;
use engram_model::json::{
    self, Actor, Component, EntityType, FactPayload, Object, ReadAnswer, Record, StoredRecord,
};
use engram_surface::Engine;
use engram_surface::calls::{ListArgs, RelationshipsArgs};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The namespace of the graph's entities.
const ENTITIES: &str = "kg.entities";
/// The namespace of the graph's relations.
const RELATIONS: &str = "kg.relations";
/// Items a `read_graph` page holds when no limit is given.
pub const READ_LIMIT: u32 = 100;
/// Entities a `search_nodes` answer holds when no limit is given.
pub const SEARCH_LIMIT: u32 = 50;
/// The most items a page may be asked for.
pub const MAX_LIMIT: u32 = 1_000;
/// Index entries read at once: the engine's default read ceiling.
const PAGE: u32 = 1_000;
/// The longest readable part of an entity's id, in bytes.
const SLUG_BYTES: usize = 48;
/// The longest relationship type, in bytes.
const TYPE_BYTES: usize = 64;

/// An entity as the reference server has it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Entity {
    /// The name of the entity
    pub name: String,
    /// The type of the entity
    pub entity_type: String,
    /// An array of observation contents associated with the entity
    pub observations: Vec<String>,
}

/// A relation as the reference server has it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Relation {
    /// The name of the entity where the relation starts
    pub from: String,
    /// The name of the entity where the relation ends
    pub to: String,
    /// The type of the relation
    pub relation_type: String,
}

/// Observations to add to one entity.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewObservations {
    /// The name of the entity to add the observations to
    pub entity_name: String,
    /// An array of observation contents to add
    pub contents: Vec<String>,
}

/// Observations to delete from one entity.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Deletion {
    /// The name of the entity containing the observations
    pub entity_name: String,
    /// An array of observations to delete
    pub observations: Vec<String>,
}

/// What `add_observations` added to one entity.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Added {
    /// The entity.
    pub entity_name: String,
    /// The observations it did not hold yet.
    pub added_observations: Vec<String>,
}

/// A part of the graph: entities and relations, and where the next page
/// starts when there is more.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(schemars::JsonSchema))]
pub struct Graph {
    /// Entities.
    pub entities: Vec<Entity>,
    /// Relations.
    pub relations: Vec<Relation>,
    /// Pass it as `cursor` for the next page; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// Why a call of the graph did nothing, or not all it was asked.
#[derive(Debug)]
pub enum Error {
    /// The message the reference server gives, for example `Entity with
    /// name X not found`; nothing was written.
    Refused(String),
    /// The engine answered a write REJECTED; the reason is in the audit
    /// trail. The writes before it in the call stand.
    Rejected(String),
    /// The store or the engine failed.
    Failed(anyhow::Error),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Refused(why) | Error::Rejected(why) => f.write_str(why),
            Error::Failed(error) => write!(f, "{error:#}"),
        }
    }
}

impl From<anyhow::Error> for Error {
    fn from(error: anyhow::Error) -> Self {
        Error::Failed(error)
    }
}

type Result<T> = std::result::Result<T, Error>;

/// What an entity FACT's properties hold.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct EntityProperties {
    entity_type: String,
    observations: Vec<String>,
    #[serde(
        default,
        rename = "deleted_at",
        skip_serializing_if = "Option::is_none"
    )]
    deleted_at: Option<i64>,
}

/// An entity FACT as the graph reads and writes it: its properties as
/// their JSON text.
type EntityFact = json::Entity<String>;
/// A relationship FACT as the graph reads and writes it.
type RelationFact = json::Relationship<String>;
/// A FACT's payload as the graph reads and writes it.
type Payload = FactPayload<String>;

/// A FACT of the graph's namespace as read: its key and payload.
struct Found {
    key: String,
    payload: Payload,
}

/// An entity FACT of the graph as stored.
struct StoredEntity {
    entity: EntityFact,
    properties: EntityProperties,
}

impl StoredEntity {
    fn current(&self) -> bool {
        self.properties.deleted_at.is_none()
    }

    fn answer(&self) -> Entity {
        Entity {
            name: self.entity.name.clone(),
            entity_type: self.properties.entity_type.clone(),
            observations: self.properties.observations.clone(),
        }
    }
}

/// The key of the entity named `name`: a readable part (its name in lower
/// case, letters and digits, other runs as `-`) and 64 bits of XXH3 of the
/// exact name, so names that differ only in case or punctuation are apart.
pub fn entity_key(name: &str) -> String {
    let slug = squeezed(name, SLUG_BYTES, false, '-');
    let hash = xxhash_rust::xxh3::xxh3_64(name.as_bytes());
    if slug.is_empty() {
        format!("{ENTITIES}.{hash:016x}")
    } else {
        format!("{ENTITIES}.{slug}-{hash:016x}")
    }
}

/// `text` as its ASCII letters and digits in one case (upper or lower),
/// every run of anything else as one `separator`, none at either end; at
/// most `max` bytes.
fn squeezed(text: &str, max: usize, upper: bool, separator: char) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if out.len() >= max {
            break;
        }
        let c = if upper {
            c.to_ascii_uppercase()
        } else {
            c.to_ascii_lowercase()
        };
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else if !out.is_empty() && !out.ends_with(separator) {
            out.push(separator);
        }
    }
    while out.ends_with(separator) {
        out.pop();
    }
    out
}

/// The key of a relation: 128 bits of XXH3 of its two names and its type.
pub fn relation_key(relation: &Relation) -> String {
    let mut bytes = Vec::new();
    for part in [&relation.from, &relation.relation_type, &relation.to] {
        bytes.extend_from_slice(&(part.len() as u64).to_le_bytes());
        bytes.extend_from_slice(part.as_bytes());
    }
    format!("{RELATIONS}.{:032x}", xxhash_rust::xxh3::xxh3_128(&bytes))
}

/// The nearest of Engram's five entity types to a reference type: the type
/// itself in any case, a few common words for them, and `product` (a thing)
/// for the rest. The reference type is kept as given beside it.
pub fn engram_type(entity_type: &str) -> EntityType {
    match entity_type.trim().to_lowercase().as_str() {
        "person" | "people" | "human" | "user" | "individual" => EntityType::Person,
        "organization" | "organisation" | "company" | "org" | "team" | "institution" => {
            EntityType::Organization
        }
        "place" | "location" | "city" | "country" | "region" | "address" => EntityType::Place,
        "event" | "meeting" | "occasion" => EntityType::Event,
        _ => EntityType::Product,
    }
}

/// A reference relation type in Engram's form: upper case letters, digits
/// and `_` (`works at` is `WORKS_AT`), at most 64 bytes; `RELATED_TO` when
/// nothing of it is left. The type as given is kept beside it.
pub fn relationship_type(relation_type: &str) -> String {
    let kind = squeezed(relation_type, TYPE_BYTES, true, '_');
    if kind.is_empty() {
        "RELATED_TO".to_owned()
    } else {
        kind
    }
}

/// The relationship FACT of a reference relation, true from `valid_at`:
/// the exact names and type kept in its properties.
fn relationship_of(relation: &Relation, valid_at: i64) -> RelationFact {
    json::Relationship {
        from_entity: entity_key(&relation.from),
        to_entity: entity_key(&relation.to),
        relationship_type: relationship_type(&relation.relation_type),
        valid_at,
        invalid_at: None,
        properties: json!({
            "from": relation.from,
            "to": relation.to,
            "relationType": relation.relation_type,
        })
        .to_string(),
        source_memories: Vec::new(),
    }
}

/// A relation as named in what a refused write says.
fn described(relation: &Relation) -> String {
    format!(
        "relation {:?} {:?} {:?}",
        relation.from, relation.relation_type, relation.to
    )
}

/// `entity` with `properties` as its properties' JSON text.
fn with_properties(entity: EntityFact, properties: &EntityProperties) -> EntityFact {
    json::Entity {
        // A struct of strings and numbers always serializes.
        properties: serde_json::to_string(properties).unwrap_or_default(),
        ..entity
    }
}

/// The graph of one domain, written by `component` (COGNITION online,
/// MAINTENANCE for an import).
pub struct KnowledgeGraph<'a, D: Domain> {
    domain: &'a mut D,
    agent: String,
    component: Component,
}

impl<'a, D: Domain> KnowledgeGraph<'a, D> {
    /// The graph of `domain`, opened for `agent`.
    pub fn new(domain: &'a mut D, agent: &str, component: Component) -> Self {
        Self {
            domain,
            agent: agent.to_owned(),
            component,
        }
    }

    fn now(&self) -> i64 {
        self.domain
            .time()
            .unwrap_or_else(engram_model::system_time_ms)
    }

    fn request_id(&mut self, what: &str) -> Result<String> {
        Ok(engram_surface::turns::fresh_request_id(
            &format!("kg-{what}"),
            self.domain.entropy()?,
        ))
    }

    /// Runs `f` holding the domain's write lock.
    fn exclusively<T>(
        &mut self,
        f: impl FnOnce(&mut KnowledgeGraph<'_, D>) -> Result<T>,
    ) -> Result<T> {
        let agent = self.agent.clone();
        let component = self.component;
        self.domain.exclusively(|domain| {
            f(&mut KnowledgeGraph {
                domain,
                agent,
                component,
            })
        })?
    }

    fn read_key(&mut self, key: &str) -> Result<Option<Found>> {
        let request = json::ReadRequest {
            record_type: json::RecordType::Fact,
            selector: json::Selector::ByKey {
                key: key.to_owned(),
            },
            request_id: self.request_id("read")?,
        };
        let answer = Engine::read(self.domain, request)?;
        facts(answer, |error| {
            Error::Failed(anyhow::anyhow!("reading {key} was refused: {error:?}"))
        })
        .map(|found| found.into_iter().next())
    }

    /// The entity FACT named `name`, current or deleted.
    fn stored_entity(&mut self, name: &str) -> Result<Option<StoredEntity>> {
        let key = entity_key(name);
        let Some(fact) = self.read_key(&key)? else {
            return Ok(None);
        };
        match entity_of(fact.payload) {
            Some(stored) if stored.entity.name == name => Ok(Some(stored)),
            Some(stored) => Err(Error::Refused(format!(
                "Entity names {name:?} and {:?} share the key {key}; rename one",
                stored.entity.name
            ))),
            None => Err(Error::Refused(format!(
                "{key} holds something other than an entity of the graph"
            ))),
        }
    }

    /// The relation FACT of `relation`: its payload, if there is one.
    fn stored_relation(&mut self, relation: &Relation) -> Result<Option<RelationFact>> {
        let key = relation_key(relation);
        Ok(self.read_key(&key)?.and_then(|f| match f.payload {
            FactPayload::Relationship(r) => Some(r),
            _ => None,
        }))
    }

    fn write(&mut self, key: String, payload: Payload, what: &str) -> Result<()> {
        let request_id = self.request_id("write")?;
        let request = json::WriteRequest {
            record: record(key, payload)?,
            source: json::Source {
                agent_id: self.agent.clone(),
                component: self.component,
                actor: Actor::External,
            },
            request_id: request_id.clone(),
        };
        match Engine::write(self.domain, request)? {
            json::WriteAnswer::Accepted { .. } => Ok(()),
            json::WriteAnswer::Rejected => Err(Error::Rejected(format!(
                "{what}: the write was REJECTED (request {request_id}; the reason is in the audit trail)"
            ))),
        }
    }

    fn write_entity(&mut self, entity: EntityFact, properties: &EntityProperties) -> Result<()> {
        let key = entity_key(&entity.name);
        let what = format!("entity {:?}", entity.name);
        let entity = with_properties(entity, properties);
        self.write(key, FactPayload::Entity(entity), &what)
    }

    /// The entity FACT a write of `entity` makes, on top of `before`.
    fn entity_record(&self, entity: &Entity, before: Option<&StoredEntity>) -> EntityFact {
        let now = self.now();
        json::Entity {
            name: entity.name.clone(),
            entity_type: engram_type(&entity.entity_type),
            properties: String::new(),
            first_seen: before.map_or(now, |b| b.entity.first_seen.min(now)),
            last_mentioned: now,
            mention_count: before.map_or(1, |b| b.entity.mention_count.saturating_add(1)),
            source_memories: Vec::new(),
        }
    }

    /// Creates the entities whose names the graph does not hold: the ones
    /// created. An entity that was deleted is created anew.
    pub fn create_entities(&mut self, entities: &[Entity]) -> Result<Vec<Entity>> {
        self.exclusively(|graph| {
            let mut created = Vec::new();
            for entity in entities {
                let before = graph.stored_entity(&entity.name)?;
                if before.as_ref().is_some_and(StoredEntity::current) {
                    continue;
                }
                let record = graph.entity_record(entity, before.as_ref());
                let observations = distinct(&entity.observations);
                let properties = EntityProperties {
                    entity_type: entity.entity_type.clone(),
                    observations: observations.clone(),
                    deleted_at: None,
                };
                graph.write_entity(record, &properties)?;
                created.push(Entity {
                    observations,
                    ..entity.clone()
                });
            }
            Ok(created)
        })
    }

    /// Creates the relations the graph does not hold: the ones created.
    pub fn create_relations(&mut self, relations: &[Relation]) -> Result<Vec<Relation>> {
        self.exclusively(|graph| {
            let mut created = Vec::new();
            for relation in relations {
                if graph
                    .stored_relation(relation)?
                    .is_some_and(|r| r.invalid_at.is_none())
                {
                    continue;
                }
                let payload = FactPayload::Relationship(relationship_of(relation, graph.now()));
                graph.write(relation_key(relation), payload, &described(relation))?;
                created.push(relation.clone());
            }
            Ok(created)
        })
    }

    /// Adds to each entity the observations it does not hold yet. An entity
    /// that does not exist refuses the call before anything is written.
    pub fn add_observations(&mut self, additions: &[NewObservations]) -> Result<Vec<Added>> {
        self.exclusively(|graph| {
            // Each entity read once, all before anything is written.
            let mut entities = std::collections::HashMap::new();
            for addition in additions {
                let name = addition.entity_name.as_str();
                if entities.contains_key(name) {
                    continue;
                }
                match graph.stored_entity(name)?.filter(StoredEntity::current) {
                    Some(stored) => entities.insert(name, stored),
                    None => return Err(not_found(name)),
                };
            }
            let mut results = Vec::new();
            for addition in additions {
                let stored = entities
                    .get_mut(addition.entity_name.as_str())
                    .expect("every entity was read above");
                let mut added = Vec::new();
                for content in &addition.contents {
                    if !stored.properties.observations.contains(content) {
                        stored.properties.observations.push(content.clone());
                        added.push(content.clone());
                    }
                }
                if !added.is_empty() {
                    stored.entity = graph.entity_record(&stored.answer(), Some(stored));
                    graph.write_entity(stored.entity.clone(), &stored.properties)?;
                }
                results.push(Added {
                    entity_name: addition.entity_name.clone(),
                    added_observations: added,
                });
            }
            Ok(results)
        })
    }

    /// Deletes entities: each gets a version with no observations, marked
    /// deleted, and every open relation from or to it is closed. Names the
    /// graph does not hold are passed over. Answers how many entities and
    /// relations were closed.
    pub fn delete_entities(&mut self, names: &[String]) -> Result<(u32, u32)> {
        self.exclusively(|graph| {
            let (mut entities, mut relations) = (0, 0);
            for name in names {
                if let Some(stored) = graph.stored_entity(name)?
                    && stored.current()
                {
                    let now = graph.now();
                    let record = json::Entity {
                        last_mentioned: now.max(stored.entity.first_seen),
                        ..stored.entity.clone()
                    };
                    let properties = EntityProperties {
                        entity_type: stored.properties.entity_type.clone(),
                        observations: Vec::new(),
                        deleted_at: Some(now),
                    };
                    graph.write_entity(record, &properties)?;
                    entities += 1;
                }
                for relation in graph.relations_of(name)? {
                    if graph.close_relation(&relation)? {
                        relations += 1;
                    }
                }
            }
            Ok((entities, relations))
        })
    }

    /// Deletes observations from entities: a new version without them.
    /// Entities and observations the graph does not hold are passed over.
    /// Answers how many observations went.
    pub fn delete_observations(&mut self, deletions: &[Deletion]) -> Result<u32> {
        self.exclusively(|graph| {
            let mut removed = 0;
            for deletion in deletions {
                let Some(mut stored) = graph.stored_entity(&deletion.entity_name)? else {
                    continue;
                };
                if !stored.current() {
                    continue;
                }
                let before = stored.properties.observations.len();
                stored
                    .properties
                    .observations
                    .retain(|o| !deletion.observations.contains(o));
                let gone = before - stored.properties.observations.len();
                if gone > 0 {
                    let record = graph.entity_record(&stored.answer(), Some(&stored));
                    graph.write_entity(record, &stored.properties)?;
                    removed += u32::try_from(gone).unwrap_or(u32::MAX);
                }
            }
            Ok(removed)
        })
    }

    /// Deletes relations: each open one is closed in valid time. Answers how
    /// many were closed.
    pub fn delete_relations(&mut self, relations: &[Relation]) -> Result<u32> {
        self.exclusively(|graph| {
            let mut closed = 0;
            for relation in relations {
                if graph.close_relation(relation)? {
                    closed += 1;
                }
            }
            Ok(closed)
        })
    }

    /// Closes `relation` in valid time, if it is open: whether it was.
    fn close_relation(&mut self, relation: &Relation) -> Result<bool> {
        let Some(stored) = self.stored_relation(relation)? else {
            return Ok(false);
        };
        if stored.invalid_at.is_some() {
            return Ok(false);
        }
        let now = self.now().max(stored.valid_at);
        let what = described(relation);
        let closed = json::Relationship {
            invalid_at: Some(now),
            ..stored
        };
        self.write(
            relation_key(relation),
            FactPayload::Relationship(closed),
            &what,
        )?;
        Ok(true)
    }

    /// The open relations from or to the entity named `name`, outgoing
    /// first, at most [`PAGE`] index entries each way.
    fn relations_of(&mut self, name: &str) -> Result<Vec<Relation>> {
        let mut found = Vec::new();
        for incoming in [false, true] {
            let request_id = self.request_id("relations")?;
            let args = RelationshipsArgs {
                request_id: None,
                entity: entity_key(name),
                incoming,
                types: Vec::new(),
                valid_at: None,
                limit: PAGE,
            };
            let answer = Engine::relationships(self.domain, request_id, args)?;
            let facts = facts(answer, |e| {
                Error::Failed(anyhow::anyhow!("relations of {name:?}: {e:?}"))
            })?;
            found.extend(facts.into_iter().filter_map(|f| open_relation(f.payload)));
        }
        Ok(found)
    }

    /// The open relations with an end among `entities`, each once.
    fn relations_among(&mut self, entities: &[Entity]) -> Result<Vec<Relation>> {
        let mut seen = std::collections::HashSet::new();
        let mut relations = Vec::new();
        for entity in entities {
            for relation in self.relations_of(&entity.name)? {
                if seen.insert(relation_key(&relation)) {
                    relations.push(relation);
                }
            }
        }
        Ok(relations)
    }

    /// One page of the namespace `kg` after `after`: entities, then relations.
    fn page(&mut self, namespace: &str, limit: u32, after: Option<&str>) -> Result<Vec<Found>> {
        let request_id = self.request_id("list")?;
        let args = ListArgs {
            request_id: None,
            namespace: namespace.split('.').map(str::to_owned).collect(),
            limit,
            after: after.map(str::to_owned),
        };
        let answer = Engine::list(self.domain, request_id, args)?;
        facts(answer, |e| {
            Error::Refused(format!("reading the graph was refused: {e:?}"))
        })
    }

    /// The graph, one page of at most `limit` entities and relations (deleted
    /// ones are passed over but count), in key order from `cursor`.
    pub fn read_graph(&mut self, limit: u32, cursor: Option<&str>) -> Result<Graph> {
        let limit = checked_limit(limit)?;
        let page = self.page("kg", limit, cursor)?;
        let full = page.len() == limit as usize;
        let mut answer = Graph {
            next_cursor: full.then(|| page.last().map(|f| f.key.clone())).flatten(),
            ..Graph::default()
        };
        for fact in page {
            let payload = fact.payload;
            if matches!(payload, FactPayload::Relationship(_)) {
                answer.relations.extend(open_relation(payload));
            } else if let Some(stored) = entity_of(payload).filter(StoredEntity::current) {
                answer.entities.push(stored.answer());
            }
        }
        Ok(answer)
    }

    /// The entities whose name, type or an observation holds `query`
    /// (ignoring case), at most `limit` of them, looking at most at
    /// [`PAGE`] entities after `cursor`; and the open relations with an end
    /// among them. `next_cursor` is where the search goes on, when it
    /// stopped before the last entity.
    pub fn search_nodes(&mut self, query: &str, limit: u32, cursor: Option<&str>) -> Result<Graph> {
        let limit = checked_limit(limit)?;
        let query = query.to_lowercase();
        if cursor.is_some_and(|c| !c.starts_with(ENTITIES)) {
            return Ok(Graph::default());
        }
        let page = self.page(ENTITIES, PAGE, cursor)?;
        let mut next = (page.len() == PAGE as usize)
            .then(|| page.last().map(|f| f.key.clone()))
            .flatten();
        let mut entities = Vec::new();
        for fact in page {
            let key = fact.key;
            if let Some(stored) = entity_of(fact.payload).filter(StoredEntity::current) {
                let entity = stored.answer();
                if matches(&entity, &query) {
                    entities.push(entity);
                    if entities.len() == limit as usize {
                        next = Some(key);
                        break;
                    }
                }
            }
        }
        let relations = self.relations_among(&entities)?;
        Ok(Graph {
            entities,
            relations,
            next_cursor: next,
        })
    }

    /// The entities named, those the graph holds, and the open relations
    /// with an end among them.
    pub fn open_nodes(&mut self, names: &[String]) -> Result<Graph> {
        let mut entities = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for name in names {
            if seen.insert(name.as_str())
                && let Some(stored) = self.stored_entity(name)?.filter(StoredEntity::current)
            {
                entities.push(stored.answer());
            }
        }
        let relations = self.relations_among(&entities)?;
        Ok(Graph {
            entities,
            relations,
            next_cursor: None,
        })
    }

    /// Merges a reference graph into this one: entities it does not hold are
    /// created, observations they lack added, relations it does not hold
    /// created. Answers how many of each were new; merging the same graph
    /// again writes nothing.
    pub fn merge(&mut self, items: &[(usize, Item)]) -> Result<Merged> {
        self.exclusively(|graph| {
            let mut merged = Merged::default();
            for (_, item) in items {
                match item {
                    Item::Entity(entity) => {
                        merged.entities += 1;
                        // Created when absent or deleted; else it gets the observations it lacks.
                        let created = graph.create_entities(std::slice::from_ref(entity))?;
                        merged.new_entities += created.len();
                        merged.new_observations +=
                            created.iter().map(|e| e.observations.len()).sum::<usize>();
                        if created.is_empty() {
                            let added = graph.add_observations(&[NewObservations {
                                entity_name: entity.name.clone(),
                                contents: entity.observations.clone(),
                            }])?;
                            merged.new_observations += added
                                .iter()
                                .map(|a| a.added_observations.len())
                                .sum::<usize>();
                        }
                    }
                    Item::Relation(relation) => {
                        merged.relations += 1;
                        merged.new_relations += graph
                            .create_relations(std::slice::from_ref(relation))?
                            .len();
                    }
                }
            }
            Ok(merged)
        })
    }

    /// Checks that every item makes a record the engine would store: each
    /// entity FACT (with all its observations) and relationship FACT within
    /// the host's record size. The first that does not, by its line, and
    /// why.
    pub fn check(&self, items: &[(usize, Item)]) -> Option<(usize, String)> {
        for (line, item) in items {
            let (key, payload) = match item {
                Item::Entity(entity) => {
                    let properties = EntityProperties {
                        entity_type: entity.entity_type.clone(),
                        observations: entity.observations.clone(),
                        deleted_at: None,
                    };
                    let record = with_properties(self.entity_record(entity, None), &properties);
                    (entity_key(&entity.name), FactPayload::Entity(record))
                }
                Item::Relation(relation) => (
                    relation_key(relation),
                    FactPayload::Relationship(relationship_of(relation, 0)),
                ),
            };
            let why = match record(key, payload) {
                Ok(record) => self.domain.oversized(&record),
                Err(error) => Some(error.to_string()),
            };
            if let Some(why) = why {
                return Some((*line, why));
            }
        }
        None
    }
}

/// How many items of a reference graph [`KnowledgeGraph::merge`] saw, and
/// how many were new.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Merged {
    /// Entity lines.
    pub entities: usize,
    /// Entities created.
    pub new_entities: usize,
    /// Observations added, to new entities and to ones held before.
    pub new_observations: usize,
    /// Relation lines.
    pub relations: usize,
    /// Relations created.
    pub new_relations: usize,
}

/// One line of a reference server's `memory.jsonl`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum Item {
    /// `{"type":"entity","name","entityType","observations"}`
    Entity(Entity),
    /// `{"type":"relation","from","to","relationType"}`
    Relation(Relation),
}

/// Reads a reference server's `memory.jsonl`: each item with the number of
/// its line, or the first line that is not one, as `line N: why` (blank
/// lines are passed over).
pub fn parse_jsonl(text: &str) -> std::result::Result<Vec<(usize, Item)>, String> {
    let mut items = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let number = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let item: Item = serde_json::from_str(line).map_err(|e| format!("line {number}: {e}"))?;
        let empty = match &item {
            Item::Entity(e) => e.name.is_empty().then_some("the entity has no name"),
            Item::Relation(r) => (r.from.is_empty() || r.to.is_empty())
                .then_some("the relation lacks an entity name"),
        };
        if let Some(why) = empty {
            return Err(format!("line {number}: {why}"));
        }
        items.push((number, item));
    }
    Ok(items)
}

/// The answer of a deletion: the reference's `{"success","message"}`, its
/// message saying what Engram did instead of erasing.
pub fn deleted(what: &str, closed: impl std::fmt::Display) -> Value {
    json!({
        "success": true,
        "message": format!(
            "{what} deleted successfully ({closed}): no longer current, kept in history; \
             only `engram maintenance forget` erases for good"
        ),
    })
}

/// The FACTs of a read's answer, as the graph reads them; a refused read
/// is the error `refused` makes of it.
fn facts(
    answer: ReadAnswer,
    refused: impl FnOnce(json::ReadFailure) -> Error,
) -> Result<Vec<Found>> {
    match answer {
        ReadAnswer::Records { records } => Ok(records
            .into_iter()
            .filter_map(|record| match record {
                StoredRecord::Fact { key, payload, .. } => Some(Found {
                    key,
                    payload: owned(payload),
                }),
                _ => None,
            })
            .collect()),
        ReadAnswer::Error { error } => Err(refused(error)),
    }
}

/// A stored FACT's payload with its properties as their JSON text.
fn owned(payload: json::StoredFactPayload) -> Payload {
    match payload {
        FactPayload::Semantic(memory) => FactPayload::Semantic(memory),
        FactPayload::Procedural(rule) => FactPayload::Procedural(rule),
        FactPayload::Entity(entity) => {
            let properties = entity.properties.get().to_owned();
            FactPayload::Entity(entity.with_properties(properties))
        }
        FactPayload::Relationship(relationship) => {
            let properties = relationship.properties.get().to_owned();
            FactPayload::Relationship(relationship.with_properties(properties))
        }
    }
}

/// The FACT record a write of `payload` under `key` carries.
fn record(key: String, payload: Payload) -> Result<Record> {
    let object = |text: String| {
        Object::from_text(&text).ok_or_else(|| {
            Error::Failed(anyhow::anyhow!("{key}: properties that are no JSON object"))
        })
    };
    let payload = match payload {
        FactPayload::Semantic(memory) => FactPayload::Semantic(memory),
        FactPayload::Procedural(rule) => FactPayload::Procedural(rule),
        FactPayload::Entity(mut entity) => {
            let properties = object(std::mem::take(&mut entity.properties))?;
            FactPayload::Entity(entity.with_properties(properties))
        }
        FactPayload::Relationship(mut relationship) => {
            let properties = object(std::mem::take(&mut relationship.properties))?;
            FactPayload::Relationship(relationship.with_properties(properties))
        }
    };
    Ok(Record::Fact { key, payload })
}

fn not_found(name: &str) -> Error {
    Error::Refused(format!("Entity with name {name} not found"))
}

fn checked_limit(limit: u32) -> Result<u32> {
    if (1..=MAX_LIMIT).contains(&limit) {
        Ok(limit)
    } else {
        Err(Error::Refused(format!(
            "limit must be 1 to {MAX_LIMIT}, not {limit}"
        )))
    }
}

/// `observations` without repeats, in order.
fn distinct(observations: &[String]) -> Vec<String> {
    let mut kept: Vec<String> = Vec::with_capacity(observations.len());
    for o in observations {
        if !kept.contains(o) {
            kept.push(o.clone());
        }
    }
    kept
}

fn matches(entity: &Entity, query: &str) -> bool {
    entity.name.to_lowercase().contains(query)
        || entity.entity_type.to_lowercase().contains(query)
        || entity
            .observations
            .iter()
            .any(|o| o.to_lowercase().contains(query))
}

/// An entity FACT of the graph, if `payload` is one.
fn entity_of(payload: Payload) -> Option<StoredEntity> {
    match payload {
        FactPayload::Entity(entity) => {
            let properties = serde_json::from_str(&entity.properties).ok()?;
            Some(StoredEntity { entity, properties })
        }
        _ => None,
    }
}

/// A relation of the graph, if `payload` is one and it is open.
fn open_relation(payload: Payload) -> Option<Relation> {
    match payload {
        FactPayload::Relationship(r) if r.invalid_at.is_none() => {
            serde_json::from_str(&r.properties).ok()
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_normalized_fact_keys_and_tell_names_apart() {
        let keys = ["Alice", "alice", "Alice Smith", "Alice_Smith", "日本", ""].map(entity_key);
        for key in &keys {
            assert!(key.len() <= 256, "{key}");
            assert!(
                key.split('.').all(|s| !s.is_empty()
                    && s.bytes()
                        .all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-'))),
                "{key}"
            );
        }
        let distinct: std::collections::HashSet<_> = keys.iter().collect();
        assert_eq!(distinct.len(), keys.len());
        assert!(keys[2].starts_with("kg.entities.alice-smith-"));
        assert_eq!(
            entity_key(&"x".repeat(10_000)).len(),
            ENTITIES.len() + 1 + 48 + 1 + 16
        );
    }

    #[test]
    fn relation_types_take_engrams_form() {
        assert_eq!(relationship_type("works at"), "WORKS_AT");
        assert_eq!(relationship_type("works_at"), "WORKS_AT");
        assert_eq!(relationship_type("--"), "RELATED_TO");
        assert_eq!(relationship_type(&"a".repeat(500)).len(), 64);
    }

    #[test]
    fn a_line_that_is_no_item_is_named_by_its_number() {
        let text = "{\"type\":\"entity\",\"name\":\"A\",\"entityType\":\"person\",\"observations\":[]}\n\n{\"type\":\"relation\",\"from\":\"A\"}\n";
        assert!(parse_jsonl(text).unwrap_err().starts_with("line 3: "));
        let unknown = "{\"type\":\"node\",\"name\":\"A\"}";
        assert!(parse_jsonl(unknown).unwrap_err().starts_with("line 1: "));
    }
}
