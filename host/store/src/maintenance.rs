//! Offline maintenance of a domain (IO-W7): the lock that keeps online
//! writers out, forgetting an agent, and finding the domains a store holds.
//!
//! The lock is one key-value pair outside every domain's key range, so it
//! works the same on every backend and across hosts sharing one store: a
//! maintenance domain takes it with a commit conditioned on its absence,
//! every online commit is conditioned on its absence, and every maintenance
//! commit on its still holding the taker's token.

use crate::{Backend, Op, Order, Precondition, StoreError};
use anyhow::{Context, Result, bail};
use engram_keyspace::successor;
use engram_model::audit::{self, AuditEntry, AuditSink};
use engram_model::json::{Actor, Component, Source};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Where the locks live: no domain's keys start with this byte (a domain
/// prefix starts with the id's length, at most 256, as four bytes).
const LOCK_AREA: &[u8] = b"\xFFengram-maintenance-lock\x00";

/// The key of an agent's maintenance lock.
pub fn lock_key(agent_id: &str) -> Vec<u8> {
    [LOCK_AREA, &crate::domain_prefix(agent_id)].concat()
}

/// Who holds a lock, as stored under its key.
#[derive(Debug, Serialize, Deserialize)]
pub struct LockHolder {
    /// The holding process; 0 for a process under WASI, which has no
    /// process id.
    pub pid: u32,
    /// When it was taken (ms since the epoch).
    pub since: i64,
    /// A random token only the holder knows.
    pub token: String,
}

/// A held lock; released when dropped.
pub struct LockGuard {
    backend: Arc<dyn Backend>,
    key: Vec<u8>,
    value: Vec<u8>,
}

impl LockGuard {
    /// Takes the lock of `agent_id`, or says who holds it, with a token
    /// from the system's entropy.
    #[cfg(feature = "os")]
    pub fn acquire(backend: Arc<dyn Backend>, agent_id: &str, now: i64) -> Result<Self> {
        let token = [
            getrandom::u64().context("no entropy for a lock token")?,
            getrandom::u64().context("no entropy for a lock token")?,
        ];
        Self::acquire_as(backend, agent_id, now, process_id(), token)
    }

    /// Takes the lock of `agent_id` for process `pid` (0 where there is
    /// none) with a random `token` the caller drew, or says who holds it.
    pub fn acquire_as(
        backend: Arc<dyn Backend>,
        agent_id: &str,
        now: i64,
        pid: u32,
        token: [u64; 2],
    ) -> Result<Self> {
        let key = lock_key(agent_id);
        let holder = LockHolder {
            pid,
            since: now,
            token: format!("{:016x}{:016x}", token[0], token[1]),
        };
        let value = serde_json::to_vec(&holder)?;
        match backend.commit(
            &[Precondition::Absent(key.clone())],
            &[Op::Put(key.clone(), value.clone())],
        ) {
            Ok(()) => Ok(LockGuard {
                backend,
                key,
                value,
            }),
            Err(StoreError::Conflict) => {
                let held = backend.get(&key).ok().flatten().unwrap_or_default();
                Err(Locked(match serde_json::from_slice::<LockHolder>(&held) {
                    Ok(h) => format!(
                        "the domain of {agent_id:?} is locked for maintenance by {} \
                         since {} (`engram maintenance unlock` breaks a stale lock)",
                        match h.pid {
                            0 => "a process under WASI".to_owned(),
                            pid => format!("process {pid}"),
                        },
                        h.since
                    ),
                    Err(_) => format!("the domain of {agent_id:?} is locked for maintenance"),
                })
                .into())
            }
            Err(e) => Err(e).context("taking the maintenance lock"),
        }
    }

    /// The lock of `agent_id` as a guard that holds `value`, taken earlier
    /// by this holder (a host whose instance was replaced keeps its lock).
    /// Commits under it fail, naming the lock, if it holds another value.
    pub fn resume(backend: Arc<dyn Backend>, agent_id: &str, value: Vec<u8>) -> Self {
        LockGuard {
            backend,
            key: lock_key(agent_id),
            value,
        }
    }

    /// The value the lock holds while this guard has it.
    pub fn value(&self) -> &[u8] {
        &self.value
    }

    /// The condition every commit made under this lock carries.
    pub fn held(&self) -> Precondition {
        Precondition::Holds(self.key.clone(), self.value.clone())
    }
}

/// Why a maintenance lock could not be taken: someone else holds it (who,
/// and since when). Find it with `error.downcast_ref::<Locked>()`.
#[derive(Debug)]
pub struct Locked(pub String);

impl std::fmt::Display for Locked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Locked {}

impl Drop for LockGuard {
    fn drop(&mut self) {
        // A lock that was broken or cannot be released now stays for
        // `engram maintenance unlock`.
        let _ = self
            .backend
            .commit(&[self.held()], &[Op::Delete(self.key.clone())]);
    }
}

