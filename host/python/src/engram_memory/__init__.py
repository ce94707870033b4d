"""Engram, a memory engine for AI agents: the engine is the WebAssembly
component every host runs, here under the Rust host itself (a native module,
``engram_memory._native``), on its SQLite, PostgreSQL and memory stores with
their locks and trail. The JSON model is the ``engram`` command line's, in the
seeds' names, so a request that works with ``engram write`` works here::

    from engram_memory import Engram

    with Engram("engram.db") as mem:          # a SQLite file, the format of every host
        alice = mem.open("alice")
        alice.remember("I booked the Hotel Avenida in Lisbon.", "Lovely!")
        print(alice.recall("Which hotel did I book?").prompt)
        alice.write({...})                    # {"ACCEPTED": {"stored_id": ...}} or "REJECTED"
        alice.read({"record_type": "FACT", "selector": {"ByKey": {"key": "user.diet"}}, "request_id": "q"})

Answers are the lines the command line prints, parsed. Invalid input raises
:class:`InputError` (nothing ran); a refused plan, cycle or maintenance call
raises :class:`RefusedError` with the refusal in ``answer``; a call during
which the engine stopped raises :class:`StoppedError`, and the next call
gets a fresh instance. Every call releases the GIL while the Rust host works.
"""

from __future__ import annotations

import builtins
import dataclasses
import datetime
import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from . import _native
from .types import Answer, Memory, Plan, ReadAnswer, ReadRequest, Recalled, Remembered, WriteAnswer, WriteRequest

