//! Privacy tiers (MT-1's `privacy_tier`; how a reader's ceiling applies is
//! S-TIER): a reader opened with a tier ceiling gets, on every read path,
//! exactly the answer it would get from a store in which the records above
//! its ceiling had never been written. Also the other MT-1
//! fields: stored and returned as written, and never changed by a read.

mod support;

use engram::graph::{
    EdgeDirection, PutRequest, RelationshipsRequest, TraversalOrder, TraverseRequest,
};
use engram::history::{AsOfRequest, TimeAxis, VersionsRequest};
use engram::io::WriteResult;
use engram::types::*;
use engram::{Config, Domain, Engram, Mode};
use std::collections::HashSet;
use std::sync::{Arc, LazyLock};
use support::*;

/// The transaction time of every write here: with one fixed time, two stores
/// written with different records still give their common records the same
/// times.
const NOW: i64 = 1_700_000_000_000;

fn engram_at_fixed_time() -> &'static Engram {
    static ENGRAM: LazyLock<Engram> = LazyLock::new(|| {
        Engram::with_config(Config {
            read_limit_ceiling: CEILING,
            clock: Arc::new(|| NOW),
            ..Config::default()
        })
        .expect("the engine compiles")
    });
    &ENGRAM
}

fn open(fx: &Fixture) -> Domain {
    engram_at_fixed_time()
        .open("alice", Mode::Online, fx.backend.clone(), fx.audit.clone())
        .unwrap()
}

fn rank(tier: PrivacyTier) -> u8 {
    match tier {
        PrivacyTier::Public => 0,
        PrivacyTier::Sensitive => 1,
        PrivacyTier::Private => 2,
    }
}

fn memory(content: &str, tier: PrivacyTier, names: &[&str]) -> FactPayload {
    let mut memory = semantic(content);
    memory.privacy_tier = tier;
    memory.contradictions = names.iter().map(|n| n.to_string()).collect();
    FactPayload::Semantic(memory)
}

fn entity(name: &str, kind: EntityType, sources: &[&str]) -> FactPayload {
    FactPayload::Entity(Entity {
        name: name.into(),
        entity_type: kind,
        properties: "{}".into(),
        first_seen: 1,
        last_mentioned: 2,
        mention_count: 1,
        source_memories: sources.iter().map(|s| s.to_string()).collect(),
    })
}

fn relation(from: &str, to: &str, kind: &str, sources: &[&str]) -> FactPayload {
    FactPayload::Relationship(Relationship {
        from_entity: format!("entities.alice.{from}"),
        to_entity: format!("entities.alice.{to}"),
        relationship_type: kind.into(),
        valid_at: 10,
        invalid_at: None,
        properties: "{}".into(),
        source_memories: sources.iter().map(|s| s.to_string()).collect(),
    })
}

