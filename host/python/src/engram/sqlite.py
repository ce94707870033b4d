"""A store in one SQLite file through the standard ``sqlite3`` module, in
the format every host shares (docs/store-format.md): application id
0x454E4752, schema version 2, the WAL journal, ``synchronous=FULL`` by
default, the tables ``engram_kv``, ``engram_audit`` and ``engram_trail``,
and the ``STORE-trail`` file beside it of the audit entries of calls that
commit nothing.

Processes share a file as the Rust host's do: each holds a shared ``flock``
on the trail file from open to close; an audit entry is appended with one
``write`` and no lock; a commit moves the complete lines past the offset
``engram_trail`` records into ``engram_audit`` in its own transaction, and
empties the file only when it can turn its lock exclusive (no other process
has the store open). Where there is no ``flock`` (Windows), a process must
be the only one using its store.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import json
import os
import re
import sqlite3
import struct
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

from ._store import (
    AuditRow,
    Change,
    Condition,
    StoreError,
    Turns,
    audit_line,
    compact,
    packaged,
    row_of_line,
)

try:
    import fcntl
except ImportError:  # pragma: no cover - not on Unix
    fcntl = None  # type: ignore[assignment]

#: Open-file-description locks: 64-bit Linux, where ``struct flock`` is
#: ``hhqqi`` padded to 32 bytes.
_OFD = (
    getattr(fcntl, "F_OFD_SETLK", None)
    if fcntl is not None and sys.platform == "linux" and struct.calcsize("P") == 8
    else None
)

#: Marks a SQLite file as an Engram store (``PRAGMA application_id``).
APPLICATION_ID = 0x454E4752


def _schema_versions() -> list[tuple[int, list[str]]]:
    """The statements of each version of the SQLite schema every host runs
    (``sqlite-schema.sql``), oldest first: the text after each line
    ``-- version N``, split after each ``;`` that ends a line."""
    text = packaged("sqlite-schema.sql").decode("utf-8")
    parts = re.split(r"^-- version (\d+)[^\n]*$", text, flags=re.M)
    return [
        (int(parts[i]), [s.strip() for s in re.split(r";\s*$", parts[i + 1], flags=re.M) if s.strip()])
        for i in range(1, len(parts), 2)
    ]


_VERSIONS = _schema_versions()
#: The schema version this host reads and writes (``PRAGMA user_version``):
#: the last of the schema.
SCHEMA_VERSION = _VERSIONS[-1][0]


def _schema_after(version: int) -> list[str]:
    """The statements that bring a store of ``version`` to the last one."""
    return [statement for v, statements in _VERSIONS if v > version for statement in statements]


_INSERT_AUDIT = """INSERT INTO engram_audit (at, agent_id, request_id, operation, source, record_type,
    outcome, stored_id, count, reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"""

_SELECT_AUDIT = """SELECT at, agent_id, request_id, operation, source, record_type, outcome,
    stored_id, count, reason FROM engram_audit
    WHERE (?1 IS NULL OR agent_id = ?1)
      AND (?2 IS NULL OR at >= ?2)
      AND (?3 IS NULL OR at < ?3)
      AND (?4 IS NULL OR operation = ?4)
      AND (?5 IS NULL OR outcome = ?5)
    ORDER BY seq DESC LIMIT ?6"""


class _Busy(Exception):
    pass


class _Unreadable(StoreError):
    """Opening could not read the file: worth one more try."""


class SqliteStore:
    """A :class:`engram.Backend` in one SQLite file.

    ``synchronous``: ``"FULL"`` (the default) survives power loss;
    ``"NORMAL"`` may lose the last commits on power loss.
    ``busy_timeout``: seconds to wait for another process's write lock.
    """

    def __init__(self, path: str | os.PathLike[str], *, synchronous: str = "FULL", busy_timeout: float = 5.0) -> None:
        if synchronous not in ("FULL", "NORMAL"):
            raise ValueError(f"synchronous must be FULL or NORMAL, not {synchronous!r}")
        self.path = os.fspath(path)
        self.trail_path = self.path + "-trail"
        self._busy_timeout = busy_timeout
        self._lock = threading.RLock()
        self._synchronous = synchronous
        self._broken = False
        self._writers = Turns()
        deadline = time.monotonic() + busy_timeout
        pause = 0.001
        retried = False
        while True:
            try:
                self._conn = self._open()
                break
            except _Busy as busy:
                if time.monotonic() >= deadline:
                    raise StoreError(str(busy)) from None
                time.sleep(pause)
                pause = min(pause * 2, 0.05)
            except _Unreadable:
                # A read that failed while opening is tried once more: an
                # I/O error of a moment is not the file's state.
                if retried:
                    raise
                retried = True
                time.sleep(0.01)
        try:
            self._trail = os.open(self.trail_path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as error:
            self._conn.close()
            raise StoreError(f"{self.trail_path}: cannot open the audit trail file: {error.strerror}") from None
        try:
            self._share()
        except Exception:
            os.close(self._trail)
            self._conn.close()
            raise
        self._closed = False

    # -- opening -----------------------------------------------------------

    def _failed(self, doing: str, error: sqlite3.Error) -> Exception:
        message = f"{self.path}: {doing}: {error}"
        # SQLITE_BUSY (5) or SQLITE_LOCKED (6), extended codes included; the
        # code is there from Python 3.11, the message always.
        code = getattr(error, "sqlite_errorcode", None)
        if (code is not None and code & 0xFF in (5, 6)) or "locked" in str(error) or "busy" in str(error):
            return _Busy(message)
        if (code is not None and code & 0xFF in (11, 26)) or "malformed" in str(error):
            return _Unreadable(f"{self.path}: {doing}: {self._unreadable(error)}")
        if (code is not None and code & 0xFF == 10) or "I/O error" in str(error):
            return _Unreadable(message)
        return StoreError(message)

    def _unreadable(self, error: sqlite3.Error) -> str:
        """What SQLite's "malformed" or "not a database" means for the file:
        SQLite answers so when a read fails under it too, and a store must
        not be called damaged for an I/O error (its user might delete it).
        Only the file's size is looked at, from its metadata: a descriptor of
        our own on the file, once closed, would let go of the locks SQLite
        holds on it for every connection of this process."""
        try:
            size = os.stat(self.path).st_size
        except OSError as failed:
            return f"reading the file's metadata failed: {failed.strerror}"
        if size == 0:
            return f"a read of the file failed (SQLite: {error}, on an empty file, which holds nothing to damage)"
        return (
            f"SQLite found the file inconsistent, or a read of it failed (SQLite: {error}): "
            "a disk I/O error is as likely as damage: check the disk before anything else"
        )

    def _identify(self, conn: sqlite3.Connection) -> tuple[int, int, int]:
        try:
            row = conn.execute(
                """SELECT (SELECT application_id FROM pragma_application_id),
                          (SELECT user_version FROM pragma_user_version),
                          (SELECT count(*) FROM sqlite_schema)"""
            ).fetchone()
        except sqlite3.DatabaseError as error:
            if "not a database" in str(error):
                raise StoreError(f"{self.path}: not an Engram store (not a SQLite database)") from None
            raise self._failed("cannot read the store", error) from None
        return int(row[0]), int(row[1]), int(row[2])

    def _transaction(
        self, conn: sqlite3.Connection, doing: str, statements: list[str], still: Any
    ) -> tuple[int, int, int]:
        """Runs ``statements`` in ``BEGIN IMMEDIATE`` if ``still(found)`` holds
        once the write lock is taken; the marks found after."""
        try:
            conn.execute("BEGIN IMMEDIATE")
            found = self._identify(conn)
            if still(found):
                for statement in statements:
                    conn.execute(statement)
                found = self._identify(conn)
            conn.execute("COMMIT")
            return found
        except sqlite3.Error as error:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise self._failed(doing, error) from None

    def _open(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=self._busy_timeout)
        except sqlite3.Error as error:
            raise self._failed("cannot open the store", error) from None
        try:
            found = self._identify(conn)
            if found == (0, 0, 0):
                # Another process may be creating it: look again under the
                # write lock, and create it only if it is still empty.
                found = self._transaction(
                    conn,
                    "cannot create the store",
                    [
                        *_schema_after(0),
                        f"PRAGMA application_id = {APPLICATION_ID}",
                        f"PRAGMA user_version = {SCHEMA_VERSION}",
                    ],
                    lambda f: f == (0, 0, 0),
                )

            def older(f: tuple[int, int, int]) -> bool:
                return f[0] == APPLICATION_ID and 1 <= f[1] < SCHEMA_VERSION

            if older(found):
                # The versions after its own. Version 1 had no
                # `engram_trail`: its trail file is moved from the start.
                found = self._transaction(
                    conn,
                    "cannot upgrade the store",
                    [*_schema_after(found[1]), f"PRAGMA user_version = {SCHEMA_VERSION}"],
                    older,
                )
            if found[0] != APPLICATION_ID:
                raise StoreError(f"{self.path}: not an Engram store (it is another SQLite database)")
            if found[1] != SCHEMA_VERSION:
                raise StoreError(
                    f"{self.path}: Engram store of schema version {found[1]}; this host reads version {SCHEMA_VERSION}"
                )
            # Run to its end: an error of the switch's commit (a failed
            # fsync) comes with the last step. The file is never read here
            # through a descriptor of our own: closing one lets go of the lock
            # SQLite keeps on the file while a connection is open in WAL
            # mode, and another process closing the store would then delete
            # the WAL under this one's writes.
            try:
                rows = conn.execute("PRAGMA journal_mode = WAL").fetchall()
            except sqlite3.Error as error:
                raise self._failed("cannot switch the store to the WAL journal", error) from None
            mode = str(rows[0][0]) if rows else ""
            if mode.lower() != "wal":
                raise _Unreadable(
                    f"{self.path}: the switch to the WAL journal did not take (the journal is {mode!r}); check the disk"
                )
            self._durability(conn)
            return conn
        except BaseException:
            conn.close()
            raise

    # -- the trail file ----------------------------------------------------

    def _share(self) -> None:
        if fcntl is None:
            return
        deadline = time.monotonic() + self._busy_timeout
        while True:
            try:
                fcntl.flock(self._trail, fcntl.LOCK_SH | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise StoreError(
                        f"{self.trail_path}: the audit trail file stayed locked for {self._busy_timeout} s"
                    ) from None
                time.sleep(0.0002)
            except OSError as error:
                raise StoreError(f"{self.trail_path}: cannot lock the audit trail: {error.strerror}") from None

    def _alone(self) -> bool:
        """Turns the shared lock exclusive if no other process holds the
        file; shares it again and answers False if one does."""
        if fcntl is None:
            return True
        try:
            fcntl.flock(self._trail, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except OSError:
            self._share()
            return False

    def _pending(self, moved: int) -> tuple[list[AuditRow], int]:
        """The entries of the complete lines past byte ``moved`` (of the
        whole file when it is shorter), and where they end."""
        size = os.fstat(self._trail).st_size
        text = os.pread(self._trail, size, 0) if size else b""
        start = 0 if moved > len(text) else moved
        tail = text[start:]
        complete = tail.rfind(b"\n") + 1
        rows: list[AuditRow] = []
        for line in tail[:complete].split(b"\n"):
            if line:
                row = _parse_line(line)
                if row is not None:
                    rows.append(row)
        return rows, start + complete

    # -- the connection ----------------------------------------------------

    @contextlib.contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        """The connection, under the lock: opened again first when a call
        before failed with a SQLite error. An I/O error can leave SQLite's
        locks of the file (those of the ``-shm`` file above all) in a state
        it cannot leave by itself, where every later call waits out the busy
        timeout and fails; closing the process's last connection to the file
        resets them."""
        with self._lock:
            if self._broken:
                self._reopen()
            try:
                yield self._conn
            except sqlite3.Error:
                self._broken = True
                raise

    def _reopen(self) -> None:
        """Closes the connection, then opens it again (the file's journal
        mode is the file's own; the connection's settings are set anew).
        Until a reopening succeeds, every call tries again."""
        with contextlib.suppress(sqlite3.Error):
            self._conn.close()
        try:
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=self._busy_timeout)
            self._durability(conn)
        except sqlite3.Error as error:
            raise StoreError(f"{self.path}: cannot open the store again after a failure: {error}") from None
        self._conn = conn
        self._broken = False

    def _durability(self, conn: sqlite3.Connection) -> None:
        """The connection's durability settings, as every host's:
        ``synchronous`` as asked, and a checkpoint every 4,096 pages instead
        of SQLite's 1,000."""
        conn.execute(f"PRAGMA synchronous = {self._synchronous}")
        conn.execute("PRAGMA wal_autocheckpoint = 4096")

    # -- the backend -------------------------------------------------------

    def get(self, key: bytes) -> bytes | None:
        with self._connection() as conn:
            return _get(conn, key)

    def get_many(self, keys: Sequence[bytes]) -> list[bytes | None]:
        with self._connection() as conn:
            if len(keys) <= _KEYS_PER_STATEMENT:
                found = _held(conn, keys)
            else:
                conn.execute("BEGIN")
                try:
                    found = {}
                    for at in range(0, len(keys), _KEYS_PER_STATEMENT):
                        found.update(_held(conn, keys[at : at + _KEYS_PER_STATEMENT]))
                finally:
                    conn.execute("COMMIT")
        return [found.get(bytes(key)) for key in keys]

    def scan(self, start: bytes, end: bytes, limit: int, descending: bool) -> list[tuple[bytes, bytes]]:
        order = "DESC" if descending else "ASC"
        with self._connection() as conn:
            rows = conn.execute(
                f"SELECT key, value FROM engram_kv WHERE key >= ? AND key < ? ORDER BY key {order} LIMIT ?",
                (start, end, limit),
            ).fetchall()
        return [(bytes(k), bytes(v)) for k, v in rows]

    def commit(self, conditions: Sequence[Condition], changes: Sequence[Change], rows: Sequence[AuditRow]) -> bool:
        """One ``BEGIN IMMEDIATE`` transaction: the trail file's pending
        entries into ``engram_audit``, the conditions, the changes and
        ``rows``; the file is emptied after ``COMMIT`` when this process is
        alone on it."""
        with self._connection() as conn:
            length = os.fstat(self._trail).st_size
            if length == 0 and not conditions and not changes and not rows:
                return True
            conn.execute("BEGIN IMMEDIATE")
            alone = False
            committed = False
            try:
                if length > 0:
                    (moved,) = conn.execute("SELECT moved FROM engram_trail WHERE id = 1").fetchone()
                    pending, end = self._pending(int(moved))
                    conn.executemany(_INSERT_AUDIT, [_audit_values(r) for r in pending])
                    alone = self._alone()
                    conn.execute("UPDATE engram_trail SET moved = ? WHERE id = 1", (0 if alone else end,))
                held: dict[bytes, bytes] = {}
                for at in range(0, len(conditions), _KEYS_PER_STATEMENT):
                    held.update(_held(conn, [c["key"] for c in conditions[at : at + _KEYS_PER_STATEMENT]]))
                if any(held.get(bytes(c["key"])) != c["value"] for c in conditions):
                    conn.execute("ROLLBACK")
                    return False
                # Runs of puts and of deletes, each one statement, in order.
                for deleting, run in itertools.groupby(changes, key=lambda c: c["value"] is None):
                    if deleting:
                        conn.executemany("DELETE FROM engram_kv WHERE key = ?", [(c["key"],) for c in run])
                    else:
                        conn.executemany(
                            "INSERT OR REPLACE INTO engram_kv (key, value) VALUES (?, ?)",
                            [(c["key"], c["value"]) for c in run],
                        )
                conn.executemany(_INSERT_AUDIT, [_audit_values(r) for r in rows])
                conn.execute("COMMIT")
                committed = True
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            finally:
                if alone:
                    if committed:
                        # Should emptying fail, the entries are moved again
                        # later: the trail may then hold one twice, never
                        # lose one.
                        try:
                            os.ftruncate(self._trail, 0)
                        except OSError:
                            pass
                    self._share()
            return True

    def lock_domain(self, prefix: bytes, key: int) -> None:
        """Threads of this process writing the domain take turns; other
        processes are kept out by a lock on one byte of the trail file,
        waited for at most the busy timeout (docs/store-format.md)."""
        self._writers.take(key)
        try:
            deadline = time.monotonic() + self._busy_timeout
            pause = 0.0001
            while not self._range_lock(key, True):
                if time.monotonic() >= deadline:
                    raise StoreError(
                        f"{self.trail_path}: another process kept writing the domain for {self._busy_timeout} s"
                    )
                time.sleep(pause)
                pause = min(pause * 2, 0.002)
        except BaseException:
            self._writers.give(key)
            raise

    def unlock_domain(self, prefix: bytes, key: int) -> None:
        try:
            self._range_lock(key, False)
        finally:
            self._writers.give(key)

    def _range_lock(self, key: int, lock: bool) -> bool:
        """Takes (``lock``) or lets go of the byte of the trail file at
        2^62 + (``key`` >> 3) without waiting: False when another process
        holds it. On 64-bit Linux a lock of the open file, as the Rust
        host's; elsewhere one of the process."""
        if fcntl is None:
            return True
        start = (1 << 62) + ((key % (1 << 64)) >> 3)  # the key as unsigned
        try:
            if _OFD is not None:
                kind = fcntl.F_WRLCK if lock else fcntl.F_UNLCK
                fcntl.fcntl(self._trail, _OFD, struct.pack("hhqqi4x", kind, os.SEEK_SET, start, 1, 0))
            else:
                fcntl.lockf(self._trail, (fcntl.LOCK_EX | fcntl.LOCK_NB) if lock else fcntl.LOCK_UN, 1, start)
            return True
        except OSError as error:
            if lock and error.errno in (errno.EAGAIN, errno.EACCES):
                return False
            raise StoreError(f"{self.trail_path}: cannot lock the domain: {error.strerror}") from None

    def append_audit(self, rows: Sequence[AuditRow]) -> None:
        """Appends the rows to the trail file, one JSON line each, with one
        write: they are in the operating system's hands when this returns."""
        if not rows:
            return
        text = "".join(compact(audit_line(row)) + "\n" for row in rows).encode("utf-8")
        try:
            written = os.write(self._trail, text)
            while written < len(text):
                written += os.write(self._trail, text[written:])
        except OSError as error:
            raise OSError(f"{self.trail_path}: cannot append to the audit trail: {error.strerror}") from None

    def audit_rows(
        self,
        agent: str | None,
        operation: str | None,
        outcome: str | None,
        since: int | None,
        until: int | None,
        limit: int,
    ) -> list[AuditRow]:
        """The newest matching rows, oldest first, after moving the trail
        file's entries into the table."""
        with self._lock:
            self.commit([], [], [])
            with self._connection() as conn:
                found = conn.execute(_SELECT_AUDIT, (agent, since, until, operation, outcome, limit)).fetchall()
        return [
            AuditRow(
                at=int(r[0]),
                agent_id=r[1],
                request_id=r[2],
                operation=r[3],
                source=r[4],
                record_type=r[5],
                outcome=r[6],
                stored_id=r[7],
                count=None if r[8] is None else int(r[8]),
                reason=r[9],
            )
            for r in reversed(found)
        ]

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            os.close(self._trail)
            self._conn.close()

    def __enter__(self) -> SqliteStore:
        return self

    def __exit__(self, *_: Any) -> None:
        self.close()


#: Keys one statement looks up (SQLite allows 32,766 parameters).
_KEYS_PER_STATEMENT = 500


def _held(conn: sqlite3.Connection, keys: Sequence[bytes]) -> dict[bytes, bytes]:
    """The value of each of ``keys`` that has one, in one statement."""
    if not keys:
        return {}
    marks = ",".join("?" * len(keys))
    rows = conn.execute(f"SELECT key, value FROM engram_kv WHERE key IN ({marks})", list(keys))
    return {bytes(k): bytes(v) for k, v in rows}


def _get(conn: sqlite3.Connection, key: bytes) -> bytes | None:
    row = conn.execute("SELECT value FROM engram_kv WHERE key = ?", (key,)).fetchone()
    return None if row is None else bytes(row[0])


def _parse_line(line: bytes) -> AuditRow | None:
    """A trail line's entry; a line a power loss tore is skipped, but an
    entry appended after the torn part, on the same line, is kept."""
    for candidate in (line, line[max(0, line.rfind(b'{"at":')) :]):
        try:
            return row_of_line(json.loads(candidate))
        except (ValueError, KeyError, TypeError):
            continue
    return None


def _audit_values(row: AuditRow) -> tuple:
    return (
        row["at"],
        row["agent_id"],
        row["request_id"],
        row["operation"],
        row["source"],
        row["record_type"],
        row["outcome"],
        row["stored_id"],
        row["count"],
        row["reason"],
    )
