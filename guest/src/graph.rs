//! Entities and relationships in namespaces (MT-7) and their index-backed
//! lookups (MT-8), all of it FACT records under the IO contract.

use crate::bindings::engram::memory::persistence::Direction;
use crate::bindings::engram::memory::types::{
    EntityType, Fact, FactPayload, MemoryRecord, StoredFact,
};
use crate::bindings::exports::engram::memory::graph::{
    EdgeDirection, Guest, Node, PutRequest, RelationshipsRequest, Traversal, TraversalOrder,
    TraverseRequest,
};
use crate::bindings::exports::engram::memory::io::{ReadError, WriteRequest, WriteResult};
use crate::{
    Answer, Engine, Refused, Stored, answered, audited_fact_read, bounded, get, id_text, keys,
    load, load_facts, request_id_given, validate, write,
};
use std::collections::HashSet;

impl Guest for Engine {
    fn put(request: PutRequest) -> WriteResult {
        let key = namespaced(&request.namespace, Some(&request.id));
        let write_request = WriteRequest {
            record: MemoryRecord::Fact(Fact {
                key: key.clone().unwrap_or_default(),
                payload: request.value,
            }),
            source: request.source,
            request_id: request.request_id,
        };
        let answer = match key {
            Some(_) => write(&write_request),
            None => Err("the namespace or the id is not made of key segments (MT-7)".into()),
        };
        answered(&write_request, answer)
    }

    fn get(
        request_id: String,
        namespace: Vec<String>,
        id: String,
    ) -> Result<Option<StoredFact>, ReadError> {
        let answer = request_id_given(&request_id).and_then(|()| {
            let key = namespaced(&namespace, Some(&id)).ok_or_else(invalid_namespace)?;
            match get(&keys::fact_key(&key))? {
                Some(id) => Ok(fact(&id_text(id)?)?),
                None => Ok(None),
            }
        });
        audited_fact_read(&request_id, answer, |f| usize::from(f.is_some()))
    }

    fn list(
        request_id: String,
        namespace: Vec<String>,
        limit: u32,
        after: Option<String>,
    ) -> Result<Vec<StoredFact>, ReadError> {
        let answer = request_id_given(&request_id).and_then(|()| {
            let prefix = namespaced(&namespace, None).ok_or_else(invalid_namespace)?;
            let limit = bounded(limit)?;
            let (mut start, end) = keys::fact_key_prefix_range(&prefix);
            if let Some(after) = &after {
                if !after.starts_with(&prefix) || !validate::is_normalized_fact_key(after) {
                    return Err(Refused::new(
                        ReadError::InvalidKey,
                        format!("after: {after:?} is not a fact key of the namespace"),
                    ));
                }
                // The smallest key that follows it.
                start = keys::fact_key(after);
                start.push(0);
            }
            facts_in(&start, &end, limit)
        });
        audited_fact_read(&request_id, answer, Vec::len)
    }

    fn entities_of_type(
        request_id: String,
        entity_type: EntityType,
        limit: u32,
    ) -> Result<Vec<StoredFact>, ReadError> {
        let answer = request_id_given(&request_id).and_then(|()| {
            let limit = bounded(limit)?;
            let (start, end) =
                keys::entity_type_range(crate::writer::entity_type_byte(entity_type));
            facts_in(&start, &end, limit)
        });
        audited_fact_read(&request_id, answer, Vec::len)
    }

    fn traverse(request: TraverseRequest) -> Result<Traversal, ReadError> {
        let answer = request_id_given(&request.request_id).and_then(|()| traverse(&request));
        audited_fact_read(&request.request_id, answer, |t| {
            t.nodes.len() + t.edges.len()
        })
    }

    fn relationships_of(request: RelationshipsRequest) -> Result<Vec<StoredFact>, ReadError> {
        let answer =
            request_id_given(&request.request_id).and_then(|()| relationships_of(&request));
        audited_fact_read(&request.request_id, answer, Vec::len)
    }
}

