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

use exports::engram::js::http::{self, Level, Refusal, Target};

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
}
