//! The HTTP front of `engram-http.wasm`: the HTTP API (docs/http.md) as a
//! `wasi:http` proxy. Each request is routed, authenticated and prepared by
//! `engram-http`, as every server of the API does, and made in its agent's
//! domain through the engine and the WASI SQLite provider it is composed
//! with (`engram-wasi`).
//!
//! Configured by the environment the runtime gives it (`wasmtime serve
//! -Scli --env …`): `ENGRAM_STORE` (the SQLite file, in a preopened folder;
//! `engram.db`), `ENGRAM_TOKENS` (the tokens' lines) or `ENGRAM_TOKENS_FILE`
//! (a file of them), and `ENGRAM_CLOCK_FROM_REQUEST=on` (tests only).
//!
//! **One writer.** A `wasi:http` runtime runs an instance per request, in
//! parallel, and WASI files have no locks. So each request holds the
//! store's lock file (`<store>.lock`, made with an exclusive create) from
//! before the store is opened until its answer is made: requests on one
//! store run one at a time, in any number of instances, and a request that
//! waits longer than the limits' `wait` is answered 503. A lock file older
//! than [`STALE`] was left by a server killed mid-request: the next request
//! removes it (SQLite's journal recovers the store as after a crash).

use engram_http::calls::{self, Call, Shape};
use engram_http::{Answer, Limits, Refusal, Route, Token, Tokens};
use engram_model::audit::AuditQuery;
use engram_surface::Session;
use engram_wasi_guest::binding::Domain;
use engram_wasi_guest::host_store;
use engram_wasi_guest::types::PrivacyTier;
use engram_wasi_guest::wit::domain::AccessMode;
use std::time::{Duration, Instant, SystemTime};
use wasi::http::types::{
    Fields, IncomingRequest, Method, OutgoingBody, OutgoingResponse, ResponseOutparam,
};
use wasi::io::streams::StreamError;

wasi::http::proxy::export!(Front);

/// How old a lock file is when its request is surely gone.
const STALE: Duration = Duration::from_secs(120);

/// The component's export.
struct Front;

impl wasi::exports::http::incoming_handler::Guest for Front {
    fn handle(request: IncomingRequest, out: ResponseOutparam) {
        let answer = answer(request);
        respond(out, answer);
    }
}

fn host_error(why: impl std::fmt::Display) -> Answer {
    Refusal::new(500, "host_error", why.to_string()).into()
}

/// Sends `answer`.
fn respond(out: ResponseOutparam, answer: Answer) {
    let mut headers = vec![("content-type".to_string(), b"application/json".to_vec())];
    headers.extend(
        answer
            .headers
            .into_iter()
            .map(|(name, value)| (name.to_owned(), value.into_bytes())),
    );
    let response = match Fields::from_list(&headers) {
        Ok(fields) => OutgoingResponse::new(fields),
        Err(_) => OutgoingResponse::new(Fields::new()),
    };
    let _ = response.set_status_code(answer.status);
    let Ok(body) = response.body() else {
        return;
    };
    ResponseOutparam::set(out, Ok(response));
    if let Ok(stream) = body.write() {
        for chunk in answer.body.as_bytes().chunks(4096) {
            if stream.blocking_write_and_flush(chunk).is_err() {
                break;
            }
        }
        drop(stream);
    }
    let _ = OutgoingBody::finish(body, None);
}

/// The value of the environment variable `name`, if set and not empty.
fn var(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .filter(|value| !value.trim().is_empty())
}

/// The server's tokens, from `ENGRAM_TOKENS` or the file `ENGRAM_TOKENS_FILE`
/// names; an error when there are none (this server never runs without).
fn tokens() -> Result<Tokens, String> {
    match (var("ENGRAM_TOKENS"), var("ENGRAM_TOKENS_FILE")) {
        (Some(_), Some(_)) => {
            Err("the tokens come from ENGRAM_TOKENS or ENGRAM_TOKENS_FILE, not both".into())
        }
        (Some(text), None) => Tokens::parse("ENGRAM_TOKENS", &text),
        (None, Some(path)) => {
            let text = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
            Tokens::parse(&path, &text)
        }
        (None, None) => Tokens::parse("ENGRAM_TOKENS", ""),
    }
}

