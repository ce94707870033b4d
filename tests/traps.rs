//! A guest that is stopped — past its time limit, past its memory limit —
//! and the host that recovers: the call errs, nothing of it is stored, a
//! cycle in flight is gone, and the next call on the same domain runs on a
//! fresh instance. Faults are injected for real: a backend (around a real
//! store) and a summarizer whose calls take longer than the time limit,
//! and a request that makes the real engine grow its memory past the limit.
//!
//! The time limit is measured in the engine's epochs, which a ticker
//! thread advances a tenth of the limit at a time. A host call that takes
//! longer than the limit is played by advancing them past any deadline
//! from inside the call: the limit itself can then be far above anything
//! a call that must succeed could take on a busy machine. One case blocks
//! in wall-clock time against a short limit, to prove the ticker.

mod support;

use engram::cycle::{Stage, TurnInput};
use engram::io::WriteResult;
use engram::types::RecordType;
use engram::{
    Backend, Config, Domain, Engram, ExtractiveSummarizer, Mode, Summarizer, Summary, audit,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use support::*;

/// The time limit of the cases that play a long host call: far above
/// what any call takes.
const TIME_LIMIT: Duration = Duration::from_secs(600);

/// An engine of its own (another test's advancing its epochs would stop
/// this one's calls) whose calls may run for `limit`; compiled once, then
/// loaded from the cache.
fn timed(limit: Duration) -> Engram {
    Engram::with_config(Config {
        read_limit_ceiling: CEILING,
        call_timeout: Some(limit),
        cache_dir: Some(concat!(env!("CARGO_TARGET_TMPDIR"), "/engram-cache").into()),
        ..Config::default()
    })
    .expect("the engine compiles")
}

/// A host call of `engram`'s that takes longer than its time limit: the
/// epochs the limit is counted in pass every deadline while it runs.
fn overrun(engram: &Engram) -> Stall {
    let engine = engram.engine().clone();
    Arc::new(move || {
        for _ in 0..1_000 {
            engine.increment_epoch();
        }
    })
}

/// The real summarizer, made to take longer than the time limit on demand.
struct SlowSummarizer {
    blocking: AtomicBool,
    overrun: Stall,
}

impl Summarizer for SlowSummarizer {
    fn summarize(&self, message: &str, response: Option<&str>) -> Result<Summary, String> {
        if self.blocking.load(Ordering::SeqCst) {
            (self.overrun)();
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

backend_test! {
    fn a_call_past_its_time_limit_errs_stores_nothing_and_the_next_call_gets_a_fresh_instance(fixture) {
        // proves S-TRAP, IO-G1: a failed call is an error, not an answer; a
        // stopped write persists nothing: the retry of its request id is new
        let engram = timed(TIME_LIMIT);
        let slow = Faulty::over(fixture.backend.clone());
        let mut alice = open(&engram, &fixture, "alice", slow.clone());
        let mut bob = open(&engram, &fixture, "bob", fixture.backend.clone());
        let first = accept(&mut alice, "w-1", state(1, "mission.current"));
        let before = fixture.dump();

        slow.stall(Some(overrun(&engram)));
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

backend_test! {
    fn a_read_past_its_time_limit_errs_and_the_domain_reads_again(fixture) {
        let engram = timed(TIME_LIMIT);
        let slow = Faulty::over(fixture.backend.clone());
        let mut alice = open(&engram, &fixture, "alice", slow.clone());
        let id = accept(&mut alice, "w-1", state(1, "mission.current"));

        slow.stall(Some(overrun(&engram)));
        let stopped = alice.read(&read(RecordType::State, latest(10)));
        slow.stall(None);
        assert!(stopped.is_err(), "{}", fixture.name);
        assert_eq!(failed_entries(&fixture).len(), 1);

        let found = records(&mut alice, RecordType::State, by_id(&id));
        assert_eq!(ids(&found), vec![id], "{}", fixture.name);
    }
}

backend_test! {
    fn b5_d1_a_cycle_whose_instance_was_stopped_is_gone_and_persisted_nothing(fixture) {
        // proves B5-D1, S-TRAP: nothing of a cycle is saved unless the whole cycle
        // finished and committed; its instance being stopped mid-cycle is a
        // failure like any other
        let engram = timed(TIME_LIMIT);
        let summarizer = Arc::new(SlowSummarizer {
            blocking: AtomicBool::new(false),
            overrun: overrun(&engram),
        });
        let mut alice = open(&engram, &fixture, "alice", fixture.backend.clone())
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
    // proves B5-D1, S-TRAP: for a cycle that did nothing wrong itself
    let fixture = Fixture::sqlite();
    let engram = timed(TIME_LIMIT);
    let slow = Faulty::over(fixture.backend.clone());
    let mut alice = open(&engram, &fixture, "alice", slow.clone());
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

    slow.stall(Some(overrun(&engram)));
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

backend_test! {
    fn a_request_that_grows_memory_past_the_limit_stops_the_instance_and_the_domain_recovers(fixture) {
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

#[test]
fn a_host_call_that_blocks_past_a_short_time_limit_stops_the_call_in_wall_clock_time() {
    // proves S-TRAP: the ticker stops a call whose host call blocked for
    // real past the limit; the store is as before
    let fixture = Fixture::sqlite();
    let id = accept(
        &mut fixture.open("alice"),
        "w-1",
        state(1, "mission.current"),
    );
    let before = fixture.dump();
    let limit = Duration::from_millis(300);
    let engram = timed(limit);
    let slow = Faulty::over(fixture.backend.clone());
    slow.stall(Some(Arc::new(move || std::thread::sleep(limit * 4))));
    let mut alice = open(&engram, &fixture, "alice", slow.clone());
    let started = std::time::Instant::now();
    let stopped = alice.read(&read(RecordType::State, by_id(&id)));
    let error = format!("{:#}", stopped.expect_err("the call is stopped"));
    assert!(error.contains("time limit of 300ms"), "{error}");
    assert!(
        started.elapsed() >= limit * 4,
        "it waited for the host call"
    );
    assert_eq!(alice.restarts(), 1);
    assert_eq!(fixture.dump(), before);
    let failed = failed_entries(&fixture);
    assert_eq!(failed.len(), 1);
    assert!(failed[0].reason.as_deref().unwrap().contains("time limit"));
}
