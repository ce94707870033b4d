"""The PostgreSQL store from Python (the Rust host's, in the native module):
the command line and Python processes share one schema, its domain locks
among them, and a store moves between them. The cases that need a server run when
``ENGRAM_TEST_POSTGRES_URL`` names a database (each in schemas of its own)
and are skipped, and counted, without it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest
from conftest import by_key, cli, fact, needs_postgres, postgres_url, python_and_cli_writing, state, with_schema
from test_sqlite import check_every_write_kept

from engram_memory import Engram, PostgresStore, SqliteStore, StoreError


def url() -> str:
    found = postgres_url()
    assert found is not None
    return found


def test_opening_errors_say_what_failed_in_one_line(tmp_path: Path) -> None:
    # Nothing listens on port 1 of the loopback address.
    with pytest.raises(StoreError) as refused:
        PostgresStore("postgres://app:secret@127.0.0.1:1/memory")
    message = str(refused.value)
    assert "\n" not in message and "secret" not in message
    assert message.startswith("postgres://app:***@127.0.0.1:1/memory: cannot connect:")
    assert "Connection refused" in message
    with pytest.raises(StoreError, match=r"^postgres://h/db\?nosuch=1: not a valid PostgreSQL URL: .*nosuch"):
        PostgresStore("postgres://h/db?nosuch=1")
    with pytest.raises(StoreError, match="not a schema name Engram uses"):
        PostgresStore("postgres://127.0.0.1:1/db", schema="Mixed-Case")
    with pytest.raises(StoreError, match=r"^mysql://: not a kind of store Engram opens"):
        Engram("mysql://h/db")
    with pytest.raises(StoreError, match="cannot connect"):
        Engram("postgresql://127.0.0.1:1/db")


@needs_postgres
def test_engram_opens_a_postgres_url_in_the_schema_its_search_path_names(pg_schema: Callable[[str], str]) -> None:
    schema = pg_schema("url")
    for scheme in ("postgres", "postgresql"):
        given = with_schema(url(), schema).replace("postgres://", f"{scheme}://", 1)
        with Engram(given) as mem:
            alice = mem.open("alice")
            answer = alice.write(fact(f"w-{scheme}", "Alice is vegetarian"))
            assert "ACCEPTED" in answer
    with psycopg.connect(url()) as conn:
        [(version,)] = conn.execute(f"SELECT version FROM {schema}.engram_schema").fetchall()
        assert version == 2
        assert conn.execute(f"SELECT count(*) FROM {schema}.engram_audit").fetchone() == (2,)


def _columns(schema: str) -> list[tuple]:
    """What a schema's tables are made of: columns (type, nullability,
    default, identity), constraints and indexes."""
    with psycopg.connect(url()) as conn:
        columns = conn.execute(
            """SELECT table_name, column_name, ordinal_position, data_type, is_nullable,
                      column_default, is_identity, identity_generation
               FROM information_schema.columns WHERE table_schema = %s ORDER BY 1, 3""",
            (schema,),
        ).fetchall()
        constraints = conn.execute(
            """SELECT conrelid::regclass::text, contype, pg_get_constraintdef(oid)
               FROM pg_constraint WHERE connamespace = %s::regnamespace ORDER BY 1, 2, 3""",
            (schema,),
        ).fetchall()
        indexes = conn.execute(
            "SELECT indexname, replace(indexdef, %s, 'S.') FROM pg_indexes WHERE schemaname = %s ORDER BY 1",
            (f"{schema}.", schema),
        ).fetchall()
    return [tuple(c) for c in columns] + [(t.split(".")[-1], k, d) for t, k, d in constraints] + indexes


# One schema text, run by every host: a PostgreSQL store Python creates has, column by column, the tables of
# one the command line creates.
@needs_postgres
def test_a_schema_created_from_python_has_the_tables_of_one_the_command_line_creates(
    pg_schema: Callable[[str], str], engram_bin: str
) -> None:
    from_python, from_cli = pg_schema("python"), pg_schema("cli")
    PostgresStore(url(), schema=from_python).close()
    cli(engram_bin, with_schema(url(), from_cli), ["write", "--agent", "alice"], json.dumps(fact("w1", "Alice")))
    python = _columns(from_python)
    assert {c[0] for c in python if len(c) == 8} == {"engram_audit", "engram_kv", "engram_schema"}
    assert python == _columns(from_cli)


# A schema of another version, or with Engram's table names and no version, is refused and left untouched.
@needs_postgres
def test_a_newer_schema_version_or_foreign_tables_are_refused_and_left_alone(
    pg_schema: Callable[[str], str], engram_bin: str
) -> None:
    newer, foreign = pg_schema("newer"), pg_schema("foreign")
    PostgresStore(url(), schema=newer).close()
    with psycopg.connect(url()) as conn:
        conn.execute(f"UPDATE {newer}.engram_schema SET version = 99")
        conn.execute(f"CREATE SCHEMA {foreign}; CREATE TABLE {foreign}.engram_kv (x int)")
    with pytest.raises(StoreError) as refused:
        PostgresStore(url(), schema=newer)
    assert str(refused.value) == (
        f"{url()}: cannot open the Engram store: schema {newer}: Engram store of schema version 99; "
        "this build reads version 2"
    )
    with pytest.raises(StoreError, match="not an Engram store"):
        Engram(with_schema(url(), foreign))
    # The command line refuses what Python refuses.
    failed = subprocess.run(
        [engram_bin, "--store", with_schema(url(), newer), "read", "--agent", "alice"],
        input=json.dumps(by_key("q")),
        capture_output=True,
        text=True,
    )
    assert failed.returncode != 0 and "schema version 99" in failed.stderr
    with psycopg.connect(url()) as conn:
        assert conn.execute(f"SELECT version FROM {newer}.engram_schema").fetchall() == [(99,)]
        tables = conn.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (foreign,))
        assert tables.fetchall() == [("engram_kv",)]


# proves IO-W6 IO-W2 (across hosts): the command line reads what Python wrote to PostgreSQL, a retry through it
# is one, and Python reads what it wrote back
@needs_postgres
def test_a_schema_written_from_python_is_read_by_the_command_line_and_back(
    pg_schema: Callable[[str], str], engram_bin: str
) -> None:
    store = with_schema(url(), pg_schema("interop"))
    with Engram(store) as mem:
        alice = mem.open("alice")
        written = alice.write(fact("w1", "Alice is vegetarian"))
        read = alice.read(by_key("q-python"))
    stored = written["ACCEPTED"]["stored_id"]
    [answer] = cli(engram_bin, store, ["read", "--agent", "alice"], json.dumps(by_key("q-cli")))
    assert answer == read and answer["records"][0]["id"] == stored
    [retry] = cli(engram_bin, store, ["write", "--agent", "alice"], json.dumps(fact("w1", "Alice is vegetarian")))
    assert retry == {"ACCEPTED": {"stored_id": stored}}
    [bob] = cli(engram_bin, store, ["write", "--agent", "bob"], json.dumps(fact("b1", "Bob eats fish", agent="bob")))
    trail = [
        (e["request_id"], e["operation"], e["outcome"]) for e in cli(engram_bin, store, ["audit", "--agent", "alice"])
    ]
    assert trail == [
        ("w1", "WRITE", "ACCEPTED"),
        ("q-python", "READ", "RETURNED"),
        ("q-cli", "READ", "RETURNED"),
        ("w1", "WRITE", "REPLAYED"),
    ]
    with Engram(store) as mem:
        assert mem.domains() == ["bob", "alice"]
        assert mem.open("bob").read(by_key("q-bob"))["records"][0]["id"] == bob["ACCEPTED"]["stored_id"]
        assert [(e["request_id"], e["outcome"]) for e in mem.audit("alice")] == [
            (request_id, outcome) for request_id, _, outcome in trail
        ]
        # What the command line exports, Python exports the same.
        assert mem.export() == cli(engram_bin, store, ["maintenance", "export"])


# proves IO-W2 S-EXPORT: a SQLite file's memories move to PostgreSQL, by the command line's export and import or by
# Python's, ids and answers kept
@needs_postgres
def test_memories_move_from_a_file_to_postgres(
    tmp_path: Path, pg_schema: Callable[[str], str], engram_bin: str
) -> None:
    old = tmp_path / "old.db"
    with Engram(old) as mem:
        alice = mem.open("alice")
        stored = alice.write(fact("w1", "Alice is vegetarian"))["ACCEPTED"]["stored_id"]
        alice.write(state("s1", 1767225600000))
        before = alice.read(by_key("q"))
        exported = mem.export()
    by_cli, by_python = with_schema(url(), pg_schema("moved_cli")), with_schema(url(), pg_schema("moved_py"))
    export = subprocess.run(
        [engram_bin, "--store", str(old), "maintenance", "export"], capture_output=True, text=True, check=True
    ).stdout
    cli(engram_bin, by_cli, ["maintenance", "import"], export)
    with Engram(by_python) as mem:
        assert mem.import_(exported) == [{"agent_id": "alice", "items": len(exported), "new": len(exported)}]
    for store in (by_cli, by_python):
        with Engram(store) as mem:
            alice = mem.open("alice")
            assert alice.read(by_key("q")) == before and before["records"][0]["id"] == stored
            assert alice.write(fact("w1", "Alice is vegetarian")) == {"ACCEPTED": {"stored_id": stored}}
            assert mem.export() == exported


def _writer(store: str, agent: str, prefix: str, count: int) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("writer.py")), store, agent, prefix, str(count)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
    )


# proves IO-W2 IO-W8 IO-G1: a Python process and the engram command line writing one PostgreSQL domain at once
# take turns: every write ACCEPTED, none lost, no id handed out twice
@needs_postgres
def test_io_w8_a_python_process_and_the_command_line_writing_one_postgres_domain_keep_every_write(
    pg_schema: Callable[[str], str], engram_bin: str
) -> None:
    store = with_schema(url(), pg_schema("mixed"))
    count = 150
    acknowledged = python_and_cli_writing(engram_bin, store, count)
    check_every_write_kept(store, acknowledged, reads=count, writers=2)


# proves IO-W2 IO-W8 IO-G1: threads of one process and two processes writing one PostgreSQL domain: every write
# ACCEPTED and kept, each audited once
@needs_postgres
def test_io_w8_threads_and_processes_writing_one_postgres_domain_keep_every_write(
    pg_schema: Callable[[str], str],
) -> None:
    store = with_schema(url(), pg_schema("threads"))
    PostgresStore(store).close()
    count = 60
    processes = [_writer(store, "alice", name, count) for name in ("p", "q")]
    for process in processes:
        assert process.stdout is not None and process.stdout.readline().strip() == "ready", process.stderr
    acknowledged: dict[str, str] = {}
    failures: list[BaseException] = []
    with Engram(store) as mem:

        def write(name: str) -> None:
            try:
                domain = mem.open("alice")
                for i in range(count):
                    answer = domain.write(state(f"{name}-{i}", i))
                    acknowledged[f"{name}-{i}"] = answer["ACCEPTED"]["stored_id"]
                    domain.read(
                        {"record_type": "STATE", "selector": {"Latest": {"limit": 1}}, "request_id": f"{name}-{i}-r"}
                    )
            except BaseException as error:  # noqa: BLE001 - reported below
                failures.append(error)

        threads = [threading.Thread(target=write, args=(name,)) for name in ("t", "u")]
        for process in processes:
            assert process.stdin is not None
            process.stdin.write("go\n")
            process.stdin.flush()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(600)
    assert not failures, failures
    for process in processes:
        out, err = process.communicate(timeout=600)
        assert process.returncode == 0, err
        acknowledged.update(line.split() for line in out.splitlines())
    assert len(acknowledged) == 4 * count, f"only {len(acknowledged)} of {4 * count} writes were ACCEPTED"
    assert len(set(acknowledged.values())) == 4 * count, "an id was handed out twice"
    check_every_write_kept(store, acknowledged, reads=4 * count, writers=4)


def test_sqlite_paths_are_not_urls(tmp_path: Path) -> None:
    # A path is a SQLite file, whatever its name; a URL needs a scheme.
    with Engram(tmp_path / "postgres.db") as mem:
        assert isinstance(mem.store, SqliteStore)
