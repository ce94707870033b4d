"""A store written in Python (the package's ``Backend`` protocol): a sorted
list of keys in bytewise order and a list of audit entries, called back from
the Rust host. The shared scenarios run on it as on the Rust stores."""

from __future__ import annotations

import bisect
import threading


class DictStore:
    """An ordered map of bytes and an audit trail, in memory."""

    def __init__(self) -> None:
        self._keys: list[bytes] = []
        self._values: list[bytes] = []
        self._entries: list[dict] = []
        self._lock = threading.RLock()
        self._writing: set[int] = set()
        self._freed = threading.Condition()
        #: How many times each method was called.
        self.calls: dict[str, int] = {}

    def _count(self, method: str) -> None:
        self.calls[method] = self.calls.get(method, 0) + 1

    def lock_domain(self, prefix: bytes, key: int) -> None:
        """Threads writing one domain take turns."""
        self._count("lock_domain")
        with self._freed:
            while key in self._writing:
                self._freed.wait()
            self._writing.add(key)

    def unlock_domain(self, prefix: bytes, key: int) -> None:
        with self._freed:
            self._writing.discard(key)
            self._freed.notify_all()

    def _get(self, key: bytes) -> bytes | None:
        i = bisect.bisect_left(self._keys, key)
        if i < len(self._keys) and self._keys[i] == key:
            return self._values[i]
        return None

    def get_many(self, keys: list[bytes]) -> list[bytes | None]:
        self._count("get_many")
        with self._lock:
            return [self._get(key) for key in keys]

    def scan(self, start: bytes, end: bytes, limit: int, descending: bool) -> list[tuple[bytes, bytes]]:
        self._count("scan")
        with self._lock:
            lo = bisect.bisect_left(self._keys, start)
            hi = max(lo, bisect.bisect_left(self._keys, end))
            indexes = range(hi - 1, lo - 1, -1) if descending else range(lo, hi)
            return [(self._keys[i], self._values[i]) for i in indexes[:limit]]

    def commit(
        self,
        conditions: list[tuple[bytes, bytes | None]],
        changes: list[tuple[bytes, bytes | None]],
        entries: list[dict],
    ) -> bool:
        self._count("commit")
        with self._lock:
            if any(self._get(key) != value for key, value in conditions):
                return False
            for key, value in changes:
                i = bisect.bisect_left(self._keys, key)
                found = i < len(self._keys) and self._keys[i] == key
                if value is not None and found:
                    self._values[i] = value
                elif value is not None:
                    self._keys.insert(i, key)
                    self._values.insert(i, value)
                elif found:
                    del self._keys[i]
                    del self._values[i]
            self._entries.extend(entries)
            return True

    def append_audit(self, entries: list[dict]) -> None:
        self._count("append_audit")
        with self._lock:
            self._entries.extend(entries)

    def audit_page(self, before: int | None, limit: int) -> list[tuple[int, dict]]:
        self._count("audit_page")
        with self._lock:
            end = len(self._entries) if before is None else min(before - 1, len(self._entries))
            return [(i + 1, self._entries[i]) for i in range(end - 1, max(end - limit, 0) - 1, -1)]
