"""One agent's domain over a backend, as the engine's imports reach it (as
``host/store/src/scope.rs`` does it): every key the engine names gets the
domain's prefix, and loses it in answers; reads and commits are bounded;
every commit carries the maintenance lock's precondition; audit entries
become rows, in the commit's transaction or appended to the trail."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ._component import AlgorithmError, Candidate, Conflict, EngineEntry, Op, Precondition, Unavailable
from ._maintenance import lock_refusal
from ._store import AuditRow, Backend, Change, Condition, domain_prefix, lock_key, source_text

Summarizer = Callable[[str, str | None], Any]
Ranker = Callable[[list[str], list[Candidate], int], Sequence[str]]


@dataclass(frozen=True)
class Limits:
    """What the host lets the engine ask of the store, and the limits the
    engine is told: the defaults of every host."""

    #: The largest ``limit`` of a read.
    read_limit_ceiling: int = 1000
    #: Keyword-index entries one retrieval may read.
    candidate_limit: int = 256
    #: Bytes of the records of one answer, before the bound by memory.
    max_answer_bytes: int = 16 * 2**20
    #: The engine's memory, of which an answer may take a quarter.
    max_memory_bytes: int = 64 * 2**20
    #: The largest record a write may carry.
    max_record_bytes: int = 2**20
    #: Puts and deletes of one commit.
    max_batch_ops: int = 10000
    #: Bytes of keys and values of one commit.
    max_batch_bytes: int = 16 * 2**20


_RETRIEVAL = "{entries_read} keyword-index entries read, {candidates} candidates, {bound}"


@dataclass
class Scope:
    """The imports of one domain's engine instance."""

    agent_id: str
    backend: Backend
    mode: str
    tier_ceiling: str
    limits: Limits
    clock: Callable[[], int]
    #: None, both: the engine's own, composed in (``engram-py-builtin.wasm``).
    summarizer: Summarizer | None
    ranker: Ranker | None
    lock_value: bytes | None = None
    prefix: bytes = field(init=False)
    lock_key: bytes = field(init=False)

    @property
    def algorithms(self) -> bool:
        """Whether the engine imports its summarizer and ranker from here."""
        return self.summarizer is not None or self.ranker is not None

    def __post_init__(self) -> None:
        self.prefix = domain_prefix(self.agent_id)
        self.lock_key = lock_key(self.agent_id)

    # -- domain ------------------------------------------------------------

    def now(self) -> int:
        return int(self.clock())

    def read_limit_ceiling(self) -> int:
        return self.limits.read_limit_ceiling

    def candidate_limit(self) -> int:
        return self.limits.candidate_limit

    def answer_byte_limit(self) -> int:
        """At most a quarter of memory, at least 1."""
        return max(1, min(self.limits.max_answer_bytes, self.limits.max_memory_bytes // 4))

    def max_record_bytes(self) -> int:
        return self.limits.max_record_bytes

    def _scan_ceiling(self) -> int:
        return max(self.limits.read_limit_ceiling, self.limits.candidate_limit)

    # -- persistence -------------------------------------------------------

    def _store(self, f: Callable[[], Any]) -> Any:
        try:
            return f()
        except (Unavailable, Conflict):
            raise
        except Exception as error:  # a store that failed: the engine is told why
            raise Unavailable(str(error) or type(error).__name__) from error

    def get(self, key: bytes) -> bytes | None:
        return self._store(lambda: self.backend.get(self.prefix + key))

    def get_many(self, keys: list[bytes]) -> list[bytes | None]:
        """Stops after the value that reaches a quarter of the answer bound."""
        ceiling = self._scan_ceiling()
        if len(keys) > ceiling:
            raise Unavailable(f"a read of {len(keys)} keys is above the ceiling of {ceiling}")
        budget = self.answer_byte_limit() // 4
        values: list[bytes | None] = []
        size = 0
        for i in range(0, len(keys), 16):
            chunk = [self.prefix + key for key in keys[i : i + 16]]

            def read(chunk: list[bytes] = chunk) -> list[bytes | None]:
                return self.backend.get_many(chunk)

            for value in self._store(read):
                size += 0 if value is None else len(value)
                values.append(value)
                if size >= budget:
                    return values
        return values

    def scan(self, start: bytes, end: bytes, limit: int, descending: bool) -> list[tuple[bytes, bytes]]:
        ceiling = self._scan_ceiling()
        if limit > ceiling:
            raise Unavailable(f"a scan of {limit} entries is above the ceiling of {ceiling}")
        pairs = self._store(lambda: self.backend.scan(self.prefix + start, self.prefix + end, limit, descending))
        n = len(self.prefix)
        return [(key[n:], value) for key, value in pairs]

    def commit(self, preconditions: list[Precondition], ops: list[Op], trail: list[EngineEntry]) -> None:
        limits = self.limits
        if len(ops) > limits.max_batch_ops:
            raise Unavailable(
                f"a batch of {len(ops)} puts and deletes is above the host's limit of "
                f"{limits.max_batch_ops} (max_batch_ops)"
            )
        size = sum(len(op.key) + (0 if op.value is None else len(op.value)) for op in ops)
        if size > limits.max_batch_bytes:
            raise Unavailable(
                f"a batch of {size} bytes is above the host's limit of {limits.max_batch_bytes} (max_batch_bytes)"
            )
        conditions = [Condition(key=self.prefix + p.key, value=p.value) for p in preconditions]
        # Online writers keep out of a domain under maintenance; a
        # maintenance domain writes only while it still holds the lock.
        conditions.append(Condition(key=self.lock_key, value=self.lock_value))
        changes = [Change(key=self.prefix + op.key, value=op.value) for op in ops]
        rows = [self.audit_row(entry) for entry in trail]
        if not self._store(lambda: self.backend.commit(conditions, changes, rows)):
            why = lock_refusal(self.backend, self.lock_key, self.lock_value)
            if why is None:
                raise Conflict()
            raise Unavailable(why)

    # -- audit -------------------------------------------------------------

    def append(self, entry: EngineEntry) -> None:
        """``audit.append``: an entry of a call that commits nothing. A
        failure fails the call (the instance stops)."""
        self.backend.append_audit([self.audit_row(entry)])

    def append_line(self, line: str) -> None:
        """The JSON layer's own entry (a write it refused before the engine
        ran), in the ``engram audit`` line form without ``at`` and
        ``agent_id``."""
        entry = json.loads(line)
        source = entry.get("source")
        self.backend.append_audit(
            [
                AuditRow(
                    at=self.now(),
                    agent_id=self.agent_id,
                    request_id=str(entry["request_id"]),
                    operation=str(entry["operation"]),
                    source=None if source is None else source_text(source),
                    record_type=entry.get("record_type"),
                    outcome=str(entry["outcome"]),
                    stored_id=entry.get("stored_id"),
                    count=entry.get("count"),
                    reason=entry.get("reason"),
                )
            ]
        )

    def audit_row(self, entry: EngineEntry) -> AuditRow:
        """The row of an entry the engine made, stamped with the clock's
        time and this domain's agent. A retrieval is a read: what it read is
        told in words."""
        tag, value = entry.outcome
        stored_id: str | None = None
        count: int | None = None
        reason: str | None = None
        if tag in ("accepted", "replayed"):
            outcome, stored_id = tag.upper(), value
        elif tag in ("rejected", "failed"):
            outcome, reason = tag.upper(), value
        elif tag in ("returned", "applied"):
            outcome, count = tag.upper(), value
        elif tag == "retrieved":
            outcome, count = "RETURNED", value["returned"]
            reason = _RETRIEVAL.format(
                entries_read=value["entries_read"],
                candidates=value["candidates"],
                bound="the candidate limit was reached"
                if value["bound_reached"]
                else "every entry of the query's keywords read",
            )
        else:
            raise ValueError(f"an audit outcome this host does not know: {tag}")
        return AuditRow(
            at=self.now(),
            agent_id=self.agent_id,
            request_id=entry.request_id,
            operation=entry.operation.upper(),
            source=None if entry.source is None else source_text(entry.source),
            record_type=entry.record_type,
            outcome=outcome,
            stored_id=stored_id,
            count=count,
            reason=reason,
        )

    # -- algorithms ----------------------------------------------------------

    def summarize(self, user_message: str, model_response: str | None) -> Mapping[str, Any]:
        assert self.summarizer is not None  # linked only when there are algorithms
        try:
            summary = self.summarizer(user_message, model_response)
        except AlgorithmError:
            raise
        except Exception as error:
            raise AlgorithmError(str(error) or type(error).__name__) from error
        if isinstance(summary, Mapping):
            text, keywords = summary.get("summary"), summary.get("keywords", [])
        else:
            text, keywords = getattr(summary, "summary", None), getattr(summary, "keywords", [])
        if not isinstance(text, str) or isinstance(keywords, str):
            raise AlgorithmError("the summarizer answered no {summary, keywords}")
        return {"summary": text, "keywords": [str(k) for k in keywords]}

    def rank(self, query_keywords: list[str], candidates: list[Candidate], k: int) -> list[str]:
        assert self.ranker is not None
        try:
            ids = self.ranker(query_keywords, candidates, k)
        except AlgorithmError:
            raise
        except Exception as error:
            raise AlgorithmError(str(error) or type(error).__name__) from error
        if isinstance(ids, (str, bytes)) or not isinstance(ids, Sequence):
            raise AlgorithmError("the ranker answered no list of ids")
        return [str(i) for i in ids]
