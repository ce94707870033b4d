//! The call surface of a domain: its calls by name, JSON text in and the
//! command line's answer lines out. The language packages reach a domain
//! through this one surface, whatever runs the engine: the native binding
//! of Node and Python (over the Rust library's `Domain`) and the JSON layer
//! the browser and Workers load as wasm (over the engine's exports). A call
//! crosses into Rust once and answers one string.
//!
//! | name | `args` | answer |
//! |---|---|---|
//! | `write`, `read` | one request (JSON) | its answer line |
//! | `write-batch`, `read-batch` | requests, one a line (JSON Lines; blank lines skipped) | an answer line a request |
//! | `history`, `as-of`, `list`, `entities`, `relationships`, `traverse` | the command line's options as a JSON object ([`crate::calls`]) | the answer line |
//! | `remember`, `recall` | [`RememberArgs`], [`RecallArgs`] | the answer line |
//! | `run-cycle` | `{"plan","session","request_id","message","response"}` | a `{"stage","steps"}` line per stage run, then `{"committed"}`, or a refusal line last |
//! | `cycle-begin` | `{"plan","session","request_id"}` | `{"cycle":n}` |
//! | `cycle-stage` | `{"cycle","stage","message","response"}` | `{"stage","steps"}` |
//! | `cycle-output` | `{"cycle","step"}` | the step's output, or `null` |
//! | `cycle-commit` | `{"cycle"}` | `{"committed":[…]}` |
//! | `cycle-drop` | `{"cycle"}` | `null` |
//! | `export` | `{"start","limit"}` (`start` the `next` of the page before, in hex), or `{"all":true}` (every page, `next` null) | `{"lines":[{"agent_id","item"}…],"next"}` |
//! | `import` | a JSON array of export lines of this agent, or bare items | `{"agent_id","items","new"}` |
//! | `expire` | nothing | `{"agent_id","expired"}` |
//! | `store-call` | `{"call","args"}`: a store-wide `export`, `import` or `expire` and its arguments | the call checked and planned ([`StoreCall`]), for a host that opens each domain itself |
//!
//! Optional arguments may be left out or `null`: `session` is `default`
//! (`js` for the cycle calls, as before), a `request_id` left out is a fresh
//! random one (`<call>-` and 128 bits in hex). Every request of a batch is
//! parsed before any runs. Several answer lines come joined by `\n`.
//!
//! An answer is [`Answer::Value`], [`Answer::Input`] (the input is not a
//! valid request: nothing ran; one line naming the input, the line of a
//! batch and the problem) or [`Answer::Refused`] (the contract refused it,
//! its line: nothing of it was persisted). A failure of the host (its store,
//! its instance) is the binding's fault, `Err`.
//!
//! Beside it: the lookups' arguments ([`calls`]), `remember` and `recall`
//! and the cycles under them ([`turns`]), and a component's own binding of
//! the engine as a domain ([`guest`]); all over the contract's JSON model,
//! [`engram_model`].

#![warn(missing_docs)]

pub mod calls;
pub mod guest;
pub mod turns;

/// For the macros' expansions in other crates.
#[doc(hidden)]
pub use engram_model;
/// For the macros' expansions in other crates.
#[doc(hidden)]
pub use serde_json;

use crate::calls::{
    AsOfArgs, EntitiesArgs, HistoryArgs, ListArgs, Lookup, RelationshipsArgs, TraverseArgs,
};
use crate::turns::{Cycles, RecallArgs, RememberArgs, TurnError, Value};
use engram_model::json::{
    ExportItem, ExportLine, Plan, ReadAnswer, ReadRequest, Stage, WriteAnswer, WriteRequest,
};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::BTreeMap;

/// What a call answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Its answer: one line, or lines joined by `\n`.
    Value(String),
    /// Its input is not a valid request: nothing ran.
    Input(String),
    /// The contract refused it, its line: nothing of it was persisted.
    Refused(String),
}

impl Answer {
    /// The answer as one string whose first character says what it is,
    /// then the text: `V` a value, or `L` a value whose text holds a run of
    /// 16 digits or more (an integer beyond 2^53, which JavaScript parses
    /// exactly only as a BigInt, may be there: a parser that cares takes
    /// its slower path, the others read `L` as `V`); `I` an input failure;
    /// `R` a refusal.
    pub fn framed(self) -> String {
        let (kind, mut text) = match self {
            Answer::Value(text) if long_digits(&text) => ('L', text),
            Answer::Value(text) => ('V', text),
            Answer::Input(text) => ('I', text),
            Answer::Refused(text) => ('R', text),
        };
        text.insert(0, kind);
        text
    }
}

/// Whether `text` holds a run of 16 ASCII digits or more: where an integer
/// beyond 2^53 may be (the shortest such is 9007199254740993, 16 digits).
fn long_digits(text: &str) -> bool {
    let mut run = 0;
    for byte in text.bytes() {
        if byte.is_ascii_digit() {
            run += 1;
            if run >= 16 {
                return true;
            }
        } else {
            run = 0;
        }
    }
    false
}

/// Why a lookup is made as of a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Axis {
    /// Valid time: when it was true in the world.
    Valid,
    /// Transaction time: when the store learned it.
    Known,
}

/// One page of an export: the items, and where the next page starts.
pub type ExportPage = (Vec<ExportItem>, Option<Vec<u8>>);

/// An embedding model: its name and dimension.
pub type VectorModel = (String, u32);

