//! Ready-made execution plans for the usual turn (B-005), to use as they are
//! or to start from: [`engram_model::plans`] in this binding's types.
//! `samples/plan.json` is [`turn`]`(3)` as JSON.

use crate::cycle::{ExecutionPlan, PlanStep};
use engram_model::json::{Plan, PlanMetadata};
use engram_model::plans as model;

/// The steps of a plan in the JSON model, in this binding's types.
fn steps(steps: Vec<engram_model::json::PlanStep>) -> Vec<PlanStep> {
    ExecutionPlan::from(Plan {
        metadata: PlanMetadata::default(),
        steps,
    })
    .steps
}

/// Before the answer: `query` summarizes the user's message, `retrieve`
/// finds memories with its keywords, `select` accepts them, `prompt`
/// assembles the prompt.
pub fn recall_steps() -> Vec<PlanStep> {
    steps(model::recall_steps())
}

/// After the answer: `summary` summarizes the turn, `persist` stages it.
pub fn ingest_steps() -> Vec<PlanStep> {
    steps(model::ingest_steps())
}

/// Select context for a message and assemble the prompt, keeping `top_k`.
pub fn recall(top_k: u32) -> ExecutionPlan {
    model::recall(top_k).into()
}

/// Summarize a finished turn and persist it.
pub fn ingest() -> ExecutionPlan {
    model::ingest().into()
}

/// A whole turn: recall before the answer, ingest after it.
pub fn turn(top_k: u32) -> ExecutionPlan {
    model::turn(top_k).into()
}
