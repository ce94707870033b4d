//! The call surface over this host's [`Domain`]: the calls of
//! `engram_surface` and those of the store around the domain
//! (`audit`, `forget`, `domains`, `unlock`), and the kinds of a host's
//! failure. The native binding of Python and Node and `engram serve` call a
//! domain through it.

use crate::audit::AuditQuery;
use crate::{Domain, Storage};
use anyhow::Result;
use engram_surface::{Answer, Session, StoreCall, expire_domains, export_domains, import_into};
use serde_json::json;

/// The answer of the call `name` with `args` (`input` names the input in
/// an input failure) in `agent`'s domain, open in `session` over
/// `storage`. A call that stopped the engine's instance ends the cycles
/// begun in it.
pub fn answer(
    session: &mut Session<Domain>,
    storage: &Storage,
    agent: &str,
    name: &str,
    input: &str,
    args: &str,
) -> Result<Answer> {
    Ok(match name {
        "audit" => audit(storage, Some(agent), args)?,
        "forget" => {
            let removed = session.engine().forget()?;
            session.lose_cycles();
            Answer::Value(json!({"agent_id": agent, "removed": removed}).to_string())
        }
        "domains" => Answer::Value(domains(storage)?),
        "unlock" => {
            let unlocked = crate::maintenance::break_lock(storage.backend.as_ref(), agent)?;
            Answer::Value(json!({"agent_id": agent, "unlocked": unlocked}).to_string())
        }
        _ => {
            let restarts = session.engine().restarts();
            let answer = session.call(name, input, args);
            if session.engine().restarts() != restarts {
                session.lose_cycles();
            }
            answer?
        }
    })
}

/// The agents whose domains hold anything in `storage`: a JSON array.
pub fn domains(storage: &Storage) -> Result<String> {
    let agents = crate::maintenance::domains(storage.backend.as_ref())?;
    Ok(json!(agents).to_string())
}

/// The trail's entries `query` asks for (JSON, [`AuditQuery::of_args`]),
/// of `agent`'s domain only when given: a JSON array of `engram audit`
/// lines, or the input failure of a query that is not one.
pub fn audit(storage: &Storage, agent: Option<&str>, query: &str) -> Result<Answer> {
    Ok(match AuditQuery::of_args(agent, query) {
        Ok(query) => Answer::Value(serde_json::to_string(&storage.audit.trail(&query)?)?),
        Err(why) => Answer::Input(why),
    })
}

/// Why a call did not answer: a failure of the host, on one line.
#[derive(Debug)]
pub enum Failure {
    /// The domain's instance stopped during the call (it ran past its
    /// time, grew past its memory, trapped, or a call of the host failed):
    /// the next call gets a fresh one ([`crate::Stopped`]).
    Stopped(String),
    /// A maintenance lock someone else holds kept the call out.
    Locked(String),
    /// The contract refused it: the domain's vectors are another model's
    /// than the embedder's ([`crate::ModelChanged`]).
    Refused(String),
    /// The store, or the host around the engine, failed.
    Failed(String),
}

impl Failure {
    /// The failure of `error`, by what it is.
    pub fn of(error: &anyhow::Error) -> Self {
        let why = crate::cli::shown(error);
        if error.downcast_ref::<crate::Stopped>().is_some() {
            Failure::Stopped(why)
        } else if error.downcast_ref::<crate::maintenance::Locked>().is_some() {
            Failure::Locked(why)
        } else if let Some(changed) = error.downcast_ref::<crate::ModelChanged>() {
            Failure::Refused(changed.to_string())
        } else {
            Failure::Failed(why)
        }
    }

    /// What failed, on one line.
    pub fn message(&self) -> &str {
        match self {
            Failure::Stopped(why)
            | Failure::Locked(why)
            | Failure::Refused(why)
            | Failure::Failed(why) => why,
        }
    }

    /// The failure framed as the answers are: `S` (stopped), `K` (locked)
    /// or `F` (failed), then why; `R` (refused) then its line,
    /// `{"error"}`.
    pub fn framed(&self) -> String {
        let kind = match self {
            Failure::Stopped(_) => 'S',
            Failure::Locked(_) => 'K',
            Failure::Refused(why) => {
                return Answer::Refused(json!({ "error": why }).to_string()).framed();
            }
            Failure::Failed(_) => 'F',
        };
        format!("{kind}{}", self.message())
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for Failure {}

/// The store-wide maintenance call `name` (`export`, `import` or
/// `expire`) with `args` (JSON: `{"agents"}` for `export` and `expire`,
/// every domain when absent or null; `{"lines"}`, export lines, for
/// `import`), each domain opened by `open` for maintenance: the answer, a
/// JSON array of what each domain answered (the export lines of an
/// export), or the input failure of `args`, or the refusal line of the
/// domain that refused (`{"agent_id", …}`), nothing after it done.
pub fn maintain(
    storage: &Storage,
    name: &str,
    args: &str,
    open: impl FnMut(&str) -> Result<Domain>,
) -> Result<Answer> {
    let call = match StoreCall::of(name, args) {
        Ok(call) => call,
        Err(why) => return Ok(Answer::Input(why)),
    };
    let mut answers = Vec::new();
    let every = || crate::maintenance::domains(storage.backend.as_ref());
    let done = match call {
        StoreCall::Import { runs } => import_into(runs, open, |answer| {
            answers.push(answer);
            Ok(())
        })?,
        StoreCall::Export { agents } => {
            export_domains(&agents.map_or_else(every, Ok)?, open, |line| {
                answers.push(serde_json::to_value(line)?);
                Ok(())
            })?
        }
        StoreCall::Expire { agents } => {
            expire_domains(&agents.map_or_else(every, Ok)?, open, |answer| {
                answers.push(answer);
                Ok(())
            })?
        }
    };
    Ok(match done {
        Ok(()) => Answer::Value(serde_json::Value::Array(answers).to_string()),
        Err((agent, refused)) => Answer::Refused(refused_in(&agent, refused).to_string()),
    })
}

/// A domain's refusal line with the agent whose domain it is in front.
fn refused_in(agent: &str, refused: serde_json::Value) -> serde_json::Value {
    let mut line = serde_json::Map::new();
    line.insert("agent_id".into(), agent.into());
    match refused {
        serde_json::Value::Object(fields) => line.extend(fields),
        other => {
            line.insert("error".into(), other);
        }
    }
    serde_json::Value::Object(line)
}
