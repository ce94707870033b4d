//! `remember` and `recall`: an agent's memory in two calls, on the one
//! built-in plan of every host ([`remember_plan`], [`recall_plan`]), the
//! plans MCP's tools of the same names have always run. `remember`
//! summarizes a finished turn and persists it (SummarizeMemory,
//! PersistMemory, one commit); `recall` selects the memories for a
//! question and assembles the prompt (ContextSelect, PromptAssemble),
//! persisting nothing. Every host runs them here, through its binding of
//! the cycle ([`Cycles`]): the Rust library and the command line natively,
//! the JavaScript and Python packages through the call surface.

use engram_model::json::{Plan, RetrievedMemory, Stage, StepOutput};
use engram_model::plans;
use serde::{Deserialize, Serialize};
pub use serde_json::Value;
use serde_json::json;

/// How many memories `recall` brings back when it is not told.
pub const RECALL_TOP_K: u32 = 5;

/// The conversation a remembered turn belongs to when it is not told.
pub const DEFAULT_SESSION: &str = "default";

/// `remember`: `{"message","response","session","request_id","time"}`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RememberArgs {
    /// What the user said this turn.
    pub message: String,
    /// What the assistant answered.
    pub response: String,
    /// The conversation the turn belongs to ([`DEFAULT_SESSION`] when
    /// none); kept with the memory (B5-S2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The turn's id: the same turn remembered again with the same id
    /// stores nothing new (IO-W2). A fresh random one when none; the answer
    /// says which, to retry with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// When the turn happened, in ms since the epoch: the memory's time
    /// (the host's clock when none), for remembering a past conversation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<i64>,
}

/// `recall`: `{"question","top_k","token_budget","request_id"}`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecallArgs {
    /// The question or message to find memories for, in the user's words.
    pub question: String,
    /// How many memories at most ([`RECALL_TOP_K`] when not told); the
    /// engine refuses more than the host's read ceiling.
    #[serde(default = "recall_top_k")]
    pub top_k: u32,
    /// The most tokens the memory lines of the prompt may take; none: every
    /// selected memory is listed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_budget: Option<u32>,
    /// An id for the call in the audit trail (a fresh random one when none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
}

impl RecallArgs {
    /// A recall of `question` with every default.
    pub fn new(question: impl Into<String>) -> Self {
        RecallArgs {
            question: question.into(),
            top_k: RECALL_TOP_K,
            token_budget: None,
            request_id: None,
        }
    }
}

fn recall_top_k() -> u32 {
    RECALL_TOP_K
}

/// What `remember` answers: `{"request_id","committed":[…]}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Remembered {
    /// The turn's request id, as given or made up.
    pub request_id: String,
    /// The ids of the memories the turn stored: one, or none when the
    /// summarizer found nothing worth keeping. A turn remembered again
    /// with the same request id answers the ids of the first time.
    pub committed: Vec<String>,
}

/// What `recall` answers: `{"request_id","memories":[…],"prompt","left_out"}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Recalled {
    /// The call's request id, as given or made up.
    pub request_id: String,
    /// The memories selected for the question, best first, as the prompt
    /// lists them: `id`, `summary`, `timestamp` (B5-D2).
    pub memories: Vec<RetrievedMemory>,
    /// The assembled prompt: a "Relevant memories:" section listing each
    /// memory as `- [<time, ISO 8601 UTC>] summary`, then "User: " and the
    /// question.
    pub prompt: String,
    /// How many selected memories the token budget left out (0 without one).
    pub left_out: u32,
}

/// The plan `remember` runs: [`plans::ingest`].
pub fn remember_plan() -> Plan {
    plans::ingest()
}

/// The plan `recall` runs: [`plans::recall`] with the budget given.
pub fn recall_plan(top_k: u32, token_budget: Option<u32>) -> Plan {
    let mut plan = plans::recall(top_k);
    plan.metadata.token_budget = token_budget;
    plan
}

/// The name of the step of [`recall_plan`] whose output `recall` answers.
const PROMPT_STEP: &str = "prompt";

/// Why a `remember` or `recall` did not answer; nothing of it was
/// persisted either way.
#[derive(Debug)]
pub enum TurnError<F> {
    /// The contract refused it: the line the command line prints
    /// (`{"plan_error":…}` or `{"cycle_error":…}`). Nothing was persisted.
    Refused(Value),
    /// The host failed (its store, its instance): nothing was persisted.
    Failed(F),
}

impl<F> From<F> for TurnError<F> {
    fn from(fault: F) -> Self {
        TurnError::Failed(fault)
    }
}

