"""A store in memory: a sorted list with bytewise key order and an audit
trail in a list. For tests and agents that keep nothing."""

from __future__ import annotations

import bisect
import threading
from collections.abc import Sequence

from ._store import AuditRow, Change, Condition, Turns, audit_matches, rows_of


class MemoryStore:
    """A :class:`engram.Backend` kept in memory: nothing survives the
    process."""

    def __init__(self) -> None:
        self._keys: list[bytes] = []
        self._values: list[bytes] = []
        self._audit: list[AuditRow] = []
        self._lock = threading.RLock()
        self._writers = Turns()
        self._closed = False

    def lock_domain(self, prefix: bytes, key: int) -> None:
        """Threads writing one domain take turns."""
        self._writers.take(key)

    def unlock_domain(self, prefix: bytes, key: int) -> None:
        self._writers.give(key)

    def _open(self) -> None:
        if self._closed:
            raise RuntimeError("the store is closed")

    def get(self, key: bytes) -> bytes | None:
        with self._lock:
            self._open()
            i = bisect.bisect_left(self._keys, key)
            if i < len(self._keys) and self._keys[i] == key:
                return self._values[i]
            return None

    def get_many(self, keys: Sequence[bytes]) -> list[bytes | None]:
        with self._lock:
            return [self.get(key) for key in keys]

    def scan(self, start: bytes, end: bytes, limit: int, descending: bool) -> list[tuple[bytes, bytes]]:
        with self._lock:
            self._open()
            lo = bisect.bisect_left(self._keys, start)
            hi = max(lo, bisect.bisect_left(self._keys, end))
            indexes = range(hi - 1, lo - 1, -1) if descending else range(lo, hi)
            return [(self._keys[i], self._values[i]) for i in indexes[:limit]]

    def commit(self, conditions: Sequence[Condition], changes: Sequence[Change], rows: Sequence[AuditRow]) -> bool:
        with self._lock:
            self._open()
            for condition in conditions:
                if self.get(condition["key"]) != condition["value"]:
                    return False
            for change in changes:
                key, value = change["key"], change["value"]
                i = bisect.bisect_left(self._keys, key)
                found = i < len(self._keys) and self._keys[i] == key
                if value is not None:
                    if found:
                        self._values[i] = bytes(value)
                    else:
                        self._keys.insert(i, bytes(key))
                        self._values.insert(i, bytes(value))
                elif found:
                    del self._keys[i]
                    del self._values[i]
            self._audit.extend(rows_of(rows))
            return True

    def append_audit(self, rows: Sequence[AuditRow]) -> None:
        with self._lock:
            self._open()
            self._audit.extend(rows_of(rows))

    def audit_rows(
        self,
        agent: str | None,
        operation: str | None,
        outcome: str | None,
        since: int | None,
        until: int | None,
        limit: int,
    ) -> list[AuditRow]:
        with self._lock:
            self._open()
            found: list[AuditRow] = []
            for row in reversed(self._audit):
                if len(found) >= limit:
                    break
                if audit_matches(row, agent, operation, outcome, since, until):
                    found.append(row)
            return rows_of(reversed(found))

    def close(self) -> None:
        self._closed = True
