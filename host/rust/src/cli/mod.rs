//! The `engram` command line: the memory IO contract and execution cycles
//! on a store. One source for both builds of the command: native (over this
//! crate's library) and for `wasm32-wasip2` (`engram-cli.wasm`, over the
//! engine's exports and a provider's store); each gives it a binding of the
//! WIT (`crate::binding`, which names the same types, modules and `Domain`
//! calls in both) and a `crate::platform` (how a store and a domain are
//! opened): `native.rs` and `wasi.rs`.

mod maintenance;

use crate::binding as engram;
use crate::platform::{self, Store};
use anyhow::Context;
use clap::{Parser, Subcommand};
use engram::cycle::{CycleError, ExecutionPlan, Stage, StepOutput, TurnInput};
use engram::json::{self, Plan, ReadAnswer, ReadRequest, WriteAnswer, WriteRequest};
use engram::types::PrivacyTier;
use engram::{AuditQuery, Mode};
use engram_model::calls;
use serde::de::DeserializeOwned;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};

/// Every write was accepted and every read answered with records.
const OK: u8 = 0;
/// A write was REJECTED or a read refused; the answers were printed.
const REFUSED: u8 = 1;
/// The input could not be read or is not valid JSON for the command;
/// nothing was run and nothing written.
const BAD_INPUT: u8 = 3;
/// The store could not be opened or the engine failed.
const FAILURE: u8 = 4;

/// Engram: a memory engine for AI agents.
///
/// Exit codes: 0 done; 1 a write was REJECTED or a read refused (the answers
/// are printed); 2 bad usage; 3 unreadable or malformed input (nothing was
/// run); 4 the store or the engine failed.
#[derive(Parser)]
#[command(name = "engram", version)]
struct Cli {
    /// The store: a SQLite file (the default kind), or a PostgreSQL database
    /// shared by many hosts (`postgres://user@host:port/database`).
    #[arg(long, global = true, env = "ENGRAM_STORE", default_value = "engram.db")]
    store: String,

    /// The highest privacy tier reads may return: public, sensitive or
    /// private (MT-1). Records above it are answered as if absent.
    #[arg(long, global = true, env = "ENGRAM_TIER_CEILING", default_value = "private", value_parser = parse_tier)]
    tier_ceiling: PrivacyTier,

    /// Keep what this command writes for DURATION only (`30d`, `12h`,
    /// `90min`, `500ms`): from the moment it expires no read answers it,
    /// and `engram maintenance expire` removes it. Absent: kept until
    /// removed otherwise.
    #[arg(long, global = true, env = "ENGRAM_EXPIRE_AFTER", value_name = "DURATION", value_parser = parse_duration)]
    expire_after: Option<u64>,

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
    now: Option<i64>,

    /// Compile the engine afresh and keep no compiled copy. Otherwise the
    /// compiled engine is kept in ENGRAM_CACHE_DIR, else
    /// $XDG_CACHE_HOME/engram, else ~/.cache/engram.
    #[arg(long, global = true)]
    no_cache: bool,