__all__ = [
    "Engram",
    "Domain",
    "Cycle",
    "Limits",
    "Candidate",
    "Embedder",
    "Backend",
    "Store",
    "MemoryStore",
    "SqliteStore",
    "PostgresStore",
    "POSTGRES_DEFAULTS",
    "EngramError",
    "InputError",
    "RefusedError",
    "EngineStopped",
    "StoppedError",
    "ClosedError",
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


#: The words every package says of a domain's state (the Rust host's).
_MESSAGES: Mapping[str, str] = json.loads(_native.MESSAGES)


class EngramError(Exception):
    """Every error of a call of this package. ``kind`` names the kind of
    failure as every package names it (the JavaScript package's errors
    have the same kinds and words)."""

    kind = "engram"


class InputError(EngramError, ValueError):
    """The input is not a valid request (or a domain's settings, or a
    store's options): nothing ran. The message names the input (and the
    line of a batch) and the problem."""

    kind = "input"


class RefusedError(EngramError):
    """The contract refused the call: nothing of it was persisted.
    ``answer`` is the line the command line prints for it, parsed
    (``{"plan_error": …}``, ``{"cycle_error": …}``, ``{"error": …}``)."""

    kind = "refused"

    def __init__(self, line: str) -> None:
        super().__init__(line)
        self.answer: Any = json.loads(line)


class StoppedError(EngramError):
    """The engine instance stopped during the call (a trap, or a call of the
    host that failed where the contract has no error to give): the call did
    not answer, and the domain's next call gets a fresh instance. A single
    write or read that stopped so is audited FAILED with why."""

    kind = "stopped"


#: The name :class:`StoppedError` had first.
EngineStopped = StoppedError


class LockError(EngramError, RuntimeError):
    """The domain's maintenance lock is held by someone else, or was broken;
    or a call of the domain is under way on this thread (from its own
    summarizer, ranker, tokenizer, embedder or store): try again later."""

    kind = "locked"


class StoreError(EngramError):
    """A store that cannot be opened or used: the message, one line, names
    the store and why."""

    kind = "store"


class ClosedError(EngramError):
    """The domain (or the store) was closed: nothing ran."""

    kind = "closed"


class AlgorithmError(Exception):
    """A summarizer, ranker, tokenizer or embedder that failed: the engine is told the
    message as the ``err`` of its result (the cycle fails, B5-F1)."""


@dataclass(frozen=True)
class Candidate:
    """A memory the ranker may choose (``ranker.candidate``)."""

    id: str
    summary: str
    keywords: list[str]
    timestamp: int


#: Summarizes a turn: ``(user_message, model_response)`` to ``{"summary",
#: "keywords"}`` (or an object with those attributes).
Summarizer = Callable[[str, "str | None"], Any]
#: Orders candidates for the query's keywords: at most ``k`` ids, best first.
Ranker = Callable[[list[str], list[Candidate], int], Sequence[str]]
#: Counts the tokens of a text (a prompt's memory lines, for a plan's
#: token budget).
Tokenizer = Callable[[str], int]


@dataclass(frozen=True)
class Embedder:
    """Embeds texts as vectors, for recall by meaning (S-VECTOR): the engine
    embeds each memory's summary once, as it stores it (``role``
    ``"passage"``), and each question once (``"query"``).

    ``name`` and ``dimension`` are the model's: a domain records the model
    of its vectors and refuses another's until :meth:`Domain.reembed` has
    made them again. ``embed(texts, role)`` answers one vector of
    ``dimension`` numbers per text, in order: a list of lists, or a NumPy
    array (2-D, or a list of 1-D); raising fails the call that needed it
    (B5-F1)."""

    name: str
    dimension: int
    embed: Callable[[list[str], str], Any]


@dataclass(frozen=True)
class Limits:
    """What the host lets the engine ask of the store, and the limits the
    engine is told; a limit left None has the default of every host
    (``docs/limits.md``)."""

    #: The largest ``limit`` of a read.
    read_limit_ceiling: int | None = None
    #: Keyword-index entries one retrieval may read.
    candidate_limit: int | None = None
    #: Bytes of the records of one answer, before the bound by memory.
    max_answer_bytes: int | None = None
    #: The engine's memory, of which an answer may take a quarter.
    max_memory_bytes: int | None = None
    #: The largest record a write may carry.
    max_record_bytes: int | None = None
    #: Puts and deletes of one commit.
    max_batch_ops: int | None = None
    #: Bytes of keys and values of one commit.
    max_batch_bytes: int | None = None


def _compact(value: Any) -> str:
    """JSON text as every host writes it: no spaces, non-ASCII as is; NaN
    and infinity, which JSON has not, refused by name."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _text(request: Any) -> str:
    return request if isinstance(request, str) else _compact(request)


def _args(**args: Any) -> str:
    """Named arguments as JSON text, those that are None left out (the
    call surface's defaults then)."""
    return _compact({name: value for name, value in args.items() if value is not None})


# ---- answers ------------------------------------------------------------------


def _failure(framed: str) -> Exception:
    """The error a framed answer that is no value says it is."""
    kind, text = framed[:1], framed[1:]
    if kind == "I":
        return InputError(text)
    if kind == "R":
        return RefusedError(text)
    if kind == "S":
        return StoppedError(text)
    if kind == "K":
        return LockError(text)
    if kind == "F":
        return StoreError(text)
    if kind == "C":
        return ClosedError(text)
    return EngramError(f"the host answered something other than an answer: {framed[:80]}")


def _value(framed: str) -> Any:
    """The value of a framed answer (``V`` or ``L``, then its JSON text),
    parsed; or the error its frame says it is."""
    if framed[:1] in ("V", "L"):
        return json.loads(framed[1:])
    raise _failure(framed)


def _lines(framed: str) -> list[Any]:
    """The lines of a framed answer, each parsed."""
    if framed[:1] not in ("V", "L"):
        raise _failure(framed)
    text = framed[1:]
    return [json.loads(line) for line in text.split("\n")] if text else []


def _native_error(error: RuntimeError) -> Exception:
    """A failure the native module raised (its message framed: ``I``,
    ``K``, ``F`` or ``C``, then the words, or ``R`` then the refusal's
    line), as the error of this package it is."""
    message = str(error)
    if message[:1] in ("I", "R", "S", "K", "F", "C"):
        return _failure(message)
    return EngramError(message)


# ---- the caller's algorithms ----------------------------------------------------


def _words(error: BaseException) -> str:
    return str(error) or type(error).__name__


def _summary(answer: Any) -> Any:
    """A summarizer's answer as JSON takes it (a mapping, or an object with
    ``summary`` and ``keywords``)."""
    if isinstance(answer, Mapping):
        return dict(answer)
    return {"summary": getattr(answer, "summary", None), "keywords": list(getattr(answer, "keywords", None) or [])}


def _vectors(answer: Any) -> list[Any]:
    """An embedder's answer as JSON takes it: a NumPy array, or a list of
    lists or of 1-D arrays, as lists of numbers."""
    if hasattr(answer, "tolist"):
        answer = answer.tolist()
    return [vector.tolist() if hasattr(vector, "tolist") else list(vector) for vector in answer]


def _dispatcher(
    summarizer: Summarizer | None,
    ranker: Ranker | None,
    tokenizer: Tokenizer | None,
    embedder: Embedder | None = None,
) -> Any:
    """The one function the native module calls the caller's algorithms
    through: ``(kind, args)``, ``args`` and the answer JSON text, the
    answer framed ``V…`` or ``E<why>``."""

    def dispatch(kind: str, text: str) -> str:
        try:
            args = json.loads(text)
            answer: Any
            if kind == "summarize" and summarizer is not None:
                answer = _summary(summarizer(args[0], args[1]))
            elif kind == "rank" and ranker is not None:
                candidates = [
                    Candidate(id=c["id"], summary=c["summary"], keywords=c["keywords"], timestamp=int(c["timestamp"]))
                    for c in args[1]
                ]
                answer = ranker(args[0], candidates, args[2])
                if isinstance(answer, Sequence) and not isinstance(answer, (str, bytes)):
                    answer = list(answer)
            elif kind == "embed" and embedder is not None:
                answer = _vectors(embedder.embed(args[0], args[1]))
            elif kind == "count-tokens" and tokenizer is not None:
                answer = tokenizer(args[0])
            else:
                raise AlgorithmError(f"no {kind} was given")
            return "V" + _compact(answer)
        except Exception as error:
            return "E" + _words(error)

    return dispatch


def _builtin(kind: str, *args: Any) -> Any:
    """The engine's own algorithm ``kind`` for ``args``."""
    framed = _native.builtin(kind, _compact(list(args)))
    if framed[:1] != "V":
        raise AlgorithmError(framed[1:])
    return json.loads(framed[1:])


def _default_summarizer(user_message: str, model_response: str | None = None) -> Any:
    return _builtin("summarize", user_message, model_response)


def _default_ranker(query_keywords: list[str], candidates: list[Candidate], k: int) -> list[str]:
    given = [dataclasses.asdict(c) if dataclasses.is_dataclass(c) else dict(c) for c in candidates]
    return list(_builtin("rank", list(query_keywords), given, k))


def _default_tokenizer(text: str) -> int:
    return int(_builtin("count-tokens", text))


def default_algorithms() -> tuple[Summarizer, Ranker]:
    """The summarizer and ranker every host uses when given none (the
    engine's own, in the Rust host), as callables: to wrap, or to combine
    with a ranker of one's own."""
    return _default_summarizer, _default_ranker


def default_tokenizer() -> Tokenizer:
    """The tokenizer every host counts a prompt's tokens with when given
    none: OpenAI's ``o200k_base`` encoding (GPT-4o, GPT-4.1, the o-series),
    as a callable."""
    return _default_tokenizer


# ---- stores -------------------------------------------------------------------


class Backend(Protocol):
    """A store written in Python: an ordered, transactional map of bytes and
    the audit trail, called back from the Rust host (the persistence
    capability supplied in Python). Keys are whole keys (the domain's prefix
    in front); the store interprets nothing and keeps bytes in bytewise key
    order. Audit entries are dicts of the ``engram audit`` line form. A
    method that cannot do its work raises; its message is the store's
    failure, and nothing changed then. Two methods are optional:
    ``lock_domain(prefix, key)`` / ``unlock_domain(prefix, key)`` let the
    writers of one domain take turns (``key`` is the domain's lock key, the
    same in every host), and ``close()``."""

    def get_many(self, keys: list[bytes]) -> list[bytes | None]:
        """The value under each key, if any, read at one point in time."""
        ...

    def scan(self, start: bytes, end: bytes, limit: int, descending: bool) -> list[tuple[bytes, bytes]]:
        """At most ``limit`` pairs with ``start <= key < end``, smallest key
        first, or largest first when ``descending``."""
        ...

    def commit(
        self,
        conditions: list[tuple[bytes, bytes | None]],
        changes: list[tuple[bytes, bytes | None]],
        entries: list[dict],
    ) -> bool:
        """Atomically checks every condition (``(key, None)``: the key holds
        nothing; ``(key, value)``: exactly that), applies every change
        (``None`` removes the key) and appends every audit entry; durable
        when it returns. False when a condition did not hold (nothing
        changed)."""
        ...

    def append_audit(self, entries: list[dict]) -> None:
        """Appends the entries of calls that commit nothing (reads, refusals)."""
        ...

    def audit_page(self, before: int | None, limit: int) -> list[tuple[int, dict]]:
        """At most ``limit`` audit entries as they were appended, newest
        first, each with its number in append order (``seq``, counting up
        from 1): those numbered below ``before`` (all when None). The Rust
        host filters them (agent, operation, outcome, since, until) and
        pages on until a query's limit is met."""
        ...


#: The methods a :class:`Backend` must have (``lock_domain``,
#: ``unlock_domain`` and ``close`` are optional).
_BACKEND_METHODS = ("get_many", "scan", "commit", "append_audit", "audit_page")


class Store:
    """A store the Rust host opened. Domains opened in it share it; it is
    let go when it is closed and the last of them closed."""

    def __init__(self, native: Any) -> None:
        self._native = native

    def close(self) -> None:
        """Lets the store go (a :class:`Backend` it stands for stays open:
        its owner closes it)."""
        self._native.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *_: Any) -> None:
        self.close()


def _crossing(call: Callable[[], Any]) -> Any:
    """Runs ``call``, a call of the native module: text that is not
    Unicode refused as :class:`InputError`, what the module raised as the
    error of this package it is."""
    try:
        return call()
    except UnicodeEncodeError:
        # A lone surrogate: refused, never rewritten.
        raise InputError(_MESSAGES["not_unicode"]) from None
    except RuntimeError as error:
        raise _native_error(error) from None


def _open(spec: str | None, options: Mapping[str, Any] | None = None) -> Any:
    """The Rust host's store ``spec`` names, opened with ``options``: its
    options or path refused as :class:`InputError`, a store that cannot
    open as :class:`StoreError`."""
    return _crossing(lambda: _native.NativeStore.open(spec, _compact(options or {})))


def _ms(seconds: float | None) -> int | None:
    return None if seconds is None else round(seconds * 1000)


class MemoryStore(Store):
    """The Rust host's store in memory: nothing survives the process."""

    def __init__(self) -> None:
        super().__init__(_open(None))


class SqliteStore(Store):
    """A SQLite file, created if absent: the file format, locks and trail of
    every host. ``synchronous`` ``FULL`` or ``NORMAL`` and ``busy_timeout``
    (seconds another process's write lock is waited for) have the Rust
    host's defaults when None."""

    def __init__(
        self, path: str | os.PathLike[str], *, synchronous: str | None = None, busy_timeout: float | None = None
    ) -> None:
        self.path = os.fspath(path)
        options = {"synchronous": synchronous, "busyTimeout": _ms(busy_timeout)}
        super().__init__(_open(self.path, {"sqlite": {k: v for k, v in options.items() if v is not None}}))


POSTGRES_DEFAULTS: Mapping[str, float] = {
    "".join("_" + c.lower() if c.isupper() else c for c in name): ms / 1000
    for name, ms in json.loads(_native.POSTGRES_DEFAULTS).items()
}
"""Every host's PostgreSQL connection defaults, in seconds, by
:class:`PostgresStore`'s parameter names."""


class PostgresStore(Store):
    """A PostgreSQL database (``postgres://…``), its tables created if
    absent, in ``schema`` (the URL's search path when None); times in
    seconds, :data:`POSTGRES_DEFAULTS` when None."""

    def __init__(
        self,
        url: str,
        *,
        schema: str | None = None,
        connect_timeout: float | None = None,
        statement_timeout: float | None = None,
        idle_in_transaction_timeout: float | None = None,
        keepalives_idle: float | None = None,
        tcp_user_timeout: float | None = None,
    ) -> None:
        options = {
            "schema": schema,
            "connectTimeout": _ms(connect_timeout),
            "statementTimeout": _ms(statement_timeout),
            "idleInTransactionTimeout": _ms(idle_in_transaction_timeout),
            "keepalivesIdle": _ms(keepalives_idle),
            "tcpUserTimeout": _ms(tcp_user_timeout),
        }
        super().__init__(_open(url, {"postgres": {k: v for k, v in options.items() if v is not None}}))


def _store_of(store: Any, synchronous: str | None, busy_timeout: float | None) -> tuple[Store, bool]:
    """The store ``store`` names or is, and whether it was opened here."""
    if store is None or store == ":memory:":
        return MemoryStore(), True
    if isinstance(store, Store):
        return store, False
    if isinstance(store, str) and "://" in store:
        return Store(_open(store)), True
    if isinstance(store, (str, os.PathLike)):
        return SqliteStore(store, synchronous=synchronous, busy_timeout=busy_timeout), True
    if all(callable(getattr(store, name, None)) for name in _BACKEND_METHODS):
        return Store(_native.NativeStore.of_backend(store)), False
    raise TypeError("a store is a path, a postgres:// URL, a Store, or a Backend (None: in memory)")


# ---- the API ------------------------------------------------------------------


def _time(value: int | datetime.datetime) -> int:
    """A time as ms since the epoch: an int as it is, an aware datetime
    converted (a naive one is refused: its zone is unknown)."""
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            raise InputError("time: a datetime needs a time zone (tzinfo)")
        return (value - datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)) // datetime.timedelta(
            milliseconds=1
        )
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"time: ms since the epoch or an aware datetime, not {type(value).__name__}")
    return value


