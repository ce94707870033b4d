//! Ready-made execution plans for the usual turn (B-005), in the JSON model,
//! to use as they are or to start from: every host converts them to its
//! binding of the WIT (`From<Plan>` of [`json_wit_conversions!`](crate::json_wit_conversions)).
//! `samples/plan.json` is [`turn`]`(3)` as JSON.

use crate::json::{Plan, PlanMetadata, PlanStep, Stage, StepKind, SummarizeInput};

/// A step named `name` in `stage`, taking the outputs of `inputs`.
pub fn step(name: &str, stage: Stage, kind: StepKind, inputs: &[&str]) -> PlanStep {
    PlanStep {
        name: name.into(),
        stage,
        kind,
        inputs: inputs.iter().map(|s| s.to_string()).collect(),
    }
}

/// Before the answer: `query` summarizes the user's message, `retrieve`
/// finds memories with its keywords, `select` accepts them, `prompt`
/// assembles the prompt.
pub fn recall_steps() -> Vec<PlanStep> {
    vec![
        step(
            "query",
            Stage::ContextSelect,
            StepKind::SummarizeMemory {
                of: SummarizeInput::UserMessage,
            },
            &[],
        ),
        step(
            "retrieve",
            Stage::ContextSelect,
            StepKind::RetrieveMemory,
            &["query"],
        ),
        step(
            "select",
            Stage::ContextSelect,
            StepKind::ContextSelect,
            &["retrieve"],
        ),
        step(
            "prompt",
            Stage::PromptAssemble,
            StepKind::PromptAssemble,
            &["select"],
        ),
    ]
}

/// After the answer: `summary` summarizes the turn, `persist` stages it.
pub fn ingest_steps() -> Vec<PlanStep> {
    vec![
        step(
            "summary",
            Stage::SummarizeMemory,
            StepKind::SummarizeMemory {
                of: SummarizeInput::Turn,
            },
            &[],
        ),
        step(
            "persist",
            Stage::PersistMemory,
            StepKind::PersistMemory,
            &["summary"],
        ),
    ]
}

/// Select context for a message and assemble the prompt, keeping `top_k`.
pub fn recall(top_k: u32) -> Plan {
    Plan {
        metadata: PlanMetadata {
            top_k: Some(top_k),
            token_budget: None,
        },
        steps: recall_steps(),
    }
}

/// Summarize a finished turn and persist it.
pub fn ingest() -> Plan {
    Plan {
        metadata: PlanMetadata::default(),
        steps: ingest_steps(),
    }
}

/// A whole turn: recall before the answer, ingest after it.
pub fn turn(top_k: u32) -> Plan {
    Plan {
        metadata: PlanMetadata {
            top_k: Some(top_k),
            token_budget: None,
        },
        steps: [recall_steps(), ingest_steps()].concat(),
    }
}
