"""The contract's JSON model, in the seeds' names, as TypedDicts: what a
request and an answer look like. They are the shapes ``engram write`` and
``engram read`` take and print; see ``wit/types.wit`` for every rule.
Requests may carry more than these hints say (the engine validates them)."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any, Literal, TypedDict

RecordType = Literal["FACT", "EVENT", "STATE"]
PrivacyTier = Literal["public", "sensitive", "private"]


class Source(TypedDict):
    """Who writes (IO-W4): ``component`` COGNITION or MAINTENANCE,
    ``actor`` USER, AGENT or SYSTEM."""

    agent_id: str
    component: Literal["COGNITION", "MAINTENANCE"]
    actor: Literal["USER", "AGENT", "SYSTEM"]


class Record(TypedDict, total=False):
    """One FACT (``key`` and a ``payload`` of ``semantic`` memory), EVENT
    (``timestamp`` and an episodic payload) or STATE (``timestamp`` and
    ``{"subject", "properties"}``)."""

    record_type: RecordType
    key: str
    timestamp: int
    payload: dict[str, Any]


class WriteRequest(TypedDict):
    """A write: one record, its source and an idempotency key."""

    request_id: str
    source: Source
    record: Record


#: ``{"ACCEPTED": {"stored_id": …}}`` or ``"REJECTED"``.
WriteAnswer = dict[str, dict[str, str]] | Literal["REJECTED"]


class ReadRequest(TypedDict):
    """A read: its record type and one of five bounded selectors —
    ``{"ById": {"id"}}``, ``{"ByKey": {"key"}}``, ``{"Latest": {"limit"}}``,
    ``{"Range": {"start", "end", "limit"}}``, ``{"Query": {"text", "limit"}}``."""

    record_type: RecordType
    selector: dict[str, dict[str, Any]]
    request_id: str


class ReadAnswer(TypedDict, total=False):
    """``{"records": […]}``, in a fixed order, or ``{"error": …}``."""

    records: list[dict[str, Any]]
    error: Any


class Step(TypedDict, total=False):
    """A step of a plan: its ``name``, its ``stage`` (``ContextSelect``,
    ``PromptAssemble``, ``SummarizeMemory``, ``PersistMemory``), its
    ``kind`` (``{"ContextSelect": {"query": …, "top_k": …}}``,
    ``{"SummarizeMemory": {"of": "turn"}}``, ``"PersistMemory"``, …) and
    the names of the steps whose outputs it takes (``inputs``)."""

    name: str
    stage: str
    kind: Any
    inputs: list[str]


class PlanMetadata(TypedDict, total=False):
    """A plan's metadata: ``top_k``, how many memories RetrieveMemory keeps
    (required when the plan retrieves), and ``token_budget``, the most
    tokens the prompt's memory lines may take (``docs/cycles.md``)."""

    top_k: int
    token_budget: int


class Plan(TypedDict, total=False):
    """An execution plan (B-005): ``metadata`` and its ``steps``, in order."""

    metadata: PlanMetadata
    steps: list[Step]


#: Any answer: a line the command line prints, parsed.
Answer = Any


@dataclass(frozen=True)
class Memory:
    """A memory ``recall`` selected (B5-D2): its ``id``, its ``summary`` and
    its ``timestamp`` (ms since the epoch)."""

    id: str
    summary: str
    timestamp: int

    @property
    def time(self) -> datetime.datetime:
        """``timestamp`` as an aware UTC datetime."""
        return datetime.datetime.fromtimestamp(self.timestamp / 1000, tz=datetime.timezone.utc)


@dataclass(frozen=True)
class Remembered:
    """What ``remember`` answers: the turn's ``request_id`` (as given or
    made up: retry with it) and the ids of the memories it stored
    (``committed``: one, or none when the summarizer found nothing worth
    keeping; the same request id again answers the first time's)."""

    request_id: str
    committed: list[str]


@dataclass(frozen=True)
class Recalled:
    """What ``recall`` answers: the call's ``request_id``, the ``memories``
    selected for the question, best first, the assembled ``prompt`` (a
    "Relevant memories:" section, each memory's time in ISO 8601 UTC, then
    "User: " and the question) and how many memories the token budget
    ``left_out``."""

    request_id: str
    memories: list[Memory]
    prompt: str
    left_out: int