/// A binding of the engine in the JSON model: what the surface runs on.
/// `Ok(Err(line))` is the contract's refusal, its line; `Err` a fault of
/// the host. Implemented for a binding's `Domain` by
/// [`domain_engine!`](crate::domain_engine).
pub trait Engine: Cycles {
    /// The agent whose domain this is.
    fn agent(&self) -> String;
    /// Writes one record, as `engram write` (a record above the host's
    /// limit is REJECTED before the engine runs, and audited).
    fn write(&mut self, request: WriteRequest) -> Result<WriteAnswer, Self::Fault>;
    /// Reads, as `engram read`.
    fn read(&mut self, request: ReadRequest) -> Result<ReadAnswer, Self::Fault>;
    /// The versions of a FACT key, newest first.
    fn history(&mut self, request_id: String, args: HistoryArgs)
    -> Result<ReadAnswer, Self::Fault>;
    /// The version of a FACT key as of `at` on `axis`.
    fn as_of(
        &mut self,
        request_id: String,
        args: AsOfArgs,
        axis: Axis,
        at: i64,
    ) -> Result<ReadAnswer, Self::Fault>;
    /// The FACTs of a namespace, in key order.
    fn list(&mut self, request_id: String, args: ListArgs) -> Result<ReadAnswer, Self::Fault>;
    /// The entities of a type.
    fn entities(
        &mut self,
        request_id: String,
        args: EntitiesArgs,
    ) -> Result<ReadAnswer, Self::Fault>;
    /// The relationships of an entity.
    fn relationships(
        &mut self,
        request_id: String,
        args: RelationshipsArgs,
    ) -> Result<ReadAnswer, Self::Fault>;
    /// A bounded traversal: its line (`{"nodes","edges"}` or `{"error"}`).
    fn traverse(&mut self, request_id: String, args: TraverseArgs) -> Result<Value, Self::Fault>;
    /// One page of a maintenance export.
    fn export_page(
        &mut self,
        start: Option<&[u8]>,
        limit: u32,
    ) -> Result<Result<ExportPage, Value>, Self::Fault>;
    /// Imports items, in the command line's commits: how many were new.
    fn import(&mut self, items: Vec<ExportItem>) -> Result<Result<u32, Value>, Self::Fault>;
    /// Removes every record whose expiry has passed: how many went.
    fn expire(&mut self) -> Result<Result<u64, Value>, Self::Fault>;
    /// Makes the domain's vectors again from its stored summaries, with the
    /// host's embedder, `batch` memories a commit until every one has its
    /// vector (S-VECTOR): how many were made.
    fn reembed(&mut self, batch: u32) -> Result<Result<u64, Value>, Self::Fault>;
    /// The model that made the domain's vectors (its name and dimension),
    /// or none while it has none.
    fn vector_model(&mut self) -> Result<Result<Option<VectorModel>, Value>, Self::Fault>;
}

/// Why a call did not answer a value.
enum Refusal {
    Input(String),
    Refused(String),
}

/// The input failure of a call by a name the surface does not know.
fn no_call(name: &str) -> Refusal {
    Refusal::Input(format!("no call named {name:?}"))
}

/// The value of a parse, or the call's input failure.
macro_rules! try_input {
    ($parsed:expr) => {
        match $parsed {
            Ok(value) => value,
            Err(why) => return Ok(Err(Refusal::Input(why))),
        }
    };
}

/// The value of an engine's answer, or the call's refusal.
macro_rules! try_refused {
    ($answer:expr) => {
        match $answer {
            Ok(value) => value,
            Err(refused) => return Ok(Err(Refusal::Refused(refused.to_string()))),
        }
    };
}

/// The line of a `remember` or `recall`, or its refusal.
macro_rules! try_turn {
    ($answer:expr) => {
        match $answer {
            Ok(answer) => line(&answer),
            Err(TurnError::Refused(refused)) => {
                return Ok(Err(Refusal::Refused(refused.to_string())));
            }
            Err(TurnError::Failed(fault)) => return Err(fault),
        }
    };
}

/// The session in which `cycle` was begun names it `cycle` in its calls.
type CycleId = u64;

/// One domain's calls by name over an [`Engine`], and the cycles begun in
/// it and not yet dropped.
pub struct Session<E: Engine> {
    engine: E,
    cycles: BTreeMap<CycleId, E::Cycle>,
    next_cycle: CycleId,
}

/// The session of the cycle calls when none is given (as before the
/// surface: the JavaScript package's).
pub const CYCLE_SESSION: &str = "js";

/// Items of an export page when no `limit` is given: the hosts' default
/// read-limit ceiling.
pub const EXPORT_PAGE: u32 = 1_000;

/// What an input failure of `write` and `read` names the input when the
/// caller names none (the language packages' requests).
pub const DEFAULT_INPUT: &str = "request";

/// How many memories a commit of `reembed` makes vectors for, unless the
/// caller says: one batch of the embedder's a commit is kept small enough
/// that a kill loses little work.
pub const REEMBED_BATCH: u32 = 256;

/// `run-cycle`: `{"plan","session","request_id","message","response"}`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunCycleArgs {
    /// The execution plan, a JSON object or JSON text: parsed once, into
    /// the plan the engine is given.
    pub plan: Value,
    /// The conversation ([`CYCLE_SESSION`] when none).
    #[serde(default)]
    pub session: Option<String>,
    /// An id for the cycle (a fresh random one when none).
    #[serde(default)]
    pub request_id: Option<String>,
    /// What the user said this turn.
    #[serde(default)]
    pub message: Option<String>,
    /// What the model answered.
    #[serde(default)]
    pub response: Option<String>,
}

