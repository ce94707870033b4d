//! The JSON layer of the JavaScript package (world `engram:js/api`): the
//! `engram` command line's requests and answers over the engine's exports
//! (`io`, `history`, `graph`, `cycle`, `maintenance`), which the build of
//! `engram-host-components` wires to the unchanged engine component. Requests come in as
//! JSON text in the seeds' names and every answer goes out as the very line
//! the command line prints for it, converted by the command line's own
//! model (`engram-model`), so the JavaScript host answers byte for byte as
//! the native and WASI hosts do. The command line's source is
//! `host/rust/src/cli/`; each call below says which part of it it answers
//! as.
//!
//! Built for `wasm32-unknown-unknown`: it imports no WASI, no clock and no
//! randomness. What it asks of its host besides the engine is in
//! `engram:js/host`: the largest record a write may carry, and where an
//! audit entry of a write it refused goes.
//!
//! No input makes it panic: malformed JSON, an unknown field or a missing
//! one is answered `failure::input` with one line naming the input.

wit_bindgen::generate!({
    path: ["../../../wit", "wit"],
    world: "engram:js/api",
    generate_all,
});

use engram::js::host;
use engram::memory as wit;
use engram_model::calls::{
    AsOfArgs, EntitiesArgs, HistoryArgs, ListArgs, RelationshipsArgs, TraverseArgs,
};
use engram_model::turns;
use exports::engram::js::calls::{self, ExportPage, Failure};
use serde::de::DeserializeOwned;
use serde_json::json;

/// The record model of the contract (`engram:memory/types`).
pub mod types {
    pub use crate::wit::types::*;
}

/// The IO contract (`engram:memory/io`).
pub mod io {
    pub use crate::wit::io::*;
}

/// Execution cycles (`engram:memory/cycle`).
pub mod cycle {
    pub use crate::wit::cycle::*;
}

/// Export and import of a domain (`engram:memory/maintenance`).
pub mod export {
    pub use crate::wit::maintenance::*;
}

/// The JSON model of the contract, with its conversions to this binding.
pub mod json {
    pub use engram_model::json::*;
    engram_model::wit_conversions!();
}

/// The component's exports.
struct Api;

export!(Api);

impl calls::Guest for Api {
    type Turn = Turn;

    /// As `engram write` (and `engram maintenance write`: the host opened
    /// the domain in its mode): every request parsed first, then each
    /// written; a record above the host's limit is REJECTED here, its
    /// audit entry handed to the host.
    fn write(input: String, text: String, batch: bool) -> Result<Vec<String>, Failure> {
        let requests: Vec<json::WriteRequest> =
            parse_requests(&input, &text, batch, "write request")?;
        let max = usize::try_from(host::max_record_bytes()).unwrap_or(usize::MAX);
        Ok(requests
            .into_iter()
            .map(|request| {
                let request = io::WriteRequest::from(request);
                let size = json::record_size(&request.record);
                let answer = match engram_model::size::record_refusal(size, max) {
                    Some(reason) => {
                        host::append_audit(&refusal_entry(&request, reason));
                        json::WriteAnswer::Rejected
                    }
                    None => json::WriteAnswer::from(wit::io::write(&request)),
                };
                line(&answer)
            })
            .collect())
    }

    /// As `engram read`.
    fn read(input: String, text: String, batch: bool) -> Result<Vec<String>, Failure> {
        let requests: Vec<json::ReadRequest> =
            parse_requests(&input, &text, batch, "read request")?;
        Ok(requests
            .into_iter()
            .map(|request| line(&json::read_answer(wit::io::read(&request.into()))))
            .collect())
    }

    /// The calls above and below by name, flat (`calls.call`).
    fn call(request: String) -> String {
        let (name, rest) = request.split_once('\0').unwrap_or((&request, ""));
        let input_and_text = || {
            let (input, text) = rest.split_once('\0').unwrap_or(("input", rest));
            (input.to_owned(), text.to_owned())
        };
        let lines = |answer: Result<Vec<String>, Failure>| answer.map(|lines| lines.join("\n"));
        let args = || rest.to_owned();
        let answer = match name {
            "write" | "write-batch" => {
                let (input, text) = input_and_text();
                lines(Self::write(input, text, name == "write-batch"))
            }
            "read" | "read-batch" => {
                let (input, text) = input_and_text();
                lines(Self::read(input, text, name == "read-batch"))
            }
            "history" => Self::history(args()),
            "as-of" => Self::as_of(args()),
            "list" => Self::list(args()),
            "entities" => Self::entities(args()),
            "relationships" => Self::relationships(args()),
            "traverse" => Self::traverse(args()),
            "remember" => Self::remember(args()),
            "recall" => Self::recall(args()),
            other => Err(Failure::Input(format!("no call named {other:?}"))),
        };
        let (kind, text) = match answer {
            Ok(text) => ('V', text),
            Err(Failure::Input(text)) => ('I', text),
            Err(Failure::Refused(text)) => ('R', text),
        };
        format!("{kind}{text}\0{}", host::take_trail())
    }

