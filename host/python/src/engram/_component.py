"""The wasmtime-py glue: every rule of wasmtime-py's dynamic component values
lives here, and nowhere else.

wasmtime-py hands a component's values to Python by their shape, not their
name: a variant comes as ``Variant(tag, payload)`` only when two of its cases
have payloads of the same Python type (else as the bare payload), record
fields have kebab-case names (``getattr(entry, "request-id")``), ``list<u8>``
is ``bytes`` (lowered and lifted one byte at a time, through a Python object
each), enums are their case names, and every call of an export must be
followed by ``post_return``. A Python exception raised by an import traps the
instance, which cannot be entered again.

The engine loaded here is ``engram-py.wasm``: the unchanged engine composed
with the JSON layer of the JavaScript host (``host/js/wit/js.wit``), whose
export ``engram:js/calls`` takes and answers JSON text, and with an adapter
that supplies the engine's ``persistence`` over ``engram:py/store``
(``host/python/wit/py.wit``): the same calls with every byte string as a
string of one character per byte and every list of them packed into one, so
that a value crosses in one copy. The default summarizer and ranker are
``engram-algorithms.wasm``, in a store of their own.
"""

from __future__ import annotations

import json
import secrets
import struct
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import wasmtime
from wasmtime import component as wc

from ._store import packaged

VERSION = "@0.1.0"
CALLS = "engram:js/calls" + VERSION


class Unavailable(Exception):
    """A store call that could not be done: the engine is told
    ``storage-error.unavailable`` with this message."""


class Conflict(Exception):
    """A commit whose preconditions did not hold: ``storage-error.conflict``."""


class AlgorithmError(Exception):
    """A summarizer or ranker that failed: the engine is told the message as
    the ``err`` of its result (the cycle fails, B5-F1)."""


@dataclass(frozen=True)
class Candidate:
    """A memory the ranker may choose (``ranker.candidate``)."""

    id: str
    summary: str
    keywords: list[str]
    timestamp: int


@dataclass(frozen=True)
class Precondition:
    """A condition a commit checks first: ``absent`` (``value`` None) or
    ``holds`` exactly ``value``. Keys are the engine's, unscoped."""

    key: bytes
    value: bytes | None


@dataclass(frozen=True)
class Op:
    """One change of a commit: a put (``value`` set) or a delete."""

    key: bytes
    value: bytes | None


@dataclass(frozen=True)
class EngineEntry:
    """An audit entry the engine made (``audit.entry``), its outcome as
    ``(tag, payload)``; a retrieval's payload is a dict."""

    request_id: str
    operation: str
    source: dict | None
    record_type: str | None
    outcome: tuple[str, Any]


def _record(**fields: Any) -> wc.Record:
    record = wc.Record()
    for name, value in fields.items():
        setattr(record, name.replace("_", "-"), value)
    return record


def _entry(line: str) -> EngineEntry:
    """An audit entry as the adapter hands it over: JSON
    (``host/python/wit/py.wit``)."""
    raw = json.loads(line)
    ((tag, payload),) = raw["outcome"].items()
    return EngineEntry(
        request_id=raw["request_id"],
        operation=raw["operation"],
        source=raw.get("source"),
        record_type=raw.get("record_type"),
        outcome=(tag, payload),
    )


