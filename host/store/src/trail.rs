//! The pending part of a SQLite store's audit trail: a file beside the
//! store (`<store>-trail`) that entries of calls which commit nothing (reads,
//! refusals) are appended to, one JSON line each, with one `write` before the
//! call returns. No transaction, no flush: a read costs a read.
//!
//! The next commit of any process moves the file's entries into the
//! `engram_audit` table, in its own transaction and ahead of its own
//! entries, then empties the file; so does reading the trail. Appenders
//! hold a shared lock on the file, the one moving it an exclusive lock, so
//! no entry is appended while the file is read and emptied.
//!
//! What survives: an entry is in the operating system's hands when the call
//! returns, so it survives a crash of the process; until a commit moves it
//! into the table (synced at `synchronous=FULL`), a power loss can take it.
//! A line torn by a power loss is skipped when the file is moved.
//!
//! Under WASI (`target_os = "wasi"`) there are no file locks to take, and
//! none are needed: there a store is used by one process at a time (see
//! [`SqliteBackend`](super::SqliteBackend)), and the threads of a process
//! are kept apart by the store's gate as on any platform. The file, its
//! lines and what survives are the same, so a store written under WASI and
//! one written natively take over each other's pending entries.

use anyhow::{Context, Result};
use engram_model::audit::AuditEntry;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
#[cfg(not(target_os = "wasi"))]
use std::io::{Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The trail file of one store, opened once.
pub(super) struct TrailFile {
    path: PathBuf,
    file: File,
    /// How long to wait for another process's lock on the file.
    #[cfg_attr(target_os = "wasi", allow(dead_code))]
    wait: Duration,
}

/// How a lock is taken.
#[derive(Clone, Copy)]
enum Lock {
    Shared,
    Exclusive,
}

impl TrailFile {
    /// Opens (creating if absent) the trail file of the store at `store`.
    pub(super) fn open(store: &Path, wait: Duration) -> Result<Self> {
        let mut name = store.as_os_str().to_owned();
        name.push("-trail");
        let path = PathBuf::from(name);
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(&path)
            .with_context(|| format!("{}: cannot open the audit trail file", path.display()))?;
        Ok(TrailFile { path, file, wait })
    }

    /// Appends one entry with one write.
    pub(super) fn append(&self, entry: &AuditEntry) -> Result<()> {
        let mut line = serde_json::to_vec(entry)?;
        line.push(b'\n');
        self.lock(Lock::Shared)?;
        let written = (&self.file).write_all(&line);
        self.unlock();
        written.with_context(|| format!("{}: cannot append to the audit trail", self.shown()))
    }

    /// Locks the file for moving its entries when it holds any: the
    /// entries, parsed, and a guard that empties the file when told the
    /// entries are safe elsewhere, and unlocks it when dropped.
    pub(super) fn take(&self) -> Result<Option<(Vec<AuditEntry>, Taken<'_>)>> {
        if self.file.metadata().map(|m| m.len()).unwrap_or(1) == 0 {
            return Ok(None);
        }
        self.lock(Lock::Exclusive)?;
        let taken = Taken { trail: self };
        let text = self
            .read_all()
            .with_context(|| format!("{}: cannot read the audit trail", self.shown()))?;
        if text.is_empty() {
            return Ok(None);
        }
        let entries = text
            .split(|b| *b == b'\n')
            .filter(|line| !line.is_empty())
            // A line a power loss tore is skipped.
            .filter_map(|line| serde_json::from_slice(line).ok())
            .collect();
        Ok(Some((entries, taken)))
    }

    /// The whole file.
    #[cfg(not(target_os = "wasi"))]
    fn read_all(&self) -> std::io::Result<Vec<u8>> {
        let mut text = Vec::new();
        (&self.file).seek(SeekFrom::Start(0))?;
        (&self.file).read_to_end(&mut text)?;
        Ok(text)
    }

    /// The whole file, read through a handle of its own: under WASI a
    /// file opened for appending reads as empty.
    #[cfg(target_os = "wasi")]
    fn read_all(&self) -> std::io::Result<Vec<u8>> {
        let mut text = Vec::new();
        File::open(&self.path)?.read_to_end(&mut text)?;
        Ok(text)
    }

    /// Takes the file's lock `how`, waiting for another process's for at
    /// most `wait`.
    #[cfg(not(target_os = "wasi"))]
    fn lock(&self, how: Lock) -> Result<()> {
        use std::fs::TryLockError;
        use std::time::Instant;
        let deadline = Instant::now() + self.wait;
        loop {
            let tried = match how {
                Lock::Shared => self.file.try_lock_shared(),
                Lock::Exclusive => self.file.try_lock(),
            };
            match tried {
                Ok(()) => return Ok(()),
                Err(TryLockError::WouldBlock) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_micros(200));
                }
                Err(TryLockError::WouldBlock) => anyhow::bail!(
                    "{}: the audit trail file stayed locked for {:?}",
                    self.shown(),
                    self.wait
                ),
                Err(TryLockError::Error(error)) => {
                    return Err(error)
                        .with_context(|| format!("{}: cannot lock the audit trail", self.shown()));
                }
            }
        }
    }

    /// No file locks under WASI: the process is alone on its store.
    #[cfg(target_os = "wasi")]
    fn lock(&self, how: Lock) -> Result<()> {
        let _ = how;
        Ok(())
    }

    /// Lets the file's lock go.
    fn unlock(&self) {
        #[cfg(not(target_os = "wasi"))]
        let _ = self.file.unlock();
    }

    fn shown(&self) -> std::path::Display<'_> {
        self.path.display()
    }
}

/// The trail file, locked while its entries are moved.
pub(super) struct Taken<'a> {
    trail: &'a TrailFile,
}

impl Taken<'_> {
    /// The entries are in the table: empties the file.
    pub(super) fn moved(self) -> Result<()> {
        self.trail
            .file
            .set_len(0)
            .with_context(|| format!("{}: cannot empty the audit trail", self.trail.shown()))
    }
}

impl Drop for Taken<'_> {
    fn drop(&mut self) {
        self.trail.unlock();
    }
}
