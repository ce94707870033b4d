//! What a call of `/agents/{agent}/{op}` makes of the agent's domain: the
//! domain to open (online at a tier ceiling, or for maintenance), the call
//! of the call surface (`engram_surface`) with its arguments, and
//! how its answer becomes the HTTP answer. Every server runs the domain's
//! calls its own way (the native binding, the WASI host, the Worker's
//! wasm driver) and decides the rest here.
//!
//! A body is a JSON object (empty: `{}`) whose fields are the call's
//! (docs/http.md); a field the call does not take is refused, so a
//! misspelled option is never quietly ignored.

use crate::Refusal;
use engram_surface::EXPORT_PAGE;
use serde_json::{Map, Value, json};

/// The name an input error gives the request when the body names none.
pub const DEFAULT_INPUT: &str = "request";

/// How the domain of a call is opened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Online, reading at `tier_ceiling` (`public`, `sensitive` or
    /// `private`, the default), what it writes kept `expire_after` ms when
    /// given.
    Online {
        /// The tier ceiling.
        tier_ceiling: String,
        /// How long what the call writes is kept, in ms.
        expire_after: Option<u64>,
    },
    /// For maintenance: the domain's maintenance lock held for the call.
    Maintenance,
}

/// Which embedder a call asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Embedder {
    /// The server's, if it has one (the field left out).
    Default,
    /// None: recall by keywords alone, nothing embedded (`false`).
    None,
    /// The server's, which must be this model (its name).
    Named(String),
}

impl Embedder {
    /// Whether the call runs with the server's embedder, whose model is
    /// `model` (none: the server has no embedder); refused (400) when it
    /// names another model or the server has none.
    pub fn resolve(&self, model: Option<&str>) -> Result<bool, Refusal> {
        match (self, model) {
            (Embedder::None, _) | (Embedder::Default, None) => Ok(false),
            (Embedder::Default, Some(_)) => Ok(true),
            (Embedder::Named(asked), None) => Err(Refusal::input(format!(
                "embedder: this server has no embedder, not {asked:?}"
            ))),
            (Embedder::Named(asked), Some(model)) if asked == model => Ok(true),
            (Embedder::Named(asked), Some(model)) => Err(Refusal::input(format!(
                "embedder: this server's model is {model:?}, not {asked:?}"
            ))),
        }
    }
}

/// How the surface's answer becomes the HTTP answer's body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// One answer line: the body.
    Value,
    /// Answer lines (a batch, a cycle): a JSON array of them.
    Lines,
    /// Export pages: the call is made again from each page's `next`
    /// ([`export_args`]) until it has none; the body is every page's lines
    /// in one array.
    Export,
}

/// A call of the API made ready for a domain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Call {
    /// How its domain is opened.
    pub mode: Mode,
    /// Its embedder.
    pub embedder: Embedder,
    /// The time it runs at (ms since the epoch), when the body gave one:
    /// only a server started to take the clock from requests (tests)
    /// takes it.
    pub now: Option<i64>,
    /// The call of the surface.
    pub name: &'static str,
    /// The name input errors give the request.
    pub input: String,
    /// The surface call's arguments.
    pub args: String,
    /// How its answer is shaped.
    pub shape: Shape,
}

/// The fields every call takes besides its own.
const COMMON: &[&str] = &["embedder", "now"];