    /// On failure, print every cause with the engine's backtrace, not one
    /// line.
    #[arg(long, global = true)]
    verbose: bool,

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Write records: one request as JSON, or JSON Lines with --batch.
    Write(Io),
    /// Read records: one request as JSON, or JSON Lines with --batch.
    Read(Io),
    /// Run one execution cycle of PLAN: each stage's output as a JSON line,
    /// then the committed ids.
    Cycle {
        /// The execution plan (JSON).
        plan: PathBuf,
        /// The agent whose memory domain the cycle runs in.
        #[arg(long, env = "ENGRAM_AGENT", value_parser = parse_agent)]
        agent: String,
        /// The session the turn belongs to.
        #[arg(long, default_value = "cli")]
        session: String,
        /// Run the plan once for each turn of a JSON Lines file (standard
        /// input when `-`): `{"message", "response", "session",
        /// "request_id", "timestamp"}` (`response` when the plan summarizes
        /// the turn; `session` defaults to --session; `timestamp`, the
        /// turn's own time in ms since the epoch, is the cycle's time).
        /// Answers a line per turn: `{"request_id", "committed": […]}` or
        /// `{"request_id", "cycle_error": …}`.
        #[arg(long, value_name = "FILE", conflicts_with_all = ["message", "message_file", "response", "response_file", "request_id"])]
        batch: Option<PathBuf>,
        /// The cycle's request id (audit, idempotency); made from the clock when absent.
        #[arg(long)]
        request_id: Option<String>,
        /// The user's message.
        #[arg(long, conflicts_with = "message_file")]
        message: Option<String>,
        /// A file holding the user's message.
        #[arg(long)]
        message_file: Option<PathBuf>,
        /// The model's response; needed when the plan summarizes the turn
        /// (a recall-only plan runs without it).
        #[arg(long, conflicts_with = "response_file")]
        response: Option<String>,
        /// A file holding the model's response.
        #[arg(long)]
        response_file: Option<PathBuf>,
        /// The plan's token budget: the most tokens the prompt's memory
        /// lines may take (o200k_base by default); replaces the plan's own.
        #[arg(long, value_name = "N")]
        token_budget: Option<u32>,
    },
    /// Remember one finished turn: MESSAGE (what the user said) and RESPONSE
    /// (what the assistant answered) are summarized and the summary stored
    /// as one memory, in one commit; the raw text is not stored. Prints
    /// `{"request_id","committed":[…]}`.
    Remember {
        /// What the user said.
        message: String,
        /// What the assistant answered.
        response: String,
        /// The agent whose memory it goes to.
        #[arg(long, env = "ENGRAM_AGENT", value_parser = parse_agent)]
        agent: String,
        /// The conversation the turn belongs to (`default` when absent).
        #[arg(long)]
        session: Option<String>,
        /// The turn's id: remembering it again with the same id stores
        /// nothing new. A fresh random one when absent (printed).
        #[arg(long)]
        request_id: Option<String>,
        /// When the turn happened, in ms since the epoch: the memory's time.
        /// Now when absent.
        #[arg(long, value_name = "MS", allow_hyphen_values = true)]
        time: Option<i64>,
    },
    /// Recall: the memories that answer QUESTION, best first, and the prompt
    /// assembled from them (each memory's time in ISO 8601, UTC). Persists
    /// nothing. Prints `{"request_id","memories":[…],"prompt","left_out"}`.
    Recall {
        /// The question, in the user's words.
        question: String,
        /// The agent whose memory is searched.
        #[arg(long, env = "ENGRAM_AGENT", value_parser = parse_agent)]
        agent: String,
        /// How many memories at most.
        #[arg(long, value_name = "K", default_value_t = engram_model::turns::RECALL_TOP_K)]
        top_k: u32,
        /// The most tokens the prompt's memory lines may take (o200k_base
        /// by default): the best that fit are kept.
        #[arg(long, value_name = "N")]
        token_budget: Option<u32>,
        /// The call's id in the audit trail; a fresh random one when absent.
        #[arg(long)]
        request_id: Option<String>,
    },
    /// Ingest a sample conversation through cycles, then answer a question's
    /// ContextSelect and PromptAssemble from it.
    Demo {
        /// The question to select context for.
        #[arg(
            long,
            default_value = "Where should I take Sarah for dinner in Lisbon?"
        )]
        question: String,
        /// The most tokens the prompt's memory lines may take.
        #[arg(long, value_name = "N")]
        token_budget: Option<u32>,
    },
    /// Print the versions of a FACT key, newest first (MT-2).
    History {
        /// The normalized fact key.
        key: String,
        /// The agent whose memory domain to read.
        #[arg(long, env = "ENGRAM_AGENT", value_parser = parse_agent)]
        agent: String,
        /// How many versions at most.
        #[arg(long, default_value_t = calls::HISTORY_LIMIT)]
        limit: u32,
    },
    /// Print the version of a FACT key as of a time (MT-2): true in the world
    /// at --valid, or known to the engine at --known.
    AsOf {
        /// The normalized fact key.
        key: String,
        /// The agent whose memory domain to read.
        #[arg(long, env = "ENGRAM_AGENT", value_parser = parse_agent)]
        agent: String,
        /// A valid time (milliseconds since the Unix epoch).
        #[arg(
            long,
            allow_hyphen_values = true,
            conflicts_with = "known",
            required_unless_present = "known"
        )]
        valid: Option<i64>,
        /// A transaction time (milliseconds since the Unix epoch).
        #[arg(long, allow_hyphen_values = true)]
        known: Option<i64>,
        /// How many of the newest versions to look at.
        #[arg(long, default_value_t = calls::AS_OF_LIMIT)]
        limit: u32,
    },
    /// Print the current FACTs of a namespace, in key order (MT-7).
    List {
        /// The namespace's segments, e.g. `entities u1`.
        #[arg(required = true)]
        namespace: Vec<String>,
        /// The agent whose memory domain to read.
        #[arg(long, env = "ENGRAM_AGENT", value_parser = parse_agent)]
        agent: String,
        /// How many at most.
        #[arg(long, default_value_t = calls::LIST_LIMIT)]
        limit: u32,
        /// Only the keys after this one: the key of the last FACT of the
        /// previous page.
        #[arg(long)]
        after: Option<String>,
    },
    /// Print the current entities of one type (MT-8).
    Entities {
        /// person, organization, place, product or event.
        #[arg(value_parser = ["person", "organization", "place", "product", "event"])]
        entity_type: String,
        /// The agent whose memory domain to read.
        #[arg(long, env = "ENGRAM_AGENT", value_parser = parse_agent)]
        agent: String,
        /// How many at most.
        #[arg(long, default_value_t = calls::ENTITIES_LIMIT)]
        limit: u32,
    },
    /// Print the current relationships of an entity (MT-8).
    Relationships {
        /// The entity's key (or a pseudo-entity such as USER).
        entity: String,
        /// The agent whose memory domain to read.
        #[arg(long, env = "ENGRAM_AGENT", value_parser = parse_agent)]
        agent: String,
        /// Those it is the target of, instead of the source.
        #[arg(long)]
        incoming: bool,
        /// Only relationships of this type; repeat for more.
        #[arg(long = "type")]
        types: Vec<String>,
        /// Only those valid at this time.
        #[arg(long, allow_hyphen_values = true)]
        valid_at: Option<i64>,
        /// How many index entries to examine at most.
        #[arg(long, default_value_t = calls::RELATIONSHIPS_LIMIT)]
        limit: u32,
    },
    /// Walk the graph from an entity, bounded (MT-9): prints
    /// `{"nodes":[…],"edges":[…]}`.
    Traverse {
        /// The key of the entity to start from.
        start: String,
        /// The agent whose memory domain to read.
        #[arg(long, env = "ENGRAM_AGENT", value_parser = parse_agent)]
        agent: String,
        /// Depth-first instead of breadth-first.
        #[arg(long)]
        depth_first: bool,
        /// Follow relationships from target to source.
        #[arg(long)]
        incoming: bool,
        /// Only relationships of this type; repeat for more.
        #[arg(long = "type")]
        types: Vec<String>,
        /// Only relationships valid at this time.
        #[arg(long, allow_hyphen_values = true)]
        valid_at: Option<i64>,
        /// How many edges away at most.
        #[arg(long, default_value_t = calls::MAX_DEPTH)]
        max_depth: u32,
        /// How many nodes at most.
        #[arg(long, default_value_t = calls::MAX_NODES)]
        max_nodes: u32,
        /// How many edge-index entries to examine at most.
        #[arg(long, default_value_t = calls::MAX_EDGES)]
        max_edges: u32,
    },
    /// Offline maintenance under the domain's maintenance lock: export,
    /// import, forget, unlock (IO-W7).
    #[command(subcommand)]
    Maintenance(maintenance::Maintenance),
    /// Serve one agent's memory to an MCP client (Claude, Cursor, an agent
    /// framework) over stdio: tools recall, remember, write, read, history,
    /// as_of, entities, relationships, traverse; or, with --tools
    /// knowledge-graph, the reference MCP memory server's nine. The agent
    /// and the tier ceiling are fixed here: no tool can reach another
    /// agent's memory or raise the ceiling.
    Mcp {
        /// The agent whose memory domain the server serves.
        #[arg(long, env = "ENGRAM_AGENT", value_parser = parse_agent)]
        agent: String,
        /// Serve streamable HTTP at http://ADDR/mcp instead of stdio; ADDR
        /// is a loopback IP:PORT (port 0 picks one, printed on stderr).
        #[arg(long, value_name = "ADDR")]
        http: Option<String>,
        /// Which tools: Engram's own, the reference MCP memory server's
        /// knowledge graph (a drop-in for `@modelcontextprotocol/server-memory`),
        /// or both.
        #[arg(long, value_enum, default_value = "engram")]
        tools: McpTools,
    },
    /// Print the audit trail as JSON Lines, oldest first: the newest
    /// entries that pass every filter given.
    Audit {
        /// Only this agent's domain.
        #[arg(long)]
        agent: Option<String>,
        /// Only entries recorded at or after this time (ms since the epoch).
        #[arg(long)]
        since: Option<i64>,
        /// Only entries recorded before this time (ms since the epoch).
        #[arg(long)]
        until: Option<i64>,
        /// Only this operation: WRITE, READ, …
        #[arg(long, value_parser = parse_upper::<engram::audit::Operation>)]
        operation: Option<engram::audit::Operation>,
        /// Only this outcome: ACCEPTED, REPLAYED, REJECTED, RETURNED, FAILED.
        #[arg(long, value_parser = parse_upper::<engram::audit::Outcome>)]
        outcome: Option<engram::audit::Outcome>,
        /// How many of the newest matching entries to print.
        #[arg(long, default_value_t = engram::audit::AUDIT_LIMIT, value_parser = clap::value_parser!(u32).range(1..=i64::from(engram::audit::MAX_AUDIT_LIMIT)))]
        limit: u32,
    },
}

