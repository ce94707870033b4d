//! The embedded default: one SQLite file holding the key-value pairs of
//! every domain and the audit trail.
//!
//! **Under WASI** (`target_os = "wasi"`, SQLite built from its bundled C
//! source for the target) the file is the same: the same tables,
//! `application_id`, `user_version` and WAL journal, so a store written by a
//! WASI process opens natively and the other way round. What differs is
//! locking, since WASI 0.2 gives a process no file locks and no shared
//! memory:
//!
//! - the store is opened through SQLite's `unix-none` VFS, which takes no
//!   locks, and at once put in `locking_mode = EXCLUSIVE`, before any
//!   statement reads the schema and before the switch to WAL: WAL then
//!   keeps its index in the process's memory instead of the `-shm` file
//!   (an existing WAL store opened otherwise fails with `SQLITE_CANTOPEN`);
//! - temporary files stay in memory (`temp_store = MEMORY`): a WASI process
//!   may reach no temporary folder;
//! - so under WASI a store is used by **one process at a time**: nothing
//!   keeps a second process out, WASI or native, and two at once would
//!   damage the file. A process that ends without closing the store (a
//!   trap, or a component with no hook at its end) leaves its WAL behind,
//!   committed and synced as always; the next process to open the store
//!   recovers it, as after a crash. SQLite's `unix-dotfile` VFS would keep
//!   other WASI processes out, but its lock (a folder beside the store)
//!   outlives every process that does not close the store, and then keeps
//!   every later one out.

use super::group::{Commit, GroupQueue};
use super::trail::{Exclusive, TrailFile};
use super::{Backend, Op, Order, Pair, Precondition, StoreError};
use anyhow::{Context, Result, bail};
use engram_model::audit::{AuditEntry, AuditQuery, AuditSink};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{LazyLock, Mutex, MutexGuard, RwLock};
use std::time::Duration;

/// Marks a SQLite file as an Engram store (`PRAGMA application_id`).
const APPLICATION_ID: i32 = 0x454e_4752; // "ENGR"
/// The schema, every version of it: the one text every host runs.
const SCHEMA: &str = include_str!("sqlite-schema.sql");

/// The statements of each version of [`SCHEMA`], oldest first.
static SCHEMA_VERSIONS: LazyLock<Vec<(i32, &'static str)>> =
    LazyLock::new(|| crate::schema::versions(SCHEMA));

/// The schema version this build reads and writes (`PRAGMA user_version`):
/// the last of [`SCHEMA`]. Version 2 added `engram_trail`, version 3 the
/// audit trail's `caller`, version 4 keyed the audit rows by agent (one
/// tree, no index beside it); a store of an older version is brought to it
/// when opened.
fn schema_version() -> i32 {
    crate::schema::last(&SCHEMA_VERSIONS)
}

/// The statements that bring a store of version `from` to the last one.
fn schema_after(from: i32) -> String {
    crate::schema::after(&SCHEMA_VERSIONS, from)
}

/// Why an empty path is refused as a SQLite store: every host's words.
pub const EMPTY_PATH: &str = "a SQLite store's path is empty: name a file";

/// How hard SQLite works to make a commit durable (`PRAGMA synchronous`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Synchronous {
    /// Every commit reaches the disk before it returns: survives power loss.
    #[default]
    Full,
    /// In WAL mode, a commit survives a crash of the process but the last
    /// ones may be lost on power loss.
    Normal,
}

/// Options for opening a SQLite store.
#[derive(Clone, Debug)]
pub struct SqliteOptions {
    /// Durability of each commit; `Full` by default.
    pub synchronous: Synchronous,
    /// How long a call waits for another process holding the file's write
    /// lock; 5 seconds by default.
    pub busy_timeout: Duration,
    /// Group commit, on by default: commits that arrive while another is
    /// being written (from other threads of this process) wait, and are
    /// then written together in one transaction, each in a savepoint of its
    /// own, with one flush to the disk. Each is still all or nothing, with
    /// its own answer: a precondition that fails fails that commit alone;
    /// if the transaction cannot be committed, every commit of the group
    /// fails and none is stored. A group holds at most 64 commits, and
    /// more than one only while it stays within 10,000 preconditions, ops
    /// and audit entries and 16 MiB of keys and values. A commit that finds
    /// nobody writing is written at once, alone. `false`: every commit is
    /// its own transaction.
    pub group_commit: bool,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        SqliteOptions {
            synchronous: Synchronous::Full,
            busy_timeout: Duration::from_secs(5),
            group_commit: true,
        }
    }
}