/// The id of this process, told in a lock it takes. WASI has none
/// (`std::process::id` is unsupported there): 0.
#[cfg(feature = "os")]
fn process_id() -> u32 {
    #[cfg(not(target_os = "wasi"))]
    return std::process::id();
    #[cfg(target_os = "wasi")]
    0
}

/// Why an online commit or a maintenance commit could not go through, when
/// the lock is the reason.
pub fn lock_refusal(backend: &dyn Backend, key: &[u8], ours: Option<&[u8]>) -> Option<StoreError> {
    let held = backend.get(key).ok()?;
    match (ours, held) {
        (None, Some(_)) => Some(StoreError::Unavailable(
            "the domain is locked for maintenance (IO-W7)".into(),
        )),
        (Some(ours), held) if held.as_deref() != Some(ours) => Some(StoreError::Unavailable(
            "the maintenance lock of the domain was broken".into(),
        )),
        _ => None,
    }
}

/// Breaks the maintenance lock of `agent_id`, whoever holds it; `true` when
/// there was one. For a lock left behind by a process that died.
pub fn break_lock(backend: &dyn Backend, agent_id: &str) -> Result<bool> {
    let key = lock_key(agent_id);
    let Some(held) = backend.get(&key)? else {
        return Ok(false);
    };
    backend.commit(
        &[Precondition::Holds(key.clone(), held)],
        &[Op::Delete(key)],
    )?;
    Ok(true)
}

/// The agents whose domains hold anything, in key order.
pub fn domains(backend: &dyn Backend) -> Result<Vec<String>> {
    let mut agents = Vec::new();
    let mut start = vec![0u8; 4];
    let end = LOCK_AREA[..1].to_vec();
    while let Some((key, _)) = backend.scan(&start, &end, 1, Order::Ascending)?.pop() {
        let len = u32::from_be_bytes(key[..4].try_into().context("a damaged key")?) as usize;
        let id = key
            .get(4..4 + len)
            .context("a key shorter than its domain id")?;
        agents.push(String::from_utf8(id.to_vec()).context("a domain id that is not UTF-8")?);
        start = successor(&key[..4 + len]);
    }
    Ok(agents)
}

/// How many pairs one commit of a forget removes.
const FORGET_PAGE: u32 = 1_000;

/// Forgets an agent: removes every key of its domain (records, indexes,
/// idempotency entries, counters) under its maintenance lock, then records
/// in the audit trail that it happened and how many entries went, nothing
/// of what they held (at `now`, by `caller`: a server's token name, if
/// any). `progress` hears the running count. Answers how many entries were
/// removed. A forget cut short can be run again to finish.
#[cfg(feature = "os")]
pub fn forget(
    backend: Arc<dyn Backend>,
    audit: &dyn AuditSink,
    agent_id: &str,
    (now, caller): (i64, Option<&str>),
    progress: &mut dyn FnMut(u64),
) -> Result<u64> {
    let lock = LockGuard::acquire(backend.clone(), agent_id, now)?;
    forget_under(&lock, audit, agent_id, (now, caller), progress)
}

/// [`forget`] under a lock the caller holds (a domain opened for
/// maintenance).
pub fn forget_under(
    lock: &LockGuard,
    audit: &dyn AuditSink,
    agent_id: &str,
    (now, caller): (i64, Option<&str>),
    progress: &mut dyn FnMut(u64),
) -> Result<u64> {
    let backend = &lock.backend;
    let prefix = crate::domain_prefix(agent_id);
    let end = successor(&prefix);
    let mut removed = 0u64;
    loop {
        let page = backend.scan(&prefix, &end, FORGET_PAGE, Order::Ascending)?;
        if page.is_empty() {
            break;
        }
        let ops: Vec<Op> = page.into_iter().map(|(key, _)| Op::Delete(key)).collect();
        match backend.commit(&[lock.held()], &ops) {
            Err(StoreError::Conflict) => {
                bail!("the maintenance lock of {agent_id:?} was broken during the forget")
            }
            other => other?,
        }
        removed += ops.len() as u64;
        progress(removed);
    }
    audit.append(&AuditEntry {
        at: now,
        agent_id: agent_id.to_owned(),
        request_id: "maintenance-forget".into(),
        operation: audit::Operation::Forget,
        source: Some(Source {
            agent_id: agent_id.to_owned(),
            component: Component::Maintenance,
            actor: Actor::System,
        }),
        record_type: None,
        outcome: audit::Outcome::Applied,
        stored_id: None,
        count: Some(u32::try_from(removed).unwrap_or(u32::MAX)),
        reason: None,
        caller: caller.map(str::to_owned),
    })?;
    Ok(removed)
}
