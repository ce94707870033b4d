"""Engram, a memory engine for AI agents: the engine is the same
WebAssembly component every host runs, loaded by wasmtime-py, with the JSON
model of the ``engram`` command line, in the seeds' names, so a request that
works with ``engram write`` works here::

    from engram import Engram

    with Engram("engram.db") as mem:          # a SQLite file, the Rust host's format
        alice = mem.open("alice")
        alice.remember("I booked the Hotel Avenida in Lisbon.", "Lovely!")
        print(alice.recall("Which hotel did I book?").prompt)
        alice.write({...})                    # {"ACCEPTED": {"stored_id": ...}} or "REJECTED"
        alice.read({"record_type": "FACT", "selector": {"ByKey": {"key": "user.diet"}}, "request_id": "q"})

Answers are the lines the command line prints, parsed. Invalid input raises
:class:`InputError` (nothing ran); a refused plan, cycle or maintenance call
raises :class:`RefusedError` with the refusal in ``answer``; a call during
which the engine stopped raises :class:`EngineStopped`, and the next call
gets a fresh instance.
"""

from __future__ import annotations

import builtins
import datetime
import json
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import wasmtime

from ._component import (
    AlgorithmError,
    Binding,
    Candidate,
    Failure,
    Instance,
    Limits,
    Ranker,
    Runtime,
    Summarizer,
    Tokenizer,
    Turn,
)
from ._store import Backend, StoreError, audit_line, compact, row_of_line
from .memory import MemoryStore
from .sqlite import SqliteStore
from .types import Answer, Memory, Plan, ReadAnswer, ReadRequest, Recalled, Remembered, WriteAnswer, WriteRequest

__all__ = [
    "Engram",
    "Domain",
    "Cycle",
    "Limits",
    "Candidate",
    "Backend",
    "MemoryStore",
    "SqliteStore",
    "EngramError",
    "InputError",
    "RefusedError",
    "EngineStopped",
    "StoreError",
    "LockError",
    "AlgorithmError",
    "Summarizer",
    "Ranker",
    "Tokenizer",
    "WriteRequest",
    "WriteAnswer",
    "ReadRequest",
    "ReadAnswer",
    "Plan",
    "Answer",
    "Memory",
    "Remembered",
    "Recalled",
    "default_algorithms",
    "default_tokenizer",
]


def default_algorithms() -> tuple[Summarizer, Ranker]:
    """The summarizer and ranker every host uses when given none (the
    engine's own, ``engram-algorithms.wasm``), as callables: to wrap, or to
    combine with a ranker of one's own."""
    summarizer, ranker, _ = Runtime.shared().default_algorithms()
    return summarizer, ranker


def default_tokenizer() -> Tokenizer:
    """The tokenizer every host counts a prompt's tokens with when given
    none: OpenAI's ``o200k_base`` encoding (GPT-4o, GPT-4.1, the o-series),
    the engine's own in ``engram-algorithms.wasm``, as a callable."""
    return Runtime.shared().default_algorithms()[2]


class EngramError(Exception):
    """Every error of a call of this package."""


class InputError(EngramError, ValueError):
    """The input is not a valid request: nothing ran. The message names the
    input (and the line of a batch) and the problem."""


class RefusedError(EngramError):
    """The contract refused the call: nothing of it was persisted.
    ``answer`` is the line the command line prints for it, parsed
    (``{"plan_error": …}``, ``{"cycle_error": …}``, ``{"error": …}``)."""

    def __init__(self, line: str) -> None:
        super().__init__(line)
        self.answer: Any = json.loads(line)


class EngineStopped(EngramError):
    """The engine instance stopped during the call (a trap, or an import
    that failed where the contract has no error to give): the call did not
    answer, and the domain's next call gets a fresh instance. A single write
    or read that stopped so is audited FAILED with why."""


class LockError(EngramError, RuntimeError):
    """The domain's maintenance lock is held by someone else, or was broken."""


def _open_url(url: str) -> Backend:
    """The store a URL names: PostgreSQL for ``postgres://`` and
    ``postgresql://``, as the command line's ``--store`` opens them."""
    scheme = url.split("://", 1)[0]
    if scheme.lower() not in ("postgres", "postgresql"):
        raise StoreError(
            f"{scheme}://: not a kind of store Engram opens (give a SQLite file path or a postgres:// URL)"
        )
    from .postgres import PostgresStore

    return PostgresStore(url)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def _ms(time: int | datetime.datetime) -> int:
    """A time as ms since the epoch: an int as it is, an aware datetime
    converted (a naive one is refused: its zone is unknown)."""
    if isinstance(time, datetime.datetime):
        if time.tzinfo is None:
            raise InputError("time: a datetime needs a time zone (tzinfo)")
        return (time - _EPOCH) // datetime.timedelta(milliseconds=1)
    if isinstance(time, bool) or not isinstance(time, int):
        raise InputError(f"time: ms since the epoch or an aware datetime, not {type(time).__name__}")
    return time


