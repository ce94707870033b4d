"""One error model, every package's: each kind of failure is an error class
of its own with its ``kind`` and the Rust host's words (the JavaScript
package's errors have the same kinds and words: host/js/test/errors.test.js);
and a domain's life: closed while a call runs, from its own algorithm or from
another thread, its lock always let go."""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path

import pytest
from conftest import fact, state

from engram_memory import (
    ClosedError,
    EngineStopped,
    Engram,
    EngramError,
    InputError,
    Limits,
    LockError,
    RefusedError,
    SqliteStore,
    StoppedError,
    StoreError,
)

#: The words the Rust host says of a domain's state (engram-model's messages).
CLOSED = "the domain is closed"
NOT_UNICODE = "the request holds text that is not Unicode (a lone surrogate): nothing ran"


def test_each_kind_of_failure_is_an_error_of_its_own_with_its_kind(tmp_path: Path) -> None:
    path = tmp_path / "engram.db"
    with Engram(str(path)) as mem:
        alice = mem.open("alice")
        with pytest.raises(InputError) as raised:
            alice.write("{not json")
        assert raised.value.kind == "input" and isinstance(raised.value, ValueError)

        refusing = {"metadata": {}, "steps": [{"name": "r", "stage": "ContextSelect", "kind": "RetrieveMemory"}]}
        with pytest.raises(RefusedError) as refused:
            alice.cycle(refusing)
        assert refused.value.kind == "refused" and "plan_error" in refused.value.answer

        with pytest.raises(LockError) as locked:
            with mem.open("alice", mode="maintenance"):
                mem.open("alice", mode="maintenance")
        assert locked.value.kind == "locked" and "locked for maintenance" in str(locked.value)

        alice.close()
        with pytest.raises(ClosedError) as closed:
            alice.recall("anything?")
        assert closed.value.kind == "closed" and str(closed.value) == CLOSED

    limits = Limits(max_memory_bytes=2 << 20, max_record_bytes=16 << 20, max_batch_bytes=64 << 20)
    with Engram(limits=limits) as mem:
        with pytest.raises(StoppedError) as stopped:
            mem.open("alice").write(fact("w-big", "x" * (3 << 20)))
        assert stopped.value.kind == "stopped" and "its instance was stopped" in str(stopped.value)
        assert EngineStopped is StoppedError

    with pytest.raises(StoreError) as store:
        SqliteStore(tmp_path)  # a folder, not a file
    assert store.value.kind == "store" and str(tmp_path) in str(store.value)
    for error in (InputError, RefusedError, StoppedError, LockError, StoreError, ClosedError):
        assert issubclass(error, EngramError)


def test_a_store_of_no_path_and_bad_options_are_input_errors_naming_what_is_wrong() -> None:
    with pytest.raises(InputError, match="a SQLite store's path is empty"):
        Engram("")
    with pytest.raises(InputError, match='synchronous must be FULL or NORMAL, not "OFF"'):
        SqliteStore("engram.db", synchronous="OFF")


def test_a_setting_that_is_no_setting_is_refused_naming_it_and_the_known_ones() -> None:
    # proves S-LIMITS: a misspelled limit is refused, never dropped
    with Engram() as mem:
        store = mem.store._native  # the Rust host's store this Engram opened
        from engram_memory import _native

        with pytest.raises(RuntimeError) as raised:
            _native.NativeDomain.open(store, json.dumps({"agent": "alice", "max_batch_op": 5}))
        message = str(raised.value)
        assert message.startswith("I") and '"max_batch_op"' in message and "max_batch_ops" in message


def test_text_that_is_not_unicode_is_refused_never_rewritten() -> None:
    with Engram() as mem:
        alice = mem.open("alice")
        for request_id in ("q\ud800", "q\udc00"):
            with pytest.raises(InputError) as raised:
                alice.write(json.dumps(state(request_id, 1), ensure_ascii=False))
            assert str(raised.value) == NOT_UNICODE
        with pytest.raises(InputError, match="not Unicode"):
            mem.open("al\ud800ice")
        assert alice.read({"record_type": "STATE", "selector": {"Latest": {"limit": 5}}, "request_id": "r"}) == {
            "records": []
        }


