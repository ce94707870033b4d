//! The limits the host sets around the engine: the largest record and the
//! largest batch (answered through the contract, REJECTED with the reason
//! in the audit trail), the number of live domains, and the defaults the
//! documentation promises.

mod support;

use engram::io::WriteResult;
use engram::limits::record_size;
use engram::types::*;
use engram::{Config, Engram, MemoryAudit, MemoryBackend, Mode, audit};
use std::sync::{Arc, LazyLock};
use std::time::Duration;
use support::*;

const MAX_RECORD: usize = 4096;
const MAX_OPS: u32 = 12;
const MAX_BYTES: usize = 8192;

/// An engine with small record and batch limits.
fn small() -> &'static Engram {
    static ENGRAM: LazyLock<Engram> = LazyLock::new(|| {
        Engram::with_config(Config {
            read_limit_ceiling: CEILING,
            max_record_bytes: MAX_RECORD,
            max_batch_ops: MAX_OPS,
            max_batch_bytes: MAX_BYTES,
            max_live_domains: Some(64),
            ..Config::default()
        })
        .expect("the engine compiles")
    });
    &ENGRAM
}

fn open(fixture: &Fixture, agent: &str) -> engram::Domain {
    small()
        .open(
            agent,
            Mode::Online,
            fixture.backend.clone(),
            fixture.audit.clone(),
        )
        .expect("the domain opens")
}

/// A semantic FACT whose size, as the host measures it, is exactly `size`.
fn fact_of_size(key: &str, size: usize) -> MemoryRecord {
    let probe = fact(key, "");
    let content = "a".repeat(size - record_size(&probe));
    let record = fact(key, &content);
    assert_eq!(record_size(&record), size);
    record
}

fn last_entry(fixture: &Fixture) -> engram::AuditEntry {
    fixture.trail().pop().expect("an audit entry")
}

backend_test! {
    fn io_w8_a_record_above_the_limit_is_rejected_with_the_reason_audited(fixture) {
        // proves IO-W8, IO-G1, S-LIMITS: REJECTED is the whole answer, the
        // reason is in the audit trail, for the host's record limit
        let mut alice = open(&fixture, "alice");
        let at_limit = accept(&mut alice, "w-1", fact_of_size("user.bio", MAX_RECORD));
        let before = fixture.dump();

        let answer = alice
            .write(&request(
                "alice",
                "w-2",
                fact_of_size("user.notes", MAX_RECORD + 1),
            ))
            .expect("the call succeeds");
        assert_eq!(answer, WriteResult::Rejected, "{}", fixture.name);
        assert_eq!(fixture.dump(), before, "{}: nothing stored", fixture.name);
        let entry = last_entry(&fixture);
        assert_eq!(entry.request_id, "w-2");
        assert_eq!(entry.outcome, audit::Outcome::Rejected);
        assert_eq!(entry.operation, audit::Operation::Write);
        assert!(entry.source.is_some());
        let reason = entry.reason.expect("a reason");
        assert!(reason.contains("max_record_bytes"), "{reason}");
        assert!(reason.contains(&(MAX_RECORD + 1).to_string()), "{reason}");

        // The request id was not used up: the same id with a record that
        // fits is a new write (IO-W2).
        let fits = accept(&mut alice, "w-2", fact("user.notes", "short"));
        assert_ne!(fits, at_limit);
        assert_eq!(alice.restarts(), 0, "nothing was stopped");
    }
}

backend_test! {
    fn every_kind_of_record_is_measured(fixture) {
        let long = "x".repeat(MAX_RECORD);
        let records = [
            episode(1, &long),
            ingested(1, &long),
            MemoryRecord::State(State {
                timestamp: 1,
                payload: StateSnapshot {
                    subject: "s".into(),
                    properties: format!("{{\"a\":\"{long}\"}}"),
                },
            }),
        ];
        let mut alice = open(&fixture, "alice");
        for (i, record) in records.iter().enumerate() {
            assert!(record_size(record) > MAX_RECORD);
            let answer = alice
                .write(&request("alice", &format!("w-{i}"), record.clone()))
                .unwrap();
            assert_eq!(answer, WriteResult::Rejected, "{i}");
        }
        assert_eq!(fixture.dump(), Vec::new(), "{}", fixture.name);
    }
}

