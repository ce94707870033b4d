//! `engram serve`: the HTTP API (docs/http.md) over a SQLite file or a
//! PostgreSQL database, served by this process. Routes, tokens, bodies and
//! answers are decided by `engram-http`, as every server of the API does;
//! this module runs the calls: each agent's calls one at a time, in the
//! order they came (a domain has one writer in a process), different
//! agents' at once. Several processes on one PostgreSQL database serve one
//! memory, as any hosts sharing it do.
//!
//! Limits (each refused before any domain sees the call): a body larger
//! than `max_body_bytes` (413), a body that does not arrive within `wait`
//! (408), more than `max_calls` calls under way (503, `retry-after`), more
//! than `max_waiting` calls waiting for one agent (429), a call that waits
//! `wait` for its agent in vain (503). A call that has begun runs to its
//! end whatever the client does: it commits whole or not at all.

use crate::surface::{self, Failure};
use crate::types::PrivacyTier;
use crate::{Domain, Engram, Mode, Storage};
use anyhow::{Context, Result};
use axum::extract::{Request, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use engram_http::calls::{self, Call, Shape};
use engram_http::{Answer, Limits, Refusal, Route, Token, Tokens};
use engram_surface::Session;
use std::collections::HashMap;
use std::io::Write as _;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// How `engram serve` serves.
pub struct Options {
    /// Where it listens (IP:PORT; port 0 picks one).
    pub addr: String,
    /// Its tokens; none: it authenticates nobody, which only a loopback
    /// address allows.
    pub tokens: Option<Tokens>,
    /// Whether a call's body may say the time it runs at (`now`): tests
    /// only.
    pub clock_from_request: bool,
    /// Its limits.
    pub limits: Limits,
}

/// One agent's open domains, by how they were opened.
#[derive(Default)]
struct Agent {
    online: HashMap<(String, Option<u64>, bool), Session<Domain>>,
}

/// An agent's place: its domains, and how many calls wait for them.
struct Slot {
    agent: Arc<tokio::sync::Mutex<Agent>>,
    waiting: AtomicUsize,
    used: Mutex<Instant>,
}

/// What every call shares.
struct Shared {
    store: Storage,
    engine: &'static Engram,
    /// The model of the engine's embedder, if it has one.
    model: Option<String>,
    tokens: Option<Tokens>,
    options: Options,
    agents: Mutex<HashMap<String, Arc<Slot>>>,
    calls: tokio::sync::Semaphore,
}

/// Serves the API over `store` with `engine` until interrupted (Ctrl-C or
/// SIGTERM: `engram_mcp::stop_signal`), then lets the calls under way end.
pub fn serve(store: Storage, engine: &'static Engram, mut options: Options) -> Result<()> {
    let address: SocketAddr = options
        .addr
        .parse()
        .with_context(|| format!("--addr {}: not an address (IP:PORT)", options.addr))?;
    if options.tokens.is_none() {
        anyhow::ensure!(
            address.ip().is_loopback(),
            "--addr {address}: a server with no tokens (--tokens FILE or ENGRAM_TOKENS) serves a loopback address only"
        );
    }
    let model = engine.embedder_model().map(|model| model.name);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let shared = Arc::new(Shared {
        store,
        engine,
        model,
        tokens: options.tokens.take(),
        calls: tokio::sync::Semaphore::new(options.limits.max_calls),
        options,
        agents: Mutex::new(HashMap::new()),
    });
    let served = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .with_context(|| format!("--addr {address}"))?;
        let address = listener.local_addr()?;
        let mut stderr = std::io::stderr();
        match &shared.tokens {
            Some(tokens) => {
                let _ = writeln!(
                    stderr,
                    "engram serve: http://{address} ({} tokens)",
                    tokens.len()
                );
            }
            None => {
                let _ = writeln!(
                    stderr,
                    "engram serve: http://{address}\nengram serve: NO TOKENS: this server authenticates nobody; anyone on this machine may read, write and forget every agent's memory (give --tokens FILE or ENGRAM_TOKENS)"
                );
            }
        }
        let app = axum::Router::new()
            .fallback(handle)
            .with_state(shared.clone());
        axum::serve(listener, app)
            .with_graceful_shutdown(engram_mcp::stop_signal())
            .await?;
        anyhow::Ok(())
    });
    drop(runtime);
    served
}

/// Answers one request.
async fn handle(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    answer(&shared, request).await.into_response()
}

