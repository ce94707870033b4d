//! The API's routes. Every call is a `POST` whose body is a JSON object:
//!
//! - `/agents/{agent}/{op}`: a call in one agent's domain, `op` one of
//!   [`AGENT_OPS`];
//! - `/export`, `/import`, `/audit`: calls across agents ([`ACROSS_OPS`]).
//!
//! A path's segments are percent-decoded. The API takes no query string:
//! what a call needs is in its body, and a token in a URL would reach
//! every log the URL does.

use crate::Refusal;
use crate::access::Level;

/// The calls of `/agents/{agent}/{op}`, each with the level a token needs
/// for it: an agent's own calls (its cognition, its audit trail, its
/// vectors' model) are [`Level::Cognition`]; those that take the domain's
/// maintenance lock ([`Level::Maintenance`]) export, import, forget,
/// expire, rebuild vectors or write past the online checks.
pub const AGENT_OPS: &[(&str, Level)] = &[
    ("write", Level::Cognition),
    ("read", Level::Cognition),
    ("history", Level::Cognition),
    ("as_of", Level::Cognition),
    ("list", Level::Cognition),
    ("entities", Level::Cognition),
    ("relationships", Level::Cognition),
    ("traverse", Level::Cognition),
    ("cycle", Level::Cognition),
    ("remember", Level::Cognition),
    ("recall", Level::Cognition),
    ("audit", Level::Cognition),
    ("vector_model", Level::Cognition),
    ("maintenance_write", Level::Maintenance),
    ("export", Level::Maintenance),
    ("import", Level::Maintenance),
    ("forget", Level::Maintenance),
    ("expire", Level::Maintenance),
    ("reembed", Level::Maintenance),
];

/// The calls across agents, `POST /{op}`: each needs
/// [`Level::CrossAgent`], and every agent it names among the token's.
pub const ACROSS_OPS: &[&str] = &["export", "import", "audit"];

/// Where a request goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route {
    /// `/agents/{agent}/{op}`.
    Agent {
        /// The agent, decoded.
        agent: String,
        /// The call, one of [`AGENT_OPS`].
        op: &'static str,
    },
    /// `/{op}`, one of [`ACROSS_OPS`].
    Across {
        /// The call.
        op: &'static str,
    },
}

impl Route {
    /// The level a token needs to make the call.
    pub fn level(&self) -> Level {
        match self {
            Route::Agent { op, .. } => AGENT_OPS
                .iter()
                .find(|(name, _)| name == op)
                .map_or(Level::CrossAgent, |&(_, level)| level),
            Route::Across { .. } => Level::CrossAgent,
        }
    }

    /// The agent its path names: none for a call across agents, whose
    /// body names them.
    pub fn agent(&self) -> Option<&str> {
        match self {
            Route::Agent { agent, .. } => Some(agent),
            Route::Across { .. } => None,
        }
    }

    /// The call's name.
    pub fn op(&self) -> &'static str {
        match self {
            Route::Agent { op, .. } | Route::Across { op } => op,
        }
    }
}

/// The call of `/agents/{agent}/{op}` named `op`, if there is one.
pub fn agent_op(op: &str) -> Option<&'static str> {
    AGENT_OPS
        .iter()
        .find(|(name, _)| *name == op)
        .map(|&(name, _)| name)
}

/// Query keys a token may hide under: refused with words that say where a
/// token goes.
const TOKEN_KEYS: &[&str] = &["access_token", "token", "key", "api_key", "auth", "bearer"];

