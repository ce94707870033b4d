"""An agent whose every turn runs an Engram execution cycle: ContextSelect
and PromptAssemble before the model is called, SummarizeMemory and
PersistMemory after it, then one commit. The model is a stub (it answers
from the context it was given), so the example runs offline; put an LLM
call in ``model`` and a summarizer that calls one in ``Engram(...)``.

With LangGraph installed (``pip install langgraph``) the turn is a graph of
three nodes, recall → model → remember; without it, the same three
functions run in a plain loop.

    python examples/agent.py [STORE]      # an in-memory store by default
"""

from __future__ import annotations

import json
import sys
import uuid
from typing import Any, TypedDict

from engram_memory import Cycle, Domain, Engram

#: The plan of a turn: the samples' plan (top_k 3), written out.
PLAN = {
    "metadata": {"top_k": 3},
    "steps": [
        {"name": "query", "stage": "ContextSelect", "kind": {"SummarizeMemory": {"of": "user_message"}}},
        {"name": "retrieve", "stage": "ContextSelect", "kind": "RetrieveMemory", "inputs": ["query"]},
        {"name": "select", "stage": "ContextSelect", "kind": "ContextSelect", "inputs": ["retrieve"]},
        {"name": "prompt", "stage": "PromptAssemble", "kind": "PromptAssemble", "inputs": ["select"]},
        {"name": "summary", "stage": "SummarizeMemory", "kind": {"SummarizeMemory": {"of": "turn"}}},
        {"name": "persist", "stage": "PersistMemory", "kind": "PersistMemory", "inputs": ["summary"]},
    ],
}


class Turn(TypedDict, total=False):
    """What flows through a turn's nodes."""

    request_id: str
    message: str
    context: list[dict[str, Any]]
    prompt: str
    response: str
    committed: list[str]


def model(prompt: str, context: list[dict[str, Any]], message: str) -> str:
    """A stub model: it answers with the memory it was given first."""
    if context:
        return f"From what you told me before: {context[0]['summary']}"
    return "I do not know yet; tell me more."


class Agent:
    """One agent's turns over its Engram domain."""

    def __init__(self, domain: Domain, session: str) -> None:
        self.domain = domain
        self.session = session
        self.cycles: dict[str, Cycle] = {}

    def recall(self, turn: Turn) -> Turn:
        """Before the model call: the cycle begins, ContextSelect retrieves
        and ranks memories, PromptAssemble builds the prompt (no store)."""
        cycle = self.domain.cycle(PLAN, session=self.session, request_id=turn["request_id"])
        self.cycles[turn["request_id"]] = cycle
        cycle.run_stage("ContextSelect", message=turn["message"])
        cycle.run_stage("PromptAssemble")
        prompt = cycle.output("prompt")["prompt"]
        return {"context": prompt["context"], "prompt": prompt["text"]}

    def call_model(self, turn: Turn) -> Turn:
        return {"response": model(turn["prompt"], turn["context"], turn["message"])}

    def remember(self, turn: Turn) -> Turn:
        """After the model call: the turn is summarized and persisted, and
        the cycle commits; a failure anywhere persists nothing."""
        with self.cycles.pop(turn["request_id"]) as cycle:
            cycle.run_stage("SummarizeMemory", message=turn["message"], response=turn["response"])
            cycle.run_stage("PersistMemory")
            return {"committed": cycle.commit()["committed"]}


def runner(agent: Agent) -> Any:
    """The turn as a LangGraph graph, or a plain function without it."""
    try:
        from langgraph.graph import END, START, StateGraph
    except ImportError:

        def plain(turn: Turn) -> Turn:
            for step in (agent.recall, agent.call_model, agent.remember):
                turn = {**turn, **step(turn)}
            return turn

        return plain
    graph = StateGraph(Turn)
    graph.add_node("recall", agent.recall)
    graph.add_node("model", agent.call_model)
    graph.add_node("remember", agent.remember)
    graph.add_edge(START, "recall")
    graph.add_edge("recall", "model")
    graph.add_edge("model", "remember")
    graph.add_edge("remember", END)
    return graph.compile().invoke


def main(store: str | None = None) -> None:
    with Engram(store) as mem:
        agent = Agent(mem.open("alice"), session="example")
        turn = runner(agent)
        messages = [
            "I booked the Hotel Avenida in Lisbon for our anniversary in May.",
            "My partner Sarah is vegetarian, so plan dinners with a veggie menu.",
            "Which hotel did I book in Lisbon?",
        ]
        for message in messages:
            # A turn's request id is its own: a retry of a turn reuses it
            # (and stores nothing twice), a new turn takes a new one.
            done = turn({"request_id": f"turn-{uuid.uuid4()}", "message": message})
            print(json.dumps({"user": message, "assistant": done["response"], "committed": done["committed"]}))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