/// The requests of `write` and `read`: one, or JSON Lines with `--batch`,
/// for one agent, from a file or standard input.
#[derive(clap::Args)]
pub struct Io {
    /// The agent whose memory domain the requests go to.
    #[arg(long, env = "ENGRAM_AGENT", value_parser = parse_agent)]
    agent: String,
    /// Read JSON Lines, one request a line, and answer a line each.
    #[arg(long)]
    batch: bool,
    /// The request file; standard input when absent or `-`.
    file: Option<PathBuf>,
}

/// A failure that ends the command: its one-line message and exit code.
struct Exit(u8, String);

/// What every domain the command opens is told: how long what it writes is
/// kept (`--expire-after`) and the time it runs at (`--now`).
#[derive(Clone, Copy, Default)]
struct Opening {
    expire_after: Option<u64>,
    now: Option<i64>,
}

static OPENING: std::sync::OnceLock<Opening> = std::sync::OnceLock::new();

fn opening() -> Opening {
    OPENING.get().copied().unwrap_or_default()
}

/// Opens an agent's domain in `mode`, its reads restricted to `ceiling`,
/// as the command's options say ([`Opening`]).
pub(crate) fn open_in(
    store: &Store,
    agent: &str,
    mode: Mode,
    ceiling: PrivacyTier,
) -> anyhow::Result<engram::Domain> {
    let mut domain = platform::open_domain(store, agent, mode, ceiling)?;
    let Opening { expire_after, now } = opening();
    domain.set_expire_after(expire_after);
    if now.is_some() {
        domain.set_time(now);
    }
    Ok(domain)
}