/// `cycle-begin`: `{"plan","session","request_id"}`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BeginArgs {
    /// The execution plan, a JSON object or JSON text, as [`RunCycleArgs`]'.
    pub plan: Value,
    /// The conversation ([`CYCLE_SESSION`] when none).
    #[serde(default)]
    pub session: Option<String>,
    /// An id for the cycle (a fresh random one when none).
    #[serde(default)]
    pub request_id: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StageArgs {
    cycle: CycleId,
    stage: String,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    response: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OutputArgs {
    cycle: CycleId,
    step: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CycleArgs {
    cycle: CycleId,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct ExportArgs {
    #[serde(default)]
    start: Option<String>,
    #[serde(default)]
    limit: Option<u32>,
    /// Every item, page after page, in one answer (`next` null).
    #[serde(default)]
    all: bool,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct VectorModelArgs {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    dimension: Option<u32>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct ReembedArgs {
    #[serde(default)]
    batch: Option<u32>,
}

/// An export page's answer.
#[derive(Serialize)]
struct ExportAnswer {
    lines: Vec<ExportLine>,
    next: Option<String>,
}

impl<E: Engine> Session<E> {
    /// A session over `engine`.
    pub fn new(engine: E) -> Self {
        Session {
            engine,
            cycles: BTreeMap::new(),
            next_cycle: 1,
        }
    }

    /// The engine.
    pub fn engine(&mut self) -> &mut E {
        &mut self.engine
    }

    /// The engine, the session's cycles dropped.
    pub fn into_engine(self) -> E {
        self.engine
    }

    /// Forgets every cycle in flight: for an engine whose instance stopped,
    /// whose cycles went with it.
    pub fn lose_cycles(&mut self) {
        self.cycles.clear();
    }

    /// Makes the call `name` with `args`; `input` names the input in an
    /// input failure of `write` and `read` (`standard input`, a file name).
    pub fn call(&mut self, name: &str, input: &str, args: &str) -> Result<Answer, E::Fault> {
        Ok(answered(self.answer(name, input, args)?))
    }

    /// The call `run-cycle` with its arguments as a caller that has them
    /// apart gives them: no JSON text of them made to be parsed again.
    pub fn run_cycle_call(&mut self, args: RunCycleArgs) -> Result<Answer, E::Fault> {
        Ok(answered(self.run_cycle_of(args)?))
    }

    /// The call `cycle-begin` with its arguments given apart, as
    /// [`Session::run_cycle_call`].
    pub fn begin_call(&mut self, args: BeginArgs) -> Result<Answer, E::Fault> {
        Ok(answered(self.begin_of(args)?))
    }

    fn answer(
        &mut self,
        name: &str,
        input: &str,
        args: &str,
    ) -> Result<Result<String, Refusal>, E::Fault> {
        match name {
            "write" | "write-batch" | "read" | "read-batch" => self.io_call(name, input, args),
            "history" | "as-of" | "list" | "entities" | "relationships" | "traverse" => {
                self.lookup_call(name, args)
            }
            "remember" | "recall" => self.turn_call(name, args),
            "run-cycle" | "cycle-begin" | "cycle-stage" | "cycle-output" | "cycle-commit"
            | "cycle-drop" => self.cycle_call(name, args),
            "export" | "import" | "expire" | "reembed" | "vector-model" => {
                self.maintenance_call(name, args)
            }
            "store-call" => Ok(store_call(args)),
            other => Ok(Err(no_call(other))),
        }
    }

    /// `write` and `read`, one request or a batch; an `input` left empty
    /// is named [`DEFAULT_INPUT`].
    fn io_call(
        &mut self,
        name: &str,
        input: &str,
        args: &str,
    ) -> Result<Result<String, Refusal>, E::Fault> {
        let input = if input.is_empty() {
            DEFAULT_INPUT
        } else {
            input
        };
        let engine = &mut self.engine;
        match name {
            "write" | "write-batch" => {
                let batch = name == "write-batch";
                each(
                    engine,
                    input,
                    args,
                    batch,
                    "write request",
                    |e, r: WriteRequest| e.write(r),
                )
            }
            "read" | "read-batch" => {
                let batch = name == "read-batch";
                each(
                    engine,
                    input,
                    args,
                    batch,
                    "read request",
                    |e, r: ReadRequest| e.read(r),
                )
            }
            other => Ok(Err(no_call(other))),
        }
    }

    /// The lookups: `history`, `as-of`, `list`, `entities`, `relationships`, `traverse`.
    fn lookup_call(&mut self, name: &str, args: &str) -> Result<Result<String, Refusal>, E::Fault> {
        let engine = &mut self.engine;
        match name {
            "history" => lookup(engine, name, args, |e, id, a: HistoryArgs| {
                Ok(line(&e.history(id, a)?))
            }),
            "as-of" => lookup(engine, name, args, |e, id, a: AsOfArgs| {
                let (axis, at) = match (a.valid, a.known) {
                    (Some(at), None) => (Axis::Valid, at),
                    (None, Some(at)) => (Axis::Known, at),
                    (Some(_), Some(_)) => {
                        return Ok(Err("as-of: give \"valid\" or \"known\", not both"));
                    }
                    (None, None) => return Ok(Err("as-of: give \"valid\" or \"known\"")),
                };
                Ok(Ok(line(&e.as_of(id, a, axis, at)?)))
            }),
            "list" => lookup(engine, name, args, |e, id, a: ListArgs| {
                if a.namespace.is_empty() {
                    return Ok(Err("list: \"namespace\" needs at least one segment"));
                }
                Ok(Ok(line(&e.list(id, a)?)))
            }),
            "entities" => lookup(engine, name, args, |e, id, a: EntitiesArgs| {
                Ok(line(&e.entities(id, a)?))
            }),
            "relationships" => lookup(engine, name, args, |e, id, a: RelationshipsArgs| {
                Ok(line(&e.relationships(id, a)?))
            }),
            "traverse" => lookup(engine, name, args, |e, id, a: TraverseArgs| {
                Ok(e.traverse(id, a)?.to_string())
            }),
            other => Ok(Err(no_call(other))),
        }
    }

    /// `remember` and `recall`.
    fn turn_call(&mut self, name: &str, args: &str) -> Result<Result<String, Refusal>, E::Fault> {
        let engine = &mut self.engine;
        Ok(Ok(match name {
            "remember" => {
                let args: RememberArgs = try_input!(parse_args(name, args));
                try_turn!(turns::remember(engine, args))
            }
            "recall" => {
                let args: RecallArgs = try_input!(parse_args(name, args));
                try_turn!(turns::recall(engine, args))
            }
            other => return Ok(Err(no_call(other))),
        }))
    }

    /// The cycle calls: `run-cycle`, and one cycle stage by stage.
    fn cycle_call(&mut self, name: &str, args: &str) -> Result<Result<String, Refusal>, E::Fault> {
        let engine = &mut self.engine;
        Ok(Ok(match name {
            "run-cycle" => return self.run_cycle_of(try_input!(parse_args(name, args))),
            "cycle-begin" => return self.begin_of(try_input!(parse_args(name, args))),
            "cycle-stage" => {
                let args: StageArgs = try_input!(parse_args(name, args));
                let stage: Stage = match serde_json::from_value(Value::String(args.stage.clone())) {
                    Ok(stage) => stage,
                    Err(_) => {
                        return Ok(Err(Refusal::Input(format!(
                            "{:?} is not a stage: ContextSelect, PromptAssemble, SummarizeMemory or PersistMemory",
                            args.stage
                        ))));
                    }
                };
                let cycle = try_input!(live(&self.cycles, args.cycle));
                let message = args.message.as_deref();
                match engine.run_stage(cycle, stage, message, args.response.as_deref())? {
                    Ok(results) => E::stage_line(stage, results).to_string(),
                    Err(refused) => return Ok(Err(Refusal::Refused(refused.to_string()))),
                }
            }
            "cycle-output" => {
                let args: OutputArgs = try_input!(parse_args(name, args));
                let cycle = try_input!(live(&self.cycles, args.cycle));
                match engine.output(cycle, &args.step)? {
                    Some(output) => line(&output),
                    None => "null".to_owned(),
                }
            }
            "cycle-commit" => {
                let args: CycleArgs = try_input!(parse_args(name, args));
                let cycle = try_input!(live(&self.cycles, args.cycle));
                match engine.commit(cycle)? {
                    Ok(ids) => json!({ "committed": ids }).to_string(),
                    Err(refused) => return Ok(Err(Refusal::Refused(refused.to_string()))),
                }
            }
            "cycle-drop" => {
                let args: CycleArgs = try_input!(parse_args(name, args));
                if let Some(cycle) = self.cycles.remove(&args.cycle) {
                    engine.end(cycle)?;
                }
                "null".to_owned()
            }
            other => return Ok(Err(no_call(other))),
        }))
    }

    /// `run-cycle`: the plan parsed once, the turn's inputs checked, the
    /// cycle run stage by stage and committed.
    fn run_cycle_of(&mut self, args: RunCycleArgs) -> Result<Result<String, Refusal>, E::Fault> {
        let plan = try_input!(parse_plan(args.plan));
        try_input!(turn_inputs(&plan, &args.message, &args.response));
        let engine = &mut self.engine;
        let session = args.session.as_deref().unwrap_or(CYCLE_SESSION);
        let id = request_id(engine, "cycle", args.request_id)?;
        let lines = run_cycle(engine, &plan, session, &id, &args.message, &args.response)?;
        Ok(Ok(lines.join("\n")))
    }

    /// `cycle-begin`: the plan parsed once and the cycle begun, kept in the
    /// session by its number.
    fn begin_of(&mut self, args: BeginArgs) -> Result<Result<String, Refusal>, E::Fault> {
        let plan = try_input!(parse_plan(args.plan));
        let engine = &mut self.engine;
        let session = args.session.as_deref().unwrap_or(CYCLE_SESSION);
        let id = request_id(engine, "cycle", args.request_id)?;
        let cycle = try_refused!(engine.begin(&plan, session, &id)?);
        let n = self.next_cycle;
        self.next_cycle += 1;
        self.cycles.insert(n, cycle);
        Ok(Ok(json!({ "cycle": n }).to_string()))
    }

    /// `export`, `import` and `expire`.
    fn maintenance_call(
        &mut self,
        name: &str,
        args: &str,
    ) -> Result<Result<String, Refusal>, E::Fault> {
        let engine = &mut self.engine;
        Ok(Ok(match name {
            "export" => {
                let args: ExportArgs = try_input!(parse_optional_args(name, args));
                if args.all {
                    if args.start.is_some() || args.limit.is_some() {
                        return Ok(Err(Refusal::Input(
                            "export: \"all\" takes neither \"start\" nor \"limit\"".into(),
                        )));
                    }
                    let mut lines = Vec::new();
                    try_refused!(export_all(engine, |line| {
                        lines.push(line);
                        Ok(())
                    })?);
                    return Ok(Ok(line(&ExportAnswer { lines, next: None })));
                }
                let start = match args.start.as_deref().map(from_hex) {
                    None => None,
                    Some(Some(start)) => Some(start),
                    Some(None) => {
                        return Ok(Err(Refusal::Input(
                            "export: \"start\" is not the \"next\" of a page (hex)".into(),
                        )));
                    }
                };
                let page =
                    engine.export_page(start.as_deref(), args.limit.unwrap_or(EXPORT_PAGE))?;
                let (items, next) = try_refused!(page);
                let agent_id = engine.agent();
                let lines = items
                    .into_iter()
                    .map(|item| ExportLine {
                        agent_id: agent_id.clone(),
                        item,
                    })
                    .collect();
                line(&ExportAnswer {
                    lines,
                    next: next.map(|next| to_hex(&next)),
                })
            }
            "import" => {
                let agent = engine.agent();
                let items = try_input!(import_items(&agent, args));
                let count = items.len();
                let new = try_refused!(engine.import(items)?);
                json!({"agent_id": agent, "items": count, "new": new}).to_string()
            }
            "expire" => {
                let expired = try_refused!(engine.expire()?);
                json!({"agent_id": engine.agent(), "expired": expired}).to_string()
            }
            "reembed" => {
                let args: ReembedArgs = try_input!(parse_optional_args(name, args));
                let batch = match args.batch {
                    None => REEMBED_BATCH,
                    Some(0) => {
                        return Ok(Err(Refusal::Input(
                            "reembed: \"batch\" must be at least 1".into(),
                        )));
                    }
                    Some(batch) => batch,
                };
                let embedded = try_refused!(engine.reembed(batch)?);
                json!({"agent_id": engine.agent(), "embedded": embedded}).to_string()
            }
            "vector-model" => {
                let host: VectorModelArgs = try_input!(parse_optional_args(name, args));
                let model = try_refused!(engine.vector_model()?);
                // Given the host's model: refused when the domain's vectors
                // are another's (a host that learns its domain's model only
                // by asking checks it so as it opens).
                if let (Some(name), Some(dimension), Some((theirs, their_dimension))) =
                    (&host.name, host.dimension, &model)
                    && (theirs != name || *their_dimension != dimension)
                {
                    let why = engram_model::json::model_changed(
                        (theirs, *their_dimension),
                        (name, dimension),
                    );
                    return Ok(Err(Refusal::Refused(
                        json!({ "error": format!("agent {:?}: {why}", engine.agent()) })
                            .to_string(),
                    )));
                }
                model
                    .map_or(
                        Value::Null,
                        |(name, dimension)| json!({"name": name, "dimension": dimension}),
                    )
                    .to_string()
            }
            other => return Ok(Err(no_call(other))),
        }))
    }
}

/// What a lookup's closure answers: its line, or (for a check of its
/// arguments that failed) why, as an input failure.
trait Looked {
    /// The line, or why the arguments are refused.
    fn looked(self) -> Result<String, &'static str>;
}

impl Looked for String {
    fn looked(self) -> Result<String, &'static str> {
        Ok(self)
    }
}

impl Looked for Result<String, &'static str> {
    fn looked(self) -> Result<String, &'static str> {
        self
    }
}

/// A lookup (`history`, `as-of`, `list`, …): its arguments parsed (an
/// input failure `<call>: not valid arguments: …` when they are not),
/// the request id given or a fresh one, then `f`.
fn lookup<E: Engine, A: DeserializeOwned + Lookup, L: Looked>(
    engine: &mut E,
    name: &str,
    args: &str,
    f: impl FnOnce(&mut E, String, A) -> Result<L, E::Fault>,
) -> Result<Result<String, Refusal>, E::Fault> {
    let args: A = match parse_args(name, args) {
        Ok(args) => args,
        Err(why) => return Ok(Err(Refusal::Input(why))),
    };
    let id = request_id(engine, name, args.request_id())?;
    Ok(f(engine, id, args)?
        .looked()
        .map_err(|why| Refusal::Input(why.to_owned())))
}

/// Each request of `text` (one, or with `batch` one a line), every one
/// parsed before any runs ([`parse_requests`]), then `f` of each: the
/// answer lines.
fn each<E: Engine, R: DeserializeOwned, A: Serialize>(
    engine: &mut E,
    input: &str,
    text: &str,
    batch: bool,
    what: &str,
    mut f: impl FnMut(&mut E, R) -> Result<A, E::Fault>,
) -> Result<Result<String, Refusal>, E::Fault> {
    let requests: Vec<R> = match parse_requests(input, text, batch, what) {
        Ok(requests) => requests,
        Err(why) => return Ok(Err(Refusal::Input(why))),
    };
    let mut lines = String::new();
    for (i, request) in requests.into_iter().enumerate() {
        if i > 0 {
            lines.push('\n');
        }
        lines.push_str(&line(&f(engine, request)?));
    }
    Ok(Ok(lines))
}

/// A cycle begun in this session and not dropped.
fn live<C>(cycles: &BTreeMap<CycleId, C>, id: CycleId) -> Result<&C, String> {
    cycles
        .get(&id)
        .ok_or_else(|| format!("no cycle {id}: it was dropped, or the engine stopped"))
}

/// The request id given, or a fresh one for `call`.
fn request_id<E: Engine>(
    engine: &mut E,
    call: &str,
    given: Option<String>,
) -> Result<String, E::Fault> {
    match given {
        Some(id) => Ok(id),
        None => Ok(turns::fresh_request_id(call, engine.entropy()?)),
    }
}

/// A value of the JSON model as one line of JSON. The model's answers
/// always serialize (string keys, finite numbers); were one ever not to,
/// the line says why instead of panicking.
pub fn line(value: &impl Serialize) -> String {
    serde_json::to_string(value)
        .unwrap_or_else(|e| json!({"error": format!("unserializable answer: {e}")}).to_string())
}

/// Parses every request of `text` before any is run, as the command line
/// does, with its messages: `<input>: not a valid <what>: …`, or with
/// `batch` (JSON Lines, blank lines skipped) `<input>: line <n>: not a
/// valid <what>: …`.
pub fn parse_requests<T: DeserializeOwned>(
    input: &str,
    text: &str,
    batch: bool,
    what: &str,
) -> Result<Vec<T>, String> {
    let at = |line: Option<usize>| line.map(|n| format!(" line {n}:")).unwrap_or_default();
    let parse = |line: Option<usize>, text: &str| -> Result<T, String> {
        serde_json::from_str(text)
            .map_err(|e| format!("{input}:{} not a valid {what}: {e}", at(line)))
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

/// A call's answer, or why it did not answer a value.
fn answered(answer: Result<String, Refusal>) -> Answer {
    match answer {
        Ok(value) => Answer::Value(value),
        Err(Refusal::Input(why)) => Answer::Input(engram_model::size::one_line(&why)),
        Err(Refusal::Refused(line)) => Answer::Refused(line),
    }
}

/// Parses a call's arguments: `<call>: not valid arguments: …`.
fn parse_args<T: DeserializeOwned>(call: &str, args: &str) -> Result<T, String> {
    serde_json::from_str(args).map_err(|e| format!("{call}: not valid arguments: {e}"))
}

/// [`parse_args`], every argument's default when none is given (blank).
fn parse_optional_args<T: DeserializeOwned + Default>(call: &str, args: &str) -> Result<T, String> {
    if args.trim().is_empty() {
        Ok(T::default())
    } else {
        parse_args(call, args)
    }
}

/// Parses an execution plan, given as a JSON object or as JSON text:
/// `plan: not a valid execution plan: …`.
fn parse_plan(plan: Value) -> Result<Plan, String> {
    let parsed = match plan {
        Value::String(text) => serde_json::from_str(&text),
        value => serde_json::from_value(value),
    };
    parsed.map_err(|e| format!("plan: not a valid execution plan: {e}"))
}

/// Whether a turn of `plan` has the inputs it needs, as `engram cycle`
/// checks them.
pub fn turn_inputs(
    plan: &Plan,
    message: &Option<String>,
    response: &Option<String>,
) -> Result<(), String> {
    let summarizes_turn = plan.steps.iter().any(|s| {
        matches!(
            s.kind,
            engram_model::json::StepKind::SummarizeMemory {
                of: engram_model::json::SummarizeInput::Turn
            }
        )
    });
    if !plan.steps.is_empty() && message.is_none() {
        return Err("the plan needs the user's message: give \"message\"".into());
    }
    if summarizes_turn && response.is_none() {
        return Err("the plan summarizes the turn: give \"response\" (the model's answer)".into());
    }
    Ok(())
}

/// Every item of `engine`'s domain as its export line, page after page
/// ([`EXPORT_PAGE`] items a page), each to `each`: what every host's
/// export of a whole domain runs. A refusal (a domain not opened for
/// maintenance) is the engine's line.
pub fn export_all<E: Engine>(
    engine: &mut E,
    mut each: impl FnMut(ExportLine) -> Result<(), E::Fault>,
) -> Result<Result<(), Value>, E::Fault> {
    let agent_id = engine.agent();
    let mut start: Option<Vec<u8>> = None;
    loop {
        let (items, next) = match engine.export_page(start.as_deref(), EXPORT_PAGE)? {
            Ok(page) => page,
            Err(refused) => return Ok(Err(refused)),
        };
        for item in items {
            each(ExportLine {
                agent_id: agent_id.clone(),
                item,
            })?;
        }
        match next {
            Some(next) => start = Some(next),
            None => return Ok(Ok(())),
        }
    }
}

/// A store-wide maintenance call, its arguments checked: what every host
/// runs domain after domain, each domain opened for maintenance (under its
/// maintenance lock).
#[derive(Debug, Serialize)]
#[serde(tag = "call", rename_all = "lowercase")]
pub enum StoreCall {
    /// Exports the domains of `agents` (every domain's when `None`).
    Export {
        /// The agents whose domains to export, in order.
        agents: Option<Vec<String>>,
    },
    /// Imports each run of export lines into its agent's domain, in order.
    Import {
        /// The runs ([`import_runs`]).
        runs: Vec<ImportRun>,
    },
    /// Removes the expired records of the domains of `agents` (every
    /// domain's when `None`).
    Expire {
        /// The agents whose domains to expire, in order.
        agents: Option<Vec<String>>,
    },
}

/// A run of export lines of one agent, imported into its domain at once.
#[derive(Debug, Serialize)]
pub struct ImportRun {
    /// The agent whose domain takes the items.
    pub agent_id: String,
    /// The items, in order.
    pub items: Vec<ExportItem>,
}

impl StoreCall {
    /// The store-wide call `name` (`export`, `import` or `expire`) with
    /// `args` (JSON: `{"agents"}` for `export` and `expire`, every domain
    /// when absent or null; `{"lines"}`, export lines, for `import`; empty:
    /// `{}`): why it is not one, on one line, when it is not.
    pub fn of(name: &str, args: &str) -> Result<StoreCall, String> {
        #[derive(Deserialize, Default)]
        #[serde(deny_unknown_fields)]
        struct Args {
            #[serde(default)]
            agents: Option<Vec<String>>,
            #[serde(default)]
            lines: Option<Vec<ExportLine>>,
        }
        if !matches!(name, "export" | "import" | "expire") {
            return Err(format!(
                "{name}: not a maintenance call of a store (export, import, expire)"
            ));
        }
        let args: Args = if args.trim().is_empty() {
            Args::default()
        } else {
            serde_json::from_str(args).map_err(|e| format!("{name}: not valid arguments: {e}"))?
        };
        match (name, args.lines) {
            ("import", Some(lines)) if args.agents.is_none() => Ok(StoreCall::Import {
                runs: import_runs(lines),
            }),
            ("import", _) => Err("import: give the export lines as \"lines\"".into()),
            (_, Some(_)) => Err(format!("{name}: \"lines\" is for import")),
            ("export", None) => Ok(StoreCall::Export {
                agents: args.agents,
            }),
            (_, None) => Ok(StoreCall::Expire {
                agents: args.agents,
            }),
        }
    }
}

/// The surface's call `store-call` (`{"call","args"}`: a store-wide call's
/// name and its arguments): the [`StoreCall`] they make as JSON
/// (`{"call":"export"|"expire","agents"}` or `{"call":"import","runs":
/// [{"agent_id","items"}…]}`), for a host whose domains are instances of
/// their own (the JavaScript package's stores written in JavaScript), which
/// opens them one after another itself; or the input failure.
fn store_call(args: &str) -> Result<String, Refusal> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Args {
        call: String,
        #[serde(default)]
        args: Option<Value>,
    }
    let args: Args = serde_json::from_str(args)
        .map_err(|e| Refusal::Input(format!("store-call: not valid arguments: {e}")))?;
    let inner = args.args.map(|args| args.to_string()).unwrap_or_default();
    let call = StoreCall::of(&args.call, &inner).map_err(Refusal::Input)?;
    Ok(line(&call))
}

/// Export lines as the runs of consecutive lines of one agent, each its
/// agent and its items in order: what an import of a whole store imports
/// into one domain after another.
pub fn import_runs(lines: Vec<ExportLine>) -> Vec<ImportRun> {
    let mut runs: Vec<ImportRun> = Vec::new();
    for line in lines {
        match runs.last_mut() {
            Some(run) if run.agent_id == line.agent_id => run.items.push(line.item),
            _ => runs.push(ImportRun {
                agent_id: line.agent_id,
                items: vec![line.item],
            }),
        }
    }
    runs
}

/// A refusal of a store-wide maintenance call: the agent whose domain
/// refused, and the engine's line.
pub type DomainRefusal = (String, Value);

/// Exports the domains of `agents`, each opened by `open` for maintenance
/// (under its maintenance lock), every item as its export line to `each`,
/// in order: what `engram maintenance export` and every package's export
/// of a store run.
pub fn export_domains<E: Engine>(
    agents: &[String],
    mut open: impl FnMut(&str) -> Result<E, E::Fault>,
    mut each: impl FnMut(ExportLine) -> Result<(), E::Fault>,
) -> Result<Result<(), DomainRefusal>, E::Fault> {
    for agent in agents {
        let mut domain = open(agent)?;
        if let Err(refused) = export_all(&mut domain, &mut each)? {
            return Ok(Err((agent.clone(), refused)));
        }
    }
    Ok(Ok(()))
}

/// Imports export lines, each run of lines of one agent into its domain
/// opened by `open` for maintenance, in the engine's batches; one
/// `{"agent_id","items","new"}` a run to `each`: what `engram maintenance
/// import` and every package's import into a store run.
pub fn import_lines<E: Engine>(
    lines: Vec<ExportLine>,
    open: impl FnMut(&str) -> Result<E, E::Fault>,
    each: impl FnMut(Value) -> Result<(), E::Fault>,
) -> Result<Result<(), DomainRefusal>, E::Fault> {
    import_into(import_runs(lines), open, each)
}

/// Imports each run into its agent's domain, opened by `open` for
/// maintenance; one `{"agent_id","items","new"}` a run to `each`.
pub fn import_into<E: Engine>(
    runs: Vec<ImportRun>,
    mut open: impl FnMut(&str) -> Result<E, E::Fault>,
    mut each: impl FnMut(Value) -> Result<(), E::Fault>,
) -> Result<Result<(), DomainRefusal>, E::Fault> {
    for ImportRun {
        agent_id: agent,
        items,
    } in runs
    {
        let mut domain = open(&agent)?;
        let count = items.len();
        match domain.import(items)? {
            Ok(new) => each(json!({"agent_id": agent, "items": count, "new": new}))?,
            Err(refused) => return Ok(Err((agent, refused))),
        }
    }
    Ok(Ok(()))
}

/// Removes the expired records of the domains of `agents`, each opened by
/// `open` for maintenance; one `{"agent_id","expired"}` a domain to
/// `each`: what `engram maintenance expire` and every package's expiry of
/// a store run.
pub fn expire_domains<E: Engine>(
    agents: &[String],
    mut open: impl FnMut(&str) -> Result<E, E::Fault>,
    mut each: impl FnMut(Value) -> Result<(), E::Fault>,
) -> Result<Result<(), DomainRefusal>, E::Fault> {
    for agent in agents {
        let mut domain = open(agent)?;
        match domain.expire()? {
            Ok(expired) => each(json!({"agent_id": agent, "expired": expired}))?,
            Err(refused) => return Ok(Err((agent.clone(), refused))),
        }
    }
    Ok(Ok(()))
}

/// Runs a cycle stage by stage, a line per stage that has steps, then
/// commits, as `engram cycle` does: a refused plan or a failed cycle is
/// the last line.
pub fn run_cycle<C: Cycles>(
    engine: &mut C,
    plan: &Plan,
    session: &str,
    request_id: &str,
    message: &Option<String>,
    response: &Option<String>,
) -> Result<Vec<String>, C::Fault> {
    let cycle = match engine.begin(plan, session, request_id)? {
        Ok(cycle) => cycle,
        Err(refused) => return Ok(vec![refused.to_string()]),
    };
    let mut lines = Vec::new();
    let mut failed = false;
    for stage in Stage::ALL {
        if failed || !plan.steps.iter().any(|s| s.stage == stage) {
            continue;
        }
        match engine.run_stage(&cycle, stage, message.as_deref(), response.as_deref()) {
            Ok(Ok(results)) => lines.push(C::stage_line(stage, results).to_string()),
            Ok(Err(refused)) => {
                lines.push(refused.to_string());
                failed = true;
            }
            Err(fault) => {
                let _ = engine.end(cycle);
                return Err(fault);
            }
        }
    }
    if !failed {
        match engine.commit(&cycle) {
            Ok(Ok(ids)) => lines.push(json!({ "committed": ids }).to_string()),
            Ok(Err(refused)) => lines.push(refused.to_string()),
            Err(fault) => {
                let _ = engine.end(cycle);
                return Err(fault);
            }
        }
    }
    engine.end(cycle)?;
    Ok(lines)
}

/// The items of an `import`: each element of the JSON array `args` an
/// export line of `agent` (`{"agent_id","item"}`) or a bare item (an
/// object, or JSON text). Every one is parsed first: `items, item <n>: …`.
fn import_items(agent: &str, args: &str) -> Result<Vec<ExportItem>, String> {
    let elements: Vec<Value> =
        serde_json::from_str(args).map_err(|e| format!("import: not valid arguments: {e}"))?;
    elements
        .into_iter()
        .enumerate()
        .map(|(i, element)| {
            let at = i + 1;
            let element = match element {
                Value::String(text) => serde_json::from_str(&text)
                    .map_err(|e| format!("items, item {at}: not a valid export item: {e}"))?,
                other => other,
            };
            let item = match element {
                Value::Object(mut fields)
                    if fields.len() == 2
                        && fields.contains_key("agent_id")
                        && fields.contains_key("item") =>
                {
                    let owner = fields.remove("agent_id").unwrap_or_default();
                    if owner.as_str() != Some(agent) {
                        return Err(format!(
                            "items, item {at}: an export line of {owner} given to the domain of {}",
                            Value::String(agent.to_owned())
                        ));
                    }
                    fields.remove("item").unwrap_or_default()
                }
                other => other,
            };
            serde_json::from_value(item)
                .map_err(|e| format!("items, item {at}: not a valid export item: {e}"))
        })
        .collect()
}

/// Bytes as lower-case hex.
fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Hex as bytes, if it is hex.
fn from_hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || !text.is_ascii() {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok())
        .collect()
}

/// Implements [`Engine`] for a binding's `Domain` whose calls answer
/// `anyhow::Result` (the Rust library's, the `wasm32-wasip2` command's, the
/// JSON layer's), with the binding's `io`, `history`, `graph`, `export`,
/// `types` and `json` modules in scope; [`domain_cycles!`](crate::domain_cycles)
/// implements its [`Cycles`].
#[macro_export]
macro_rules! domain_engine {
    () => {
        /// A refused maintenance call's line: `{"error":…}`, the reason an
        /// item cannot be imported, or the error's name.
        fn maintenance_refusal(error: &export::MaintenanceError) -> $crate::turns::Value {
            let why = match error {
                export::MaintenanceError::InvalidItem(why) => why.clone(),
                export::MaintenanceError::EmbedderFailed(why) => {
                    format!("the embedder failed: {why}")
                }
                export::MaintenanceError::NoEmbedder => {
                    "the host has no embedder: give one to make vectors".to_owned()
                }
                export::MaintenanceError::ModelChanged((domain, host)) => {
                    $crate::engram_model::json::model_changed(
                        (&domain.name, domain.dimension),
                        (&host.name, host.dimension),
                    )
                }
                other => $crate::engram_model::json::error_name(other),
            };
            $crate::serde_json::json!({ "error": why })
        }

        /// The direction a lookup follows relationships in.
        fn edge_direction(incoming: bool) -> graph::EdgeDirection {
            if incoming {
                graph::EdgeDirection::Incoming
            } else {
                graph::EdgeDirection::Outgoing
            }
        }

        impl $crate::Engine for Domain {
            fn agent(&self) -> String {
                self.agent_id().to_owned()
            }

            fn write(
                &mut self,
                request: $crate::engram_model::json::WriteRequest,
            ) -> anyhow::Result<$crate::engram_model::json::WriteAnswer> {
                Ok(Domain::write(self, &io::WriteRequest::from(request))?.into())
            }

            fn read(
                &mut self,
                request: $crate::engram_model::json::ReadRequest,
            ) -> anyhow::Result<$crate::engram_model::json::ReadAnswer> {
                Ok(json::read_answer(Domain::read(self, &request.into())?))
            }

            fn history(
                &mut self,
                request_id: String,
                args: $crate::calls::HistoryArgs,
            ) -> anyhow::Result<$crate::engram_model::json::ReadAnswer> {
                let request = history::VersionsRequest {
                    request_id,
                    key: args.key,
                    limit: args.limit,
                };
                Ok(json::facts_answer(self.versions(&request)?))
            }

            fn as_of(
                &mut self,
                request_id: String,
                args: $crate::calls::AsOfArgs,
                axis: $crate::Axis,
                at: i64,
            ) -> anyhow::Result<$crate::engram_model::json::ReadAnswer> {
                let request = history::AsOfRequest {
                    request_id,
                    key: args.key,
                    axis: match axis {
                        $crate::Axis::Valid => history::TimeAxis::Valid,
                        $crate::Axis::Known => history::TimeAxis::Transaction,
                    },
                    at,
                    limit: args.limit,
                };
                let found = Domain::as_of(self, &request)?;
                Ok(json::facts_answer(found.map(|fact| fact.into_iter().collect())))
            }

            fn list(
                &mut self,
                request_id: String,
                args: $crate::calls::ListArgs,
            ) -> anyhow::Result<$crate::engram_model::json::ReadAnswer> {
                Ok(json::facts_answer(self.list_after(
                    &request_id,
                    &args.namespace,
                    args.limit,
                    args.after.as_deref(),
                )?))
            }

            fn entities(
                &mut self,
                request_id: String,
                args: $crate::calls::EntitiesArgs,
            ) -> anyhow::Result<$crate::engram_model::json::ReadAnswer> {
                Ok(json::facts_answer(self.entities_of_type(
                    &request_id,
                    args.entity_type.into(),
                    args.limit,
                )?))
            }

            fn relationships(
                &mut self,
                request_id: String,
                args: $crate::calls::RelationshipsArgs,
            ) -> anyhow::Result<$crate::engram_model::json::ReadAnswer> {
                let request = graph::RelationshipsRequest {
                    request_id,
                    entity: args.entity,
                    direction: edge_direction(args.incoming),
                    relationship_types: args.types,
                    valid_at: args.valid_at,
                    limit: args.limit,
                };
                Ok(json::facts_answer(self.relationships_of(&request)?))
            }

            fn traverse(
                &mut self,
                request_id: String,
                args: $crate::calls::TraverseArgs,
            ) -> anyhow::Result<$crate::turns::Value> {
                let request = graph::TraverseRequest {
                    request_id,
                    start: args.start,
                    order: if args.depth_first {
                        graph::TraversalOrder::DepthFirst
                    } else {
                        graph::TraversalOrder::BreadthFirst
                    },
                    direction: edge_direction(args.incoming),
                    relationship_types: args.types,
                    valid_at: args.valid_at,
                    max_depth: args.max_depth,
                    max_nodes: args.max_nodes,
                    max_edges: args.max_edges,
                };
                Ok(json::traversal_answer(Domain::traverse(self, &request)?).0)
            }

            fn export_page(
                &mut self,
                start: Option<&[u8]>,
                limit: u32,
            ) -> anyhow::Result<Result<$crate::ExportPage, $crate::turns::Value>> {
                Ok(Domain::export_page(self, start, limit)?
                    .map(|page| (page.items.into_iter().map(Into::into).collect(), page.next))
                    .map_err(|e| maintenance_refusal(&e)))
            }

            fn import(
                &mut self,
                items: Vec<$crate::engram_model::json::ExportItem>,
            ) -> anyhow::Result<Result<u32, $crate::turns::Value>> {
                let items: Vec<export::ExportedItem> = items.into_iter().map(Into::into).collect();
                let mut new = 0u32;
                for batch in json::import_batches(&items) {
                    match Domain::import(self, batch)? {
                        Ok(n) => new = new.saturating_add(n),
                        Err(e) => return Ok(Err(maintenance_refusal(&e))),
                    }
                }
                Ok(Ok(new))
            }

            fn reembed(&mut self, batch: u32) -> anyhow::Result<Result<u64, $crate::turns::Value>> {
                let mut embedded = 0u64;
                loop {
                    match Domain::reembed(self, batch)? {
                        Ok(progress) => {
                            embedded += u64::from(progress.embedded);
                            if progress.done {
                                return Ok(Ok(embedded));
                            }
                        }
                        Err(refused) => return Ok(Err(maintenance_refusal(&refused))),
                    }
                }
            }

            fn vector_model(
                &mut self,
            ) -> anyhow::Result<Result<Option<$crate::VectorModel>, $crate::turns::Value>> {
                Ok(Domain::vector_model(self)?
                    .map(|model| model.map(|m| (m.name, m.dimension)))
                    .map_err(|refused| maintenance_refusal(&refused)))
            }

            fn expire(&mut self) -> anyhow::Result<Result<u64, $crate::turns::Value>> {
                let expired = $crate::engram_model::size::expire_all(
                    |limit| match Domain::expire(self, limit) {
                        Ok(Ok(n)) => Ok(n),
                        Ok(Err(e)) => Err(Ok(e)),
                        Err(fault) => Err(Err(fault)),
                    },
                    |e| match e {
                        Ok(export::MaintenanceError::LimitOutOfBounds(ceiling)) => Some(*ceiling),
                        _ => None,
                    },
                );
                match expired {
                    Ok(n) => Ok(Ok(n)),
                    Err(Ok(refused)) => Ok(Err(maintenance_refusal(&refused))),
                    Err(Err(fault)) => Err(fault),
                }
            }
        }
    };
}

#[cfg(test)]
mod store_call_tests {
    use super::*;

    // A store-wide call's arguments are checked once, here, for every
    // host: what is not a store-wide call is named, and so are misplaced
    // arguments.
    #[test]
    fn io_w7_a_store_wide_call_is_checked_before_any_domain_opens() {
        let refused = |name: &str, args: &str| StoreCall::of(name, args).unwrap_err();
        assert_eq!(
            refused("forget", ""),
            "forget: not a maintenance call of a store (export, import, expire)"
        );
        assert_eq!(
            refused("import", "{}"),
            "import: give the export lines as \"lines\""
        );
        assert_eq!(
            refused("import", r#"{"lines":[],"agents":["a"]}"#),
            "import: give the export lines as \"lines\""
        );
        assert_eq!(
            refused("export", r#"{"lines":[]}"#),
            "export: \"lines\" is for import"
        );
        assert!(refused("expire", r#"{"agent":"a"}"#).starts_with("expire: not valid arguments: "));
        assert!(
            refused("import", r#"{"lines":[{"item":{}}]}"#)
                .starts_with("import: not valid arguments: ")
        );
        assert!(matches!(
            StoreCall::of("export", ""),
            Ok(StoreCall::Export { agents: None })
        ));
        assert!(matches!(
            StoreCall::of("expire", r#"{"agents":["b","a"]}"#),
            Ok(StoreCall::Expire { agents: Some(agents) }) if agents == ["b", "a"]
        ));
        assert!(matches!(
            StoreCall::of("import", r#"{"lines":[]}"#),
            Ok(StoreCall::Import { runs }) if runs.is_empty()
        ));
        // The surface's `store-call` answers the same call as JSON, or the
        // same input failure.
        assert_eq!(
            store_call(r#"{"call":"expire","args":{"agents":["a"]}}"#).ok(),
            Some(r#"{"call":"expire","agents":["a"]}"#.to_owned())
        );
        assert!(matches!(
            store_call(r#"{"call":"import"}"#),
            Err(Refusal::Input(why)) if why == "import: give the export lines as \"lines\""
        ));
    }
}
