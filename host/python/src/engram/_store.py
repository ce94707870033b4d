"""What every store shares: the raw store interface, the writers' turns,
audit rows and their line form (docs/store-format.md).

Keys a store sees are whole keys: the adapter (the host layer every host
shares, in Rust) has already put the domain's prefix in front of every key
the engine names, and keeps the maintenance locks outside every domain's
range. A store interprets nothing: it keeps bytes in bytewise key order.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable, Mapping, Sequence
from importlib import resources
from typing import Any, Protocol, TypedDict


class StoreError(Exception):
    """A store that cannot be opened or used: the message, one line, names
    the store and why."""


class AuditRow(TypedDict):
    """One row of the audit trail: the columns of ``engram_audit`` but
    ``seq``, which the store gives in append order."""

    at: int
    agent_id: str
    request_id: str
    operation: str
    source: str | None
    record_type: str | None
    outcome: str
    stored_id: str | None
    count: int | None
    reason: str | None


class Condition(TypedDict):
    """A condition a commit checks before it changes anything: ``value``
    None means the key must hold nothing, else exactly ``value``."""

    key: bytes
    value: bytes | None


class Change(TypedDict):
    """One change of a commit: ``value`` None removes the key."""

    key: bytes
    value: bytes | None


class Backend(Protocol):
    """A store: an ordered, transactional map of bytes and the audit trail.

    A method that cannot do its work (I/O, a lost connection) raises an
    exception whose message is for the audit trail; nothing is changed then.
    """

    def get(self, key: bytes) -> bytes | None:
        """The value under ``key``, if any."""

    def get_many(self, keys: Sequence[bytes]) -> list[bytes | None]:
        """The value under each key, if any, read at one point in time."""

    def scan(self, start: bytes, end: bytes, limit: int, descending: bool) -> list[tuple[bytes, bytes]]:
        """At most ``limit`` pairs with ``start <= key < end``, smallest key
        first, or largest first when ``descending``."""

    def commit(self, conditions: Sequence[Condition], changes: Sequence[Change], rows: Sequence[AuditRow]) -> bool:
        """Atomically checks every condition, applies every change and
        appends every row; durable when it returns. False when a condition
        did not hold (nothing changed)."""

    def append_audit(self, rows: Sequence[AuditRow]) -> None:
        """Appends the rows of calls that commit nothing (reads, refusals)."""

    def lock_domain(self, prefix: bytes, key: int) -> None:
        """Waits until no other thread or process writes the domain whose
        keys start with ``prefix``; :meth:`unlock_domain` must follow.
        ``key`` is the domain's lock key, the same in every host (a signed
        64-bit number, from the host layer; docs/store-format.md). A
        writer reads, then commits on the condition that nothing it read
        changed: writers that do not take turns keep undoing each other's
        work, and one can lose every retry."""

    def unlock_domain(self, prefix: bytes, key: int) -> None:
        """Lets the next writer of the domain in."""

    def audit_rows(
        self,
        agent: str | None,
        operation: str | None,
        outcome: str | None,
        since: int | None,
        until: int | None,
        limit: int,
    ) -> list[AuditRow]:
        """The newest ``limit`` rows that match, oldest first."""

    def close(self) -> None:
        """Lets the store go; no call may follow."""


def packaged(name: str) -> bytes:
    """A file the build put into the package (a component, a store's
    schema): from ``ENGRAM_WASM_DIR`` when it is set (a checkout's build)
    and holds it, else from the package."""
    override = os.environ.get("ENGRAM_WASM_DIR")
    if override and os.path.isfile(os.path.join(override, name)):
        with open(os.path.join(override, name), "rb") as file:
            return file.read()
    try:
        return resources.files("engram").joinpath("wasm").joinpath(name).read_bytes()
    except FileNotFoundError:
        where = (f"{override} nor in " if override else "") + "the package (install it with pip, which builds it)"
        raise RuntimeError(f"engram: the file {name} is not in {where}") from None


class Turns:
    """Writers of a domain taking turns within one process: a thread that
    wants a domain another thread is writing waits until it is let go."""

    def __init__(self) -> None:
        self._held: set[int] = set()
        self._freed = threading.Condition()

    def take(self, key: int) -> None:
        with self._freed:
            while key in self._held:
                self._freed.wait()
            self._held.add(key)

    def give(self, key: int) -> None:
        with self._freed:
            self._held.discard(key)
            self._freed.notify_all()


def compact(value: Any) -> str:
    """JSON text as every host writes it: no spaces, non-ASCII as is."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def source_text(source: Mapping[str, Any]) -> str:
    """The JSON text of a write's source, its fields in the order every host
    writes them."""
    return compact({"agent_id": source["agent_id"], "component": source["component"], "actor": source["actor"]})


def audit_line(row: AuditRow) -> dict:
    """An audit row in the ``engram audit`` line form: its columns by name,
    the source parsed, empty columns left out."""
    line: dict = {
        "at": row["at"],
        "agent_id": row["agent_id"],
        "request_id": row["request_id"],
        "operation": row["operation"],
    }
    if row["source"] is not None:
        line["source"] = json.loads(row["source"])
    if row["record_type"] is not None:
        line["record_type"] = row["record_type"]
    line["outcome"] = row["outcome"]
    if row["stored_id"] is not None:
        line["stored_id"] = row["stored_id"]
    if row["count"] is not None:
        line["count"] = int(row["count"])
    if row["reason"] is not None:
        line["reason"] = row["reason"]
    return line


def row_of_line(line: Mapping[str, Any], at: int | None = None, agent_id: str | None = None) -> AuditRow:
    """The audit row of an entry in the line form (as the trail file holds
    it); ``at`` and ``agent_id`` fill what the line lacks."""

    def text(value: Any) -> str | None:
        return None if value is None else str(value)

    source = line.get("source")
    count = line.get("count")
    return AuditRow(
        at=int(line["at"] if line.get("at") is not None else at),  # type: ignore[arg-type]
        agent_id=str(line["agent_id"] if line.get("agent_id") is not None else agent_id),
        request_id=str(line["request_id"]),
        operation=str(line["operation"]),
        source=None if source is None else source_text(source),
        record_type=text(line.get("record_type")),
        outcome=str(line["outcome"]),
        stored_id=text(line.get("stored_id")),
        count=None if count is None else int(count),
        reason=text(line.get("reason")),
    )


def audit_matches(
    row: AuditRow,
    agent: str | None,
    operation: str | None,
    outcome: str | None,
    since: int | None,
    until: int | None,
) -> bool:
    """Whether ``row`` passes every filter that is set."""
    return (
        (agent is None or row["agent_id"] == agent)
        and (since is None or row["at"] >= since)
        and (until is None or row["at"] < until)
        and (operation is None or row["operation"] == operation)
        and (outcome is None or row["outcome"] == outcome)
    )


def rows_of(rows: Iterable[AuditRow]) -> list[AuditRow]:
    """Copies of ``rows``."""
    return [AuditRow(**row) for row in rows]