backend_test! {
    fn a_graph_put_above_the_limit_is_rejected(fixture) {
        // proves S-LIMITS, MT-7: graph puts go through the same write limits
        let mut alice = open(&fixture, "alice");
        let put = engram::graph::PutRequest {
            namespace: vec!["entities".into(), "u1".into()],
            id: "sarah".into(),
            value: FactPayload::Entity(Entity {
                name: "Sarah".into(),
                entity_type: EntityType::Person,
                properties: format!("{{\"bio\":\"{}\"}}", "b".repeat(MAX_RECORD)),
                first_seen: 1,
                last_mentioned: 1,
                mention_count: 1,
                source_memories: vec![],
            }),
            source: source("alice"),
            request_id: "p-1".into(),
        };
        assert_eq!(alice.put(&put).unwrap(), WriteResult::Rejected);
        assert_eq!(fixture.dump(), Vec::new());
        let reason = last_entry(&fixture).reason.unwrap();
        assert!(reason.contains("max_record_bytes"), "{reason}");
    }
}

backend_test! {
    fn io_w8_a_batch_above_the_limit_is_rejected_and_stores_nothing(fixture) {
        // proves IO-W8, IO-G1, S-LIMITS: for the host's batch limits, an ingested
        // memory with many keywords is one commit of many index entries
        let mut alice = open(&fixture, "alice");
        let keywords: Vec<String> = (0..MAX_OPS).map(|i| format!("keyword{i}")).collect();
        let record = MemoryRecord::Event(Event {
            timestamp: 1,
            payload: EventPayload::Ingested(IngestedMemory {
                session_ref: "session-1".into(),
                summary: "Alice planned a trip".into(),
                keywords,
            }),
        });
        assert!(record_size(&record) <= MAX_RECORD);
        let answer = alice.write(&request("alice", "w-1", record)).unwrap();
        assert_eq!(answer, WriteResult::Rejected, "{}", fixture.name);
        assert_eq!(fixture.dump(), Vec::new(), "{}", fixture.name);
        let entry = last_entry(&fixture);
        assert_eq!(entry.outcome, audit::Outcome::Rejected);
        let reason = entry.reason.unwrap();
        assert!(reason.contains("max_batch_ops"), "{reason}");

        // The same memory with fewer keywords fits.
        accept(&mut alice, "w-2", ingested(1, "Alice planned a trip"));
    }
}

backend_test! {
    fn a_commit_above_the_batch_bytes_is_rejected(fixture) {
        let engram = Engram::with_config(Config {
            max_batch_bytes: 1024,
            ..Config::default()
        })
        .expect("the engine compiles");
        let mut alice = engram
            .open(
                "alice",
                Mode::Online,
                fixture.backend.clone(),
                fixture.audit.clone(),
            )
            .unwrap();
        let answer = alice
            .write(&request("alice", "w-1", fact_of_size("user.bio", 2000)))
            .unwrap();
        assert_eq!(answer, WriteResult::Rejected);
        assert_eq!(fixture.dump(), Vec::new());
        let reason = last_entry(&fixture).reason.unwrap();
        assert!(reason.contains("max_batch_bytes"), "{reason}");
        accept(&mut alice, "w-2", fact("user.diet", "vegetarian"));
    }
}

backend_test! {
    fn a_summary_above_the_record_limit_fails_its_cycle(fixture) {
        // proves B5-F2, B5-D1, S-LIMITS: the record limit inside a cycle
        struct Verbose;
        impl engram::Summarizer for Verbose {
            fn summarize(&self, _: &str, _: Option<&str>) -> Result<engram::Summary, String> {
                Ok(engram::Summary {
                    summary: "trip ".repeat(MAX_RECORD),
                    keywords: vec!["trip".into()],
                })
            }
        }
        let mut alice = open(&fixture, "alice").with_summarizer(Arc::new(Verbose));
        let cycle = alice
            .begin_cycle(&engram::plans::ingest(), "session-1", "turn-1")
            .unwrap()
            .unwrap();
        let input = engram::cycle::TurnInput {
            user_message: Some("Plan a trip".into()),
            model_response: Some("Sure".into()),
        };
        let failed = alice
            .run_stage(&cycle, engram::cycle::Stage::SummarizeMemory, &input)
            .expect("the call succeeds");
        match failed {
            Err(engram::cycle::CycleError::SummarizerFailed(why)) => {
                assert!(why.contains("max_record_bytes"), "{why}")
            }
            other => panic!("expected a failed summarizer, got {other:?}"),
        }
        alice.drop_cycle(cycle).unwrap();
        assert_eq!(fixture.dump(), Vec::new());
    }
}

