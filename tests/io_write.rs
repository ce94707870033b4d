//! The write half of the Memory IO contract, rule by rule (IO-W*, IO-G1),
//! on the real component in wasmtime over every backend.

mod support;

use engram::Mode;
use engram::audit::Outcome as Audited;
use engram::io::WriteResult;
use engram::types::*;
use support::*;

fn every_kind_of_record() -> Vec<MemoryRecord> {
    vec![
        fact("user.diet", "Prefers vegetarian food"),
        MemoryRecord::Fact(Fact {
            key: "rule.travel.direct-flights".into(),
            payload: FactPayload::Procedural(ProceduralRule {
                agent_type: "travel".into(),
                rule: "Always filter for direct flights first".into(),
                derived_from: vec!["episode_123".into(), "episode_456".into()],
                confidence: 0.95,
                last_validated: 2_000,
                override_count: 1,
            }),
        }),
        MemoryRecord::Fact(Fact {
            key: "entity.sarah".into(),
            payload: FactPayload::Entity(Entity {
                name: "Sarah".into(),
                entity_type: EntityType::Person,
                properties: r#"{"relationship":"partner","dietary":"vegetarian"}"#.into(),
                first_seen: 1_000,
                last_mentioned: 3_000,
                mention_count: 4,
                source_memories: vec!["m1".into()],
            }),
        }),
        MemoryRecord::Fact(Fact {
            key: "rel.user.knows.sarah".into(),
            payload: FactPayload::Relationship(Relationship {
                from_entity: "USER".into(),
                to_entity: "entity.sarah".into(),
                relationship_type: "KNOWS".into(),
                valid_at: 1_000,
                invalid_at: Some(9_000),
                properties: r#"{"strength":0.8}"#.into(),
                source_memories: vec![],
            }),
        }),
        ingested(10, "Asked for a flight to Paris"),
        episode(20, "Book a flight to Paris"),
        state(30, "mission.current"),
    ]
}

/// The written record as the IO gives it back (keywords stay inside).
fn written_part(record: &StoredRecord) -> MemoryRecord {
    match record.clone() {
        StoredRecord::Fact(f) => MemoryRecord::Fact(f.fact),
        StoredRecord::State(s) => MemoryRecord::State(s.state),
        StoredRecord::Event(e) => MemoryRecord::Event(Event {
            timestamp: e.timestamp,
            payload: match e.payload {
                StoredEventPayload::Episode(episode) => EventPayload::Episode(episode),
                StoredEventPayload::Ingested(m) => EventPayload::Ingested(IngestedMemory {
                    session_ref: m.session_ref,
                    summary: m.summary,
                    keywords: vec!["flight".into(), "paris".into()],
                }),
            },
        }),
    }
}

fn record_type(record: &MemoryRecord) -> RecordType {
    match record {
        MemoryRecord::Fact(_) => RecordType::Fact,
        MemoryRecord::Event(_) => RecordType::Event,
        MemoryRecord::State(_) => RecordType::State,
    }
}

backend_test! {
    fn io_w1_every_record_kind_is_accepted_and_read_back_as_written(fx) {
        // proves IO-W1, IO-G3, MT-3 (episode), MT-4 (procedural rule), MT-5
        // (entity), MT-6 (relationship): every field is stored and returned
        let mut alice = fx.open("alice");
        for (i, record) in every_kind_of_record().into_iter().enumerate() {
            let id = accept(&mut alice, &format!("w{i}"), record.clone());
            let back = records(&mut alice, record_type(&record), by_id(&id));
            assert_eq!(back.len(), 1, "{}", fx.name);
            assert_eq!(id_of(&back[0]), id);
            assert_eq!(
                written_part(&back[0]),
                record,
                "{}: stored exactly as written",
                fx.name
            );
        }
    }
}