async fn answer(shared: &Arc<Shared>, request: Request) -> Answer {
    let (parts, body) = request.into_parts();
    let (route, token) = match admitted(shared, &parts) {
        Ok(admitted) => admitted,
        Err(refusal) => return refusal.into(),
    };
    let Ok(_permit) = shared.calls.try_acquire() else {
        return busy(shared).into();
    };
    let body = match body_of(shared, body).await {
        Ok(body) => body,
        Err(refusal) => return refusal.into(),
    };
    let Ok(body) = std::str::from_utf8(&body) else {
        return Refusal::input("the body is not UTF-8").into();
    };
    let level = route.level();
    // The audit trail keeps who made the calls: the token's name.
    let caller = token.map(|token| token.name().to_owned());
    match route {
        Route::Agent { agent, op } => {
            match calls::call(&agent, op, body, shared.options.clock_from_request) {
                Ok(call) => run(shared, agent, call, caller).await,
                Err(refusal) => refusal.into(),
            }
        }
        Route::Across { op } => {
            let across = match calls::across(op, body) {
                Ok(across) => across,
                Err(refusal) => return refusal.into(),
            };
            if let Some(token) = token
                && let Err(refusal) = token.permits(level, across.agents.iter().map(String::as_str))
            {
                return refusal.into();
            }
            run_across(shared, across, caller).await
        }
    }
}

/// The request's route and its token (none when the server takes none),
/// if the token may make the call: 404, 401 or 403 otherwise.
fn admitted<'a>(
    shared: &'a Shared,
    parts: &axum::http::request::Parts,
) -> Result<(Route, Option<&'a Token>), Refusal> {
    let route = engram_http::route(parts.method.as_str(), parts.uri.path(), parts.uri.query())?;
    let authorization = parts
        .headers
        .get(header::AUTHORIZATION)
        .map(|value| value.to_str().unwrap_or("\u{fffd}"));
    let token = match &shared.tokens {
        None => None,
        Some(tokens) => Some(tokens.authenticate(authorization)?),
    };
    if let Some(token) = token {
        token.permits(route.level(), route.agent())?;
    }
    Ok((route, token))
}

/// 503: the server makes as many calls at once as it takes.
fn busy(shared: &Shared) -> Refusal {
    Refusal::new(
        503,
        "host_error",
        format!(
            "the server has {} calls under way, as many as it takes: try again",
            shared.options.limits.max_calls
        ),
    )
    .with_header("retry-after", "1")
}

/// The request's body, within the limits' wait and size: 408 or 413
/// otherwise.
async fn body_of(shared: &Shared, body: axum::body::Body) -> Result<axum::body::Bytes, Refusal> {
    let limits = &shared.options.limits;
    match tokio::time::timeout(
        limits.wait,
        axum::body::to_bytes(body, limits.max_body_bytes),
    )
    .await
    {
        Err(_) => Err(Refusal::new(
            408,
            "input_error",
            format!("the body did not arrive within {} s", limits.wait.as_secs()),
        )),
        Ok(Err(_)) => Err(Refusal::new(
            413,
            "input_error",
            format!(
                "the body is larger than {} bytes, or was cut off",
                limits.max_body_bytes
            ),
        )),
        Ok(Ok(body)) => Ok(body),
    }
}

/// Runs a call across agents, one agent's call after another: their
/// answers joined, or the first that is not a success.
async fn run_across(shared: &Arc<Shared>, across: calls::Across, caller: Option<String>) -> Answer {
    let mut answers = Vec::new();
    for (agent, op, body) in across.calls {
        let answer = match calls::call(&agent, op, &body, shared.options.clock_from_request) {
            Ok(call) => run(shared, agent, call, caller.clone()).await,
            Err(refusal) => refusal.into(),
        };
        if answer.status != 200 {
            return answer;
        }
        answers.push(answer.body);
    }
    Answer::ok(200, calls::joined(across.joined, &answers))
}

/// Runs `call` of `caller` (a token's name) in `agent`'s domain, after the
/// calls of the agent before it.
async fn run(shared: &Arc<Shared>, agent: String, call: Call, caller: Option<String>) -> Answer {
    let embedder = match call.embedder.resolve(shared.model.as_deref()) {
        Ok(embedder) => embedder,
        Err(refusal) => return refusal.into(),
    };
    let slot = shared.slot(&agent);
    if slot.waiting.fetch_add(1, Ordering::SeqCst) >= shared.options.limits.max_waiting {
        slot.waiting.fetch_sub(1, Ordering::SeqCst);
        return Refusal::new(
            429,
            "host_error",
            format!(
                "{} calls already wait for the agent {agent:?}: try again",
                shared.options.limits.max_waiting
            ),
        )
        .with_header("retry-after", "1")
        .into();
    }
    let locked =
        tokio::time::timeout(shared.options.limits.wait, slot.agent.clone().lock_owned()).await;
    slot.waiting.fetch_sub(1, Ordering::SeqCst);
    let Ok(mut held) = locked else {
        return Refusal::new(
            503,
            "host_error",
            format!(
                "the agent {agent:?} was busy for {} s: try again",
                shared.options.limits.wait.as_secs()
            ),
        )
        .with_header("retry-after", "1")
        .into();
    };
    let shared = shared.clone();
    // The call runs to its end on a thread of its own, whatever becomes of
    // the request.
    let ran = tokio::task::spawn_blocking(move || {
        let answer = execute(&shared, &mut held, &agent, (&call, caller), embedder);
        drop(held);
        answer
    })
    .await;
    match ran {
        Ok(answer) => answer,
        Err(e) => Refusal::new(500, "host_error", format!("the call did not end: {e}")).into(),
    }
}

