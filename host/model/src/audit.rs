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

/// How many rows of a trail [`trail_of_pages`] asks a store for at once.
pub const AUDIT_PAGE: u32 = 256;

/// The newest `query.limit` entries of a trail that match `query`, oldest
/// first, read from a store that keeps its rows as they come and pages them
/// back: `page(before, limit)` is at most `limit` rows `(seq, entry)`, newest
/// first, whose `seq` (the row's number in append order) is below `before`
/// (every row's when `None`). Every host filters so
/// ([`AuditQuery::matches`]); a page out of order or longer than asked is
/// the store's fault, `broken` of why.
pub fn trail_of_pages<E>(
    query: &AuditQuery,
    mut page: impl FnMut(Option<u64>, u32) -> std::result::Result<Vec<(u64, AuditEntry)>, E>,
    broken: impl Fn(&str) -> E,
) -> std::result::Result<Vec<AuditEntry>, E> {
    let limit = query.limit as usize;
    let mut found = Vec::new();
    let mut before: Option<u64> = None;
    while found.len() < limit {
        let rows = page(before, AUDIT_PAGE)?;
        if rows.len() > AUDIT_PAGE as usize {
            return Err(broken("more audit rows than the limit"));
        }
        let full = rows.len() == AUDIT_PAGE as usize;
        for (seq, entry) in rows {
            if before.is_some_and(|before| seq >= before) {
                return Err(broken("audit rows not newest first"));
            }
            before = Some(seq);
            if query.matches(&entry) && found.len() < limit {
                found.push(entry);
            }
        }
        if !full {
            break;
        }
    }
    found.reverse();
    Ok(found)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A trail of `n` entries by three agents, at times 0, 10, 20, …
    fn trail(n: usize) -> Vec<AuditEntry> {
        (0..n)
            .map(|i| AuditEntry {
                at: i as i64 * 10,
                agent_id: ["alice", "bob", "carol"][i % 3].to_owned(),
                request_id: format!("r{i}"),
                operation: if i % 4 == 0 {
                    Operation::Read
                } else {
                    Operation::Write
                },
                source: None,
                record_type: None,
                outcome: if i % 5 == 0 {
                    Outcome::Rejected
                } else {
                    Outcome::Accepted
                },
                stored_id: None,
                count: None,
                reason: None,
                caller: None,
            })
            .collect()
    }

    /// Pages of `entries` as a store keeps them: `seq` from 1, newest first,
    /// below `before`.
    fn pages(
        entries: &[AuditEntry],
    ) -> impl FnMut(Option<u64>, u32) -> Result<Vec<(u64, AuditEntry)>, String> + '_ {
        move |before, limit| {
            let end = before.map_or(entries.len(), |b| (b as usize - 1).min(entries.len()));
            Ok((0..end)
                .rev()
                .take(limit as usize)
                .map(|i| (i as u64 + 1, entries[i].clone()))
                .collect())
        }
    }

    // The paged trail answers what the whole trail filtered answers, across
    // page boundaries, for every filter and limit.
    #[test]
    fn a_trail_read_in_pages_is_the_trail_filtered() {
        let entries = trail(AUDIT_PAGE as usize * 2 + 37);
        let memory = MemoryAudit::new();
        for entry in &entries {
            memory.append(entry).unwrap();
        }
        let queries = [
            AuditQuery::default(),
            AuditQuery {
                limit: MAX_AUDIT_LIMIT,
                ..AuditQuery::default()
            },
            AuditQuery {
                agent: Some("bob".into()),
                limit: 300,
                ..AuditQuery::default()
            },
            AuditQuery {
                outcome: Some(Outcome::Rejected),
                operation: Some(Operation::Read),
                limit: 7,
                ..AuditQuery::default()
            },
            AuditQuery {
                since: Some(500),
                until: Some(4000),
                agent: Some("carol".into()),
                limit: 1000,
                ..AuditQuery::default()
            },
            AuditQuery {
                agent: Some("nobody".into()),
                ..AuditQuery::default()
            },
        ];
        for query in &queries {
            let paged = trail_of_pages(query, pages(&entries), str::to_owned).unwrap();
            let whole = memory.trail(query).unwrap();
            assert_eq!(
                paged.iter().map(|e| &e.request_id).collect::<Vec<_>>(),
                whole.iter().map(|e| &e.request_id).collect::<Vec<_>>(),
                "{query:?}"
            );
            assert!(!whole.is_empty() || query.agent.as_deref() == Some("nobody"));
        }
    }

    // A store that pages back out of order, or more rows than asked, is
    // named broken rather than believed.
    #[test]
    fn a_store_that_pages_out_of_order_or_too_much_is_broken() {
        let entry = trail(1).remove(0);
        let ascending = |_: Option<u64>, _: u32| Ok(vec![(1, entry.clone()), (2, entry.clone())]);
        assert_eq!(
            trail_of_pages(&AuditQuery::default(), ascending, str::to_owned),
            Err("audit rows not newest first".to_owned())
        );
        let too_many = |_: Option<u64>, limit: u32| {
            Ok((0..u64::from(limit) + 1)
                .rev()
                .map(|seq| (seq + 1, entry.clone()))
                .collect())
        };
        assert_eq!(
            trail_of_pages(&AuditQuery::default(), too_many, str::to_owned),
            Err("more audit rows than the limit".to_owned())
        );
    }
}
