//! The pending part of a SQLite store's audit trail (S-AUDIT): a file beside the
//! store (`<store>-trail`) that entries of calls which commit nothing (reads,
//! refusals) are appended to, one JSON line each, with one `write` before the
//! call returns. No transaction, no flush, no lock: a read costs a read.
//!
//! The next commit of any process moves the entries appended since the
//! last move into the `engram_audit` table, in its own transaction and
//! ahead of its own entries, and records in that transaction how far the
//! file is moved (`engram_trail.moved`, a byte offset); so does reading the
//! trail. Only complete lines are moved: a line still being written by
//! another process is moved by a later commit.
//!
//! The file is emptied only by a process alone on it. Every process that
//! has the store open holds a shared lock on the file from open to close;
//! a mover that can turn its own into an exclusive one (no other process
//! has the store open) empties the file after its commit, having recorded
//! offset 0 in it. So an append never waits, and nothing appended is lost
//! to an emptying: a process that could still append holds its shared lock.
//!
//! What survives: an entry is in the operating system's hands when the call
//! returns, so it survives a crash of the process; until a commit moves it
//! into the table (synced at `synchronous=FULL`), a power loss can take it.
//! A line torn by a power loss is skipped when the file is moved (an entry
//! appended right after it on the same line is still recovered); a crash
//! between a commit that recorded offset 0 and the emptying leaves entries
//! to be moved twice, never none.
//!
//! Under WASI (`target_os = "wasi"`) there are no file locks to take, and
//! none are needed: there a store is used by one process at a time (see
//! [`SqliteBackend`](super::SqliteBackend)), which is always alone on the
//! file; the threads of a process are kept apart by the store's gate as on
//! any platform. The file, its lines and what survives are the same, so a
//! store written under WASI and one written natively take over each other's
//! pending entries.

