"""What the tests share: the engine's store factories and the `engram`
command line that ``ENGRAM_BIN`` names (``cargo test`` sets it)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from engram import Backend, MemoryStore, SqliteStore


@pytest.fixture(params=["memory", "sqlite"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Backend]]:
    """A factory of fresh, empty stores of one backend; each closed after."""
    made: list[Backend] = []

    def make() -> Backend:
        store: Backend = MemoryStore() if request.param == "memory" else SqliteStore(tmp_path / f"s{len(made)}.db")
        made.append(store)
        return store

    yield make
    for store in made:
        store.close()


@pytest.fixture
def engram_bin() -> str:
    """The `engram` command line; these tests need it."""
    path = os.environ.get("ENGRAM_BIN")
    if not path:
        pytest.skip("ENGRAM_BIN does not name the `engram` binary (cargo test sets it)")
    return path


def cli(bin: str, store: Path, args: list[str], stdin: str = "") -> list[Any]:
    """Runs the command line on ``store``: its standard output's lines,
    parsed."""
    out = subprocess.run(
        [bin, "--store", str(store), *args], input=stdin, capture_output=True, text=True, check=True
    ).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


SOURCE = {"agent_id": "alice", "component": "COGNITION", "actor": "USER"}


def state(request_id: str, timestamp: int, agent: str = "alice", component: str = "COGNITION") -> dict:
    """A STATE write request."""
    return {
        "request_id": request_id,
        "source": {"agent_id": agent, "component": component, "actor": "USER"},
        "record": {"record_type": "STATE", "timestamp": timestamp, "payload": {"subject": "s", "properties": {}}},
    }


def fact(request_id: str, content: str, agent: str = "alice", key: str = "user.diet", tier: str = "public") -> dict:
    """A FACT write request of a semantic memory."""
    return {
        "request_id": request_id,
        "source": {"agent_id": agent, "component": "COGNITION", "actor": "USER"},
        "record": {
            "record_type": "FACT",
            "key": key,
            "payload": {
                "semantic": {
                    "content": content,
                    "context": "dining",
                    "valid_at": 1767225600000,
                    "strength": 1.0,
                    "last_accessed": 1767225600000,
                    "access_count": 0,
                    "sources": [],
                    "confidence": 0.9,
                    "privacy_tier": tier,
                }
            },
        },
    }


def by_key(request_id: str, key: str = "user.diet") -> dict:
    return {"record_type": "FACT", "selector": {"ByKey": {"key": key}}, "request_id": request_id}


#: A turn summarized and persisted.
PLAN = {
    "metadata": {},
    "steps": [
        {"name": "summary", "stage": "SummarizeMemory", "kind": {"SummarizeMemory": {"of": "turn"}}},
        {"name": "persist", "stage": "PersistMemory", "kind": "PersistMemory", "inputs": ["summary"]},
    ],
}

#: Context for a question: retrieve, rank, select.
ASK = {
    "metadata": {"top_k": 2},
    "steps": [
        {"name": "query", "stage": "ContextSelect", "kind": {"SummarizeMemory": {"of": "user_message"}}},
        {"name": "retrieve", "stage": "ContextSelect", "kind": "RetrieveMemory", "inputs": ["query"]},
        {"name": "select", "stage": "ContextSelect", "kind": "ContextSelect", "inputs": ["retrieve"]},
    ],
}
