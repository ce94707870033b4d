"""What the Python package costs at start, step by step: the time of each
step of the common path (import, open, remember, recall), then of the first
recall with a token budget (the only call that loads the tokenizer's table),
with the process's resident memory and how much of the native module is
resident after each. ``python bench/start.py [FOLDER]`` (a fresh store in
FOLDER, a temporary folder by default); run it twice to see the engine
loaded from the compiled cache instead of compiled."""

import os
import sys
import tempfile
import time


def rss_mb() -> float:
    """The process's resident memory."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def resident_mb(part: str) -> float:
    """How much of the files mapped whose path holds ``part`` is resident."""
    total, inside = 0, False
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            head = line.split()
            if head and "-" in head[0] and len(head) >= 5:
                inside = part in line
            elif inside and line.startswith("Rss:"):
                total += int(head[1])
    return total / 1024


def step(name: str, since: float) -> None:
    ms = 1000 * (time.perf_counter() - since)
    print(f"{name:<44} {ms:8.1f} ms  RSS {rss_mb():6.1f} MB  module resident {resident_mb('_native'):5.1f} MB")


def main() -> None:
    folder = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp()
    since = time.perf_counter()
    import engram_memory

    step("import engram_memory", since)
    since = time.perf_counter()
    alice = engram_memory.Engram(os.path.join(folder, "engram.db")).open("alice")
    step("Engram(path).open('alice')", since)
    since = time.perf_counter()
    alice.remember("I booked the Hotel Avenida in Lisbon.", "Lovely!")
    step("remember", since)
    since = time.perf_counter()
    alice.recall("Which hotel did I book?")
    step("recall", since)
    since = time.perf_counter()
    alice.recall("Which hotel did I book?", token_budget=100)
    step("recall(token_budget=100): the first count", since)
    since = time.perf_counter()
    alice.recall("Which hotel did I book?", token_budget=100)
    step("recall(token_budget=100) again", since)
    module = engram_memory._native.__file__ or ""
    print(f"native module {os.path.basename(module)}: {os.path.getsize(module) / 2**20:.1f} MB")


if __name__ == "__main__":
    main()
