//! `engram mcp`: one agent's memory domain as Model Context Protocol tools,
//! served over stdio, or streamable HTTP on a loopback address, with the
//! official Rust SDK (`rmcp`). The agent, the
//! store and the tier ceiling are fixed when the server starts: no tool
//! takes an agent id (IO-W6) or a tier (MT-1). Every tool answers the JSON
//! the command line prints for the same call; a refused call (a read's
//! typed error, a refused plan, a failed cycle, malformed arguments) is a
//! tool error carrying that JSON, while `"REJECTED"` stays a normal answer
//! (IO-G1). Every call goes through the engine, so it is bounded and
//! audited as the command line's is.
//!
//! With `--tools knowledge-graph` it serves instead the nine tools of the
//! reference MCP memory server (`@modelcontextprotocol/server-memory`), in
//! its names, input schemas and answer shapes, on the agent's entities and
//! relationships ([`crate::graph`]); `--tools all` serves both.

use crate::Domain;
use crate::graph::{
    self as kg, Added, Deletion, Entity, Graph, KnowledgeGraph, NewObservations, Relation,
};
use engram_model::json::{self, ReadAnswer, ReadRequest, WriteRequest};
use engram_surface::calls::{self, Lookup};
use engram_surface::turns::{self, TurnError};
use engram_surface::{Axis, Engine};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, ServerCapabilities, ServerConfig};
use rmcp::{ServerHandler, ServiceExt, schemars, tool, tool_handler, tool_router};
use serde::Deserialize;
use serde_json::{Value, json};
use std::io::Write;
use std::sync::{Arc, Mutex};

/// The most memories `recall` may bring back.
const MAX_TOP_K: u32 = 50;

/// The tools a server serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tools {
    /// Engram's own: recall, remember, write, read, history, as_of,
    /// entities, relationships, traverse.
    Engram,
    /// The reference MCP memory server's nine knowledge-graph tools.
    KnowledgeGraph,
    /// Both sets.
    All,
}

/// The server: one domain, one call at a time.
pub struct Memory<D> {
    domain: Arc<Mutex<D>>,
    agent: String,
    tools: Tools,
    tool_router: ToolRouter<Self>,
}

impl<D> Clone for Memory<D> {
    fn clone(&self) -> Self {
        Memory {
            domain: self.domain.clone(),
            agent: self.agent.clone(),
            tools: self.tools,
            tool_router: self.tool_router.clone(),
        }
    }
}

/// A request id for a call that was given none.
fn request_id(given: Option<String>, tool: &str) -> String {
    given.unwrap_or_else(|| format!("mcp-{tool}-{}", engram_model::system_time_ms()))
}

/// A tool's answer: the JSON, as a normal result or as a tool error.
fn answer(value: Value, refused: bool) -> CallToolResult {
    let content = vec![ContentBlock::text(value.to_string())];
    if refused {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    }
}

/// A failure of the store or the engine: a tool error saying why.
fn failed(error: impl std::fmt::Display) -> CallToolResult {
    answer(json!({"failure": error.to_string()}), true)
}

