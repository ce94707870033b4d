"""Engram from Python against the store a Python agent would pick instead:
LangGraph's ``SqliteStore``, on the same put / get / list-of-100 workload as
the Rust bench ``cargo bench --bench peers``, in one process, one run,
interleaved, medians of 3 rounds, at the same journal and synchronous
settings on both sides (WAL + FULL, WAL + NORMAL):

- put: one value per call, one commit each (Engram: a FACT write under the
  key ``bench.facts.k…``, what a namespace put is; LangGraph:
  ``store.put(namespace, key, value)``).
- get: one value by its key, in a scattered order, ``(i * 7919) % N``
  (Engram: a ``ByKey`` read; LangGraph: ``store.get``).
- list(100): every page of 100 of the namespace, in order (Engram:
  ``list`` with the key that ended the previous page as ``after``;
  LangGraph: ``store.search(namespace, limit=100, offset=…)``), per page.

Settings: LangGraph's connection set to WAL and the synchronous setting,
Engram opened with that setting (its store is always WAL).

    pip install -r host/python/bench/requirements.txt ./host/python
    python host/python/bench/peers.py [N]          # N = 10000
"""

from __future__ import annotations

import os
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable

from langgraph.store.sqlite import SqliteStore

from engram_memory import Engram

NAMESPACE = ("bench", "facts")


def content(i: int) -> str:
    return f"The user prefers option {i} for dinner"


def timed(n: int, f: Callable[[int], None]) -> float:
    """µs per call of ``f(i)`` for i < n."""
    started = time.perf_counter()
    for i in range(n):
        f(i)
    return (time.perf_counter() - started) / n * 1e6


def langgraph(path: str, setting: str, n: int) -> dict[str, float]:
    conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(f"PRAGMA synchronous={setting}")
    store = SqliteStore(conn)
    store.setup()
    put = timed(n, lambda i: store.put(NAMESPACE, f"k{i:08d}", {"content": content(i), "confidence": 0.9}))

    def get(i: int) -> None:
        assert store.get(NAMESPACE, f"k{(i * 7919) % n:08d}") is not None

    def page(p: int) -> None:
        assert len(store.search(NAMESPACE, limit=100, offset=p * 100)) == 100

    phases = {"put": put, "get": timed(n, get), "list": timed(max(1, n // 100), page)}
    conn.close()
    return phases


def engram(path: str, setting: str, n: int) -> dict[str, float]:
    with Engram(path, synchronous=setting) as mem:
        domain = mem.open("bench")

        def put(i: int) -> None:
            answer = domain.write(
                {
                    "request_id": f"p{i}",
                    "source": {"agent_id": "bench", "component": "COGNITION", "actor": "USER"},
                    "record": {
                        "record_type": "FACT",
                        "key": f"bench.facts.k{i:08d}",
                        "payload": {
                            "semantic": {
                                "content": content(i),
                                "context": "dining",
                                "valid_at": 0,
                                "strength": 1.0,
                                "last_accessed": 0,
                                "access_count": 0,
                                "confidence": 0.9,
                                "privacy_tier": "public",
                            }
                        },
                    },
                }
            )
            assert "ACCEPTED" in answer, answer

        def get(i: int) -> None:
            key = f"bench.facts.k{(i * 7919) % n:08d}"
            read = domain.read({"record_type": "FACT", "selector": {"ByKey": {"key": key}}, "request_id": f"g{i}"})
            assert len(read["records"]) == 1, read

        after: list[str] = []

        def page(p: int) -> None:
            args = {"namespace": list(NAMESPACE), "limit": 100, "request_id": f"l{p}"}
            if after:
                args["after"] = after[-1]
            records = domain.list(args)["records"]
            assert len(records) == 100, len(records)
            after.append(records[-1]["key"])

        return {"put": timed(n, put), "get": timed(n, get), "list": timed(max(1, n // 100), page)}


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
    results: dict[str, list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory() as dir:
        for round in range(3):
            for setting in ("FULL", "NORMAL"):
                for name, run in (("LangGraph SqliteStore", langgraph), ("Engram (Python)", engram)):
                    path = os.path.join(dir, f"{name[:4]}-{setting}-{round}.db")
                    results.setdefault(f"{name} at WAL + {setting}", []).append(run(path, setting, n))
    median = {
        k: {p: statistics.median(r[p] for r in runs) for p in ("put", "get", "list")} for k, runs in results.items()
    }
    print(f"N = {n}, medians of 3 interleaved rounds, µs per call (list: per page of 100):")
    print(f"{'':40} {'put':>10} {'get':>10} {'list(100)':>12}")
    for name, m in median.items():
        print(f"{name:40} {m['put']:10.1f} {m['get']:10.1f} {m['list']:12.1f}")
    for setting in ("FULL", "NORMAL"):
        e, lg = median[f"Engram (Python) at WAL + {setting}"], median[f"LangGraph SqliteStore at WAL + {setting}"]
        print(
            f"Engram speed / LangGraph's at WAL + {setting:<6}: put {lg['put'] / e['put']:.2f}×, "
            f"get {lg['get'] / e['get']:.2f}×, list(100) {lg['list'] / e['list']:.2f}×"
        )


if __name__ == "__main__":
    main()
