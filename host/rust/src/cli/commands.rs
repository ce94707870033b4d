//! The commands on one agent's domain, a function each: `write` and `read`
//! (the IO contract), `remember` and `recall` (a turn), the lookups
//! (`history`, `as-of`, `list`, `entities`, `relationships`, `traverse`,
//! answered through the call surface every host shares:
//! [`engram_surface::Engine`]), `audit`, `mcp` and `serve`.

use super::args::{
    AsOfArgs, AuditArgs, EntitiesArgs, HistoryArgs, Io, ListArgs, McpArgs, RecallArgs,
    RelationshipsArgs, RememberArgs, ServeArgs, TokenArgs, TraverseArgs,
};
use super::output::{answer_each, committed_unprinted, parse_input, print_answer, print_read};
use super::{
    BAD_INPUT, Exit, FAILURE, Global, OK, USAGE, failure, open_domain, open_in, open_store,
};
use crate::binding as engram;
use crate::platform;
use engram::json::{self, ReadRequest, WriteAnswer, WriteRequest};
use engram::types::PrivacyTier;
use engram::{AuditQuery, Mode};
use engram_surface::calls;
use engram_surface::turns::TurnError;
use engram_surface::{Axis, Engine};

/// The request id of a lookup made from the command line: the call's name
/// and the clock.
fn stamp(call: &str) -> String {
    format!("{call}-{}", engram::system_time_ms())
}

/// Writes each request in a domain opened in `mode` (IO-W7).
pub(super) fn write(store: &str, io: &Io, mode: Mode) -> Result<u8, Exit> {
    let requests: Vec<WriteRequest> = parse_input(io, "write request")?;
    let store = open_store(store, true)?;
    let mut domain = open_in(&store, &io.agent, mode, PrivacyTier::Private)?;
    answer_each(requests, |request| {
        let request_id = request.request_id.clone();
        let answer = WriteAnswer::from(domain.write(&request.into())?);
        let refused = answer == WriteAnswer::Rejected;
        let committed = (!refused).then_some(request_id);
        Ok((serde_json::to_string(&answer)?, refused, committed))
    })
}

/// Reads: an answer line a request.
pub(super) fn read(global: &Global, io: &Io) -> Result<u8, Exit> {
    let requests: Vec<ReadRequest> = parse_input(io, "read request")?;
    let mut domain = open_domain(global, &io.agent, false)?;
    answer_each(requests, |request| {
        let answer = Engine::read(&mut domain, request)?;
        let refused = matches!(answer, json::ReadAnswer::Error { .. });
        Ok((serde_json::to_string(&answer)?, refused, None))
    })
}

/// Remembers one turn: `{"request_id","committed":[…]}`.
pub(super) fn remember(global: &Global, args: RememberArgs) -> Result<u8, Exit> {
    let mut domain = open_domain(global, &args.agent, true)?;
    let args = engram_surface::turns::RememberArgs {
        message: args.message,
        response: args.response,
        session: args.session,
        request_id: args.request_id,
        time: args.time,
    };
    match engram_surface::turns::remember(&mut domain, args) {
        Ok(remembered) => {
            let line = serde_json::to_string(&remembered).map_err(failure)?;
            super::output::write_lines(vec![line])
                .map_err(|e| committed_unprinted(&remembered.request_id, e))?;
            Ok(OK)
        }
        Err(error) => turn_refusal(error),
    }
}

/// Recalls the memories that answer a question, and the prompt.
pub(super) fn recall(global: &Global, args: RecallArgs) -> Result<u8, Exit> {
    let mut domain = open_domain(global, &args.agent, true)?;
    let args = engram_surface::turns::RecallArgs {
        question: args.question,
        top_k: args.top_k,
        token_budget: args.token_budget,
        request_id: args.request_id,
    };
    match engram_surface::turns::recall(&mut domain, args) {
        Ok(recalled) => print_answer(serde_json::to_string(&recalled).map_err(failure)?, false),
        Err(error) => turn_refusal(error),
    }
}

/// Prints the contract's refusal of a turn (exit 1); a failure of the host
/// is the error.
fn turn_refusal(error: TurnError<anyhow::Error>) -> Result<u8, Exit> {
    match error {
        TurnError::Refused(line) => print_answer(line, true),
        TurnError::Failed(error) => Err(failure(error)),
    }
}

/// The versions of a FACT key, newest first (MT-2).
pub(super) fn history(global: &Global, args: HistoryArgs) -> Result<u8, Exit> {
    let mut domain = open_domain(global, &args.agent, false)?;
    let lookup = calls::HistoryArgs {
        request_id: None,
        key: args.key,
        limit: args.limit,
    };
    print_read(Engine::history(&mut domain, stamp("history"), lookup))
}

/// The version of a FACT key as of a time (MT-2).
pub(super) fn as_of(global: &Global, args: AsOfArgs) -> Result<u8, Exit> {
    let (axis, at) = match (args.valid, args.known) {
        (Some(at), _) => (Axis::Valid, at),
        (None, Some(at)) => (Axis::Known, at),
        (None, None) => return Err(Exit(USAGE, "give --valid or --known".into())),
    };
    let mut domain = open_domain(global, &args.agent, false)?;
    let lookup = calls::AsOfArgs {
        request_id: None,
        key: args.key,
        valid: args.valid,
        known: args.known,
        limit: args.limit,
    };
    print_read(Engine::as_of(&mut domain, stamp("as-of"), lookup, axis, at))
}