/// Arguments that do not make a valid call: a tool error, nothing run.
fn malformed(what: &str, error: impl std::fmt::Display) -> CallToolResult {
    answer(
        json!({"input_error": format!("not a valid {what}: {error}")}),
        true,
    )
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecallArgs {
    /// The question or message to find memories for, in the user's words.
    pub question: String,
    /// How many memories to bring back, 1 to 50.
    pub top_k: u32,
    /// The most tokens the memories may take in a prompt (OpenAI's o200k_base count of their lines `- [time] summary`, the time in ISO 8601 UTC, one per line): the best ones that fit are brought back, and the answer says how many were left out.
    #[serde(default)]
    pub token_budget: Option<u32>,
    /// An id for this call in the audit trail (made up when absent).
    #[serde(default)]
    pub request_id: Option<String>,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RememberArgs {
    /// What the user said this turn.
    pub message: String,
    /// What the assistant answered.
    pub response: String,
    /// The conversation the turn belongs to.
    #[serde(default)]
    pub session: Option<String>,
    /// The turn's id: remembering the same turn again with the same id stores nothing new.
    pub request_id: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteArgs {
    /// A write request: {"request_id", "source": {"agent_id", "component": "COGNITION", "actor": "USER"|"SYSTEM"|"EXTERNAL"}, "record": a FACT {"record_type":"FACT","key","payload":{"semantic":{…}}}, an EVENT {"record_type":"EVENT","timestamp","payload":…} or a STATE {"record_type":"STATE","timestamp","payload":{"subject","properties"}}}.
    pub request: Value,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadArgs {
    /// A read request: {"record_type": "FACT"|"EVENT"|"STATE", "selector": one of {"ById":{"id"}}, {"ByKey":{"key"}} (FACT), {"ByTimeRange":{"from","to","limit"}} (EVENT, STATE), {"Latest":{"limit"}} (EVENT, STATE), {"Limit":{"limit"}}, "request_id"}.
    pub request: Value,
}

impl<D: Domain + Send + 'static> Memory<D> {
    /// The server of `domain`, the agent's, with `tools`.
    pub fn new(domain: D, agent: &str, tools: Tools) -> Self {
        let tool_router = match tools {
            Tools::Engram => Self::tool_router(),
            Tools::KnowledgeGraph => Self::graph_router(),
            Tools::All => Self::tool_router() + Self::graph_router(),
        };
        Self {
            domain: Arc::new(Mutex::new(domain)),
            agent: agent.to_owned(),
            tools,
            tool_router,
        }
    }

    /// Runs `f` on the agent's knowledge graph (COGNITION writes) and
    /// answers what it gives: as `shape` makes it (the text, and the
    /// structured content), or a tool error saying why not.
    fn graph<T>(
        &self,
        f: impl FnOnce(&mut KnowledgeGraph<'_, D>) -> Result<T, kg::Error>,
        shape: impl FnOnce(T) -> (String, Value),
    ) -> CallToolResult {
        let agent = self.agent.clone();
        let answered = self.with(|domain| {
            f(&mut KnowledgeGraph::new(
                domain,
                &agent,
                json::Component::Cognition,
            ))
        });
        match answered {
            Ok(answered) => {
                let (text, structured) = shape(answered);
                let mut result = CallToolResult::structured(structured);
                result.content = vec![ContentBlock::text(text)];
                result
            }
            Err(error) => CallToolResult::error(vec![ContentBlock::text(error.to_string())]),
        }
    }

    /// Runs `f` on the domain (one call at a time), its audit entries
    /// naming the tool call's [`CALLER`].
    /// The domain's calls block (on the engine, on the store; the
    /// PostgreSQL client runs a runtime of its own), so they run where the
    /// async runtime lets a thread block.
    fn with<T>(&self, f: impl FnOnce(&mut D) -> T) -> T {
        let caller = CALLER.try_with(Clone::clone).ok().flatten();
        tokio::task::block_in_place(|| {
            let mut domain = self
                .domain
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            domain.set_caller(caller.as_deref());
            let answer = f(&mut domain);
            domain.set_caller(None);
            answer
        })
    }

    /// The answer of a lookup (`history`, `as_of`, `entities`,
    /// `relationships`), run through the call surface every host shares
    /// under the request id given, or one made for `tool`: the records, or
    /// the refusal as a tool error.
    fn lookup<A: Lookup>(
        &self,
        tool: &str,
        args: A,
        run: impl FnOnce(&mut D, String, A) -> anyhow::Result<ReadAnswer>,
    ) -> CallToolResult {
        let request_id = request_id(args.request_id(), tool);
        match self.with(|domain| run(domain, request_id, args)) {
            Ok(found) => {
                let refused = matches!(found, ReadAnswer::Error { .. });
                answer(json!(found), refused)
            }
            Err(error) => failed(error),
        }
    }

    /// The answer of `remember` or `recall` (the library's, run on this
    /// domain): the JSON `shape` makes of it, or the refusal as a tool
    /// error.
    fn turn<T>(
        &self,
        run: impl FnOnce(&mut D) -> Result<T, TurnError<anyhow::Error>>,
        shape: impl FnOnce(T) -> Value,
    ) -> CallToolResult {
        match self.with(run) {
            Ok(answered) => answer(shape(answered), false),
            Err(TurnError::Refused(line)) => answer(line, true),
            Err(TurnError::Failed(error)) => failed(error),
        }
    }
}

#[tool_router]
impl<D: Domain + Send + 'static> Memory<D> {
    #[tool(
        description = "Recall: the memories most relevant to a question, from this agent's memory (ContextSelect). Answers {\"memories\":[{\"id\",\"summary\",\"timestamp\"}]}, best first; summaries only, never raw transcripts. With token_budget, only the best that fit it, and {\"left_out\": n}."
    )]
    async fn recall(&self, Parameters(args): Parameters<RecallArgs>) -> CallToolResult {
        if !(1..=MAX_TOP_K).contains(&args.top_k) {
            return malformed("recall", format!("top_k must be 1 to {MAX_TOP_K}"));
        }
        let budgeted = args.token_budget.is_some();
        let args = turns::RecallArgs {
            question: args.question,
            top_k: args.top_k,
            token_budget: args.token_budget,
            request_id: args.request_id,
        };
        self.turn(
            |domain| turns::recall(domain, args),
            |recalled| {
                let mut found = json!({"memories": recalled.memories});
                if budgeted {
                    found["left_out"] = json!(recalled.left_out);
                }
                found
            },
        )
    }

    #[tool(
        description = "Remember one conversation turn: the user's message and the assistant's response are summarized and stored as one memory (SummarizeMemory, PersistMemory, one commit). The raw text is not stored. Answers {\"request_id\",\"committed\":[ids]}. The same request_id again stores nothing new."
    )]
    async fn remember(&self, Parameters(args): Parameters<RememberArgs>) -> CallToolResult {
        let args = turns::RememberArgs {
            message: args.message,
            response: args.response,
            session: Some(args.session.unwrap_or_else(|| "mcp".into())),
            request_id: Some(args.request_id),
            time: None,
        };
        self.turn(
            |domain| turns::remember(domain, args),
            |remembered| json!(remembered),
        )
    }

    #[tool(
        description = "Write one record (a FACT, EVENT or STATE) to this agent's memory. Answers {\"ACCEPTED\":{\"stored_id\"}} or \"REJECTED\" (the reason is in the audit trail). The source's agent_id must be this server's agent."
    )]
    async fn write(&self, Parameters(args): Parameters<WriteArgs>) -> CallToolResult {
        let request: WriteRequest = match serde_json::from_value(args.request) {
            Ok(request) => request,
            Err(error) => return malformed("write request", error),
        };
        self.with(|domain| match Engine::write(domain, request) {
            Ok(written) => answer(json!(written), false),
            Err(error) => failed(error),
        })
    }

    #[tool(
        description = "Read records of one type with one bounded selector (by id, by key, by time range, latest, first N). Answers {\"records\":[…]}, or a tool error {\"error\":…} when the read is refused (a limit above the ceiling, a key that is no fact key)."
    )]
    async fn read(&self, Parameters(args): Parameters<ReadArgs>) -> CallToolResult {
        let request: ReadRequest = match serde_json::from_value(args.request) {
            Ok(request) => request,
            Err(error) => return malformed("read request", error),
        };
        self.with(|domain| match Engine::read(domain, request) {
            Ok(found) => {
                let refused = matches!(found, ReadAnswer::Error { .. });
                answer(json!(found), refused)
            }
            Err(error) => failed(error),
        })
    }

    #[tool(
        description = "The versions of a FACT key, newest first: superseded versions are kept, closed in time. Answers {\"records\":[…]}."
    )]
    async fn history(&self, Parameters(args): Parameters<calls::HistoryArgs>) -> CallToolResult {
        self.lookup("history", args, Engine::history)
    }

    #[tool(
        description = "The version of a FACT key as of a time: give exactly one of valid (true in the world then) or known (what the memory knew then), in ms since the epoch. Answers {\"records\":[…]}."
    )]
    async fn as_of(&self, Parameters(args): Parameters<calls::AsOfArgs>) -> CallToolResult {
        let (axis, at) = match (args.valid, args.known) {
            (Some(at), None) => (Axis::Valid, at),
            (None, Some(at)) => (Axis::Known, at),
            _ => return malformed("as_of", "give exactly one of valid or known"),
        };
        self.lookup("as-of", args, |domain, id, args| {
            Engine::as_of(domain, id, args, axis, at)
        })
    }

    #[tool(
        description = "The entities of one type (person, organization, place, product, event) this agent knows, in key order. Answers {\"records\":[…]}."
    )]
    async fn entities(&self, Parameters(args): Parameters<calls::EntitiesArgs>) -> CallToolResult {
        self.lookup("entities", args, Engine::entities)
    }

    #[tool(
        description = "The relationships of an entity (those that start there, or with incoming those that end there), optionally of some types and valid at a time. Answers {\"records\":[…]}."
    )]
    async fn relationships(
        &self,
        Parameters(args): Parameters<calls::RelationshipsArgs>,
    ) -> CallToolResult {
        self.lookup("relationships", args, Engine::relationships)
    }

    #[tool(
        description = "Walk the graph of entities and relationships from an entity, bounded in depth, entities and relationships read. Answers {\"nodes\":[{\"key\",\"depth\",\"entity\"}],\"edges\":[…]}."
    )]
    async fn traverse(&self, Parameters(args): Parameters<calls::TraverseArgs>) -> CallToolResult {
        let request_id = request_id(args.request_id(), "traverse");
        match self.with(|domain| Engine::traverse(domain, request_id, args)) {
            Err(error) => failed(error),
            Ok(line) => {
                let refused = line.get("error").is_some();
                answer(line, refused)
            }
        }
    }
}

