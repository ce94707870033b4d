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

The engine loaded here is ``engram-host.wasm``: the unchanged engine composed
with the JSON layer of the JavaScript host (``host/components/json-layer/wit/js.wit``), whose
export ``engram:js/calls`` takes and answers JSON text, and with the adapter
(``host/components/adapter``), the host layer every host shares in Rust: the
domain's key prefix, limits, maintenance lock and audit entries. It asks
this package only for a raw store, ``engram:adapter/store``
(``host/components/adapter/wit/adapter.wit``): whole keys, every byte string as a string of
one character per byte and every list of them packed into one, so that a
value crosses in one copy; and it exports ``engram:adapter/domain``, what the
host does with a domain besides the engine's calls. The default summarizer,
ranker and tokenizer are ``engram-algorithms.wasm``, in a store of their own.
"""

from __future__ import annotations

import json
import secrets
import struct
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import wasmtime
from wasmtime import component as wc

from ._store import AuditRow, Backend, Change, Condition, packaged, row_of_line

VERSION = "@0.1.0"
CALLS = "engram:js/calls" + VERSION
DOMAIN = "engram:adapter/domain" + VERSION


class AlgorithmError(Exception):
    """A summarizer, ranker or tokenizer that failed: the engine is told the
    message as the ``err`` of its result (the cycle fails, B5-F1)."""


@dataclass(frozen=True)
class Candidate:
    """A memory the ranker may choose (``ranker.candidate``)."""

    id: str
    summary: str
    keywords: list[str]
    timestamp: int


Summarizer = Callable[[str, "str | None"], Any]
Ranker = Callable[[list[str], list[Candidate], int], Sequence[str]]
#: Counts the tokens of a text (a prompt's memory lines, for a plan's
#: token budget).
Tokenizer = Callable[[str], int]
#: The summarizer, ranker and tokenizer of every host.
Algorithms = tuple[Summarizer, Ranker, Tokenizer]


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


@dataclass(frozen=True)
class Binding:
    """What one domain's engine instance is bound to: the raw store, the
    domain's settings (``store.settings``, JSON, checked by the adapter),
    the clock and the algorithms (all None: the engine's own, composed in
    as ``engram-host-builtin.wasm``)."""

    backend: Backend
    settings: str
    clock: Callable[[], int]
    summarizer: Summarizer | None
    ranker: Ranker | None
    tokenizer: Tokenizer | None

    @property
    def algorithms(self) -> bool:
        """Whether the engine imports its summarizer, ranker and tokenizer
        from here."""
        return self.summarizer is not None or self.ranker is not None or self.tokenizer is not None


def _record(**fields: Any) -> wc.Record:
    record = wc.Record()
    for name, value in fields.items():
        setattr(record, name.replace("_", "-"), value)
    return record


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
        self._defaults: Algorithms | None = None

    def component(self, name: str) -> wc.Component:
        """A component of the package, compiled at its first use."""
        with self._compiling:
            component = self._components.get(name)
            if component is None:
                component = self._components[name] = wc.Component(self.engine, packaged(name))
            return component

    def api(self, builtin: bool) -> wc.Component:
        """The engine with the JSON layer and the adapter: with the default
        summarizer, ranker and tokenizer inside
        (``engram-host-builtin.wasm``), or importing them
        (``engram-host.wasm``)."""
        return self.component("engram-host-builtin.wasm" if builtin else "engram-host.wasm")

    @classmethod
    def shared(cls) -> Runtime:
        with cls._lock:
            if cls._shared is None:
                cls._shared = Runtime()
            return cls._shared

    def default_algorithms(self) -> Algorithms:
        """The summarizer, ranker and tokenizer of every host, from one
        instance of ``engram-algorithms.wasm``."""
        if self._defaults is None:
            store = wasmtime.Store(self.engine)
            linker = wc.Linker(self.engine)
            with linker.root() as root:
                with root.add_instance("engram:memory/types" + VERSION):
                    pass
            instance = linker.instantiate(store, self.component("engram-algorithms.wasm"))
            summarize = _export(store, instance, "engram:memory/summarizer" + VERSION, "summarize")
            rank = _export(store, instance, "engram:memory/ranker" + VERSION, "rank")
            count = _export(store, instance, "engram:memory/tokenizer" + VERSION, "count-tokens")
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

            def tokenizer(text: str) -> int:
                with lock:
                    answer = count(store, text)
                    count.post_return(store)
                if isinstance(answer, str):
                    raise AlgorithmError(answer)
                return int(answer)

            self._defaults = (summarizer, ranker, tokenizer)
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
    """Packed conditions or changes: a byte 0 then a key (absent, delete),
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


