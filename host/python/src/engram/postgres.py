"""A store in PostgreSQL that many hosts share, through psycopg 3: the
tables, migration and commits of the Rust host's ``PostgresBackend``
(docs/hosts.md, "PostgreSQL: many hosts, one store"), so the ``engram`` CLI,
Rust hosts and Python processes may use one schema at once.

- **The tables** are those of ``postgres-schema.sql`` (the text the Rust host
  embeds), created in the schema the store opens in, under the advisory
  transaction lock 0x454E4752 so hosts starting together create them once;
  ``engram_schema`` holds the version, and a schema of another version, or
  one with Engram's table names and no ``engram_schema``, is refused and
  left untouched.
- **A commit** is one ``SERIALIZABLE`` transaction: the conditions are read
  and checked, the changes applied and the audit rows inserted, or nothing.
  A serialization failure (another host committed from the same reads) is a
  failed condition: ``commit`` answers False and the engine retries from
  fresh reads, after a random few milliseconds, longer after each loss in a
  row.
- **Audit rows of calls that commit nothing** are inserted with
  ``synchronous_commit = off``, so a read costs no flush; records are
  committed with the server's own setting (on by default).
- **Writers of one domain take turns**: the threads of a process in a queue,
  then a session advisory lock on the domain's lock key (the same key as
  every host's, as a signed 64-bit number), so the CLI and Rust hosts wait
  for a Python writer of the same domain and the other way round.
- **One connection** serves the store, one call at a time under a lock, so
  any number of threads may share it; a connection that was lost is dropped
  and the next call connects again.
"""

from __future__ import annotations

import random
import re
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from ._store import AuditRow, Change, Condition, StoreError, Turns, packaged

try:
    import psycopg
    from psycopg import sql
    from psycopg.conninfo import conninfo_to_dict
except ImportError:  # pragma: no cover - the extra is not installed
    psycopg = None  # type: ignore[assignment]

#: How to install what this module needs.
INSTALL = "pip install 'engram-memory[postgres]'"

#: The key of the advisory lock under which hosts create and check the
#: tables ("ENGR").
MIGRATION_LOCK = 0x454E4752

_T = TypeVar("_T")


def _schema_versions() -> list[tuple[int, str]]:
    """The text of each version of the PostgreSQL schema every host runs
    (``postgres-schema.sql``), oldest first: what follows each line
    ``-- version N``."""
    text = packaged("postgres-schema.sql").decode("utf-8")
    parts = re.split(r"^-- version (\d+)[^\n]*$", text, flags=re.M)
    return [(int(parts[i]), parts[i + 1]) for i in range(1, len(parts), 2)]


_SCHEMA_VERSIONS: list[tuple[int, str]] | None = None


def _versions() -> list[tuple[int, str]]:
    global _SCHEMA_VERSIONS
    if _SCHEMA_VERSIONS is None:
        _SCHEMA_VERSIONS = _schema_versions()
    return _SCHEMA_VERSIONS


def schema_version() -> int:
    """The schema version this host reads and writes
    (``engram_schema.version``): the last of the schema."""
    return _versions()[-1][0]


_SCAN = "SELECT key, value FROM engram_kv WHERE key >= %s AND key < %s ORDER BY key {order} LIMIT %s"

_READ_KEYS = "SELECT key, value FROM engram_kv WHERE key = ANY(%s)"

_DELETE_KEYS = "DELETE FROM engram_kv WHERE key = ANY(%s)"

_PUT_PAIRS = """INSERT INTO engram_kv (key, value) SELECT * FROM unnest(%s::bytea[], %s::bytea[])
    ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value"""

_INSERT_AUDIT = """INSERT INTO engram_audit (at, agent_id, request_id, operation, source, record_type,
    outcome, stored_id, count, reason) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"""

_SELECT_AUDIT = """SELECT at, agent_id, request_id, operation, source, record_type, outcome,
    stored_id, count, reason FROM engram_audit
    WHERE (%(agent)s::bytea IS NULL OR agent_id = %(agent)s)
      AND (%(since)s::bigint IS NULL OR at >= %(since)s)
      AND (%(until)s::bigint IS NULL OR at < %(until)s)
      AND (%(operation)s::text IS NULL OR operation = %(operation)s)
      AND (%(outcome)s::text IS NULL OR outcome = %(outcome)s)
    ORDER BY seq DESC LIMIT %(limit)s"""