/// A store in one SQLite file (WAL journal). It serves as both the
/// persistence backend and the audit sink.
///
/// The audit entries of a commit are written in its transaction. Entries
/// of calls that commit nothing (reads, refusals) are appended to a file
/// beside the store and moved into the table by the next commit (see
/// [`trail`](super::trail)): they survive a crash of the process, and a
/// read costs no transaction of its own.
///
/// Commits from many threads are written in groups, one transaction each
/// (see [`SqliteOptions::group_commit`]); a single caller writes at once,
/// with no thread of its own. Under WASI a store is used by one process at
/// a time (see the [module](self)). The file's format: S-FILE.
pub struct SqliteBackend {
    path: PathBuf,
    options: SqliteOptions,
    conn: Mutex<Connection>,
    /// A call failed with the store unavailable (an I/O error, a lock that
    /// stayed taken): the connection is closed and opened again before its
    /// next use. An I/O error can leave SQLite's locks of the file (those
    /// of the `-shm` file above all) in a state it cannot leave by itself,
    /// where every later call waits out the busy timeout and fails; closing
    /// the process's last connection to the file resets them.
    broken: AtomicBool,
    trail: TrailFile,
    /// Appenders to the trail file share it; moving the file's entries
    /// takes it alone. The file's own lock keeps other processes out, but
    /// not other threads: they share its one open file.
    trail_gate: RwLock<()>,
    /// The last audit `seq` this process gave (see [`insert_audit`]);
    /// changed only by the writer holding the connection.
    last_seq: AtomicI64,
    /// `None` when group commit is off.
    group: Option<GroupQueue>,
    /// The threads of this process writing a domain take turns; other
    /// processes are kept out by the trail file's range locks.
    writers: crate::turns::Turns,
}