/// Writes one scenario, skipping every record whose tier is above `upto`:
/// `upto = Private` writes it all. Returns the ids written, by request id.
fn populate(domain: &mut Domain, upto: PrivacyTier) -> Vec<(String, String)> {
    use PrivacyTier::*;
    let mut ids: Vec<(String, String)> = Vec::new();
    let find = |ids: &[(String, String)], name: &str| {
        ids.iter()
            .find(|(n, _)| n == name)
            .map(|(_, id)| id.clone())
            .unwrap_or_default()
    };
    let fact = |domain: &mut Domain,
                ids: &mut Vec<(String, String)>,
                name: &str,
                tier: PrivacyTier,
                key: &str,
                payload: FactPayload| {
        if rank(tier) > rank(upto) {
            return;
        }
        let id = accept(
            domain,
            name,
            MemoryRecord::Fact(Fact {
                key: key.into(),
                payload,
            }),
        );
        ids.push((name.to_owned(), id));
    };
    // Semantic memories: their own tiers, one key with two versions.
    fact(
        domain,
        &mut ids,
        "diet-1",
        Public,
        "user.diet",
        memory("vegetarian", Public, &[]),
    );
    fact(
        domain,
        &mut ids,
        "health",
        Private,
        "user.health",
        memory("asthma", Private, &[]),
    );
    fact(
        domain,
        &mut ids,
        "address",
        Sensitive,
        "user.address",
        memory("rue x", Sensitive, &[]),
    );
    fact(
        domain,
        &mut ids,
        "diet-2",
        Public,
        "user.diet",
        memory("vegan", Public, &[]),
    );
    // Public memories that name a withheld one take its tier.
    let health = find(&ids, "health");
    let address = find(&ids, "address");
    fact(
        domain,
        &mut ids,
        "allergy",
        Private,
        "user.allergy",
        memory("no nuts", Public, &[&health]),
    );
    fact(
        domain,
        &mut ids,
        "home",
        Sensitive,
        "user.home",
        memory("near x", Public, &[&address]),
    );
    // A key whose tier is private keeps it for a later public version.
    fact(
        domain,
        &mut ids,
        "meds-1",
        Private,
        "user.meds",
        memory("inhaler", Private, &[]),
    );
    fact(
        domain,
        &mut ids,
        "meds-2",
        Private,
        "user.meds",
        memory("none", Public, &[]),
    );
    // Keys interleaved in key order, so limits must pass over withheld ones.
    for i in 0..12 {
        let tier = [Private, Public, Sensitive][i % 3];
        let key = format!("notes.n{i:02}");
        let name = format!("note-{i}");
        fact(
            domain,
            &mut ids,
            &name,
            tier,
            &key,
            memory(&name, tier, &[]),
        );
    }
    // Entities and relationships: a place known from a private memory, and
    // edges to it; an edge whose own source is sensitive.
    let put = |domain: &mut Domain,
               ids: &mut Vec<(String, String)>,
               tier: PrivacyTier,
               namespace: &str,
               id: &str,
               value: FactPayload| {
        if rank(tier) > rank(upto) {
            return;
        }
        let request = PutRequest {
            namespace: vec![namespace.into(), "alice".into()],
            id: id.into(),
            value,
            source: source("alice"),
            request_id: format!("put-{namespace}-{id}"),
        };
        match domain.put(&request).unwrap() {
            WriteResult::Accepted(stored) => ids.push((request.request_id, stored)),
            WriteResult::Rejected => panic!("put {id} was rejected"),
        }
    };
    put(
        domain,
        &mut ids,
        Public,
        "entities",
        "me",
        entity("me", EntityType::Person, &[]),
    );
    put(
        domain,
        &mut ids,
        Public,
        "entities",
        "bob",
        entity("Bob", EntityType::Person, &[]),
    );
    put(
        domain,
        &mut ids,
        Private,
        "entities",
        "clinic",
        entity("Clinic", EntityType::Place, &[&health]),
    );
    put(
        domain,
        &mut ids,
        Public,
        "entities",
        "cafe",
        entity("Cafe", EntityType::Place, &[]),
    );
    put(
        domain,
        &mut ids,
        Sensitive,
        "entities",
        "flat",
        entity("Flat", EntityType::Place, &[&address]),
    );
    put(
        domain,
        &mut ids,
        Public,
        "relationships",
        "me-bob",
        relation("me", "bob", "KNOWS", &[]),
    );
    put(
        domain,
        &mut ids,
        Private,
        "relationships",
        "me-clinic",
        relation("me", "clinic", "VISITED", &[]),
    );
    put(
        domain,
        &mut ids,
        Private,
        "relationships",
        "bob-clinic",
        relation("bob", "clinic", "VISITED", &[]),
    );
    put(
        domain,
        &mut ids,
        Sensitive,
        "relationships",
        "me-cafe",
        relation("me", "cafe", "VISITED", &[&address]),
    );
    put(
        domain,
        &mut ids,
        Public,
        "relationships",
        "bob-cafe",
        relation("bob", "cafe", "VISITED", &[]),
    );
    put(
        domain,
        &mut ids,
        Sensitive,
        "relationships",
        "me-flat",
        relation("me", "flat", "LIVES_IN", &[]),
    );
    put(
        domain,
        &mut ids,
        Public,
        "relationships",
        "cafe-me",
        relation("cafe", "me", "KNOWS", &[]),
    );
    // EVENT and STATE records are public.
    for i in 0..3 {
        let id = accept(
            domain,
            &format!("event-{i}"),
            ingested(100 + i, "flight to paris"),
        );
        ids.push((format!("event-{i}"), id));
        let id = accept(
            domain,
            &format!("state-{i}"),
            state(100 + i, "mission.current"),
        );
        ids.push((format!("state-{i}"), id));
    }
    ids
}