    /// As `engram remember`.
    fn remember(args: String) -> Result<String, Failure> {
        let args = parse_args("remember", &args)?;
        turned(turns::remember(&mut Engine, args))
    }

    /// As `engram recall`.
    fn recall(args: String) -> Result<String, Failure> {
        let args = parse_args("recall", &args)?;
        turned(turns::recall(&mut Engine, args))
    }

    /// As `engram history`.
    fn history(args: String) -> Result<String, Failure> {
        let args: HistoryArgs = parse_args("history", &args)?;
        let request = wit::history::VersionsRequest {
            request_id: args.request_id,
            key: args.key,
            limit: args.limit,
        };
        Ok(facts(wit::history::versions(&request)))
    }

    /// As `engram as-of`.
    fn as_of(args: String) -> Result<String, Failure> {
        let args: AsOfArgs = parse_args("as-of", &args)?;
        let (axis, at) = match (args.valid, args.known) {
            (Some(at), None) => (wit::history::TimeAxis::Valid, at),
            (None, Some(at)) => (wit::history::TimeAxis::Transaction, at),
            (Some(_), Some(_)) => {
                return Err(bad_input(
                    "as-of: give \"valid\" or \"known\", not both".into(),
                ));
            }
            (None, None) => return Err(bad_input("as-of: give \"valid\" or \"known\"".into())),
        };
        let request = wit::history::AsOfRequest {
            request_id: args.request_id,
            key: args.key,
            axis,
            at,
            limit: args.limit,
        };
        Ok(facts(
            wit::history::as_of(&request).map(|found| found.into_iter().collect()),
        ))
    }

    /// As `engram list`.
    fn list(args: String) -> Result<String, Failure> {
        let args: ListArgs = parse_args("list", &args)?;
        if args.namespace.is_empty() {
            return Err(bad_input(
                "list: \"namespace\" needs at least one segment".into(),
            ));
        }
        Ok(facts(wit::graph::list(
            &args.request_id,
            &args.namespace,
            args.limit,
            args.after.as_deref(),
        )))
    }

    /// As `engram entities`.
    fn entities(args: String) -> Result<String, Failure> {
        let args: EntitiesArgs = parse_args("entities", &args)?;
        let entity_type = match args.entity_type {
            json::EntityType::Person => types::EntityType::Person,
            json::EntityType::Organization => types::EntityType::Organization,
            json::EntityType::Place => types::EntityType::Place,
            json::EntityType::Product => types::EntityType::Product,
            json::EntityType::Event => types::EntityType::Event,
        };
        Ok(facts(wit::graph::entities_of_type(
            &args.request_id,
            entity_type,
            args.limit,
        )))
    }

    /// As `engram relationships`.
    fn relationships(args: String) -> Result<String, Failure> {
        let args: RelationshipsArgs = parse_args("relationships", &args)?;
        let request = wit::graph::RelationshipsRequest {
            request_id: args.request_id,
            entity: args.entity,
            direction: direction(args.incoming),
            relationship_types: args.types,
            valid_at: args.valid_at,
            limit: args.limit,
        };
        Ok(facts(wit::graph::relationships_of(&request)))
    }

    /// As `engram traverse`: `{"nodes":[…],"edges":[…]}` or `{"error":…}`.
    fn traverse(args: String) -> Result<String, Failure> {
        use wit::graph::TraversalOrder;
        let args: TraverseArgs = parse_args("traverse", &args)?;
        let request = wit::graph::TraverseRequest {
            request_id: args.request_id,
            start: args.start,
            order: if args.depth_first {
                TraversalOrder::DepthFirst
            } else {
                TraversalOrder::BreadthFirst
            },
            direction: direction(args.incoming),
            relationship_types: args.types,
            valid_at: args.valid_at,
            max_depth: args.max_depth,
            max_nodes: args.max_nodes,
            max_edges: args.max_edges,
        };
        let answer = match wit::graph::traverse(&request) {
            Ok(traversal) => {
                let fact =
                    |f: types::StoredFact| json::StoredRecord::from(types::StoredRecord::Fact(f));
                let nodes: Vec<_> = traversal
                    .nodes
                    .into_iter()
                    .map(|n| json!({"key": n.key, "depth": n.depth, "entity": n.entity.map(fact)}))
                    .collect();
                let edges: Vec<_> = traversal.edges.into_iter().map(fact).collect();
                json!({"nodes": nodes, "edges": edges})
            }
            Err(error) => json!({"error": json::ReadFailure::from(error)}),
        };
        Ok(answer.to_string())
    }

