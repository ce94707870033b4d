//! A guest that is stopped — past its time limit, past its memory limit —
//! and the host that recovers: the call errs, nothing of it is stored, a
//! cycle in flight is gone, and the next call on the same domain runs on a
//! fresh instance. Faults are injected for real: a backend (around a real
//! store) and a summarizer that block past the deadline, and a request that
//! makes the real engine grow its memory past the limit.

mod support;

use engram::cycle::{Stage, TurnInput};
use engram::io::WriteResult;
use engram::types::RecordType;
use engram::{
    Backend, Config, Domain, Engram, ExtractiveSummarizer, Mode, Summarizer, Summary, audit,
};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::Duration;
use support::*;

/// Far above what any call needs, even in a debug build on a busy machine.
const TIME_LIMIT: Duration = Duration::from_secs(2);
/// How long an injected fault blocks: well past the time limit.
const BLOCK: Duration = Duration::from_secs(5);

/// An engine whose calls may run for [`TIME_LIMIT`].
fn timed() -> &'static Engram {
    static ENGRAM: LazyLock<Engram> = LazyLock::new(|| {
        Engram::with_config(Config {
            read_limit_ceiling: CEILING,
            call_timeout: Some(TIME_LIMIT),
            ..Config::default()
        })
        .expect("the engine compiles")
    });
    &ENGRAM
}

/// The real summarizer, made to block past the deadline on demand.
struct SlowSummarizer {
    blocking: AtomicBool,
}

impl Summarizer for SlowSummarizer {
    fn summarize(&self, message: &str, response: Option<&str>) -> Result<Summary, String> {
        if self.blocking.load(Ordering::SeqCst) {
            std::thread::sleep(BLOCK);
        }
        ExtractiveSummarizer::default().summarize(message, response)
    }
}

fn open(engram: &Engram, fixture: &Fixture, agent: &str, backend: Arc<dyn Backend>) -> Domain {
    engram
        .open(agent, Mode::Online, backend, fixture.audit.clone())
        .expect("the domain opens")
}

fn failed_entries(fixture: &Fixture) -> Vec<engram::AuditEntry> {
    fixture
        .trail()
        .into_iter()
        .filter(|e| e.outcome == audit::Outcome::Failed)
        .collect()
}

#[test]
fn a_call_past_its_time_limit_errs_stores_nothing_and_the_next_call_gets_a_fresh_instance() {
    // proves IO-G1 (a failed call is an error, not an answer) and that a
    // stopped write persists nothing: the retry of its request id is new
    // (IO-W2)
    for fixture in fixtures() {
        let slow = Faulty::over(fixture.backend.clone());
        let mut alice = open(timed(), &fixture, "alice", slow.clone());
        let mut bob = open(timed(), &fixture, "bob", fixture.backend.clone());
        let first = accept(&mut alice, "w-1", state(1, "mission.current"));
        let before = fixture.dump();

        slow.stall(Some(BLOCK));
        let stopped = alice.write(&request("alice", "w-2", state(2, "mission.next")));
        slow.stall(None);
        let error = format!("{:#}", stopped.expect_err("the call is stopped"));
        assert!(error.contains("time limit"), "{}: {error}", fixture.name);
        assert_eq!(alice.restarts(), 1, "{}", fixture.name);

        // Nothing of the stopped call reached the store.
        assert_eq!(fixture.dump(), before, "{}", fixture.name);
        // The trail says what happened to it.
        let failed = failed_entries(&fixture);
        assert_eq!(failed.len(), 1, "{}", fixture.name);
        assert_eq!(failed[0].request_id, "w-2");
        assert_eq!(failed[0].operation, audit::Operation::Write);
        assert!(failed[0].reason.as_deref().unwrap().contains("time limit"));

        // Another domain of the same engine never noticed.
        accept(&mut bob, "b-1", state(3, "bob.mission"));

        // The same domain answers again, on a fresh instance: the retry is
        // stored as new, so the stopped attempt had stored nothing.
        let retried = accept(&mut alice, "w-2", state(2, "mission.next"));
        assert_ne!(retried, first);
        let found = records(&mut alice, RecordType::State, latest(10));
        assert_eq!(ids(&found), vec![retried, first], "{}", fixture.name);
        assert_eq!(alice.restarts(), 1);
    }
}

#[test]
fn a_read_past_its_time_limit_errs_and_the_domain_reads_again() {
    for fixture in fixtures() {
        let slow = Faulty::over(fixture.backend.clone());
        let mut alice = open(timed(), &fixture, "alice", slow.clone());
        let id = accept(&mut alice, "w-1", state(1, "mission.current"));

        slow.stall(Some(BLOCK));
        let stopped = alice.read(&read(RecordType::State, latest(10)));
        slow.stall(None);
        assert!(stopped.is_err(), "{}", fixture.name);
        assert_eq!(failed_entries(&fixture).len(), 1);

        let found = records(&mut alice, RecordType::State, by_id(&id));
        assert_eq!(ids(&found), vec![id], "{}", fixture.name);
    }
}