use anyhow::{Context, Result};
use engram_model::audit::AuditEntry;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
#[cfg(not(target_os = "wasi"))]
use std::io::{Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The trail file of one store, opened once and locked shared while open.
pub(super) struct TrailFile {
    path: PathBuf,
    file: File,
    /// How long to wait for another process's lock on the file.
    #[cfg_attr(target_os = "wasi", allow(dead_code))]
    wait: Duration,
}

/// The entries appended since the last move, and where the file's
/// complete lines end.
pub(super) struct Pending {
    pub(super) entries: Vec<AuditEntry>,
    /// The offset just past the last complete line read.
    pub(super) end: u64,
}

impl TrailFile {
    /// Opens (creating if absent) the trail file of the store at `store`,
    /// and takes its shared lock for as long as it is open.
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
        let trail = TrailFile { path, file, wait };
        trail.share()?;
        Ok(trail)
    }

    /// Appends one entry with one write.
    pub(super) fn append(&self, entry: &AuditEntry) -> Result<()> {
        let mut line = serde_json::to_vec(entry)?;
        line.push(b'\n');
        (&self.file)
            .write_all(&line)
            .with_context(|| format!("{}: cannot append to the audit trail", self.shown()))
    }

    /// The file's length: 0 when it holds nothing to move.
    pub(super) fn len(&self) -> Result<u64> {
        self.file
            .metadata()
            .map(|m| m.len())
            .with_context(|| format!("{}: cannot read the audit trail's size", self.shown()))
    }

    /// The complete lines from `moved` on, parsed. A file shorter than
    /// `moved` was emptied by a hand other than a mover's: all of it is
    /// read.
    pub(super) fn pending(&self, moved: u64) -> Result<Pending> {
        let text = self
            .read_all()
            .with_context(|| format!("{}: cannot read the audit trail", self.shown()))?;
        let from = if moved > text.len() as u64 {
            0
        } else {
            moved as usize
        };
        let tail = &text[from..];
        let complete = tail.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        let entries = tail[..complete]
            .split(|b| *b == b'\n')
            .filter(|line| !line.is_empty())
            .filter_map(parse)
            .collect();
        Ok(Pending {
            entries,
            end: (from + complete) as u64,
        })
    }

    /// The file alone, when this process is: its shared lock turned into
    /// an exclusive one if nobody else holds the file (else it is shared
    /// again, and the answer is none). Dropping the answer shares it again.
    pub(super) fn exclusive(&self) -> Result<Option<Exclusive<'_>>> {
        #[cfg(not(target_os = "wasi"))]
        if self.file.try_lock().is_err() {
            // Turning a lock into another is not atomic: the shared lock
            // may be gone, so it is taken again.
            self.share()?;
            return Ok(None);
        }
        Ok(Some(Exclusive { trail: self }))
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

    /// Takes the file's shared lock (or turns an exclusive one into it),
    /// waiting for another process's exclusive lock for at most `wait`.
    #[cfg(not(target_os = "wasi"))]
    fn share(&self) -> Result<()> {
        use std::fs::TryLockError;
        use std::time::Instant;
        let deadline = Instant::now() + self.wait;
        loop {
            match self.file.try_lock_shared() {
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
    fn share(&self) -> Result<()> {
        Ok(())
    }

    /// Takes the write lock of the domain with lock key `key`: one byte of
    /// the file, at 2^62 + (`key` as unsigned >> 3), far past any length
    /// the file reaches; a lock of this open file (an open file description
    /// lock on Linux), waiting for another process's for at most `wait`.
    /// Under WASI there is no other process to keep out.
    pub(super) fn lock_domain(&self, key: i64) -> Result<()> {
        #[cfg(unix)]
        {
            use std::time::Instant;
            let deadline = Instant::now() + self.wait;
            let mut pause = Duration::from_micros(100);
            while !range_lock(&self.file, key, true)
                .with_context(|| format!("{}: cannot lock the domain", self.shown()))?
            {
                if Instant::now() >= deadline {
                    anyhow::bail!(
                        "{}: another process kept writing the domain for {:?}",
                        self.shown(),
                        self.wait
                    );
                }
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(2));
            }
        }
        #[cfg(not(unix))]
        let _ = key;
        Ok(())
    }

    /// Lets the domain's write lock go.
    pub(super) fn unlock_domain(&self, key: i64) {
        #[cfg(unix)]
        let _ = range_lock(&self.file, key, false);
        #[cfg(not(unix))]
        let _ = key;
    }

    fn shown(&self) -> std::path::Display<'_> {
        self.path.display()
    }
}

/// Takes (`lock`) or lets go of the byte of `file` that stands for the
/// domain with lock key `key`, without waiting: `Ok(false)` when another
/// process holds it.
#[cfg(unix)]
fn range_lock(file: &File, key: i64, lock: bool) -> std::io::Result<bool> {
    use std::os::fd::AsRawFd;
    // SAFETY: `flock` is a plain C struct for which all zeros is valid.
    let mut range: libc::flock = unsafe { std::mem::zeroed() };
    range.l_type = if lock { libc::F_WRLCK } else { libc::F_UNLCK } as _;
    range.l_whence = libc::SEEK_SET as _;
    range.l_start = ((1u64 << 62) + ((key as u64) >> 3)) as libc::off_t;
    range.l_len = 1;
    // Linux: a lock of the open file, so closing another descriptor of the
    // file (SQLite does) leaves it held; elsewhere, of the process.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    let command = libc::F_OFD_SETLK;
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    let command = libc::F_SETLK;
    // SAFETY: the descriptor is open for as long as `file` is, and `range`
    // outlives the call, which only reads it.
    if unsafe { libc::fcntl(file.as_raw_fd(), command, &range) } == 0 {
        return Ok(true);
    }
    let error = std::io::Error::last_os_error();
    match error.raw_os_error() {
        Some(libc::EAGAIN | libc::EACCES) if lock => Ok(false),
        _ => Err(error),
    }
}

/// The trail file, held by this process alone.
pub(super) struct Exclusive<'a> {
    trail: &'a TrailFile,
}