/// The facts of a key range in key order, `limit` of them at most.
fn facts_in(start: &[u8], end: &[u8], limit: u32) -> Result<Vec<StoredFact>, Refused> {
    load_facts(start, end, limit, Direction::Ascending, &mut Answer::new())
}

fn relationships_of(request: &RelationshipsRequest) -> Result<Vec<StoredFact>, Refused> {
    entity_key(&request.entity)?;
    let mut budget = bounded(request.limit)?;
    edges(
        &request.entity,
        request.direction,
        &request.relationship_types,
        request.valid_at,
        &mut budget,
        &mut Answer::new(),
    )
}

/// Refuses an entity that is neither a normalized fact key nor a
/// pseudo-entity such as `USER` (upper-case letters, digits and `_`), as
/// `list` and `history` refuse a key that is not normalized (IO-R4).
fn entity_key(entity: &str) -> Result<(), Refused> {
    if validate::is_entity_ref(entity) {
        return Ok(());
    }
    Err(Refused::new(
        ReadError::InvalidKey,
        format!("{entity:?} is neither a normalized fact key nor an upper-case pseudo-entity"),
    ))
}

/// The relationships of `entity` in `direction`, of the given types (all
/// when none) and valid at a time when given, in index order, examining at
/// most `budget` index entries and taking them off it.
fn edges(
    entity: &str,
    direction: EdgeDirection,
    relationship_types: &[String],
    valid: Option<i64>,
    budget: &mut u32,
    answer: &mut Answer,
) -> Result<Vec<StoredFact>, Refused> {
    let direction = match direction {
        EdgeDirection::Outgoing => keys::OUTGOING,
        EdgeDirection::Incoming => keys::INCOMING,
    };
    let mut types: Vec<Option<&str>> = relationship_types
        .iter()
        .map(|t| Some(t.as_str()))
        .collect();
    types.sort();
    types.dedup();
    if types.is_empty() {
        types.push(None);
    }
    let mut found = Vec::new();
    for kind in types {
        if *budget == 0 {
            break;
        }
        let (start, end) = keys::edge_range(direction, entity, kind);
        let relationships = load_facts(&start, &end, *budget, Direction::Ascending, answer)?;
        *budget -= relationships.len() as u32;
        found.extend(
            relationships
                .into_iter()
                .filter(|relationship| valid.is_none_or(|at| valid_at(relationship, at))),
        );
    }
    Ok(found)
}

/// Walks from `request.start` within its bounds (MT-9).
fn traverse(request: &TraverseRequest) -> Result<Traversal, Refused> {
    entity_key(&request.start)?;
    let max_nodes = bounded(request.max_nodes)? as usize;
    let mut budget = bounded(request.max_edges)?;
    let ceiling = crate::domain::read_limit_ceiling().max(1);
    if request.max_depth > ceiling {
        return Err(Refused::new(
            ReadError::LimitOutOfBounds(ceiling),
            format!("max-depth {} is above {ceiling}", request.max_depth),
        ));
    }
    let mut walk = Walk {
        request,
        max_nodes,
        budget: &mut budget,
        seen: HashSet::new(),
        nodes: Vec::new(),
        edges: Vec::new(),
        answer: Answer::new(),
    };
    walk.visit(&request.start, 0)?;
    match request.order {
        TraversalOrder::BreadthFirst => walk.breadth_first()?,
        TraversalOrder::DepthFirst => walk.depth_first(&request.start, 0)?,
    }
    Ok(Traversal {
        nodes: walk.nodes,
        edges: walk.edges,
    })
}

/// A traversal in progress: what it has reached and what it may still read.
struct Walk<'a> {
    request: &'a TraverseRequest,
    max_nodes: usize,
    budget: &'a mut u32,
    seen: HashSet<String>,
    nodes: Vec<Node>,
    edges: Vec<StoredFact>,
    /// The bytes of every edge and entity read, kept or not.
    answer: Answer,
}