/// The fields of each call's body besides [`COMMON`]: what `call` takes
/// and docs/openapi.json describes (a test holds the two together).
pub const FIELDS: &[(&str, &[&str])] = &[
    (
        "write",
        &[
            "request",
            "text",
            "batch",
            "input",
            "tier_ceiling",
            "expire_after",
        ],
    ),
    (
        "read",
        &["request", "text", "batch", "input", "tier_ceiling"],
    ),
    ("maintenance_write", &["request", "text", "batch", "input"]),
    ("history", &["request_id", "key", "limit", "tier_ceiling"]),
    (
        "as_of",
        &[
            "request_id",
            "key",
            "valid",
            "known",
            "limit",
            "tier_ceiling",
        ],
    ),
    (
        "list",
        &["request_id", "namespace", "limit", "after", "tier_ceiling"],
    ),
    (
        "entities",
        &["request_id", "entity_type", "limit", "tier_ceiling"],
    ),
    (
        "relationships",
        &[
            "request_id",
            "entity",
            "incoming",
            "types",
            "valid_at",
            "limit",
            "tier_ceiling",
        ],
    ),
    (
        "traverse",
        &[
            "request_id",
            "start",
            "depth_first",
            "incoming",
            "types",
            "valid_at",
            "max_depth",
            "max_nodes",
            "max_edges",
            "tier_ceiling",
        ],
    ),
    (
        "cycle",
        &[
            "plan",
            "message",
            "response",
            "session",
            "request_id",
            "tier_ceiling",
            "expire_after",
        ],
    ),
    (
        "remember",
        &[
            "message",
            "response",
            "session",
            "request_id",
            "time",
            "tier_ceiling",
            "expire_after",
        ],
    ),
    (
        "recall",
        &[
            "question",
            "top_k",
            "token_budget",
            "request_id",
            "tier_ceiling",
        ],
    ),
    (
        "audit",
        &["operation", "outcome", "since", "until", "limit"],
    ),
    ("export", &[]),
    ("import", &["lines"]),
    ("forget", &[]),
    ("expire", &[]),
    ("reembed", &["batch"]),
    ("vector_model", &["tier_ceiling"]),
];

/// The fields of `op`'s body besides [`COMMON`] ([`FIELDS`]).
fn fields_of(op: &str) -> &'static [&'static str] {
    FIELDS
        .iter()
        .find(|(name, _)| *name == op)
        .map_or(&[], |(_, fields)| fields)
}

/// A body's fields, each taken once: what is left at the end was not the
/// call's.
struct Body {
    op: &'static str,
    fields: Map<String, Value>,
}

impl Body {
    fn take(&mut self, name: &str) -> Option<Value> {
        self.fields.remove(name).filter(|value| !value.is_null())
    }

    /// The fields `names` that are set, as a JSON object.
    fn pick(&mut self, names: &[&str]) -> String {
        let mut picked = Map::new();
        for name in names {
            if let Some(value) = self.take(name) {
                picked.insert((*name).to_string(), value);
            }
        }
        Value::Object(picked).to_string()
    }

    fn string(&mut self, name: &str, what: &str) -> Result<String, Refusal> {
        match self.take(name) {
            Some(Value::String(text)) => Ok(text),
            _ => Err(Refusal::input(format!("{} needs {what}", self.op))),
        }
    }

    /// Moves the fields `names` that are set into `args`.
    fn move_into(&mut self, args: &mut Map<String, Value>, names: &[&str]) {
        for name in names {
            if let Some(value) = self.take(name) {
                args.insert((*name).to_string(), value);
            }
        }
    }

    /// Nothing left but the fields every call takes.
    fn done(&self) -> Result<(), Refusal> {
        match self
            .fields
            .keys()
            .find(|name| !COMMON.contains(&name.as_str()))
        {
            None => Ok(()),
            Some(name) => Err(Refusal::input(format!(
                "{} takes no field {name:?} (docs/http.md)",
                self.op
            ))),
        }
    }
}

/// The call `op` of `/agents/{agent}/{op}` with the JSON `body` (empty:
/// `{}`): what to make of `agent`'s domain, or 400 naming the problem. A
/// body's `now` is refused unless the server takes the clock from requests
/// (`clock_from_request`: tests only; a caller who moved the clock back
/// would be answered records that have expired).
pub fn call(
    agent: &str,
    op: &'static str,
    body: &str,
    clock_from_request: bool,
) -> Result<Call, Refusal> {
    let mut body = Body {
        op,
        fields: body_fields(body)?,
    };
    let embedder = take_embedder(&mut body)?;
    let now = take_now(&mut body, clock_from_request)?;
    let made = made_of(agent, op, &mut body)?;
    body.done()?;
    Ok(Call {
        mode: made.mode,
        embedder,
        now,
        name: made.name,
        input: made.input,
        args: made.args,
        shape: made.shape,
    })
}

/// A call's own part: all of [`Call`] but what every call takes.
struct Made {
    mode: Mode,
    name: &'static str,
    input: String,
    args: String,
    shape: Shape,
}

