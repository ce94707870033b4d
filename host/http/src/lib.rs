//! Engram's HTTP API without IO: what every server of it decides the same
//! way before a call reaches a domain. The native `engram serve`, the
//! `wasi:http` component and the Cloudflare Worker (through a component of
//! this crate) all route, authenticate and refuse here, so a client sees
//! one API whichever serves it ([`docs/http.md`]).
//!
//! - [`routes`]: `POST /agents/{agent}/{op}` and the calls across agents
//!   (`POST /export`, `/import`, `/audit`); 404, 405 and a query string
//!   refused.
//! - [`access`]: bearer tokens, each allowed some agents (or all) and a
//!   [`Level`]; 401 and 403.
//! - [`calls`]: what a call makes of its agent's domain (the domain to
//!   open, the call of the surface, the answer's shape) and the HTTP
//!   answer of what the domain answered.
//!
//! Every refusal is a [`Refusal`]: its status, its JSON body (one key, the
//! kind of error, its message) and its headers.
//!
//! [`docs/http.md`]: https://github.com/engram/engram/blob/main/docs/http.md

pub mod access;
pub mod calls;
pub mod limits;
pub mod openapi;
pub mod routes;

pub use access::{Level, Token, Tokens};
pub use limits::Limits;
pub use routes::{Route, route};

/// A request refused before any domain saw it: nothing of it ran.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// Its HTTP status.
    pub status: u16,
    /// Its body, a JSON object of one key: `input_error` (400, 404, 405),
    /// `auth_error` (401, 403) or `host_error` (500, 503).
    pub body: String,
    /// Headers the status calls for (`allow`, `www-authenticate`).
    pub headers: Vec<(&'static str, String)>,
}

impl Refusal {
    /// A refusal with `status` whose body is `{kind: message}`.
    pub fn new(status: u16, kind: &str, message: impl Into<String>) -> Self {
        let body = serde_json::json!({ kind: message.into() }).to_string();
        Refusal {
            status,
            body,
            headers: Vec::new(),
        }
    }

    /// The refusal with a header.
    #[must_use]
    pub fn with_header(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }

    /// 400: the request is not one the API takes.
    pub fn input(message: impl Into<String>) -> Self {
        Refusal::new(400, "input_error", message)
    }
}

/// What a server sends back: a status, a JSON body (`content-type:
/// application/json`) and the headers the status calls for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    /// Its HTTP status.
    pub status: u16,
    /// Its JSON body.
    pub body: String,
    /// Headers besides `content-type`.
    pub headers: Vec<(&'static str, String)>,
}

impl Answer {
    /// An answer of `status` with `body` and no more headers.
    pub fn ok(status: u16, body: String) -> Self {
        Answer {
            status,
            body,
            headers: Vec::new(),
        }
    }
}

impl From<Refusal> for Answer {
    fn from(refusal: Refusal) -> Self {
        Answer {
            status: refusal.status,
            body: refusal.body,
            headers: refusal.headers,
        }
    }
}

/// The answer as axum sends it (`engram serve`, `engram mcp --http`); a
/// header value that is not one is left out.
#[cfg(feature = "axum")]
impl axum::response::IntoResponse for Answer {
    fn into_response(self) -> axum::response::Response {
        use axum::http::{HeaderValue, StatusCode, header};
        let mut response = axum::response::Response::new(axum::body::Body::from(self.body));
        *response.status_mut() =
            StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        for (name, value) in self.headers {
            if let Ok(value) = HeaderValue::from_str(&value) {
                headers.insert(name, value);
            }
        }
        response
    }
}