/// An answer with every record id replaced by its position among the ids
/// of its own store, so answers of two stores compare.
fn shape(answer: &impl std::fmt::Debug, ids: &[(String, String)]) -> String {
    let mut text = format!("{answer:?}");
    for (name, id) in ids {
        text = text.replace(id.as_str(), &format!("<{name}>"));
    }
    transaction_times_as_ranks(&text)
}

/// The answer's transaction times as their order among its own times
/// (`<t0>`, `<t1>`, …). A domain's transaction time is later for every FACT
/// version written (MT-2), so under this file's frozen clock a store that
/// also holds withheld versions gives the visible ones other times than a
/// store without them; their order is the same, and that is what is
/// compared.
fn transaction_times_as_ranks(text: &str) -> String {
    const MARKS: [&str; 2] = ["created-at: ", "superseded-at: Some("];
    let number_at = |at: usize| -> &str {
        let digits = text[at..].bytes().take_while(u8::is_ascii_digit).count();
        &text[at..at + digits]
    };
    let mut times: Vec<i64> = MARKS
        .iter()
        .flat_map(|mark| text.match_indices(mark).map(move |(at, _)| at + mark.len()))
        .filter_map(|at| number_at(at).parse().ok())
        .collect();
    times.sort_unstable();
    times.dedup();
    let mut out = text.to_owned();
    // The longest numbers first, so no number is replaced inside another.
    for (rank, time) in times.iter().enumerate().rev() {
        for mark in MARKS {
            out = out.replace(&format!("{mark}{time}"), &format!("{mark}<t{rank}>"));
        }
    }
    out
}

/// Every read the contract offers, made by `domain`, as comparable text.
fn every_read(domain: &mut Domain, ids: &[(String, String)]) -> Vec<String> {
    let mut answers = Vec::new();
    let mut keys: Vec<String> = [
        "user.diet",
        "user.health",
        "user.address",
        "user.allergy",
        "user.home",
        "user.meds",
        "entities.alice.clinic",
        "entities.alice.cafe",
        "relationships.alice.me-cafe",
    ]
    .iter()
    .map(|k| k.to_string())
    .collect();
    keys.extend((0..12).map(|i| format!("notes.n{i:02}")));
    for kind in [RecordType::Fact, RecordType::Event, RecordType::State] {
        for n in [1, 2, 3, 5, 8, 13, CEILING] {
            let selector = if kind == RecordType::Fact {
                limit(n)
            } else {
                latest(n)
            };
            answers.push(shape(&domain.read(&read(kind, selector)).unwrap(), ids));
        }
    }
    for kind in [RecordType::Event, RecordType::State] {
        answers.push(shape(
            &domain.read(&read(kind, range(0, 1_000, 2))).unwrap(),
            ids,
        ));
        answers.push(shape(&domain.read(&read(kind, limit(2))).unwrap(), ids));
    }
    for key in &keys {
        answers.push(shape(
            &domain.read(&read(RecordType::Fact, by_key(key))).unwrap(),
            ids,
        ));
        let versions = VersionsRequest {
            request_id: "v".into(),
            key: key.clone(),
            limit: 1,
        };
        answers.push(shape(&domain.versions(&versions).unwrap(), ids));
        for axis in [TimeAxis::Valid, TimeAxis::Transaction] {
            let request = AsOfRequest {
                request_id: "a".into(),
                key: key.clone(),
                axis,
                at: NOW,
                limit: 5,
            };
            answers.push(shape(&domain.as_of(&request).unwrap(), ids));
        }
    }
    let ns = |n: &str| vec![n.to_string(), "alice".to_string()];
    for n in [1, 2, 3, CEILING] {
        answers.push(shape(&domain.list("l", &ns("entities"), n).unwrap(), ids));
        answers.push(shape(
            &domain.list("l", &ns("relationships"), n).unwrap(),
            ids,
        ));
        answers.push(shape(
            &domain.list("l", &vec!["notes".to_string()], n).unwrap(),
            ids,
        ));
        answers.push(shape(
            &domain.entities_of_type("t", EntityType::Place, n).unwrap(),
            ids,
        ));
    }
    for id in ["me", "bob", "clinic", "cafe", "flat"] {
        answers.push(shape(&domain.get("g", &ns("entities"), id).unwrap(), ids));
    }
    for entity in ["me", "bob", "clinic", "cafe", "flat"] {
        for direction in [EdgeDirection::Outgoing, EdgeDirection::Incoming] {
            for n in [1, 2, CEILING] {
                let request = RelationshipsRequest {
                    request_id: "r".into(),
                    entity: format!("entities.alice.{entity}"),
                    direction,
                    relationship_types: vec![],
                    valid_at: None,
                    limit: n,
                };
                answers.push(shape(&domain.relationships_of(&request).unwrap(), ids));
            }
            for order in [TraversalOrder::BreadthFirst, TraversalOrder::DepthFirst] {
                for (nodes, edges) in [(2, 1), (3, 2), (CEILING, CEILING)] {
                    let request = TraverseRequest {
                        request_id: "w".into(),
                        start: format!("entities.alice.{entity}"),
                        order,
                        direction,
                        relationship_types: vec![],
                        valid_at: None,
                        max_depth: 3,
                        max_nodes: nodes,
                        max_edges: edges,
                    };
                    answers.push(shape(&domain.traverse(&request).unwrap(), ids));
                }
            }
        }
    }
    answers
}

