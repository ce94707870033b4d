"""The SQLite store under an I/O fault injected with strace: one failed
unlock of the store's ``-shm`` file costs one write, not every later one."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import cli

#: Ten STATE writes of agent ``io`` into the store ``sys.argv[1]``, an
#: answer a line.
WRITER = """
import json, sys
from engram_memory import Engram
with Engram(sys.argv[1]) as mem, mem.open("io") as domain:
    for i in range(1, 11):
        answer = domain.write({
            "request_id": f"io-{i}",
            "source": {"agent_id": "io", "component": "COGNITION", "actor": "USER"},
            "record": {"record_type": "STATE", "timestamp": i, "payload": {"subject": "s", "properties": {}}},
        })
        print(json.dumps(answer), flush=True)
"""


def strace() -> str:
    path = shutil.which("strace")
    assert path, "strace is not on the PATH: this case injects I/O errors with it (apt-get install strace)"
    return path


def with_samples(engram_bin: str, store: Path) -> Path:
    samples = Path(__file__).resolve().parents[3] / "samples" / "memories.jsonl"
    cli(engram_bin, store, ["write", "--agent", "alice", "--batch", str(samples)])
    return store


def lock(call: str, kind: str, at: int) -> bool:
    return f"l_type={kind}, l_whence=SEEK_SET, l_start={at}, l_len=1" in call


# proves IO-W8: a REJECTED write is audited and stores nothing; the process goes on
def test_io_w8_one_failed_unlock_of_the_shm_file_costs_one_write_not_every_later_one(
    tmp_path: Path, engram_bin: str
) -> None:
    # A writer that starts the WAL afresh lets go of read mark 0 (byte 123
    # of the -shm file), takes mark 1 alone and lets it go: that unlock
    # fails. SQLite cannot tell, and every later call of the connection
    # waited ~10 s and was REJECTED; the store now opens its connection
    # again after a failed call.
    tracer = strace()
    twin = with_samples(engram_bin, tmp_path / "twin.db")
    trace = tmp_path / "fcntl.txt"
    subprocess.run(
        [tracer, "-f", "-o", str(trace), "-e", "trace=fcntl", sys.executable, "-c", WRITER, str(twin)],
        check=True,
        capture_output=True,
    )
    calls = [line for line in trace.read_text().splitlines() if "fcntl(" in line]
    when = next(
        i + 3
        for i in range(len(calls) - 2)
        if lock(calls[i], "F_UNLCK", 123) and lock(calls[i + 1], "F_WRLCK", 124) and lock(calls[i + 2], "F_UNLCK", 124)
    )
    store = with_samples(engram_bin, tmp_path / "t.db")
    run = subprocess.run(
        [
            tracer,
            *("-f", "-o", "/dev/null", "-e", "trace=fcntl", "-e", f"inject=fcntl:error=EIO:when={when}"),
            *(sys.executable, "-c", WRITER, str(store)),
        ],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    answers = [json.loads(line) for line in run.stdout.splitlines()]
    rejected = answers.count("REJECTED")
    assert len(answers) == 10 and rejected <= 1, answers
    [read] = cli(
        engram_bin,
        store,
        ["read", "--agent", "io"],
        json.dumps({"record_type": "STATE", "selector": {"Latest": {"limit": 50}}, "request_id": "check"}),
    )
    assert len(read["records"]) == 10 - rejected, "ACCEPTED writes stored, a REJECTED one not"
    outcomes = [e["outcome"] for e in cli(engram_bin, store, ["audit", "--agent", "io"]) if e["operation"] == "WRITE"]
    assert len(outcomes) == 10 and outcomes.count("REJECTED") == rejected, outcomes


#: Opens the store ``sys.argv[1]`` and says so, or prints the error.
OPENER = """
import sys
from engram_memory import Engram
try:
    with Engram(sys.argv[1]):
        print("opened")
except Exception as error:
    print("ERR", error)
"""


def test_an_io_error_while_a_new_store_is_read_is_named_as_one_never_as_damage(tmp_path: Path) -> None:
    # Each pread of the process creating a new store fails in turn, once or
    # from then on. A read that fails once while the store opens is tried
    # again; reads that keep failing end with an error that names a failed
    # read or an I/O error, never damage: SQLite answers "database disk
    # image is malformed" for a failed read too, and a user told a healthy
    # store is damaged may delete it.
    tracer = strace()
    trace = tmp_path / "pread.txt"
    subprocess.run(
        [tracer, "-f", "-o", str(trace), "-e", "trace=pread64", sys.executable, "-c", OPENER, str(tmp_path / "dry.db")],
        check=True,
        capture_output=True,
    )
    total = sum("pread64(" in line for line in trace.read_text().splitlines())
    failed = 0
    for when in [f"{n}{then}" for n in range(1, total + 1) for then in ("", "+")]:
        store = tmp_path / f"new{when.replace('+', 'on')}.db"
        run = subprocess.run(
            [
                tracer,
                *("-f", "-o", "/dev/null", "-e", "trace=pread64", "-e", f"inject=pread64:error=EIO:when={when}"),
                *(sys.executable, "-c", OPENER, str(store)),
            ],
            capture_output=True,
            text=True,
        )
        if run.returncode != 0:
            continue  # the loader's own reads: Python never started
        said = run.stdout.strip()
        if said == "opened":
            assert not when.endswith("+"), f"pread {when}: opened though every read failed"
            continue
        failed += 1
        assert said.startswith("ERR"), said
        assert "damaged" not in said and "malformed" not in said.split("SQLite:")[0], f"pread {when}: {said}"
        assert "I/O" in said or "read" in said, f"pread {when}: {said}"
    assert failed > 0, "some injected read error must have been seen"
