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

fn main() -> anyhow::Result<()> {
    let entities: usize = match std::env::args().skip(1).find(|a| !a.starts_with('-')) {
        Some(n) => n.parse()?,
        None => 100_000,
    };
    let relationships = entities * 10;
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("engram.db");
    let engram = Engram::with_config(Config::default())?;
    let source = WriteSource {
        agent_id: "bench".into(),
        component: SourceComponent::Cognition,
        actor: SourceActor::System,
    };
    let mut rng = Lcg(7);
    {
        let fast = SqliteOptions {
            synchronous: Synchronous::Normal,
            ..SqliteOptions::default()
        };
        let store = Arc::new(SqliteBackend::open_with(&path, &fast)?);
        let mut domain = engram.open("bench", Mode::Online, store.clone(), store)?;
        let start = Instant::now();
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
            let request = PutRequest {
                namespace: vec!["e".into()],
                id: format!("e{i}"),
                value,
                source: source.clone(),
                request_id: format!("e{i}"),
            };
            anyhow::ensure!(matches!(domain.put(&request)?, WriteResult::Accepted(_)));
        }
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
            let request = PutRequest {
                namespace: vec!["r".into()],
                id: format!("r{i}"),
                value,
                source: source.clone(),
                request_id: format!("r{i}"),
            };
            anyhow::ensure!(matches!(domain.put(&request)?, WriteResult::Accepted(_)));
        }
        eprintln!(
            "# wrote {entities} entities and {relationships} relationships in {:.1?}",
            start.elapsed()
        );
    }

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