backend_test! {
    fn a_reader_gets_what_a_store_without_the_withheld_records_would_answer(fx) {
    // proves S-TIER: no read returns a record above the reader's ceiling, and
    // nothing in an answer shows that one was withheld
    for ceiling in [PrivacyTier::Public, PrivacyTier::Sensitive] {
        {
            let (full, partial) = (fx.another(), fx.another());
            let everything = populate(&mut open(&full), PrivacyTier::Private);
            let visible = populate(&mut open(&partial), ceiling);
            assert!(visible.len() < everything.len());
            let restricted = every_read(&mut open(&full).restrict_to(ceiling), &everything);
            let baseline = every_read(&mut open(&partial), &visible);
            assert_eq!(restricted.len(), baseline.len());
            for (i, (got, want)) in restricted.iter().zip(&baseline).enumerate() {
                assert_eq!(got, want, "{} ceiling {ceiling:?}, read {i}", full.name);
            }
            // The owner still sees it all, so the two stores do differ.
            let owner = every_read(&mut open(&full), &everything);
            assert_ne!(owner, restricted, "{}", full.name);
        }
    }
}
}

backend_test! {
    fn no_answer_holds_a_record_above_the_ceiling_or_names_one(fx) {
        // proves S-TIER
        let ids = populate(&mut open(&fx), PrivacyTier::Private);
        let withheld = |ceiling: PrivacyTier| -> Vec<&str> {
            let above: &[&str] = match ceiling {
                PrivacyTier::Public => {
                    &["health", "address", "allergy", "home", "meds-1", "meds-2"]
                }
                _ => &["health", "allergy", "meds-1", "meds-2"],
            };
            ids.iter()
                .filter(|(name, _)| {
                    above.contains(&name.as_str())
                        || (name.starts_with("note-")
                            && rank(
                                [
                                    PrivacyTier::Private,
                                    PrivacyTier::Public,
                                    PrivacyTier::Sensitive,
                                ][name[5..].parse::<usize>().unwrap() % 3],
                            ) > rank(ceiling))
                })
                .map(|(_, id)| id.as_str())
                .collect()
        };
        for ceiling in [PrivacyTier::Public, PrivacyTier::Sensitive] {
            let hidden = withheld(ceiling);
            assert!(hidden.len() >= 6);
            let mut reader = open(&fx).restrict_to(ceiling);
            for answer in every_read(&mut reader, &[]) {
                for id in &hidden {
                    assert!(!answer.contains(id), "{}: {answer}", fx.name);
                }
                assert!(!answer.contains("Clinic") && !answer.contains("asthma"));
                if ceiling == PrivacyTier::Public {
                    assert!(!answer.contains("Flat") && !answer.contains("rue x"));
                }
            }
            // By id: a withheld record answers as an id never handed out.
            for id in &hidden {
                assert!(records(&mut reader, RecordType::Fact, by_id(id)).is_empty());
            }
            let shown: Vec<&(String, String)> = ids
                .iter()
                .filter(|(n, id)| n.starts_with("note-") && !hidden.contains(&id.as_str()))
                .collect();
            assert!(!shown.is_empty());
            for (_, id) in shown {
                assert_eq!(records(&mut reader, RecordType::Fact, by_id(id)).len(), 1);
            }
        }
    }
}