fn invalid_records() -> Vec<(&'static str, MemoryRecord)> {
    let mut nan = semantic("x");
    nan.strength = f64::NAN;
    let mut sure = semantic("x");
    sure.confidence = 1.5;
    let mut reversed = semantic("x");
    reversed.invalid_at = Some(reversed.valid_at - 1);
    let mut empty = semantic("");
    empty.context = "dining".into();
    let semantic_fact = |m: SemanticMemory| {
        MemoryRecord::Fact(Fact {
            key: "user.diet".into(),
            payload: FactPayload::Semantic(m),
        })
    };
    let entity = |properties: &str| {
        MemoryRecord::Fact(Fact {
            key: "entity.x".into(),
            payload: FactPayload::Entity(Entity {
                name: "X".into(),
                entity_type: EntityType::Place,
                properties: properties.into(),
                first_seen: 1,
                last_mentioned: 1,
                mention_count: 1,
                source_memories: vec![],
            }),
        })
    };
    let mut relationship = match &every_kind_of_record()[3] {
        MemoryRecord::Fact(f) => f.clone(),
        _ => unreachable!(),
    };
    if let FactPayload::Relationship(r) = &mut relationship.payload {
        r.relationship_type = "knows someone".into();
    }
    let mut no_keyword = ingested(1, "summary");
    if let MemoryRecord::Event(Event {
        payload: EventPayload::Ingested(m),
        ..
    }) = &mut no_keyword
    {
        m.keywords.push(String::new());
    }
    vec![
        ("free-text key", fact("User Diet", "x")),
        ("empty key", fact("", "x")),
        ("NaN strength", semantic_fact(nan)),
        ("confidence above 1", semantic_fact(sure)),
        ("invalid_at before valid_at", semantic_fact(reversed)),
        ("empty content", semantic_fact(empty)),
        ("properties not an object", entity("[1,2]")),
        ("properties not JSON", entity("{not json")),
        (
            "relationship type not normalized",
            MemoryRecord::Fact(relationship),
        ),
        ("empty summary", ingested(1, "")),
        ("empty keyword", no_keyword),
        ("empty subject", state(1, "")),
    ]
}

backend_test! {
    fn io_w1_invalid_records_are_rejected_and_store_nothing(fx) {
        // proves IO-W1, IO-G1
        let mut alice = fx.open("alice");
        for (i, (why, record)) in invalid_records().into_iter().enumerate() {
            let before = fx.dump();
            let answer = alice
                .write(&request("alice", &format!("bad{i}"), record))
                .expect("the call succeeds");
            assert_eq!(answer, WriteResult::Rejected, "{}: {why}", fx.name);
            assert_eq!(fx.dump(), before, "{}: {why} stored something", fx.name);
            let last = fx.trail().pop().expect("an audit entry");
            assert_eq!(last.outcome, Audited::Rejected, "{why}");
            assert!(
                last.reason.is_some_and(|r| r.starts_with("invalid record")),
                "{why}"
            );
        }
    }
}

backend_test! {
    fn io_w2_a_replayed_request_returns_the_same_id_and_stores_nothing_new(fx) {
        // proves IO-W2
        let mut alice = fx.open("alice");
        for (i, record) in every_kind_of_record().into_iter().enumerate() {
            let request_id = format!("retry-{i}");
            let first = accept(&mut alice, &request_id, record.clone());
            let stored = fx.dump();
            for _ in 0..3 {
                let again = accept(&mut alice, &request_id, record.clone());
                assert_eq!(again, first, "{}: a replay names the first id", fx.name);
            }
            assert_eq!(fx.dump(), stored, "{}: a replay stores nothing", fx.name);
            let trail = fx.trail();
            let replays = trail
                .iter()
                .filter(|e| e.request_id == request_id && e.outcome == Audited::Replayed);
            assert_eq!(replays.count(), 3);
        }
    }
}

backend_test! {
    fn io_w2_a_request_id_reused_for_another_write_is_rejected(fx) {
        // proves IO-W2
        let mut alice = fx.open("alice");
        accept(
            &mut alice,
            "once",
            fact("user.diet", "Prefers vegetarian food"),
        );
        let stored = fx.dump();
        let mut other_actor = request(
            "alice",
            "once",
            fact("user.diet", "Prefers vegetarian food"),
        );
        other_actor.source.actor = SourceActor::External;
        for reuse in [
            request("alice", "once", fact("user.diet", "Prefers vegan food")),
            request(
                "alice",
                "once",
                fact("user.home", "Prefers vegetarian food"),
            ),
            request("alice", "once", ingested(1, "Prefers vegetarian food")),
            other_actor,
        ] {
            assert_eq!(
                alice.write(&reuse).unwrap(),
                WriteResult::Rejected,
                "{}",
                fx.name
            );
        }
        assert_eq!(fx.dump(), stored, "{}", fx.name);
    }
}

backend_test! {
    fn io_w2_request_ids_are_kept_as_given_and_never_interpreted(fx) {
        // proves IO-W2
        let odd = [
            "r-1",
            "R-1",
            " spaced id ",
            "ключ/\u{0}/\u{ff}",
            "I",
            "Mseq",
            "K.user.diet",
        ];
        let mut alice = fx.open("alice");
        let mut seen = Vec::new();
        for (i, request_id) in odd.iter().enumerate() {
            let id = accept(&mut alice, request_id, ingested(i as i64, "summary"));
            assert!(
                !seen.contains(&id),
                "{}: {request_id:?} collided with another request",
                fx.name
            );
            seen.push(id);
        }
        let trail = fx.trail();
        let logged: Vec<&str> = trail.iter().map(|e| e.request_id.as_str()).collect();
        assert_eq!(logged, odd, "{}: the trail keeps each id as given", fx.name);
        let answer = alice
            .write(&request("alice", "", ingested(1, "summary")))
            .unwrap();
        assert_eq!(answer, WriteResult::Rejected, "an empty request id");
    }
}