impl Walk<'_> {
    /// Adds a node unless it was seen or the node bound is reached.
    fn visit(&mut self, key: &str, depth: u32) -> Result<bool, Refused> {
        if self.nodes.len() >= self.max_nodes || self.seen.contains(key) {
            return Ok(false);
        }
        self.seen.insert(key.to_owned());
        let entity = if validate::is_normalized_fact_key(key) {
            match get(&keys::fact_key(key))? {
                Some(id) => fact(&id_text(id)?)?,
                None => None,
            }
        } else {
            None
        };
        self.nodes.push(Node {
            key: key.to_owned(),
            depth,
            entity,
        });
        Ok(true)
    }

    /// The relationships to follow from `key`, each with the key it leads to.
    fn neighbours(&mut self, key: &str) -> Result<Vec<(StoredFact, String)>, Refused> {
        let r = self.request;
        let found = edges(
            key,
            r.direction,
            &r.relationship_types,
            r.valid_at,
            self.budget,
            &mut self.answer,
        )?;
        Ok(found
            .into_iter()
            .filter_map(|edge| {
                let next = match (&edge.fact.payload, r.direction) {
                    (FactPayload::Relationship(rel), EdgeDirection::Outgoing) => {
                        rel.to_entity.clone()
                    }
                    (FactPayload::Relationship(rel), EdgeDirection::Incoming) => {
                        rel.from_entity.clone()
                    }
                    _ => return None,
                };
                Some((edge, next))
            })
            .collect())
    }

    /// Follows an edge: keeps it when it leads to a node of the answer.
    fn follow(&mut self, edge: StoredFact, next: &str, depth: u32) -> Result<bool, Refused> {
        let added = self.visit(next, depth)?;
        if added || self.seen.contains(next) {
            self.edges.push(edge);
        }
        Ok(added)
    }

    /// Whether the walk has reached its node bound: it ends there.
    fn full(&self) -> bool {
        self.nodes.len() >= self.max_nodes
    }

    fn breadth_first(&mut self) -> Result<(), Refused> {
        let mut next = 0;
        while next < self.nodes.len() && !self.full() {
            let (key, depth) = (self.nodes[next].key.clone(), self.nodes[next].depth);
            next += 1;
            if depth >= self.request.max_depth || *self.budget == 0 {
                continue;
            }
            for (edge, to) in self.neighbours(&key)? {
                if self.full() {
                    break;
                }
                self.follow(edge, &to, depth + 1)?;
            }
        }
        Ok(())
    }

    fn depth_first(&mut self, key: &str, depth: u32) -> Result<(), Refused> {
        if depth >= self.request.max_depth || *self.budget == 0 || self.full() {
            return Ok(());
        }
        for (edge, to) in self.neighbours(key)? {
            if self.full() {
                break;
            }
            if self.follow(edge, &to, depth + 1)? {
                self.depth_first(&to, depth + 1)?;
            }
        }
        Ok(())
    }
}

/// Whether a relationship held at valid time `at` (MT-6).
pub fn valid_at(fact: &StoredFact, at: i64) -> bool {
    match &fact.fact.payload {
        FactPayload::Relationship(r) => r.valid_at <= at && r.invalid_at.is_none_or(|end| at < end),
        _ => true,
    }
}

/// The key of `id` in `namespace`, or with no id the prefix of every key in
/// it (ending in a dot, so only whole segments match).
fn namespaced(namespace: &[String], id: Option<&str>) -> Option<String> {
    if namespace.is_empty() || !namespace.iter().all(|s| validate::is_key_segment(s)) {
        return None;
    }
    let mut key = namespace.join(".");
    key.push('.');
    if let Some(id) = id {
        if !validate::is_key_segment(id) {
            return None;
        }
        key.push_str(id);
        if key.len() > validate::MAX_FACT_KEY_LEN {
            return None;
        }
    }
    Some(key)
}

fn invalid_namespace() -> Refused {
    Refused::new(
        ReadError::InvalidKey,
        "the namespace or the id is not made of key segments (MT-7)",
    )
}

fn fact(id: &str) -> Result<Option<StoredFact>, Refused> {
    match load(id)? {
        Some(Stored::Fact(fact)) => Ok(Some(fact)),
        None => Ok(None),
        Some(_) => Err(format!("{id} is not a FACT").into()),
    }
}
