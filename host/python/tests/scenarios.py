"""The runner of the shared scenarios (tests/scenarios/README.md) over any
host: a callable that makes the call of one scenario line and answers its
lines, parsed. For ``bad_input`` it raises an error whose message is the
input error's (the input is named ``standard input``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: The shared scenario files, at the top of the repository.
FOLDER = Path(__file__).resolve().parents[3] / "tests" / "scenarios"

#: The fields of a scenario line that are not the call's.
NOT_ARGUMENTS = {"expect", "exit", "as", "note"}

#: Ops a host without a command line does not have.
SKIP = {"usage"}


def load() -> list[tuple[str, list[dict]]]:
    """Every scenario file of the folder, by name, in name order."""
    scenarios = []
    for path in sorted(FOLDER.glob("*.jsonl")):
        lines = [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]
        scenarios.append((path.stem, lines))
    return scenarios


def _show(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _same_scalar(expected: Any, actual: Any) -> bool:
    """Equal JSON scalars: one kind of number, and a boolean is not one."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(expected) is type(actual) and expected == actual
    if isinstance(expected, (int, float)) and isinstance(actual, (int, float)):
        return expected == actual
    return type(expected) is type(actual) and expected == actual


def mismatch(expected: Any, actual: Any, bindings: dict[str, Any], path: str) -> str | None:
    """Why ``actual`` does not match ``expected``, or None; binds names."""
    if isinstance(expected, str) and expected.startswith("$"):
        if expected == "$_":
            return None
        if expected not in bindings:
            bindings[expected] = actual
            return None
        return mismatch(bindings[expected], actual, bindings, path)
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return f"{path}: expected a list, got {_show(actual)}"
        if len(actual) != len(expected):
            return f"{path}: expected {len(expected)} items, got {len(actual)}: {_show(actual)}"
        for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
            why = mismatch(e, a, bindings, f"{path}[{i}]")
            if why is not None:
                return why
        return None
    if isinstance(expected, dict) and list(expected) == ["$contains"]:
        # A text that holds each of the strings listed.
        if not isinstance(actual, str):
            return f"{path}: expected a text, got {_show(actual)}"
        missing = [part for part in expected["$contains"] if part not in actual]
        return f"{path}: {_show(actual)} does not hold {_show(missing)}" if missing else None
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return f"{path}: expected an object, got {_show(actual)}"
        if sorted(expected) != sorted(actual):
            return f"{path}: expected the fields {sorted(expected)}, got {sorted(actual)}: {_show(actual)}"
        for key in sorted(expected):
            why = mismatch(expected[key], actual[key], bindings, f"{path}.{key}")
            if why is not None:
                return why
        return None
    if _same_scalar(expected, actual):
        return None
    return f"{path}: expected {_show(expected)}, got {_show(actual)}"


def substitute(value: Any, bindings: dict[str, Any]) -> Any:
    """``value`` with every bound ``$name`` string replaced by its value."""
    if isinstance(value, str) and value in bindings:
        return bindings[value]
    if isinstance(value, list):
        return [substitute(v, bindings) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, bindings) for k, v in value.items()}
    return value


def run(name: str, lines: list[dict], call: Callable[[dict], list[Any]]) -> int:
    """Runs one scenario's lines in order; raises AssertionError at the
    first line whose answer does not match, naming the file and the line.
    Answers how many lines ran."""
    bindings: dict[str, Any] = {}
    ran = 0
    for index, line in enumerate(lines):
        note = f": {line['note']}" if "note" in line else ""
        where = f"{name}.jsonl line {index + 1} ({line['op']}{note})"
        if line["op"] in SKIP:
            continue
        args = substitute({k: v for k, v in line.items() if k not in NOT_ARGUMENTS}, bindings)
        if line["op"] == "bad_input":
            try:
                call(args)
            except Exception as error:  # the host's input error
                message = str(error)
            else:
                raise AssertionError(f"{where}: the bad input was taken")
            want = line["expect"]["message"]
            assert want in message, f"{where}: the error {message!r} does not contain {want!r}"
            ran += 1
            continue
        answer = call(args)
        assert isinstance(answer, list), f"{where}: the host answered no list of lines"
        expect = line["expect"]
        if isinstance(expect, list):
            why = mismatch(expect, answer, bindings, "answer")
        elif len(answer) == 1:
            why = mismatch(expect, answer[0], bindings, "answer")
        else:
            why = f"answer: expected one line, got {len(answer)}: {_show(answer)}"
        if why is not None:
            raise AssertionError(f"{where}: {why}")
        if "as" in line:
            bindings[line["as"]] = answer
        ran += 1
    return ran
