"""One writer process of the transaction-time test: writes ``N`` versions
of the FACT ``user.mood`` with a clock that always answers ``NOW``, and
prints the stored id of each."""

import sys

from engram_memory import Engram

store, agent, prefix, count, now = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
with Engram(store, clock=lambda: now) as mem:
    domain = mem.open(agent)
    print("ready", flush=True)
    sys.stdin.readline()  # both processes start together
    for i in range(count):
        answer = domain.write(
            {
                "request_id": f"{prefix}-{i}",
                "source": {"agent_id": agent, "component": "COGNITION", "actor": "USER"},
                "record": {
                    "record_type": "FACT",
                    "key": "user.mood",
                    "payload": {
                        "semantic": {
                            "content": f"{prefix} {i}",
                            "context": "mood",
                            "valid_at": 1000,
                            "strength": 1.0,
                            "last_accessed": 1000,
                            "access_count": 0,
                            "confidence": 0.5,
                            "privacy_tier": "public",
                        }
                    },
                },
            }
        )
        print(answer["ACCEPTED"]["stored_id"], flush=True)
