//! What more than one bench writes.

use engram::types::*;

/// The `i`-th EVENT of the write benches: an ingested memory with five
/// keywords, its timestamp one millisecond after the last.
pub fn record(i: usize) -> MemoryRecord {
    MemoryRecord::Event(Event {
        timestamp: 1_700_000_000_000 + i as i64,
        payload: EventPayload::Ingested(IngestedMemory {
            session_ref: format!("session-{}", i / 20),
            summary: format!(
                "The user asked about trip {i} to Lisbon and preferred a direct morning flight."
            ),
            keywords: ["trip", "lisbon", "flight", "morning", "direct"]
                .map(String::from)
                .to_vec(),
        }),
    })
}
