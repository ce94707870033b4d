"""The stores (the same tests for each), a store written in Python called
back from the Rust host, and the SQLite file every host shares
(docs/store-format.md): its format, its trail file, the command line reading
what Python wrote and the other way round, and Python processes writing one
file at once."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import by_key, cli, fact, python_and_cli_writing, state
from dict_store import DictStore

from engram_memory import Backend, Engram, InputError, LockError, SqliteStore, StoreError

READ_LATEST = {"record_type": "STATE", "selector": {"Latest": {"limit": 5}}, "request_id": "r1"}


# proves IO-W8 S-AUDIT: a store written in Python gets a write's audit entry with its commit and a read's appended
def test_io_w8_a_store_written_in_python_is_called_back_with_each_commit_its_entries_and_each_read_audited() -> None:
    store = DictStore()
    commits: list[tuple[list, list, list]] = []
    commit = store.commit

    def recorded(conditions: list, changes: list, entries: list) -> bool:
        commits.append((conditions, changes, entries))
        return commit(conditions, changes, entries)

    store.commit = recorded  # type: ignore[method-assign]
    with Engram(store) as mem:
        alice = mem.open("alice")
        stored = alice.write(state("w1", 1))["ACCEPTED"]["stored_id"]
        assert [r["id"] for r in alice.read(READ_LATEST)["records"]] == [stored]
        trail = mem.audit()
    [(conditions, changes, entries)] = commits
    assert all(isinstance(key, bytes) for key, _ in conditions + changes)
    assert all(key.startswith(b"\x00\x00\x00\x05alice") for key, _ in changes), "keys scoped to the domain"
    assert [(e["request_id"], e["outcome"]) for e in entries] == [("w1", "ACCEPTED")], "the entry goes with the commit"
    assert [(e["request_id"], e["operation"], e["outcome"]) for e in trail] == [
        ("w1", "WRITE", "ACCEPTED"),
        ("r1", "READ", "RETURNED"),
    ]
    assert store.calls["append_audit"] == 1 and store.calls["lock_domain"] == 1, store.calls


# proves IO-W8: a write whose commit a store written in Python fails is REJECTED, audited with the store's words
def test_io_w8_a_store_written_in_python_that_fails_a_commit_rejects_the_write_with_its_words() -> None:
    store = DictStore()

    def broken(*_: object) -> bool:
        raise OSError("the disk is gone")

    with Engram(store) as mem:
        alice = mem.open("alice")
        store.commit = broken  # type: ignore[method-assign]
        assert alice.write(state("w1", 1)) == "REJECTED"
        [entry] = alice.audit()
        assert entry["outcome"] == "REJECTED" and "the disk is gone" in entry["reason"]
        del store.commit
        assert alice.read(READ_LATEST) == {"records": []}
        assert "ACCEPTED" in alice.write(state("w2", 2)), "the next call goes on"


# proves IO-W7 S-FORGET: forget runs under the maintenance lock, and is audited as MAINTENANCE
def test_io_w7_domains_the_maintenance_lock_and_forget(make_store: Callable[[], Backend]) -> None:
    with Engram(make_store()) as mem:
        for agent in ("bob", "alice", "al"):
            assert "ACCEPTED" in mem.open(agent).write(state(f"w-{agent}", 1, agent=agent))
        maintenance = mem.open("alice", mode="maintenance")
        assert mem.domains() == ["al", "bob", "alice"]
        with pytest.raises(LockError, match="locked for maintenance by process"):
            mem.open("alice", mode="maintenance")
        with pytest.raises(LockError, match="locked for maintenance by process"):
            mem.forget("alice")
        removed = maintenance.forget()["removed"]
        assert removed > 0
        maintenance.close()
        assert mem.domains() == ["al", "bob"]
        [audited] = mem.audit(operation="FORGET")
        assert audited["count"] == removed
        assert audited["source"] == {"agent_id": "alice", "component": "MAINTENANCE", "actor": "SYSTEM"}
        mem.open("alice", mode="maintenance").close()  # the lock was let go


def _schema_of(path: Path) -> list[tuple]:
    db = sqlite3.connect(path)
    try:
        return db.execute("SELECT type, name, tbl_name, sql FROM sqlite_schema ORDER BY name").fetchall()
    finally:
        db.close()


# proves S-FILE: one schema text, run by every host: a store Python creates holds, table by table, the SQL
# the command line's holds
def test_a_store_created_from_python_has_the_schema_text_of_one_the_command_line_creates(
    tmp_path: Path, engram_bin: str
) -> None:
    from_python, from_cli = tmp_path / "python.db", tmp_path / "cli.db"
    SqliteStore(from_python).close()
    cli(engram_bin, from_cli, ["write", "--agent", "alice"], json.dumps(fact("w1", "Alice is vegetarian")))
    python = _schema_of(from_python)
    assert [row[1] for row in python] == ["engram_audit", "engram_kv", "engram_trail"]
    assert python == _schema_of(from_cli)


def test_sqlite_the_file_format_every_host_shares(tmp_path: Path) -> None:
    path = tmp_path / "format.db"
    SqliteStore(path).close()
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA application_id").fetchone()[0] == 0x454E4752
    assert db.execute("PRAGMA user_version").fetchone()[0] == 4
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    names = [r[0] for r in db.execute("SELECT name FROM sqlite_schema WHERE type IN ('table','index') ORDER BY name")]
    assert names == ["engram_audit", "engram_kv", "engram_trail"]
    assert db.execute("SELECT moved FROM engram_trail WHERE id = 1").fetchone()[0] == 0
    db.close()
    assert path.read_bytes()[18:20] == b"\x02\x02"


def test_sqlite_synchronous_full_or_normal_and_nothing_else(tmp_path: Path) -> None:
    # What reaches the file's connection is seen in what it does: in WAL
    # mode FULL syncs the log at every commit, NORMAL only at checkpoints.
    # A Python process writes ten records at each setting under strace,
    # which counts the syncs of the log.
    if shutil.which("strace") is None:
        pytest.fail("strace is not on the PATH: this test counts the log's syncs with it (apt-get install strace)")
    script = (
        "import sys\n"
        "from engram_memory import Engram\n"
        "with Engram(sys.argv[1], synchronous=sys.argv[2]) as mem:\n"
        "    alice = mem.open('alice')\n"
        "    for i in range(10):\n"
        "        alice.write({'request_id': f'w{i}', 'source': {'agent_id': 'alice', 'component': 'COGNITION',"
        " 'actor': 'USER'}, 'record': {'record_type': 'STATE', 'timestamp': i + 1,"
        " 'payload': {'subject': 's', 'properties': {}}}})\n"
    )

    def log_syncs(synchronous: str) -> int:
        path = tmp_path / f"{synchronous.lower()}.db"
        traced = subprocess.run(
            ["strace", "-f", "-y", "-e", "trace=fsync,fdatasync", sys.executable, "-c", script, str(path), synchronous],
            capture_output=True,
            text=True,
            check=True,
        )
        return sum(f"{path.name}-wal>" in line for line in traced.stderr.splitlines())

    full, normal = log_syncs("FULL"), log_syncs("NORMAL")
    assert full >= 10, f"FULL syncs the log at each of the ten commits: {full} syncs"
    assert normal < full and normal <= 2, f"NORMAL leaves the log's syncs to checkpoints: {normal} (FULL {full})"
    with pytest.raises(InputError, match="synchronous must be FULL or NORMAL"):
        SqliteStore(tmp_path / "off.db", synchronous="OFF")


def test_sqlite_another_database_or_a_newer_schema_is_refused_and_left_alone(tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    db = sqlite3.connect(other)
    db.execute("CREATE TABLE t (x)")
    db.close()
    with pytest.raises(StoreError, match="not an Engram store"):
        SqliteStore(other)
    db = sqlite3.connect(other)
    assert [r[0] for r in db.execute("SELECT name FROM sqlite_schema")] == ["t"]
    db.close()
    newer = tmp_path / "newer.db"
    SqliteStore(newer).close()
    db = sqlite3.connect(newer)
    db.execute("PRAGMA user_version = 5")
    db.close()
    with pytest.raises(StoreError, match="schema version 5"):
        SqliteStore(newer)
    text = tmp_path / "text.db"
    text.write_bytes(b"hello, this is not a database at all, not even close to one" + b"." * 100)
    with pytest.raises(StoreError, match="not an Engram store"):
        SqliteStore(text)


def test_sqlite_a_version_1_store_is_upgraded_and_its_trail_file_moved_from_the_start(tmp_path: Path) -> None:
    path = tmp_path / "version1.db"
    SqliteStore(path).close()
    db = sqlite3.connect(path)
    db.executescript("ALTER TABLE engram_audit DROP COLUMN caller; DROP TABLE engram_trail; PRAGMA user_version = 1;")
    db.close()
    line = {"at": 7, "agent_id": "alice", "request_id": "old-read", "operation": "READ", "record_type": "FACT",
            "outcome": "RETURNED", "count": 0}  # fmt: skip
    Path(f"{path}-trail").write_text(json.dumps(line) + "\n")
    with Engram(path) as mem:
        assert [e["request_id"] for e in mem.audit()] == ["old-read"]
    assert Path(f"{path}-trail").read_bytes() == b""
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == 4
    db.close()


# proves S-FILE: a store of schema version 3, written by the build before version 4
# (tests/fixtures/store-v3.sh), opens from Python holding its records and its whole trail, the entries
# pending in its trail file after those in the file
def test_sqlite_a_version_3_store_written_by_the_build_before_opens_from_python(tmp_path: Path) -> None:
    fixtures = Path(__file__).resolve().parents[3] / "tests" / "fixtures"
    path = tmp_path / "v3.db"
    shutil.copy(fixtures / "store-v3.db", path)
    shutil.copy(fixtures / "store-v3.db-trail", f"{path}-trail")
    with Engram(path) as mem:
        trail = [e["request_id"] for e in mem.audit(limit=1000)]
        assert trail[:7] == [f"alice-000{n}" for n in range(1, 8)]
        reads = ["q-1", "q-2", "q-3", "q-4"]
        assert trail[7:] == ["bob-1", "bob-2", "bob-3", "bob-bad", *reads, "bob-turn-1#persist", *reads]
        [diet] = mem.open("alice").read(by_key("p-1"))["records"]
        assert diet["payload"]["semantic"]["content"] == "Alice is vegetarian"
        assert [e["request_id"] for e in mem.audit("alice", limit=2)] == ["q-4", "p-1"]
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == 4
    db.close()


def test_sqlite_read_entries_go_to_the_trail_file_and_the_next_commit_moves_them(tmp_path: Path) -> None:
    path = tmp_path / "trail.db"
    trail = Path(f"{path}-trail")
    with Engram(path) as mem:
        alice = mem.open("alice")
        alice.read(READ_LATEST)
        [line] = [json.loads(line) for line in trail.read_text().splitlines()]
        assert {k: line[k] for k in ("agent_id", "request_id", "operation", "outcome", "count")} == {
            "agent_id": "alice",
            "request_id": "r1",
            "operation": "READ",
            "outcome": "RETURNED",
            "count": 0,
        }
        with open(trail, "ab") as file:
            file.write(b'{"at":5,"agent_id":"ali')  # a torn line: skipped
        alice.write(state("w1", 1))
        assert trail.read_text() == ""
        db = sqlite3.connect(path)
        rows = db.execute("SELECT request_id FROM engram_audit ORDER BY seq").fetchall()
        db.close()
        assert [r[0] for r in rows] == ["r1", "w1"]
        alice.read({**READ_LATEST, "request_id": "r2"})
        assert [e["request_id"] for e in mem.audit()] == ["r1", "w1", "r2"]


# proves IO-W6 IO-W2 (across hosts): the CLI reads what Python wrote, and a retry through it is one
def test_a_store_written_from_python_is_read_by_the_engram_command_line(tmp_path: Path, engram_bin: str) -> None:
    store = tmp_path / "from-python.db"
    with Engram(store) as mem:
        alice = mem.open("alice")
        written = alice.write(fact("w1", "Alice is vegetarian"))
        read = alice.read(by_key("q-python"))
    stored = written["ACCEPTED"]["stored_id"]
    [answer] = cli(engram_bin, store, ["read", "--agent", "alice"], json.dumps(by_key("q-cli")))
    assert answer == read and answer["records"][0]["id"] == stored
    [retry] = cli(engram_bin, store, ["write", "--agent", "alice"], json.dumps(fact("w1", "Alice is vegetarian")))
    assert retry == {"ACCEPTED": {"stored_id": stored}}
    [bob] = cli(engram_bin, store, ["read", "--agent", "bob"], json.dumps(by_key("q-bob")))
    assert bob == {"records": []}
    trail = [
        (e["request_id"], e["operation"], e["outcome"]) for e in cli(engram_bin, store, ["audit", "--agent", "alice"])
    ]
    assert trail == [
        ("w1", "WRITE", "ACCEPTED"),
        ("q-python", "READ", "RETURNED"),
        ("q-cli", "READ", "RETURNED"),
        ("w1", "WRITE", "REPLAYED"),
    ]


def test_a_store_written_by_the_engram_command_line_is_read_from_python(tmp_path: Path, engram_bin: str) -> None:
    store = tmp_path / "from-cli.db"
    [written] = cli(
        engram_bin, store, ["write", "--agent", "bob"], json.dumps(fact("w1", "Bob eats fish", agent="bob"))
    )
    stored = written["ACCEPTED"]["stored_id"]
    [from_cli] = cli(engram_bin, store, ["read", "--agent", "bob"], json.dumps(by_key("q-cli")))
    with Engram(store) as mem:
        bob = mem.open("bob")
        read = bob.read(by_key("q-python"))
        assert read == from_cli and read["records"][0]["id"] == stored
        assert bob.write(fact("w1", "Bob eats fish", agent="bob")) == {"ACCEPTED": {"stored_id": stored}}
        trail = [(e["request_id"], e["operation"], e["outcome"]) for e in bob.audit()]
        assert trail == [
            ("w1", "WRITE", "ACCEPTED"),
            ("q-cli", "READ", "RETURNED"),
            ("q-python", "READ", "RETURNED"),
            ("w1", "WRITE", "REPLAYED"),
        ]
        # And what the CLI exports, Python exports the same.
        assert mem.export() == cli(engram_bin, store, ["maintenance", "export"])


# proves IO-W2 IO-W8 IO-G1: four processes writing one domain of one file take turns: every write is
# ACCEPTED (none lost to contention), is there, and is audited once
def test_four_python_processes_writing_one_file_have_every_write_accepted_and_kept(tmp_path: Path) -> None:
    store = tmp_path / "shared.db"
    SqliteStore(store).close()
    count = 150
    names = ("p", "q", "r", "s")
    writers = [
        subprocess.Popen(
            [sys.executable, str(Path(__file__).with_name("writer.py")), str(store), "alice", name, str(count)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=os.environ.copy(),
        )
        for name in names
    ]
    for writer in writers:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "ready", writer.stderr
    for writer in writers:
        assert writer.stdin is not None
        writer.stdin.write("go\n")
        writer.stdin.flush()
    acknowledged = {}
    for writer in writers:
        out, err = writer.communicate(timeout=600)
        assert writer.returncode == 0, err
        for line in out.splitlines():
            request_id, stored = line.split()
            acknowledged[request_id] = stored
    total = len(names) * count
    assert len(acknowledged) == total, f"only {len(acknowledged)} of {total} writes were ACCEPTED"
    check_every_write_kept(store, acknowledged, reads=total, writers=len(names))


# proves IO-W2 IO-W8: Python and the engram command line writing one file at once: every write ACCEPTED and kept
def test_a_python_process_and_the_engram_command_line_writing_one_file_keep_every_write(
    tmp_path: Path, engram_bin: str
) -> None:
    store = tmp_path / "mixed.db"
    SqliteStore(store).close()
    count = 150
    acknowledged = python_and_cli_writing(engram_bin, str(store), count)
    check_every_write_kept(store, acknowledged, reads=count, writers=2)


def check_every_write_kept(store: Path, acknowledged: dict[str, str], reads: int, writers: int) -> None:
    """Every acknowledged write is in the store and audited once, the
    ``writers`` overlapped, and each of the ``reads`` reads is audited once."""
    with Engram(store) as mem:
        alice = mem.open("alice")
        for request_id, stored in acknowledged.items():
            read = alice.read({"record_type": "STATE", "selector": {"ById": {"id": stored}}, "request_id": "check"})
            assert [r["id"] for r in read["records"]] == [stored], request_id
        trail = mem.audit("alice", limit=100000)
    accepted = [e["request_id"] for e in trail if e["operation"] == "WRITE" and e["outcome"] == "ACCEPTED"]
    assert sorted(accepted) == sorted(acknowledged), "each acknowledged write audited once"
    # The writers ran at once: their writes interleave in the trail. One
    # after another, the trail would switch from one writer to the next
    # writers - 1 times; more switches, and some writer's run of writes was
    # cut by another's.
    switches = sum(1 for a, b in zip(accepted, accepted[1:], strict=False) if a[0] != b[0])
    assert switches >= writers, f"the writers did not interleave: {switches} switches among {writers} writers"
    audited = [e["request_id"] for e in trail if e["operation"] == "READ" and e["request_id"] != "check"]
    assert len(audited) == len(set(audited)) == reads, "each read audited once"


# proves S-FILE IO-W8: a store one process holds open keeps every write it acknowledged while other
# processes open the file, write and close it (a host that opened and closed the file itself would let
# go of SQLite's lock on it, and another process's close would delete the WAL under the writes)
def test_a_store_held_open_keeps_its_writes_while_other_processes_open_write_and_close_it(tmp_path: Path) -> None:
    store = tmp_path / "held.db"
    SqliteStore(store).close()  # the file exists, in WAL mode, before it is held

    def note(request_id: str) -> dict:
        return {
            "request_id": request_id,
            "source": {"agent_id": "alice", "component": "COGNITION", "actor": "USER"},
            "record": {"record_type": "STATE", "timestamp": 1, "payload": {"subject": request_id, "properties": {}}},
        }

    def other(code: str) -> str:
        done = subprocess.run(
            [sys.executable, "-c", f"import json, sys\nfrom engram_memory import Engram\n{code}"],
            capture_output=True,
            text=True,
            check=False,
            env=os.environ.copy(),
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    with Engram(store) as mem:
        alice = mem.open("alice")
        mine = []
        for i in range(3):
            other(
                f"Engram({str(store)!r}).open('alice').write(json.loads({json.dumps(json.dumps(note(f'other-{i}')))}))"
            )
            assert Path(f"{store}-wal").exists(), (
                f"round {i}: another process's close deleted the WAL under an open store"
            )
            mine.append(alice.write(note(f"mine-{i}"))["ACCEPTED"]["stored_id"])
        seen = other(
            f"print(json.dumps(Engram({str(store)!r}).open('alice').read("
            "{'record_type': 'STATE', 'selector': {'Limit': {'limit': 50}}, 'request_id': 'q'})))"
        )
        ids = {r["id"] for r in json.loads(seen)["records"]}
        assert set(mine) <= ids, f"acknowledged writes lost: {set(mine) - ids}"