#[test]
fn b5_d1_a_cycle_whose_instance_was_stopped_is_gone_and_persisted_nothing() {
    // proves B5-D1: nothing of a cycle is saved unless the whole cycle
    // finished and committed; its instance being stopped mid-cycle is a
    // failure like any other
    for fixture in fixtures() {
        let summarizer = Arc::new(SlowSummarizer {
            blocking: AtomicBool::new(false),
        });
        let mut alice = open(timed(), &fixture, "alice", fixture.backend.clone())
            .with_summarizer(summarizer.clone());
        let plan = engram::plans::ingest();
        let input = TurnInput {
            user_message: Some("Book me a direct flight to Lisbon on Friday morning.".into()),
            model_response: Some("I found a direct TAP flight to Lisbon at 9:05.".into()),
        };
        let before = fixture.dump();

        let cycle = alice
            .begin_cycle(&plan, "session-1", "turn-1")
            .expect("the call succeeds")
            .expect("the plan is valid");
        summarizer.blocking.store(true, Ordering::SeqCst);
        let stopped = alice.run_stage(&cycle, Stage::SummarizeMemory, &input);
        summarizer.blocking.store(false, Ordering::SeqCst);
        assert!(stopped.is_err(), "{}", fixture.name);

        // The cycle went with its instance: it cannot run or commit.
        let commit = alice.commit_cycle(&cycle);
        let error = format!("{:#}", commit.expect_err("the cycle is gone"));
        assert!(error.contains("lost"), "{error}");
        assert!(
            alice
                .run_stage(&cycle, Stage::PersistMemory, &input)
                .is_err()
        );
        alice
            .drop_cycle(cycle)
            .expect("dropping a lost cycle is fine");
        assert_eq!(fixture.dump(), before, "{}", fixture.name);

        // The same domain runs the same turn again, whole, on a fresh
        // instance with the same summarizer.
        let cycle = alice
            .begin_cycle(&plan, "session-1", "turn-1")
            .expect("the call succeeds")
            .expect("the plan is valid");
        for stage in [Stage::SummarizeMemory, Stage::PersistMemory] {
            alice
                .run_stage(&cycle, stage, &input)
                .expect("the call succeeds")
                .expect("the stage runs");
        }
        let ids = alice
            .commit_cycle(&cycle)
            .expect("the call succeeds")
            .expect("the cycle commits");
        alice.drop_cycle(cycle).unwrap();
        assert_eq!(ids.len(), 1);
        let stored = records(&mut alice, RecordType::Event, by_id(&ids[0]));
        assert_eq!(stored.len(), 1, "{}", fixture.name);
        assert_eq!(alice.restarts(), 1);
    }
}

#[test]
fn a_cycle_in_flight_is_gone_when_another_call_stops_its_instance() {
    // proves B5-D1 for a cycle that did nothing wrong itself
    let fixture = Fixture::sqlite();
    let slow = Faulty::over(fixture.backend.clone());
    let mut alice = open(timed(), &fixture, "alice", slow.clone());
    let plan = engram::plans::ingest();
    let input = TurnInput {
        user_message: Some("Remind me to renew my passport in March.".into()),
        model_response: Some("I will remind you in March to renew your passport.".into()),
    };
    let cycle = alice
        .begin_cycle(&plan, "session-1", "turn-1")
        .unwrap()
        .unwrap();
    alice
        .run_stage(&cycle, Stage::SummarizeMemory, &input)
        .unwrap()
        .unwrap();

    slow.stall(Some(BLOCK));
    assert!(
        alice
            .write(&request("alice", "w-1", state(1, "mission.current")))
            .is_err()
    );
    slow.stall(None);

    assert!(alice.commit_cycle(&cycle).is_err());
    alice.drop_cycle(cycle).unwrap();
    assert_eq!(fixture.dump(), Vec::new(), "nothing was stored");
    accept(&mut alice, "w-1", state(1, "mission.current"));
}

#[test]
fn a_request_that_grows_memory_past_the_limit_stops_the_instance_and_the_domain_recovers() {
    // The memory limit is the smallest allowed (2 MiB; the engine starts
    // with a little over 1 MiB); the record limit is lifted so the request
    // reaches the engine, which must copy it into its memory.
    let engram = Engram::with_config(Config {
        max_memory_bytes: 2 << 20,
        max_record_bytes: 64 << 20,
        max_batch_bytes: 64 << 20,
        ..Config::default()
    })
    .expect("the engine compiles");
    for fixture in fixtures() {
        let mut alice = open(&engram, &fixture, "alice", fixture.backend.clone());
        let first = accept(&mut alice, "w-1", fact("user.diet", "vegetarian"));
        let before = fixture.dump();

        let huge = "lisbon ".repeat(300_000); // 2.1 MB of valid text
        let stopped = alice.write(&request("alice", "w-2", fact("user.notes", &huge)));
        let error = format!("{:#}", stopped.expect_err("the call is stopped"));
        assert!(error.contains("memory limit"), "{}: {error}", fixture.name);
        assert_eq!(alice.restarts(), 1);
        assert_eq!(fixture.dump(), before, "{}", fixture.name);

        let second = accept(&mut alice, "w-3", fact("user.home", "Porto"));
        let found = records(&mut alice, RecordType::Fact, limit(10));
        let mut expected = vec![first, second];
        expected.sort();
        let mut found = ids(&found);
        found.sort();
        assert_eq!(found, expected, "{}", fixture.name);
        assert!(matches!(
            alice
                .write(&request("alice", "w-2", fact("user.notes", "short")))
                .unwrap(),
            WriteResult::Accepted(_)
        ));
    }
}
