"""One writer process of the concurrency test: writes ``N`` STATE records
and reads after each, printing ``request_id stored_id`` of every write that
was ACCEPTED, as soon as it was (an acknowledged write)."""

import sys

from engram_memory import Engram

path, agent, prefix, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
with Engram(path) as mem:
    domain = mem.open(agent)
    print("ready", flush=True)
    sys.stdin.readline()  # both processes start together
    for i in range(count):
        request_id = f"{prefix}-{i}"
        answer = domain.write(
            {
                "request_id": request_id,
                "source": {"agent_id": agent, "component": "COGNITION", "actor": "USER"},
                "record": {
                    "record_type": "STATE",
                    "timestamp": i,
                    "payload": {"subject": prefix, "properties": {"i": i}},
                },
            }
        )
        if answer != "REJECTED":
            print(request_id, answer["ACCEPTED"]["stored_id"], flush=True)
        domain.read({"record_type": "STATE", "selector": {"Latest": {"limit": 1}}, "request_id": f"{request_id}-r"})
