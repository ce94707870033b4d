//! What every Engram host shares of the contract, with no runtime of its
//! own: the JSON model in the seeds' names ([`json`]), the audit trail's
//! entries and sinks ([`audit`]), the ready-made plans ([`plans`]), `remember` and `recall` ([`turns`]), and the conversions between the JSON model
//! and a binding of the WIT ([`wit_conversions!`]).

#![warn(missing_docs)]

pub mod audit;
pub mod calls;
pub mod guest;
pub mod json;
pub mod plans;
pub mod size;
pub mod surface;
pub mod turns;
mod wit;

/// For the macros' expansions in other crates.
#[doc(hidden)]
pub use serde_json;