/// Parses a duration as people write it (`30d`, `12h`, `90min`, `500ms`)
/// into milliseconds, more than 0.
fn parse_duration(text: &str) -> Result<u64, String> {
    let duration = humantime::parse_duration(text).map_err(|e| format!("{text:?}: {e}"))?;
    match u64::try_from(duration.as_millis()) {
        Ok(0) => Err(format!("{text:?} is less than a millisecond")),
        Ok(ms) => Ok(ms),
        Err(_) => Err(format!("{text:?} is too long")),
    }
}

/// Whether failures are printed in full (`--verbose`).
static VERBOSE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Runs the command line of the process: its exit code. A usage error is
/// printed by clap and answered 2, help and the version 0.
pub fn main() -> u8 {
    main_with(std::env::args_os())
}

/// Runs the command line `args` (the program's name first) in this
/// process, printing to its standard output and error: its exit code, as
/// [`main`].
pub fn main_with<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(error) => {
            let _ = error.print();
            return u8::try_from(error.exit_code()).unwrap_or(2);
        }
    };
    platform::configure(cli.no_cache);
    VERBOSE.store(cli.verbose, std::sync::atomic::Ordering::Relaxed);
    let _ = OPENING.set(Opening {
        expire_after: cli.expire_after,
        now: cli.now,
    });
    match run(cli) {
        Ok(code) => code,
        Err(Exit(code, message)) => {
            eprintln!("engram: {}", engram_model::size::one_line(&message));
            code
        }
    }
}

/// An error as the user sees it: each cause's first line, the engine's
/// wasm backtrace left out; everything with `--verbose`.
pub fn shown(error: &anyhow::Error) -> String {
    if VERBOSE.load(std::sync::atomic::Ordering::Relaxed) {
        return format!("{error:?}");
    }
    let mut parts: Vec<String> = Vec::new();
    for cause in error.chain() {
        let text = cause.to_string();
        let first = text.lines().next().unwrap_or("").trim().to_owned();
        if first.is_empty() || first.starts_with("error while executing at wasm backtrace") {
            continue;
        }
        // anyhow repeats a source's text in a context that formats it in.
        if parts.last().is_some_and(|p| p.ends_with(&first)) {
            continue;
        }
        parts.push(first);
    }
    parts.join(": ")
}