/// The request's body, at most `limit` bytes: 413 beyond.
fn body(request: &IncomingRequest, limit: usize) -> Result<String, Answer> {
    let incoming = request
        .consume()
        .map_err(|()| host_error("the request's body was taken"))?;
    let stream = incoming
        .stream()
        .map_err(|()| host_error("the request's body has no stream"))?;
    let mut bytes = Vec::new();
    loop {
        match stream.blocking_read(16 * 1024) {
            Ok(chunk) => {
                bytes.extend_from_slice(&chunk);
                if bytes.len() > limit {
                    return Err(Refusal::new(
                        413,
                        "input_error",
                        format!("the body is larger than {limit} bytes, or was cut off"),
                    )
                    .into());
                }
            }
            Err(StreamError::Closed) => break,
            Err(StreamError::LastOperationFailed(e)) => {
                return Err(Refusal::input(format!(
                    "the body could not be read: {}",
                    e.to_debug_string()
                ))
                .into());
            }
        }
    }
    drop(stream);
    drop(incoming);
    String::from_utf8(bytes).map_err(|_| Refusal::input("the body is not UTF-8").into())
}

/// The method's name.
fn method(method: Method) -> String {
    match method {
        Method::Get => "GET".into(),
        Method::Head => "HEAD".into(),
        Method::Post => "POST".into(),
        Method::Put => "PUT".into(),
        Method::Delete => "DELETE".into(),
        Method::Connect => "CONNECT".into(),
        Method::Options => "OPTIONS".into(),
        Method::Trace => "TRACE".into(),
        Method::Patch => "PATCH".into(),
        Method::Other(other) => other,
    }
}

fn answer(request: IncomingRequest) -> Answer {
    let limits = Limits::default();
    let route = match route_of(&request) {
        Ok(route) => route,
        Err(refusal) => return refusal.into(),
    };
    let tokens = match tokens() {
        Ok(tokens) => tokens,
        Err(why) => return host_error(why),
    };
    let token = match authorized(&tokens, &request, &route) {
        Ok(token) => token,
        Err(refusal) => return refusal.into(),
    };
    let body = match body(&request, limits.max_body_bytes) {
        Ok(body) => body,
        Err(answer) => return answer,
    };
    match calls_of(&route, &body, token) {
        // The audit trail keeps who made the calls: the token's name.
        Ok((calls, joined)) => run_in_store(&calls, joined, token.name(), &limits),
        Err(refusal) => refusal.into(),
    }
}

/// Where the request goes: 404 or 405 when nowhere.
fn route_of(request: &IncomingRequest) -> Result<Route, Refusal> {
    let path_with_query = request.path_with_query().unwrap_or_else(|| "/".into());
    let (path, query) = match path_with_query.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (path_with_query.as_str(), None),
    };
    engram_http::route(&method(request.method()), path, query)
}

/// The request's token, if it may make the call to the agent its route
/// names: 401 or 403 otherwise.
fn authorized<'a>(
    tokens: &'a Tokens,
    request: &IncomingRequest,
    route: &Route,
) -> Result<&'a Token, Refusal> {
    let authorization = request
        .headers()
        .get("authorization")
        .into_iter()
        .next()
        .map(|value| String::from_utf8(value).unwrap_or_else(|_| "\u{fffd}".into()));
    let token = tokens.authenticate(authorization.as_deref())?;
    token.permits(route.level(), route.agent())?;
    Ok(token)
}

/// The calls a request makes, each with its agent, and for a call across
/// agents how their answers join.
type Calls = (Vec<(String, Call)>, Option<calls::Joined>);

/// The calls a request makes ([`Calls`]); the agents a call across agents
/// names must be the token's.
fn calls_of(route: &Route, body: &str, token: &Token) -> Result<Calls, Refusal> {
    let clock = var("ENGRAM_CLOCK_FROM_REQUEST").as_deref() == Some("on");
    match route {
        Route::Agent { agent, op } => Ok((
            vec![(agent.clone(), calls::call(agent, op, body, clock)?)],
            None,
        )),
        Route::Across { op } => {
            let across = calls::across(op, body)?;
            token.permits(route.level(), across.agents.iter().map(String::as_str))?;
            let calls = across
                .calls
                .into_iter()
                .map(|(agent, op, body)| {
                    let call = calls::call(&agent, op, &body, clock)?;
                    Ok((agent, call))
                })
                .collect::<Result<_, Refusal>>()?;
            Ok((calls, Some(across.joined)))
        }
    }
}

/// Runs the calls one after another with the store open and locked, as
/// `caller`: the one call's answer, the calls across agents' answers
/// joined, or the first that is not a success.
fn run_in_store(
    calls: &[(String, Call)],
    joined: Option<calls::Joined>,
    caller: &str,
    limits: &Limits,
) -> Answer {
    let store = var("ENGRAM_STORE").unwrap_or_else(|| "engram.db".into());
    let lock = match Lock::take(&store, limits.wait) {
        Ok(lock) => lock,
        Err(answer) => return answer,
    };
    if let Err(why) = host_store::open(&store) {
        return host_error(why);
    }
    host_store::set_caller(Some(caller));
    let mut answers = Vec::new();
    let mut last = None;
    for (agent, call) in calls {
        let answer = run(agent, call);
        if answer.status != 200 || joined.is_none() {
            last = Some(answer);
            break;
        }
        answers.push(answer.body);
    }
    host_store::close();
    drop(lock);
    match (last, joined) {
        (Some(answer), _) => answer,
        (None, Some(joined)) => Answer::ok(200, calls::joined(joined, &answers)),
        (None, None) => host_error("no call was made"),
    }
}