class Engram:
    """A store and the engine that serves its agents' domains.

    ``store``: the path of a SQLite file (created if absent, the format of
    every host), a ``postgres://`` or ``postgresql://`` URL, a :class:`Store`
    (:class:`SqliteStore`, :class:`PostgresStore`, :class:`MemoryStore`), a
    :class:`Backend` written in Python, or None / ``":memory:"`` for a fresh
    in-memory store; a URL of another scheme is refused. ``synchronous``
    and ``busy_timeout`` are for a store given by path. ``summarizer``,
    ``ranker`` and ``tokenizer`` (text → its number of tokens, for a plan's
    token budget) are the defaults of every domain opened here (every host's
    own when None: the tokenizer counts with ``o200k_base``); ``embedder``
    (an :class:`Embedder`) makes recall find memories by meaning as well as
    by words (none by default: recall by keywords alone); ``clock``
    answers ms since the epoch, read as each call begins.
    """

    def __init__(
        self,
        store: str | os.PathLike[str] | Store | Backend | None = None,
        *,
        synchronous: str | None = None,
        busy_timeout: float | None = None,
        summarizer: Summarizer | None = None,
        ranker: Ranker | None = None,
        tokenizer: Tokenizer | None = None,
        embedder: Embedder | None = None,
        limits: Limits | None = None,
        clock: Callable[[], int] | None = None,
    ) -> None:
        self.store, self._owned = _store_of(store, synchronous, busy_timeout)
        self._summarizer = summarizer
        self._ranker = ranker
        self._tokenizer = tokenizer
        self._embedder = embedder
        self._limits = limits or Limits()
        self._clock = clock
        self._closed = False

    def _native(self) -> Any:
        if self._closed:
            raise ClosedError(_MESSAGES["store_closed"])
        return self.store._native

    def open(
        self,
        agent: str,
        *,
        mode: str | None = None,
        tier_ceiling: str | None = None,
        summarizer: Summarizer | None = None,
        ranker: Ranker | None = None,
        tokenizer: Tokenizer | None = None,
        embedder: Embedder | None = None,
        input: str | None = None,
        expire_after_ms: int | None = None,
    ) -> Domain:
        """The memory domain of one agent: an engine instance of its own
        whose keys the host scopes to that agent (IO-W6). ``mode``
        ``"maintenance"`` takes the domain's maintenance lock until
        :meth:`Domain.close` (only MAINTENANCE may write then; ``"online"``
        when None); ``tier_ceiling`` is the highest privacy tier reads may
        return (``"private"`` when None); ``input`` names the input in
        input errors; ``expire_after_ms`` keeps what this domain writes for
        that many milliseconds only (from then on no read answers it, and
        :meth:`Domain.expire` removes it), None until removed otherwise."""
        native = self._native()
        if not isinstance(agent, str):
            raise InputError("an agent id must be a string")
        settings, dispatch, given = self._opening(
            {"agent": agent, "mode": mode, "tier_ceiling": tier_ceiling, "expire_after_ms": expire_after_ms},
            summarizer or self._summarizer,
            ranker or self._ranker,
            tokenizer or self._tokenizer,
            embedder or self._embedder,
        )
        domain = _crossing(
            lambda: _native.NativeDomain.open(native, settings, dispatch, given, self._clock is not None)
        )
        return Domain(domain, agent, domain.mode, input, self._clock)

    def _opening(
        self,
        settings: dict[str, Any],
        summarizer: Summarizer | None,
        ranker: Ranker | None,
        tokenizer: Tokenizer | None,
        embedder: Embedder | None,
    ) -> tuple[str, Any, list[str]]:
        """A domain's settings (JSON, with this process and the store's
        limits), the dispatcher of the algorithms given and their names."""
        given = [
            name
            for name, algorithm in (
                ("summarizer", summarizer),
                ("ranker", ranker),
                ("tokenizer", tokenizer),
                ("embedder", embedder),
            )
            if algorithm is not None
        ]
        settings = {**settings, "pid": os.getpid()}
        if embedder is not None:
            settings["embedder"] = {"name": embedder.name, "dimension": embedder.dimension}
        settings.update((name, value) for name, value in vars(self._limits).items() if value is not None)
        dispatch = _dispatcher(summarizer, ranker, tokenizer, embedder) if given else None
        return _compact(settings), dispatch, given

    def _maintain(self, name: str, args: str) -> list[dict]:
        """The store-wide maintenance call ``name`` with ``args``, each
        domain opened for maintenance with the store's algorithms."""
        native = self._native()
        settings, dispatch, given = self._opening(
            {},
            self._summarizer,
            self._ranker,
            self._tokenizer,
            self._embedder,
        )
        clock = self._clock
        now = None if clock is None else int(clock())
        return _value(_crossing(lambda: native.maintain(name, args, settings, dispatch, given, clock is not None, now)))

    def audit(
        self,
        agent: str | None = None,
        *,
        operation: str | None = None,
        outcome: str | None = None,
        since: int | None = None,
        until: int | None = None,
        limit: int | None = None,
    ) -> list[dict]:
        """The audit trail, oldest first, in the ``engram audit`` line form:
        the newest ``limit`` (100) entries that match."""
        query = _args(agent=agent, operation=operation, outcome=outcome, since=since, until=until, limit=limit)
        return _value(_crossing(lambda: self._native().audit(query)))

    def domains(self) -> list[str]:
        """The agents whose domains hold anything, in key order."""
        return json.loads(_crossing(lambda: self._native().domains()))

    def export(self, agents: Iterable[str] | None = None) -> list[dict]:
        """Domains (every one when ``agents`` is None) as export lines
        ``{"agent_id", "item"}``, each under its maintenance lock."""
        return self._maintain("export", _args(agents=None if agents is None else list(agents)))

    def import_(self, lines: Iterable[Mapping[str, Any]]) -> list[dict]:
        """Imports export lines, each run of lines of one agent into its
        domain under its maintenance lock: one ``{"agent_id", "items",
        "new"}`` per run."""
        return self._maintain("import", _args(lines=[dict(line) for line in lines]))

    def expire(self, agents: Iterable[str] | None = None) -> list[dict]:
        """Removes the records whose expiry has passed from domains (every
        one when ``agents`` is None), each under its maintenance lock: one
        ``{"agent_id", "expired"}`` per domain."""
        return self._maintain("expire", _args(agents=None if agents is None else list(agents)))

    def forget(self, agent: str) -> dict:
        """Forgets an agent: removes every key of its domain under its
        maintenance lock and audits it with the count."""
        with self.open(agent) as domain:
            return domain.forget()

    def unlock(self, agent: str) -> dict:
        """Breaks the maintenance lock of an agent, whoever holds it (a lock
        left behind by a process that died)."""
        return json.loads(_crossing(lambda: self._native().unlock(agent)))

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
    command line prints, parsed. Several threads may share it: its calls
    take turns."""

    def __init__(self, native: Any, agent: str, mode: str, input: str | None, clock: Callable[[], int] | None) -> None:
        self._native = native
        self._agent = agent
        self._mode = mode
        self._input = input
        self._clock = clock
        self._closed = False
        self._cycles: set[Cycle] = set()

    @property
    def agent(self) -> str:
        """The agent whose domain this is."""
        return self._agent

    @property
    def mode(self) -> str:
        """``online`` or ``maintenance``."""
        return self._mode

    def _now(self) -> int | None:
        """The time the caller's clock gives the next call, if it has one;
        refuses a call of a closed domain."""
        if self._closed:
            raise ClosedError(_MESSAGES["closed"])
        return None if self._clock is None else int(self._clock())

    def _answered(self, framed: str) -> None:
        """Takes note of a framed answer: once the instance stopped, the
        cycles begun in it are gone."""
        if framed[:1] == "S":
            for cycle in list(self._cycles):
                cycle._lost()

    def _call(self, name: str, args: str, input: str = "") -> str:
        """The call ``name`` of the call surface: its framed answer."""
        now = self._now()
        framed: str = _crossing(lambda: self._native.call(name, input, args, now))
        self._answered(framed)
        return framed

    def _value_of(self, name: str, args: str, input: str = "") -> Any:
        """The value the call ``name`` answers, made Python objects by the
        native module (no JSON text parsed here); or the error its answer
        says it is."""
        now = self._now()
        framed, value = _crossing(lambda: self._native.call_value(name, input, args, now))
        if framed is None:
            return value
        self._answered(framed)
        raise _failure(framed)

    def _io(self, call: str, request: Any, batch: bool | None, input: str | None) -> Any:
        many = isinstance(request, (list, tuple))
        if many:
            text = "\n".join(_text(r) for r in request)
        else:
            text, many = _text(request), bool(batch)
        # No input named: the call surface names it (``request``).
        if many:
            return _lines(self._call(f"{call}-batch", text, input or self._input or ""))
        return self._value_of(call, text, input or self._input or "")

    def write(
        self, request: WriteRequest | str | Sequence[Any], *, batch: bool | None = None, input: str | None = None
    ) -> Any:
        """Writes a request (a dict, or JSON text), or each of a list (a
        batch: nothing runs unless every request parses; with
        ``batch=True`` text holds one request a line). Answers
        ``{"ACCEPTED": {"stored_id": …}}`` or ``"REJECTED"``, or a list of
        them for a batch."""
        return self._io("write", request, batch, input)

    def read(
        self, request: ReadRequest | str | Sequence[Any], *, batch: bool | None = None, input: str | None = None
    ) -> Any:
        """Reads a request, or each of a list, as :meth:`write` takes them.
        Answers ``{"records": […]}`` or ``{"error": …}``, or a list."""
        return self._io("read", request, batch, input)

    def _named(self, call: str, args: Mapping[str, Any] | None, kwargs: dict[str, Any]) -> Any:
        # What is left out has the call surface's defaults (the CLI's).
        full: dict[str, Any] = {}
        full.update(args or {})
        full.update(kwargs)
        return self._value_of(call, _compact(full))

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
        when = None if time is None else _time(time)
        args = _args(message=message, response=response, session=session, request_id=request_id, time=when)
        answer = self._value_of("remember", args)
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
        args = _args(question=question, top_k=top_k, token_budget=token_budget, request_id=request_id)
        answer = self._value_of("recall", args)
        return Recalled(
            request_id=answer["request_id"],
            memories=[Memory(**memory) for memory in answer["memories"]],
            prompt=answer["prompt"],
            left_out=answer["left_out"],
        )

    def cycle(self, plan: Plan | str, *, session: str | None = None, request_id: str | None = None) -> Cycle:
        """Begins a cycle of ``plan``, to run stage by stage; raises
        :class:`RefusedError` with the ``{"plan_error": …}``. Use it in a
        ``with`` block: leaving it without a commit persists nothing."""
        args = _args(plan=plan, session=session, request_id=request_id)
        cycle = Cycle(self, self._value_of("cycle-begin", args)["cycle"])
        self._cycles.add(cycle)
        return cycle

    def run_cycle(
        self,
        plan: Plan | str,
        *,
        message: str | None = None,
        response: str | None = None,
        session: str | None = None,
        request_id: str | None = None,
    ) -> builtins.list[Any]:
        """Runs a turn as ``engram cycle`` does: every stage with steps, then
        the commit. Answers the lines the command line prints: one
        ``{"stage", "steps"}`` per stage, then ``{"committed": […]}``, or a
        ``{"plan_error"}`` or ``{"cycle_error"}`` last."""
        args = _args(plan=plan, message=message, response=response, session=session, request_id=request_id)
        return _lines(self._call("run-cycle", args))

    def audit(self, **query: Any) -> builtins.list[dict]:
        """This domain's audit trail, oldest first: ``operation``,
        ``outcome``, ``since``, ``until``, ``limit`` (100)."""
        return self._value_of("audit", _args(**query))

    def export(self) -> builtins.list[dict]:
        """Every item of a domain opened for maintenance, as export lines
        ``{"agent_id", "item"}``."""
        lines: builtins.list[dict] = self._value_of("export", _args(all=True))["lines"]
        return lines

    def import_(self, lines: Iterable[Any]) -> dict:
        """Imports items into a domain opened for maintenance: export lines
        of this agent, or bare items (dicts or JSON text). Answers
        ``{"agent_id", "items", "new"}``; items held exactly so already are
        passed over."""
        items = [json.loads(line) if isinstance(line, str) else line for line in lines]
        return self._value_of("import", _compact(items))

    def expire(self) -> dict:
        """Removes every record of a domain opened for maintenance whose
        expiry has passed, from every index, each with an EXPIRE entry in
        the audit trail: ``{"agent_id", "expired"}``."""
        return self._value_of("expire", "")

    def reembed(self, batch: int | None = None) -> dict:
        """Makes the vectors of every memory of a domain opened for
        maintenance again, from the stored summaries, with the domain's
        embedder: after a change of model, or for memories written before
        there was an embedder. ``batch`` memories a commit (256 unless
        given); a run stopped at any point goes on where it stopped.
        Answers ``{"agent_id", "embedded"}``."""
        return self._value_of("reembed", _args(batch=batch))

    def vector_model(self) -> dict | None:
        """The model that made the domain's vectors (``{"name",
        "dimension"}``), or None while it has none."""
        return self._value_of("vector-model", "")

    def forget(self) -> dict:
        """Forgets this agent (see :meth:`Engram.forget`), under this
        domain's lock in maintenance mode."""
        return self._value_of("forget", "")

    def close(self) -> None:
        """Drops the instance and releases the maintenance lock, once a call
        under way has answered (closed from that call's summarizer, ranker,
        tokenizer, embedder or store: as it answers). Later calls raise
        :class:`ClosedError`."""
        if self._closed:
            return
        for cycle in list(self._cycles):
            cycle.close()
        self._native.close()
        self._closed = True

    def __enter__(self) -> Domain:
        return self

    def __exit__(self, *_: Any) -> None:
        self.close()