impl Made {
    /// A call that names no input.
    fn new(mode: Mode, name: &'static str, args: String, shape: Shape) -> Self {
        Made {
            mode,
            name,
            input: String::new(),
            args,
            shape,
        }
    }
}

/// The fields of a JSON body (empty: none).
fn body_fields(body: &str) -> Result<Map<String, Value>, Refusal> {
    let value: Value = if body.trim().is_empty() {
        Value::Object(Map::new())
    } else {
        serde_json::from_str(body)
            .map_err(|e| Refusal::input(format!("the body is not JSON: {e}")))?
    };
    match value {
        Value::Object(fields) => Ok(fields),
        _ => Err(Refusal::input("the body must be a JSON object")),
    }
}

/// The body's `embedder`: the server's model by name, or none (`false`).
fn take_embedder(body: &mut Body) -> Result<Embedder, Refusal> {
    match body.take("embedder") {
        None => Ok(Embedder::Default),
        Some(Value::Bool(false)) => Ok(Embedder::None),
        Some(Value::String(name)) => Ok(Embedder::Named(name)),
        Some(_) => Err(Refusal::input(
            "embedder must be the name of the server's model, or false",
        )),
    }
}

/// The body's `now`, taken only by a server that takes the clock from
/// requests.
fn take_now(body: &mut Body, clock_from_request: bool) -> Result<Option<i64>, Refusal> {
    match body.take("now") {
        None => Ok(None),
        Some(_) if !clock_from_request => {
            Err(Refusal::input("now: this server runs by its own clock"))
        }
        Some(value) => value
            .as_i64()
            .map(Some)
            .ok_or_else(|| Refusal::input("now must be a whole number of milliseconds")),
    }
}

/// An online domain's mode from the body: its `tier_ceiling` (private
/// when none), and for a call that `writes` its `expire_after`.
fn online(body: &mut Body, writes: bool) -> Result<Mode, Refusal> {
    let tier_ceiling = match body.take("tier_ceiling") {
        None => "private".to_string(),
        Some(Value::String(tier))
            if ["public", "sensitive", "private"].contains(&tier.as_str()) =>
        {
            tier
        }
        Some(other) => {
            return Err(Refusal::input(format!(
                "tier_ceiling must be public, sensitive or private, not {other}"
            )));
        }
    };
    // A call that does not write leaves `expire_after` in the body, which
    // then has a field that is not its own.
    let expire_after = match writes.then(|| body.take("expire_after")).flatten() {
        None => None,
        Some(value) => Some(value.as_u64().filter(|ms| *ms > 0).ok_or_else(|| {
            Refusal::input("expire_after must be a whole number of milliseconds, more than 0")
        })?),
    };
    Ok(Mode::Online {
        tier_ceiling,
        expire_after,
    })
}

/// The call `op` makes of the surface, from what is left of its body.
fn made_of(agent: &str, op: &'static str, body: &mut Body) -> Result<Made, Refusal> {
    Ok(match op {
        "write" | "read" | "maintenance_write" => io_call(op, body)?,
        "history" | "as_of" | "list" | "entities" | "relationships" | "traverse" => {
            // Their fields are FIELDS' (the tier ceiling taken first).
            let name = if op == "as_of" { "as-of" } else { op };
            let mode = online(body, false)?;
            Made::new(mode, name, body.pick(fields_of(op)), Shape::Value)
        }
        "cycle" => cycle_call(body)?,
        "remember" => remember_call(body)?,
        "recall" => recall_call(body)?,
        "audit" => {
            let args = body.pick(&["operation", "outcome", "since", "until", "limit"]);
            let mode = Mode::Online {
                tier_ceiling: "private".into(),
                expire_after: None,
            };
            Made::new(mode, "audit", args, Shape::Value)
        }
        "export" => Made::new(
            Mode::Maintenance,
            "export",
            export_args(None),
            Shape::Export,
        ),
        "import" => import_call(agent, body)?,
        "forget" | "expire" => Made::new(Mode::Maintenance, op, String::new(), Shape::Value),
        "reembed" => Made::new(
            Mode::Maintenance,
            "reembed",
            body.pick(&["batch"]),
            Shape::Value,
        ),
        "vector_model" => {
            let mode = online(body, false)?;
            Made::new(mode, "vector-model", String::new(), Shape::Value)
        }
        _ => {
            return Err(Refusal::new(
                404,
                "input_error",
                format!("no such call: {op}"),
            ));
        }
    })
}

