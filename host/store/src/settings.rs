//! The settings a language package opens a domain with, as JSON: parsed
//! and checked here for every host that takes them (the native binding of
//! Node and Python, and the host layer the browser and Workers load as
//! wasm), so that each refuses the same settings in the same words.
//!
//! `{"agent","mode","tier_ceiling","pid","expire_after_ms","embedder",
//! …limits}`: `agent` (1 to 256 bytes), `mode` (`online`, the default, or
//! `maintenance`), `tier_ceiling` (`public`, `sensitive` or `private`, the
//! default), `pid` (the process
//! a maintenance lock names; 0 when absent), `expire_after_ms` (how long
//! what the domain writes is kept; kept until removed otherwise when absent
//! or null), and any of the limits ([`Limits`]: `read_limit_ceiling`,
//! `candidate_limit`, `max_answer_bytes`, `max_memory_bytes`,
//! `max_record_bytes`, `max_batch_ops`, `max_batch_bytes`; those left out
//! or null have every host's defaults), `embedder` (the model of the
//! caller's embedder: `{"name","dimension"}`). Any other key is refused,
//! naming it and the known ones: a misspelled limit is never dropped.

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

impl Access {
    /// The word of the settings for it: `online` or `maintenance`.
    pub fn word(self) -> &'static str {
        match self {
            Access::Online => "online",
            Access::Maintenance => "maintenance",
        }
    }
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

/// The keys a domain's settings may hold: the limits' names after these.
const KEYS: [&str; 6] = [
    "agent",
    "mode",
    "tier_ceiling",
    "pid",
    "expire_after_ms",
    "embedder",
];

/// The limits' keys ([`limits`]).
const LIMIT_KEYS: [&str; 7] = [
    "read_limit_ceiling",
    "candidate_limit",
    "max_answer_bytes",
    "max_memory_bytes",
    "max_record_bytes",
    "max_batch_ops",
    "max_batch_bytes",
];

impl Settings {
    /// The settings `text` (a JSON object) gives, checked; why not (the
    /// settings are the caller's input: every host reports it as such).
    pub fn parse(text: &str) -> Result<Self, String> {
        let json: Value =
            serde_json::from_str(text).map_err(|e| format!("the settings are not JSON: {e}"))?;
        known_keys_only(&json)?;
        let word = |name: &str| match &json[name] {
            Value::Null => Ok(None),
            Value::String(word) => Ok(Some(word.as_str())),
            _ => Err(format!("the setting `{name}` is not a string")),
        };
        let agent = word("agent")?
            .ok_or("the settings have no string `agent`")?
            .to_owned();
        if agent.is_empty() || agent.len() > MAX_AGENT_ID_LEN {
            return Err(format!(
                "an agent id must be 1 to {MAX_AGENT_ID_LEN} bytes long"
            ));
        }
        let mode = match word("mode")? {
            None | Some("online") => Access::Online,
            Some("maintenance") => Access::Maintenance,
            Some(other) => {
                return Err(format!("mode must be online or maintenance, not {other:?}"));
            }
        };
        let tier_ceiling = match word("tier_ceiling")? {
            Some("public") => PrivacyTier::Public,
            Some("sensitive") => PrivacyTier::Sensitive,
            None | Some("private") => PrivacyTier::Private,
            Some(other) => {
                return Err(format!(
                    "tier_ceiling must be public, sensitive or private, not {other:?}"
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
                .ok_or("pid must be a process id")?,
        };
        let embedder = match &json["embedder"] {
            Value::Null => None,
            model => Some(
                model["name"]
                    .as_str()
                    .zip(
                        model["dimension"]
                            .as_u64()
                            .and_then(|n| u32::try_from(n).ok()),
                    )
                    .map(|(name, dimension)| (name.to_owned(), dimension))
                    .ok_or(
                        "embedder must be {\"name\": a string, \"dimension\": a whole number}",
                    )?,
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

/// Refuses settings that are not an object, or that hold a key that is no
/// setting (a misspelled limit), naming it and the known ones.
fn known_keys_only(json: &Value) -> Result<(), String> {
    let Some(object) = json.as_object() else {
        return Err("the settings are not a JSON object".into());
    };
    match object
        .keys()
        .find(|key| !KEYS.contains(&key.as_str()) && !LIMIT_KEYS.contains(&key.as_str()))
    {
        Some(unknown) => Err(format!(
            "the settings have no key {unknown:?}: they are {}",
            KEYS.iter()
                .chain(&LIMIT_KEYS)
                .copied()
                .collect::<Vec<_>>()
                .join(", ")
        )),
        None => Ok(()),
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
            .ok_or_else(|| format!("{name} must be a whole number 1 to {max}")),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s_limits_a_key_that_is_no_setting_is_refused_naming_it_and_the_known_ones() {
        let refused = Settings::parse(r#"{"agent":"alice","max_batch_op":5}"#).unwrap_err();
        assert!(refused.contains("\"max_batch_op\""), "{refused}");
        for known in KEYS.iter().chain(&LIMIT_KEYS) {
            assert!(refused.contains(known), "{refused} names {known}");
        }
        assert!(
            Settings::parse("[1]")
                .unwrap_err()
                .contains("not a JSON object")
        );
    }

    #[test]
    fn s_limits_mode_and_tier_ceiling_have_every_hosts_defaults() {
        let settings = Settings::parse(r#"{"agent":"alice"}"#).unwrap();
        assert_eq!(settings.mode, Access::Online);
        assert_eq!(settings.tier_ceiling, PrivacyTier::Private);
        let settings =
            Settings::parse(r#"{"agent":"alice","mode":"maintenance","max_batch_ops":3}"#).unwrap();
        assert_eq!(settings.mode, Access::Maintenance);
        assert_eq!(settings.limits.max_batch_ops, 3);
        assert!(Settings::parse(r#"{"agent":"alice","mode":7}"#).is_err());
    }
}
