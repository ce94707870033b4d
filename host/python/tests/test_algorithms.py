"""Summarizers and rankers written in Python: the cycle calls the ones a
user gives, and the engine still polices what they answer (B5)."""

from __future__ import annotations

import datetime

import pytest
from conftest import ASK, PLAN

from engram_memory import AlgorithmError, Candidate, Domain, Engram, default_tokenizer

TURNS = [
    ("I booked the Hotel Avenida in Lisbon for May.", "Lovely, the Avenida is central."),
    ("Sarah is vegetarian, so dinners need a veggie menu.", "Noted: vegetarian places only."),
    ("My flight to Lisbon leaves from Porto at 9.", "I will remind you the day before."),
]


def iso(ms: int) -> str:
    """A prompt line's time: ISO 8601 in UTC, to the second."""
    return datetime.datetime.fromtimestamp(ms // 1000, tz=datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def remember(domain: Domain) -> list[str]:
    """Ingests the turns; their ids."""
    ids = []
    for i, (message, response) in enumerate(TURNS):
        lines = domain.run_cycle(PLAN, message=message, response=response, session="s", request_id=f"t{i}")
        ids.extend(lines[-1]["committed"])
    return ids


def ask(domain: Domain, question: str, request_id: str = "ask") -> list:
    return domain.run_cycle(ASK, message=question, session="s", request_id=request_id)


def test_the_summarizer_and_ranker_a_user_gives_are_the_ones_the_cycle_calls() -> None:
    summarized = []
    ranked = []

    def summarizer(message: str, response: str | None) -> dict:
        summarized.append((message, response))
        words = [w.strip(".,:?").lower() for w in message.split() if len(w) > 3]
        return {"summary": " ".join(words), "keywords": words}

    def ranker(keywords: list[str], candidates: list[Candidate], k: int) -> list[str]:
        chosen = [c.id for c in sorted(candidates, key=lambda c: c.timestamp)][:k]
        ranked.append((keywords, [c.id for c in candidates], k, chosen))
        return chosen

    with Engram(summarizer=summarizer, ranker=ranker) as mem:
        alice = mem.open("alice")
        ids = remember(alice)
        assert summarized[0] == TURNS[0]
        lines = ask(alice, "Which hotel did I book in Lisbon?")
        [(keywords, candidates, k, chosen)] = ranked
        assert k == 2 and "lisbon" in keywords and chosen and set(candidates) <= set(ids)
        selected = lines[0]["steps"][-1]["output"]["selected"]
        # B5-D2: a selection holds exactly id, summary, timestamp, in the ranker's order
        assert all(set(item) == {"id", "summary", "timestamp"} for item in selected)
        assert [item["id"] for item in selected] == chosen


@pytest.mark.parametrize(
    "name,answer",
    [
        ("an id that was no candidate", lambda cands, k: ["not-a-candidate"]),
        ("the same id twice", lambda cands, k: [cands[0].id, cands[0].id]),
        ("more ids than top_k", lambda cands, k: [c.id for c in cands][: k + 1]),
    ],
)
# proves B5-D3 B5-F1: a ranker's bad answer fails the cycle, loudly, and nothing is selected
def test_b5_d3_the_engine_polices_a_custom_rankers_answer(name: str, answer) -> None:
    def ranker(keywords: list[str], candidates: list[Candidate], k: int) -> list[str]:
        assert len(candidates) > k, "the test needs more candidates than top_k"
        return answer(candidates, k)

    with Engram(ranker=ranker) as mem:
        alice = mem.open("alice")
        remember(alice)
        lines = ask(alice, "Lisbon hotel flight Porto vegetarian Sarah May", request_id="bad")
        assert "cycle_error" in lines[-1], f"{name}: {lines}"
        assert not any("selected" in str(line) for line in lines[:-1])
        failed = [e for e in mem.audit("alice") if e["request_id"].startswith("bad")]
        assert failed and failed[-1]["outcome"] == "FAILED", failed


# proves B5-F1: a summarizer that fails fails the cycle; nothing is persisted
def test_b5_f1_a_failing_summarizer_fails_the_cycle_and_persists_nothing() -> None:
    def summarizer(message: str, response: str | None) -> dict:
        raise AlgorithmError("the model is down")

    with Engram(summarizer=summarizer) as mem:
        alice = mem.open("alice")
        lines = alice.run_cycle(PLAN, message="m", response="r", session="s", request_id="t")
        assert "the model is down" in str(lines[-1]["cycle_error"])
        assert alice.read({"record_type": "EVENT", "selector": {"Limit": {"limit": 10}}, "request_id": "r"}) == {
            "records": []
        }
        # Any exception does the same, and one that answers the wrong shape.
        other = mem.open("bob", summarizer=lambda m, r: 42)
        assert "cycle_error" in other.run_cycle(PLAN, message="m", response="r", session="s", request_id="t")[-1]
    with Engram(ranker=lambda q, c, k: 1 / 0) as mem:
        crashing = mem.open("carol")
        remember(crashing)
        assert "division by zero" in ask(crashing, "Lisbon hotel")[-1]["cycle_error"]


#: ASK with a PromptAssemble step, keeping every memory, bounded by `budget`.
def bounded(budget: int | None) -> dict:
    prompt = {"name": "prompt", "stage": "PromptAssemble", "kind": "PromptAssemble", "inputs": ["select"]}
    metadata = {"top_k": len(TURNS)} | ({} if budget is None else {"token_budget": budget})
    return {"metadata": metadata, "steps": [*ASK["steps"], prompt]}


def prompt_of(lines: list) -> dict:
    return lines[1]["steps"][0]["output"]["prompt"]


# proves B5-F3 B5-P4: the tokenizer a user gives counts the prompt's memory lines, whole
# prefix by prefix, and the plan's token budget bounds them
def test_b5_f3_the_tokenizer_a_user_gives_bounds_the_prompt() -> None:
    asked: list[str] = []

    def tokenizer(text: str) -> int:
        asked.append(text)
        return len(text.encode())

    with Engram(tokenizer=tokenizer) as mem:
        alice = mem.open("alice")
        remember(alice)
        question = "Lisbon hotel flight Porto vegetarian Sarah May"
        everything = prompt_of(alice.run_cycle(bounded(None), message=question, session="s", request_id="all"))
        assert everything["left_out"] == 0 and not asked, "no budget: the tokenizer is never called"
        lines = [f"- [{iso(m['timestamp'])}] {m['summary']}" for m in everything["context"]]
        assert len(lines) == len(TURNS)
        two = "\n".join(lines[:2])
        cut = prompt_of(alice.run_cycle(bounded(len(two.encode())), message=question, session="s", request_id="cut"))
        assert cut["context"] == everything["context"][:2]
        assert cut["left_out"] == len(TURNS) - 2
        assert cut["text"] == f"Relevant memories:\n{two}\n\nUser: {question}"
        assert asked == [lines[0], two, "\n".join(lines[:3])]


# proves B5-F1: a tokenizer that fails fails the cycle
def test_b5_f1_a_failing_tokenizer_fails_the_cycle() -> None:
    def tokenizer(text: str) -> int:
        raise AlgorithmError("no tokens today")

    with Engram(tokenizer=tokenizer) as mem:
        alice = mem.open("alice")
        remember(alice)
        lines = alice.run_cycle(bounded(100), message="Lisbon hotel", session="s", request_id="ask")
        assert lines[-1] == {"cycle_error": 'TokenizerFailed("no tokens today")'}


def test_the_default_tokenizer_is_o200k_base_as_in_every_host() -> None:
    count = default_tokenizer()
    # The counts the Rust host's O200kTokenizer gives (host/algorithms).
    assert count("hello world") == 2
    assert count("- [1767225600000] Sarah is vegetarian") == 11
    assert count("") == 0