/// `write`, `read` and `maintenance_write`: one request, or a batch.
fn io_call(op: &'static str, body: &mut Body) -> Result<Made, Refusal> {
    let mode = match op {
        "write" => online(body, true)?,
        "read" => online(body, false)?,
        _ => Mode::Maintenance,
    };
    let input = match body.take("input") {
        None => DEFAULT_INPUT.to_string(),
        Some(Value::String(input)) => input,
        Some(_) => return Err(Refusal::input("input must be a string")),
    };
    let (batch, args) = take_requests(body)?;
    let reads = op == "read";
    let (name, shape) = match (batch, reads) {
        (true, true) => ("read-batch", Shape::Lines),
        (true, false) => ("write-batch", Shape::Lines),
        (false, true) => ("read", Shape::Value),
        (false, false) => ("write", Shape::Value),
    };
    Ok(Made {
        mode,
        name,
        input,
        args,
        shape,
    })
}

/// The requests of a write or a read, `request` (one, or a list) or
/// `text` (with `batch`, JSON Lines): whether they are a batch, and the
/// surface's arguments.
fn take_requests(body: &mut Body) -> Result<(bool, String), Refusal> {
    match (body.take("text"), body.take("request")) {
        (Some(Value::String(text)), None) => {
            let batch = match body.take("batch") {
                None | Some(Value::Bool(false)) => false,
                Some(Value::Bool(true)) => true,
                Some(_) => return Err(Refusal::input("batch must be true or false")),
            };
            Ok((batch, text))
        }
        (Some(_), None) => Err(Refusal::input("text must be a string")),
        (None, Some(Value::Array(requests))) => Ok((
            true,
            requests
                .iter()
                .map(request_text)
                .collect::<Vec<_>>()
                .join("\n"),
        )),
        (None, Some(request)) => Ok((false, request_text(&request))),
        (Some(_), Some(_)) => Err(Refusal::input("a body has request or text, not both")),
        (None, None) => Err(Refusal::input("the body has no request (or text)")),
    }
}

/// `cycle`: the surface's `run-cycle`.
fn cycle_call(body: &mut Body) -> Result<Made, Refusal> {
    let mode = online(body, true)?;
    // The plan goes on as the caller gave it, an object or JSON text: the
    // surface parses it once.
    let plan = match body.take("plan") {
        Some(plan @ (Value::String(_) | Value::Object(_))) => plan,
        _ => return Err(Refusal::input("a cycle needs a plan")),
    };
    let mut args = Map::new();
    args.insert("plan".into(), plan);
    body.move_into(&mut args, &["message", "response", "session", "request_id"]);
    let args = Value::Object(args).to_string();
    Ok(Made::new(mode, "run-cycle", args, Shape::Lines))
}

/// `remember`: a finished turn.
fn remember_call(body: &mut Body) -> Result<Made, Refusal> {
    let mode = online(body, true)?;
    let message = body.string("message", "message and response (strings)")?;
    let response = body.string("response", "message and response (strings)")?;
    let mut args = Map::new();
    args.insert("message".into(), Value::String(message));
    args.insert("response".into(), Value::String(response));
    body.move_into(&mut args, &["session", "request_id", "time"]);
    let args = Value::Object(args).to_string();
    Ok(Made::new(mode, "remember", args, Shape::Value))
}

/// `recall`: the memories for a question.
fn recall_call(body: &mut Body) -> Result<Made, Refusal> {
    let mode = online(body, false)?;
    let question = body.string("question", "a question (a string)")?;
    let mut args = Map::new();
    args.insert("question".into(), Value::String(question));
    body.move_into(&mut args, &["top_k", "token_budget", "request_id"]);
    let args = Value::Object(args).to_string();
    Ok(Made::new(mode, "recall", args, Shape::Value))
}