backend_test! {
    fn io_w2_concurrent_hosts_sending_one_request_store_one_record(fx) {
        // proves IO-W2 (two engine instances over one store race on a request id)
        for round in 0..10 {
            let request_id = format!("race-{round}");
            let answers: Vec<WriteResult> = std::thread::scope(|scope| {
                let handles: Vec<_> = (0..2)
                    .map(|_| {
                        let mut host = fx.open("alice");
                        let request = request("alice", &request_id, ingested(round, "summary"));
                        scope.spawn(move || host.write(&request).expect("the call succeeds"))
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            assert!(
                matches!(answers[0], WriteResult::Accepted(_)),
                "{}",
                fx.name
            );
            assert_eq!(
                answers[0], answers[1],
                "{}: both hosts name one record",
                fx.name
            );
        }
        let mut alice = fx.open("alice");
        assert_eq!(
            records(&mut alice, RecordType::Event, limit(CEILING)).len(),
            10,
            "{}",
            fx.name
        );
    }
}

backend_test! {
    fn io_w2_concurrent_writers_never_share_an_id(fx) {
        // proves IO-W2 (every accepted write is its own record)
        let ids: Vec<String> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..4)
                .map(|writer| {
                    let mut host = fx.open("alice");
                    scope.spawn(move || {
                        (0..10)
                            .map(|i| {
                                accept(&mut host, &format!("w{writer}-{i}"), ingested(i, "summary"))
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap())
                .collect()
        });
        let mut unique = ids.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), 40, "{}: {ids:?}", fx.name);
        let mut alice = fx.open("alice");
        assert_eq!(
            records(&mut alice, RecordType::Event, limit(CEILING)).len(),
            40
        );
    }
}

backend_test! {
    fn io_w8_writers_of_one_domain_take_turns_and_none_is_rejected(fx) {
        // proves IO-W8, IO-G1: contention alone rejects nothing. Eight
        // writers of one domain, each a write then a read, on one backend
        // (threads of one host) and, for a SQLite file, each on a store
        // opened apart as another process would: a writer that read, then
        // lost its commit to another, retries, and without turns one of them
        // loses every retry now and then.
        let apart = |_: usize| -> Option<std::sync::Arc<engram::SqliteBackend>> {
            fx.folder()
                .map(|dir| std::sync::Arc::new(engram::SqliteBackend::open(dir.join("engram.db")).unwrap()))
        };
        for separate in [false, true] {
            if separate && fx.folder().is_none() {
                continue;
            }
            let answers: Vec<WriteResult> = std::thread::scope(|scope| {
                let handles: Vec<_> = (0..8)
                    .map(|writer| {
                        let mut host = match apart(writer).filter(|_| separate) {
                            Some(store) => engram()
                                .open("alice", Mode::Online, store.clone(), store)
                                .unwrap(),
                            None => fx.open("alice"),
                        };
                        scope.spawn(move || {
                            (0..40)
                                .map(|i| {
                                    let id = format!("{separate}-w{writer}-{i}");
                                    let answer = host
                                        .write(&request("alice", &id, ingested(i, "summary")))
                                        .expect("the call succeeds");
                                    let _ = records(&mut host, RecordType::Event, limit(1));
                                    answer
                                })
                                .collect::<Vec<_>>()
                        })
                    })
                    .collect();
                handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
            });
            let rejected = answers.iter().filter(|a| **a == WriteResult::Rejected).count();
            assert_eq!(rejected, 0, "{}, stores apart {separate}: REJECTED under contention", fx.name);
            let mut ids: Vec<_> = answers
                .iter()
                .map(|a| match a {
                    WriteResult::Accepted(id) => id.clone(),
                    WriteResult::Rejected => unreachable!(),
                })
                .collect();
            ids.sort();
            ids.dedup();
            assert_eq!(ids.len(), 320, "{}: one record each", fx.name);
        }
    }
}

backend_test! {
    fn io_w5_the_actor_never_changes_an_outcome(fx) {
        // proves IO-W5, IO-W4: actor is traced, never decided on
        let mut alice = fx.open("alice");
        for (i, actor) in [
            SourceActor::System,
            SourceActor::User,
            SourceActor::External,
        ]
        .into_iter()
        .enumerate()
        {
            let mut ok = request("alice", &format!("a{i}"), ingested(i as i64, "summary"));
            ok.source.actor = actor;
            assert!(
                matches!(alice.write(&ok).unwrap(), WriteResult::Accepted(_)),
                "{actor:?}"
            );
            let mut refused = request("alice", &format!("m{i}"), ingested(i as i64, "summary"));
            refused.source.actor = actor;
            refused.source.component = SourceComponent::Maintenance;
            assert_eq!(
                alice.write(&refused).unwrap(),
                WriteResult::Rejected,
                "{actor:?}"
            );
        }
        let trail = fx.trail();
        let actors: Vec<_> = trail
            .iter()
            .filter_map(|e| e.source.as_ref().map(|s| s.actor))
            .collect();
        assert_eq!(
            actors.len(),
            6,
            "{}: every write's actor is in the trail",
            fx.name
        );
    }
}

backend_test! {
    fn io_w7_maintenance_writes_are_rejected_online(fx) {
        // proves IO-W7, IO-W4, S-MODE
        let mut alice = fx.open("alice");
        let before = fx.dump();
        let mut maintenance = request("alice", "m1", fact("user.diet", "x"));
        maintenance.source.component = SourceComponent::Maintenance;
        assert_eq!(
            alice.write(&maintenance).unwrap(),
            WriteResult::Rejected,
            "{}",
            fx.name
        );
        assert_eq!(fx.dump(), before);
        let reason = fx.trail().pop().unwrap().reason.unwrap();
        assert!(reason.contains("IO-W7"), "{reason}");
        // The same request is accepted once the host opens the domain for
        // maintenance, where cognition may not write.
        let mut offline = fx.open_in("alice", Mode::Maintenance);
        assert!(
            matches!(
                offline.write(&maintenance).unwrap(),
                WriteResult::Accepted(_)
            ),
            "{}",
            fx.name
        );
        let cognition = request("alice", "c1", fact("user.diet", "y"));
        assert_eq!(offline.write(&cognition).unwrap(), WriteResult::Rejected);
        assert_eq!(
            records(&mut offline, RecordType::Fact, by_key("user.diet")).len(),
            1,
            "reads still work"
        );
    }
}

backend_test! {
    fn io_w8_the_answer_is_binary_and_the_reason_stays_in_the_audit_trail(fx) {
        // proves IO-W8, IO-G1
        let mut alice = fx.open("alice");
        let accepted = alice
            .write(&request("alice", "ok", fact("user.diet", "x")))
            .unwrap();
        let WriteResult::Accepted(id) = accepted else {
            panic!("{}: accepted", fx.name)
        };
        assert!(!id.is_empty());
        let rejected = alice
            .write(&request("alice", "bad", fact("Not A Key", "x")))
            .unwrap();
        // REJECTED carries nothing: the variant has no payload to put a
        // reason in, and the call is not an error.
        assert_eq!(rejected, WriteResult::Rejected);
        let trail = fx.trail();
        assert_eq!(trail[0].outcome, Audited::Accepted);
        assert_eq!(trail[0].stored_id.as_deref(), Some(id.as_str()));
        assert_eq!(trail[1].outcome, Audited::Rejected);
        assert!(
            trail[1].stored_id.is_none(),
            "no stored id without ACCEPTED"
        );
        assert!(
            trail[1]
                .reason
                .as_deref()
                .unwrap()
                .contains("\"Not A Key\"")
        );
    }
}

backend_test! {
    fn io_g1_a_rejection_leaves_the_domain_usable(fx) {
        // proves IO-G1
        let mut alice = fx.open("alice");
        for i in 0..5 {
            assert_eq!(
                alice
                    .write(&request("alice", &format!("bad{i}"), fact("", "x")))
                    .unwrap(),
                WriteResult::Rejected
            );
        }
        accept(&mut alice, "good", fact("user.diet", "x"));
        assert_eq!(
            records(&mut alice, RecordType::Fact, by_key("user.diet")).len(),
            1,
            "{}",
            fx.name
        );
    }
}

backend_test! {
    fn io_r4_writing_a_key_again_supersedes_and_keeps_the_old_version(fx) {
        // proves IO-R4 (one current version per key), MT-2 (closed, not erased)
        let mut alice = fx.open("alice");
        let old = accept(&mut alice, "v1", fact("user.diet", "Vegetarian"));
        let new = accept(&mut alice, "v2", fact("user.diet", "Vegan"));
        assert_ne!(old, new);
        let current = records(&mut alice, RecordType::Fact, by_key("user.diet"));
        assert_eq!(ids(&current), std::slice::from_ref(&new), "{}", fx.name);
        let StoredRecord::Fact(previous) = &records(&mut alice, RecordType::Fact, by_id(&old))[0]
        else {
            panic!()
        };
        assert!(
            previous
                .superseded_at
                .is_some_and(|t| t >= previous.created_at),
            "{}: closed",
            fx.name
        );
        let StoredRecord::Fact(now) = &current[0] else {
            panic!()
        };
        assert_eq!(now.superseded_at, None);
        assert_eq!(
            ids(&records(&mut alice, RecordType::Fact, limit(10))),
            [new],
            "Limit lists current versions"
        );
    }
}