impl Shared {
    /// The slot of `agent`, made at its first call; the least recently
    /// used idle agents' domains closed beyond `max_agents`.
    fn slot(&self, agent: &str) -> Arc<Slot> {
        let mut agents = self.agents.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(slot) = agents.get(agent) {
            *slot.used.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
            return slot.clone();
        }
        while agents.len() >= self.options.limits.max_agents {
            let idle = agents
                .iter()
                .filter(|(_, slot)| Arc::strong_count(slot) == 1)
                .min_by_key(|(_, slot)| *slot.used.lock().unwrap_or_else(|e| e.into_inner()))
                .map(|(name, _)| name.clone());
            match idle {
                Some(name) => {
                    agents.remove(&name);
                }
                None => break,
            }
        }
        let slot = Arc::new(Slot {
            agent: Arc::new(tokio::sync::Mutex::new(Agent::default())),
            waiting: AtomicUsize::new(0),
            used: Mutex::new(Instant::now()),
        });
        agents.insert(agent.to_string(), slot.clone());
        slot
    }
}

/// The engine's tier of its name.
fn tier(name: &str) -> PrivacyTier {
    match name {
        "public" => PrivacyTier::Public,
        "sensitive" => PrivacyTier::Sensitive,
        _ => PrivacyTier::Private,
    }
}

/// Runs `call` of `caller` in `agent`'s domain, held.
fn execute(
    shared: &Shared,
    held: &mut Agent,
    agent: &str,
    (call, caller): (&Call, Option<String>),
    embedder: bool,
) -> Answer {
    let failed = |error: anyhow::Error| Answer::from(calls::failure(&Failure::of(&error).framed()));
    let open =
        |mode: Mode, ceiling: PrivacyTier, expire_after: Option<u64>| -> Result<Session<Domain>> {
            let domain = shared
                .engine
                .open(
                    agent,
                    mode,
                    shared.store.backend.clone(),
                    shared.store.audit.clone(),
                )?
                .restrict_to(ceiling);
            let mut domain = if embedder {
                domain
            } else {
                domain.with_embedder(None)?
            };
            domain.set_expire_after(expire_after);
            Ok(Session::new(domain))
        };
    let mut maintenance;
    let session = match &call.mode {
        calls::Mode::Online {
            tier_ceiling,
            expire_after,
        } => {
            let key = (tier_ceiling.clone(), *expire_after, embedder);
            match held.online.entry(key) {
                std::collections::hash_map::Entry::Occupied(kept) => kept.into_mut(),
                std::collections::hash_map::Entry::Vacant(place) => {
                    match open(Mode::Online, tier(tier_ceiling), *expire_after) {
                        Ok(session) => place.insert(session),
                        Err(e) => return failed(e),
                    }
                }
            }
        }
        calls::Mode::Maintenance => {
            maintenance = match open(Mode::Maintenance, PrivacyTier::Private, None) {
                Ok(session) => session,
                Err(e) => return failed(e),
            };
            &mut maintenance
        }
    };
    session.engine().set_time(call.now);
    session.engine().set_caller(caller.as_deref());
    let answer = if call.shape == Shape::Export {
        export(shared, session, agent)
    } else {
        surface::answer(
            session,
            &shared.store,
            agent,
            call.name,
            &call.input,
            &call.args,
        )
        .map(|answer| {
            let (status, body) = calls::answer(call.shape, &answer.framed());
            Answer::ok(status, body)
        })
    };
    session.engine().set_time(None);
    session.engine().set_caller(None);
    answer.unwrap_or_else(failed)
}

/// Every export page of `agent`'s domain, open for maintenance in
/// `session`: one array of its lines.
fn export(shared: &Shared, session: &mut Session<Domain>, agent: &str) -> Result<Answer> {
    let mut lines = Vec::new();
    let mut start: Option<String> = None;
    loop {
        let framed = surface::answer(
            session,
            &shared.store,
            agent,
            "export",
            "",
            &calls::export_args(start.as_deref()),
        )?
        .framed();
        let (status, body) = calls::answer(Shape::Value, &framed);
        if status != 200 {
            return Ok(Answer::ok(status, body));
        }
        let (page, next) = calls::export_page(&body).map_err(anyhow::Error::msg)?;
        lines.extend(page.into_iter().map(|line| line.get().to_string()));
        match next {
            Some(next) => start = Some(next),
            None => break,
        }
    }
    Ok(Answer::ok(200, format!("[{}]", lines.join(","))))
}
