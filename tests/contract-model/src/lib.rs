//! A simple model of the contract that the engine must answer as: two
//! agents writing EVENTs and STATEs and reading them back. Shared by the
//! property test (`tests/model.rs`) and the fuzz target `model`.

use engram::io::{
    ById, ByTimeRange, Latest, ReadError, ReadRequest, ReadSelector, WriteRequest, WriteResult,
};
use engram::types::*;
use std::collections::HashMap;

/// The agents of the model.
pub const AGENTS: [&str; 2] = ["alice", "bob"];

/// One step of a sequence.
#[derive(Clone, Debug)]
pub enum Step {
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

/// What the model keeps of one agent's domain.
#[derive(Default)]
struct Domain {
    requests: HashMap<u8, (MemoryRecord, String)>,
    events: Vec<(i64, usize, String)>,
    states: Vec<(i64, usize, String)>,
}

fn record(state: bool, ts: i64, text: u8) -> MemoryRecord {
    if state {
        MemoryRecord::State(State {
            timestamp: ts,
            payload: StateSnapshot {
                subject: format!("subject.s{text}"),
                properties: "{}".into(),
            },
        })
    } else {
        MemoryRecord::Event(Event {
            timestamp: ts,
            payload: EventPayload::Ingested(IngestedMemory {
                session_ref: "s".into(),
                summary: format!("note {text}"),
                keywords: vec!["note".into()],
            }),
        })
    }
}

fn kind(state: bool) -> RecordType {
    if state {
        RecordType::State
    } else {
        RecordType::Event
    }
}

/// The ids the model answers for a read, in the contract's order: EVENT
/// oldest first, ties in write order; STATE newest first, ties the latest
/// written first (IO-R7).
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

fn ids(answer: Result<engram::io::ReadResult, ReadError>) -> Result<Vec<String>, ReadError> {
    answer.map(|r| {
        r.records
            .iter()
            .map(|record| match record {
                StoredRecord::Fact(f) => f.id.clone(),
                StoredRecord::Event(e) => e.id.clone(),
                StoredRecord::State(s) => s.id.clone(),
            })
            .collect()
    })
}

fn read(record_type: RecordType, selector: ReadSelector) -> ReadRequest {
    ReadRequest {
        record_type,
        selector,
        request_id: "model".into(),
    }
}

/// Runs `steps` on fresh domains of one in-memory store opened by `engram`
/// (whose read-limit ceiling is `ceiling`), checking each answer against
/// the model (IO-W2, IO-W6, IO-R7, IO-G6). The error names the step.
pub fn run(engram: &engram::Engram, ceiling: u32, steps: &[Step]) -> Result<(), String> {
    let storage = engram::Storage::memory();
    let mut domains = Vec::new();
    for agent in AGENTS {
        domains.push(
            engram
                .open(
                    agent,
                    engram::Mode::Online,
                    storage.backend.clone(),
                    storage.audit.clone(),
                )
                .map_err(|e| e.to_string())?,
        );
    }
    let mut model: Vec<Domain> = vec![Domain::default(), Domain::default()];
    let mut known: Vec<(usize, bool, String)> = Vec::new();
    let mut order = 0;
    let fail = |i: usize, step: &Step, what: String| Err(format!("step {i} {step:?}: {what}"));
    for (i, step) in steps.iter().enumerate() {
        match *step {
            Step::Write {
                agent,
                rid,
                state,
                ts,
                text,
            } => {
                let record = record(state, ts, text);
                let request = WriteRequest {
                    record: record.clone(),
                    source: WriteSource {
                        agent_id: AGENTS[agent].into(),
                        component: SourceComponent::Cognition,
                        actor: SourceActor::User,
                    },
                    request_id: format!("r{rid}"),
                };
                let answer = domains[agent].write(&request).map_err(|e| e.to_string())?;
                let m = &mut model[agent];
                match (m.requests.get(&rid), answer) {
                    (Some((earlier, id)), WriteResult::Accepted(got))
                        if *earlier == record && *id == got => {}
                    (Some((earlier, _)), WriteResult::Rejected) if *earlier != record => {}
                    (None, WriteResult::Accepted(id)) => {
                        if known.iter().any(|(_, _, k)| *k == id) {
                            return fail(i, step, format!("id {id} given twice"));
                        }
                        order += 1;
                        let row = (ts, order, id.clone());
                        if state {
                            m.states.push(row)
                        } else {
                            m.events.push(row)
                        }
                        m.requests.insert(rid, (record, id.clone()));
                        known.push((agent, state, id));
                    }
                    (_, answer) => return fail(i, step, format!("answered {answer:?}")),
                }
            }
            Step::Latest {
                agent,
                state,
                limit,
            } => {
                let answer = domains[agent]
                    .read(&read(kind(state), ReadSelector::Latest(Latest { limit })))
                    .map_err(|e| e.to_string())?;
                let want = if limit == 0 || limit > ceiling {
                    Err(ReadError::LimitOutOfBounds(ceiling))
                } else {
                    Ok(expected(&model[agent], state, None, limit as usize, true))
                };
                let got = ids(answer);
                if got != want {
                    return fail(i, step, format!("got {got:?}, the model {want:?}"));
                }
            }
            Step::Range {
                agent,
                state,
                from,
                to,
                limit,
            } => {
                let selector = ReadSelector::ByTimeRange(ByTimeRange { from, to, limit });
                let answer = domains[agent]
                    .read(&read(kind(state), selector))
                    .map_err(|e| e.to_string())?;
                let want = if limit == 0 || limit > ceiling {
                    Err(ReadError::LimitOutOfBounds(ceiling))
                } else if from > to {
                    Err(ReadError::InvalidRange)
                } else {
                    Ok(expected(
                        &model[agent],
                        state,
                        Some((from, to)),
                        limit as usize,
                        false,
                    ))
                };
                let got = ids(answer);
                if got != want {
                    return fail(i, step, format!("got {got:?}, the model {want:?}"));
                }
            }
            Step::ById { agent, known: pick } => {
                let Some((owner, state, id)) = known.get(pick % known.len().max(1)).cloned() else {
                    continue;
                };
                let answer = domains[agent]
                    .read(&read(
                        kind(state),
                        ReadSelector::ById(ById { id: id.clone() }),
                    ))
                    .map_err(|e| e.to_string())?;
                // Another agent's record does not exist for this one (IO-W6).
                let want = if owner == agent { vec![id] } else { vec![] };
                let got = ids(answer);
                if got != Ok(want.clone()) {
                    return fail(i, step, format!("got {got:?}, the model {want:?}"));
                }
            }
        }
    }
    Ok(())
}
