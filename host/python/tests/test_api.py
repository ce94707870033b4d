"""The Python API: answers in the JSON model, typed errors, a trap that
drops the instance, cycles stage by stage, maintenance."""

from __future__ import annotations

import inspect
import json
import sqlite3
from pathlib import Path

import pytest
from conftest import PLAN, by_key, fact, state
from dict_store import DictStore

from engram_memory import (
    POSTGRES_DEFAULTS,
    EngineStopped,
    Engram,
    InputError,
    Limits,
    LockError,
    PostgresStore,
    RefusedError,
)


def test_a_write_and_a_read_answer_the_cli_json() -> None:
    with Engram() as mem:
        alice = mem.open("alice")
        written = alice.write(fact("w1", "Alice is vegetarian"))
        assert set(written) == {"ACCEPTED"}
        read = alice.read(by_key("q1"))
        record = read["records"][0]
        assert record["id"] == written["ACCEPTED"]["stored_id"]
        assert record["payload"]["semantic"]["content"] == "Alice is vegetarian"
        # The same request as JSON text gets the same answer (IO-W2).
        assert alice.write(json.dumps(fact("w1", "Alice is vegetarian"))) == written


# proves IO-W2
def test_io_w2_a_retry_answers_the_first_id_and_another_record_under_it_is_rejected() -> None:
    with Engram() as mem:
        alice = mem.open("alice")
        first = alice.write(state("w1", 1))
        assert alice.write(state("w1", 1)) == first
        assert alice.write(state("w1", 2)) == "REJECTED"
        outcomes = [(e["request_id"], e["outcome"]) for e in alice.audit()]
        assert outcomes == [("w1", "ACCEPTED"), ("w1", "REPLAYED"), ("w1", "REJECTED")]


# proves IO-W6
def test_io_w6_a_write_for_another_agent_is_rejected_and_domains_do_not_see_each_other() -> None:
    with Engram() as mem:
        alice, bob = mem.open("alice"), mem.open("bob")
        assert alice.write(state("w1", 1, agent="bob")) == "REJECTED"
        assert "ACCEPTED" in alice.write(fact("w2", "Alice is vegetarian"))
        assert bob.read(by_key("q1")) == {"records": []}
        assert mem.domains() == ["alice"]


def test_a_batch_answers_one_line_a_request_and_malformed_text_runs_nothing() -> None:
    with Engram() as mem:
        alice = mem.open("alice", input="standard input")
        answers = alice.write([state("b1", 1), state("b2", 2)])
        assert len(answers) == 2 and all("ACCEPTED" in a for a in answers)
        text = json.dumps(state("b3", 3)) + "\n{not json\n"
        with pytest.raises(InputError, match=r"standard input: line 2: not a valid write request"):
            alice.write(text, batch=True)
        latest = alice.read({"record_type": "STATE", "selector": {"Latest": {"limit": 10}}, "request_id": "r"})
        assert [r["timestamp"] for r in latest["records"]] == [2, 1]
        with pytest.raises(InputError, match=r"missing field `record_type`"):
            alice.read('{"selector":{"Limit":{"limit":1}},"request_id":"q"}')
        # An input error is a ValueError too.
        with pytest.raises(ValueError):
            alice.read("")


# proves IO-G6: a read above the host's ceiling is refused with a typed error
def test_io_g6_a_read_above_the_ceiling_answers_its_typed_error_and_is_audited() -> None:
    with Engram() as mem:
        alice = mem.open("alice")
        answer = alice.read({"record_type": "STATE", "selector": {"Limit": {"limit": 1000000}}, "request_id": "q"})
        assert set(answer) == {"error"}, answer
        [entry] = mem.audit(operation="READ")
        assert (entry["request_id"], entry["outcome"]) == ("q", "FAILED"), entry
        assert "outside 1..=1000" in entry["reason"]


def test_state_timestamps_at_the_i64_bounds_round_trip() -> None:
    with Engram() as mem:
        alice = mem.open("alice")
        for i, t in enumerate((-(2**63), 2**63 - 1)):
            stored = alice.write(state(f"w{i}", t))["ACCEPTED"]["stored_id"]
            read = alice.read({"record_type": "STATE", "selector": {"ById": {"id": stored}}, "request_id": f"r{i}"})
            assert read["records"][0]["timestamp"] == t


