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
}

/// Where a host keeps the trail. An error fails the IO call it records.
pub trait AuditSink: Send + Sync {
    /// Appends one entry.
    fn append(&self, entry: &AuditEntry) -> Result<()>;
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
}