/// `import`: export lines of `agent`, every one checked first.
fn import_call(agent: &str, body: &mut Body) -> Result<Made, Refusal> {
    let Some(Value::Array(lines)) = body.take("lines") else {
        return Err(Refusal::input(
            "an import needs lines (a list of export lines)",
        ));
    };
    if lines.iter().any(|line| {
        line.get("agent_id").and_then(Value::as_str) != Some(agent) || line.get("item").is_none()
    }) {
        return Err(Refusal::input(format!(
            "every line of an import into {agent:?} must be an export line {{agent_id, item}} of that agent"
        )));
    }
    let args = Value::Array(lines).to_string();
    Ok(Made::new(Mode::Maintenance, "import", args, Shape::Value))
}

/// A call across agents (`POST /export`, `/import`, `/audit`): the calls
/// it makes, one agent after another, each `/agents/{agent}/{op}` with its
/// body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Across {
    /// The agents it names: each must be among its token's.
    pub agents: Vec<String>,
    /// Each agent's call: the agent, the op, the body.
    pub calls: Vec<(String, &'static str, String)>,
    /// How the answers make one: [`Joined::Concat`] for an export (every
    /// agent's lines in one array), [`Joined::List`] for an import (an
    /// answer a run of one agent's lines), [`Joined::One`] for an audit.
    pub joined: Joined,
}

/// How the answers of a call across agents make its answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Joined {
    /// Every answer (each an array) in one array.
    Concat,
    /// The answers in an array.
    List,
    /// The one answer.
    One,
}

/// The call across agents `op` with the JSON `body`: the calls it makes,
/// or 400. `export` takes `{agents, embedder?}`, `import` `{lines,
/// embedder?}` (each run of lines of one agent into its domain), `audit`
/// `{audit_agent, operation?, outcome?, since?, until?, limit?}`.
pub fn across(op: &str, body: &str) -> Result<Across, Refusal> {
    let mut fields = body_fields(body)?;
    let embedder = fields.remove("embedder");
    match op {
        "export" => {
            only(op, &fields, &["agents"])?;
            export_across(fields, embedder)
        }
        "import" => {
            only(op, &fields, &["lines"])?;
            import_across(fields, embedder)
        }
        "audit" => audit_across(fields, embedder),
        _ => Err(Refusal::new(
            404,
            "input_error",
            format!("no such call: {op}"),
        )),
    }
}

/// Refuses a body of `op` with a field not `allowed`.
fn only(op: &str, fields: &Map<String, Value>, allowed: &[&str]) -> Result<(), Refusal> {
    match fields.keys().find(|name| !allowed.contains(&name.as_str())) {
        None => Ok(()),
        Some(name) => Err(Refusal::input(format!(
            "{op} takes no field {name:?} (docs/http.md)"
        ))),
    }
}

/// One agent's body of a call across agents, with the `embedder` the
/// call's body gave.
fn with_embedder(embedder: &Option<Value>, mut body: Map<String, Value>) -> String {
    if let Some(embedder) = embedder {
        body.insert("embedder".into(), embedder.clone());
    }
    Value::Object(body).to_string()
}

/// `POST /export`: an export of each agent named, their lines in one
/// array.
fn export_across(
    mut fields: Map<String, Value>,
    embedder: Option<Value>,
) -> Result<Across, Refusal> {
    let agents: Vec<String> = match fields.remove("agents") {
        Some(Value::Array(agents)) => agents
            .into_iter()
            .map(|agent| match agent {
                Value::String(agent) if !agent.is_empty() => Ok(agent),
                _ => Err(()),
            })
            .collect::<Result<_, _>>()
            .map_err(|()| Refusal::input(EXPORT_AGENTS))?,
        _ => return Err(Refusal::input(EXPORT_AGENTS)),
    };
    let calls = agents
        .iter()
        .map(|agent| {
            (
                agent.clone(),
                "export",
                with_embedder(&embedder, Map::new()),
            )
        })
        .collect();
    Ok(Across {
        agents,
        calls,
        joined: Joined::Concat,
    })
}

