//! The engine against a simple model of the contract, on random sequences
//! of writes and reads by two agents: idempotency (IO-W2), order (IO-R7),
//! bounds (IO-G6) and isolation (IO-W6). `ENGRAM_MODEL_CASES` sets how
//! many sequences (48 by default); the fuzz target `model` runs the same
//! model without a bound.

mod support;

use engram::io::{ByTimeRange, ReadError, ReadSelector, WriteResult};
use engram::types::*;
use proptest::prelude::*;
use std::collections::HashMap;
use support::*;

const AGENTS: [&str; 2] = ["alice", "bob"];

#[derive(Clone, Debug)]
enum Step {
    Write {
        agent: usize,
        rid: u8,
        state: bool,
        ts: i64,
        text: u8,
    },
    Latest {
        agent: usize,
        state: bool,
        limit: u32,
    },
    Range {
        agent: usize,
        state: bool,
        from: i64,
        to: i64,
        limit: u32,
    },
    ById {
        agent: usize,
        known: usize,
    },
}

fn limit() -> impl Strategy<Value = u32> {
    prop_oneof![8 => 1u32..6, 1 => Just(0u32), 1 => Just(CEILING + 1), 1 => Just(CEILING)]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (0..2usize, 0..6u8, any::<bool>(), -3..12i64, 0..3u8)
            .prop_map(|(agent, rid, state, ts, text)| Step::Write { agent, rid, state, ts, text }),
        2 => (0..2usize, any::<bool>(), limit())
            .prop_map(|(agent, state, limit)| Step::Latest { agent, state, limit }),
        2 => (0..2usize, any::<bool>(), -3..12i64, -3..12i64, limit())
            .prop_map(|(agent, state, from, to, limit)| Step::Range { agent, state, from, to, limit }),
        1 => (0..2usize, 0..64usize).prop_map(|(agent, known)| Step::ById { agent, known }),
    ]
}

/// What the model keeps of one agent's domain.
#[derive(Default)]
struct Domain {
    /// request id → (record, stored id)
    requests: HashMap<u8, (MemoryRecord, String)>,
    /// (timestamp, write order, id) of EVENTs and of STATEs
    events: Vec<(i64, usize, String)>,
    states: Vec<(i64, usize, String)>,
}

fn record(state: bool, ts: i64, text: u8) -> MemoryRecord {
    if state {
        support::state(ts, &format!("subject.s{text}"))
    } else {
        ingested(ts, &format!("note {text}"))
    }
}

/// The ids the model answers for a read, in the contract's order.
fn expected(
    domain: &Domain,
    state: bool,
    within: Option<(i64, i64)>,
    limit: usize,
    latest: bool,
) -> Vec<String> {
    let mut rows: Vec<&(i64, usize, String)> = if state {
        &domain.states
    } else {
        &domain.events
    }
    .iter()
    .filter(|(ts, _, _)| within.is_none_or(|(from, to)| from <= *ts && *ts <= to))
    .collect();
    // EVENT oldest first, ties in write order; STATE newest first, ties the
    // latest written first (IO-R7).
    rows.sort_by_key(|(ts, seq, _)| (*ts, *seq));
    if state {
        rows.reverse();
        rows.truncate(limit);
    } else if latest {
        let skip = rows.len().saturating_sub(limit);
        rows.drain(..skip);
    } else {
        rows.truncate(limit);
    }
    rows.into_iter().map(|(_, _, id)| id.clone()).collect()
}

fn kind(state: bool) -> RecordType {
    if state {
        RecordType::State
    } else {
        RecordType::Event
    }
}

fn cases() -> u32 {
    std::env::var("ENGRAM_MODEL_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(48)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn io_w2_io_w6_io_r7_io_g6_the_engine_answers_as_the_model(steps in prop::collection::vec(step(), 1..40)) {
        // proves IO-W2, IO-W6, IO-R7, IO-G6 on random sequences
        let fx = Fixture::memory();
        let mut domains: Vec<engram::Domain> = AGENTS.iter().map(|a| fx.open(a)).collect();
        let mut model: Vec<Domain> = vec![Domain::default(), Domain::default()];
        let mut known: Vec<(usize, bool, String)> = Vec::new();
        let mut order = 0;
        for step in steps {
            match step {
                Step::Write { agent, rid, state, ts, text } => {
                    let record = record(state, ts, text);
                    let answer = domains[agent]
                        .write(&request(AGENTS[agent], &format!("r{rid}"), record.clone()))
                        .unwrap();
                    let m = &mut model[agent];
                    match m.requests.get(&rid) {
                        Some((earlier, id)) if *earlier == record => {
                            prop_assert_eq!(answer, WriteResult::Accepted(id.clone()));
                        }
                        Some(_) => prop_assert_eq!(answer, WriteResult::Rejected),
                        None => {
                            let WriteResult::Accepted(id) = answer else {
                                return Err(TestCaseError::fail("a new write was rejected"));
                            };
                            prop_assert!(known.iter().all(|(_, _, k)| *k != id), "an id given twice");
                            order += 1;
                            let row = (ts, order, id.clone());
                            if state { m.states.push(row) } else { m.events.push(row) }
                            m.requests.insert(rid, (record, id.clone()));
                            known.push((agent, state, id));
                        }
                    }
                }
                Step::Latest { agent, state, limit } => {
                    let answer = domains[agent].read(&read(kind(state), latest(limit))).unwrap();
                    if limit == 0 || limit > CEILING {
                        prop_assert_eq!(answer, Err(ReadError::LimitOutOfBounds(CEILING)));
                    } else {
                        let want = expected(&model[agent], state, None, limit as usize, true);
                        prop_assert_eq!(ids(&answer.unwrap().records), want);
                    }
                }
                Step::Range { agent, state, from, to, limit } => {
                    let selector = ReadSelector::ByTimeRange(ByTimeRange { from, to, limit });
                    let answer = domains[agent].read(&read(kind(state), selector)).unwrap();
                    if limit == 0 || limit > CEILING {
                        prop_assert_eq!(answer, Err(ReadError::LimitOutOfBounds(CEILING)));
                    } else if from > to {
                        prop_assert_eq!(answer, Err(ReadError::InvalidRange));
                    } else {
                        let want = expected(&model[agent], state, Some((from, to)), limit as usize, false);
                        prop_assert_eq!(ids(&answer.unwrap().records), want);
                    }
                }
                Step::ById { agent, known: pick } => {
                    let Some((owner, state, id)) = known.get(pick % known.len().max(1)).cloned() else {
                        continue;
                    };
                    let found = records(&mut domains[agent], kind(state), by_id(&id));
                    // Another agent's record does not exist for this one (IO-W6).
                    prop_assert_eq!(found.len(), usize::from(owner == agent));
                }
            }
        }
    }
}
