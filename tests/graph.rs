//! Entities and relationships in namespaces (MT-7) and their index-backed
//! lookups (MT-8), on the real component over every backend.

mod support;

use engram::Domain;
use engram::graph::{EdgeDirection, PutRequest, RelationshipsRequest};
use engram::io::{ReadError, WriteResult};
use engram::types::*;
use std::sync::atomic::Ordering;
use support::*;

fn ns(segments: &[&str]) -> Vec<String> {
    segments.iter().map(|s| s.to_string()).collect()
}

fn entity(name: &str, kind: EntityType) -> FactPayload {
    FactPayload::Entity(Entity {
        name: name.into(),
        entity_type: kind,
        properties: "{}".into(),
        first_seen: 1,
        last_mentioned: 2,
        mention_count: 1,
        source_memories: vec![],
    })
}

fn relation(from: &str, to: &str, kind: &str, valid: (i64, Option<i64>)) -> FactPayload {
    FactPayload::Relationship(Relationship {
        from_entity: from.into(),
        to_entity: to.into(),
        relationship_type: kind.into(),
        valid_at: valid.0,
        invalid_at: valid.1,
        properties: "{}".into(),
        source_memories: vec![],
    })
}

fn put(domain: &mut Domain, namespace: &[&str], id: &str, value: FactPayload) -> WriteResult {
    let request = PutRequest {
        namespace: ns(namespace),
        id: id.into(),
        value,
        source: source("alice"),
        request_id: format!("put-{}-{id}", namespace.join(".")),
    };
    domain.put(&request).unwrap()
}

fn keys_of(facts: &[StoredFact]) -> Vec<String> {
    facts.iter().map(|f| f.fact.key.clone()).collect()
}

backend_test! {
    fn mt_7_namespaces_match_whole_segments_only(fx) {
        // proves MT-7
        let mut alice = fx.open("alice");
        for (namespace, id) in [
            (["entities", "u1"], "sarah"),
            (["entities", "u10"], "bob"),
            (["entities", "u1"], "acme"),
            (["entities", "u1x"], "eve"),
        ] {
            assert!(matches!(
                put(&mut alice, &namespace, id, entity(id, EntityType::Person)),
                WriteResult::Accepted(_)
            ));
        }
        let listed = alice
            .list("l", &ns(&["entities", "u1"]), 10)
            .unwrap()
            .unwrap();
        assert_eq!(
            keys_of(&listed),
            ["entities.u1.acme", "entities.u1.sarah"],
            "{}",
            fx.name
        );
        let got = alice
            .get("g", &ns(&["entities", "u1"]), "sarah")
            .unwrap()
            .unwrap()
            .unwrap();
        assert_eq!(got.fact.key, "entities.u1.sarah");
        assert_eq!(
            alice
                .get("g", &ns(&["entities", "u1"]), "bob")
                .unwrap()
                .unwrap(),
            None,
            "bob is in u10"
        );
        assert_eq!(
            alice
                .list("l", &ns(&["entities"]), 10)
                .unwrap()
                .unwrap()
                .len(),
            4,
            "a parent namespace holds its children"
        );
        // The limit bounds the list.
        assert_eq!(
            alice
                .list("l", &ns(&["entities"]), 3)
                .unwrap()
                .unwrap()
                .len(),
            3
        );
        assert_eq!(
            alice.list("l", &ns(&["entities"]), 0).unwrap(),
            Err(ReadError::LimitOutOfBounds(CEILING))
        );
        // Namespaces and ids are key segments; anything else is refused.
        for (namespace, id) in [
            (ns(&["Entities"]), "x"),
            (ns(&["entities", "u.1"]), "x"),
            (ns(&[]), "x"),
            (ns(&["entities"]), "a.b"),
        ] {
            assert_eq!(
                alice.get("g", &namespace, id).unwrap(),
                Err(ReadError::InvalidKey),
                "{namespace:?} {id}"
            );
            let request = PutRequest {
                namespace: namespace.clone(),
                id: id.into(),
                value: entity("x", EntityType::Place),
                source: source("alice"),
                request_id: "bad".into(),
            };
            assert_eq!(alice.put(&request).unwrap(), WriteResult::Rejected);
        }
        // A put is a FACT write: readable by key through the IO, and idempotent.
        assert_eq!(
            records(&mut alice, RecordType::Fact, by_key("entities.u1.sarah")).len(),
            1
        );
        let again = put(
            &mut alice,
            &["entities", "u1"],
            "sarah",
            entity("sarah", EntityType::Person),
        );
        assert_eq!(
            again,
            WriteResult::Accepted(got.id.clone()),
            "{}: a replay names the same record",
            fx.name
        );
    }
}