fn run(cli: Cli) -> Result<u8, Exit> {
    match cli.command {
        Command::Write(io) => write(&cli.store, &io, Mode::Online),
        Command::Read(io) => {
            let requests: Vec<ReadRequest> = parse_input(&io, "read request")?;
            let mut domain = open_domain(&cli.store, cli.tier_ceiling, &io.agent, false)?;
            answer_each(requests, |request| {
                let answer = json::read_answer(domain.read(&request.into())?);
                let refused = matches!(answer, ReadAnswer::Error { .. });
                Ok((serde_json::to_string(&answer)?, refused))
            })
        }
        Command::Cycle {
            plan,
            agent,
            session,
            request_id,
            message,
            message_file,
            response,
            response_file,
            batch,
            token_budget,
        } => {
            let mut plan = parse_plan(&plan)?;
            if token_budget.is_some() {
                plan.metadata.token_budget = token_budget;
            }
            if let Some(batch) = batch {
                return cycle_batch(
                    &cli.store,
                    cli.tier_ceiling,
                    &agent,
                    &session,
                    &plan,
                    &batch,
                );
            }
            let input = TurnInput {
                user_message: text_input(message, message_file)?,
                model_response: text_input(response, response_file)?,
            };
            // What the plan's steps will need, checked before anything opens.
            use engram::cycle::{StepKind, SummarizeInput};
            let needs_message = !plan.steps.is_empty();
            let needs_response = plan
                .steps
                .iter()
                .any(|s| s.kind == StepKind::SummarizeMemory(SummarizeInput::Turn));
            if needs_message && input.user_message.is_none() {
                return Err(Exit(
                    2,
                    "the plan needs the user's message: give --message or --message-file".into(),
                ));
            }
            if needs_response && input.model_response.is_none() {
                return Err(Exit(2, "the plan summarizes the turn: give --response or --response-file (the model's answer)".into()));
            }
            let request_id =
                request_id.unwrap_or_else(|| format!("cycle-{}", engram::system_time_ms()));
            let mut domain = open_domain(&cli.store, cli.tier_ceiling, &agent, true)?;
            // Each line is printed as its stage ends: a line that cannot be
            // printed stops the cycle before it commits, as `write` and
            // `read` stop at an answer they cannot print.
            let stdout = std::io::stdout();
            let mut out = BufWriter::new(stdout.lock());
            run_cycle(
                &mut domain,
                &plan,
                &session,
                &request_id,
                &input,
                &mut |line| {
                    writeln!(out, "{line}")
                        .and_then(|()| out.flush())
                        .map_err(|e| Exit(FAILURE, format!("writing the answer: {e}")))
                },
            )
        }
        Command::Remember {
            message,
            response,
            agent,
            session,
            request_id,
            time,
        } => {
            let mut domain = open_domain(&cli.store, cli.tier_ceiling, &agent, true)?;
            let args = engram_model::turns::RememberArgs {
                message,
                response,
                session,
                request_id,
                time,
            };
            turn_answer(engram_model::turns::remember(&mut domain, args))
        }
        Command::Recall {
            question,
            agent,
            top_k,
            token_budget,
            request_id,
        } => {
            let mut domain = open_domain(&cli.store, cli.tier_ceiling, &agent, true)?;
            let args = engram_model::turns::RecallArgs {
                question,
                top_k,
                token_budget,
                request_id,
            };
            turn_answer(engram_model::turns::recall(&mut domain, args))
        }
        Command::Demo {
            question,
            token_budget,
        } => demo(&cli.store, &question, token_budget),
        Command::Traverse {
            start,
            agent,
            depth_first,
            incoming,
            types,
            valid_at,
            max_depth,
            max_nodes,
            max_edges,
        } => {
            use engram::graph::{EdgeDirection, TraversalOrder, TraverseRequest};
            let mut domain = open_domain(&cli.store, cli.tier_ceiling, &agent, false)?;
            let request = TraverseRequest {
                request_id: format!("traverse-{}", engram::system_time_ms()),
                start,
                order: if depth_first {
                    TraversalOrder::DepthFirst
                } else {
                    TraversalOrder::BreadthFirst
                },
                direction: if incoming {
                    EdgeDirection::Incoming
                } else {
                    EdgeDirection::Outgoing
                },
                relationship_types: types,
                valid_at,
                max_depth,
                max_nodes,
                max_edges,
            };
            let (line, refused) =
                json::traversal_answer(domain.traverse(&request).map_err(failure)?);
            print_lines(vec![line.to_string()])?;
            Ok(if refused { REFUSED } else { OK })
        }
        Command::List {
            namespace,
            agent,
            limit,
            after,
        } => {
            let mut domain = open_domain(&cli.store, cli.tier_ceiling, &agent, false)?;
            let request_id = format!("list-{}", engram::system_time_ms());
            print_facts(
                domain
                    .list_after(&request_id, &namespace, limit, after.as_deref())
                    .map_err(failure)?,
            )
        }
        Command::Entities {
            entity_type,
            agent,
            limit,
        } => {
            use engram::types::EntityType;
            // clap has checked the name.
            let entity_type = parse_entity_type(&entity_type).unwrap_or(EntityType::Event);
            let mut domain = open_domain(&cli.store, cli.tier_ceiling, &agent, false)?;
            let request_id = format!("entities-{}", engram::system_time_ms());
            print_facts(
                domain
                    .entities_of_type(&request_id, entity_type, limit)
                    .map_err(failure)?,
            )
        }
        Command::Relationships {
            entity,
            agent,
            incoming,
            types,
            valid_at,
            limit,
        } => {
            let mut domain = open_domain(&cli.store, cli.tier_ceiling, &agent, false)?;
            let request = engram::graph::RelationshipsRequest {
                request_id: format!("relationships-{}", engram::system_time_ms()),
                entity,
                direction: if incoming {
                    engram::graph::EdgeDirection::Incoming
                } else {
                    engram::graph::EdgeDirection::Outgoing
                },
                relationship_types: types,
                valid_at,
                limit,
            };
            print_facts(domain.relationships_of(&request).map_err(failure)?)
        }
        Command::History { key, agent, limit } => {
            let mut domain = open_domain(&cli.store, cli.tier_ceiling, &agent, false)?;
            let request = engram::history::VersionsRequest {
                request_id: format!("history-{}", engram::system_time_ms()),
                key,
                limit,
            };
            let answer = domain.versions(&request).map_err(failure)?;
            print_facts(answer)
        }
        Command::AsOf {
            key,
            agent,
            valid,
            known,
            limit,
        } => {
            let (axis, at) = match (valid, known) {
                (Some(at), _) => (engram::history::TimeAxis::Valid, at),
                (None, Some(at)) => (engram::history::TimeAxis::Transaction, at),
                (None, None) => return Err(Exit(2, "give --valid or --known".into())),
            };
            let mut domain = open_domain(&cli.store, cli.tier_ceiling, &agent, false)?;
            let request = engram::history::AsOfRequest {
                request_id: format!("as-of-{}", engram::system_time_ms()),
                key,
                axis,
                at,
                limit,
            };
            let answer = domain.as_of(&request).map_err(failure)?;
            print_facts(answer.map(|found| found.into_iter().collect()))
        }
        Command::Maintenance(command) => maintenance::run(&cli.store, command),
        Command::Mcp { agent, http, tools } => {
            let domain = open_domain(&cli.store, cli.tier_ceiling, &agent, true)?;
            platform::mcp(domain, &agent, tools, http.as_deref()).map_err(failure)?;
            Ok(OK)
        }
        Command::Audit {
            agent,
            since,
            until,
            operation,
            outcome,
            limit,
        } => {
            let store = open_store(&cli.store, false)?;
            let query = AuditQuery {
                agent,
                since,
                until,
                operation,
                outcome,
                limit,
            };
            let entries =
                platform::audit_trail(&store, &query).map_err(|e| Exit(FAILURE, shown(&e)))?;
            let lines = entries
                .iter()
                .map(serde_json::to_string)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| Exit(FAILURE, e.to_string()))?;
            print_lines(lines)?;
            Ok(OK)
        }
    }
}

