//! Group commit (S-GROUP) for a store with one writer at a time: commits that arrive
//! while another is being written wait in a queue, and the next leader
//! writes the whole queue in one transaction (one flush to the disk), then
//! gives each caller its own answer.
//!
//! The first commit to find nobody writing leads at once, alone and with
//! no copy of its data: a single writer waits for nothing and pays nothing.
//! A commit that finds a leader at work copies itself into the queue and
//! waits. When a leader is done it hands the lead to the oldest queued
//! commit, which takes the queue from the front, itself first, within
//! [`MAX_GROUP_COMMITS`], [`MAX_GROUP_OPS`] and [`MAX_GROUP_BYTES`]. The
//! queue is first come, first served, so a commit waits for at most the
//! group being written and the groups ahead of it, each one transaction.

use super::{Op, Precondition, StoreError};
use engram_model::audit::AuditEntry;
use std::collections::VecDeque;
use std::sync::mpsc::{SyncSender, sync_channel};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// At most this many commits share one transaction.
pub(super) const MAX_GROUP_COMMITS: usize = 64;
/// A commit joins a group only while the group's preconditions, ops and
/// audit entries stay within this many (a group of one may hold more: each
/// commit is bounded by the host's `max_batch_ops` alone).
pub(super) const MAX_GROUP_OPS: usize = 10_000;
/// A commit joins a group only while the group's keys and values stay
/// within this many bytes (a group of one may hold more: each commit is
/// bounded by the host's `max_batch_bytes` alone).
pub(super) const MAX_GROUP_BYTES: usize = 16 << 20;

/// One commit as its caller made it.
#[derive(Clone, Copy)]
pub(super) struct Commit<'a> {
    pub preconditions: &'a [Precondition],
    pub ops: &'a [Op],
    pub trail: &'a [AuditEntry],
}

impl Commit<'_> {
    /// Checks nothing and changes nothing.
    pub fn is_empty(&self) -> bool {
        self.preconditions.is_empty() && self.ops.is_empty() && self.trail.is_empty()
    }

    fn size(&self) -> (usize, usize) {
        let count = self.preconditions.len() + self.ops.len() + self.trail.len();
        let bytes = self
            .preconditions
            .iter()
            .map(|p| match p {
                Precondition::Absent(key) => key.len(),
                Precondition::Holds(key, value) => key.len() + value.len(),
            })
            .chain(self.ops.iter().map(|op| match op {
                Op::Put(key, value) => key.len() + value.len(),
                Op::Delete(key) => key.len(),
            }))
            .sum();
        (count, bytes)
    }
}

/// A commit waiting in the queue, with the way to answer its caller.
struct Queued {
    preconditions: Vec<Precondition>,
    ops: Vec<Op>,
    trail: Vec<AuditEntry>,
    reply: SyncSender<Reply>,
}

impl Queued {
    fn commit(&self) -> Commit<'_> {
        Commit {
            preconditions: &self.preconditions,
            ops: &self.ops,
            trail: &self.trail,
        }
    }
}

/// What a waiting caller is told: its answer, or that it leads the next
/// group (its own commit handed back to it).
enum Reply {
    Done(Result<(), StoreError>),
    Lead(Queued),
}

/// Writes one group in one transaction: one answer per commit, in order.
pub(super) type Writer<'w> = dyn Fn(&[Commit<'_>]) -> Vec<Result<(), StoreError>> + 'w;

/// The queue of commits waiting for the writer.
#[derive(Default)]
pub(super) struct GroupQueue {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// A leader is writing a group; whoever comes now queues.
    busy: bool,
    queue: VecDeque<Queued>,
}

impl GroupQueue {
    /// Commits `own` through `write`, alone or in a group with the commits
    /// queued behind a leader at work, and answers for `own` alone.
    pub(super) fn commit(&self, own: Commit<'_>, write: &Writer<'_>) -> Result<(), StoreError> {
        let mut state = self.state();
        if !state.busy {
            state.busy = true;
            drop(state);
            let _lead = Leadership { queue: self };
            return write(&[own]).pop().unwrap_or_else(no_answer);
        }
        let (reply, answer) = sync_channel(1);
        state.queue.push_back(Queued {
            preconditions: own.preconditions.to_vec(),
            ops: own.ops.to_vec(),
            trail: own.trail.to_vec(),
            reply,
        });
        drop(state);
        // The leader answers every commit it took, or drops the channel if
        // it could not (then nothing tells whether it was stored).
        match answer.recv() {
            Ok(Reply::Done(answer)) => answer,
            Ok(Reply::Lead(mine)) => self.lead(mine, write),
            Err(_) => Err(StoreError::Unavailable(
                "the group this commit was written with ended without an answer".into(),
            )),
        }
    }

    /// Leads a group: `mine` first, then what is queued, within the bounds.
    fn lead(&self, mine: Queued, write: &Writer<'_>) -> Result<(), StoreError> {
        let _lead = Leadership { queue: self };
        let mut members = vec![mine];
        {
            let mut state = self.state();
            let (mut count, mut bytes) = members[0].commit().size();
            while members.len() < MAX_GROUP_COMMITS {
                let Some(next) = state.queue.front() else {
                    break;
                };
                let (c, b) = next.commit().size();
                if count + c > MAX_GROUP_OPS || bytes + b > MAX_GROUP_BYTES {
                    break;
                }
                count += c;
                bytes += b;
                if let Some(next) = state.queue.pop_front() {
                    members.push(next);
                }
            }
        }
        let commits: Vec<Commit<'_>> = members.iter().map(Queued::commit).collect();
        let mut answers = write(&commits).into_iter();
        let own = answers.next().unwrap_or_else(no_answer);
        // A member left without an answer sees its channel dropped.
        for (member, answer) in members.into_iter().skip(1).zip(answers) {
            let _ = member.reply.send(Reply::Done(answer));
        }
        own
    }

    /// How many commits wait in the queue at this moment.
    pub(super) fn waiting(&self) -> usize {
        self.state().queue.len()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // Nothing can panic while the state is held, and it is whole
        // between any two steps: a poisoned lock is taken as it is.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn no_answer() -> Result<(), StoreError> {
    Err(StoreError::Unavailable(
        "the group commit gave no answer for this commit".into(),
    ))
}

/// Held while a group is written; when dropped (even by a panic) hands the
/// lead to the oldest queued commit, or lets the next commit lead at once.
struct Leadership<'q> {
    queue: &'q GroupQueue,
}

impl Drop for Leadership<'_> {
    fn drop(&mut self) {
        let mut state = self.queue.state();
        while let Some(next) = state.queue.pop_front() {
            let reply = next.reply.clone();
            // Each channel carries one message, so this never blocks; a
            // caller that is gone cannot lead, the next one is asked.
            if reply.send(Reply::Lead(next)).is_ok() {
                return;
            }
        }
        state.busy = false;
    }
}
