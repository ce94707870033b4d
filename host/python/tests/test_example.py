"""The agent example (examples/agent.py) runs, and its turns remember."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "agent.py"


def test_the_agent_example_recalls_what_an_earlier_turn_said(tmp_path: Path) -> None:
    store = tmp_path / "agent.db"
    out = subprocess.run([sys.executable, str(EXAMPLE), str(store)], capture_output=True, text=True, check=True)
    turns = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(turns) == 3 and all(len(t["committed"]) == 1 for t in turns)
    assert "Hotel Avenida" in turns[2]["assistant"], turns[2]
    # The store keeps them: a second run's first turn is answered from the first run's.
    again = subprocess.run([sys.executable, str(EXAMPLE), str(store)], capture_output=True, text=True, check=True)
    later = [json.loads(line) for line in again.stdout.splitlines()]
    assert "Hotel Avenida" in later[0]["assistant"], later[0]
    assert len({i for t in turns + later for i in t["committed"]}) == 6


EMBEDDER = Path(__file__).resolve().parents[1] / "examples" / "embedder.py"


def test_s_vector_the_embedder_example_finds_memories_by_meaning() -> None:
    out = subprocess.run([sys.executable, str(EMBEDDER)], capture_output=True, text=True, check=True)
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert "kitten" in lines[0]["memory"], lines[0]
    assert "Lisbon" in lines[1]["memory"], lines[1]
    assert lines[2] == {"model": {"name": "e5-small", "dimension": 384}}
