//! What the host measures and enforces around the engine: the size of a
//! record before it enters the engine, and the clock that stops a call that
//! runs too long.

use crate::types::{EventPayload, FactPayload, MemoryRecord};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

/// What a list item costs beyond its own bytes.
const ITEM: usize = 8;

fn text(items: &[String]) -> usize {
    items.iter().map(|s| s.len() + ITEM).sum()
}

/// The size of a record as the host limits it: the bytes of all its
/// strings, plus 8 for every list item. Numbers, enums and options are
/// not counted: a record holds a fixed number of them.
pub fn record_size(record: &MemoryRecord) -> usize {
    match record {
        MemoryRecord::Fact(fact) => fact.key.len() + fact_payload_size(&fact.payload),
        MemoryRecord::Event(event) => match &event.payload {
            EventPayload::Ingested(m) => m.session_ref.len() + m.summary.len() + text(&m.keywords),
            EventPayload::Episode(e) => {
                e.situation.len()
                    + e.reasoning.len()
                    + e.action.len()
                    + e.user_feedback.as_ref().map_or(0, String::len)
                    + e.agent_type.len()
                    + e.mission_id.len()
                    + text(&e.tags)
            }
        },
        MemoryRecord::State(state) => state.payload.subject.len() + state.payload.properties.len(),
    }
}

/// The size of a FACT's payload, measured as [`record_size`] does.
pub fn fact_payload_size(payload: &FactPayload) -> usize {
    match payload {
        FactPayload::Semantic(m) => {
            m.content.len() + m.context.len() + text(&m.sources) + text(&m.contradictions)
        }
        FactPayload::Procedural(r) => r.agent_type.len() + r.rule.len() + text(&r.derived_from),
        FactPayload::Entity(e) => e.name.len() + e.properties.len() + text(&e.source_memories),
        FactPayload::Relationship(r) => {
            r.from_entity.len()
                + r.to_entity.len()
                + r.relationship_type.len()
                + r.properties.len()
                + text(&r.source_memories)
        }
    }
}

/// The size of a summarizer's answer, measured as [`record_size`] does.
pub(crate) fn summary_size(summary: &str, keywords: &[String]) -> usize {
    summary.len() + text(keywords)
}

/// Advances an engine's epoch every `tick` on a thread of its own, until
/// dropped. The thread holds only a weak reference to the engine.
pub(crate) struct Ticker {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Ticker {
    pub(crate) fn start(engine: &wasmtime::Engine, tick: Duration) -> std::io::Result<Self> {
        let (stop, stopped) = mpsc::channel::<()>();
        let engine = engine.weak();
        let thread = std::thread::Builder::new()
            .name("engram-epoch".into())
            .spawn(move || {
                while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(tick) {
                    match engine.upgrade() {
                        Some(engine) => engine.increment_epoch(),
                        None => break,
                    }
                }
            })?;
        Ok(Ticker {
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// How often the epoch advances for a call time limit, and how many ticks a
/// call may run: a call is stopped after at least `timeout` and at most
/// `timeout` and one tick (a tenth of it, 1 ms to 1 s).
pub(crate) fn epoch_plan(timeout: Duration) -> (Duration, u64) {
    let tick = (timeout / 10).clamp(Duration::from_millis(1), Duration::from_secs(1));
    let ticks = timeout.as_nanos().div_ceil(tick.as_nanos());
    // One more: the first tick may come at once after the deadline is set.
    (tick, u64::try_from(ticks).unwrap_or(u64::MAX - 1) + 1)
}