/// Runs `call` in `agent`'s domain, the store open.
fn run(agent: &str, call: &Call) -> Answer {
    if let Err(refusal) = call.embedder.resolve(None) {
        return refusal.into();
    }
    let (mode, ceiling, expire_after) = match &call.mode {
        calls::Mode::Online {
            tier_ceiling,
            expire_after,
        } => (
            AccessMode::Online,
            match tier_ceiling.as_str() {
                "public" => PrivacyTier::Public,
                "sensitive" => PrivacyTier::Sensitive,
                _ => PrivacyTier::Private,
            },
            *expire_after,
        ),
        calls::Mode::Maintenance => (AccessMode::Maintenance, PrivacyTier::Private, None),
    };
    match call.name {
        "audit" => {
            let query = match AuditQuery::of_args(Some(agent), &call.args) {
                Ok(query) => query,
                Err(why) => return Refusal::input(why).into(),
            };
            let query = match serde_json::to_string(&query) {
                Ok(query) => query,
                Err(e) => return host_error(e),
            };
            return match host_store::audit_trail(&query) {
                Ok(lines) => Answer::ok(200, format!("[{}]", lines.join(","))),
                Err(why) => host_error(why),
            };
        }
        "forget" => {
            return match host_store::forget(agent) {
                Ok(removed) => Answer::ok(
                    200,
                    serde_json::json!({"agent_id": agent, "removed": removed}).to_string(),
                ),
                Err(why) => failure(&why),
            };
        }
        _ => {}
    }
    if let Err(why) = host_store::enter(agent, mode, ceiling) {
        return failure(&why);
    }
    host_store::set_expire_after(expire_after);
    let mut session = Session::new(Domain::new(agent.to_string()));
    session.engine().set_time(call.now);
    let answer = if call.shape == Shape::Export {
        export(&mut session)
    } else {
        session
            .call(call.name, &call.input, &call.args)
            .map(|answer| {
                let (status, body) = calls::answer(call.shape, &answer.framed());
                Answer::ok(status, body)
            })
            .unwrap_or_else(|e| host_error(format!("{e:#}")))
    };
    session.engine().set_time(None);
    answer
}

/// A store failure: 503 when a maintenance lock kept the call out.
fn failure(why: &str) -> Answer {
    if why.contains("locked for maintenance") {
        calls::failure(&format!("K{why}")).into()
    } else {
        host_error(why)
    }
}

/// Every export page of the domain, open for maintenance: one array.
fn export(session: &mut Session<Domain>) -> Answer {
    let mut lines = Vec::new();
    let mut start: Option<String> = None;
    loop {
        let framed = match session.call("export", "", &calls::export_args(start.as_deref())) {
            Ok(answer) => answer.framed(),
            Err(e) => return host_error(format!("{e:#}")),
        };
        let (status, body) = calls::answer(Shape::Value, &framed);
        if status != 200 {
            return Answer::ok(status, body);
        }
        let (page, next) = match calls::export_page(&body) {
            Ok(page) => page,
            Err(why) => return host_error(why),
        };
        lines.extend(page.into_iter().map(|line| line.get().to_string()));
        match next {
            Some(next) => start = Some(next),
            None => break,
        }
    }
    Answer::ok(200, format!("[{}]", lines.join(",")))
}

/// The store's lock file, held: removed when dropped.
struct Lock {
    path: String,
}

impl Lock {
    /// Takes the lock of `store`, waiting at most `wait` for another
    /// request to release it: 503 when it does not.
    fn take(store: &str, wait: Duration) -> Result<Lock, Answer> {
        let path = format!("{store}.lock");
        let started = Instant::now();
        loop {
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Ok(_) => return Ok(Lock { path }),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let stale = std::fs::metadata(&path)
                        .and_then(|meta| meta.modified())
                        .ok()
                        .and_then(|at| SystemTime::now().duration_since(at).ok())
                        .is_some_and(|age| age > STALE);
                    if stale {
                        let _ = std::fs::remove_file(&path);
                        continue;
                    }
                    if started.elapsed() > wait {
                        return Err(Refusal::new(
                            503,
                            "host_error",
                            format!("the store was busy for {} s: try again", wait.as_secs()),
                        )
                        .with_header("retry-after", "1")
                        .into());
                    }
                    std::thread::sleep(Duration::from_millis(2));
                }
                Err(e) => return Err(host_error(format!("{path}: {e}"))),
            }
        }
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}