impl SqliteBackend {
    /// Opens the store at `path` with default options, creating it if the
    /// file does not exist.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::open_with(path, &SqliteOptions::default())
    }

    /// Opens the store at `path`, creating it if the file does not exist.
    /// A file that is not an Engram store is refused and left untouched.
    ///
    /// Processes opening (or creating) the same file at once can find it
    /// locked while another switches it to WAL; opening is then tried
    /// again, for at most the busy timeout.
    ///
    /// A read that fails while opening (an I/O error, or what SQLite takes
    /// for damage) is tried once more: an I/O error of a moment is not the
    /// file's state.
    ///
    /// An empty path is refused ([`EMPTY_PATH`]).
    pub fn open_with(path: impl AsRef<Path>, options: &SqliteOptions) -> Result<Self> {
        anyhow::ensure!(!path.as_ref().as_os_str().is_empty(), EMPTY_PATH);
        let deadline = std::time::Instant::now() + options.busy_timeout;
        let mut pause = Duration::from_millis(1);
        let mut retried = false;
        loop {
            match Self::open_once(path.as_ref(), options) {
                Err(error)
                    if error.downcast_ref::<Busy>().is_some()
                        && std::time::Instant::now() < deadline =>
                {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(50));
                }
                Err(error) if error.downcast_ref::<Unreadable>().is_some() && !retried => {
                    retried = true;
                    std::thread::sleep(Duration::from_millis(10));
                }
                other => return other,
            }
        }
    }

    fn open_once(path: &Path, options: &SqliteOptions) -> Result<Self> {
        let conn = connect(path).map_err(failed(path, "cannot open the store"))?;
        conn.busy_timeout(options.busy_timeout)
            .map_err(failed(path, "cannot set the busy timeout"))?;
        let mut found = identify(&conn, path)?;
        if found == (0, 0, 0) {
            found = create(&conn, path)?;
        }
        let current = schema_version();
        if older(found) {
            found = upgrade(&conn, path)?;
        }
        let shown = path.display();
        match found {
            (APPLICATION_ID, version, _) if version == current => {}
            (APPLICATION_ID, other, _) => {
                bail!(
                    "{shown}: Engram store of schema version {other}; this build reads version {current}"
                )
            }
            _ => bail!("{shown}: not an Engram store (it is another SQLite database)"),
        }
        switch_to_wal(&conn, path)?;
        durability(&conn, options).map_err(failed(path, "cannot set the durability"))?;
        let trail = TrailFile::open(path, options.busy_timeout)?;
        Ok(SqliteBackend {
            path: path.to_path_buf(),
            options: options.clone(),
            conn: Mutex::new(conn),
            broken: AtomicBool::new(false),
            trail,
            trail_gate: RwLock::new(()),
            last_seq: AtomicI64::new(0),
            group: options.group_commit.then(GroupQueue::default),
            writers: Default::default(),
        })
    }

    /// The file this store lives in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The durability the store's connection commits with, as SQLite
    /// reports it (`PRAGMA synchronous`).
    pub fn synchronous(&self) -> Result<Synchronous> {
        let level: i64 = self
            .lock()?
            .query_row("PRAGMA synchronous", [], |row| row.get(0))
            .with_context(|| format!("{}: cannot read the durability", self.path.display()))?;
        match level {
            2 => Ok(Synchronous::Full),
            1 => Ok(Synchronous::Normal),
            other => bail!(
                "{}: synchronous is {other}, neither FULL nor NORMAL",
                self.path.display()
            ),
        }
    }

    /// How many commits wait at this moment for the one being written, to
    /// be written together after it (none when group commit is off).
    pub fn waiting_commits(&self) -> usize {
        self.group.as_ref().map_or(0, GroupQueue::waiting)
    }

    /// The connection, opened again first when a call before failed with
    /// the store unavailable.
    fn lock(&self) -> Result<MutexGuard<'_, Connection>, StoreError> {
        let mut conn = self
            .conn
            .lock()
            .map_err(|_| StoreError::Unavailable("the connection was poisoned".into()))?;
        if self.broken.load(Ordering::Acquire) {
            self.reopen(&mut conn)?;
        }
        Ok(conn)
    }

    /// Closes the connection, then opens it again (the file's journal mode
    /// is the file's own; the connection's settings are set anew). Until a
    /// reopening succeeds, every call tries again and none uses the closed
    /// connection.
    fn reopen(&self, conn: &mut Connection) -> Result<(), StoreError> {
        let failed = |e: rusqlite::Error| {
            StoreError::Unavailable(format!(
                "{}: cannot open the store again after a failure: {}",
                self.path.display(),
                describe(&e)
            ))
        };
        // The old connection is closed before the new one opens: SQLite
        // forgets a file's locks only with the process's last connection.
        let placeholder = Connection::open_in_memory().map_err(failed)?;
        drop(std::mem::replace(conn, placeholder));
        let fresh = connect(&self.path).and_then(|fresh| {
            fresh.busy_timeout(self.options.busy_timeout)?;
            durability(&fresh, &self.options)?;
            Ok(fresh)
        });
        *conn = fresh.map_err(failed)?;
        self.broken.store(false, Ordering::Release);
        Ok(())
    }

    /// `result`, having marked the connection to be opened again when it
    /// is a failure of the store (not a precondition's conflict).
    fn checked<T>(&self, result: Result<T, StoreError>) -> Result<T, StoreError> {
        if matches!(result, Err(StoreError::Unavailable(_))) {
            self.broken.store(true, Ordering::Release);
        }
        result
    }

    /// The audit trail, oldest first: the newest entries that match `query`.
    /// One agent's are one range of the table's key; those of every agent
    /// are each agent's newest, merged (the agents found by a skip over the
    /// key, so a listing reads no more than each agent's newest `limit`).
    pub fn audit_trail(&self, query: &AuditQuery) -> Result<Vec<AuditEntry>> {
        let shown = |e: &dyn std::fmt::Display| anyhow::anyhow!("{}: {e}", self.path.display());
        // The pending entries first: every entry is then in the table.
        self.commit_with(&[], &[], &[]).map_err(|e| shown(&e))?;
        let conn = self.lock().map_err(|e| shown(&e))?;
        // One read transaction: every agent's entries of one moment.
        let conn = conn.unchecked_transaction()?;
        let mut newest: Vec<(i64, AuditEntry)> = match &query.agent {
            Some(agent) => agent_trail(&conn, agent, query, None)?,
            None => {
                let mut first = conn.prepare_cached(
                    "SELECT agent_id FROM engram_audit ORDER BY agent_id LIMIT 1",
                )?;
                let mut next = conn.prepare_cached(
                    "SELECT agent_id FROM engram_audit WHERE agent_id > ?1
                     ORDER BY agent_id LIMIT 1",
                )?;
                let limit = usize::try_from(query.limit).unwrap_or(usize::MAX);
                let mut newest = Vec::new();
                let mut agent: Option<String> = None;
                while let Some(found) = match &agent {
                    None => first.query_row([], |row| row.get::<_, String>(0)),
                    Some(after) => next.query_row([after], |row| row.get::<_, String>(0)),
                }
                .optional()?
                {
                    // Once `limit` entries are in hand, an agent's older
                    // than the oldest of them cannot be among the newest.
                    let floor = (newest.len() >= limit)
                        .then(|| newest.last().map(|(seq, _): &(i64, AuditEntry)| *seq))
                        .flatten();
                    newest.extend(agent_trail(&conn, &found, query, floor)?);
                    newest.sort_by(|(a, x), (b, y)| b.cmp(a).then(y.agent_id.cmp(&x.agent_id)));
                    newest.truncate(limit);
                    agent = Some(found);
                }
                newest
            }
        };
        newest.reverse();
        Ok(newest.into_iter().map(|(_, entry)| entry).collect())
    }
}

