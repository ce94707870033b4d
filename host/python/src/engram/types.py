"""The contract's JSON model, in the seeds' names, as TypedDicts: what a
request and an answer look like. They are the shapes ``engram write`` and
``engram read`` take and print; see ``wit/types.wit`` for every rule.
Requests may carry more than these hints say (the engine validates them)."""

from __future__ import annotations

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
