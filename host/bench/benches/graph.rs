//! Traversal latency (median and p99) over a generated graph, through the
//! engine on a SQLite file: 100,000 entities and 1,000,000 relationships by
//! default, or `cargo bench --bench graph -- N` for N entities and 10·N
//! relationships.
//!
//! Every entity and relationship is written through `graph.put` (set-up,
//! with `synchronous=NORMAL`); the timed part is 300 breadth-first and 300
//! depth-first walks from seeded random entities, bounded by depth 3, 100
//! nodes and 1,000 edge-index entries, each checked against its bounds.

use engram::graph::{EdgeDirection, PutRequest, TraversalOrder, TraverseRequest};
use engram::io::WriteResult;
use engram::types::*;
use engram::{Config, Engram, Mode, SqliteBackend, SqliteOptions, Synchronous};
use std::sync::Arc;
use std::time::{Duration, Instant};

const TYPES: [&str; 4] = ["KNOWS", "VISITED", "PREFERS", "PURCHASED"];

/// A small seeded generator, so every run builds the same graph.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % n
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// Puts `value` as FACT `<namespace><i>` of `namespace`; it must be
/// ACCEPTED.
fn put(
    domain: &mut engram::Domain,
    namespace: &str,
    i: usize,
    value: FactPayload,
    source: &WriteSource,
) -> anyhow::Result<()> {
    let request = PutRequest {
        namespace: vec![namespace.into()],
        id: format!("{namespace}{i}"),
        value,
        source: source.clone(),
        request_id: format!("{namespace}{i}"),
    };
    anyhow::ensure!(matches!(domain.put(&request)?, WriteResult::Accepted(_)));
    Ok(())
}

/// Puts `entities` entity FACTs under `e`, a quarter each of four types.
fn put_entities(
    domain: &mut engram::Domain,
    entities: usize,
    source: &WriteSource,
) -> anyhow::Result<()> {
    let kinds = [
        EntityType::Person,
        EntityType::Place,
        EntityType::Organization,
        EntityType::Product,
    ];
    for i in 0..entities {
        let value = FactPayload::Entity(Entity {
            name: format!("entity {i}"),
            entity_type: kinds[i % kinds.len()],
            properties: "{}".into(),
            first_seen: 0,
            last_mentioned: 0,
            mention_count: 1,
            source_memories: vec![],
        });
        put(domain, "e", i, value, source)?;
    }
    Ok(())
}

/// Puts `relationships` relationship FACTs under `r`, from each entity in
/// turn to one at random; a quarter of them closed.
fn put_relationships(
    domain: &mut engram::Domain,
    entities: usize,
    relationships: usize,
    source: &WriteSource,
    rng: &mut Lcg,
) -> anyhow::Result<()> {
    for i in 0..relationships {
        let from = i % entities;
        let to = rng.below(entities);
        let valid_at = rng.below(1000) as i64;
        let value = FactPayload::Relationship(Relationship {
            from_entity: format!("e.e{from}"),
            to_entity: format!("e.e{to}"),
            relationship_type: TYPES[rng.below(TYPES.len())].into(),
            valid_at,
            invalid_at: (rng.below(4) == 0).then_some(valid_at + 500),
            properties: "{}".into(),
            source_memories: vec![],
        });
        put(domain, "r", i, value, source)?;
    }
    Ok(())
}

/// Fills the store at `path`: set-up, not measured, so no disk flush per
/// write.
fn fill(
    engram: &Engram,
    path: &std::path::Path,
    entities: usize,
    rng: &mut Lcg,
) -> anyhow::Result<()> {
    let source = WriteSource {
        agent_id: "bench".into(),
        component: SourceComponent::Cognition,
        actor: SourceActor::System,
    };
    let fast = SqliteOptions {
        synchronous: Synchronous::Normal,
        ..SqliteOptions::default()
    };
    let store = Arc::new(SqliteBackend::open_with(path, &fast)?);
    let mut domain = engram.open("bench", Mode::Online, store.clone(), store)?;
    let start = Instant::now();
    put_entities(&mut domain, entities, &source)?;
    put_relationships(&mut domain, entities, entities * 10, &source, rng)?;
    eprintln!(
        "# wrote {entities} entities and {} relationships in {:.1?}",
        entities * 10,
        start.elapsed()
    );
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let entities: usize = match std::env::args().skip(1).find(|a| !a.starts_with('-')) {
        Some(n) => n.parse()?,
        None => 100_000,
    };
    let relationships = entities * 10;
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("engram.db");
    let engram = Engram::with_config(Config::default())?;
    let mut rng = Lcg(7);
    fill(&engram, &path, entities, &mut rng)?;
    let store = Arc::new(SqliteBackend::open(&path)?);
    let mut domain = engram.open("bench", Mode::Online, store.clone(), store)?;
    println!("graph benchmark: {entities} entities, {relationships} relationships, SQLite WAL");
    for (order, name) in [
        (TraversalOrder::BreadthFirst, "breadth-first"),
        (TraversalOrder::DepthFirst, "depth-first"),
    ] {
        let mut latencies = Vec::new();
        let (mut nodes, mut edges) = (0, 0);
        for _ in 0..300 {
            let request = TraverseRequest {
                request_id: "walk".into(),
                start: format!("e.e{}", rng.below(entities)),
                order,
                direction: EdgeDirection::Outgoing,
                relationship_types: vec![],
                valid_at: None,
                max_depth: 3,
                max_nodes: 100,
                max_edges: 1000,
            };
            let start = Instant::now();
            let walk = domain
                .traverse(&request)?
                .map_err(|e| anyhow::anyhow!("{e:?}"))?;
            latencies.push(start.elapsed());
            anyhow::ensure!(walk.nodes.len() <= 100, "the node bound held");
            anyhow::ensure!(walk.edges.len() <= 1000, "the edge bound held");
            anyhow::ensure!(
                walk.nodes.iter().all(|n| n.depth <= 3),
                "the depth bound held"
            );
            nodes += walk.nodes.len();
            edges += walk.edges.len();
        }
        latencies.sort();
        println!(
            "{name:<14} depth 3, ≤100 nodes, ≤1000 edges: median {:>8.2?}  p99 {:>8.2?}  mean {:.1} nodes, {:.1} edges",
            percentile(&latencies, 0.5),
            percentile(&latencies, 0.99),
            nodes as f64 / 300.0,
            edges as f64 / 300.0
        );
    }
    Ok(())
}