def _rows(text: str, clock: Callable[[], int]) -> list[AuditRow]:
    """Audit rows as the adapter hands them over: a JSON line each, stamped
    now when the line has no ``at``."""
    if not text:
        return []
    now = int(clock())
    return [row_of_line(json.loads(line), at=now) for line in text.split("\n")]


def _failed(error: Exception) -> str:
    """A store that could not do it: ``U`` and why, for the engine."""
    return "U" + (str(error) or type(error).__name__)


def _link(linker: wc.Linker, binding: Binding) -> None:
    backend = binding.backend
    with linker.root() as root:
        with root.add_instance("engram:memory/types" + VERSION):
            pass
        # The raw store the adapter of `engram-host.wasm` stores through: byte
        # strings as latin-1 strings, lists of them packed into one, answers
        # as one string whose first character says what it is
        # (`host/components/adapter/wit/adapter.wit`).
        with root.add_instance("engram:adapter/store" + VERSION) as p:

            def get_many(_store: Any, keys: str, budget: int) -> str:
                try:
                    values = backend.get_many(_unpack(keys.encode("latin-1")))
                except Exception as error:
                    return _failed(error)
                # Up to the value that reaches the budget.
                held = 0
                for n, value in enumerate(values, 1):
                    held += 0 if value is None else len(value)
                    if held >= budget:
                        del values[n:]
                        break
                packed = b"".join(_NONE if v is None else _LENGTH.pack(len(v)) + v for v in values)
                return "V" + packed.decode("latin-1")

            def scan(_store: Any, start: str, end: str, limit: int, descending: bool) -> str:
                try:
                    pairs = backend.scan(start.encode("latin-1"), end.encode("latin-1"), limit, descending)
                except Exception as error:
                    return _failed(error)
                pack = _LENGTH.pack
                return "V" + b"".join(pack(len(k)) + k + pack(len(v)) + v for k, v in pairs).decode("latin-1")

            def commit(_store: Any, conditions: str, changes: str, rows: str) -> str:
                try:
                    done = backend.commit(
                        [Condition(key=k, value=v) for k, v in _unpack_tagged(conditions.encode("latin-1"))],
                        [Change(key=k, value=v) for k, v in _unpack_tagged(changes.encode("latin-1"))],
                        _rows(rows, binding.clock),
                    )
                except Exception as error:
                    return _failed(error)
                return "V" if done else "C"

            p.add_func("get-many", get_many)
            p.add_func("scan", scan)
            p.add_func("commit", commit)
            p.add_func("settings", lambda _store: binding.settings)
            p.add_func("now", lambda _store: int(binding.clock()))
            # Bits for 16 record ids at a time.
            p.add_func("entropy", lambda _store: secrets.token_bytes(16 * 16).decode("latin-1"))
        summarizer, ranker, tokenizer = binding.summarizer, binding.ranker, binding.tokenizer
        if summarizer is None or ranker is None or tokenizer is None:
            return
        with root.add_instance("engram:memory/summarizer" + VERSION) as s:

            def summarize(_store: Any, user_message: str, model_response: str | None) -> Any:
                try:
                    summary = summarizer(user_message, model_response)
                except Exception as error:
                    return str(error) or type(error).__name__
                if isinstance(summary, Mapping):
                    text, keywords = summary.get("summary"), summary.get("keywords", [])
                else:
                    text, keywords = getattr(summary, "summary", None), getattr(summary, "keywords", [])
                if not isinstance(text, str) or isinstance(keywords, str):
                    return "the summarizer answered no {summary, keywords}"
                return _record(summary=text, keywords=[str(k) for k in keywords])

            s.add_func("summarize", summarize)
        with root.add_instance("engram:memory/ranker" + VERSION) as r:

            def rank(_store: Any, query_keywords: list[str], candidates: list[Any], k: int) -> Any:
                given = [
                    Candidate(id=c.id, summary=c.summary, keywords=list(c.keywords), timestamp=c.timestamp)
                    for c in candidates
                ]
                try:
                    ids = ranker(list(query_keywords), given, k)
                except Exception as error:
                    return str(error) or type(error).__name__
                if isinstance(ids, (str, bytes)) or not isinstance(ids, Sequence):
                    return "the ranker answered no list of ids"
                return [str(i) for i in ids]

            r.add_func("rank", rank)
        with root.add_instance("engram:memory/tokenizer" + VERSION) as t:

            def count_tokens(_store: Any, text: str) -> Any:
                try:
                    count = tokenizer(text)
                except Exception as error:
                    return str(error) or type(error).__name__
                if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count < 2**32:
                    return "the tokenizer answered no count of tokens"
                return count

            t.add_func("count-tokens", count_tokens)


