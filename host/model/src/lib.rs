//! The contract's JSON model every Engram host shares, with no runtime of
//! its own: the records, requests and answers in the seeds' names
//! ([`json`]), the audit trail's entries and sinks ([`audit`]), the
//! ready-made plans ([`plans`]), the size measures ([`size`]), the host's
//! words ([`messages`]), and the conversions between the JSON model and a
//! binding of the WIT ([`json_wit_conversions!`]). The call surface over it
//! is `engram-surface`'s.

#![warn(missing_docs)]

pub mod audit;
pub mod embedding;
pub mod json;
pub mod messages;
pub mod plans;
pub mod size;
mod wit;

/// Milliseconds since the Unix epoch by the system clock (`wasi:clocks`
/// under WASI); 0 before the epoch.
pub fn system_time_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// For the macros' expansions in other crates.
#[doc(hidden)]
pub use serde_json;