backend_test! {
    fn a_key_keeps_its_first_tier_and_a_later_version_may_not_raise_it(fx) {
        // proves S-TIER
        let mut alice = open(&fx);
        let health = accept(
            &mut alice,
            "health",
            MemoryRecord::Fact(Fact {
                key: "user.health".into(),
                payload: memory("asthma", PrivacyTier::Private, &[]),
            }),
        );
        accept(
            &mut alice,
            "diet",
            MemoryRecord::Fact(Fact {
                key: "user.diet".into(),
                payload: memory("vegan", PrivacyTier::Public, &[]),
            }),
        );
        for (request_id, payload) in [
            ("raise", memory("vegan", PrivacyTier::Sensitive, &[])),
            ("name", memory("vegan", PrivacyTier::Public, &[&health])),
        ] {
            let answer = alice
                .write(&request(
                    "alice",
                    request_id,
                    MemoryRecord::Fact(Fact {
                        key: "user.diet".into(),
                        payload,
                    }),
                ))
                .unwrap();
            assert_eq!(answer, WriteResult::Rejected, "{}", fx.name);
            let entry = fx.trail().pop().unwrap();
            assert_eq!(entry.request_id, request_id);
            assert!(entry.reason.unwrap().contains("never rises"));
        }
        // The public key still reads as before; nothing was stored.
        let mut public = open(&fx).restrict_to(PrivacyTier::Public);
        let diet = records(&mut public, RecordType::Fact, by_key("user.diet"));
        assert_eq!(diet.len(), 1);
        let versions = VersionsRequest {
            request_id: "v".into(),
            key: "user.diet".into(),
            limit: 10,
        };
        assert_eq!(public.versions(&versions).unwrap().unwrap().len(), 1);
        // A later version of the private key is lower, and stays private.
        accept(
            &mut alice,
            "health-2",
            MemoryRecord::Fact(Fact {
                key: "user.health".into(),
                payload: memory("recovered", PrivacyTier::Public, &[]),
            }),
        );
        assert!(records(&mut public, RecordType::Fact, by_key("user.health")).is_empty());
        let mut owner = open(&fx);
        assert_eq!(
            records(&mut owner, RecordType::Fact, by_key("user.health")).len(),
            1
        );
    }
}

backend_test! {
    fn a_ceiling_only_goes_down(fx) {
        // proves S-TIER: a restricted reader cannot widen its own view
        populate(&mut open(&fx), PrivacyTier::Private);
        let reader = open(&fx).restrict_to(PrivacyTier::Public);
        assert_eq!(reader.tier_ceiling(), PrivacyTier::Public);
        let mut reader = reader.restrict_to(PrivacyTier::Private);
        assert_eq!(reader.tier_ceiling(), PrivacyTier::Public);
        assert!(records(&mut reader, RecordType::Fact, by_key("user.health")).is_empty());
        assert_eq!(open(&fx).tier_ceiling(), PrivacyTier::Private);
    }
}