backend_test! {
    fn mt_7_io_g6_a_namespace_pages_by_the_key_after_the_last(fx) {
        // proves MT-7, IO-G6: pages of at most `limit`, each starting after the
        // key that ended the one before, give every key once and in order; a
        // continuation outside the namespace is refused
        let mut alice = fx.open("alice");
        let mut written: Vec<String> = Vec::new();
        for i in 0..23 {
            let id = format!("p{:02}", (i * 7) % 23);
            put(
                &mut alice,
                &["people"],
                &id,
                entity(&id, EntityType::Person),
            );
            written.push(format!("people.{id}"));
        }
        // A nested namespace and a neighbour: the one in, the other out.
        put(
            &mut alice,
            &["people", "p05"],
            "kid",
            entity("kid", EntityType::Person),
        );
        written.push("people.p05.kid".into());
        put(
            &mut alice,
            &["peoplex"],
            "zed",
            entity("zed", EntityType::Person),
        );
        written.sort();
        let mut paged = Vec::new();
        let mut after: Option<String> = None;
        loop {
            let page = alice
                .list_after("l", &ns(&["people"]), 5, after.as_deref())
                .unwrap()
                .unwrap();
            assert!(page.len() <= 5);
            paged.extend(keys_of(&page));
            match page.last() {
                Some(last) if page.len() == 5 => after = Some(last.fact.key.clone()),
                _ => break,
            }
        }
        assert_eq!(paged, written, "{}", fx.name);
        // After the last key: an empty page, not an error.
        assert_eq!(
            alice
                .list_after("l", &ns(&["people"]), 5, Some("people.p22"))
                .unwrap()
                .unwrap()
                .len(),
            0
        );
        for outside in ["peoplex.zed", "other.a", "people", "People.p01", ""] {
            assert!(
                matches!(
                    alice
                        .list_after("l", &ns(&["people"]), 5, Some(outside))
                        .unwrap(),
                    Err(ReadError::InvalidKey)
                ),
                "{outside:?} ({})",
                fx.name
            );
        }
    }
}

fn relationships(
    domain: &mut Domain,
    entity: &str,
    direction: EdgeDirection,
    types: &[&str],
    valid_at: Option<i64>,
    limit: u32,
) -> Vec<String> {
    let request = RelationshipsRequest {
        request_id: "r".into(),
        entity: entity.into(),
        direction,
        relationship_types: types.iter().map(|t| t.to_string()).collect(),
        valid_at,
        limit,
    };
    keys_of(&domain.relationships_of(&request).unwrap().unwrap())
}

