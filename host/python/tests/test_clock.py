"""MT-2: transaction time strictly increases in a domain, whatever the
host's clock does: one that never moves, one that goes backwards, two
processes of one store whose clocks agree to the millisecond."""

from __future__ import annotations

import itertools
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import fact, needs_postgres, postgres_url, with_schema

from engram_memory import Backend, Engram


def frozen() -> Callable[[], int]:
    return lambda: 5_000


def backwards() -> Callable[[], int]:
    times = iter(range(9_000_000, 0, -1_000))
    return lambda: next(times)


def check_chain(domain: Any, key: str) -> dict[str, dict]:
    """The key's versions, oldest first, each closed at its successor's
    transaction time; by id."""
    chain = list(reversed(domain.history({"key": key, "limit": 100})["records"]))
    for older, newer in itertools.pairwise(chain):
        assert older["superseded_at"] == newer["created_at"], (older, newer)
    assert "superseded_at" not in chain[-1]
    return {version["id"]: version for version in chain}


# proves MT-2
@pytest.mark.parametrize("clock", [frozen, backwards])
def test_mt_2_transaction_time_strictly_increases_under_a_frozen_or_backward_clock(
    make_store: Callable[[], Backend], clock: Callable[[], Callable[[], int]]
) -> None:
    with Engram(make_store(), clock=clock()) as mem, mem.open("alice") as domain:
        written = []
        for i, (key, content) in enumerate(
            [("user.mood", "calm"), ("user.city", "Porto"), ("user.mood", "glad"), ("user.city", "Lisbon")]
        ):
            answer = domain.write(fact(f"w{i}", content, key=key))
            written.append(answer["ACCEPTED"]["stored_id"])
        held = check_chain(domain, "user.mood") | check_chain(domain, "user.city")
        times = [held[id]["created_at"] for id in written]
        assert times == sorted(set(times)), times
        for id in written:
            version = held[id]
            known = domain.as_of({"key": version["key"], "known": version["created_at"], "limit": 10})
            assert [r["id"] for r in known["records"]] == [id]


def two_writers(store: str, count: int) -> list[str]:
    """Two processes writing ``count`` versions each of one key of alice's
    domain at once, their clocks stopped at the same millisecond; the ids
    they were answered."""
    writer = str(Path(__file__).with_name("versions_writer.py"))
    processes = [
        subprocess.Popen(
            [sys.executable, writer, store, "alice", name, str(count), "5000"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("a", "b")
    ]
    for process in processes:
        assert process.stdout is not None and process.stdout.readline().strip() == "ready"
    for process in processes:
        assert process.stdin is not None
        process.stdin.write("go\n")
        process.stdin.flush()
    ids = []
    for process in processes:
        out, err = process.communicate(timeout=600)
        assert process.returncode == 0, err
        ids.extend(out.split())
    return ids


def check_two_writers(store: str) -> None:
    ids = two_writers(store, 40)
    assert len(set(ids)) == 80
    with Engram(store) as mem, mem.open("alice") as domain:
        held = check_chain(domain, "user.mood")
        assert set(held) == set(ids)
        times = sorted(version["created_at"] for version in held.values())
        assert len(set(times)) == 80, "two versions share a transaction time"


# proves MT-2: two processes of one SQLite file, their clocks agreeing to the millisecond
def test_mt_2_two_processes_on_one_file_never_share_a_transaction_time(tmp_path: Path) -> None:
    check_two_writers(str(tmp_path / "shared.db"))


# proves MT-2: the same on one PostgreSQL domain
@needs_postgres
def test_mt_2_two_processes_on_one_postgres_domain_never_share_a_transaction_time(
    pg_schema: Callable[[str], str],
) -> None:
    check_two_writers(with_schema(str(postgres_url()), pg_schema("clock")))