# proves IO-W7: the maintenance lock always goes with the domain that took it
def test_io_w7_a_maintenance_domain_closed_by_its_own_ranker_lets_its_lock_go(tmp_path: Path, engram_bin: str) -> None:
    path = tmp_path / "engram.db"
    with Engram(str(path)) as mem:
        mem.open("alice").remember("I parked on level 3.", "Noted.")
        holder: list = []

        def ranker(keywords: list[str], candidates: list, k: int) -> list[str]:
            holder[0].close()
            return [c.id for c in candidates][:k]

        maintenance = mem.open("alice", mode="maintenance", ranker=ranker)
        holder.append(maintenance)
        recalled = maintenance.recall("Where did I park?")
        assert recalled.memories, "the call that closed its domain still answers"
        with pytest.raises(ClosedError):
            maintenance.recall("Where did I park?")
        maintenance.close()
    written = subprocess.run(
        [engram_bin, "--store", str(path), "write", "--agent", "alice"],
        input=json.dumps(state("after", 2)),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "ACCEPTED" in written, written


def test_a_domain_closed_from_another_thread_waits_for_the_call_under_way() -> None:
    with Engram() as mem:
        started = threading.Event()
        release = threading.Event()

        def ranker(keywords: list[str], candidates: list, k: int) -> list[str]:
            started.set()
            release.wait(10)
            return [c.id for c in candidates][:k]

        alice = mem.open("alice", ranker=ranker)
        alice.remember("I parked on level 3.", "Noted.")
        answers: list = []
        call = threading.Thread(target=lambda: answers.append(alice.recall("Where did I park?")))
        call.start()
        assert started.wait(10)
        closing = threading.Thread(target=alice.close)
        closing.start()
        closing.join(0.2)
        assert closing.is_alive(), "close waits for the call under way"
        release.set()
        call.join(10)
        closing.join(10)
        assert not closing.is_alive() and answers and answers[0].memories
        with pytest.raises(ClosedError):
            alice.remember("x", "y")
        # Another domain of the agent opens in maintenance: no lock was left.
        mem.open("alice", mode="maintenance").close()


def test_a_call_of_a_domain_from_its_own_algorithm_is_a_lock_error() -> None:
    with Engram() as mem:
        holder: list = []
        seen: list[BaseException] = []

        def ranker(keywords: list[str], candidates: list, k: int) -> list[str]:
            try:
                holder[0].recall("again?")
            except EngramError as error:
                seen.append(error)
            return [c.id for c in candidates][:k]

        alice = mem.open("alice", ranker=ranker)
        holder.append(alice)
        alice.remember("I parked on level 3.", "Noted.")
        alice.recall("Where did I park?")
        assert len(seen) == 1 and isinstance(seen[0], LockError) and "under way" in str(seen[0])


def test_io_w7_a_store_wide_maintenance_call_fails_by_kind_and_does_nothing_after(tmp_path: Path) -> None:
    # proves IO-W7: export, import and expire of a store take each domain's
    # maintenance lock, in the Rust host (one crossing): a lock someone else
    # holds is a LockError naming it, a line that is no export line an
    # InputError, and a store-wide call answers what each domain answered.
    with Engram(str(tmp_path / "engram.db")) as mem:
        mem.open("alice").remember("I live in Lisbon", "Noted.")
        mem.open("bob").remember("I live in Porto", "Noted.")
        exported = mem.export()
        # Domains in the store's key order (an agent's id is kept after its length).
        agents = mem.domains()
        assert agents == ["bob", "alice"]
        assert list(dict.fromkeys(line["agent_id"] for line in exported)) == agents
        assert mem.export(["bob"]) == [line for line in exported if line["agent_id"] == "bob"]

        with mem.open("bob", mode="maintenance"):
            with pytest.raises(LockError) as locked:
                mem.export()
            assert "locked for maintenance" in str(locked.value)
            with pytest.raises(LockError):
                mem.expire(["bob"])
        with pytest.raises(InputError) as invalid:
            mem.import_([{"agent_id": "carol", "item": {"kind": "no such kind"}}])
        assert invalid.value.kind == "input"

    with Engram(str(tmp_path / "copy.db")) as copy:
        answers = copy.import_(exported)
        counts = {agent: sum(line["agent_id"] == agent for line in exported) for agent in agents}
        assert [(a["agent_id"], a["items"], a["new"]) for a in answers] == [(a, counts[a], counts[a]) for a in agents]
        assert copy.export() == exported
        assert copy.expire() == [{"agent_id": agent, "expired": 0} for agent in agents]
