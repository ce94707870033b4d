"""What the tests share: the engine's store factories and the `engram`
command line that ``ENGRAM_BIN`` names (``cargo test`` sets it)."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from dict_store import DictStore
from mcp import ClientSession

from engram_memory import Backend, MemoryStore, PostgresStore, SqliteStore, Store

#: The variable that names the PostgreSQL database the PostgreSQL cases run
#: against (``postgres://postgres@127.0.0.1:5432/test``); each case makes
#: schemas of its own in it and drops them after.
POSTGRES_URL_VAR = "ENGRAM_TEST_POSTGRES_URL"

#: Why a PostgreSQL case did not run: ``cargo test --test python`` counts
#: the skips that say this, and allows no other.
NEEDS_POSTGRES = f"needs PostgreSQL: set {POSTGRES_URL_VAR}"


def postgres_url() -> str | None:
    """The test database's URL, if the variable names one."""
    return os.environ.get(POSTGRES_URL_VAR, "").strip() or None


#: Marks a test that needs PostgreSQL: skipped, and so counted, without the
#: variable.
needs_postgres = pytest.mark.skipif(postgres_url() is None, reason=NEEDS_POSTGRES)

_schemas = itertools.count()


def unique_schema(what: str) -> str:
    """A schema name no other case, process or run uses."""
    return f"engram_py_{what}_{os.getpid()}_{next(_schemas)}_{time.time_ns() % 10**9}"


def with_schema(url: str, schema: str) -> str:
    """The URL of the database with ``schema`` first on its search path, as
    a host that takes only a URL (the command line) is given it."""
    return f"{url}{'&' if '?' in url else '?'}options=-csearch_path%3D{schema}"


@pytest.fixture
def pg_schema() -> Iterator[Callable[[str], str]]:
    """Names fresh schemas of the test database (``make("what")``), each
    dropped with everything in it after the test."""
    url = postgres_url()
    made: list[str] = []

    def make(what: str) -> str:
        assert url is not None, NEEDS_POSTGRES
        made.append(unique_schema(what))
        return made[-1]

    yield make
    if made:
        import psycopg

        with psycopg.connect(str(url), autocommit=True) as conn:
            for schema in made:
                conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


@pytest.fixture(params=["memory", "python", "sqlite", pytest.param("postgres", marks=needs_postgres)])
def make_store(
    request: pytest.FixtureRequest, tmp_path: Path, pg_schema: Callable[[str], str]
) -> Iterator[Callable[[], Store | Backend]]:
    """A factory of fresh, empty stores of one kind: the Rust host's in
    memory, SQLite and PostgreSQL stores (a PostgreSQL store in a schema of
    its own), and a store written in Python (``dict_store.DictStore``); each
    closed after."""
    made: list[Store] = []

    def make() -> Store | Backend:
        if request.param == "python":
            return DictStore()
        store: Store
        if request.param == "memory":
            store = MemoryStore()
        elif request.param == "sqlite":
            store = SqliteStore(tmp_path / f"s{len(made)}.db")
        else:
            store = PostgresStore(str(postgres_url()), schema=pg_schema("store"))
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


def cli(bin: str, store: Path | str, args: list[str], stdin: str = "") -> list[Any]:
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


def python_and_cli_writing(engram_bin: str, store: str, count: int) -> dict[str, str]:
    """A Python process (``writer.py``) and the command line writing
    ``count`` STATEs each into alice's domain of ``store`` at once: the
    stored id of every write, by request id, each checked ACCEPTED and none
    handed out twice."""
    # The command line compiles the engine at its first run on a machine:
    # done here, so that the writers below start together.
    warm = {"record_type": "STATE", "selector": {"Latest": {"limit": 1}}, "request_id": "warm"}
    cli(engram_bin, store, ["read", "--agent", "someone-else"], json.dumps(warm))
    python = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("writer.py")), store, "alice", "p", str(count)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert python.stdout is not None and python.stdout.readline().strip() == "ready"
    batch = "\n".join(json.dumps(state(f"c-{i}", i)) for i in range(count))
    cli_process = subprocess.Popen(
        [engram_bin, "--store", store, "write", "--agent", "alice", "--batch"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert python.stdin is not None
    python.stdin.write("go\n")
    python.stdin.flush()
    cli_out, cli_err = cli_process.communicate(batch, timeout=600)
    py_out, py_err = python.communicate(timeout=600)
    assert python.returncode == 0, py_err
    assert cli_process.returncode == 0, (cli_out, cli_err)
    acknowledged = dict(line.split() for line in py_out.splitlines())
    for i, line in enumerate(cli_out.splitlines()):
        acknowledged[f"c-{i}"] = json.loads(line)["ACCEPTED"]["stored_id"]
    assert len(acknowledged) == 2 * count, f"only {len(acknowledged)} of {2 * count} writes were ACCEPTED"
    assert len(set(acknowledged.values())) == 2 * count, "an id was handed out twice"
    return acknowledged


class Server:
    """A connected client session: ``call`` answers (is_error, JSON)."""

    def __init__(self, session: ClientSession) -> None:
        self.session = session

    async def call(self, tool: str, arguments: dict[str, Any]) -> tuple[bool, Any]:
        result = await self.session.call_tool(tool, arguments)
        [content] = result.content
        text = content.text  # type: ignore[union-attr]
        try:
            return bool(result.is_error), json.loads(text)
        except ValueError:
            return bool(result.is_error), text
