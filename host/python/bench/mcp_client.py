"""The round trip of `recall` and `remember` through `engram mcp` over
stdio, driven by the MCP Python SDK's client: ``N`` turns remembered, then
``N`` questions recalled (top_k 5), each call timed from the client's send
to its answer. Prints one JSON line ``{"remember_us", "recall_us"}``: the
medians. Run by ``cargo bench --bench mcp``, which times the same calls
through the Rust library in the same run:
``python bench/mcp_client.py ENGRAM N STORE``."""

import asyncio
import json
import statistics
import sys
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main(engram: str, n: int, store: str) -> None:
    params = StdioServerParameters(command=engram, args=["--store", store, "mcp", "--agent", "bench"])
    remember, recall = [], []
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        for i in range(n):
            arguments = {
                "message": f"Turn {i}: I booked the hotel number {i} in Lisbon for the trip.",
                "response": f"Noted, hotel {i} is booked.",
                "request_id": f"t{i}",
            }
            started = time.perf_counter()
            result = await session.call_tool("remember", arguments)
            remember.append(time.perf_counter() - started)
            assert not result.is_error, result
        for i in range(n):
            arguments = {"question": f"Which hotel number {i} did I book in Lisbon?", "top_k": 5}
            started = time.perf_counter()
            result = await session.call_tool("recall", arguments)
            recall.append(time.perf_counter() - started)
            assert not result.is_error, result
    print(json.dumps({"remember_us": statistics.median(remember) * 1e6, "recall_us": statistics.median(recall) * 1e6}))


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print("usage: python bench/mcp_client.py ENGRAM N STORE", file=sys.stderr)
        sys.exit(2)
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), sys.argv[3]))
