"""The native module: the Rust host (``host/python/rust/lib.rs``)."""

from collections.abc import Callable
from typing import Any

class NativeStore:
    @staticmethod
    def open(spec: str | None = None, options: str | None = None) -> NativeStore: ...
    @staticmethod
    def of_backend(backend: Any) -> NativeStore: ...
    def audit(self, query: str) -> str: ...
    def domains(self) -> str: ...
    def unlock(self, agent: str) -> str: ...
    def maintain(
        self,
        name: str,
        args: str,
        settings: str,
        algorithms: Callable[[str, str], str] | None = None,
        given: list[str] = ...,
        clock: bool = False,
        time: int | None = None,
    ) -> str: ...
    def close(self) -> None: ...

class NativeDomain:
    mode: str
    restarts: int
    @staticmethod
    def open(
        store: NativeStore,
        settings: str,
        algorithms: Callable[[str, str], str] | None = None,
        given: list[str] = ...,
        clock: bool = False,
    ) -> NativeDomain: ...
    def call(self, name: str, input: str, args: str, time: int | None = None) -> str: ...
    def call_value(self, name: str, input: str, args: str, time: int | None = None) -> tuple[str | None, Any]: ...
    def close(self) -> None: ...

def builtin(kind: str, args: str) -> str: ...
def main(argv: list[str]) -> int: ...

POSTGRES_DEFAULTS: str
MESSAGES: str