backend_test! {
    fn record_ids_carry_no_order_and_no_count(fx) {
        // proves S-TIER: ids are random, so the ids a reader sees do not show
        // how many records lie between them, withheld ones included
        let mut alice = open(&fx);
        let ids: Vec<String> = (0..64)
            .map(|i| accept(&mut alice, &format!("e{i}"), ingested(i, "a trip")))
            .collect();
        assert!(ids.iter().all(|id| {
            id.len() == 32
                && id
                    .bytes()
                    .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        }));
        assert_eq!(ids.iter().collect::<HashSet<_>>().len(), ids.len());
        let mut sorted = ids.clone();
        sorted.sort();
        assert_ne!(sorted, ids, "ids follow the write order");
        // Two stores given the same writes hand out different ids.
        let other = Fixture::memory();
        let again = accept(&mut open(&other), "e0", ingested(0, "a trip"));
        assert_ne!(again, ids[0]);
    }
}

backend_test! {
    fn mt1_every_field_of_a_semantic_memory_comes_back_and_reads_change_nothing(fx) {
        // proves MT-1, S-ACCESS: id, content, context, valid/invalid time, created_at,
        // strength, last_accessed, access_count, sources, confidence,
        // contradictions and privacy_tier are kept as written; strength and
        // access are the caller's to change, by a write, never by a read (B5-F3)
        let mut alice = open(&fx);
        let written = SemanticMemory {
            content: "prefers window seats".into(),
            context: "travel".into(),
            valid_at: 1_000,
            invalid_at: Some(9_000),
            strength: 1.75,
            last_accessed: 4_000,
            access_count: 7,
            sources: vec!["episode-3".into(), "conversation-9".into()],
            confidence: 0.8,
            contradictions: vec!["asked for an aisle once".into()],
            privacy_tier: PrivacyTier::Sensitive,
        };
        let id = accept(
            &mut alice,
            "seat",
            MemoryRecord::Fact(Fact {
                key: "user.seat".into(),
                payload: FactPayload::Semantic(written.clone()),
            }),
        );
        let before = fx.dump();
        let mut answers = Vec::new();
        for _ in 0..3 {
            answers.extend(records(&mut alice, RecordType::Fact, by_id(&id)));
            answers.extend(records(&mut alice, RecordType::Fact, by_key("user.seat")));
            answers.extend(records(&mut alice, RecordType::Fact, limit(5)));
        }
        assert_eq!(answers.len(), 9);
        for answer in answers {
            let StoredRecord::Fact(stored) = answer else {
                panic!("not a FACT");
            };
            assert_eq!(stored.id, id);
            assert_eq!(stored.created_at, NOW);
            assert_eq!(stored.superseded_at, None);
            assert_eq!(stored.fact.payload, FactPayload::Semantic(written.clone()));
        }
        assert_eq!(fx.dump(), before, "{}: a read changed the store", fx.name);
        // A confirmation is an explicit write: a new version with the new
        // strength and access, the old one kept.
        let mut confirmed = written.clone();
        confirmed.strength = 2.0;
        confirmed.access_count = 8;
        confirmed.last_accessed = 5_000;
        accept(
            &mut alice,
            "seat-confirmed",
            MemoryRecord::Fact(Fact {
                key: "user.seat".into(),
                payload: FactPayload::Semantic(confirmed.clone()),
            }),
        );
        let current = records(&mut alice, RecordType::Fact, by_key("user.seat"));
        let StoredRecord::Fact(current) = &current[0] else {
            panic!("not a FACT");
        };
        assert_eq!(current.fact.payload, FactPayload::Semantic(confirmed));
        let old = records(&mut alice, RecordType::Fact, by_id(&id));
        let StoredRecord::Fact(old) = &old[0] else {
            panic!("not a FACT");
        };
        assert_eq!(old.fact.payload, FactPayload::Semantic(written));
        // Closed at its successor's transaction time, later than its own
        // though the clock stood still (MT-2).
        assert_eq!(old.superseded_at, Some(current.created_at));
        assert!(current.created_at > old.created_at);
    }
}