backend_test! {
    fn mt_8_lookups_find_entities_by_type_and_relationships_by_entity(fx) {
        // proves MT-8, MT-6, MT-5
        let faulty = Faulty::over(fx.backend.clone());
        let mut alice = fx.open_over("alice", faulty.clone());
        put(
            &mut alice,
            &["entities", "u1"],
            "sarah",
            entity("Sarah", EntityType::Person),
        );
        put(
            &mut alice,
            &["entities", "u1"],
            "tap",
            entity("TAP", EntityType::Organization),
        );
        put(
            &mut alice,
            &["entities", "u1"],
            "lisbon",
            entity("Lisbon", EntityType::Place),
        );
        put(
            &mut alice,
            &["entities", "u1"],
            "tom",
            entity("Tom", EntityType::Person),
        );
        let r = ["relationships", "u1"];
        put(
            &mut alice,
            &r,
            "knows-sarah",
            relation("USER", "entities.u1.sarah", "KNOWS", (10, None)),
        );
        put(
            &mut alice,
            &r,
            "knows-tom",
            relation("USER", "entities.u1.tom", "KNOWS", (10, Some(20))),
        );
        put(
            &mut alice,
            &r,
            "visited",
            relation("USER", "entities.u1.lisbon", "VISITED", (15, None)),
        );
        put(
            &mut alice,
            &r,
            "sarah-lisbon",
            relation(
                "entities.u1.sarah",
                "entities.u1.lisbon",
                "VISITED",
                (5, None),
            ),
        );
        // A pseudo-entity whose name starts like another's sees only its own edges.
        put(
            &mut alice,
            &r,
            "users",
            relation("USERS", "entities.u1.tap", "KNOWS", (1, None)),
        );

        let people = alice
            .entities_of_type("t", EntityType::Person, 10)
            .unwrap()
            .unwrap();
        assert_eq!(
            keys_of(&people),
            ["entities.u1.sarah", "entities.u1.tom"],
            "{}",
            fx.name
        );
        assert_eq!(
            alice
                .entities_of_type("t", EntityType::Product, 10)
                .unwrap()
                .unwrap(),
            []
        );

        let out = |d: &mut Domain, types: &[&str], at| {
            relationships(d, "USER", EdgeDirection::Outgoing, types, at, 10)
        };
        assert_eq!(
            out(&mut alice, &[], None),
            [
                "relationships.u1.knows-sarah",
                "relationships.u1.knows-tom",
                "relationships.u1.visited"
            ]
        );
        assert_eq!(
            out(&mut alice, &["VISITED"], None),
            ["relationships.u1.visited"]
        );
        assert_eq!(
            out(&mut alice, &[], Some(25)),
            ["relationships.u1.knows-sarah", "relationships.u1.visited"],
            "knows-tom ended at 20"
        );
        assert_eq!(
            out(&mut alice, &[], Some(12)),
            ["relationships.u1.knows-sarah", "relationships.u1.knows-tom"]
        );
        assert_eq!(
            relationships(
                &mut alice,
                "entities.u1.lisbon",
                EdgeDirection::Incoming,
                &[],
                None,
                10
            ),
            ["relationships.u1.sarah-lisbon", "relationships.u1.visited"]
        );
        // Index-backed and bounded: a lookup touches at most its limit of entries.
        faulty.reset_counts();
        assert_eq!(out(&mut alice, &[], None).len(), 3);
        assert!(
            faulty.scanned.load(Ordering::SeqCst) <= 10 && faulty.gets.load(Ordering::SeqCst) <= 3
        );
        assert_eq!(
            relationships(&mut alice, "USER", EdgeDirection::Outgoing, &[], None, 2).len(),
            2
        );

        // The indexes follow the current version: a new type moves the entity.
        let request = PutRequest {
            namespace: ns(&["entities", "u1"]),
            id: "tom".into(),
            value: entity("Tom's bakery", EntityType::Organization),
            source: source("alice"),
            request_id: "retype-tom".into(),
        };
        assert!(matches!(
            alice.put(&request).unwrap(),
            WriteResult::Accepted(_)
        ));
        let people = alice
            .entities_of_type("t", EntityType::Person, 10)
            .unwrap()
            .unwrap();
        assert_eq!(keys_of(&people), ["entities.u1.sarah"], "{}", fx.name);
        let orgs = alice
            .entities_of_type("t", EntityType::Organization, 10)
            .unwrap()
            .unwrap();
        assert_eq!(keys_of(&orgs), ["entities.u1.tap", "entities.u1.tom"]);
        // A relationship re-pointed to another target leaves the old target's index.
        let request = PutRequest {
            namespace: ns(&r),
            id: "visited".into(),
            value: relation("USER", "entities.u1.tap", "VISITED", (15, None)),
            source: source("alice"),
            request_id: "repoint".into(),
        };
        assert!(matches!(
            alice.put(&request).unwrap(),
            WriteResult::Accepted(_)
        ));
        assert_eq!(
            relationships(
                &mut alice,
                "entities.u1.lisbon",
                EdgeDirection::Incoming,
                &[],
                None,
                10
            ),
            ["relationships.u1.sarah-lisbon"]
        );
        assert_eq!(
            relationships(
                &mut alice,
                "entities.u1.tap",
                EdgeDirection::Incoming,
                &[],
                None,
                10
            ),
            ["relationships.u1.users", "relationships.u1.visited"],
            "type, then key"
        );
    }
}