/// Prints FACT versions as a read answer: `{"records":[…]}` or `{"error":…}`.
fn print_facts(
    answer: Result<Vec<engram::types::StoredFact>, engram::io::ReadError>,
) -> Result<u8, Exit> {
    let answer = json::facts_answer(answer);
    let code = match answer {
        ReadAnswer::Error { .. } => REFUSED,
        ReadAnswer::Records { .. } => OK,
    };
    print_lines(vec![serde_json::to_string(&answer).map_err(failure)?])?;
    Ok(code)
}

/// An entity type by its seed name (MT-5).
pub(crate) fn parse_entity_type(name: &str) -> Option<engram::types::EntityType> {
    use engram::types::EntityType;
    Some(match name {
        "person" => EntityType::Person,
        "organization" => EntityType::Organization,
        "place" => EntityType::Place,
        "product" => EntityType::Product,
        "event" => EntityType::Event,
        _ => return None,
    })
}

/// A failure of the store or the engine, shown on one line (`--verbose`:
/// in full).
fn failure(e: impl Into<anyhow::Error>) -> Exit {
    Exit(FAILURE, shown(&e.into()))
}

fn parse_plan(path: &Path) -> Result<ExecutionPlan, Exit> {
    let name = path.display();
    let text =
        std::fs::read_to_string(path).map_err(|e| Exit(BAD_INPUT, format!("{name}: {e}")))?;
    let plan: Plan = serde_json::from_str(&text).map_err(|e| {
        Exit(
            BAD_INPUT,
            format!("{name}: not a valid execution plan: {e}"),
        )
    })?;
    Ok(plan.into())
}

fn text_input(text: Option<String>, file: Option<PathBuf>) -> Result<Option<String>, Exit> {
    match (text, file) {
        (Some(text), _) => Ok(Some(text)),
        (None, Some(path)) => std::fs::read_to_string(&path)
            .map(Some)
            .map_err(|e| Exit(BAD_INPUT, format!("{}: {e}", path.display()))),
        (None, None) => Ok(None),
    }
}

/// Runs a cycle stage by stage, a line per stage handed to `emit` as the
/// stage ends, then commits. A refused plan or a failed cycle is answered on
/// a line of its own with exit 1. An `emit` that fails ends the cycle at
/// once: before the commit, nothing is stored.
fn run_cycle(
    domain: &mut engram::Domain,
    plan: &ExecutionPlan,
    session: &str,
    request_id: &str,
    input: &TurnInput,
    emit: &mut dyn FnMut(serde_json::Value) -> Result<(), Exit>,
) -> Result<u8, Exit> {
    let cycle = match domain
        .begin_cycle(plan, session, request_id)
        .map_err(failure)?
    {
        Ok(cycle) => cycle,
        Err(error) => {
            emit(engram_model::turns::plan_refusal(
                &error.step,
                &error.rule,
                &error.kind,
            ))?;
            return Ok(REFUSED);
        }
    };
    let mut code = OK;
    let failed = |error: CycleError| engram_model::turns::cycle_refusal(&error);
    'stages: {
        for stage in json::Stage::ALL.map(Stage::from) {
            if !plan.steps.iter().any(|s| s.stage == stage) {
                continue;
            }
            match domain.run_stage(&cycle, stage, input).map_err(failure)? {
                Ok(results) => {
                    let steps: Vec<_> = results
                        .into_iter()
                        .map(|r| serde_json::json!({"step": r.step, "output": json::StepOutput::from(r.output)}))
                        .collect();
                    emit(
                        serde_json::json!({"stage": json::Stage::from(stage).name(), "steps": steps}),
                    )?;
                }
                Err(error) => {
                    emit(failed(error))?;
                    code = REFUSED;
                    break 'stages;
                }
            }
        }
        match domain.commit_cycle(&cycle).map_err(failure)? {
            Ok(ids) => emit(serde_json::json!({"committed": ids}))?,
            Err(error) => {
                emit(failed(error))?;
                code = REFUSED;
            }
        }
    }
    domain.drop_cycle(cycle).map_err(failure)?;
    Ok(code)
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
    store: &str,
    ceiling: PrivacyTier,
    agent: &str,
    session: &str,
    plan: &ExecutionPlan,
    path: &Path,
) -> Result<u8, Exit> {
    let io = Io {
        agent: agent.to_owned(),
        batch: true,
        file: Some(path.to_path_buf()),
    };
    let turns: Vec<BatchTurn> = parse_input(&io, "turn")?;
    use engram::cycle::{StepKind, SummarizeInput};
    let needs_response = plan
        .steps
        .iter()
        .any(|s| s.kind == StepKind::SummarizeMemory(SummarizeInput::Turn));
    if let Some(i) = turns
        .iter()
        .position(|t| needs_response && t.response.is_none())
    {
        return Err(Exit(
            BAD_INPUT,
            format!(
                "{}: turn {}: the plan summarizes the turn: give its \"response\"",
                path.display(),
                i + 1
            ),
        ));
    }
    let mut domain = open_domain(store, ceiling, agent, true)?;
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let mut code = OK;
    for turn in turns {
        domain.set_time(turn.timestamp.or(opening().now));
        let input = TurnInput {
            user_message: Some(turn.message),
            model_response: turn.response,
        };
        let session = turn.session.as_deref().unwrap_or(session);
        // The turn's last line is its outcome: committed ids or the error.
        let mut last = serde_json::Value::Null;
        let turn_code = run_cycle(
            &mut domain,
            plan,
            session,
            &turn.request_id,
            &input,
            &mut |line| {
                last = line;
                Ok(())
            },
        )?;
        let mut answer = serde_json::json!({"request_id": turn.request_id});
        if let (Some(answer), Some(outcome)) = (answer.as_object_mut(), last.as_object()) {
            answer.extend(outcome.clone());
        }
        writeln!(out, "{answer}")
            .and_then(|()| out.flush())
            .map_err(|e| Exit(FAILURE, format!("writing the answer: {e}")))?;
        if turn_code != OK {
            code = turn_code;
        }
        if turn_code == REFUSED && last.get("plan_error").is_some() {
            break; // the plan itself is refused: every turn would be
        }
    }
    domain.set_time(opening().now);
    Ok(code)
}

