//! The audit trail: one entry for every IO call, outside the IO (IO-W8).

use crate::json::{RecordType, Source};
use anyhow::Result;
use serde::{Deserialize, Serialize};
use std::sync::Mutex;

/// Which IO call an entry is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Operation {
    /// `write`.
    Write,
    /// `read`.
    Read,
    /// A maintenance export.
    Export,
    /// A maintenance import.
    Import,
    /// A maintenance forget of a whole domain.
    Forget,
    /// A maintenance expire: records whose expiry had passed removed.
    Expire,
}

/// How an IO call ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Outcome {
    /// A write was stored.
    Accepted,
    /// A write repeated an earlier request and got its id; nothing stored.
    Replayed,
    /// A write was refused; `reason` says why.
    Rejected,
    /// A read returned `count` records.
    Returned,
    /// A read was refused; `reason` says why.
    Failed,
    /// An import stored, or a forget removed, `count` entries (an expire
    /// that found nothing to remove: 0).
    Applied,
    /// An expire removed the record `stored_id`, whose expiry had passed.
    Expired,
}

/// One entry of the trail.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AuditEntry {
    /// When the host recorded it, in milliseconds since the Unix epoch.
    pub at: i64,
    /// The domain the call was made in.
    pub agent_id: String,
    /// The request id as given.
    pub request_id: String,
    /// `WRITE` or `READ`.
    pub operation: Operation,
    /// The source of a write.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<Source>,
    /// The record type written or read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record_type: Option<RecordType>,
    /// How it ended.
    pub outcome: Outcome,
    /// The id of an accepted or replayed write.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stored_id: Option<String>,
    /// How many records a read returned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
    /// Why a write was rejected or a read refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Who made the call, as a server that authenticates its callers knows
    /// them: the name of the token it came with (never its secret). Absent
    /// where the host authenticates nobody (a library, the command line).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caller: Option<String>,
}

/// How many entries a read of the trail answers when not told.
pub const AUDIT_LIMIT: u32 = 100;

/// The most entries one read of the trail may answer.
pub const MAX_AUDIT_LIMIT: u32 = 100_000;

/// Which entries of the trail to read. Every filter that is set must hold.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditQuery {
    /// Only entries of this agent's domain.
    pub agent: Option<String>,
    /// Only entries recorded at or after this time (ms since the epoch).
    pub since: Option<i64>,
    /// Only entries recorded before this time (ms since the epoch).
    pub until: Option<i64>,
    /// Only entries of this operation.
    pub operation: Option<Operation>,
    /// Only entries with this outcome.
    pub outcome: Option<Outcome>,
    /// How many of the newest matching entries to return.
    pub limit: u32,
}

impl Default for AuditQuery {
    fn default() -> Self {
        AuditQuery {
            agent: None,
            since: None,
            until: None,
            operation: None,
            outcome: None,
            limit: AUDIT_LIMIT,
        }
    }
}

impl AuditQuery {
    /// Whether `entry` passes every filter (the limit aside).
    pub fn matches(&self, entry: &AuditEntry) -> bool {
        self.agent.as_ref().is_none_or(|a| *a == entry.agent_id)
            && self.since.is_none_or(|t| entry.at >= t)
            && self.until.is_none_or(|t| entry.at < t)
            && self.operation.is_none_or(|o| o == entry.operation)
            && self.outcome.is_none_or(|o| o == entry.outcome)
    }
}

impl AuditQuery {
    /// The query of a call's JSON arguments (`{"agent","operation",
    /// "outcome","since","until","limit"}`, each optional; empty: `{}`), of
    /// `agent`'s domain only when given: why it is not one otherwise, on
    /// one line.
    pub fn of_args(agent: Option<&str>, args: &str) -> Result<AuditQuery, String> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Args {
            #[serde(default)]
            agent: Option<String>,
            #[serde(default)]
            operation: Option<Operation>,
            #[serde(default)]
            outcome: Option<Outcome>,
            #[serde(default)]
            since: Option<i64>,
            #[serde(default)]
            until: Option<i64>,
            #[serde(default)]
            limit: Option<u32>,
        }
        let text = if args.trim().is_empty() { "{}" } else { args };
        let args: Args =
            serde_json::from_str(text).map_err(|e| format!("audit: not a valid query: {e}"))?;
        let limit = args.limit.unwrap_or(AUDIT_LIMIT);
        if !(1..=MAX_AUDIT_LIMIT).contains(&limit) {
            return Err(format!("audit: the limit must be 1 to {MAX_AUDIT_LIMIT}"));
        }
        Ok(AuditQuery {
            agent: agent.map(str::to_owned).or(args.agent),
            since: args.since,
            until: args.until,
            operation: args.operation,
            outcome: args.outcome,
            limit,
        })
    }
}

/// Where a host keeps the trail. An error fails the IO call it records.
pub trait AuditSink: Send + Sync {
    /// Appends one entry.
    fn append(&self, entry: &AuditEntry) -> Result<()>;

    /// The newest `query.limit` entries that match `query`, oldest first.
    fn trail(&self, query: &AuditQuery) -> Result<Vec<AuditEntry>>;
}

/// A trail kept in memory, for tests and hosts that keep nothing.
#[derive(Default)]
pub struct MemoryAudit {
    entries: Mutex<Vec<AuditEntry>>,
}

impl MemoryAudit {
    /// An empty trail.
    pub fn new() -> Self {
        Self::default()
    }

    /// Every entry so far, oldest first.
    pub fn entries(&self) -> Vec<AuditEntry> {
        self.entries.lock().map(|e| e.clone()).unwrap_or_default()
    }
}

impl AuditSink for MemoryAudit {
    fn append(&self, entry: &AuditEntry) -> Result<()> {
        self.entries
            .lock()
            .map_err(|_| anyhow::anyhow!("the audit trail was poisoned"))?
            .push(entry.clone());
        Ok(())
    }

    fn trail(&self, query: &AuditQuery) -> Result<Vec<AuditEntry>> {
        let entries = self
            .entries
            .lock()
            .map_err(|_| anyhow::anyhow!("the audit trail was poisoned"))?;
        let mut found: Vec<AuditEntry> = entries
            .iter()
            .rev()
            .filter(|e| query.matches(e))
            .take(query.limit as usize)
            .cloned()
            .collect();
        found.reverse();
        Ok(found)
    }
}