use engram::graph::{TraversalOrder, TraverseRequest};

/// Writes relationship `from -> to` of `kind` under a generated id.
fn edge(domain: &mut Domain, from: &str, to: &str, kind: &str, valid: (i64, Option<i64>)) {
    let id = format!(
        "{}-{}-{}",
        from.replace('.', "_"),
        kind.to_lowercase(),
        to.replace('.', "_")
    );
    let answer = put(domain, &["rel"], &id, relation(from, to, kind, valid));
    assert!(matches!(answer, WriteResult::Accepted(_)), "{id}");
}

fn walk(
    domain: &mut Domain,
    start: &str,
    order: TraversalOrder,
    depth: u32,
    nodes: u32,
    edges: u32,
) -> (Vec<(String, u32)>, usize) {
    let request = TraverseRequest {
        request_id: "walk".into(),
        start: start.into(),
        order,
        direction: EdgeDirection::Outgoing,
        relationship_types: vec![],
        valid_at: None,
        max_depth: depth,
        max_nodes: nodes,
        max_edges: edges,
    };
    let traversal = domain.traverse(&request).unwrap().unwrap();
    (
        traversal
            .nodes
            .iter()
            .map(|n| (n.key.clone(), n.depth))
            .collect(),
        traversal.edges.len(),
    )
}

fn names(nodes: &[(String, u32)]) -> Vec<&str> {
    nodes.iter().map(|(k, _)| k.as_str()).collect()
}

backend_test! {
    fn mt_9_traversal_hits_its_bounds_exactly_and_ends_on_cycles(fx) {
        // proves MT-9
        let faulty = Faulty::over(fx.backend.clone());
        let mut alice = fx.open_over("alice", faulty.clone());
        // A chain n0 -> n1 -> … -> n9 -> n0 (a cycle), and a star s -> l00..l19.
        for i in 0..10 {
            edge(
                &mut alice,
                &format!("n.n{i}"),
                &format!("n.n{}", (i + 1) % 10),
                "NEXT",
                (0, None),
            );
        }
        for i in 0..20 {
            edge(&mut alice, "s", &format!("l.l{i:02}"), "HAS", (0, None));
        }
        put(&mut alice, &["n"], "n0", entity("first", EntityType::Place));

        // Depth: exactly max-depth edges away.
        let (nodes, edges) = walk(&mut alice, "n.n0", TraversalOrder::BreadthFirst, 3, 50, 50);
        assert_eq!(
            names(&nodes),
            ["n.n0", "n.n1", "n.n2", "n.n3"],
            "{}",
            fx.name
        );
        assert_eq!(
            nodes.iter().map(|(_, d)| *d).collect::<Vec<_>>(),
            [0, 1, 2, 3]
        );
        assert_eq!(edges, 3);
        // The cycle ends: every node once, and the edge back to the start kept.
        let (nodes, edges) = walk(&mut alice, "n.n0", TraversalOrder::DepthFirst, 50, 50, 50);
        assert_eq!(nodes.len(), 10, "{}", fx.name);
        assert_eq!(edges, 10, "n9 -> n0 leads to a node of the answer");
        // Nodes: exactly max-nodes, the start included, in a stable order.
        // The walk ends there: the edges are the five it followed.
        for order in [TraversalOrder::BreadthFirst, TraversalOrder::DepthFirst] {
            let (nodes, edges) = walk(&mut alice, "s", order, 5, 6, 50);
            assert_eq!(
                names(&nodes),
                ["s", "l.l00", "l.l01", "l.l02", "l.l03", "l.l04"]
            );
            assert_eq!(edges, 5, "{}", fx.name);
        }
        // Edges examined: exactly max-edges index entries are read.
        faulty.reset_counts();
        let (nodes, edges) = walk(&mut alice, "s", TraversalOrder::BreadthFirst, 5, 50, 7);
        assert_eq!((nodes.len(), edges), (8, 7));
        assert!(faulty.scanned.load(Ordering::SeqCst) <= 7, "{}", fx.name);
        assert!(faulty.largest_scan_limit.load(Ordering::SeqCst) <= 7);
        // Depth 0 is the start alone; a start with a FACT carries it.
        let request = TraverseRequest {
            request_id: "w".into(),
            start: "n.n0".into(),
            order: TraversalOrder::DepthFirst,
            direction: EdgeDirection::Outgoing,
            relationship_types: vec![],
            valid_at: None,
            max_depth: 0,
            max_nodes: 5,
            max_edges: 5,
        };
        let traversal = alice.traverse(&request).unwrap().unwrap();
        assert_eq!(traversal.nodes.len(), 1);
        assert!(traversal.nodes[0].entity.is_some());
        // Bounds out of range are typed errors.
        for (nodes, edges) in [(0, 5), (CEILING + 1, 5), (5, 0), (5, CEILING + 1)] {
            let request = TraverseRequest {
                max_nodes: nodes,
                max_edges: edges,
                max_depth: 2,
                ..request.clone()
            };
            assert_eq!(
                alice.traverse(&request).unwrap(),
                Err(ReadError::LimitOutOfBounds(CEILING))
            );
        }
        let deep = TraverseRequest {
            max_depth: CEILING + 1,
            ..request.clone()
        };
        assert_eq!(
            alice.traverse(&deep).unwrap(),
            Err(ReadError::LimitOutOfBounds(CEILING))
        );
    }
}