impl Exclusive<'_> {
    /// Empties the file (its entries are in the table, and a commit
    /// recorded offset 0), then shares it again.
    pub(super) fn empty(self) -> Result<()> {
        self.trail
            .file
            .set_len(0)
            .with_context(|| format!("{}: cannot empty the audit trail", self.trail.shown()))
    }
}

impl Drop for Exclusive<'_> {
    fn drop(&mut self) {
        // Should this fail, the file stays exclusive: other processes
        // cannot open the store (they wait, then say so) until this one
        // closes it; nothing is lost.
        let _ = self.trail.share();
    }
}

/// One line of the file, parsed; a line a power loss tore is skipped, but
/// an entry appended after the torn part, on the same line, is kept.
fn parse(line: &[u8]) -> Option<AuditEntry> {
    serde_json::from_slice(line).ok().or_else(|| {
        let start = line
            .windows(6)
            .rposition(|w| w == b"{\"at\":")
            .filter(|&i| i > 0)?;
        serde_json::from_slice(&line[start..]).ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(request_id: &str) -> AuditEntry {
        serde_json::from_value(serde_json::json!({
            "at": 1, "agent_id": "a", "request_id": request_id,
            "operation": "READ", "outcome": "RETURNED", "count": 1
        }))
        .unwrap()
    }

    #[test]
    fn only_complete_lines_after_the_moved_offset_are_pending() {
        let dir = tempfile::tempdir().unwrap();
        let trail = TrailFile::open(&dir.path().join("s.db"), Duration::from_secs(1)).unwrap();
        trail.append(&entry("one")).unwrap();
        let first = trail.pending(0).unwrap();
        assert_eq!(first.entries, vec![entry("one")]);
        trail.append(&entry("two")).unwrap();
        // A line still being written (no newline yet) waits.
        let partial = b"{\"at\":2,\"agent";
        (&trail.file).write_all(partial).unwrap();
        let second = trail.pending(first.end).unwrap();
        assert_eq!(second.entries, vec![entry("two")]);
        assert_eq!(second.end, trail.len().unwrap() - partial.len() as u64);
    }

    #[test]
    fn an_entry_after_a_torn_line_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let trail = TrailFile::open(&dir.path().join("s.db"), Duration::from_secs(1)).unwrap();
        (&trail.file)
            .write_all(b"{\"at\":2,\"agent_id\":\"a\",\"requ")
            .unwrap();
        trail.append(&entry("after")).unwrap();
        assert_eq!(trail.pending(0).unwrap().entries, vec![entry("after")]);
    }

    #[test]
    fn a_file_shorter_than_the_offset_is_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let trail = TrailFile::open(&dir.path().join("s.db"), Duration::from_secs(1)).unwrap();
        trail.append(&entry("one")).unwrap();
        assert_eq!(trail.pending(10_000).unwrap().entries, vec![entry("one")]);
    }

    #[cfg(not(target_os = "wasi"))]
    #[test]
    fn a_second_opener_keeps_the_first_from_being_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        let first = TrailFile::open(&path, Duration::from_secs(1)).unwrap();
        first.append(&entry("x")).unwrap();
        first.exclusive().unwrap().unwrap().empty().unwrap();
        assert_eq!(first.len().unwrap(), 0);
        let second = TrailFile::open(&path, Duration::from_millis(100)).unwrap();
        assert!(first.exclusive().unwrap().is_none());
        // Still shared: the second can append, and is not alone either.
        second.append(&entry("x")).unwrap();
        assert!(second.exclusive().unwrap().is_none());
        drop(second);
        let alone = first.exclusive().unwrap().unwrap();
        // While it is held, nobody else opens the file.
        assert!(TrailFile::open(&path, Duration::from_millis(50)).is_err());
        drop(alone);
        TrailFile::open(&path, Duration::from_millis(50)).unwrap();
    }
}
