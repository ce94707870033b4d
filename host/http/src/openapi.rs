//! The API's OpenAPI 3.1 description (`docs/openapi.json`), made from the
//! routes, the levels and the bodies' fields the servers take: a test
//! fails when the committed file is not what this makes.

use crate::calls::FIELDS;
use crate::routes::{ACROSS_OPS, AGENT_OPS};
use serde_json::{Map, Value, json};

/// What each body field is.
fn field(name: &str) -> Value {
    let string = |description: &str| json!({"type": "string", "description": description});
    let integer = |description: &str| json!({"type": "integer", "description": description});
    match name {
        "request" => {
            json!({"description": "a request of the IO contract (docs/reference.md), JSON or its text; a list is a batch", "oneOf": [{"type": "object"}, {"type": "string"}, {"type": "array"}]})
        }
        "text" => string("requests as text: one, or JSON Lines with batch"),
        "batch" => {
            json!({"type": ["boolean", "integer"], "description": "text is JSON Lines (write, read); memories a commit (reembed)"})
        }
        "input" => string("the name an input error gives the request"),
        "tier_ceiling" => {
            json!({"enum": ["public", "sensitive", "private"], "description": "the highest privacy tier the call reads (private)"})
        }
        "expire_after" => integer("ms: what the call stores is kept that long"),
        "request_id" => string("the caller's id of the call: a retry with it is answered the same"),
        "key" => string("a FACT key"),
        "limit" => integer("how many at most"),
        "valid" | "known" | "valid_at" | "since" | "until" | "time" => {
            integer("ms since the Unix epoch")
        }
        "namespace" | "types" => json!({"type": "array", "items": {"type": "string"}}),
        "after" => string("the last key of the page before"),
        "entity_type" => string("an entity type"),
        "entity" | "start" => string("an entity's id"),
        "incoming" | "depth_first" => json!({"type": "boolean"}),
        "max_depth" | "max_nodes" | "max_edges" => integer("a bound of the traversal"),
        "plan" => {
            json!({"description": "an execution plan (docs/cycles.md)", "oneOf": [{"type": "object"}, {"type": "string"}]})
        }
        "message" => string("the user's message of the turn"),
        "response" => string("the model's response of the turn"),
        "session" => string("the conversation (default)"),
        "question" => string("what recall answers"),
        "top_k" => integer("how many memories at most (5)"),
        "token_budget" => integer("the prompt's memories within this many tokens"),
        "operation" => string("only entries of this operation (WRITE, READ, EXPORT, …)"),
        "outcome" => string("only entries with this outcome (ACCEPTED, …)"),
        "lines" => {
            json!({"type": "array", "items": {"type": "object"}, "description": "export lines {agent_id, item}"})
        }
        "agents" => json!({"type": "array", "items": {"type": "string"}}),
        "audit_agent" => string("the agent whose trail is read"),
        "embedder" => {
            json!({"oneOf": [{"const": false}, {"type": "string"}], "description": "false for none; else the server's model's name (the server's embedder by default)"})
        }
        "now" => integer(
            "ms since the Unix epoch the call runs at: only on a server that takes the clock from requests (tests)",
        ),
        _ => json!({}),
    }
}

/// A body schema of `fields`.
fn body(fields: &[&str], required: &[&str]) -> Value {
    let properties: Map<String, Value> = fields
        .iter()
        .map(|name| ((*name).to_string(), field(name)))
        .collect();
    json!({
        "required": true,
        "content": {"application/json": {"schema": {
            "type": "object",
            "additionalProperties": false,
            "properties": properties,
            "required": required,
        }}},
    })
}

/// The answers every call may get besides its 200.
fn errors() -> Value {
    let error = |description: &str| json!({"description": description, "content": {"application/json": {"schema": {"type": "object"}}}});
    json!({
        "400": error("{input_error}: not a request the API takes; nothing ran"),
        "401": error("{auth_error}: no token, or one the server does not know"),
        "403": error("{auth_error}: the token may not reach the agent, or make the call"),
        "404": error("{input_error}: no such path"),
        "405": error("{input_error}: every call is a POST"),
        "408": error("{input_error}: the body did not arrive in time"),
        "409": error("the contract refused the call: its line ({plan_error}, {cycle_error}, {error})"),
        "413": error("{input_error}: the body is too large"),
        "429": error("{host_error}: too many calls wait for the agent"),
        "500": error("{host_error}: the store or the host failed"),
        "503": error("{host_error}: the server is busy, or the domain's maintenance lock is held; retry"),
    })
}

/// The API's OpenAPI description.
pub fn description() -> Value {
    let mut paths = Map::new();
    for (op, level) in AGENT_OPS {
        let fields = FIELDS
            .iter()
            .find(|(name, _)| name == op)
            .map_or(&[][..], |(_, fields)| *fields);
        let mut all: Vec<&str> = fields.to_vec();
        all.extend(["embedder", "now"]);
        let required: &[&str] = match *op {
            "remember" => &["message", "response"],
            "recall" => &["question"],
            "cycle" => &["plan"],
            "import" => &["lines"],
            _ => &[],
        };
        let mut responses = errors();
        responses["200"] = json!({"description": "the call's answer: the line the `engram` command prints, or a list of lines", "content": {"application/json": {}}});
        paths.insert(
            format!("/agents/{{agent}}/{op}"),
            json!({"post": {
                "operationId": op,
                "summary": format!("{op} in the agent's domain (a {} token)", level.name()),
                "parameters": [{"name": "agent", "in": "path", "required": true, "schema": {"type": "string", "minLength": 1, "maxLength": 256}}],
                "requestBody": body(&all, required),
                "responses": responses,
            }}),
        );
    }
    for op in ACROSS_OPS {
        let (fields, required): (&[&str], &[&str]) = match *op {
            "export" => (&["agents", "embedder"], &["agents"]),
            "import" => (&["lines", "embedder"], &["lines"]),
            _ => (
                &[
                    "audit_agent",
                    "operation",
                    "outcome",
                    "since",
                    "until",
                    "limit",
                ],
                &["audit_agent"],
            ),
        };
        let mut responses = errors();
        responses["200"] = json!({"description": "each agent's answers, joined", "content": {"application/json": {}}});
        paths.insert(
            format!("/{op}"),
            json!({"post": {
                "operationId": format!("{op}_across_agents"),
                "summary": format!("{op} across agents (a cross-agent token reaching each)"),
                "requestBody": body(fields, required),
                "responses": responses,
            }}),
        );
    }
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "Engram HTTP API",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Memory for AI agents over HTTP, served by the Cloudflare Worker and `engram serve` (docs/http.md). Every call is a POST of a JSON object with a bearer token.",
        },
        "components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
        "security": [{"bearer": []}],
        "paths": paths,
    })
}

#[cfg(test)]
mod tests {
    /// The committed description.
    const FILE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/openapi.json");

    #[test]
    fn docs_openapi_json_is_what_the_servers_take() {
        let made = format!("{:#}\n", super::description());
        if std::env::var_os("ENGRAM_UPDATE_OPENAPI").is_some() {
            std::fs::write(FILE, &made).expect("docs/openapi.json written");
        }
        let committed = std::fs::read_to_string(FILE).unwrap_or_default();
        assert!(
            committed == made,
            "docs/openapi.json is not what the servers take: run `ENGRAM_UPDATE_OPENAPI=1 cargo test -p engram-http` and commit it"
        );
    }
}