impl<F: std::fmt::Display> std::fmt::Display for TurnError<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TurnError::Refused(line) => write!(f, "refused: {line}"),
            TurnError::Failed(fault) => write!(f, "{fault:#}"),
        }
    }
}

impl<F: std::fmt::Debug + std::fmt::Display> std::error::Error for TurnError<F> {}

/// A refused plan's line: `{"plan_error":{"step","rule","kind"}}`.
pub fn plan_refusal(
    step: &impl Serialize,
    rule: &impl Serialize,
    kind: &impl std::fmt::Debug,
) -> Value {
    json!({"plan_error": {"step": step, "rule": rule, "kind": engram_model::json::error_name(kind)}})
}

/// A failed cycle's line: `{"cycle_error":…}`.
pub fn cycle_refusal(error: &impl std::fmt::Debug) -> Value {
    json!({ "cycle_error": engram_model::json::error_name(error) })
}

/// A fresh request id for a call given none: `<call>-` and 128 random bits
/// in hex, so two calls never share one by chance.
pub fn fresh_request_id(call: &str, entropy: [u64; 2]) -> String {
    format!("{call}-{:016x}{:016x}", entropy[0], entropy[1])
}

/// A host's binding of the cycle, in the JSON model: what [`remember`] and
/// [`recall`] run on. `Ok(Err(_))` of a call is the contract's refusal, as
/// its line ([`plan_refusal`], [`cycle_refusal`]).
pub trait Cycles {
    /// A begun cycle.
    type Cycle;
    /// A failure of the host.
    type Fault;
    /// Validates `plan` and begins a cycle.
    fn begin(
        &mut self,
        plan: &Plan,
        session: &str,
        request_id: &str,
    ) -> Result<Result<Self::Cycle, Value>, Self::Fault>;
    /// What a stage that ran answers, in the binding's types.
    type StageResults;
    /// Runs every step of `stage` with the turn's transient inputs: their
    /// results, made into the stage's line only by a caller that wants it
    /// ([`Cycles::stage_line`]).
    fn run_stage(
        &mut self,
        cycle: &Self::Cycle,
        stage: Stage,
        message: Option<&str>,
        response: Option<&str>,
    ) -> Result<Result<Self::StageResults, Value>, Self::Fault>;
    /// The line of a stage that ran: `{"stage","steps":[{"step","output"}…]}`.
    fn stage_line(stage: Stage, results: Self::StageResults) -> Value;
    /// The output of a step that ran.
    fn output(
        &mut self,
        cycle: &Self::Cycle,
        step: &str,
    ) -> Result<Option<StepOutput>, Self::Fault>;
    /// Commits the cycle: the ids it stored.
    fn commit(&mut self, cycle: &Self::Cycle) -> Result<Result<Vec<String>, Value>, Self::Fault>;
    /// Drops the cycle; nothing uncommitted is persisted.
    fn end(&mut self, cycle: Self::Cycle) -> Result<(), Self::Fault>;
    /// Tells the engine `time` as the current time until told again (none:
    /// the clock's); answers what it was told before.
    fn set_time(&mut self, time: Option<i64>) -> Option<i64>;
    /// 128 random bits, for a fresh request id.
    fn entropy(&mut self) -> Result<[u64; 2], Self::Fault>;
}

/// Remembers one finished turn: summarizes it and persists the summary in
/// one commit (the raw text is never stored, B5-S1).
pub fn remember<C: Cycles>(
    host: &mut C,
    args: RememberArgs,
) -> Result<Remembered, TurnError<C::Fault>> {
    let request_id = match args.request_id {
        Some(id) => id,
        None => fresh_request_id("remember", host.entropy()?),
    };
    let session = args.session.as_deref().unwrap_or(DEFAULT_SESSION);
    let told = args.time.map(|time| host.set_time(Some(time)));
    let done = run(
        host,
        &remember_plan(),
        session,
        &request_id,
        (&args.message, Some(&args.response)),
        |host, cycle| host.commit(cycle),
    );
    if let Some(before) = told {
        host.set_time(before);
    }
    done.map(|committed| Remembered {
        request_id,
        committed,
    })
}

/// Selects the memories for a question and assembles the prompt; persists
/// nothing.
pub fn recall<C: Cycles>(host: &mut C, args: RecallArgs) -> Result<Recalled, TurnError<C::Fault>> {
    let request_id = match args.request_id {
        Some(id) => id,
        None => fresh_request_id("recall", host.entropy()?),
    };
    let plan = recall_plan(args.top_k, args.token_budget);
    let prompt = run(
        host,
        &plan,
        DEFAULT_SESSION,
        &request_id,
        (&args.question, None),
        |host, cycle| Ok(Ok(host.output(cycle, PROMPT_STEP)?)),
    )?;
    match prompt {
        Some(StepOutput::Prompt {
            context,
            text,
            left_out,
        }) => Ok(Recalled {
            request_id,
            memories: context,
            prompt: text,
            left_out,
        }),
        // The plan is this module's: its prompt step always runs last.
        _ => Err(TurnError::Refused(
            json!({ "cycle_error": "MissingInput(prompt)" }),
        )),
    }
}

