"""Puts the engine's components into the package when it is built.

The components are built by cargo from this repository (``engram-host-components``'s
build script writes ``engram-host.wasm``, ``engram-host-builtin.wasm`` and
``engram-algorithms.wasm`` to
``js/`` in the workspace's target folder, and the SQLite schema every host
runs, ``sqlite-schema.sql``, beside them); ``ENGRAM_WASM_DIR`` names a
folder that already holds them instead. The PostgreSQL schema every host
runs, ``postgres-schema.sql``, comes from that folder when it holds it, else
from the repository (``host/store/src``).
"""

import os
import shutil
import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

#: What the Rust build puts beside them too: the SQLite schema every host runs.
COMPONENTS = ("engram-host.wasm", "engram-host-builtin.wasm", "engram-algorithms.wasm", "sqlite-schema.sql")
#: The PostgreSQL schema, which the Rust store embeds from its source.
SCHEMAS = ("postgres-schema.sql",)
REPOSITORY = Path(__file__).resolve().parent.parent.parent


def components() -> Path:
    """The folder that holds the components, built first if need be."""
    given = os.environ.get("ENGRAM_WASM_DIR")
    if given:
        return Path(given)
    if not (REPOSITORY / "Cargo.toml").is_file():
        raise SystemExit(
            "engram-memory: the engine's components are built from the Engram repository; "
            "set ENGRAM_WASM_DIR to a folder holding " + ", ".join(COMPONENTS + SCHEMAS)
        )
    # Builds them and prints the folder cargo built them in.
    folder = subprocess.run(
        ["cargo", "run", "-q", "--locked", "-p", "engram-host-components"],
        cwd=REPOSITORY,
        check=True,
        capture_output=True,
        text=True,
    )
    return Path(folder.stdout.strip())


class BuildWithComponents(build_py):
    def run(self) -> None:
        super().run()
        source = components()
        target = Path(self.build_lib) / "engram" / "wasm"
        target.mkdir(parents=True, exist_ok=True)
        for name in COMPONENTS:
            if not (source / name).is_file():
                raise SystemExit(f"engram-memory: {source / name} is missing")
            shutil.copyfile(source / name, target / name)
        for name in SCHEMAS:
            found = source / name
            if not found.is_file():
                found = REPOSITORY / "host" / "store" / "src" / name
            if not found.is_file():
                raise SystemExit(f"engram-memory: {name} is in neither {source} nor {found.parent}")
            shutil.copyfile(found, target / name)


setup(cmdclass={"build_py": BuildWithComponents})
