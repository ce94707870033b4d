//! Who may call what (S-AUTH): bearer tokens, each with a name, a secret, the agents
//! it may reach and a [`Level`].
//!
//! The tokens of a server are JSON Lines, one token an object (blank lines
//! skipped), from a file, an environment variable or a Worker's secret:
//!
//! ```text
//! {"name": "alice-app", "secret": "…", "agents": ["alice"], "level": "cognition"}
//! {"name": "ops", "secret": "…", "agents": "*", "level": "cross-agent"}
//! ```
//!
//! A secret is at least [`MIN_SECRET_CHARS`] characters (e.g. `openssl rand
//! -hex 32`), and no two tokens share a name or a secret. A client sends
//! `Authorization: Bearer <secret>`; every secret is compared with it in
//! constant time. Only the name ever leaves this module: for a log, or the
//! audit trail's `by`.

use crate::Refusal;
use serde::Deserialize;
use std::collections::BTreeSet;
use subtle::ConstantTimeEq;

/// The fewest characters a secret may have.
pub const MIN_SECRET_CHARS: usize = 32;
/// The most characters a token's name may have.
pub const MAX_NAME_CHARS: usize = 64;
/// The realm a `401`'s `www-authenticate` names.
const REALM: &str = "engram";

/// What a token may call, each level allowing the ones below it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Level {
    /// An agent's own calls: its cognition (write, read, the lookups,
    /// cycles, remember, recall), its audit trail, its vectors' model.
    Cognition,
    /// Also the calls that take the domain's maintenance lock: export,
    /// import, forget, expire, reembed, a maintenance write.
    Maintenance,
    /// Also the calls across agents (`/export`, `/import`, `/audit`), for
    /// the agents the token may reach.
    CrossAgent,
}

impl Level {
    /// The level's name, as a token file writes it.
    pub fn name(self) -> &'static str {
        match self {
            Level::Cognition => "cognition",
            Level::Maintenance => "maintenance",
            Level::CrossAgent => "cross-agent",
        }
    }
}

/// The agents a token may reach.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Agents {
    /// Every agent (`"*"`).
    All,
    /// These.
    Some(BTreeSet<String>),
}

/// A token as a line of a token file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    name: String,
    secret: String,
    agents: AgentsLine,
    level: Level,
}

/// `"*"` or a list of agents.
#[derive(Deserialize)]
#[serde(untagged)]
enum AgentsLine {
    All(String),
    Some(Vec<String>),
}

/// One token.
pub struct Token {
    name: String,
    secret: String,
    agents: Agents,
    level: Level,
}

impl std::fmt::Debug for Token {
    /// Never the secret.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Token")
            .field("name", &self.name)
            .field("agents", &self.agents)
            .field("level", &self.level)
            .finish_non_exhaustive()
    }
}

impl Token {
    /// Its name: what a log or the audit trail may say of it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its level.
    pub fn level(&self) -> Level {
        self.level
    }

    /// Whether it may reach `agent`.
    pub fn reaches(&self, agent: &str) -> bool {
        match &self.agents {
            Agents::All => true,
            Agents::Some(agents) => agents.contains(agent),
        }
    }