/// The newest entries of `agent` that match `query` (its agent aside),
/// newest first, each with its `seq`; only those from `floor` on when given.
fn agent_trail(
    conn: &Connection,
    agent: &str,
    query: &AuditQuery,
    floor: Option<i64>,
) -> Result<Vec<(i64, AuditEntry)>> {
    let mut statement = conn.prepare_cached(
        "SELECT seq, at, agent_id, request_id, operation, source, record_type, outcome,
                stored_id, count, reason, caller
         FROM engram_audit
         WHERE agent_id = ?1
           AND (?2 IS NULL OR at >= ?2)
           AND (?3 IS NULL OR at < ?3)
           AND (?4 IS NULL OR operation = ?4)
           AND (?5 IS NULL OR outcome = ?5)
           AND (?7 IS NULL OR seq >= ?7)
         ORDER BY seq DESC LIMIT ?6",
    )?;
    let text = |v: serde_json::Value| v.as_str().map(str::to_owned);
    let operation = query.operation.map(serde_json::to_value).transpose()?;
    let outcome = query.outcome.map(serde_json::to_value).transpose()?;
    let (operation, outcome) = (operation.and_then(text), outcome.and_then(text));
    let rows = statement.query_map(
        params![
            agent,
            query.since,
            query.until,
            operation,
            outcome,
            query.limit,
            floor
        ],
        |row| {
            let text = |i: usize| row.get::<_, Option<String>>(i);
            Ok((
                row.get::<_, i64>(0)?,
                row.get::<_, i64>(1)?,
                row.get::<_, String>(2)?,
                row.get::<_, String>(3)?,
                row.get::<_, String>(4)?,
                text(5)?,
                text(6)?,
                row.get::<_, String>(7)?,
                text(8)?,
                row.get::<_, Option<u32>>(9)?,
                text(10)?,
                text(11)?,
            ))
        },
    )?;
    let mut entries = Vec::new();
    for row in rows {
        let (
            seq,
            at,
            agent_id,
            request_id,
            operation,
            source,
            record_type,
            outcome,
            stored_id,
            count,
            reason,
            caller,
        ) = row?;
        entries.push((
            seq,
            AuditEntry {
                at,
                agent_id,
                request_id,
                operation: serde_json::from_value(operation.into())?,
                source: source.map(|s| serde_json::from_str(&s)).transpose()?,
                record_type: record_type
                    .map(|t| serde_json::from_value(t.into()))
                    .transpose()?,
                outcome: serde_json::from_value(outcome.into())?,
                stored_id,
                count,
                reason,
                caller,
            },
        ));
    }
    Ok(entries)
}

/// The error of one step of opening the store at `path`: the file, what
/// was being done, and why it failed; a busy file or a failed read is
/// marked so that opening is tried again.
fn failed<'a>(
    path: &'a Path,
    doing: &'static str,
) -> impl Fn(rusqlite::Error) -> anyhow::Error + 'a {
    move |e: rusqlite::Error| {
        use rusqlite::ErrorCode;
        let shown = path.display();
        match e.sqlite_error_code() {
            Some(ErrorCode::DatabaseBusy) => {
                anyhow::Error::new(Busy(format!("{shown}: {doing}: {}", describe(&e))))
            }
            Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => anyhow::Error::new(
                Unreadable(format!("{shown}: {doing}: {}", unreadable(path, &e))),
            ),
            Some(ErrorCode::SystemIoFailure) => {
                anyhow::Error::new(Unreadable(format!("{shown}: {doing}: {}", describe(&e))))
            }
            _ => anyhow::anyhow!("{shown}: {doing}: {}", describe(&e)),
        }
    }
}

/// What the file says it is: its application id, schema version and how
/// many schema objects it holds (all 0: empty, to be created).
fn identify(conn: &Connection, path: &Path) -> Result<(i32, i32, i64)> {
    conn.query_row(
        "SELECT (SELECT application_id FROM pragma_application_id),
                (SELECT user_version FROM pragma_user_version),
                (SELECT count(*) FROM sqlite_schema)",
        [],
        |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
    )
    .map_err(|e| match e.sqlite_error_code() {
        // A file whose size no SQLite database has is none. One that
        // could be one is as likely a read that failed (a short read of the
        // header looks the same): read again, then said so.
        Some(rusqlite::ErrorCode::NotADatabase) if !sized_like_a_database(path) => {
            anyhow::anyhow!(
                "{}: not an Engram store (not a SQLite database)",
                path.display()
            )
        }
        _ => failed(path, "cannot read the store")(e),
    })
}

/// Whether `found` is an Engram store of an earlier schema version.
fn older(found: (i32, i32, i64)) -> bool {
    found.0 == APPLICATION_ID && (1..schema_version()).contains(&found.1)
}

/// Runs `step` under the write lock, after checking with `identify` that
/// it is still to be done (`needed`): another process may have done it
/// meanwhile. What the file is then.
fn under_write_lock(
    conn: &Connection,
    path: &Path,
    doing: &'static str,
    needed: impl Fn((i32, i32, i64)) -> bool,
    step: impl FnOnce((i32, i32, i64)) -> rusqlite::Result<(i32, i32, i64)>,
) -> Result<(i32, i32, i64)> {
    conn.execute_batch("BEGIN IMMEDIATE")
        .map_err(failed(path, doing))?;
    let found = identify(conn, path)?;
    let done = if needed(found) {
        step(found)
    } else {
        Ok(found)
    };
    let finished = done.and_then(|d| conn.execute_batch("COMMIT").map(|()| d));
    if finished.is_err() {
        let _ = conn.execute_batch("ROLLBACK");
    }
    finished.map_err(failed(path, doing))
}

/// Creates the store in an empty file: the schema, the application id and
/// the version, unless another process created it meanwhile.
fn create(conn: &Connection, path: &Path) -> Result<(i32, i32, i64)> {
    under_write_lock(
        conn,
        path,
        "cannot create the store",
        |found| found == (0, 0, 0),
        |_| {
            conn.execute_batch(&format!(
                "{}
                 PRAGMA application_id = {APPLICATION_ID};
                 PRAGMA user_version = {};",
                schema_after(0),
                schema_version()
            ))
            .map(|()| (APPLICATION_ID, schema_version(), 1))
        },
    )
}