def _text(request: Any) -> str:
    return request if isinstance(request, str) else compact(request)


#: The `export` page size.
_EXPORT_PAGE = 1000


class Engram:
    """A store and the engine that serves its agents' domains.

    ``store``: the path of a SQLite file (created if absent, the format of
    every host), a ``postgres://`` or ``postgresql://`` URL (a
    :class:`engram.postgres.PostgresStore`, with the ``postgres`` extra
    installed), a :class:`Backend` object, or None / ``":memory:"`` for a
    fresh in-memory store; a URL of another scheme is refused.
    ``synchronous`` and ``busy_timeout`` are for a store given by path.
    ``summarizer``, ``ranker`` and ``tokenizer`` (text → its number of
    tokens, for a plan's token budget) are the defaults of every domain
    opened here (every host's own when None: the tokenizer counts with
    ``o200k_base``); ``clock`` answers ms since the epoch.
    """

    def __init__(
        self,
        store: str | os.PathLike[str] | Backend | None = None,
        *,
        synchronous: str = "FULL",
        busy_timeout: float = 5.0,
        summarizer: Summarizer | None = None,
        ranker: Ranker | None = None,
        tokenizer: Tokenizer | None = None,
        limits: Limits | None = None,
        clock: Callable[[], int] | None = None,
    ) -> None:
        if store is None or store == ":memory:":
            self.store: Backend = MemoryStore()
            self._owned = True
        elif isinstance(store, str) and "://" in store:
            self.store = _open_url(store)
            self._owned = True
        elif isinstance(store, (str, os.PathLike)):
            self.store = SqliteStore(store, synchronous=synchronous, busy_timeout=busy_timeout)
            self._owned = True
        else:
            self.store = store
            self._owned = False
        self._runtime = Runtime.shared()
        self._summarizer = summarizer
        self._ranker = ranker
        self._tokenizer = tokenizer
        self._limits = limits or Limits()
        self._clock = clock or _now_ms
        self._closed = False

    def open(
        self,
        agent: str,
        *,
        mode: str = "online",
        tier_ceiling: str = "private",
        summarizer: Summarizer | None = None,
        ranker: Ranker | None = None,
        tokenizer: Tokenizer | None = None,
        input: str = "request",
        expire_after_ms: int | None = None,
    ) -> Domain:
        """The memory domain of one agent: an engine instance of its own
        whose keys the host scopes to that agent (IO-W6). ``mode``
        ``"maintenance"`` takes the domain's maintenance lock until
        :meth:`Domain.close` (only MAINTENANCE may write then);
        ``tier_ceiling`` is the highest privacy tier reads may return;
        ``input`` names the input in input errors; ``expire_after_ms``
        keeps what this domain writes for that many milliseconds only
        (from then on no read answers it, and :meth:`Domain.expire`
        removes it), None until removed otherwise."""
        if self._closed:
            raise EngramError("the store is closed")
        if not isinstance(agent, str):
            raise ValueError("an agent id must be a string")
        summarizer = summarizer or self._summarizer
        ranker = ranker or self._ranker
        tokenizer = tokenizer or self._tokenizer
        given = [summarizer, ranker, tokenizer]
        if any(a is not None for a in given) and any(a is None for a in given):
            # Some given: the others are the engine's own, called from here.
            defaults = self._runtime.default_algorithms()
            summarizer = summarizer or defaults[0]
            ranker = ranker or defaults[1]
            tokenizer = tokenizer or defaults[2]
        # None given: the engine's own, composed in (no call leaves the engine).
        settings: dict[str, Any] = {
            "agent": agent,
            "mode": mode,
            "tier_ceiling": tier_ceiling,
            "pid": os.getpid(),
            "expire_after_ms": expire_after_ms,
        }
        settings.update((name, value) for name, value in vars(self._limits).items() if value is not None)
        binding = Binding(self.store, compact(settings), self._clock, summarizer, ranker, tokenizer)
        return Domain(self._runtime, binding, agent, mode, input)

    def audit(
        self,
        agent: str | None = None,
        *,
        operation: str | None = None,
        outcome: str | None = None,
        since: int | None = None,
        until: int | None = None,
        limit: int = 100,
    ) -> list[dict]:
        """The audit trail, oldest first, in the ``engram audit`` line form:
        the newest ``limit`` entries that match."""
        if not isinstance(limit, int) or not 1 <= limit <= 100000:
            raise ValueError("an audit limit must be 1 to 100000")
        rows = self.store.audit_rows(agent, operation, outcome, since, until, limit)
        return [audit_line(row) for row in rows]

    def domains(self) -> list[str]:
        """The agents whose domains hold anything, in key order."""
        # Any domain's instance can list them: the store is one.
        with self.open("engram") as domain:
            return domain._control("domains")

    def export(self, agents: Iterable[str] | None = None) -> list[dict]:
        """Domains (every one when ``agents`` is None) as export lines
        ``{"agent_id", "item"}``, each under its maintenance lock."""
        lines: list[dict] = []
        for agent in list(agents) if agents is not None else self.domains():
            with self.open(agent, mode="maintenance") as domain:
                lines.extend(domain.export())
        return lines

    def import_(self, lines: Iterable[Mapping[str, Any]]) -> list[dict]:
        """Imports export lines, each run of lines of one agent into its
        domain under its maintenance lock: one ``{"agent_id", "items",
        "new"}`` per run."""
        groups: list[list[Mapping[str, Any]]] = []
        for line in lines:
            if groups and groups[-1][0]["agent_id"] == line["agent_id"]:
                groups[-1].append(line)
            else:
                groups.append([line])
        answers = []
        for group in groups:
            with self.open(group[0]["agent_id"], mode="maintenance") as domain:
                answers.append(domain.import_(group))
        return answers

    def expire(self, agents: Iterable[str] | None = None) -> list[dict]:
        """Removes the records whose expiry has passed from domains (every
        one when ``agents`` is None), each under its maintenance lock: one
        ``{"agent_id", "expired"}`` per domain."""
        answers = []
        for agent in list(agents) if agents is not None else self.domains():
            with self.open(agent, mode="maintenance") as domain:
                answers.append(domain.expire())
        return answers

    def forget(self, agent: str) -> dict:
        """Forgets an agent: removes every key of its domain under its
        maintenance lock and audits it with the count."""
        with self.open(agent) as domain:
            return domain.forget()

    def unlock(self, agent: str) -> dict:
        """Breaks the maintenance lock of an agent, whoever holds it (a lock
        left behind by a process that died)."""
        with self.open(agent) as domain:
            return {"agent_id": agent, "unlocked": domain._control("break-lock")}

    def close(self) -> None:
        """Closes a store this object opened."""
        if not self._closed:
            self._closed = True
            if self._owned:
                self.store.close()

    def __enter__(self) -> Engram:
        return self

    def __exit__(self, *_: Any) -> None:
        self.close()