/// JSON as the reference server writes it: two-space indents.
fn pretty(value: &impl serde::Serialize) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct CreateEntitiesArgs {
    pub entities: Vec<Entity>,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct RelationsArgs {
    pub relations: Vec<Relation>,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct DeleteRelationsArgs {
    /// An array of relations to delete
    pub relations: Vec<Relation>,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct AddObservationsArgs {
    pub observations: Vec<NewObservations>,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeleteEntitiesArgs {
    /// An array of entity names to delete
    pub entity_names: Vec<String>,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct DeleteObservationsArgs {
    pub deletions: Vec<Deletion>,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct ReadGraphArgs {
    /// At most this many entities and relations in this page (default 100, at most 1000). Engram's addition: the reference server answers the whole graph at once.
    #[serde(default)]
    pub limit: Option<u32>,
    /// The `next_cursor` of the page before, to read the next page.
    #[serde(default)]
    pub cursor: Option<String>,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct SearchNodesArgs {
    /// The search query to match against entity names, types, and observation content
    pub query: String,
    /// At most this many entities (default 50, at most 1000). Engram's addition.
    #[serde(default)]
    pub limit: Option<u32>,
    /// The `next_cursor` of the answer before, to search on from there.
    #[serde(default)]
    pub cursor: Option<String>,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct OpenNodesArgs {
    /// An array of entity names to retrieve
    pub names: Vec<String>,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct EntitiesAnswer {
    entities: Vec<Entity>,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct RelationsAnswer {
    relations: Vec<Relation>,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct ResultsAnswer {
    results: Vec<Added>,
}

/// `open_nodes`'s answer: never paged.
#[derive(serde::Serialize, schemars::JsonSchema)]
struct NodesAnswer {
    entities: Vec<Entity>,
    relations: Vec<Relation>,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct DeletedAnswer {
    success: bool,
    message: String,
}

fn output<T: schemars::JsonSchema + 'static>() -> Arc<rmcp::model::JsonObject> {
    rmcp::handler::server::common::schema_for_output::<T>()
}

/// The answer of a deletion: its message as the text.
fn deletion(answer: Value) -> (String, Value) {
    (
        answer["message"].as_str().unwrap_or_default().to_owned(),
        answer,
    )
}

/// Writes the knowledge-graph tools, one row each: the reference server's
/// title, name, arguments and output shape, its hints (read only,
/// destructive, idempotent; none reaches the open world) and description,
/// the graph call it makes and how its answer reads as text and as
/// structured content.
macro_rules! graph_tools {
    ($(
        $title:tt $name:ident($args:ident: $Args:ident) -> $Output:ident,
        hints($read_only:tt, $destructive:tt, $idempotent:tt) {
            description: $description:tt,
            run: |$graph:ident| $run:expr,
            answer: |$answer:pat_param| $shape:expr $(,)?
        }
    )*) => {
        #[tool_router(router = graph_router)]
        impl<D: Domain + Send + 'static> Memory<D> {
            $(
                #[tool(
                    title = $title,
                    description = $description,
                    output_schema = output::<$Output>(),
                    annotations(
                        read_only_hint = $read_only,
                        destructive_hint = $destructive,
                        idempotent_hint = $idempotent,
                        open_world_hint = false
                    )
                )]
                async fn $name(&self, Parameters($args): Parameters<$Args>) -> CallToolResult {
                    self.graph(|$graph| $run, |$answer| $shape)
                }
            )*
        }
    };
}

graph_tools! {
    "Create Entities" create_entities(args: CreateEntitiesArgs) -> EntitiesAnswer, hints(false, false, false) {
        description: "Create multiple new entities in the knowledge graph",
        run: |graph| graph.create_entities(&args.entities),
        answer: |entities| (pretty(&entities), json!({ "entities": entities })),
    }
    "Create Relations" create_relations(args: RelationsArgs) -> RelationsAnswer, hints(false, false, false) {
        description: "Create multiple new relations between entities in the knowledge graph. Relations should be in active voice",
        run: |graph| graph.create_relations(&args.relations),
        answer: |relations| (pretty(&relations), json!({ "relations": relations })),
    }
    "Add Observations" add_observations(args: AddObservationsArgs) -> ResultsAnswer, hints(false, false, false) {
        description: "Add new observations to existing entities in the knowledge graph",
        run: |graph| graph.add_observations(&args.observations),
        answer: |results| (pretty(&results), json!({ "results": results })),
    }
    "Delete Entities" delete_entities(args: DeleteEntitiesArgs) -> DeletedAnswer, hints(false, true, true) {
        description: "Delete multiple entities and their associated relations from the knowledge graph. In Engram a deleted entity and its relations are no longer current but kept in history (only `engram maintenance forget` erases).",
        run: |graph| graph.delete_entities(&args.entity_names),
        answer: |(entities, relations)| deletion(kg::deleted(
            "Entities",
            format!("{entities} entities and {relations} relations closed"),
        )),
    }
    "Delete Observations" delete_observations(args: DeleteObservationsArgs) -> DeletedAnswer, hints(false, true, true) {
        description: "Delete specific observations from entities in the knowledge graph. In Engram the entity's earlier versions keep them in history.",
        run: |graph| graph.delete_observations(&args.deletions),
        answer: |removed| deletion(kg::deleted("Observations", format!("{removed} removed"))),
    }
    "Delete Relations" delete_relations(args: DeleteRelationsArgs) -> DeletedAnswer, hints(false, true, true) {
        description: "Delete multiple relations from the knowledge graph. In Engram a deleted relation is closed in valid time and kept in history.",
        run: |graph| graph.delete_relations(&args.relations),
        answer: |closed| deletion(kg::deleted("Relations", format!("{closed} closed"))),
    }
    "Read Graph" read_graph(args: ReadGraphArgs) -> Graph, hints(true, false, true) {
        description: "Read the knowledge graph, one page at a time: entities, then relations, at most `limit` (default 100) per page; pass `next_cursor` as `cursor` for the next page.",
        run: |graph| graph.read_graph(args.limit.unwrap_or(kg::READ_LIMIT), args.cursor.as_deref()),
        answer: |found| (pretty(&found), json!(found)),
    }
    "Search Nodes" search_nodes(args: SearchNodesArgs) -> Graph, hints(true, false, true) {
        description: "Search for nodes in the knowledge graph based on a query: at most `limit` entities (default 50) and the relations from or to them; `next_cursor` continues the search.",
        run: |graph| graph.search_nodes(
            &args.query,
            args.limit.unwrap_or(kg::SEARCH_LIMIT),
            args.cursor.as_deref(),
        ),
        answer: |found| (pretty(&found), json!(found)),
    }
    "Open Nodes" open_nodes(args: OpenNodesArgs) -> NodesAnswer, hints(true, false, true) {
        description: "Open specific nodes in the knowledge graph by their names",
        run: |graph| graph.open_nodes(&args.names),
        answer: |found| {
            let found = NodesAnswer {
                entities: found.entities,
                relations: found.relations,
            };
            (pretty(&found), json!(found))
        },
    }
}

tokio::task_local! {
    /// Who makes the tool call under way: the name of the token its HTTP
    /// request was authenticated by (none over stdio, or without tokens).
    static CALLER: Option<String>;
}

/// The name of the token an HTTP request was authenticated by, kept in the
/// request's extensions for the tool call it carries.
#[derive(Clone)]
struct Caller(String);

#[tool_handler(router = self.tool_router)]
impl<D: Domain + Send + 'static> ServerHandler for Memory<D> {
    /// Runs the tool as its caller: the token its HTTP request came with.
    async fn call_tool(
        &self,
        request: rmcp::model::CallToolRequestParams,
        context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, rmcp::ErrorData> {
        let caller = context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Caller>())
            .map(|caller| caller.0.clone());
        let call = rmcp::handler::server::tool::ToolCallContext::new(self, request, context);
        CALLER.scope(caller, self.tool_router.call(call)).await
    }

    fn get_info(&self) -> ServerConfig {
        let graph = "Every change is kept in history: a deleted entity, observation or relation is \
                     no longer current, never erased.";
        let instructions = match self.tools {
            Tools::KnowledgeGraph => format!(
                "The knowledge graph of agent {:?}: entities with observations, and relations \
                 between them. {graph}",
                self.agent
            ),
            tools => format!(
                "The long-term memory of agent {:?}: recall memories relevant to a question, remember a \
                 conversation turn, and read or write typed records{}. Every call is bounded and audited; \
                 nothing here can reach another agent's memory, raise the privacy tier, or erase.",
                self.agent,
                if tools == Tools::All {
                    ", and keep a knowledge graph of entities, observations and relations"
                } else {
                    ""
                }
            ),
        };
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_instructions(instructions)
    }
}

/// The origins a browser on this machine sends: the only ones the server
/// over HTTP answers (any port).
const LOOPBACK_ORIGINS: [&str; 6] = [
    "http://localhost:*",
    "http://127.0.0.1:*",
    "http://[::1]:*",
    "https://localhost:*",
    "https://127.0.0.1:*",
    "https://[::1]:*",
];

/// Lets a request through when the server has no tokens, or its bearer
/// token reaches the agent (S-AUTH); answers the refusal otherwise.
async fn authorize(
    access: Arc<(Option<engram_http::Tokens>, String)>,
    mut request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let (tokens, agent) = access.as_ref();
    let Some(tokens) = tokens else {
        return next.run(request).await;
    };
    let authorization = request
        .headers()
        .get(axum::http::header::AUTHORIZATION)
        .map(|value| value.to_str().unwrap_or("\u{fffd}"));
    let refused = match tokens.authenticate(authorization) {
        Ok(token) => match token.permits(engram_http::Level::Cognition, [agent.as_str()]) {
            Ok(()) => {
                let caller = Caller(token.name().to_owned());
                request.extensions_mut().insert(caller);
                return next.run(request).await;
            }
            Err(refusal) => refusal,
        },
        Err(refusal) => refusal,
    };
    axum::response::IntoResponse::into_response(engram_http::Answer::from(refused))
}

/// Serves `domain` over stdio until the client closes it, or with `http`
/// (a loopback address; port 0 picks one) over streamable HTTP at
/// `http://ADDR/mcp` until interrupted. The address served is printed on
/// standard error. Over HTTP, a request whose `Origin` is not this
/// machine's is refused (the MCP specification's rule against DNS
/// rebinding), and with `tokens` (S-AUTH) every request needs a bearer
/// token that reaches `agent`; without, the server says on standard error
/// that it authenticates nobody.
pub fn serve<D: Domain + Send + 'static>(
    domain: D,
    agent: &str,
    tools: Tools,
    http: Option<&str>,
    tokens: Option<engram_http::Tokens>,
) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let memory = Memory::new(domain, agent, tools);
    // The domain goes last, outside the runtime: closing a PostgreSQL
    // client blocks on a runtime of its own.
    let domain = memory.domain.clone();
    let served = runtime.block_on(async move {
        let Some(address) = http else {
            let service = memory
                .serve(rmcp::transport::stdio())
                .await
                .map_err(|e| anyhow::anyhow!("starting the MCP server: {e}"))?;
            service
                .waiting()
                .await
                .map_err(|e| anyhow::anyhow!("the MCP server stopped: {e}"))?;
            return Ok(());
        };
        let address: std::net::SocketAddr = address
            .parse()
            .map_err(|e| anyhow::anyhow!("--http {address}: not an address (IP:PORT): {e}"))?;
        // Only this machine may connect.
        anyhow::ensure!(
            address.ip().is_loopback(),
            "--http {address}: the MCP server listens on a loopback address only (127.0.0.1, ::1)"
        );
        use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
        use rmcp::transport::streamable_http_server::{
            StreamableHttpServerConfig, StreamableHttpService,
        };
        let service: StreamableHttpService<Memory<D>, LocalSessionManager> =
            StreamableHttpService::new(
                move || Ok(memory.clone()),
                Default::default(),
                StreamableHttpServerConfig::default()
                    .with_allowed_origins(LOOPBACK_ORIGINS)
                    .enforce_origin_validation(),
            );
        let authenticated = tokens.is_some();
        let access = Arc::new((tokens, agent.to_string()));
        let router = axum::Router::new()
            .nest_service("/mcp", service)
            .layer(axum::middleware::from_fn(move |request, next| {
                authorize(access.clone(), request, next)
            }));
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .map_err(|e| anyhow::anyhow!("--http {address}: {e}"))?;
        // Where the server listens, for whoever started it; a standard
        // error that cannot be written does not stop the server.
        let address = listener.local_addr()?;
        let mut stderr = std::io::stderr();
        let _ = writeln!(
            stderr,
            "engram mcp: agent {agent:?} at http://{address}/mcp"
        );
        if !authenticated {
            let _ = writeln!(
                stderr,
                "engram mcp: NO TOKENS: this server authenticates nobody; any process on this machine may use {agent:?}'s memory (give --tokens FILE or ENGRAM_TOKENS)"
            );
        }
        axum::serve(listener, router)
            .with_graceful_shutdown(crate::stop_signal())
            .await?;
        Ok(())
    });
    drop(runtime);
    drop(domain);
    served
}