#[test]
fn opening_past_the_live_domain_limit_fails_at_once_and_a_closed_domain_frees_its_slot() {
    let engram = Engram::with_config(Config {
        max_live_domains: Some(2),
        ..Config::default()
    })
    .expect("the engine compiles");
    let backend = Arc::new(MemoryBackend::new());
    let audit = Arc::new(MemoryAudit::new());
    let open = |agent: &str| engram.open(agent, Mode::Online, backend.clone(), audit.clone());
    let mut a = open("a").expect("a slot is free");
    let b = open("b").expect("a slot is free");
    assert_eq!(engram.live_domains(), 2);
    let error = format!("{:#}", open("c").err().expect("no slot is free"));
    assert!(error.contains("max_live_domains"), "{error}");
    assert_eq!(engram.live_domains(), 2);

    drop(b);
    assert_eq!(engram.live_domains(), 1);
    let mut c = open("c").expect("b's slot was given back");
    accept(&mut a, "w-1", state(1, "s"));
    accept(&mut c, "w-1", state(1, "s"));
    drop((a, c));
    assert_eq!(engram.live_domains(), 0);
}

#[test]
fn instances_can_be_allocated_on_demand_without_a_pool() {
    let engram = Engram::with_config(Config {
        max_live_domains: None,
        call_timeout: None,
        ..Config::default()
    })
    .expect("the engine compiles");
    let fixture = Fixture::sqlite();
    let mut domains: Vec<_> = (0..3)
        .map(|i| {
            engram
                .open(
                    &format!("agent-{i}"),
                    Mode::Online,
                    fixture.backend.clone(),
                    fixture.audit.clone(),
                )
                .unwrap()
        })
        .collect();
    for domain in &mut domains {
        let id = accept(domain, "w-1", state(1, "s"));
        assert_eq!(ids(&records(domain, RecordType::State, latest(1))), [id]);
    }
    assert_eq!(engram.live_domains(), 3);
}

#[test]
fn the_documented_defaults_hold() {
    let config = Config::default();
    assert_eq!(config.read_limit_ceiling, 1_000);
    assert_eq!(config.candidate_limit, 256);
    assert_eq!(config.max_record_bytes, 1 << 20);
    assert_eq!(config.max_batch_ops, 10_000);
    assert_eq!(config.max_batch_bytes, 16 << 20);
    assert_eq!(config.max_memory_bytes, 64 << 20);
    assert_eq!(config.max_table_elements, 10_000);
    assert_eq!(config.call_timeout, Some(Duration::from_secs(10)));
    assert_eq!(config.max_live_domains, Some(1_000));
    assert_eq!(config.cache_dir, None);
}

#[test]
fn limits_that_cannot_work_are_refused_up_front() {
    // proves S-LIMITS: each limit that cannot work is refused with what it
    // must be; the smallest that can work is taken
    let refused = |config: Config, says: &str| {
        let error = Engram::with_config(config)
            .err()
            .expect("refused")
            .to_string();
        assert!(error.contains(says), "{error}");
    };
    refused(
        Config {
            read_limit_ceiling: 0,
            ..Config::default()
        },
        "the read-limit ceiling and the candidate limit must be at least 1",
    );
    refused(
        Config {
            max_record_bytes: 0,
            ..Config::default()
        },
        "the record and batch limits must be at least 1",
    );
    refused(
        Config {
            max_batch_ops: 0,
            ..Config::default()
        },
        "the record and batch limits must be at least 1",
    );
    refused(
        Config {
            max_memory_bytes: (2 << 20) - 1,
            ..Config::default()
        },
        "the memory limit must be between 2 MiB and 4 GiB",
    );
    refused(
        Config {
            call_timeout: Some(Duration::ZERO),
            ..Config::default()
        },
        "a call time limit must be above zero",
    );
    refused(
        Config {
            max_live_domains: Some(0),
            ..Config::default()
        },
        "the number of live domains must be at least 1",
    );
    // The smallest of each that can work, all at once, is taken.
    let smallest = Engram::with_config(Config {
        read_limit_ceiling: 1,
        candidate_limit: 1,
        max_answer_bytes: 1,
        max_record_bytes: 1,
        max_batch_ops: 1,
        max_batch_bytes: 1,
        max_memory_bytes: 2 << 20,
        call_timeout: Some(Duration::from_nanos(1)),
        max_live_domains: Some(1),
        ..Config::default()
    });
    assert!(smallest.is_ok(), "{:?}", smallest.err());
}