def test_an_answer_made_python_objects_in_rust_holds_the_exact_ints_and_floats_written() -> None:
    # Integers beyond 2^53 (where a double loses them) and floats whose
    # shortest text a fast parser may round to a neighbour come back as the
    # very values written, of the same types, as json.loads would give them.
    floats = (
        0.1 + 0.2,
        5e-324,
        1.7976931348623157e308,
        2.2250738585072014e-308,
        0.30000000000000004,
        1 / 3,
        1.0715660391465826e-75,
        3.0261999441573203e-52,
        1.2345678901234568e-300,
    )
    with Engram() as mem:
        alice = mem.open("alice")
        for i, t in enumerate((2**53 + 1, -(2**53) - 1, 2**62 + 7)):
            stored = alice.write(state(f"w{i}", t))["ACCEPTED"]["stored_id"]
            read = alice.read({"record_type": "STATE", "selector": {"ById": {"id": stored}}, "request_id": f"r{i}"})
            (record,) = read["records"]
            assert type(record["timestamp"]) is int and record["timestamp"] == t
            assert record == json.loads(json.dumps(record))
        for i, value in enumerate(floats):
            request = fact(f"f{i}", "Alice is vegetarian", key=f"user.diet{i}")
            request["record"]["payload"]["semantic"]["strength"] = value
            assert "ACCEPTED" in alice.write(request)
            by_key = {"ByKey": {"key": f"user.diet{i}"}}
            read = alice.read({"record_type": "FACT", "selector": by_key, "request_id": f"q{i}"})
            strength = read["records"][0]["payload"]["semantic"]["strength"]
            assert type(strength) is float and strength == value, (strength, value)


def test_open_refuses_what_no_domain_can_be() -> None:
    with Engram() as mem:
        with pytest.raises(ValueError, match="agent id"):
            mem.open("")
        with pytest.raises(ValueError, match="agent id"):
            mem.open("a" * 257)
        with pytest.raises(ValueError, match="tier_ceiling"):
            mem.open("alice", tier_ceiling="secret")
        with pytest.raises(ValueError, match="mode"):
            mem.open("alice", mode="offline")


# proves S-TRAP: a store that cannot append a read's audit entry fails the call as a trap does, and the next
# call gets a fresh instance
def test_a_trail_the_store_cannot_append_to_fails_the_call_and_the_next_call_has_a_fresh_instance() -> None:
    store = DictStore()
    failing = {"on": False}
    append = store.append_audit

    def flaky(entries: list[dict]) -> None:
        if failing["on"]:
            raise OSError("the trail is gone")
        append(entries)

    store.append_audit = flaky  # type: ignore[method-assign]
    with Engram(store) as mem:
        alice = mem.open("alice")
        assert alice._native.restarts == 0
        failing["on"] = True
        with pytest.raises(EngineStopped, match="the trail is gone"):
            alice.read({"record_type": "STATE", "selector": {"Latest": {"limit": 1}}, "request_id": "r1"})
        failing["on"] = False
        assert alice._native.restarts == 1, "the stopped instance was let go: the next call makes a fresh one"
        assert alice.read({"record_type": "STATE", "selector": {"Latest": {"limit": 1}}, "request_id": "r2"}) == {
            "records": []
        }
        assert alice._native.restarts == 1, "the fresh instance answered"
        assert "ACCEPTED" in alice.write(state("w", 1))


# proves S-TRAP: a call whose instance stopped still has its audit entry
def test_a_write_during_which_the_engine_stopped_is_audited_failed_with_why() -> None:
    # The engine's memory held to 2 MiB, and a record that needs more: the
    # instance stops growing past it.
    limits = Limits(max_memory_bytes=2 << 20, max_record_bytes=16 << 20, max_batch_bytes=64 << 20)
    with Engram(limits=limits) as mem:
        alice = mem.open("alice")
        with pytest.raises(EngineStopped, match="memory limit"):
            alice.write(fact("w-stopped", "x" * (3 << 20)))
        [entry] = [e for e in alice.audit() if e["request_id"] == "w-stopped"]
        assert entry["operation"] == "WRITE" and entry["outcome"] == "FAILED"
        assert entry["record_type"] == "FACT"
        assert entry["source"] == {"agent_id": "alice", "component": "COGNITION", "actor": "USER"}
        assert "memory limit" in entry["reason"] and "its instance was stopped" in entry["reason"]
        assert "ACCEPTED" in alice.write(state("w-after", 2)), "a fresh instance writes"