/// Brings a store of an earlier schema version to this one: the versions
/// after its own, under the write lock. Version 1 had no `engram_trail`:
/// its trail file is moved from the start.
fn upgrade(conn: &Connection, path: &Path) -> Result<(i32, i32, i64)> {
    let current = schema_version();
    under_write_lock(conn, path, "cannot upgrade the store", older, |found| {
        conn.execute_batch(&format!(
            "{} PRAGMA user_version = {current};",
            schema_after(found.1)
        ))
        .map(|()| (APPLICATION_ID, current, found.2))
    })
}

/// Switches the store to the WAL journal. The pragma answers its row
/// before the switch is committed, so an error of the switch (a failed
/// fsync) comes only with the step that ends the statement: it is run to
/// its end. The file is never read here through a descriptor of the host's
/// own: closing one would let go of the lock SQLite keeps on the file while
/// a connection is open in WAL mode, and another process closing the store
/// would then delete the WAL under this one's writes.
fn switch_to_wal(conn: &Connection, path: &Path) -> Result<()> {
    let mode = (|| {
        let mut statement = conn.prepare("PRAGMA journal_mode = WAL")?;
        let mut rows = statement.query([])?;
        let mode = match rows.next()? {
            Some(row) => row.get::<_, String>(0)?,
            None => String::new(),
        };
        while rows.next()?.is_some() {}
        Ok::<_, rusqlite::Error>(mode)
    })()
    .map_err(failed(path, "cannot switch the store to the WAL journal"))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(anyhow::Error::new(Unreadable(format!(
            "{}: the switch to the WAL journal did not take (the journal is {mode:?}); check the disk",
            path.display()
        ))));
    }
    Ok(())
}

/// A connection to the file at `path`, created if absent.
#[cfg(not(target_os = "wasi"))]
fn connect(path: &Path) -> rusqlite::Result<Connection> {
    Connection::open(path)
}

/// A connection to the file at `path`, created if absent: under WASI, with
/// no locks, in exclusive locking mode, temporary files in memory (see the
/// [module](self)). The locking mode comes first, before anything reads the
/// schema.
#[cfg(target_os = "wasi")]
fn connect(path: &Path) -> rusqlite::Result<Connection> {
    let conn =
        Connection::open_with_flags_and_vfs(path, rusqlite::OpenFlags::default(), c"unix-none")?;
    conn.query_row("PRAGMA locking_mode = EXCLUSIVE", [], |row| {
        row.get::<_, String>(0)
    })?;
    conn.execute_batch("PRAGMA temp_store = MEMORY")?;
    Ok(conn)
}

/// The connection's durability settings: `synchronous` as the options
/// say, and a checkpoint every 4,096 pages (16 MiB of WAL at most) instead
/// of SQLite's 1,000: a write touches several pages, often the same ones
/// (the counter, the audit rows, index pages), which fewer checkpoints copy
/// to the file fewer times.
fn durability(conn: &Connection, options: &SqliteOptions) -> rusqlite::Result<()> {
    let sync = match options.synchronous {
        Synchronous::Full => "FULL",
        Synchronous::Normal => "NORMAL",
    };
    conn.execute_batch(&format!(
        "PRAGMA synchronous = {sync}; PRAGMA wal_autocheckpoint = 4096;"
    ))
}

/// Opening found the file locked by another process; worth another try.
#[derive(Debug)]
struct Busy(String);

impl std::fmt::Display for Busy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Busy {}

/// Opening could not read the file: worth one more try.
#[derive(Debug)]
struct Unreadable(String);

impl std::fmt::Display for Unreadable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Unreadable {}

/// What SQLite's "damaged" or "not a database" means for the file at
/// `path`: SQLite answers so when a read fails under it too, and a store
/// must not be called damaged for an I/O error (its user might delete it).
/// Only the file's size is looked at, from its metadata: a descriptor of
/// our own on the file, once closed, would let go of the locks SQLite holds
/// on it for every connection of this process (see [`SqliteBackend::open`]).
/// Whether the file at `path` has a size a SQLite database can have: a
/// whole number of pages (512 bytes to 64 KiB each), at least one. Its
/// size is read without opening it: closing a descriptor of the file would
/// let go of the locks SQLite holds on it in this process.
fn sized_like_a_database(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|meta| meta.len() >= 512 && meta.len() % 512 == 0)
}

fn unreadable(path: &Path, error: &rusqlite::Error) -> String {
    match std::fs::metadata(path) {
        Err(io) => format!("reading the file's metadata failed: {io}"),
        Ok(meta) if meta.len() == 0 => format!(
            "a read of the file failed ({}, on an empty file, which holds nothing to damage)",
            describe(error)
        ),
        Ok(_) => format!(
            "{}, or a read of the file failed: a disk I/O error is as likely as damage: check the disk before anything else",
            describe(error)
        ),
    }
}