    /// One page of `engram maintenance export`: each item the `item` of an
    /// export line.
    fn export(start: Option<Vec<u8>>, limit: u32) -> Result<ExportPage, Failure> {
        let page =
            wit::maintenance::export(start.as_deref(), limit).map_err(maintenance_refusal)?;
        Ok(ExportPage {
            items: page
                .items
                .into_iter()
                .map(|item| line(&json::ExportItem::from(item)))
                .collect(),
            next: page.next,
        })
    }

    /// As `engram maintenance import` for one domain: every item parsed
    /// first, then imported in the command line's commits.
    fn import(items: Vec<String>) -> Result<u32, Failure> {
        let items = items
            .iter()
            .enumerate()
            .map(|(i, text)| {
                serde_json::from_str::<json::ExportItem>(text)
                    .map(export::ExportedItem::from)
                    .map_err(|e| {
                        bad_input(format!(
                            "items, item {}: not a valid export item: {e}",
                            i + 1
                        ))
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut new = 0u32;
        for batch in json::import_batches(&items) {
            let stored = wit::maintenance::import(batch).map_err(maintenance_refusal)?;
            new = new.saturating_add(stored);
        }
        Ok(new)
    }

    /// As `engram maintenance expire` for one domain.
    fn expire() -> Result<u64, Failure> {
        engram_model::size::expire_all(wit::maintenance::expire, |e| match e {
            export::MaintenanceError::LimitOutOfBounds(ceiling) => Some(*ceiling),
            _ => None,
        })
        .map_err(maintenance_refusal)
    }

    /// As `engram cycle` (without `--batch`): the plan and the inputs it
    /// needs checked first, then the lines of [`run_cycle`].
    fn run_cycle(
        plan: String,
        session: String,
        request_id: String,
        message: Option<String>,
        response: Option<String>,
    ) -> Result<Vec<String>, Failure> {
        let plan = parse_plan(&plan)?;
        let needs_response = plan.steps.iter().any(|s| {
            matches!(
                s.kind,
                cycle::StepKind::SummarizeMemory(cycle::SummarizeInput::Turn)
            )
        });
        if !plan.steps.is_empty() && message.is_none() {
            return Err(bad_input(
                "the plan needs the user's message: give \"message\"".into(),
            ));
        }
        if needs_response && response.is_none() {
            return Err(bad_input(
                "the plan summarizes the turn: give \"response\" (the model's answer)".into(),
            ));
        }
        let input = cycle::TurnInput {
            user_message: message,
            model_response: response,
        };
        Ok(run_cycle(&plan, &session, &request_id, &input))
    }
}

/// A cycle begun by `turn.begin`, run stage by stage by its caller.
struct Turn {
    /// The engine's cycle; dropped with the turn, which persists nothing
    /// uncommitted.
    cycle: wit::cycle::Cycle,
}

impl calls::GuestTurn for Turn {
    fn begin(plan: String, session: String, request_id: String) -> Result<calls::Turn, Failure> {
        let plan = parse_plan(&plan)?;
        let cycle = wit::cycle::Cycle::begin(&plan, &session, &request_id)
            .map_err(|error| Failure::Refused(plan_error(&error)))?;
        Ok(calls::Turn::new(Turn { cycle }))
    }

    fn run_stage(
        &self,
        stage: String,
        message: Option<String>,
        response: Option<String>,
    ) -> Result<String, Failure> {
        let stage: json::Stage = serde_json::from_value(serde_json::Value::String(stage.clone()))
            .map_err(|_| {
                bad_input(format!(
                    "{stage:?} is not a stage: ContextSelect, PromptAssemble, SummarizeMemory or PersistMemory"
                ))
            })?;
        let stage = cycle::Stage::from(stage);
        let input = cycle::TurnInput {
            user_message: message,
            model_response: response,
        };
        match self.cycle.run_stage(stage, &input) {
            Ok(results) => Ok(stage_line(stage, results)),
            Err(error) => Err(Failure::Refused(cycle_error(&error))),
        }
    }

    fn output(&self, step: String) -> Option<String> {
        self.cycle
            .output(&step)
            .map(|output| line(&json::StepOutput::from(output)))
    }

    fn commit(&self) -> Result<String, Failure> {
        match self.cycle.commit() {
            Ok(ids) => Ok(json!({"committed": ids}).to_string()),
            Err(error) => Err(Failure::Refused(cycle_error(&error))),
        }
    }
}

// ---- remember and recall ---------------------------------------------------------

/// The engine's cycles, as `remember` and `recall` run them. A failure of
/// the store fails the cycle (a `{"cycle_error"}`); one of the host stops
/// the instance: nothing here fails otherwise.
struct Engine;

impl turns::Cycles for Engine {
    type Cycle = wit::cycle::Cycle;
    type Fault = std::convert::Infallible;

    fn begin(
        &mut self,
        plan: &json::Plan,
        session: &str,
        request_id: &str,
    ) -> Result<Result<Self::Cycle, turns::Value>, Self::Fault> {
        let plan = cycle::ExecutionPlan::from(plan.clone());
        Ok(wit::cycle::Cycle::begin(&plan, session, request_id)
            .map_err(|e| turns::plan_refusal(&e.step, &e.rule, &e.kind)))
    }

    fn run_stage(
        &mut self,
        cycle: &Self::Cycle,
        stage: json::Stage,
        message: &str,
        response: Option<&str>,
    ) -> Result<Result<(), turns::Value>, Self::Fault> {
        let input = cycle::TurnInput {
            user_message: Some(message.to_owned()),
            model_response: response.map(str::to_owned),
        };
        Ok(cycle
            .run_stage(stage.into(), &input)
            .map(|_| ())
            .map_err(|e| turns::cycle_refusal(&e)))
    }

    fn output(
        &mut self,
        cycle: &Self::Cycle,
        step: &str,
    ) -> Result<Option<json::StepOutput>, Self::Fault> {
        Ok(cycle.output(step).map(Into::into))
    }

    fn commit(
        &mut self,
        cycle: &Self::Cycle,
    ) -> Result<Result<Vec<String>, turns::Value>, Self::Fault> {
        Ok(cycle.commit().map_err(|e| turns::cycle_refusal(&e)))
    }

    fn end(&mut self, cycle: Self::Cycle) -> Result<(), Self::Fault> {
        drop(cycle);
        Ok(())
    }

    fn set_time(&mut self, time: Option<i64>) -> Option<i64> {
        host::set_time(time)
    }

    fn entropy(&mut self) -> Result<[u64; 2], Self::Fault> {
        let (high, low) = host::entropy();
        Ok([high, low])
    }
}

/// What `remember` or `recall` answered, as its line, or its refusal.
fn turned<T: serde::Serialize>(
    answer: Result<T, turns::TurnError<std::convert::Infallible>>,
) -> Result<String, Failure> {
    match answer {
        Ok(answer) => Ok(line(&answer)),
        Err(turns::TurnError::Refused(refused)) => Err(Failure::Refused(refused.to_string())),
        Err(turns::TurnError::Failed(never)) => match never {},
    }
}

// ---- parsing ---------------------------------------------------------------------

/// An input failure: its message on one line.
fn bad_input(message: String) -> Failure {
    Failure::Input(engram_model::size::one_line(&message))
}

/// Parses every request of `text` before any is run, as the command line's
/// `parse_input` does, with its messages: `<input>: not a valid <what>: …`,
/// or with `batch` (JSON Lines, blank lines skipped)
/// `<input>: line <n>: not a valid <what>: …`.
fn parse_requests<T: DeserializeOwned>(
    input: &str,
    text: &str,
    batch: bool,
    what: &str,
) -> Result<Vec<T>, Failure> {
    let at = |line: Option<usize>| line.map(|n| format!(" line {n}:")).unwrap_or_default();
    let parse = |line: Option<usize>, text: &str| -> Result<T, Failure> {
        serde_json::from_str(text)
            .map_err(|e| bad_input(format!("{input}:{} not a valid {what}: {e}", at(line))))
    };
    if !batch {
        return parse(None, text).map(|request| vec![request]);
    }
    text.split('\n')
        .enumerate()
        .filter(|(_, line)| !line.trim_ascii().is_empty())
        .map(|(i, line)| parse(Some(i + 1), line))
        .collect()
}

/// Parses the arguments of a lookup: `<call>: not valid arguments: …`.
fn parse_args<T: DeserializeOwned>(call: &str, args: &str) -> Result<T, Failure> {
    serde_json::from_str(args).map_err(|e| bad_input(format!("{call}: not valid arguments: {e}")))
}

/// Parses an execution plan: `plan: not a valid execution plan: …`.
fn parse_plan(text: &str) -> Result<cycle::ExecutionPlan, Failure> {
    let plan: json::Plan = serde_json::from_str(text)
        .map_err(|e| bad_input(format!("plan: not a valid execution plan: {e}")))?;
    Ok(plan.into())
}

// ---- answers ---------------------------------------------------------------------

/// A value of the JSON model as one line of JSON. The model's answers
/// always serialize (string keys, finite numbers as the engine keeps
/// them); were one ever not to, the line says why instead of panicking.
fn line(value: &impl serde::Serialize) -> String {
    serde_json::to_string(value)
        .unwrap_or_else(|e| json!({"error": format!("unserializable answer: {e}")}).to_string())
}

/// FACT versions as a read answer, as the command line's `print_facts`
/// prints them: `{"records":[…]}` or `{"error":…}`.
fn facts(answer: Result<Vec<types::StoredFact>, io::ReadError>) -> String {
    line(&json::read_answer(answer.map(|facts| io::ReadResult {
        records: facts.into_iter().map(types::StoredRecord::Fact).collect(),
    })))
}

/// The direction of a graph lookup: outgoing unless `incoming`.
fn direction(incoming: bool) -> wit::graph::EdgeDirection {
    if incoming {
        wit::graph::EdgeDirection::Incoming
    } else {
        wit::graph::EdgeDirection::Outgoing
    }
}

/// The audit entry of a write refused for its size, as the host's
/// `append-audit` takes it: the `engram audit` line without `at` and
/// `agent_id`, which the host adds.
fn refusal_entry(request: &io::WriteRequest, reason: String) -> String {
    let entry = json::refused_write(
        0,
        "",
        &request.request_id,
        &request.source,
        json::record_type(&request.record),
        reason,
    );
    let mut value = serde_json::to_value(&entry).unwrap_or_default();
    if let Some(fields) = value.as_object_mut() {
        fields.shift_remove("at");
        fields.shift_remove("agent_id");
    }
    value.to_string()
}

/// A refused maintenance call: `{"error":…}`, the reason an item cannot be
/// imported, or the error's name.
fn maintenance_refusal(error: export::MaintenanceError) -> Failure {
    let why = match error {
        export::MaintenanceError::InvalidItem(why) => why,
        other => json::error_name(&other),
    };
    Failure::Refused(json!({ "error": why }).to_string())
}

/// A refused plan's line: `{"plan_error":{"step","rule","kind"}}`.
fn plan_error(error: &cycle::PlanError) -> String {
    turns::plan_refusal(&error.step, &error.rule, &error.kind).to_string()
}

/// A failed cycle's line: `{"cycle_error":…}`.
fn cycle_error(error: &cycle::CycleError) -> String {
    turns::cycle_refusal(error).to_string()
}

/// A stage's line: `{"stage","steps":[{"step","output"}…]}`.
fn stage_line(stage: cycle::Stage, results: Vec<cycle::StepResult>) -> String {
    let steps: Vec<_> = results
        .into_iter()
        .map(|r| json!({"step": r.step, "output": json::StepOutput::from(r.output)}))
        .collect();
    json!({"stage": json::Stage::from(stage).name(), "steps": steps}).to_string()
}

/// Runs a cycle stage by stage, a line per stage that has steps, then
/// commits, as the command line's `run_cycle` does: a refused plan or a
/// failed cycle is the last line.
fn run_cycle(
    plan: &cycle::ExecutionPlan,
    session: &str,
    request_id: &str,
    input: &cycle::TurnInput,
) -> Vec<String> {
    let cycle = match wit::cycle::Cycle::begin(plan, session, request_id) {
        Ok(cycle) => cycle,
        Err(error) => return vec![plan_error(&error)],
    };
    let mut lines = Vec::new();
    for stage in json::Stage::ALL.map(cycle::Stage::from) {
        if !plan.steps.iter().any(|s| s.stage == stage) {
            continue;
        }
        match cycle.run_stage(stage, input) {
            Ok(results) => lines.push(stage_line(stage, results)),
            Err(error) => {
                lines.push(cycle_error(&error));
                return lines;
            }
        }
    }
    lines.push(match cycle.commit() {
        Ok(ids) => json!({ "committed": ids }).to_string(),
        Err(error) => cycle_error(&error),
    });
    lines
}