#: SQLSTATEs of another transaction getting in the way: serialization
#: failure, deadlock, a unique key taken meanwhile. Retrying from fresh
#: reads may succeed.
_CONFLICTS = ("40001", "40P01", "23505")

#: SQLSTATEs after which the session is gone: the server shutting down or
#: not taking connections.
_GONE = ("57P01", "57P02", "57P03")


class _Conflict(Exception):
    """A commit lost to another transaction."""


class PostgresStore:
    """A :class:`engram.Backend` in one schema of a PostgreSQL database.

    ``url``: ``postgres://user[:password]@host[:port]/database[?…]`` (or
    ``postgresql://``, or any libpq connection string); its ``options`` may
    set the schema (``?options=-csearch_path%3Dname``), ``public`` by default.
    ``schema``: the schema instead, created if absent (1 to 63 of ``a-z``,
    ``0-9`` and ``_``, not starting with a digit). The timeouts are those of
    the Rust host, in seconds: connecting, one statement (lock waits
    included), a session idle in a transaction, TCP keepalives after
    ``keepalives_idle`` silent seconds, and data left unacknowledged
    (``TCP_USER_TIMEOUT``, Linux).

    One connection serves every thread, one call at a time; a call that
    finds it lost raises :class:`StoreError`, and the next call connects
    again.
    """

    def __init__(
        self,
        url: str,
        *,
        schema: str | None = None,
        connect_timeout: float = 5.0,
        statement_timeout: float = 30.0,
        idle_in_transaction_timeout: float = 60.0,
        keepalives_idle: float = 15.0,
        tcp_user_timeout: float = 30.0,
    ) -> None:
        self.url = redacted(url)
        if psycopg is None:
            raise StoreError(f"{self.url}: a PostgreSQL store needs psycopg 3: {INSTALL}")
        if schema is not None:
            check_schema_name(schema)
        try:
            given = conninfo_to_dict(url)
        except psycopg.Error as error:
            raise StoreError(f"{self.url}: not a valid PostgreSQL URL: {one_line(error)}") from None
        options = " ".join(
            part
            for part in (
                str(given.get("options") or ""),
                f"-c statement_timeout={_millis(statement_timeout)}",
                f"-c idle_in_transaction_session_timeout={_millis(idle_in_transaction_timeout)}",
                f"-c search_path={schema}" if schema is not None else "",
            )
            if part
        )
        self._url = url
        self._settings: dict[str, Any] = {
            "options": options,
            # libpq counts whole seconds, at least 2.
            "connect_timeout": max(2, round(connect_timeout)),
            "keepalives": 1,
            "keepalives_idle": max(1, round(keepalives_idle)),
            "keepalives_interval": 5,
            "keepalives_count": 5,
            "tcp_user_timeout": _millis(tcp_user_timeout),
            "application_name": given.get("application_name") or "engram",
        }
        self._lock = threading.RLock()
        self._writers = Turns()
        self._closed = False
        self._commit_sync = "on"
        conn = self._connect(f"{self.url}: cannot connect")
        try:
            self.schema = self._migrate(conn, schema)
            self._prepare(conn)
        except psycopg.Error as error:
            conn.close()
            raise StoreError(f"{self.url}: cannot open the Engram store: {one_line(error)}") from None
        except BaseException:
            conn.close()
            raise
        self._conn: psycopg.Connection[Any] | None = conn

    # -- the connection ----------------------------------------------------

    def _connect(self, doing: str) -> psycopg.Connection[Any]:
        try:
            return psycopg.connect(self._url, autocommit=True, **self._settings)
        except psycopg.Error as error:
            raise StoreError(f"{doing}: {one_line(error)}") from None

    def _prepare(self, conn: psycopg.Connection[Any]) -> None:
        """Notes the server's ``synchronous_commit`` for record commits,
        then turns it off for the session (audit rows)."""
        row = conn.execute("SELECT current_setting('synchronous_commit')").fetchone()
        setting = str(row[0]) if row else ""
        # A setting's value as the server reports it is one lower-case word;
        # anything else falls back to the safe default.
        self._commit_sync = setting if re.fullmatch(r"[a-z_]+", setting) else "on"
        conn.execute("SET synchronous_commit = off")

    def _migrate(self, conn: psycopg.Connection[Any], schema: str | None) -> str:
        """Creates the schema and tables, or checks the version of those
        there, under the advisory lock; the schema they are in."""
        version = schema_version()
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            if schema is None:
                row = conn.execute("SELECT current_schema(), current_setting('search_path')").fetchone()
                assert row is not None
                if row[0] is not None:
                    schema = str(row[0])
                else:
                    # The search path names a schema that does not exist yet.
                    first = str(row[1]).split(",")[0].strip()
                    try:
                        check_schema_name(first)
                    except StoreError as error:
                        raise StoreError(
                            f"{self.url}: cannot open the Engram store: the search_path {row[1]!r} names "
                            f"no schema Engram can create: {error}"
                        ) from None
                    schema = first
            quoted = sql.Identifier(schema)
            conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(quoted))

            def exists(table: str) -> bool:
                name = '"' + str(schema).replace('"', '""') + '".' + table
                found = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (name,)).fetchone()
                return bool(found and found[0])

            refused = f"{self.url}: cannot open the Engram store: schema {schema}"
            if exists("engram_schema"):
                rows = conn.execute(sql.SQL("SELECT version FROM {}.engram_schema").format(quoted)).fetchall()
                if len(rows) != 1:
                    raise StoreError(f"{refused}: engram_schema does not hold exactly one version")
                if rows[0][0] != version:
                    raise StoreError(
                        f"{refused}: Engram store of schema version {rows[0][0]}; this host reads version {version}"
                    )
            elif exists("engram_kv") or exists("engram_audit"):
                raise StoreError(f"{refused}: not an Engram store (it has Engram's table names without engram_schema)")
            else:
                conn.execute(sql.SQL("SET LOCAL search_path TO {}").format(quoted))
                for _, text in _versions():
                    conn.execute(text.encode("utf-8"))
                conn.execute("INSERT INTO engram_schema (version) VALUES (%s)", (version,))
        # The connection must resolve the tables in this schema from now on.
        row = conn.execute("SELECT current_schema()").fetchone()
        current = None if row is None else row[0]
        if current != schema:
            raise StoreError(
                f"{self.url}: cannot open the Engram store: schema {schema} is not first on the search_path "
                f"(tables would resolve to {current!r})"
            )
        return schema

    def _call(self, f: Callable[[psycopg.Connection[Any]], _T]) -> _T:
        """Runs ``f`` on the connection, connecting first if there is none.
        A failure that lost the connection drops it, so the next call
        connects again; another transaction getting in the way raises
        :class:`_Conflict`; any other failure :class:`StoreError`."""
        with self._lock:
            if self._closed:
                raise StoreError(f"{self.url}: the store is closed")
            if self._conn is None:
                conn = self._connect("PostgreSQL: cannot connect")
                try:
                    self._prepare(conn)
                except psycopg.Error as error:
                    conn.close()
                    raise StoreError(f"PostgreSQL: cannot prepare the connection: {one_line(error)}") from None
                self._conn = conn
            conn = self._conn
            try:
                return f(conn)
            except psycopg.Error as error:
                if _lost(error) or conn.closed or conn.broken:
                    self._conn = None
                    conn.close()
                if error.sqlstate in _CONFLICTS:
                    raise _Conflict() from None
                raise StoreError(f"PostgreSQL: {describe(error)}") from None

    # -- the backend -------------------------------------------------------

    def get(self, key: bytes) -> bytes | None:
        row = self._call(lambda c: c.execute("SELECT value FROM engram_kv WHERE key = %s", (key,)).fetchone())
        return None if row is None else bytes(row[0])

    def get_many(self, keys: Sequence[bytes]) -> list[bytes | None]:
        """One statement: the values at one point in time."""
        if not keys:
            return []
        wanted = list(dict.fromkeys(bytes(k) for k in keys))
        rows = self._call(lambda c: c.execute(_READ_KEYS, (wanted,)).fetchall())
        found = {bytes(k): bytes(v) for k, v in rows}
        # A key asked for twice gets its value twice.
        return [found.get(bytes(key)) for key in keys]

    def scan(self, start: bytes, end: bytes, limit: int, descending: bool) -> list[tuple[bytes, bytes]]:
        if start >= end or limit <= 0:
            return []
        statement = _SCAN.format(order="DESC" if descending else "ASC")
        rows = self._call(lambda c: c.execute(statement, (start, end, limit)).fetchall())
        return [(bytes(k), bytes(v)) for k, v in rows]

    def commit(self, conditions: Sequence[Condition], changes: Sequence[Change], rows: Sequence[AuditRow]) -> bool:
        """One ``SERIALIZABLE`` transaction: the conditions read and checked,
        the changes applied, ``rows`` inserted. False when a condition did
        not hold or another transaction got in the way (nothing changed)."""
        if not conditions and not changes and not rows:
            return True
        # The last change of a key decides what it holds; changes of
        # different keys commute, so a batch becomes one delete and one
        # upsert.
        last: dict[bytes, bytes | None] = {}
        for change in changes:
            last[bytes(change["key"])] = None if change["value"] is None else bytes(change["value"])
        deletes = [key for key, value in last.items() if value is None]
        puts = [(key, value) for key, value in last.items() if value is not None]
        values = [_audit_values(row) for row in rows]

        def apply(conn: psycopg.Connection[Any]) -> bool:
            conn.execute("BEGIN ISOLATION LEVEL SERIALIZABLE")
            try:
                conn.execute(f"SET LOCAL synchronous_commit = {self._commit_sync}")
                if conditions:
                    wanted = list(dict.fromkeys(bytes(c["key"]) for c in conditions))
                    found = {bytes(k): bytes(v) for k, v in conn.execute(_READ_KEYS, (wanted,)).fetchall()}
                    for condition in conditions:
                        if found.get(bytes(condition["key"])) != condition["value"]:
                            conn.execute("ROLLBACK")
                            return False
                if deletes:
                    conn.execute(_DELETE_KEYS, (deletes,))
                if puts:
                    conn.execute(_PUT_PAIRS, ([k for k, _ in puts], [v for _, v in puts]))
                if values:
                    with conn.cursor() as cursor:
                        cursor.executemany(_INSERT_AUDIT, values)
            except BaseException:
                # The connection may be gone; then the server rolls back.
                try:
                    conn.execute("ROLLBACK")
                except psycopg.Error:
                    pass
                raise
            # A failed COMMIT ends the transaction too.
            conn.execute("COMMIT")
            return True

        try:
            done = self._call(apply)
        except _Conflict:
            done = False
        _back_off(not done)
        return done

    def append_audit(self, rows: Sequence[AuditRow]) -> None:
        """Inserts the rows in one transaction, with the session's
        ``synchronous_commit = off``: kept across a crash of this process,
        flushed with the next record commit or within a fraction of a
        second."""
        if not rows:
            return
        values = [_audit_values(row) for row in rows]

        def insert(conn: psycopg.Connection[Any]) -> None:
            with conn.transaction(), conn.cursor() as cursor:
                cursor.executemany(_INSERT_AUDIT, values)

        try:
            self._call(insert)
        except _Conflict:  # pragma: no cover - an insert of new rows conflicts with nothing
            raise StoreError("PostgreSQL: the audit rows could not be inserted; try again") from None

    def lock_domain(self, prefix: bytes, key: int) -> None:
        """Threads of this process writing the domain take turns; other
        processes and hosts are kept out by a session advisory lock on the
        domain's lock key, waited for at most the statement timeout. A lost
        connection lets it go."""
        self._writers.take(key)
        try:
            self._call(lambda c: c.execute("SELECT pg_advisory_lock(%s)", (key,)))
        except _Conflict:
            self._writers.give(key)
            raise StoreError("PostgreSQL: waiting for the domain's writer ended in a deadlock; try again") from None
        except BaseException:
            self._writers.give(key)
            raise

    def unlock_domain(self, prefix: bytes, key: int) -> None:
        try:
            self._call(lambda c: c.execute("SELECT pg_advisory_unlock(%s)", (key,)))
        except (StoreError, _Conflict):
            pass  # a lost connection let the lock go with it
        finally:
            self._writers.give(key)

    def audit_rows(
        self,
        agent: str | None,
        operation: str | None,
        outcome: str | None,
        since: int | None,
        until: int | None,
        limit: int,
    ) -> list[AuditRow]:
        """The newest matching rows, oldest first."""
        query = {
            "agent": None if agent is None else agent.encode("utf-8"),
            "since": since,
            "until": until,
            "operation": operation,
            "outcome": outcome,
            "limit": limit,
        }
        found = self._call(lambda c: c.execute(_SELECT_AUDIT, query).fetchall())
        return [
            AuditRow(
                at=int(r[0]),
                agent_id=bytes(r[1]).decode("utf-8"),
                request_id=bytes(r[2]).decode("utf-8"),
                operation=r[3],
                source=r[4],
                record_type=r[5],
                outcome=r[6],
                stored_id=r[7],
                count=None if r[8] is None else int(r[8]),
                reason=None if r[9] is None else bytes(r[9]).decode("utf-8"),
            )
            for r in reversed(found)
        ]

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            conn, self._conn = self._conn, None
            if conn is not None:
                conn.close()

    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(self, *_: Any) -> None:
        self.close()