class Runtime:
    """The compiled components of a process: compiled once (and cached on
    disk by wasmtime's cache where it can), instantiated per domain."""

    _lock = threading.Lock()
    _shared: Runtime | None = None

    def __init__(self) -> None:
        config = wasmtime.Config()
        try:
            config.cache = True
        except wasmtime.WasmtimeError:
            pass  # no cache directory: compile every time
        self.engine = wasmtime.Engine(config)
        self._components: dict[str, wc.Component] = {}
        self._compiling = threading.Lock()
        self._defaults: tuple[Callable[..., Any], Callable[..., Any]] | None = None

    def component(self, name: str) -> wc.Component:
        """A component of the package, compiled at its first use."""
        with self._compiling:
            component = self._components.get(name)
            if component is None:
                component = self._components[name] = wc.Component(self.engine, packaged(name))
            return component

    def api(self, builtin: bool) -> wc.Component:
        """The engine with the JSON layer and the adapter: with the default
        summarizer and ranker inside (``engram-py-builtin.wasm``), or
        importing them (``engram-py.wasm``)."""
        return self.component("engram-py-builtin.wasm" if builtin else "engram-py.wasm")

    @classmethod
    def shared(cls) -> Runtime:
        with cls._lock:
            if cls._shared is None:
                cls._shared = Runtime()
            return cls._shared

    def default_algorithms(self) -> tuple[Callable[..., Any], Callable[..., Any]]:
        """The summarizer and ranker of every host, from one instance of
        ``engram-algorithms.wasm``."""
        if self._defaults is None:
            store = wasmtime.Store(self.engine)
            linker = wc.Linker(self.engine)
            with linker.root() as root:
                with root.add_instance("engram:memory/types" + VERSION):
                    pass
            instance = linker.instantiate(store, self.component("engram-algorithms.wasm"))
            summarize = _export(store, instance, "engram:memory/summarizer" + VERSION, "summarize")
            rank = _export(store, instance, "engram:memory/ranker" + VERSION, "rank")
            lock = threading.Lock()

            def summarizer(user_message: str, model_response: str | None) -> Any:
                with lock:
                    answer = summarize(store, user_message, model_response)
                    summarize.post_return(store)
                if isinstance(answer, str):
                    raise AlgorithmError(answer)
                return {"summary": answer.summary, "keywords": list(answer.keywords)}

            def ranker(query_keywords: list[str], candidates: list[Candidate], k: int) -> list[str]:
                raw = [
                    _record(id=c.id, summary=c.summary, keywords=list(c.keywords), timestamp=c.timestamp)
                    for c in candidates
                ]
                with lock:
                    answer = rank(store, list(query_keywords), raw, k)
                    rank.post_return(store)
                if isinstance(answer, str):
                    raise AlgorithmError(answer)
                return list(answer)

            self._defaults = (summarizer, ranker)
        return self._defaults


def _export(store: wasmtime.Store, instance: wc.Instance, interface: str, name: str) -> wc.Func:
    index = instance.get_export_index(store, interface)
    if index is None:
        raise RuntimeError(f"the component exports no {interface}")
    func_index = instance.get_export_index(store, name, index)
    func = None if func_index is None else instance.get_func(store, func_index)
    if func is None:
        raise RuntimeError(f"{interface} exports no {name}")
    return func


class Imports(Protocol):
    """What an engine instance imports, as plain Python: a domain's scope
    supplies these methods."""

    # persistence
    def get(self, key: bytes) -> bytes | None: ...
    def get_many(self, keys: list[bytes]) -> list[bytes | None]: ...
    def scan(self, start: bytes, end: bytes, limit: int, descending: bool) -> list[tuple[bytes, bytes]]: ...
    def commit(self, preconditions: list[Precondition], ops: list[Op], trail: list[EngineEntry]) -> None: ...
    # audit
    def append(self, entry: EngineEntry) -> None: ...

    # domain
    agent_id: str
    mode: str
    tier_ceiling: str

    def now(self) -> int: ...
    def read_limit_ceiling(self) -> int: ...
    def candidate_limit(self) -> int: ...
    def answer_byte_limit(self) -> int: ...
    # the JSON layer's host
    def max_record_bytes(self) -> int: ...
    def append_line(self, line: str) -> None: ...

    # algorithms: when False, the engine's own are composed in and these
    # are never called
    @property
    def algorithms(self) -> bool: ...

    def summarize(self, user_message: str, model_response: str | None) -> Any: ...
    def rank(self, query_keywords: list[str], candidates: list[Candidate], k: int) -> list[str]: ...


_LENGTH = struct.Struct(">I")
#: The length that stands for no value in a packed list of options.
_NONE = b"\xff\xff\xff\xff"


def _unpack(packed: bytes) -> list[bytes]:
    """A packed key list: each key as its length (4 bytes, big-endian),
    then its bytes."""
    items = []
    at, size = 0, len(packed)
    while at < size:
        (n,) = _LENGTH.unpack_from(packed, at)
        at += 4
        items.append(packed[at : at + n])
        at += n
    if at != size:
        raise ValueError("a packed list cut short")
    return items