const CONVERSATION: &str = include_str!("../../../../samples/conversation.jsonl");
const DEMO_AGENT: &str = "demo";

#[derive(serde::Deserialize)]
struct Turn {
    session_ref: String,
    user: String,
    assistant: String,
}

/// Ingests the sample conversation (once per store), then selects context
/// for the question and assembles the prompt.
fn demo(store: &str, question: &str, token_budget: Option<u32>) -> Result<u8, Exit> {
    let mut domain = open_domain(store, PrivacyTier::Private, DEMO_AGENT, true)?;
    let latest = engram::io::ReadRequest {
        record_type: engram::types::RecordType::Event,
        selector: engram::io::ReadSelector::Latest(engram::io::Latest { limit: 1 }),
        request_id: "demo-check".into(),
    };
    let ingested = domain
        .read(&latest)
        .map_err(failure)?
        .map(|r| !r.records.is_empty())
        .unwrap_or(false);
    let ingest = engram::plans::ingest();
    if ingested {
        println!("# the sample conversation is already in {}", store);
    } else {
        println!(
            "# ingesting the sample conversation into {} (agent \"{DEMO_AGENT}\")",
            store
        );
        for (i, line) in CONVERSATION.lines().enumerate() {
            let turn: Turn = serde_json::from_str(line).map_err(failure)?;
            let input = TurnInput {
                user_message: Some(turn.user),
                model_response: Some(turn.assistant),
            };
            let mut lines = Vec::new();
            let code = run_cycle(
                &mut domain,
                &ingest,
                &turn.session_ref,
                &format!("demo-turn-{i}"),
                &input,
                &mut |line| {
                    lines.push(line.to_string());
                    Ok(())
                },
            )?;
            print_lines(lines)?;
            if code != OK {
                return Ok(code);
            }
        }
    }
    let mut recall = engram::plans::recall(3);
    recall.metadata.token_budget = token_budget;
    println!("# question: {question}");
    let cycle = match domain
        .begin_cycle(&recall, "demo", "demo-question")
        .map_err(failure)?
    {
        Ok(cycle) => cycle,
        Err(error) => {
            return Err(failure(anyhow::anyhow!(
                "the demo plan was refused: {error:?}"
            )));
        }
    };
    let input = TurnInput {
        user_message: Some(question.into()),
        model_response: None,
    };
    for stage in [Stage::ContextSelect, Stage::PromptAssemble] {
        if let Err(error) = domain.run_stage(&cycle, stage, &input).map_err(failure)? {
            println!("{}", engram_model::turns::cycle_refusal(&error));
            return Ok(REFUSED);
        }
    }
    let output =
        |domain: &mut engram::Domain, name: &str| domain.step_output(&cycle, name).map_err(failure);
    if let Some(selected) = output(&mut domain, "select")? {
        println!("# ContextSelect");
        println!(
            "{}",
            serde_json::to_string_pretty(&json::StepOutput::from(selected)).map_err(failure)?
        );
    }
    if let Some(StepOutput::Prompt(prompt)) = output(&mut domain, "prompt")? {
        println!("# PromptAssemble\n{}", prompt.text);
        if prompt.left_out > 0 {
            println!("# the token budget left out {}", prompt.left_out);
        }
    }
    domain.drop_cycle(cycle).map_err(failure)?;
    Ok(OK)
}

/// Reads and parses every request before any is run, so malformed input
/// changes nothing.
fn parse_input<T: DeserializeOwned>(io: &Io, what: &str) -> Result<Vec<T>, Exit> {
    let (name, bytes) = match io.file.as_deref() {
        None => ("standard input".to_string(), read_stdin()?),
        Some(path) if path == Path::new("-") => ("standard input".to_string(), read_stdin()?),
        Some(path) => {
            let name = path.display().to_string();
            let bytes = std::fs::read(path).map_err(|e| Exit(BAD_INPUT, format!("{name}: {e}")))?;
            (name, bytes)
        }
    };
    let at = |line: Option<usize>| line.map(|n| format!(" line {n}:")).unwrap_or_default();
    let parse = |line: Option<usize>, bytes: &[u8]| -> Result<T, Exit> {
        let text = std::str::from_utf8(bytes).map_err(|e| {
            Exit(
                BAD_INPUT,
                format!(
                    "{name}:{} not UTF-8 text (at byte {})",
                    at(line),
                    e.valid_up_to()
                ),
            )
        })?;
        serde_json::from_str(text).map_err(|e| {
            Exit(
                BAD_INPUT,
                format!("{name}:{} not a valid {what}: {e}", at(line)),
            )
        })
    };
    if !io.batch {
        return parse(None, &bytes).map(|r| vec![r]);
    }
    bytes
        .split(|b| *b == b'\n')
        .enumerate()
        .filter(|(_, line)| !line.trim_ascii().is_empty())
        .map(|(i, line)| parse(Some(i + 1), line))
        .collect()
}

