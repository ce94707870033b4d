//! The settings a language package opens a domain with, as JSON: parsed
//! and checked here for every host that takes them (the native binding of
//! Node and Python, and the host layer the browser and Workers load as
//! wasm), so that each refuses the same settings in the same words.
//!
//! `{"agent","mode","tier_ceiling","pid","expire_after_ms", …limits}`:
//! `agent` (1 to 256 bytes), `mode` (`online` or `maintenance`),
//! `tier_ceiling` (`public`, `sensitive` or `private`), `pid` (the process
//! a maintenance lock names; 0 when absent), `expire_after_ms` (how long
//! what the domain writes is kept; kept until removed otherwise when absent
//! or null), and any of the limits ([`Limits`]: `read_limit_ceiling`,
//! `candidate_limit`, `max_answer_bytes`, `max_memory_bytes`,
//! `max_record_bytes`, `max_batch_ops`, `max_batch_bytes`; those left out
//! or null have every host's defaults).

use crate::scope::{Limits, MAX_AGENT_ID_LEN};
use engram_model::json::PrivacyTier;
use serde_json::Value;

/// How a domain is opened (IO-W7).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Only COGNITION writes.
    Online,
    /// Only MAINTENANCE writes, under the domain's maintenance lock.
    Maintenance,
}

/// A domain's settings, checked.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The agent whose domain it is.
    pub agent: String,
    /// How it is opened.
    pub mode: Access,
    /// The highest privacy tier its reads return.
    pub tier_ceiling: PrivacyTier,
    /// The process a maintenance lock it takes names.
    pub pid: u32,
    /// The limits the host holds its calls to.
    pub limits: Limits,
    /// How long what it writes is kept, in ms.
    pub expire_after: Option<u64>,
    /// The model of the embedder the caller gives, its name and dimension
    /// (`"embedder": {"name","dimension"}`); none without one (the engine
    /// checks the model's bounds).
    pub embedder: Option<(String, u32)>,
}

impl Settings {
    /// The settings `text` (a JSON object) gives, checked; why not, as
    /// `invalid: …`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let json: Value = serde_json::from_str(text)
            .map_err(|e| format!("invalid: the settings are not JSON: {e}"))?;
        let word = |name: &str| {
            json[name]
                .as_str()
                .ok_or_else(|| format!("invalid: the settings have no string `{name}`"))
        };
        let agent = word("agent")?.to_owned();
        if agent.is_empty() || agent.len() > MAX_AGENT_ID_LEN {
            return Err(format!(
                "invalid: an agent id must be 1 to {MAX_AGENT_ID_LEN} bytes long"
            ));
        }
        let mode = match word("mode")? {
            "online" => Access::Online,
            "maintenance" => Access::Maintenance,
            other => {
                return Err(format!(
                    "invalid: mode must be online or maintenance, not {other:?}"
                ));
            }
        };
        let tier_ceiling = match word("tier_ceiling")? {
            "public" => PrivacyTier::Public,
            "sensitive" => PrivacyTier::Sensitive,
            "private" => PrivacyTier::Private,
            other => {
                return Err(format!(
                    "invalid: tier_ceiling must be public, sensitive or private, not {other:?}"
                ));
            }
        };
        let number = |name: &str, max: u64| whole_number(&json, name, max);
        let limits = limits(&json)?;
        let expire_after = number("expire_after_ms", u64::MAX)?;
        let pid = match &json["pid"] {
            Value::Null => 0,
            value => value
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or("invalid: pid must be a process id")?,
        };
        let embedder = match &json["embedder"] {
            Value::Null => None,
            model => Some(
                model["name"]
                    .as_str()
                    .zip(model["dimension"].as_u64().and_then(|n| u32::try_from(n).ok()))
                    .map(|(name, dimension)| (name.to_owned(), dimension))
                    .ok_or("invalid: embedder must be {\"name\": a string, \"dimension\": a whole number}")?,
            ),
        };
        Ok(Settings {
            agent,
            mode,
            tier_ceiling,
            pid,
            limits,
            expire_after,
            embedder,
        })
    }
}

/// The setting `name` of `json`: none when absent or null, else a whole
/// number from 1 to `max`.
fn whole_number(json: &Value, name: &str, max: u64) -> Result<Option<u64>, String> {
    match &json[name] {
        Value::Null => Ok(None),
        value => value
            .as_u64()
            .filter(|n| (1..=max).contains(n))
            .map(Some)
            .ok_or_else(|| format!("invalid: {name} must be a whole number 1 to {max}")),
    }
}

/// The limits `json` sets, every host's defaults for the rest.
fn limits(json: &Value) -> Result<Limits, String> {
    let mut limits = Limits::default();
    let number = |name: &str, max: u64| whole_number(json, name, max);
    let small = u64::from(u32::MAX);
    if let Some(n) = number("read_limit_ceiling", small)? {
        limits.read_limit_ceiling = n as u32;
    }
    if let Some(n) = number("candidate_limit", small)? {
        limits.candidate_limit = n as u32;
    }
    if let Some(n) = number("max_answer_bytes", u64::MAX)? {
        limits.max_answer_bytes = n;
    }
    if let Some(n) = number("max_memory_bytes", u64::MAX)? {
        limits.max_memory_bytes = n;
    }
    if let Some(n) = number("max_record_bytes", small)? {
        limits.max_record_bytes = n as usize;
    }
    if let Some(n) = number("max_batch_ops", small)? {
        limits.max_batch_ops = n as u32;
    }
    if let Some(n) = number("max_batch_bytes", small)? {
        limits.max_batch_bytes = n as usize;
    }
    Ok(limits)
}