def _lines(text: str) -> list[str]:
    """The answers of a flat ``write`` or ``read``, one a line."""
    return text.split("\n") if text else []


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
    """One instance of the engine with the JSON layer and the adapter, over
    ``binding``. After a trap it must not be used again (the caller makes
    another)."""

    def __init__(self, runtime: Runtime, binding: Binding) -> None:
        self._binding = binding
        self.store = wasmtime.Store(runtime.engine)
        linker = wc.Linker(runtime.engine)
        _link(linker, binding)
        self._instance = linker.instantiate(self.store, runtime.api(not binding.algorithms))
        self._funcs: dict = {}
        self._interfaces: dict = {}

    def _func(self, name: str, interface: str = CALLS) -> wc.Func:
        func = self._funcs.get((interface, name))
        if func is None:
            index = self._interfaces.get(interface)
            if index is None:
                index = self._interfaces[interface] = self._instance.get_export_index(self.store, interface)
                if index is None:
                    raise RuntimeError(f"the engine exports no {interface}")
            found = self._instance.get_export_index(self.store, name, index)
            func = None if found is None else self._instance.get_func(self.store, found)
            if func is None:
                raise RuntimeError(f"{interface} exports no {name}")
            self._funcs[(interface, name)] = func
        return func

    def domain(self, name: str, *args: Any) -> Any:
        """A call of ``engram:adapter/domain``: its answer, or raises
        :class:`Failure` (kind ``domain``) with the error of its result."""
        func = self._func(name, DOMAIN)
        answer = func(self.store, *args)
        func.post_return(self.store)
        if name not in ("prefix", "stopped-row", "take-trail"):
            self._append_trail()
        if isinstance(answer, wc.Variant):
            if answer.tag == "err":
                raise Failure("domain", str(answer.payload))
            return answer.payload
        if isinstance(answer, str) and name not in ("prefix", "stopped-row"):
            raise Failure("domain", answer)
        return answer

    def _call(self, name: str, *args: Any) -> Any:
        func = self._func(name)
        answer = func(self.store, *args)
        func.post_return(self.store)
        self._append_trail()
        return answer

    def _append_rows(self, rows: str) -> None:
        """Appends audit rows the host layer handed over."""
        if rows:
            self._binding.backend.append_audit(_rows(rows, self._binding.clock))

    def _append_trail(self) -> None:
        """Appends the audit rows of the call just made that no commit
        carried (``take-trail``), before its caller gets the answer: a store
        that cannot append them fails the call with its own words."""
        func = self._func("take-trail", DOMAIN)
        rows = func(self.store)
        func.post_return(self.store)
        self._append_rows(rows)

    def _answer(self, name: str, *args: Any) -> Any:
        """A call answering ``result<T, failure>``: T, or raises
        :class:`Failure`. (``failure``'s cases are both strings, so it
        comes tagged; T never is a ``Variant``.)"""
        answer = self._call(name, *args)
        if isinstance(answer, wc.Variant):
            raise Failure(answer.tag, str(answer.payload))
        return answer

    def _flat(self, request: str) -> str:
        """A call through ``calls.call``, the flat shape wasmtime-py calls
        fastest: its answer's text, or raises :class:`Failure`; the audit
        rows it hands over are appended first."""
        func = self._func("call")
        answer = func(self.store, request)
        func.post_return(self.store)
        answer, _, rows = answer.rpartition("\0")
        self._append_rows(rows)
        kind, text = answer[:1], answer[1:]
        if kind in ("V", "L"):  # L: a value with a long run of digits, which Python parses exactly anyway
            return text
        raise Failure("input" if kind == "I" else "refused", text)

    def write(self, input: str, text: str, batch: bool) -> list[str]:
        return _lines(self._flat(f"{'write-batch' if batch else 'write'}\0{input}\0{text}"))

    def read(self, input: str, text: str, batch: bool) -> list[str]:
        return _lines(self._flat(f"{'read-batch' if batch else 'read'}\0{input}\0{text}"))

    def named(self, name: str, args: str) -> str:
        """``history``, ``as-of``, ``list``, ``entities``,
        ``relationships``, ``traverse``."""
        return self._flat(f"{name}\0{args}")

    def export(self, start: bytes | None, limit: int) -> tuple[list[str], bytes | None]:
        page = self._answer("export", start, limit)
        return list(page.items), page.next

    def import_(self, items: Sequence[str]) -> int:
        return self._answer("import", list(items))

    def expire(self) -> int:
        return self._answer("expire")

    def run_cycle(
        self, plan: str, session: str, request_id: str, message: str | None, response: str | None
    ) -> list[str]:
        return self._answer("run-cycle", plan, session, request_id, message, response)

    def begin(self, plan: str, session: str, request_id: str) -> Turn:
        return Turn(self, self._answer("[static]turn.begin", plan, session, request_id))