def check_schema_name(schema: str) -> None:
    """Schema names Engram accepts: no quoting needed anywhere."""
    if not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", schema):
        raise StoreError(
            f"{schema!r} is not a schema name Engram uses: 1 to 63 of a-z, 0-9 and _, not starting with a digit"
        )


def redacted(url: str) -> str:
    """The URL with any password hidden, for messages."""
    scheme, found, rest = url.partition("://")
    if not found:
        return url
    end = min((i for i in (rest.find("/"), rest.find("?")) if i >= 0), default=len(rest))
    authority, tail = rest[:end], rest[end:]
    userinfo, at, host = authority.rpartition("@")
    if not at or ":" not in userinfo:
        return url
    return f"{scheme}://{userinfo.split(':', 1)[0]}:***@{host}{tail}"


def one_line(error: BaseException) -> str:
    """An error's message on one line."""
    return " ".join(part.strip() for part in str(error).splitlines() if part.strip()) or type(error).__name__


def describe(error: Any) -> str:
    """A PostgreSQL error as the Rust host tells it: severity, message and
    SQLSTATE; a failure of the connection as its message."""
    diag = getattr(error, "diag", None)
    severity = getattr(diag, "severity_nonlocalized", None) or getattr(diag, "severity", None)
    primary = getattr(diag, "message_primary", None)
    if error.sqlstate and severity and primary:
        return f"{severity}: {primary} ({error.sqlstate})"
    return one_line(error)