# proves B5-D1: a cycle dropped before its commit persists nothing
def test_b5_d1_a_cycle_stage_by_stage_and_one_left_without_commit_persists_nothing() -> None:
    with Engram() as mem:
        alice = mem.open("alice")
        with alice.cycle(PLAN, session="s", request_id="c1") as cycle:
            stage = cycle.run_stage(
                "SummarizeMemory", message="I booked the Hotel Avenida in Lisbon.", response="Lovely, enjoy Lisbon."
            )
            assert stage["stage"] == "SummarizeMemory"
            assert "summarized" in cycle.output("summary")
            assert cycle.output("persist") is None
            cycle.run_stage("PersistMemory")
            assert len(cycle.commit()["committed"]) == 1
        with alice.cycle(PLAN, session="s", request_id="c2") as cycle:
            cycle.run_stage("SummarizeMemory", message="Sarah is vegetarian.", response="Noted.")
            cycle.run_stage("PersistMemory")
        events = alice.read({"record_type": "EVENT", "selector": {"Limit": {"limit": 10}}, "request_id": "r"})
        assert len(events["records"]) == 1


# proves B5-P4: a refused plan raises its plan_error
def test_b5_p4_a_plan_that_retrieves_without_ranking_is_refused() -> None:
    retrieving = {
        "metadata": {},
        "steps": [
            {"name": "q", "stage": "ContextSelect", "kind": {"SummarizeMemory": {"of": "user_message"}}},
            {"name": "r", "stage": "ContextSelect", "kind": "RetrieveMemory", "inputs": ["q"]},
        ],
    }
    with Engram() as mem:
        alice = mem.open("alice")
        with pytest.raises(RefusedError) as refused:
            alice.cycle(retrieving)
        assert refused.value.answer["plan_error"]["rule"] == "B5-P4"
        lines = alice.run_cycle(retrieving, message="hello")
        assert lines[-1]["plan_error"]["rule"] == "B5-P4"


# proves IO-W7, S-MODE: under maintenance only MAINTENANCE writes
def test_io_w7_the_maintenance_lock_keeps_online_writes_out_until_the_maintenance_domain_closes() -> None:
    with Engram() as mem:
        online = mem.open("alice")
        maintenance = mem.open("alice", mode="maintenance")
        assert online.write(state("w1", 1)) == "REJECTED"
        with pytest.raises(LockError, match="locked for maintenance"):
            mem.open("alice", mode="maintenance")
        assert "ACCEPTED" in maintenance.write(state("m1", 1, component="MAINTENANCE"))
        assert maintenance.write(state("m2", 2)) == "REJECTED", "a COGNITION write under maintenance"
        maintenance.close()
        assert "ACCEPTED" in online.write(state("w2", 2))
        [rejected, *_] = mem.audit(outcome="REJECTED")
        assert "locked for maintenance" in rejected["reason"]


# proves IO-W2, S-EXPORT: an export imported into another store is the same domain, retries included
def test_io_w2_export_then_import_into_another_store_keeps_ids_and_answers(tmp_path: Path) -> None:
    with Engram() as source:
        alice = source.open("alice")
        stored = alice.write(fact("w1", "Alice is vegetarian"))["ACCEPTED"]["stored_id"]
        alice.run_cycle(PLAN, message="I booked a hotel in Lisbon.", response="Enjoy!", session="s", request_id="t1")
        lines = source.export()
    with Engram(tmp_path / "copy.db") as copy:
        assert copy.import_(json.loads(json.dumps(lines))) == [
            {"agent_id": "alice", "items": len(lines), "new": len(lines)}
        ]
        alice = copy.open("alice")
        assert alice.read(by_key("q"))["records"][0]["id"] == stored
        assert alice.write(fact("w1", "Alice is vegetarian")) == {"ACCEPTED": {"stored_id": stored}}
        assert copy.export() == lines
        assert copy.forget("alice")["removed"] > 0
        assert copy.domains() == []