class Domain:
    """One agent's memory domain. Every call answers the lines the ``engram``
    command line prints, parsed. Not for several threads at once."""

    def __init__(self, runtime: Runtime, binding: Binding, agent: str, mode: str, input: str) -> None:
        self._runtime = runtime
        self._binding = binding
        self._agent = agent
        self._mode = mode
        self._input = input
        self._instance: Instance | None = None
        #: How many times the instance was replaced (the first is 0).
        self._generation = -1
        self._cycles: set[Cycle] = set()
        self._closed = False
        self._mutex = threading.RLock()
        #: The value of the maintenance lock while this domain holds it.
        self._lock: str | None = None
        self._lock = self._open() or None
        self._prefix = self._control("prefix").encode("latin-1")
        #: The key of the domain's writers' turns, the same in every host.
        self._lock_key = int(self._control("lock-key"))

    @property
    def agent(self) -> str:
        """The agent whose domain this is."""
        return self._agent

    @property
    def mode(self) -> str:
        """``online`` or ``maintenance``."""
        return self._mode

    def _live(self) -> Instance:
        """The domain's instance; a fresh one, opened, after one stopped (it
        goes on holding the maintenance lock this domain holds)."""
        if self._closed:
            raise EngramError("the domain is closed")
        if self._instance is None:
            self._open()
        assert self._instance is not None
        return self._instance

    def _open(self) -> str:
        """A fresh instance, opened: the lock's value it holds (empty
        online)."""
        instance = Instance(self._runtime, self._binding)
        try:
            held = str(instance.domain("open", self._lock))
        except Failure as failure:
            kind, _, why = failure.text.partition(": ")
            if kind == "invalid":
                raise ValueError(why) from None
            raise LockError(why) from None
        self._instance = instance
        self._generation += 1
        return held

    def _control(self, name: str, *args: Any) -> Any:
        """A call of the adapter's ``engram:adapter/domain``; its error as a
        :class:`LockError` (the lock is what its calls can meet)."""
        with self._mutex:
            try:
                return self._live().domain(name, *args)
            except Failure as failure:
                raise LockError(failure.text) from None

    def _call(self, f: Callable[[Instance], Any], audited: tuple | None = None, *, writes: bool = False) -> Any:
        """Calls into the instance; a call that ``writes`` waits its turn
        among the writers of the domain (:meth:`Backend.lock_domain`)."""
        with self._mutex:
            instance = self._live()
            backend = self._binding.backend
            if writes:
                backend.lock_domain(self._prefix, self._lock_key)
            try:
                return f(instance)
            except Failure as failure:
                if failure.kind == "input":
                    raise InputError(failure.text) from None
                raise RefusedError(failure.text) from None
            except (wasmtime.WasmtimeError, Exception) as error:
                self._instance = None
                for cycle in list(self._cycles):
                    cycle._lost()
                self._cycles.clear()
                why = f"{error}; its instance was stopped, and the next call gets a fresh one"
                if audited is not None:
                    # Best effort: the store may be what failed.
                    try:
                        row = self._live().domain("stopped-row", audited[0], audited[1], why)
                        if row:
                            backend.append_audit([row_of_line(json.loads(row), at=self._binding.clock())])
                    except Exception:
                        pass
                raise EngineStopped(why) from error
            finally:
                if writes:
                    backend.unlock_domain(self._prefix, self._lock_key)

    def _batch(self, request: Any, batch: bool | None) -> tuple:
        if isinstance(request, (list, tuple)):
            return "\n".join(_text(r) for r in request), True
        return _text(request), bool(batch)

    def write(self, request: WriteRequest | str | Sequence[Any], *, batch: bool | None = None) -> Any:
        """Writes a request (a dict, or JSON text), or each of a list (a
        batch: nothing runs unless every request parses; with
        ``batch=True`` text holds one request a line). Answers
        ``{"ACCEPTED": {"stored_id": …}}`` or ``"REJECTED"``, or a list of
        them for a batch."""
        text, many = self._batch(request, batch)
        lines = self._call(
            lambda i: i.write(self._input, text, many),
            None if many else ("WRITE", text),
            writes=True,
        )
        answers = [json.loads(line) for line in lines]
        return answers if many else answers[0]

    def read(self, request: ReadRequest | str | Sequence[Any], *, batch: bool | None = None) -> Any:
        """Reads a request, or each of a list, as :meth:`write` takes them.
        Answers ``{"records": […]}`` or ``{"error": …}``, or a list."""
        text, many = self._batch(request, batch)
        lines = self._call(
            lambda i: i.read(self._input, text, many),
            None if many else ("READ", text),
        )
        answers = [json.loads(line) for line in lines]
        return answers if many else answers[0]

    def _named(self, call: str, args: Mapping[str, Any] | None, kwargs: dict[str, Any]) -> Any:
        # The defaults of what is left out are the JSON layer's (the CLI's).
        full: dict[str, Any] = {}
        full.update(args or {})
        full.update(kwargs)
        if full.get("request_id") is None:
            full["request_id"] = f"{call}-{_now_ms()}"
        text = compact(full)
        return json.loads(self._call(lambda i: i.named(call, text)))

    def history(self, args: Mapping[str, Any] | None = None, /, **kwargs: Any) -> Any:
        """The versions of a FACT key, newest first: ``key``, ``limit``
        (10), ``request_id``."""
        return self._named("history", args, kwargs)

    def as_of(self, args: Mapping[str, Any] | None = None, /, **kwargs: Any) -> Any:
        """The version of a FACT key as of a time: ``key``, exactly one of
        ``valid`` or ``known`` (ms), ``limit`` (100)."""
        return self._named("as-of", args, kwargs)

    def list(self, args: Mapping[str, Any] | None = None, /, **kwargs: Any) -> Any:
        """The FACTs of a namespace, in key order: ``namespace`` (segments),
        ``limit`` (100), ``after`` (a fact key, to continue a page)."""
        return self._named("list", args, kwargs)

    def entities(self, args: Mapping[str, Any] | None = None, /, **kwargs: Any) -> Any:
        """The entities of a type: ``entity_type``, ``limit`` (100)."""
        return self._named("entities", args, kwargs)

    def relationships(self, args: Mapping[str, Any] | None = None, /, **kwargs: Any) -> Any:
        """The relationships of an entity: ``entity``, ``incoming``,
        ``types``, ``valid_at``, ``limit``."""
        return self._named("relationships", args, kwargs)

    def traverse(self, args: Mapping[str, Any] | None = None, /, **kwargs: Any) -> Any:
        """A bounded traversal from an entity: ``start``, ``depth_first``,
        ``incoming``, ``types``, ``valid_at``, ``max_depth``, ``max_nodes``,
        ``max_edges``. Answers ``{"nodes": […], "edges": […]}``."""
        return self._named("traverse", args, kwargs)

    def remember(
        self,
        message: str,
        response: str,
        *,
        session: str | None = None,
        request_id: str | None = None,
        time: int | datetime.datetime | None = None,
    ) -> Remembered:
        """Remembers one finished turn: the user's ``message`` and the
        model's ``response`` are summarized and the summary stored as one
        memory, in one commit (the raw text is never stored). ``session``:
        the conversation (``"default"``); ``request_id``: the turn's id, so a
        retry stores nothing new (a fresh random one when None, in the
        answer); ``time``: when the turn happened (ms since the epoch or an
        aware datetime; now when None). Raises :class:`RefusedError` with
        the ``{"cycle_error": …}`` line when the contract refuses it."""
        args: dict[str, Any] = {"message": message, "response": response}
        if session is not None:
            args["session"] = session
        if request_id is not None:
            args["request_id"] = request_id
        if time is not None:
            args["time"] = _ms(time)
        text = compact(args)
        answer = json.loads(self._call(lambda i: i.named("remember", text), writes=True))
        return Remembered(request_id=answer["request_id"], committed=answer["committed"])

    def recall(
        self,
        question: str,
        *,
        top_k: int | None = None,
        token_budget: int | None = None,
        request_id: str | None = None,
    ) -> Recalled:
        """The memories that answer ``question``, best first, and the prompt
        assembled from them: ``top_k`` at most (5 when None), their lines
        within ``token_budget`` tokens when given. Persists nothing."""
        args: dict[str, Any] = {"question": question}
        if top_k is not None:
            args["top_k"] = top_k
        if token_budget is not None:
            args["token_budget"] = token_budget
        if request_id is not None:
            args["request_id"] = request_id
        text = compact(args)
        answer = json.loads(self._call(lambda i: i.named("recall", text)))
        return Recalled(
            request_id=answer["request_id"],
            memories=[Memory(**memory) for memory in answer["memories"]],
            prompt=answer["prompt"],
            left_out=answer["left_out"],
        )

    def cycle(self, plan: Plan | str, *, session: str = "python", request_id: str | None = None) -> Cycle:
        """Begins a cycle of ``plan``, to run stage by stage; raises
        :class:`RefusedError` with the ``{"plan_error": …}``. Use it in a
        ``with`` block: leaving it without a commit persists nothing."""
        rid = request_id or f"cycle-{_now_ms()}"
        text = _text(plan)
        turn = self._call(lambda i: i.begin(text, session, rid))
        cycle = Cycle(self, turn, self._generation)
        self._cycles.add(cycle)
        return cycle

    def run_cycle(
        self,
        plan: Plan | str,
        *,
        message: str | None = None,
        response: str | None = None,
        session: str = "python",
        request_id: str | None = None,
    ) -> builtins.list[Any]:
        """Runs a turn as ``engram cycle`` does: every stage with steps, then
        the commit. Answers the lines the command line prints: one
        ``{"stage", "steps"}`` per stage, then ``{"committed": […]}``, or a
        ``{"plan_error"}`` or ``{"cycle_error"}`` last."""
        rid = request_id or f"cycle-{_now_ms()}"
        text = _text(plan)
        lines = self._call(lambda i: i.run_cycle(text, session, rid, message, response), writes=True)
        return [json.loads(line) for line in lines]

    def audit(self, **query: Any) -> builtins.list[dict]:
        """This domain's audit trail, oldest first: ``operation``,
        ``outcome``, ``since``, ``until``, ``limit`` (100)."""
        limit = query.pop("limit", 100)
        if not isinstance(limit, int) or not 1 <= limit <= 100000:
            raise ValueError("an audit limit must be 1 to 100000")
        rows = self._binding.backend.audit_rows(
            self.agent, query.get("operation"), query.get("outcome"), query.get("since"), query.get("until"), limit
        )
        return [audit_line(row) for row in rows]

    def export(self) -> builtins.list[dict]:
        """Every item of a domain opened for maintenance, as export lines
        ``{"agent_id", "item"}``."""
        lines: list[dict] = []
        start: bytes | None = None
        while True:

            def page(instance: Instance, start: bytes | None = start) -> tuple[builtins.list[str], bytes | None]:
                return instance.export(start, _EXPORT_PAGE)

            items, start = self._call(page)
            lines.extend({"agent_id": self.agent, "item": json.loads(item)} for item in items)
            if start is None:
                return lines

    def import_(self, lines: Iterable[Any]) -> dict:
        """Imports items into a domain opened for maintenance: export lines
        of this agent, or bare items (dicts or JSON text). Answers
        ``{"agent_id", "items", "new"}``."""
        items: list[str] = []
        for line in lines:
            if isinstance(line, str):
                items.append(line)
            elif isinstance(line, Mapping) and "item" in line and "agent_id" in line:
                if line["agent_id"] != self.agent:
                    raise ValueError(
                        f"an export line of {json.dumps(line['agent_id'])} given to the domain of "
                        f"{json.dumps(self.agent)}"
                    )
                items.append(compact(line["item"]))
            else:
                items.append(compact(line))
        added = self._call(lambda i: i.import_(items), writes=True)
        return {"agent_id": self.agent, "items": len(items), "new": added}

    def expire(self) -> dict:
        """Removes every record of a domain opened for maintenance whose
        expiry has passed, from every index, each with an EXPIRE entry in
        the audit trail: ``{"agent_id", "expired"}``."""
        return {"agent_id": self.agent, "expired": self._call(lambda i: i.expire(), writes=True)}

    def forget(self) -> dict:
        """Forgets this agent (see :meth:`Engram.forget`), under this
        domain's lock in maintenance mode."""
        return {"agent_id": self.agent, "removed": self._control("forget")}

    def close(self) -> None:
        """Drops the instance and releases the maintenance lock."""
        if self._closed:
            return
        for cycle in list(self._cycles):
            cycle.close()
        try:
            if self._lock:
                self._control("close")  # lets the maintenance lock go
        finally:
            self._closed = True
            self._instance = None

    def __enter__(self) -> Domain:
        return self

    def __exit__(self, *_: Any) -> None:
        self.close()


