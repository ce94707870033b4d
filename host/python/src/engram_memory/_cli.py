"""The ``engram`` command: the command line of the native ``engram`` binary
(one Rust ``main``), run in this process by the native module."""

from __future__ import annotations

import signal
import sys

from . import _native


def main() -> None:
    """Runs ``engram`` with this process's arguments and exits with its code."""
    # Ctrl-C ends the command as it ends the binary (the Rust command line
    # holds the process until it returns). A closed pipe stays ignored, as
    # Rust's runtime has it: the command says what it could not write.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    sys.exit(_native.main(["engram", *sys.argv[1:]]))


if __name__ == "__main__":
    main()