def _unpack_tagged(packed: bytes) -> list[tuple[bytes, bytes | None]]:
    """Packed preconditions or ops: a byte 0 then a key (absent, delete),
    or 1 then a key and a value (holds, put)."""
    items: list[tuple[bytes, bytes | None]] = []
    at, size = 0, len(packed)
    while at < size:
        tag = packed[at]
        (n,) = _LENGTH.unpack_from(packed, at + 1)
        key = packed[at + 5 : at + 5 + n]
        at += 5 + n
        value = None
        if tag == 1:
            (m,) = _LENGTH.unpack_from(packed, at)
            value = packed[at + 4 : at + 4 + m]
            at += 4 + m
        items.append((key, value))
    if at != size:
        raise ValueError("a packed list cut short")
    return items


def _storage_error(error: Exception) -> str:
    """A storage error as the store's answer: ``C`` for ``conflict``, ``U``
    and the message for ``unavailable``."""
    if isinstance(error, Conflict):
        return "C"
    return "U" + (str(error) or type(error).__name__)


def _link(linker: wc.Linker, imports: Imports) -> None:
    with linker.root() as root:
        with root.add_instance("engram:memory/types" + VERSION):
            pass
        # The engine's `persistence` and `audit`, through the adapter of
        # `engram-py.wasm`: byte strings as latin-1 strings, lists of them
        # packed into one, answers as one string whose first character says
        # what it is (`host/python/wit/py.wit`).
        with root.add_instance("engram:py/store" + VERSION) as p:

            def get(_store: Any, key: str) -> str:
                try:
                    value = imports.get(key.encode("latin-1"))
                except (Unavailable, Conflict) as error:
                    return _storage_error(error)
                return "N" if value is None else "V" + value.decode("latin-1")

            def get_many(_store: Any, keys: str) -> str:
                try:
                    values = imports.get_many(_unpack(keys.encode("latin-1")))
                except (Unavailable, Conflict) as error:
                    return _storage_error(error)
                packed = b"".join(_NONE if v is None else _LENGTH.pack(len(v)) + v for v in values)
                return "V" + packed.decode("latin-1")

            def scan(_store: Any, start: str, end: str, limit: int, descending: bool) -> str:
                try:
                    pairs = imports.scan(start.encode("latin-1"), end.encode("latin-1"), limit, descending)
                except (Unavailable, Conflict) as error:
                    return _storage_error(error)
                pack = _LENGTH.pack
                return "V" + b"".join(pack(len(k)) + k + pack(len(v)) + v for k, v in pairs).decode("latin-1")

            def commit(_store: Any, preconditions: str, ops: str, trail: str) -> str:
                conditions = [Precondition(k, v) for k, v in _unpack_tagged(preconditions.encode("latin-1"))]
                changes = [Op(k, v) for k, v in _unpack_tagged(ops.encode("latin-1"))]
                entries = [_entry(line) for line in trail.split("\n")] if trail else []
                try:
                    imports.commit(conditions, changes, entries)
                except (Unavailable, Conflict) as error:
                    return _storage_error(error)
                return "V"

            p.add_func("get", get)
            p.add_func("get-many", get_many)
            p.add_func("scan", scan)
            p.add_func("commit", commit)
            p.add_func("append", lambda _store, entry: imports.append(_entry(entry)))
            p.add_func("append-line", lambda _store, line: imports.append_line(line))
            p.add_func(
                "settings",
                lambda _store: json.dumps(
                    {
                        "agent": imports.agent_id,
                        "mode": imports.mode,
                        "tier_ceiling": imports.tier_ceiling,
                        "read_limit_ceiling": imports.read_limit_ceiling(),
                        "candidate_limit": imports.candidate_limit(),
                        "answer_byte_limit": imports.answer_byte_limit(),
                        "max_record_bytes": imports.max_record_bytes(),
                    }
                ),
            )
            p.add_func("now", lambda _store: imports.now())
            # Bits for 16 record ids at a time.
            p.add_func("entropy", lambda _store: secrets.token_bytes(16 * 16).decode("latin-1"))
        if not imports.algorithms:
            return
        with root.add_instance("engram:memory/summarizer" + VERSION) as s:

            def summarize(_store: Any, user_message: str, model_response: str | None) -> Any:
                try:
                    summary = imports.summarize(user_message, model_response)
                except AlgorithmError as error:
                    return str(error)
                return _record(summary=summary["summary"], keywords=list(summary["keywords"]))

            s.add_func("summarize", summarize)
        with root.add_instance("engram:memory/ranker" + VERSION) as r:

            def rank(_store: Any, query_keywords: list[str], candidates: list[Any], k: int) -> Any:
                given = [
                    Candidate(id=c.id, summary=c.summary, keywords=list(c.keywords), timestamp=c.timestamp)
                    for c in candidates
                ]
                try:
                    return list(imports.rank(list(query_keywords), given, k))
                except AlgorithmError as error:
                    return str(error)

            r.add_func("rank", rank)


