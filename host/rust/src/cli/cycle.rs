//! `engram cycle`: one execution cycle of a plan, stage by stage, a line
//! per stage as it ends and the committed ids last; or, with `--batch`, the
//! plan once per turn of a file, a line per turn.

use super::args::{CycleArgs, Io};
use super::output::{committed_unprinted, parse_input, parse_plan, text_input, unprinted};
use super::{BAD_INPUT, Exit, Global, OK, REFUSED, USAGE, failure, open_domain, opening};
use crate::binding as engram;
use engram::cycle::{CycleError, ExecutionPlan, Stage, StepKind, SummarizeInput, TurnInput};
use engram::json;
use serde_json::{Value, json};
use std::io::{BufWriter, Write};
use std::path::Path;

/// Where a cycle's lines go as they come: the error of a line that could
/// not be written.
type Emit<'a> = &'a mut dyn FnMut(Value) -> std::io::Result<()>;

/// Whether `plan` summarizes the turn, and so needs the model's response.
fn summarizes_turn(plan: &ExecutionPlan) -> bool {
    plan.steps
        .iter()
        .any(|s| s.kind == StepKind::SummarizeMemory(SummarizeInput::Turn))
}

/// Runs the command: one turn from the options, or a batch.
pub(super) fn cycle(global: &Global, args: CycleArgs) -> Result<u8, Exit> {
    let mut plan = parse_plan(&args.plan)?;
    if args.token_budget.is_some() {
        plan.metadata.token_budget = args.token_budget;
    }
    if let Some(batch) = &args.batch {
        return cycle_batch(global, &args, &plan, batch);
    }
    let input = TurnInput {
        user_message: text_input(args.message, args.message_file)?,
        model_response: text_input(args.response, args.response_file)?,
    };
    // What the plan's steps will need, checked before anything opens.
    if !plan.steps.is_empty() && input.user_message.is_none() {
        let why = "the plan needs the user's message: give --message or --message-file";
        return Err(Exit(USAGE, why.into()));
    }
    if summarizes_turn(&plan) && input.model_response.is_none() {
        let why =
            "the plan summarizes the turn: give --response or --response-file (the model's answer)";
        return Err(Exit(USAGE, why.into()));
    }
    let request_id = args
        .request_id
        .unwrap_or_else(|| format!("cycle-{}", engram::system_time_ms()));
    let mut domain = open_domain(global, &args.agent, true)?;
    // Each line is printed as its stage ends: a line that cannot be
    // printed stops the cycle before it commits, as `write` and `read`
    // stop at an answer they cannot print.
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let turn = Turn {
        session: &args.session,
        request_id: &request_id,
        input: &input,
    };
    run_cycle(&mut domain, &plan, &turn, &mut |line| {
        writeln!(out, "{line}").and_then(|()| out.flush())
    })
}

/// One turn a cycle runs for.
pub(super) struct Turn<'a> {
    pub session: &'a str,
    pub request_id: &'a str,
    pub input: &'a TurnInput,
}

/// Runs a cycle stage by stage, a line per stage handed to `emit` as the
/// stage ends, then commits. A refused plan or a failed cycle is answered on
/// a line of its own with exit 1. An `emit` that fails ends the cycle at
/// once: before the commit, nothing is stored; after it, the failure says
/// that the turn was committed.
pub(super) fn run_cycle(
    domain: &mut engram::Domain,
    plan: &ExecutionPlan,
    turn: &Turn<'_>,
    emit: Emit<'_>,
) -> Result<u8, Exit> {
    let cycle = match domain
        .begin_cycle(plan, turn.session, turn.request_id)
        .map_err(failure)?
    {
        Ok(cycle) => cycle,
        Err(error) => {
            let line = engram_surface::turns::plan_refusal(&error.step, &error.rule, &error.kind);
            emit(line).map_err(unprinted)?;
            return Ok(REFUSED);
        }
    };
    let refused = |error: CycleError| engram_surface::turns::cycle_refusal(&error);
    let code = match run_stages(domain, plan, &cycle, turn.input, emit)? {
        Some(error) => {
            emit(refused(error)).map_err(unprinted)?;
            REFUSED
        }
        None => match domain.commit_cycle(&cycle).map_err(failure)? {
            Ok(ids) => {
                emit(json!({"committed": ids}))
                    .map_err(|e| committed_unprinted(turn.request_id, e))?;
                OK
            }
            Err(error) => {
                emit(refused(error)).map_err(unprinted)?;
                REFUSED
            }
        },
    };
    domain.drop_cycle(cycle).map_err(failure)?;
    Ok(code)
}