fn read_stdin() -> Result<Vec<u8>, Exit> {
    let mut bytes = Vec::new();
    std::io::stdin()
        .read_to_end(&mut bytes)
        .map_err(|e| Exit(BAD_INPUT, format!("standard input: {e}")))?;
    Ok(bytes)
}

/// Writes each request in a domain opened in `mode` (IO-W7).
fn write(store: &str, io: &Io, mode: Mode) -> Result<u8, Exit> {
    let requests: Vec<WriteRequest> = parse_input(io, "write request")?;
    let store = open_store(store, true)?;
    let mut domain = open_in(&store, &io.agent, mode, PrivacyTier::Private)
        .map_err(|e| Exit(FAILURE, shown(&e)))?;
    answer_each(requests, |request| {
        let answer = WriteAnswer::from(domain.write(&request.into())?);
        let refused = answer == WriteAnswer::Rejected;
        Ok((serde_json::to_string(&answer)?, refused))
    })
}

/// Opens the store `spec` names. A SQLite file that does not exist yet is
/// created only by commands that write; a URL (`postgres://…`) is opened by
/// every command, and its tables created if absent.
fn open_store(spec: &str, create: bool) -> Result<Store, Exit> {
    if !create && !spec.contains("://") && !Path::new(spec).exists() {
        return Err(Exit(
            FAILURE,
            format!("{spec}: no store here (write to it first, or pass --store)"),
        ));
    }
    platform::open_store(spec).map_err(|e| Exit(FAILURE, shown(&e)))
}

/// Opens an agent's domain online, its reads restricted to `ceiling`.
fn open_domain(
    spec: &str,
    ceiling: PrivacyTier,
    agent: &str,
    create: bool,
) -> Result<engram::Domain, Exit> {
    let store = open_store(spec, create)?;
    open_in(&store, agent, Mode::Online, ceiling).map_err(|e| Exit(FAILURE, shown(&e)))
}

/// Prints what `remember` or `recall` answered, or the contract's refusal
/// (exit code 1); a failure of the host is the error.
fn turn_answer<T: serde::Serialize>(
    answer: Result<T, engram_model::turns::TurnError<anyhow::Error>>,
) -> Result<u8, Exit> {
    use engram_model::turns::TurnError;
    match answer {
        Ok(answer) => {
            let line = serde_json::to_string(&answer)
                .map_err(|e| Exit(FAILURE, format!("writing the answer: {e}")))?;
            print_lines(vec![line])?;
            Ok(OK)
        }
        Err(TurnError::Refused(line)) => {
            print_lines(vec![line.to_string()])?;
            Ok(REFUSED)
        }
        Err(TurnError::Failed(error)) => Err(Exit(FAILURE, shown(&error))),
    }
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
pub(crate) fn parse_agent(text: &str) -> Result<String, String> {
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
fn parse_tier(text: &str) -> Result<PrivacyTier, String> {
    match text {
        "public" => Ok(PrivacyTier::Public),
        "sensitive" => Ok(PrivacyTier::Sensitive),
        "private" => Ok(PrivacyTier::Private),
        _ => Err(format!("{text:?} is not public, sensitive or private")),
    }
}

/// Parses a value named by its upper-case JSON name (`WRITE`, `ACCEPTED`).
fn parse_upper<T: DeserializeOwned>(text: &str) -> Result<T, String> {
    serde_json::from_value(serde_json::Value::String(text.to_ascii_uppercase()))
        .map_err(|_| format!("unknown value {text:?}"))
}

/// Runs each request in order and prints its answer on a line of its own.
fn answer_each<T>(
    requests: Vec<T>,
    mut answer: impl FnMut(T) -> anyhow::Result<(String, bool)>,
) -> Result<u8, Exit> {
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let mut code = OK;
    for request in requests {
        let (line, refused) = answer(request).map_err(|e| Exit(FAILURE, shown(&e)))?;
        writeln!(out, "{line}")
            .and_then(|()| out.flush())
            .context("writing the answer")
            .map_err(|e| Exit(FAILURE, shown(&e)))?;
        if refused {
            code = REFUSED;
        }
    }
    Ok(code)
}

fn print_lines(lines: Vec<String>) -> Result<(), Exit> {
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    for line in lines {
        writeln!(out, "{line}").map_err(|e| Exit(FAILURE, format!("writing the answer: {e}")))?;
    }
    out.flush()
        .map_err(|e| Exit(FAILURE, format!("writing the answer: {e}")))
}