class Cycle:
    """One execution cycle, stage by stage (:meth:`Domain.cycle`). Leaving
    its ``with`` block (or :meth:`close`) without a commit persists
    nothing."""

    def __init__(self, domain: Domain, id: int) -> None:
        self._domain = domain
        self._id: int | None = id

    def _lost(self) -> None:
        self._id = None
        self._domain._cycles.discard(self)

    def _call(self, name: str, **args: Any) -> str:
        if self._id is None:
            raise EngramError("the cycle is gone: it was closed, or the engine stopped")
        return self._domain._call(name, _args(cycle=self._id, **args))

    def _value_of(self, name: str, **args: Any) -> Any:
        if self._id is None:
            raise EngramError("the cycle is gone: it was closed, or the engine stopped")
        return self._domain._value_of(name, _args(cycle=self._id, **args))

    def run_stage(self, stage: str, *, message: str | None = None, response: str | None = None) -> Any:
        """Runs every step of ``stage`` (``ContextSelect``,
        ``PromptAssemble``, ``SummarizeMemory``, ``PersistMemory``) with the
        turn's inputs: ``{"stage", "steps"}``; raises :class:`RefusedError`
        with the ``{"cycle_error"}``."""
        return self._value_of("cycle-stage", stage=stage, message=message, response=response)

    def output(self, step: str) -> Any:
        """The output of a step that has run, parsed; None if none."""
        return self._value_of("cycle-output", step=step)

    def commit(self) -> Any:
        """Persists the cycle's memories in one commit: ``{"committed":
        [ids]}``; raises :class:`RefusedError` with the ``{"cycle_error"}``."""
        return self._value_of("cycle-commit")

    def close(self) -> None:
        """Drops the cycle; nothing not committed is persisted."""
        if self._id is None:
            return
        try:
            if not self._domain._closed:
                self._call("cycle-drop")
        except EngramError:
            pass  # a stopped instance dropped it already
        self._lost()

    def __enter__(self) -> Cycle:
        return self

    def __exit__(self, *_: Any) -> None:
        self.close()