/// The current FACTs of a namespace, in key order (MT-7).
pub(super) fn list(global: &Global, args: ListArgs) -> Result<u8, Exit> {
    let mut domain = open_domain(global, &args.agent, false)?;
    let lookup = calls::ListArgs {
        request_id: None,
        namespace: args.namespace,
        limit: args.limit,
        after: args.after,
    };
    print_read(Engine::list(&mut domain, stamp("list"), lookup))
}

/// The current entities of one type (MT-8).
pub(super) fn entities(global: &Global, args: EntitiesArgs) -> Result<u8, Exit> {
    // clap has checked the name against the five.
    let entity_type = serde_json::from_value(serde_json::Value::String(args.entity_type))
        .map_err(|e| Exit(USAGE, e.to_string()))?;
    let mut domain = open_domain(global, &args.agent, false)?;
    let lookup = calls::EntitiesArgs {
        request_id: None,
        entity_type,
        limit: args.limit,
    };
    print_read(Engine::entities(&mut domain, stamp("entities"), lookup))
}

/// The current relationships of an entity (MT-8).
pub(super) fn relationships(global: &Global, args: RelationshipsArgs) -> Result<u8, Exit> {
    let mut domain = open_domain(global, &args.agent, false)?;
    let lookup = calls::RelationshipsArgs {
        request_id: None,
        entity: args.entity,
        incoming: args.incoming,
        types: args.types,
        valid_at: args.valid_at,
        limit: args.limit,
    };
    print_read(Engine::relationships(
        &mut domain,
        stamp("relationships"),
        lookup,
    ))
}

/// A bounded walk of the graph from an entity (MT-9).
pub(super) fn traverse(global: &Global, args: TraverseArgs) -> Result<u8, Exit> {
    let mut domain = open_domain(global, &args.agent, false)?;
    let lookup = calls::TraverseArgs {
        request_id: None,
        start: args.start,
        depth_first: args.depth_first,
        incoming: args.incoming,
        types: args.types,
        valid_at: args.valid_at,
        max_depth: args.max_depth,
        max_nodes: args.max_nodes,
        max_edges: args.max_edges,
    };
    let line = Engine::traverse(&mut domain, stamp("traverse"), lookup).map_err(failure)?;
    let refused = line.get("error").is_some();
    print_answer(line, refused)
}

/// Serves one agent's domain to an MCP client until it goes.
pub(super) fn mcp(global: &Global, args: McpArgs) -> Result<u8, Exit> {
    let tokens = tokens(&args.tokens)?;
    if tokens.is_some() && args.http.is_none() {
        return Err(Exit(
            USAGE,
            "tokens are for --http: over stdio the client is the process that started the server"
                .into(),
        ));
    }
    let domain = open_domain(global, &args.agent, true)?;
    platform::mcp(
        domain,
        &args.agent,
        args.tools,
        args.http.as_deref(),
        tokens,
    )
    .map_err(failure)?;
    Ok(OK)
}

/// The environment variable that may hold a server's tokens themselves.
const TOKENS_VAR: &str = "ENGRAM_TOKENS";

/// A server's tokens: from the file `--tokens` names, or the variable
/// `ENGRAM_TOKENS`; none when neither is given.
fn tokens(args: &TokenArgs) -> Result<Option<engram_http::Tokens>, Exit> {
    let variable = std::env::var(TOKENS_VAR)
        .ok()
        .filter(|text| !text.trim().is_empty());
    let (source, text) = match (&args.file, variable) {
        (Some(_), Some(_)) => {
            return Err(Exit(
                USAGE,
                format!("the tokens come from --tokens FILE or {TOKENS_VAR}, not both"),
            ));
        }
        (Some(path), None) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| Exit(BAD_INPUT, format!("{}: {e}", path.display())))?;
            (path.display().to_string(), text)
        }
        (None, Some(text)) => (TOKENS_VAR.to_string(), text),
        (None, None) => return Ok(None),
    };
    engram_http::Tokens::parse(&source, &text)
        .map(Some)
        .map_err(|e| Exit(BAD_INPUT, e))
}

/// Serves the HTTP API over the store until interrupted.
pub(super) fn serve(global: &Global, args: ServeArgs) -> Result<u8, Exit> {
    let tokens = tokens(&args.tokens)?;
    let store = open_store(&global.store, true)?;
    let limits = engram_http::Limits {
        max_body_bytes: args.max_body_bytes,
        max_calls: args.max_calls,
        max_waiting: args.max_waiting,
        wait: std::time::Duration::from_millis(args.wait),
        max_agents: args.max_agents,
    };
    platform::serve(&store, &args.addr, tokens, args.clock_from_request, limits)
        .map_err(failure)?;
    Ok(OK)
}

/// Prints the audit trail's newest entries that match, oldest first.
pub(super) fn audit(store: &str, args: AuditArgs) -> Result<u8, Exit> {
    let store = open_store(store, false)?;
    let query = AuditQuery {
        agent: args.agent,
        since: args.since,
        until: args.until,
        operation: args.operation,
        outcome: args.outcome,
        limit: args.limit,
    };
    let entries = platform::audit_trail(&store, &query).map_err(failure)?;
    let lines = entries
        .iter()
        .map(serde_json::to_string)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Exit(FAILURE, e.to_string()))?;
    super::output::print_lines(lines)?;
    Ok(OK)
}