/// The route of a request: its `method`, its `path` (as sent: percent-
/// encoded) and its query string (`None` or empty for none). Refused: a
/// path that is not the API's (404), a method other than `POST` (405,
/// with `allow`), a query string (400), a segment that does not decode to
/// UTF-8 (400).
pub fn route(method: &str, path: &str, query: Option<&str>) -> Result<Route, Refusal> {
    let not_found = || Refusal::new(404, "input_error", format!("no such path: {path}"));
    let mut parts = Vec::new();
    for part in path.split('/').filter(|part| !part.is_empty()) {
        let decoded = percent_encoding::percent_decode_str(part)
            .decode_utf8()
            .map_err(|_| Refusal::input(format!("not a valid path: {path}")))?;
        parts.push(decoded.into_owned());
    }
    let route = match parts.as_slice() {
        [agents, agent, op] if agents == "agents" => {
            let op = AGENT_OPS
                .iter()
                .find(|(name, _)| name == op)
                .ok_or_else(not_found)?
                .0;
            if agent.is_empty() {
                return Err(not_found());
            }
            if let Some(problem) = engram_store::scope::agent_id_problem(agent) {
                return Err(Refusal::input(problem));
            }
            Route::Agent {
                agent: agent.clone(),
                op,
            }
        }
        [op] => Route::Across {
            op: ACROSS_OPS
                .iter()
                .find(|name| *name == op)
                .ok_or_else(not_found)?,
        },
        _ => return Err(not_found()),
    };
    if method != "POST" {
        return Err(
            Refusal::new(405, "input_error", "every call is a POST").with_header("allow", "POST")
        );
    }
    match query {
        None | Some("") => Ok(route),
        Some(query) => {
            let names_a_token = query.split('&').any(|pair| {
                let key = pair.split('=').next().unwrap_or("");
                TOKEN_KEYS.iter().any(|name| key.eq_ignore_ascii_case(name))
            });
            Err(Refusal::input(if names_a_token {
                "a token goes in the Authorization header (Bearer), never in the URL; the API takes no query string"
            } else {
                "the API takes no query string: a call's arguments are its JSON body"
            }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_routes_of_the_api() {
        assert_eq!(
            route("POST", "/agents/alice/remember", None),
            Ok(Route::Agent {
                agent: "alice".into(),
                op: "remember"
            })
        );
        assert_eq!(
            route("POST", "/agents/al%20ice/recall", Some("")),
            Ok(Route::Agent {
                agent: "al ice".into(),
                op: "recall"
            })
        );
        assert_eq!(
            route("POST", "/export", None),
            Ok(Route::Across { op: "export" })
        );
        assert_eq!(
            route("POST", "/agents/alice/drop", None)
                .unwrap_err()
                .status,
            404
        );
        assert_eq!(
            route("POST", "/agents//recall", None).unwrap_err().status,
            404
        );
        assert_eq!(route("POST", "/forget", None).unwrap_err().status, 404);
        assert_eq!(route("POST", "/", None).unwrap_err().status, 404);
        let refused = route("GET", "/agents/alice/recall", None).unwrap_err();
        assert_eq!(
            (refused.status, refused.headers.clone()),
            (405, vec![("allow", "POST".to_string())])
        );
        assert_eq!(
            route("POST", "/agents/%FF/recall", None)
                .unwrap_err()
                .status,
            400
        );
    }

    // proves S-AUTH
    #[test]
    fn s_auth_a_token_in_the_query_string_is_refused_naming_the_header() {
        let refused =
            route("POST", "/agents/alice/recall", Some("access_token=s3cret")).unwrap_err();
        assert_eq!(refused.status, 400);
        assert!(
            refused.body.contains("Authorization header"),
            "{}",
            refused.body
        );
        assert!(!refused.body.contains("s3cret"));
        let refused = route("POST", "/agents/alice/recall", Some("x=1")).unwrap_err();
        assert!(refused.body.contains("no query string"), "{}", refused.body);
    }

    // proves S-AUTH
    #[test]
    fn s_auth_each_call_has_its_level() {
        let level = |path: &str| route("POST", path, None).unwrap().level();
        assert_eq!(level("/agents/a/recall"), Level::Cognition);
        assert_eq!(level("/agents/a/audit"), Level::Cognition);
        for op in [
            "forget",
            "export",
            "import",
            "expire",
            "reembed",
            "maintenance_write",
        ] {
            assert_eq!(
                level(&format!("/agents/a/{op}")),
                Level::Maintenance,
                "{op}"
            );
        }
        assert_eq!(level("/audit"), Level::CrossAgent);
    }
}