fn unavailable(error: rusqlite::Error) -> StoreError {
    StoreError::Unavailable(describe(&error))
}

/// A SQLite error in words a user can act on: which operation failed, not
/// an error code.
pub(crate) fn describe(error: &rusqlite::Error) -> String {
    use rusqlite::ffi;
    let Some(code) = error.sqlite_error().map(|e| e.extended_code) else {
        return error.to_string();
    };
    let what = match code {
        ffi::SQLITE_IOERR_READ | ffi::SQLITE_IOERR_SHORT_READ => "reading the file failed",
        ffi::SQLITE_IOERR_WRITE => "writing the file failed",
        ffi::SQLITE_IOERR_FSYNC | ffi::SQLITE_IOERR_DIR_FSYNC => {
            "flushing the file to the disk (fsync) failed"
        }
        ffi::SQLITE_IOERR_TRUNCATE => "truncating the file failed",
        ffi::SQLITE_IOERR_FSTAT => "reading the file's size failed",
        ffi::SQLITE_IOERR_LOCK
        | ffi::SQLITE_IOERR_UNLOCK
        | ffi::SQLITE_IOERR_RDLOCK
        | ffi::SQLITE_IOERR_CHECKRESERVEDLOCK => "locking the file failed",
        ffi::SQLITE_IOERR_SHMOPEN
        | ffi::SQLITE_IOERR_SHMSIZE
        | ffi::SQLITE_IOERR_SHMLOCK
        | ffi::SQLITE_IOERR_SHMMAP => "the shared-memory file (-shm) failed",
        ffi::SQLITE_IOERR_DELETE | ffi::SQLITE_IOERR_DELETE_NOENT => "deleting a journal failed",
        ffi::SQLITE_IOERR_NOMEM => "out of memory",
        ffi::SQLITE_FULL => "the disk is full",
        ffi::SQLITE_READONLY
        | ffi::SQLITE_READONLY_DIRECTORY
        | ffi::SQLITE_READONLY_RECOVERY
        | ffi::SQLITE_READONLY_CANTINIT => "the file or its folder is read-only",
        ffi::SQLITE_CANTOPEN => "the file cannot be opened",
        ffi::SQLITE_CORRUPT => "SQLite found the file inconsistent, or a read of it failed",
        ffi::SQLITE_NOTADB => "the file is not a database",
        ffi::SQLITE_PROTOCOL => "the file's locking protocol failed (a lock kept failing)",
        c if c & 0xff == ffi::SQLITE_BUSY => "the store stayed locked by another process",
        c if c & 0xff == ffi::SQLITE_IOERR => "a disk I/O error",
        _ => return error.to_string(),
    };
    format!("{what} (SQLite error {code})")
}

impl Backend for SqliteBackend {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        let conn = self.lock()?;
        self.checked(
            conn.prepare_cached("SELECT value FROM engram_kv WHERE key = ?1")
                .and_then(|mut s| s.query_row([key], |row| row.get(0)).optional())
                .map_err(unavailable),
        )
    }

    fn get_many(&self, keys: &[Vec<u8>]) -> Result<Vec<Option<Vec<u8>>>, StoreError> {
        let conn = self.lock()?;
        self.checked(get_many(&conn, keys))
    }

    fn scan(
        &self,
        start: &[u8],
        end: &[u8],
        limit: u32,
        order: Order,
    ) -> Result<Vec<Pair>, StoreError> {
        let sql = match order {
            Order::Ascending => {
                "SELECT key, value FROM engram_kv WHERE key >= ?1 AND key < ?2 ORDER BY key ASC LIMIT ?3"
            }
            Order::Descending => {
                "SELECT key, value FROM engram_kv WHERE key >= ?1 AND key < ?2 ORDER BY key DESC LIMIT ?3"
            }
        };
        let conn = self.lock()?;
        let pairs = conn.prepare_cached(sql).and_then(|mut statement| {
            statement
                .query_map(params![start, end, limit], |row| {
                    Ok((row.get(0)?, row.get(1)?))
                })?
                .collect::<Result<_, _>>()
        });
        self.checked(pairs.map_err(unavailable))
    }

    fn commit(&self, preconditions: &[Precondition], ops: &[Op]) -> Result<(), StoreError> {
        self.commit_with(preconditions, ops, &[])
    }

    /// Waits until no other thread or process writes the domain: a writer
    /// reads, then commits on the condition that nothing it read changed,
    /// so two processes writing one domain without taking turns keep
    /// undoing each other's work, and one can lose every retry.
    fn lock_domain(&self, prefix: &[u8]) -> Result<bool, StoreError> {
        let key = crate::domain_lock_key(prefix);
        self.writers.take(key)?;
        match self.trail.lock_domain(key) {
            Ok(()) => Ok(true),
            Err(error) => {
                self.writers.give(key);
                Err(StoreError::Unavailable(format!("{error:#}")))
            }
        }
    }

    fn unlock_domain(&self, prefix: &[u8]) {
        let key = crate::domain_lock_key(prefix);
        self.trail.unlock_domain(key);
        self.writers.give(key);
    }

    fn commit_audited(
        &self,
        preconditions: &[Precondition],
        ops: &[Op],
        trail: &[AuditEntry],
        sink: &dyn AuditSink,
    ) -> Result<bool, StoreError> {
        if super::same_object(self, sink) {
            self.commit_with(preconditions, ops, trail).map(|()| true)
        } else {
            self.commit(preconditions, ops).map(|()| false)
        }
    }
}