/// `POST /import`: each run of lines of one agent imported into its
/// domain, an answer a run.
fn import_across(
    mut fields: Map<String, Value>,
    embedder: Option<Value>,
) -> Result<Across, Refusal> {
    let Some(Value::Array(lines)) = fields.remove("lines") else {
        return Err(Refusal::input(
            "an import needs lines (a list of export lines)",
        ));
    };
    let mut runs: Vec<(String, Vec<Value>)> = Vec::new();
    for line in lines {
        let agent = match line.get("agent_id") {
            Some(Value::String(agent)) if !agent.is_empty() => agent.clone(),
            _ => {
                return Err(Refusal::input(
                    "every import line must be an export line {agent_id, item}",
                ));
            }
        };
        match runs.last_mut() {
            Some((last, run)) if *last == agent => run.push(line),
            _ => runs.push((agent, vec![line])),
        }
    }
    let mut agents: Vec<String> = runs.iter().map(|(agent, _)| agent.clone()).collect();
    agents.sort();
    agents.dedup();
    let calls = runs
        .into_iter()
        .map(|(agent, lines)| {
            let mut body = Map::new();
            body.insert("lines".into(), Value::Array(lines));
            (agent, "import", with_embedder(&embedder, body))
        })
        .collect();
    Ok(Across {
        agents,
        calls,
        joined: Joined::List,
    })
}

/// `POST /audit`: the audit trail of the agent named.
fn audit_across(
    mut fields: Map<String, Value>,
    embedder: Option<Value>,
) -> Result<Across, Refusal> {
    let agent = match fields.remove("audit_agent") {
        Some(Value::String(agent)) if !agent.is_empty() => agent,
        _ => {
            return Err(Refusal::input(
                "an audit names its agent: {\"audit_agent\": …}",
            ));
        }
    };
    if embedder.is_some() {
        return Err(Refusal::input(
            "audit takes no field \"embedder\" (docs/http.md)",
        ));
    }
    Ok(Across {
        agents: vec![agent.clone()],
        calls: vec![(agent, "audit", Value::Object(fields).to_string())],
        joined: Joined::One,
    })
}

/// The refusal of an export that names no agents.
const EXPORT_AGENTS: &str = "an export names its agents: {\"agents\": [...]} (a server cannot list whom a token may not reach)";

/// The answer of a call across agents: the answers of its calls (each a
/// 200's body), joined.
pub fn joined(joined: Joined, answers: &[String]) -> String {
    match joined {
        Joined::One => answers.first().cloned().unwrap_or_else(|| "null".into()),
        Joined::List => format!("[{}]", answers.join(",")),
        Joined::Concat => {
            let inner: Vec<&str> = answers
                .iter()
                .map(|answer| answer.trim())
                .map(|answer| {
                    answer
                        .strip_prefix('[')
                        .and_then(|a| a.strip_suffix(']'))
                        .unwrap_or(answer)
                        .trim()
                })
                .filter(|inner| !inner.is_empty())
                .collect();
            format!("[{}]", inner.join(","))
        }
    }
}