backend_test! {
    fn mt_9_traversal_orders_and_filters_by_type_and_valid_time(fx) {
        // proves MT-9, MT-6
        let mut alice = fx.open("alice");
        // a -> b -> d, a -> c -> e; a KNOWS c only until time 10.
        edge(&mut alice, "g.a", "g.b", "LIKES", (0, None));
        edge(&mut alice, "g.a", "g.c", "KNOWS", (0, Some(10)));
        edge(&mut alice, "g.b", "g.d", "LIKES", (0, None));
        edge(&mut alice, "g.c", "g.e", "LIKES", (0, None));
        let (bfs, _) = walk(&mut alice, "g.a", TraversalOrder::BreadthFirst, 5, 10, 10);
        assert_eq!(
            names(&bfs),
            ["g.a", "g.c", "g.b", "g.e", "g.d"],
            "{}: KNOWS sorts before LIKES",
            fx.name
        );
        let (dfs, _) = walk(&mut alice, "g.a", TraversalOrder::DepthFirst, 5, 10, 10);
        assert_eq!(names(&dfs), ["g.a", "g.c", "g.e", "g.b", "g.d"]);
        let mut request = TraverseRequest {
            request_id: "w".into(),
            start: "g.a".into(),
            order: TraversalOrder::BreadthFirst,
            direction: EdgeDirection::Outgoing,
            relationship_types: vec!["LIKES".into()],
            valid_at: None,
            max_depth: 5,
            max_nodes: 10,
            max_edges: 10,
        };
        let keys =
            |t: engram::graph::Traversal| t.nodes.into_iter().map(|n| n.key).collect::<Vec<_>>();
        assert_eq!(
            keys(alice.traverse(&request).unwrap().unwrap()),
            ["g.a", "g.b", "g.d"]
        );
        request.relationship_types.clear();
        request.valid_at = Some(20);
        assert_eq!(
            keys(alice.traverse(&request).unwrap().unwrap()),
            ["g.a", "g.b", "g.d"],
            "KNOWS ended at 10"
        );
        request.direction = EdgeDirection::Incoming;
        request.start = "g.e".into();
        request.valid_at = Some(5);
        assert_eq!(
            keys(alice.traverse(&request).unwrap().unwrap()),
            ["g.e", "g.c", "g.a"]
        );
    }
}
