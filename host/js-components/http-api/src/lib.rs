//! `engram-http-api.wasm` of the JavaScript package: the HTTP API's decisions
//! (`engram-http`) as a component of its own, exporting `engram:js/http`.
//! The Cloudflare Worker routes, authenticates and refuses through it, so
//! it answers as every other server of the API does.
//!
//! Built for `wasm32-unknown-unknown`: it imports nothing.

wit_bindgen::generate!({
    path: ["../../../wit", "../json-layer/wit"],
    world: "engram:js/http-api",
    generate_all,
});

use engram_http::calls;
use exports::engram::js::http::{
    self, Embedder, Joined, Level, Mode, Prepared, Refusal, Shape, Spread, Target,
};

/// The component's export.
struct Http;

export!(Http);

/// The crate's level as the interface's.
fn level(level: engram_http::Level) -> Level {
    match level {
        engram_http::Level::Cognition => Level::Cognition,
        engram_http::Level::Maintenance => Level::Maintenance,
        engram_http::Level::CrossAgent => Level::CrossAgent,
    }
}

/// The crate's refusal as the interface's.
fn refusal(refusal: engram_http::Refusal) -> Refusal {
    Refusal {
        status: refusal.status,
        body: refusal.body,
        headers: refusal
            .headers
            .into_iter()
            .map(|(name, value)| (name.to_string(), value))
            .collect(),
    }
}

/// The crate's shape as the interface's, and back.
fn shape(shape: calls::Shape) -> Shape {
    match shape {
        calls::Shape::Value => Shape::Value,
        calls::Shape::Lines => Shape::Lines,
        calls::Shape::Export => Shape::Pages,
    }
}

fn shape_of(shape: Shape) -> calls::Shape {
    match shape {
        Shape::Value => calls::Shape::Value,
        Shape::Lines => calls::Shape::Lines,
        Shape::Pages => calls::Shape::Export,
    }
}

fn joined_of(joined: Joined) -> calls::Joined {
    match joined {
        Joined::Concat => calls::Joined::Concat,
        Joined::List => calls::Joined::List,
        Joined::One => calls::Joined::One,
    }
}

impl http::Guest for Http {
    fn route(method: String, path: String, query: Option<String>) -> Result<Target, Refusal> {
        let route = engram_http::route(&method, &path, query.as_deref()).map_err(refusal)?;
        Ok(Target {
            level: level(route.level()),
            op: route.op().to_string(),
            agent: match route {
                engram_http::Route::Agent { agent, .. } => Some(agent),
                engram_http::Route::Across { .. } => None,
            },
        })
    }

    fn check_tokens(source: String, tokens: String) -> Result<u32, String> {
        let tokens = engram_http::Tokens::parse(&source, &tokens)?;
        Ok(u32::try_from(tokens.len()).unwrap_or(u32::MAX))
    }

    fn authorize(
        source: String,
        tokens: String,
        authorization: Option<String>,
        asked: Level,
        agents: Vec<String>,
    ) -> Result<String, Refusal> {
        let tokens = engram_http::Tokens::parse(&source, &tokens)
            .map_err(|e| refusal(engram_http::Refusal::new(500, "host_error", e)))?;
        let token = tokens
            .authenticate(authorization.as_deref())
            .map_err(refusal)?;
        let asked = match asked {
            Level::Cognition => engram_http::Level::Cognition,
            Level::Maintenance => engram_http::Level::Maintenance,
            Level::CrossAgent => engram_http::Level::CrossAgent,
        };
        token
            .permits(asked, agents.iter().map(String::as_str))
            .map_err(refusal)?;
        Ok(token.name().to_string())
    }

    fn prepare(
        agent: String,
        op: String,
        body: String,
        clock_from_request: bool,
    ) -> Result<Prepared, Refusal> {
        let op = engram_http::routes::agent_op(&op).ok_or_else(|| {
            refusal(engram_http::Refusal::new(
                404,
                "input_error",
                format!("no such call: {op}"),
            ))
        })?;
        let call = calls::call(&agent, op, &body, clock_from_request).map_err(refusal)?;
        Ok(Prepared {
            mode: match call.mode {
                calls::Mode::Online {
                    tier_ceiling,
                    expire_after,
                } => Mode::Online((tier_ceiling, expire_after)),
                calls::Mode::Maintenance => Mode::Maintenance,
            },
            embedder: match call.embedder {
                calls::Embedder::Default => Embedder::Server,
                calls::Embedder::None => Embedder::None,
                calls::Embedder::Named(name) => Embedder::Named(name),
            },
            now: call.now,
            name: call.name.to_string(),
            input: call.input,
            args: call.args,
            shape: shape(call.shape),
        })
    }

    fn resolve_embedder(embedder: Embedder, model: Option<String>) -> Result<bool, Refusal> {
        let embedder = match embedder {
            Embedder::Server => calls::Embedder::Default,
            Embedder::None => calls::Embedder::None,
            Embedder::Named(name) => calls::Embedder::Named(name),
        };
        embedder.resolve(model.as_deref()).map_err(refusal)
    }

    fn answer(shape: Shape, framed: String) -> (u16, String) {
        calls::answer(shape_of(shape), &framed)
    }

    fn export_args(start: Option<String>) -> String {
        calls::export_args(start.as_deref())
    }

    fn export_page(value: String) -> Result<(Vec<String>, Option<String>), String> {
        let (lines, next) = calls::export_page(&value)?;
        Ok((
            lines
                .into_iter()
                .map(|line| line.get().to_string())
                .collect(),
            next,
        ))
    }

    fn across(op: String, body: String) -> Result<Spread, Refusal> {
        let across = calls::across(&op, &body).map_err(refusal)?;
        Ok(Spread {
            agents: across.agents,
            calls: across
                .calls
                .into_iter()
                .map(|(agent, op, body)| (agent, op.to_string(), body))
                .collect(),
            joined: match across.joined {
                calls::Joined::Concat => Joined::Concat,
                calls::Joined::List => Joined::List,
                calls::Joined::One => Joined::One,
            },
        })
    }

    fn join(joined: Joined, answers: Vec<String>) -> String {
        calls::joined(joined_of(joined), &answers)
    }
}
