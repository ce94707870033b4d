"""I/O errors at every store operation: the call that met one is answered
REJECTED or with a typed error and audited with why; nothing of it is
stored; the next call works. A store that loses its trail stops the
instance, and the next call gets a fresh one."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from conftest import ASK, PLAN, state

from engram import EngineStopped, Engram, MemoryStore

LATEST = {"record_type": "STATE", "selector": {"Latest": {"limit": 10}}, "request_id": "check"}


def failing(why: str) -> Callable[..., object]:
    def fail(*_: object) -> object:
        raise OSError(why)

    return fail


# proves IO-W8 IO-G1: a write that meets an I/O error is REJECTED, audited with why, and stores nothing
@pytest.mark.parametrize("operation", ["get", "commit"])
def test_io_w8_a_write_that_meets_an_io_error_is_rejected_and_stores_nothing(operation: str) -> None:
    store = MemoryStore()
    with Engram(store) as mem:
        alice = mem.open("alice")
        assert "ACCEPTED" in alice.write(state("w0", 0))
        healthy = getattr(store, operation)
        why = f"the disk is full — {operation} ✗"  # beyond latin-1: the message is text, not bytes
        setattr(store, operation, failing(why))
        answer = alice.write(state("w1", 1))
        setattr(store, operation, healthy)
        assert answer == "REJECTED"
        [entry] = [e for e in mem.audit() if e["request_id"] == "w1"]
        assert entry["outcome"] == "REJECTED" and why in entry["reason"], entry
        assert [r["timestamp"] for r in alice.read(LATEST)["records"]] == [0]
        assert "ACCEPTED" in alice.write(state("w2", 2))


# proves B5-F1: a read that meets an I/O error answers a typed error, never an empty list
@pytest.mark.parametrize("operation", ["get", "scan", "get_many"])
def test_b5_f1_a_read_that_meets_an_io_error_answers_a_typed_error(operation: str) -> None:
    store = MemoryStore()
    with Engram(store) as mem:
        alice = mem.open("alice")
        stored = alice.write(state("w0", 0))["ACCEPTED"]["stored_id"]
        by_id = {"record_type": "STATE", "selector": {"ById": {"id": stored}}, "request_id": "r1"}
        request = by_id if operation == "get" else {**LATEST, "request_id": "r1"}
        healthy = getattr(store, operation)
        setattr(store, operation, failing(f"{operation} broke"))
        answer = alice.read(request)
        setattr(store, operation, healthy)
        assert answer == {"error": "StorageUnavailable"}
        [entry] = [e for e in mem.audit() if e["request_id"] == "r1"]
        assert entry["outcome"] == "FAILED" and f"{operation} broke" in entry["reason"]
        assert len(alice.read(request)["records"]) == 1


# proves B5-D1 B5-F2: a cycle whose commit fails persists nothing
def test_b5_f2_a_cycle_whose_commit_fails_persists_nothing() -> None:
    store = MemoryStore()
    with Engram(store) as mem:
        alice = mem.open("alice")
        healthy = store.commit
        store.commit = failing("no space left")  # type: ignore[method-assign]
        lines = alice.run_cycle(PLAN, message="I booked a hotel in Lisbon.", response="Enjoy.", request_id="t1")
        store.commit = healthy  # type: ignore[method-assign]
        assert "cycle_error" in lines[-1], lines
        events = {"record_type": "EVENT", "selector": {"Limit": {"limit": 10}}, "request_id": "e"}
        assert alice.read(events) == {"records": []}
        lines = alice.run_cycle(PLAN, message="I booked a hotel in Lisbon.", response="Enjoy.", request_id="t1")
        assert len(lines[-1]["committed"]) == 1


# proves B5-F1 B5-D3: a retrieval that meets an I/O error fails the cycle; nothing is selected
@pytest.mark.parametrize("operation", ["scan", "get"])
def test_b5_f1_a_retrieval_that_meets_an_io_error_fails_the_cycle(operation: str) -> None:
    store = MemoryStore()
    with Engram(store) as mem:
        alice = mem.open("alice")
        alice.run_cycle(PLAN, message="I booked the Hotel Avenida in Lisbon.", response="Enjoy.", request_id="t1")
        healthy = getattr(store, operation)
        setattr(store, operation, failing(f"{operation} broke"))
        lines = alice.run_cycle(ASK, message="Which hotel did I book in Lisbon?", request_id="q1")
        setattr(store, operation, healthy)
        assert lines == [{"cycle_error": "StorageUnavailable"}], lines
        [entry] = [e for e in mem.audit() if e["request_id"].startswith("q1")]
        assert entry["outcome"] == "FAILED" and f"{operation} broke" in entry["reason"], entry
        lines = alice.run_cycle(ASK, message="Which hotel did I book in Lisbon?", request_id="q2")
        assert len(lines[0]["steps"][-1]["output"]["selected"]) == 1


# proves IO-W2: a commit that keeps conflicting gives up as REJECTED; a retry stores it once
def test_io_w2_a_write_that_keeps_conflicting_is_rejected_and_a_retry_stores_it_once() -> None:
    store = MemoryStore()
    with Engram(store) as mem:
        alice = mem.open("alice")
        healthy = store.commit
        store.commit = lambda *_: False  # type: ignore[method-assign]
        assert alice.write(state("w1", 1)) == "REJECTED"
        store.commit = healthy  # type: ignore[method-assign]
        first = alice.write(state("w1", 1))
        assert alice.write(state("w1", 1)) == first
        assert len(alice.read(LATEST)["records"]) == 1


def test_a_store_that_cannot_take_a_read_entry_stops_the_instance_and_the_next_call_gets_a_fresh_one() -> None:
    store = MemoryStore()
    with Engram(store) as mem:
        alice = mem.open("alice")
        healthy = store.append_audit
        store.append_audit = failing("the trail is gone")  # type: ignore[method-assign]
        with pytest.raises(EngineStopped, match="the trail is gone"):
            alice.read(LATEST)
        store.append_audit = healthy  # type: ignore[method-assign]
        assert alice.read(LATEST) == {"records": []}
