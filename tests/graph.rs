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

#[test]
fn mt_7_namespaces_match_whole_segments_only() {
    // proves MT-7
    for fx in fixtures() {
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

#[test]
fn mt_8_lookups_find_entities_by_type_and_relationships_by_entity() {
    // proves MT-8, MT-6, MT-5
    for fx in fixtures() {
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
