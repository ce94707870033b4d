"""The Python host's per-call cost over SQLite: writes ``N`` FACTs (JSON
text, as a caller hands them) into a fresh store at ``PATH``, then reads
each back by its id, and prints one JSON line ``{"write_us", "read_us"}``:
the mean µs per call. Run by the Rust bench ``cargo bench --bench python``,
which times the Rust host on the same requests in the same run:
``python bench/io.py N PATH [FULL|NORMAL]``."""

import json
import sys
import time

from engram_memory import Engram


def named(request_id: str, key: str, i: int) -> str:
    """A write request under ``request_id`` of the FACT ``user.<key>``, as the Rust bench makes it."""
    return (
        f'{{"request_id":"{request_id}","source":{{"agent_id":"bench","component":"COGNITION","actor":"USER"}},'
        f'"record":{{"record_type":"FACT","key":"user.{key}","payload":{{"semantic":{{"content":"Fact number {i} '
        f'about the user","context":"bench","valid_at":1767225600000,"strength":1.0,"last_accessed":1767225600000,'
        f'"access_count":0,"confidence":0.9,"privacy_tier":"public"}}}}}}}}'
    )


def request(i: int) -> str:
    """The i-th write request."""
    return named(f"w-{i}", f"k{i}", i)


def main() -> None:
    if len(sys.argv) < 3 or not sys.argv[1].isdigit() or int(sys.argv[1]) < 1:
        print("usage: python bench/io.py N PATH [FULL|NORMAL]", file=sys.stderr)
        sys.exit(2)
    n, path = int(sys.argv[1]), sys.argv[2]
    synchronous = sys.argv[3] if len(sys.argv) > 3 else "FULL"
    with Engram(path, synchronous=synchronous) as mem:
        domain = mem.open("bench")
        # Writes, and reads of them, untimed first, as the Rust bench does (`warm_up`).
        for i in range(max(n // 10, 100)):
            stored = domain.write(named(f"warm-{i}", f"warm{i}", i))["ACCEPTED"]["stored_id"]
            domain.read(f'{{"record_type":"FACT","selector":{{"ById":{{"id":"{stored}"}}}},"request_id":"warm-r-{i}"}}')
        ids = []
        started = time.perf_counter_ns()
        for i in range(n):
            ids.append(domain.write(request(i))["ACCEPTED"]["stored_id"])
        write = time.perf_counter_ns() - started
        started = time.perf_counter_ns()
        for i, stored in enumerate(ids):
            answer = domain.read(
                f'{{"record_type":"FACT","selector":{{"ById":{{"id":"{stored}"}}}},"request_id":"r-{i}"}}'
            )
            if len(answer.get("records", [])) != 1:
                raise SystemExit(f"read {i}: {answer}")
        read = time.perf_counter_ns() - started
    print(json.dumps({"write_us": write / 1e3 / n, "read_us": read / 1e3 / n}))


if __name__ == "__main__":
    main()