/// A request of a body (an object, or JSON text) as the surface takes it.
fn request_text(request: &Value) -> String {
    match request {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// The arguments of the export page that starts at `start` (the `next` of
/// the page before; none: the first).
pub fn export_args(start: Option<&str>) -> String {
    json!({"start": start, "limit": EXPORT_PAGE}).to_string()
}

/// The HTTP answer of a call's framed answer (`engram_surface::
/// Answer::framed`: `V`/`L` a value, `I` an input failure, `R` a refusal):
/// 200 with the value (a JSON array of the lines for [`Shape::Lines`]),
/// 400 `{"input_error"}`, 409 with the refusal's line.
pub fn answer(shape: Shape, framed: &str) -> (u16, String) {
    let (kind, text) = framed.split_at(framed.len().min(1));
    match kind {
        "V" | "L" => match shape {
            Shape::Lines => (
                200,
                format!("[{}]", text.lines().collect::<Vec<_>>().join(",")),
            ),
            Shape::Value | Shape::Export => (200, text.to_string()),
        },
        "I" => (400, json!({ "input_error": text }).to_string()),
        "R" => (409, text.to_string()),
        _ => (
            500,
            json!({ "host_error": format!("an answer of no known kind: {framed:?}") }).to_string(),
        ),
    }
}

/// The lines and the `next` of an export page's value.
pub fn export_page(
    value: &str,
) -> Result<(Vec<Box<serde_json::value::RawValue>>, Option<String>), String> {
    #[derive(serde::Deserialize)]
    struct Page {
        lines: Vec<Box<serde_json::value::RawValue>>,
        next: Option<String>,
    }
    let page: Page = serde_json::from_str(value).map_err(|e| format!("an export page: {e}"))?;
    Ok((page.lines, page.next))
}

/// The HTTP answer of a host's failure, by its kind (`S` the instance
/// stopped, `K` a maintenance lock kept the call out, `F` the store or the
/// host failed; the binding's framing): 503 with `retry-after` for a lock,
/// 500 otherwise, each `{"host_error"}`; a domain the contract refuses to
/// open (`R`, its line: another model's vectors) 409 with its line, as a
/// refused call.
pub fn failure(framed: &str) -> Refusal {
    let (kind, why) = framed.split_at(framed.len().min(1));
    match kind {
        "K" => Refusal::new(503, "host_error", why).with_header("retry-after", "1"),
        "R" => Refusal {
            status: 409,
            body: why.to_owned(),
            headers: Vec::new(),
        },
        _ => Refusal::new(500, "host_error", why),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_of_a_list_is_a_batch_and_its_answer_a_list() {
        let call = call(
            "alice",
            "write",
            r#"{"request":[{"a":1},"{\"b\":2}"],"expire_after":5}"#,
            false,
        )
        .unwrap();
        assert_eq!((call.name, call.shape), ("write-batch", Shape::Lines));
        assert_eq!(call.args, "{\"a\":1}\n{\"b\":2}");
        assert_eq!(
            call.mode,
            Mode::Online {
                tier_ceiling: "private".into(),
                expire_after: Some(5)
            }
        );
        assert_eq!(answer(Shape::Lines, "V1\n2"), (200, "[1,2]".to_string()));
        let call = super::call("alice", "read", r#"{"text":"{}","input":"body"}"#, false).unwrap();
        assert_eq!((call.name, call.input.as_str()), ("read", "body"));
    }

    #[test]
    fn a_field_the_call_does_not_take_is_refused_by_name() {
        let refused = call("alice", "recall", r#"{"question":"q","top_n":3}"#, false).unwrap_err();
        assert_eq!(refused.status, 400);
        assert!(refused.body.contains("top_n"), "{}", refused.body);
        assert!(call("alice", "read", r#"{"request":{},"expire_after":5}"#, false).is_err());
        assert!(
            call(
                "alice",
                "recall",
                r#"{"question":"q","tier_ceiling":"secret"}"#,
                false
            )
            .is_err()
        );
        assert!(call("alice", "recall", "[1]", false).is_err());
        assert!(call("alice", "recall", "{", false).is_err());
        assert!(call("alice", "remember", r#"{"message":"m"}"#, false).is_err());
        let clock = call("alice", "recall", r#"{"question":"q","now":5}"#, false).unwrap_err();
        assert!(clock.body.contains("its own clock"), "{}", clock.body);
        assert_eq!(
            call("alice", "recall", r#"{"question":"q","now":5}"#, true).map(|call| call.now),
            Ok(Some(5))
        );
    }

    /// A value of a field that `call` takes, for [`every_field_listed_is_taken_and_no_other`].
    fn sample(field: &str) -> Value {
        match field {
            "request" => json!({"record_type": "STATE"}),
            "text" | "input" | "key" | "after" | "entity_type" | "entity" | "start" | "plan"
            | "message" | "response" | "session" | "request_id" | "question" | "operation"
            | "outcome" => json!("x"),
            "tier_ceiling" => json!("public"),
            "incoming" | "depth_first" => json!(true),
            "namespace" | "types" => json!(["x"]),
            "lines" => json!([{"agent_id": "alice", "item": {}}]),
            _ => json!(5),
        }
    }

    #[test]
    fn every_field_listed_is_taken_and_no_other() {
        let mut listed: Vec<&str> = FIELDS.iter().map(|(op, _)| *op).collect();
        let mut routed: Vec<&str> = crate::routes::AGENT_OPS.iter().map(|(op, _)| *op).collect();
        listed.sort_unstable();
        routed.sort_unstable();
        assert_eq!(listed, routed);
        for (op, fields) in FIELDS {
            let mut body = Map::new();
            for field in *fields {
                // `text` and `request` are one or the other; `batch` goes with text.
                if *field == "request" || (*field == "batch" && *op != "reembed") {
                    continue;
                }
                body.insert((*field).into(), sample(field));
            }
            body.insert("embedder".into(), json!(false));
            body.insert("now".into(), json!(5));
            let body = Value::Object(body).to_string();
            assert!(call("alice", op, &body, true).is_ok(), "{op}: {body}");
            let mut other: Value = serde_json::from_str(&body).unwrap();
            other["unlisted"] = json!(1);
            assert!(
                call("alice", op, &other.to_string(), true).is_err(),
                "{op} takes an unlisted field"
            );
        }
    }

    #[test]
    fn a_cycles_plan_goes_on_as_given_to_be_parsed_once() {
        let plan = r#"{"metadata":{},"steps":[]}"#;
        let object = call("alice", "cycle", &format!(r#"{{"plan":{plan}}}"#), false).unwrap();
        assert_eq!(object.name, "run-cycle");
        assert_eq!(object.args, format!(r#"{{"plan":{plan}}}"#));
        let text = serde_json::to_string(plan).unwrap();
        let given = call("alice", "cycle", &format!(r#"{{"plan":{text}}}"#), false).unwrap();
        assert_eq!(given.args, format!(r#"{{"plan":{text}}}"#));
        assert!(call("alice", "cycle", r#"{"plan":3}"#, false).is_err());
    }

    #[test]
    fn a_read_leaves_expire_after_to_be_refused() {
        let refused = call("alice", "read", r#"{"request":{},"expire_after":5}"#, false);
        assert!(refused.unwrap_err().body.contains("expire_after"));
    }

    #[test]
    fn an_import_takes_only_its_agents_lines() {
        assert!(
            call(
                "alice",
                "import",
                r#"{"lines":[{"agent_id":"alice","item":{}}]}"#,
                false
            )
            .is_ok()
        );
        assert!(
            call(
                "alice",
                "import",
                r#"{"lines":[{"agent_id":"bob","item":{}}]}"#,
                false
            )
            .is_err()
        );
    }

    #[test]
    fn an_embedder_named_must_be_the_servers() {
        assert_eq!(Embedder::Default.resolve(Some("e5")), Ok(true));
        assert_eq!(Embedder::Default.resolve(None), Ok(false));
        assert_eq!(Embedder::None.resolve(Some("e5")), Ok(false));
        assert!(Embedder::Named("x".into()).resolve(Some("e5")).is_err());
        assert!(Embedder::Named("x".into()).resolve(None).is_err());
    }

    #[test]
    fn calls_across_agents_name_their_agents() {
        let import = across(
            "import",
            r#"{"lines":[{"agent_id":"a","item":1},{"agent_id":"a","item":2},{"agent_id":"b","item":3}]}"#,
        )
        .unwrap();
        assert_eq!(import.agents, ["a", "b"]);
        assert_eq!(import.calls.len(), 2);
        assert!(across("export", "{}").is_err());
        assert_eq!(
            across("export", r#"{"agents":["a","b"]}"#).unwrap().agents,
            ["a", "b"]
        );
        assert_eq!(
            across("audit", r#"{"audit_agent":"a","limit":3}"#)
                .unwrap()
                .calls[0]
                .2,
            r#"{"limit":3}"#
        );
        assert_eq!(
            joined(Joined::Concat, &["[1,2]".into(), "[]".into(), "[3]".into()]),
            "[1,2,3]"
        );
    }

    #[test]
    fn answers_by_kind() {
        assert_eq!(answer(Shape::Value, "V{}").0, 200);
        assert_eq!(answer(Shape::Value, "Ibad").0, 400);
        assert_eq!(
            answer(Shape::Value, "R{\"error\":1}"),
            (409, "{\"error\":1}".into())
        );
        assert_eq!(failure("Klocked").status, 503);
        assert_eq!(failure("Fdisk").status, 500);
    }
}