class Cycle:
    """One execution cycle, stage by stage (:meth:`Domain.cycle`). Leaving
    its ``with`` block (or :meth:`close`) without a commit persists
    nothing."""

    def __init__(self, domain: Domain, turn: Turn, generation: int) -> None:
        self._domain = domain
        self._turn: Turn | None = turn
        self._generation = generation

    def _lost(self) -> None:
        self._turn = None

    def _live(self) -> Turn:
        if self._turn is None or self._generation != self._domain._generation:
            raise EngramError("the cycle is gone: it was closed, or the engine stopped")
        return self._turn

    def run_stage(self, stage: str, *, message: str | None = None, response: str | None = None) -> Any:
        """Runs every step of ``stage`` (``ContextSelect``,
        ``PromptAssemble``, ``SummarizeMemory``, ``PersistMemory``) with the
        turn's inputs: ``{"stage", "steps"}``; raises :class:`RefusedError`
        with the ``{"cycle_error"}``."""
        turn = self._live()
        return json.loads(self._domain._call(lambda _: turn.run_stage(stage, message, response)))

    def output(self, step: str) -> Any:
        """The output of a step that has run, parsed; None if none."""
        turn = self._live()
        text = self._domain._call(lambda _: turn.output(step))
        return None if text is None else json.loads(text)

    def commit(self) -> Any:
        """Persists the cycle's memories in one commit: ``{"committed":
        [ids]}``; raises :class:`RefusedError` with the ``{"cycle_error"}``."""
        turn = self._live()
        return json.loads(self._domain._call(lambda _: turn.commit(), writes=True))

    def close(self) -> None:
        """Drops the cycle; nothing not committed is persisted."""
        turn, self._turn = self._turn, None
        self._domain._cycles.discard(self)
        if turn is not None and self._generation == self._domain._generation and self._domain._instance is not None:
            try:
                turn.drop()
            except wasmtime.WasmtimeError:
                pass

    def __enter__(self) -> Cycle:
        return self

    def __exit__(self, *_: Any) -> None:
        self.close()
