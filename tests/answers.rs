//! One answer carries a bounded number of bytes (IO-G6): no valid read over
//! valid data can run the engine out of memory. Records as large as the host
//! accepts are written, then read in numbers the read-limit ceiling allows.

mod support;

use engram::graph::{EdgeDirection, RelationshipsRequest, TraversalOrder, TraverseRequest};
use engram::io::ReadError;
use engram::types::*;
use engram::{Config, Engram, MemoryAudit, MemoryBackend, Mode, Summarizer};
use std::sync::Arc;
use support::*;

/// A FACT whose content makes it `bytes` long.
fn big_fact(key: &str, bytes: usize) -> MemoryRecord {
    fact(key, &"x".repeat(bytes))
}

/// The bytes every stored record (`R` entry) of `agent` takes in `backend`.
fn stored_record_bytes(backend: &MemoryBackend, agent: &str) -> Vec<usize> {
    let mut prefix = (agent.len() as u32).to_be_bytes().to_vec();
    prefix.extend_from_slice(agent.as_bytes());
    prefix.push(b'R');
    let mut end = prefix.clone();
    *end.last_mut().unwrap() += 1;
    engram::Backend::scan(
        backend,
        &prefix,
        &end,
        10_000,
        engram::backend::Order::Ascending,
    )
    .unwrap()
    .into_iter()
    .map(|(_, value)| value.len())
    .collect()
}

fn engine(max_answer_bytes: u64) -> Engram {
    Engram::with_config(Config {
        read_limit_ceiling: 1_000,
        max_answer_bytes,
        max_live_domains: None,
        ..Config::default()
    })
    .unwrap()
}

#[test]
fn io_g6_a_read_of_many_records_of_the_largest_size_is_refused_not_a_trap() {
    // proves IO-G6, S-LIMITS: 80 records of ~1 MB each and a read of 100 (ceiling
    // 1,000) is answered AnswerTooLarge, not a stopped engine; fewer fit.
    let engram = engine(16 << 20);
    let backend = Arc::new(MemoryBackend::new());
    let mut alice = engram
        .open(
            "alice",
            Mode::Online,
            backend.clone(),
            Arc::new(MemoryAudit::new()),
        )
        .unwrap();
    for i in 0..80 {
        accept(
            &mut alice,
            &format!("f{i}"),
            big_fact(&format!("big.f{i}"), 1_000_000),
        );
    }
    let error = refused(&mut alice, RecordType::Fact, limit(100));
    assert_eq!(error, ReadError::AnswerTooLarge(16 << 20));
    assert_eq!(records(&mut alice, RecordType::Fact, limit(15)).len(), 15);
    // The history and graph reads are bounded the same way.
    let versions = alice
        .versions(&engram::history::VersionsRequest {
            request_id: "h".into(),
            key: "big.f1".into(),
            limit: 10,
        })
        .unwrap();
    assert_eq!(versions.map(|v| v.len()), Ok(1));
    let listed = alice.list("l", &vec!["big".to_string()], 100).unwrap();
    assert_eq!(listed, Err(ReadError::AnswerTooLarge(16 << 20)));
    assert_eq!(alice.restarts(), 0, "no read stopped the engine");
}

#[test]
fn io_g6_the_answer_bound_holds_to_the_byte() {
    // proves IO-G6, S-LIMITS: an answer of exactly the ceiling is returned, one byte
    // more is refused whole.
    let backend = Arc::new(MemoryBackend::new());
    let audit = Arc::new(MemoryAudit::new());
    {
        let mut alice = engine(1 << 20)
            .open("alice", Mode::Online, backend.clone(), audit.clone())
            .unwrap();
        for i in 0..5 {
            accept(
                &mut alice,
                &format!("f{i}"),
                big_fact(&format!("k.f{i}"), 10_000 + i),
            );
        }
    }
    let total: usize = stored_record_bytes(&backend, "alice").iter().sum();
    for (ceiling, fits) in [(total, true), (total - 1, false)] {
        let mut alice = engine(ceiling as u64)
            .open("alice", Mode::Online, backend.clone(), audit.clone())
            .unwrap();
        if fits {
            assert_eq!(records(&mut alice, RecordType::Fact, limit(5)).len(), 5);
        } else {
            assert_eq!(
                refused(&mut alice, RecordType::Fact, limit(5)),
                ReadError::AnswerTooLarge(ceiling as u64)
            );
            assert_eq!(records(&mut alice, RecordType::Fact, limit(4)).len(), 4);
        }
    }
}