def _lost(error: Any) -> bool:
    """Whether the connection cannot be used after ``error``."""
    state = error.sqlstate
    if state is None:
        return True
    diag = getattr(error, "diag", None)
    severity = getattr(diag, "severity_nonlocalized", None)
    return severity in ("FATAL", "PANIC") or state.startswith("08") or state in _GONE


def _millis(seconds: float) -> int:
    return max(1, round(seconds * 1000))


_losses = threading.local()


def _back_off(lost: bool) -> None:
    """After a lost commit, waits a random while that doubles with each loss
    in a row (up to 32 ms), outside the connection lock, before the engine
    reads again and retries: writers racing over the network could
    otherwise keep beating the same loser until it gives up."""
    losses = getattr(_losses, "count", 0) + 1 if lost else 0
    _losses.count = losses
    if losses:
        time.sleep(random.random() * (1 << min(losses, 5)) / 1000)


def _audit_values(row: AuditRow) -> tuple:
    """A row's column values; agent ids, request ids and reasons as UTF-8
    bytes (``bytea``: a text column cannot hold every string, NUL)."""
    return (
        row["at"],
        row["agent_id"].encode("utf-8"),
        row["request_id"].encode("utf-8"),
        row["operation"],
        row["source"],
        row["record_type"],
        row["outcome"],
        row["stored_id"],
        row["count"],
        None if row["reason"] is None else row["reason"].encode("utf-8"),
    )