def test_a_store_given_by_path_is_a_sqlite_file_of_the_shared_format(tmp_path: Path) -> None:
    path = tmp_path / "by-path.db"
    with Engram(path) as mem:
        alice = mem.open("alice")
        assert "ACCEPTED" in alice.write(state("w", 1))
        assert (
            len(
                alice.read({"record_type": "STATE", "selector": {"Latest": {"limit": 1}}, "request_id": "r"})["records"]
            )
            == 1
        )
        assert len(alice.audit()) == 2
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA application_id").fetchone()[0] == 0x454E4752
    assert db.execute("PRAGMA user_version").fetchone()[0] == 4
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("SELECT count(*) FROM engram_kv").fetchone()[0] > 0
    db.close()


def test_a_closed_domain_or_store_refuses_calls() -> None:
    mem = Engram()
    alice = mem.open("alice")
    alice.close()
    with pytest.raises(Exception, match="closed"):
        alice.write(state("w", 1))
    mem.close()
    with pytest.raises(Exception, match="closed"):
        mem.open("alice")


# proves IO-W2, B5-S1
def test_io_w2_remember_twice_with_one_request_id_stores_one_memory_and_recall_finds_it() -> None:
    import datetime

    from engram_memory import Memory, Recalled, Remembered

    with Engram() as mem:
        alice = mem.open("alice")
        turn = ("I booked the Hotel Avenida in Lisbon.", "Lovely!")
        when = datetime.datetime(2026, 1, 1, 9, 30, tzinfo=datetime.timezone.utc)
        first = alice.remember(*turn, request_id="t1", session="trip", time=when)
        assert isinstance(first, Remembered) and first.request_id == "t1" and len(first.committed) == 1
        assert alice.remember(*turn, request_id="t1", session="trip", time=when) == first
        # Without a request id: a fresh one each time, given back to retry with.
        other = alice.remember("Sarah is vegetarian.", "Noted.")
        assert other.request_id.startswith("remember-") and other.request_id != alice.remember("x y z", "w").request_id
        stored = alice.read({"record_type": "EVENT", "selector": {"Latest": {"limit": 10}}, "request_id": "r"})
        assert [r["id"] for r in stored["records"]].count(first.committed[0]) == 1
        assert all(turn[0] not in json.dumps(r) and "Lovely" not in json.dumps(r) for r in stored["records"]), (
            "the raw turn is never stored"
        )
        recalled = alice.recall("Which hotel did I book?", top_k=2)
        assert isinstance(recalled, Recalled) and recalled.left_out == 0
        assert recalled.memories[0] == Memory(
            id=first.committed[0], summary="User booked Hotel Avenida in Lisbon.", timestamp=1767259800000
        )
        assert recalled.memories[0].time == when
        assert "- [2026-01-01T09:30:00Z] User booked Hotel Avenida in Lisbon." in recalled.prompt.splitlines()
        assert recalled.prompt.endswith("User: Which hotel did I book?")


def test_remember_and_recall_refuse_with_typed_errors_and_store_nothing() -> None:
    import datetime

    with Engram() as mem:
        alice = mem.open("alice")
        with pytest.raises(RefusedError) as refused:
            alice.recall("anything", top_k=0)
        assert refused.value.answer == {"plan_error": {"step": "retrieve", "rule": "B5-P4", "kind": "ZeroTopK"}}
        alice.remember("I booked the Hotel Avenida.", "Lovely!", request_id="t1")
        with pytest.raises(RefusedError) as refused:
            alice.remember("Another turn entirely.", "Indeed.", request_id="t1")
        assert refused.value.answer == {"cycle_error": "CommitFailed"}
        with pytest.raises(InputError, match="time zone"):
            alice.remember("a", "b", time=datetime.datetime(2026, 1, 1))
        stored = alice.read({"record_type": "EVENT", "selector": {"Latest": {"limit": 10}}, "request_id": "r"})
        assert len(stored["records"]) == 1


def test_the_postgresql_defaults_are_every_hosts_and_name_each_option() -> None:
    # Read from the native module, which has them from engram-store: one for
    # each timing PostgresStore takes, in seconds.
    options = set(inspect.signature(PostgresStore).parameters) - {"url", "schema"}
    assert set(POSTGRES_DEFAULTS) == options
    assert all(seconds > 0 for seconds in POSTGRES_DEFAULTS.values())