backend_test! {
    fn an_ingested_memory_is_a_summary_not_a_transcript(fx) {
        // proves S-INGEST, IO-G6: a 1 MB "summary" is refused, so no retrieval can
        // gather candidates past the engine's memory; the largest allowed ones
        // are gathered and ranked.
        let mut alice = fx.open("alice");
        let huge = MemoryRecord::Event(Event {
            timestamp: 1,
            payload: EventPayload::Ingested(IngestedMemory {
                session_ref: "s".into(),
                summary: "pottery ".repeat(125_000),
                keywords: vec!["pottery".into()],
            }),
        });
        let answer = alice.write(&request("alice", "huge", huge)).unwrap();
        assert_eq!(answer, engram::io::WriteResult::Rejected, "{}", fx.name);
        // The question's keyword as the summarizer normalizes it, last of
        // the most keywords a memory may have.
        let question = "Tell me about the pottery class";
        let pottery = engram::ExtractiveSummarizer::default()
            .summarize("pottery", None)
            .unwrap()
            .keywords;
        assert_eq!(pottery.len(), 1);
        let mut keywords: Vec<String> = (0..127).map(|i| format!("{i:0>200}")).collect();
        keywords.extend(pottery);
        let summary = |i: i64| format!("pottery {i:02} {}", "y".repeat(4_096 - 11));
        let mut written = std::collections::BTreeMap::new();
        for i in 0..40 {
            assert_eq!(summary(i).len(), 4_096, "the largest summary allowed");
            let largest = MemoryRecord::Event(Event {
                timestamp: i,
                payload: EventPayload::Ingested(IngestedMemory {
                    session_ref: "s".repeat(256),
                    summary: summary(i),
                    keywords: keywords.clone(),
                }),
            });
            written.insert(accept(&mut alice, &format!("big-{i}"), largest), i);
        }
        let plan = engram::plans::recall(10);
        let cycle = alice.begin_cycle(&plan, "s", "q").unwrap().unwrap();
        let input = engram::cycle::TurnInput {
            user_message: Some(question.into()),
            model_response: None,
        };
        let steps = alice
            .run_stage(&cycle, engram::cycle::Stage::ContextSelect, &input)
            .unwrap()
            .unwrap_or_else(|e| panic!("{}: {e:?}", fx.name));
        alice.drop_cycle(cycle).unwrap();
        assert_eq!(alice.restarts(), 0);
        // Ten of the forty, whole: each one written, with its own summary
        // and time, none twice.
        let selected = steps
            .into_iter()
            .find_map(|s| match s.output {
                engram::cycle::StepOutput::Selected(memories) => Some(memories),
                _ => None,
            })
            .expect("a selection");
        assert_eq!(selected.len(), 10, "{}", fx.name);
        let mut seen = std::collections::BTreeSet::new();
        for memory in &selected {
            let i = written[&memory.id];
            assert!(seen.insert(i), "{} selected twice", memory.id);
            assert_eq!(memory.timestamp, i);
            assert_eq!(memory.summary, summary(i));
        }
    }
}

/// A small breadth-first walk from `start`.
fn walk_from(start: &str) -> TraverseRequest {
    TraverseRequest {
        request_id: "t".into(),
        start: start.into(),
        order: TraversalOrder::BreadthFirst,
        direction: EdgeDirection::Outgoing,
        relationship_types: vec![],
        valid_at: None,
        max_depth: 2,
        max_nodes: 10,
        max_edges: 10,
    }
}

backend_test! {
    fn io_r4_lookups_and_traversals_refuse_a_key_that_is_not_normalized(fx) {
        // proves IO-R4, MT-8, MT-9: as `list` and `history` do, with InvalidKey
        // rather than an empty answer; a relationship end must be a key too.
        let mut alice = fx.open("alice");
        for start in ["Sarah Smith", "entity..x", "", "user/diet"] {
            let lookup = alice
                .relationships_of(&RelationshipsRequest {
                    request_id: "r".into(),
                    entity: start.into(),
                    direction: EdgeDirection::Outgoing,
                    relationship_types: vec![],
                    valid_at: None,
                    limit: 10,
                })
                .unwrap();
            assert_eq!(lookup, Err(ReadError::InvalidKey), "{}: {start:?}", fx.name);
            let walk = alice.traverse(&walk_from(start)).unwrap();
            assert_eq!(walk.map(|_| ()), Err(ReadError::InvalidKey), "{}", fx.name);
        }
        // A pseudo-entity and a key are fine.
        for start in ["USER", "entity.sarah"] {
            let walk = alice.traverse(&walk_from(start)).unwrap();
            assert!(walk.is_ok(), "{}: {start}", fx.name);
        }
        let free_text = MemoryRecord::Fact(Fact {
            key: "rel.user.knows.sarah".into(),
            payload: FactPayload::Relationship(Relationship {
                from_entity: "USER".into(),
                to_entity: "Sarah Smith".into(),
                relationship_type: "KNOWS".into(),
                valid_at: 1,
                invalid_at: None,
                properties: "{}".into(),
                source_memories: vec![],
            }),
        });
        assert_eq!(
            alice.write(&request("alice", "rel", free_text)).unwrap(),
            engram::io::WriteResult::Rejected
        );
    }
}

/// A write whose properties hold numbers in forms JSON allows.
const EXACT_PROPERTIES: &str = r#"{"request_id":"s1","source":{"agent_id":"alice","component":"COGNITION","actor":"USER"},"record":{"record_type":"STATE","timestamp":5,"payload":{"subject":"mission.current","properties":{"n":1e5,"big":12345678901234567890,"x":1.50}}}}"#;

backend_test! {
    fn io_w1_properties_come_back_as_the_exact_text_written(fx) {
        // proves IO-W1, IO-R6: numbers in properties are not re-encoded on the
        // way in, so a read gives back the very text written.
        let request: engram::json::WriteRequest = serde_json::from_str(EXACT_PROPERTIES).unwrap();
        let mut alice = fx.open("alice");
        let answer = alice.write(&request.into()).unwrap();
        assert!(matches!(answer, engram::io::WriteResult::Accepted(_)));
        let found = records(&mut alice, RecordType::State, latest(1));
        let shown =
            serde_json::to_string(&engram::json::StoredRecord::from(found[0].clone())).unwrap();
        assert!(
            shown.contains(r#""properties":{"n":1e5,"big":12345678901234567890,"x":1.50}"#),
            "{}: {shown}",
            fx.name
        );
    }
}

#[test]
fn properties_that_are_not_one_json_object_are_malformed_input() {
    let bad = EXACT_PROPERTIES.replace(r#"{"n":1e5,"big":12345678901234567890,"x":1.50}"#, "[1]");
    let error = serde_json::from_str::<engram::json::WriteRequest>(&bad).expect_err("refused");
    assert!(
        error
            .to_string()
            .contains("`properties` as one JSON object"),
        "{error}"
    );
}