impl SqliteBackend {
    /// Commits the preconditions, the ops and the audit entries of what
    /// they store atomically: in a transaction of their own, or in a group
    /// with the commits of other threads.
    fn commit_with(
        &self,
        preconditions: &[Precondition],
        ops: &[Op],
        trail: &[AuditEntry],
    ) -> Result<(), StoreError> {
        let own = Commit {
            preconditions,
            ops,
            trail,
        };
        self.checked(match &self.group {
            Some(queue) => queue.commit(own, &|group| self.write_group(group)),
            None => self.write_group(&[own]).pop().unwrap_or_else(|| {
                Err(StoreError::Unavailable("the commit gave no answer".into()))
            }),
        })
    }

    /// One transaction for `group`: the pending entries of the trail file
    /// first, then each commit (in a savepoint of its own when there are
    /// several, so a failed precondition undoes that commit alone); one
    /// answer per commit, in order. Should the transaction fail as a whole,
    /// every commit is answered `Unavailable` and none is stored.
    fn write_group(&self, group: &[Commit<'_>]) -> Vec<Result<(), StoreError>> {
        let every = |why: String| {
            group
                .iter()
                .map(|_| Err(StoreError::Unavailable(why.clone())))
                .collect()
        };
        let mut conn = match self.lock() {
            Ok(conn) => conn,
            Err(error) => return every(error.to_string()),
        };
        // Appends wait while the file is read, moved and perhaps emptied.
        let Ok(_gate) = self.trail_gate.write() else {
            return every("the audit trail's lock was poisoned".into());
        };
        let length = match self.trail.len() {
            Ok(length) => length,
            Err(error) => return every(format!("{error:#}")),
        };
        if length == 0 && group.iter().all(Commit::is_empty) {
            return group.iter().map(|_| Ok(())).collect();
        }
        let tx = match conn.transaction_with_behavior(TransactionBehavior::Immediate) {
            Ok(tx) => tx,
            Err(error) => return every(describe(&error)),
        };
        // Entries of earlier calls go first; the file is emptied after the
        // commit when this process is alone on it.
        let mut alone = None;
        if length > 0 {
            match move_trail(&tx, &self.trail, &self.last_seq) {
                Ok(exclusive) => alone = exclusive,
                Err(error) => return every(format!("{error:#}")),
            }
        }
        let answers = match group {
            // Alone, a commit that fails ends the transaction: no savepoint
            // is needed.
            [one] => match apply(&tx, one, &self.last_seq) {
                Ok(()) => vec![Ok(())],
                Err(error) => return vec![Err(error)],
            },
            _ => {
                let mut answers = Vec::with_capacity(group.len());
                for commit in group {
                    if commit.is_empty() {
                        answers.push(Ok(()));
                        continue;
                    }
                    if let Err(error) = tx.execute_batch("SAVEPOINT engram_commit") {
                        return every(describe(&error));
                    }
                    let applied = apply(&tx, commit, &self.last_seq);
                    // An error SQLite answers by rolling the transaction
                    // back fails the whole group.
                    if tx.is_autocommit() {
                        return every(match applied {
                            Err(StoreError::Unavailable(why)) => why,
                            _ => "the transaction ended early".into(),
                        });
                    }
                    let ended = match applied {
                        Ok(()) => tx.execute_batch("RELEASE engram_commit"),
                        Err(_) => {
                            tx.execute_batch("ROLLBACK TO engram_commit; RELEASE engram_commit")
                        }
                    };
                    if let Err(error) = ended {
                        return every(describe(&error));
                    }
                    answers.push(applied);
                }
                answers
            }
        };
        if let Err(error) = tx.commit() {
            return every(describe(&error));
        }
        if let Some(alone) = alone {
            // Should emptying fail, the entries are moved again later: the
            // trail may then hold one twice, never lose it.
            let _ = alone.empty();
        }
        answers
    }
}

/// The values of `keys`, read in one transaction, so of one moment.
fn get_many(conn: &Connection, keys: &[Vec<u8>]) -> Result<Vec<Option<Vec<u8>>>, StoreError> {
    conn.execute_batch("BEGIN").map_err(unavailable)?;
    let values = conn
        .prepare_cached("SELECT value FROM engram_kv WHERE key = ?1")
        .and_then(|mut s| {
            keys.iter()
                .map(|key| s.query_row([key], |row| row.get(0)).optional())
                .collect::<Result<Vec<_>, _>>()
        });
    let ended = conn.execute_batch("COMMIT");
    let values = values.map_err(unavailable)?;
    ended.map_err(unavailable)?;
    Ok(values)
}

/// Moves the trail file's complete lines past the recorded offset into
/// `engram_audit`, in the transaction `tx` is in, and records the new
/// offset: 0 when this process is alone on the file and will empty it
/// after the commit (the answer holds it alone until then).
fn move_trail<'a>(
    tx: &Connection,
    trail: &'a TrailFile,
    last_seq: &AtomicI64,
) -> Result<Option<Exclusive<'a>>> {
    let moved: i64 = tx
        .prepare_cached("SELECT moved FROM engram_trail WHERE id = 1")?
        .query_row([], |row| row.get(0))
        .context("reading how far the audit trail is moved")?;
    let pending = trail.pending(u64::try_from(moved).unwrap_or(0))?;
    for entry in &pending.entries {
        insert_audit(tx, entry, last_seq)?;
    }
    let alone = trail.exclusive()?;
    let moved = if alone.is_some() { 0 } else { pending.end };
    tx.prepare_cached("UPDATE engram_trail SET moved = ?1 WHERE id = 1")?
        .execute([i64::try_from(moved).unwrap_or(i64::MAX)])
        .context("recording how far the audit trail is moved")?;
    Ok(alone)
}