    /// Whether it may make a call of `level` in the domains of `agents`:
    /// 403 naming what it lacks.
    pub fn permits<'a>(
        &self,
        level: Level,
        agents: impl IntoIterator<Item = &'a str>,
    ) -> Result<(), Refusal> {
        if self.level < level {
            return Err(Refusal::new(
                403,
                "auth_error",
                format!(
                    "the token {:?} is allowed {} calls, not {} calls",
                    self.name,
                    self.level.name(),
                    level.name()
                ),
            ));
        }
        for agent in agents {
            if !self.reaches(agent) {
                return Err(Refusal::new(
                    403,
                    "auth_error",
                    format!(
                        "the token {:?} may not reach the agent {agent:?}",
                        self.name
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// A server's tokens.
#[derive(Debug)]
pub struct Tokens(Vec<Token>);

impl Tokens {
    /// The tokens of `text` (JSON Lines), read from `source` (a file's
    /// path, or the variable or secret it came from): a line that is not a
    /// token is an error `source:line: problem`, which never holds a
    /// secret. No token at all is an error too: a server that takes these
    /// would serve nobody.
    pub fn parse(source: &str, text: &str) -> Result<Tokens, String> {
        let mut tokens: Vec<Token> = Vec::new();
        for (number, line) in text.lines().enumerate() {
            let at = |problem: String| format!("{source}:{}: {problem}", number + 1);
            if line.trim().is_empty() {
                continue;
            }
            let line: Line = serde_json::from_str(line).map_err(|e| {
                at(format!(
                    "not a token {{\"name\", \"secret\", \"agents\", \"level\"}}: {}",
                    redacted(&e)
                ))
            })?;
            let Line {
                name,
                secret,
                agents,
                level,
            } = line;
            if name.is_empty()
                || name.chars().count() > MAX_NAME_CHARS
                || !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
            {
                return Err(at(format!(
                    "a token's name is 1 to {MAX_NAME_CHARS} letters, digits, '.', '_' or '-', not {name:?}"
                )));
            }
            if secret.chars().count() < MIN_SECRET_CHARS || secret.chars().any(char::is_whitespace)
            {
                return Err(at(format!(
                    "the secret of {name:?} must be at least {MIN_SECRET_CHARS} characters with no white space (e.g. `openssl rand -hex 32`)"
                )));
            }
            let agents = match agents {
                AgentsLine::All(all) if all == "*" => Agents::All,
                AgentsLine::All(_) => {
                    return Err(at(format!(
                        "the agents of {name:?} are a list of agent ids, or \"*\" for all"
                    )));
                }
                AgentsLine::Some(list) => {
                    if list.is_empty() || list.iter().any(String::is_empty) {
                        return Err(at(format!(
                            "the agents of {name:?} are a list of agent ids (not empty), or \"*\" for all"
                        )));
                    }
                    Agents::Some(list.into_iter().collect())
                }
            };
            if tokens.iter().any(|token| token.name == name) {
                return Err(at(format!("two tokens are named {name:?}")));
            }
            if tokens
                .iter()
                .any(|token| bool::from(token.secret.as_bytes().ct_eq(secret.as_bytes())))
            {
                return Err(at(format!("{name:?} has the secret of another token")));
            }
            tokens.push(Token {
                name,
                secret,
                agents,
                level,
            });
        }
        if tokens.is_empty() {
            return Err(format!(
                "{source}: no token: a server with none serves nobody"
            ));
        }
        Ok(Tokens(tokens))
    }

    /// How many there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none (never, once parsed).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The token of a request's `Authorization` header: 401 (with
    /// `www-authenticate`) when there is none, it is not `Bearer`, or its
    /// secret is none of these. Every secret is compared, each in constant
    /// time.
    pub fn authenticate(&self, authorization: Option<&str>) -> Result<&Token, Refusal> {
        let unauthorized = |message: &str, error: Option<&str>| {
            let challenge = match error {
                Some(error) => format!("Bearer realm=\"{REALM}\", error=\"{error}\""),
                None => format!("Bearer realm=\"{REALM}\""),
            };
            Refusal::new(401, "auth_error", message).with_header("www-authenticate", challenge)
        };
        let Some(authorization) = authorization else {
            return Err(unauthorized(
                "this server needs a token: send Authorization: Bearer <token>",
                None,
            ));
        };
        let (scheme, secret) = authorization
            .trim()
            .split_once(' ')
            .unwrap_or((authorization.trim(), ""));
        if !scheme.eq_ignore_ascii_case("bearer") || secret.trim().is_empty() {
            return Err(unauthorized(
                "the Authorization header is Bearer <token>",
                Some("invalid_request"),
            ));
        }
        let secret = secret.trim().as_bytes();
        let mut found = None;
        for token in &self.0 {
            if bool::from(token.secret.as_bytes().ct_eq(secret)) {
                found = Some(token);
            }
        }
        found.ok_or_else(|| {
            unauthorized(
                "the token is not one of this server's",
                Some("invalid_token"),
            )
        })
    }
}

/// The words a token line's error may quote: the fields' and levels'
/// names. Anything else quoted (a value: perhaps a secret) is left out.
const QUOTABLE: &[&str] = &[
    "name",
    "secret",
    "agents",
    "level",
    "cognition",
    "maintenance",
    "cross-agent",
];

/// serde's message for a line, each value it quotes left out, without its
/// position (the line is named already).
fn redacted(error: &serde_json::Error) -> String {
    let message = error.to_string();
    let message = message.split(" at line ").next().unwrap_or_default();
    let mut out = String::new();
    let mut rest = message;
    while let Some(start) = rest.find(['`', '"']) {
        let quote = rest[start..].chars().next().unwrap_or('`');
        out.push_str(&rest[..start]);
        let Some(len) = rest[start + 1..].find(quote) else {
            rest = "";
            break;
        };
        let quoted = &rest[start + 1..start + 1 + len];
        if QUOTABLE.contains(&quoted) {
            out.push(quote);
            out.push_str(quoted);
            out.push(quote);
        } else {
            out.push('…');
        }
        rest = &rest[start + 2 + len..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALICE: &str = "alice-secret-0123456789abcdef0123456789";
    const OPS: &str = "ops-secret-0123456789abcdef0123456789abcd";

    fn tokens() -> Tokens {
        Tokens::parse(
            "tokens.jsonl",
            &format!(
                "{{\"name\":\"alice-app\",\"secret\":\"{ALICE}\",\"agents\":[\"alice\"],\"level\":\"cognition\"}}\n\n\
                 {{\"name\":\"ops\",\"secret\":\"{OPS}\",\"agents\":\"*\",\"level\":\"cross-agent\"}}\n"
            ),
        )
        .unwrap()
    }

    // proves S-AUTH
    #[test]
    fn s_auth_a_token_is_known_by_its_bearer_secret_and_reaches_its_agents_at_its_level() {
        let tokens = tokens();
        let alice = tokens
            .authenticate(Some(&format!("Bearer {ALICE}")))
            .unwrap();
        assert_eq!(alice.name(), "alice-app");
        assert!(alice.permits(Level::Cognition, ["alice"]).is_ok());
        let refused = alice.permits(Level::Cognition, ["bob"]).unwrap_err();
        assert_eq!(refused.status, 403);
        assert!(refused.body.contains("bob"), "{}", refused.body);
        let refused = alice.permits(Level::Maintenance, ["alice"]).unwrap_err();
        assert_eq!(refused.status, 403);
        assert!(refused.body.contains("maintenance"), "{}", refused.body);
        let ops = tokens
            .authenticate(Some(&format!("bearer  {OPS} ")))
            .unwrap();
        assert!(ops.permits(Level::CrossAgent, ["alice", "bob"]).is_ok());
    }

    // proves S-AUTH
    #[test]
    fn s_auth_no_token_a_wrong_one_or_another_scheme_is_401_and_names_no_secret() {
        let tokens = tokens();
        for header in [
            None,
            Some("Basic YWxpY2U6cHc="),
            Some("Bearer"),
            Some("Bearer wrong"),
        ] {
            let refused = tokens.authenticate(header).unwrap_err();
            assert_eq!(refused.status, 401, "{header:?}");
            assert!(refused.headers.iter().any(|(name, value)| *name == "www-authenticate" && value.starts_with("Bearer")));
            assert!(!refused.body.contains("secret-0123"), "{}", refused.body);
        }
        // A prefix of a secret is not the secret.
        assert!(
            tokens
                .authenticate(Some(&format!("Bearer {}", &ALICE[..20])))
                .is_err()
        );
    }

    // proves S-AUTH
    #[test]
    fn s_auth_a_token_file_that_is_not_tokens_is_named_with_its_line_and_never_echoes_a_secret() {
        let cases = [
            ("", "no token"),
            (
                "{\"name\":\"a\",\"secret\":\"short\",\"agents\":\"*\",\"level\":\"cognition\"}",
                ":1: the secret of \"a\" must be at least 32",
            ),
            (
                &format!(
                    "\n{{\"name\":\"a b\",\"secret\":\"{ALICE}\",\"agents\":\"*\",\"level\":\"cognition\"}}"
                ),
                ":2: a token's name",
            ),
            (
                &format!(
                    "{{\"name\":\"a\",\"secret\":\"{ALICE}\",\"agents\":\"all\",\"level\":\"cognition\"}}"
                ),
                ":1: the agents of \"a\"",
            ),
            (
                &format!(
                    "{{\"name\":\"a\",\"secret\":\"{ALICE}\",\"agents\":[],\"level\":\"cognition\"}}"
                ),
                ":1: the agents of \"a\"",
            ),
            (
                &format!(
                    "{{\"name\":\"a\",\"secret\":\"{ALICE}\",\"agents\":\"*\",\"level\":\"root\"}}"
                ),
                ":1: not a token",
            ),
            (
                &format!(
                    "{{\"name\":\"a\",\"secret\":\"{ALICE}\",\"agents\":\"*\",\"level\":\"cognition\",\"x\":1}}"
                ),
                ":1: not a token",
            ),
            (
                &format!(
                    "{{\"name\":\"a\",\"secret\":\"{ALICE}\",\"agents\":\"*\",\"level\":\"cognition\"}}\n{{\"name\":\"a\",\"secret\":\"{OPS}\",\"agents\":\"*\",\"level\":\"cognition\"}}"
                ),
                ":2: two tokens are named \"a\"",
            ),
            (
                &format!(
                    "{{\"name\":\"a\",\"secret\":\"{ALICE}\",\"agents\":\"*\",\"level\":\"cognition\"}}\n{{\"name\":\"b\",\"secret\":\"{ALICE}\",\"agents\":\"*\",\"level\":\"cognition\"}}"
                ),
                ":2: \"b\" has the secret of another token",
            ),
            (
                &format!("{{\"name\":\"a\",\"secret\":{ALICE}}}"),
                ":1: not a token",
            ),
            (
                &format!(
                    "{{\"name\":\"a\",\"secret\":\"{ALICE}\",\"agents\":\"*\",\"level\":\"{OPS}\"}}"
                ),
                ":1: not a token",
            ),
            (
                &format!("{{\"name\":\"a\",\"secret\":\"{ALICE}\",\"agents\":\"*\"}}"),
                "missing field `level`",
            ),
            (
                &format!("{{\"name\":7,\"secret\":\"{ALICE}\",\"agents\":\"*\"}}"),
                "invalid type",
            ),
        ];
        for (text, expected) in cases {
            let error = Tokens::parse("tokens.jsonl", text).unwrap_err();
            assert!(error.starts_with("tokens.jsonl"), "{error}");
            assert!(error.contains(expected), "{error} lacks {expected}");
            assert!(!error.contains("0123456789abcdef"), "{error}");
        }
    }

    #[test]
    fn a_token_debugged_shows_no_secret() {
        assert!(!format!("{:?}", tokens()).contains(ALICE));
    }
}