class Failure(Exception):
    """The JSON layer's ``failure``: ``kind`` is ``input`` or ``refused``."""

    def __init__(self, kind: str, text: str) -> None:
        super().__init__(text)
        self.kind = kind
        self.text = text


class Turn:
    """A ``turn`` resource of an instance."""

    def __init__(self, instance: Instance, handle: wc.ResourceAny) -> None:
        self.instance = instance
        self.handle = handle

    def run_stage(self, stage: str, message: str | None, response: str | None) -> str:
        return self.instance._answer("[method]turn.run-stage", self.handle, stage, message, response)

    def output(self, step: str) -> str | None:
        return self.instance._call("[method]turn.output", self.handle, step)

    def commit(self) -> str:
        return self.instance._answer("[method]turn.commit", self.handle)

    def drop(self) -> None:
        self.handle.drop(self.instance.store)


class Instance:
    """One instance of the engine with the JSON layer, over ``imports``.
    After a trap it must not be used again (the caller makes another)."""

    def __init__(self, runtime: Runtime, imports: Imports) -> None:
        self.store = wasmtime.Store(runtime.engine)
        linker = wc.Linker(runtime.engine)
        builtin = not imports.algorithms
        _link(linker, imports)
        self._instance = linker.instantiate(self.store, runtime.api(builtin))
        calls = self._instance.get_export_index(self.store, CALLS)
        if calls is None:
            raise RuntimeError(f"the engine exports no {CALLS}")
        self._calls = calls
        self._funcs: dict = {}

    def _func(self, name: str) -> wc.Func:
        func = self._funcs.get(name)
        if func is None:
            index = self._instance.get_export_index(self.store, name, self._calls)
            func = None if index is None else self._instance.get_func(self.store, index)
            if func is None:
                raise RuntimeError(f"{CALLS} exports no {name}")
            self._funcs[name] = func
        return func

    def _call(self, name: str, *args: Any) -> Any:
        func = self._func(name)
        answer = func(self.store, *args)
        func.post_return(self.store)
        return answer

    def _answer(self, name: str, *args: Any) -> Any:
        """A call answering ``result<T, failure>``: T, or raises
        :class:`Failure`. (``failure``'s cases are both strings, so it
        comes tagged; T never is a ``Variant``.)"""
        answer = self._call(name, *args)
        if isinstance(answer, wc.Variant):
            raise Failure(answer.tag, str(answer.payload))
        return answer

    def write(self, input: str, text: str, batch: bool) -> list[str]:
        return self._answer("write", input, text, batch)

    def read(self, input: str, text: str, batch: bool) -> list[str]:
        return self._answer("read", input, text, batch)

    def named(self, name: str, args: str) -> str:
        """``history``, ``as-of``, ``list``, ``entities``,
        ``relationships``, ``traverse``."""
        return self._answer(name, args)

    def export(self, start: bytes | None, limit: int) -> tuple[list[str], bytes | None]:
        page = self._answer("export", start, limit)
        return list(page.items), page.next

    def import_(self, items: Sequence[str]) -> int:
        return self._answer("import", list(items))

    def run_cycle(
        self, plan: str, session: str, request_id: str, message: str | None, response: str | None
    ) -> list[str]:
        return self._answer("run-cycle", plan, session, request_id, message, response)

    def begin(self, plan: str, session: str, request_id: str) -> Turn:
        return Turn(self, self._answer("[static]turn.begin", plan, session, request_id))