/// Runs the stages the plan has, in order, each one's line emitted: the
/// error that stopped one, if one was stopped.
fn run_stages(
    domain: &mut engram::Domain,
    plan: &ExecutionPlan,
    cycle: &engram::Cycle,
    input: &TurnInput,
    emit: Emit<'_>,
) -> Result<Option<CycleError>, Exit> {
    for stage in json::Stage::ALL.map(Stage::from) {
        if !plan.steps.iter().any(|s| s.stage == stage) {
            continue;
        }
        match domain.run_stage(cycle, stage, input).map_err(failure)? {
            Ok(results) => emit(json::stage_line(stage, results)).map_err(unprinted)?,
            Err(error) => return Ok(Some(error)),
        }
    }
    Ok(None)
}

/// One turn of `engram cycle --batch`.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct BatchTurn {
    message: String,
    #[serde(default)]
    response: Option<String>,
    #[serde(default)]
    session: Option<String>,
    request_id: String,
    #[serde(default)]
    timestamp: Option<i64>,
}

/// Runs the plan once per turn, each at its own time, in one process; a
/// line per turn. Every line is read and checked before any turn runs.
fn cycle_batch(
    global: &Global,
    args: &CycleArgs,
    plan: &ExecutionPlan,
    path: &Path,
) -> Result<u8, Exit> {
    let io = Io {
        agent: args.agent.clone(),
        batch: true,
        file: Some(path.to_path_buf()),
    };
    let turns: Vec<BatchTurn> = parse_input(&io, "turn")?;
    if summarizes_turn(plan)
        && let Some(i) = turns.iter().position(|t| t.response.is_none())
    {
        let (name, n) = (path.display(), i + 1);
        let why = format!("{name}: turn {n}: the plan summarizes the turn: give its \"response\"");
        return Err(Exit(BAD_INPUT, why));
    }
    let mut domain = open_domain(global, &args.agent, true)?;
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let mut code = OK;
    for turn in turns {
        domain.set_time(turn.timestamp.or(opening().now));
        let (turn_code, answer) = batch_turn(&mut domain, plan, &args.session, turn)?;
        if let Err(error) = writeln!(out, "{answer}").and_then(|()| out.flush()) {
            let request_id = answer["request_id"].as_str().unwrap_or_default();
            return Err(match answer.get("committed") {
                Some(_) => committed_unprinted(request_id, error),
                None => unprinted(error),
            });
        }
        if turn_code != OK {
            code = turn_code;
        }
        if turn_code == REFUSED && answer.get("plan_error").is_some() {
            break; // the plan itself is refused: every turn would be
        }
    }
    domain.set_time(opening().now);
    Ok(code)
}

/// Runs one turn of a batch: its exit code and its line,
/// `{"request_id"}` and the turn's outcome (committed ids or the error).
fn batch_turn(
    domain: &mut engram::Domain,
    plan: &ExecutionPlan,
    session: &str,
    batch: BatchTurn,
) -> Result<(u8, Value), Exit> {
    let input = TurnInput {
        user_message: Some(batch.message),
        model_response: batch.response,
    };
    let turn = Turn {
        session: batch.session.as_deref().unwrap_or(session),
        request_id: &batch.request_id,
        input: &input,
    };
    // The turn's last line is its outcome.
    let mut last = Value::Null;
    let code = run_cycle(domain, plan, &turn, &mut |line| {
        last = line;
        Ok(())
    })?;
    let mut answer = json!({"request_id": batch.request_id});
    if let (Some(answer), Some(outcome)) = (answer.as_object_mut(), last.as_object()) {
        answer.extend(outcome.clone());
    }
    Ok((code, answer))
}