/// Checks the preconditions of `commit`, then applies its ops and appends
/// its audit entries, in the transaction `tx` is in.
fn apply(tx: &Connection, commit: &Commit<'_>, last_seq: &AtomicI64) -> Result<(), StoreError> {
    let mut read = tx
        .prepare_cached("SELECT value FROM engram_kv WHERE key = ?1")
        .map_err(unavailable)?;
    for precondition in commit.preconditions {
        let (key, expected) = match precondition {
            Precondition::Absent(key) => (key, None),
            Precondition::Holds(key, value) => (key, Some(value)),
        };
        let actual: Option<Vec<u8>> = read
            .query_row([key], |row| row.get(0))
            .optional()
            .map_err(unavailable)?;
        if actual.as_ref() != expected {
            return Err(StoreError::Conflict);
        }
    }
    let mut put = tx
        .prepare_cached("INSERT OR REPLACE INTO engram_kv (key, value) VALUES (?1, ?2)")
        .map_err(unavailable)?;
    let mut delete = tx
        .prepare_cached("DELETE FROM engram_kv WHERE key = ?1")
        .map_err(unavailable)?;
    for op in commit.ops {
        match op {
            Op::Put(key, value) => put.execute(params![key, value]),
            Op::Delete(key) => delete.execute([key]),
        }
        .map_err(unavailable)?;
    }
    for entry in commit.trail {
        insert_audit(tx, entry, last_seq).map_err(|e| StoreError::Unavailable(format!("{e:#}")))?;
    }
    Ok(())
}

/// Appends one entry to the trail through `conn`, after its agent's
/// others (the table's key is the agent and `seq`: one page of the file
/// takes the entry). Its `seq` is the first number that is after its
/// agent's last, after the last this process gave (`last_seq`, so that
/// entries of one process keep their order across agents), and not before
/// its time in microseconds (`at` × 1000, so that entries of processes
/// writing one file one after another are ordered by their time).
fn insert_audit(conn: &Connection, entry: &AuditEntry, last_seq: &AtomicI64) -> Result<()> {
    let text = |v: serde_json::Value| v.as_str().map(str::to_owned);
    let after_agent: i64 = conn
        .prepare_cached("SELECT ifnull(max(seq), 0) + 1 FROM engram_audit WHERE agent_id = ?1")?
        .query_row([&entry.agent_id], |row| row.get(0))
        .context("reading the audit trail's last entry of the agent")?;
    let seq = last_seq
        .load(Ordering::Relaxed)
        .saturating_add(1)
        .max(entry.at.saturating_mul(1000))
        .max(after_agent);
    conn.prepare_cached(
        "INSERT INTO engram_audit (agent_id, seq, at, request_id, operation, source,
                                   record_type, outcome, stored_id, count, reason, caller)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
    )?
    .execute(params![
        entry.agent_id,
        seq,
        entry.at,
        entry.request_id,
        text(serde_json::to_value(entry.operation)?),
        entry
            .source
            .as_ref()
            .map(serde_json::to_string)
            .transpose()?,
        entry
            .record_type
            .map(|t| serde_json::to_value(t).map(text))
            .transpose()?
            .flatten(),
        text(serde_json::to_value(entry.outcome)?),
        entry.stored_id,
        entry.count,
        entry.reason,
        entry.caller,
    ])
    .context("appending to the audit trail")?;
    last_seq.store(seq, Ordering::Relaxed);
    Ok(())
}

impl AuditSink for SqliteBackend {
    fn append(&self, entry: &AuditEntry) -> Result<()> {
        let _gate = self
            .trail_gate
            .read()
            .map_err(|_| anyhow::anyhow!("the audit trail's lock was poisoned"))?;
        self.trail.append(entry)
    }

    fn trail(&self, query: &AuditQuery) -> Result<Vec<AuditEntry>> {
        self.audit_trail(query)
    }
}