/// Begins a cycle of `plan`, runs each of its stages with the turn, then
/// `finish`es it; the cycle is dropped whatever happened.
fn run<C: Cycles, T>(
    host: &mut C,
    plan: &Plan,
    session: &str,
    request_id: &str,
    (message, response): (&str, Option<&str>),
    finish: impl FnOnce(&mut C, &C::Cycle) -> Result<Result<T, Value>, C::Fault>,
) -> Result<T, TurnError<C::Fault>> {
    let cycle = host
        .begin(plan, session, request_id)?
        .map_err(TurnError::Refused)?;
    let mut outcome = Ok(());
    for stage in Stage::ALL {
        if outcome.is_ok() && plan.steps.iter().any(|s| s.stage == stage) {
            outcome = match host.run_stage(&cycle, stage, Some(message), response) {
                Ok(Ok(_)) => Ok(()),
                Ok(Err(refused)) => Err(TurnError::Refused(refused)),
                Err(fault) => Err(TurnError::Failed(fault)),
            };
        }
    }
    let answer = outcome.and_then(|()| match finish(host, &cycle) {
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err(refused)) => Err(TurnError::Refused(refused)),
        Err(fault) => Err(TurnError::Failed(fault)),
    });
    let ended = host.end(cycle);
    let answer = answer?;
    ended?;
    Ok(answer)
}

/// Implements [`Cycles`] for a binding's `Domain` whose calls answer
/// `anyhow::Result`: `begin_cycle`, `run_stage`, `step_output`,
/// `commit_cycle`, `drop_cycle`, `time`, `set_time` and `entropy`, with the
/// binding's `cycle` module and its `json` conversions
/// ([`json_wit_conversions!`](engram_model::json_wit_conversions)) in scope. The Rust
/// library and the `wasm32-wasip2` command are such bindings.
#[macro_export]
macro_rules! domain_cycles {
    () => {
        impl $crate::turns::Cycles for Domain {
            type Cycle = Cycle;
            type Fault = anyhow::Error;
            type StageResults = Vec<cycle::StepResult>;

            fn begin(
                &mut self,
                plan: &$crate::engram_model::json::Plan,
                session: &str,
                request_id: &str,
            ) -> anyhow::Result<Result<Cycle, $crate::turns::Value>> {
                let plan = cycle::ExecutionPlan::from(plan.clone());
                Ok(self
                    .begin_cycle(&plan, session, request_id)?
                    .map_err(|e| $crate::turns::plan_refusal(&e.step, &e.rule, &e.kind)))
            }

            fn run_stage(
                &mut self,
                cycle: &Cycle,
                stage: $crate::engram_model::json::Stage,
                message: Option<&str>,
                response: Option<&str>,
            ) -> anyhow::Result<Result<Vec<cycle::StepResult>, $crate::turns::Value>> {
                let input = cycle::TurnInput {
                    user_message: message.map(str::to_owned),
                    model_response: response.map(str::to_owned),
                };
                Ok(self
                    .run_stage(cycle, cycle::Stage::from(stage), &input)?
                    .map_err(|e| $crate::turns::cycle_refusal(&e)))
            }

            fn stage_line(
                stage: $crate::engram_model::json::Stage,
                results: Vec<cycle::StepResult>,
            ) -> $crate::turns::Value {
                json::stage_line(cycle::Stage::from(stage), results)
            }

            fn output(
                &mut self,
                cycle: &Cycle,
                step: &str,
            ) -> anyhow::Result<Option<$crate::engram_model::json::StepOutput>> {
                Ok(self.step_output(cycle, step)?.map(Into::into))
            }

            fn commit(
                &mut self,
                cycle: &Cycle,
            ) -> anyhow::Result<Result<Vec<String>, $crate::turns::Value>> {
                Ok(self
                    .commit_cycle(cycle)?
                    .map_err(|e| $crate::turns::cycle_refusal(&e)))
            }

            fn end(&mut self, cycle: Cycle) -> anyhow::Result<()> {
                self.drop_cycle(cycle)
            }

            fn set_time(&mut self, time: Option<i64>) -> Option<i64> {
                let before = self.time();
                Domain::set_time(self, time);
                before
            }

            fn entropy(&mut self) -> anyhow::Result<[u64; 2]> {
                Domain::entropy(self)
            }
        }
    };
}
