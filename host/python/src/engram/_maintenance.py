"""Offline maintenance of a domain (IO-W7): the lock that keeps online
writers out, forgetting an agent, and breaking a stale lock. The lock is one
pair outside every domain's range, so it works alike on every backend and
across hosts sharing one store (``host/store/src/maintenance.rs``)."""

from __future__ import annotations

import json
import os
import secrets

from ._store import AuditRow, Backend, Change, Condition, domain_prefix, lock_key, successor

#: How many pairs one commit of a forget removes.
FORGET_PAGE = 1000


class LockError(RuntimeError):
    """The domain's maintenance lock is held by someone else."""


class LockGuard:
    """A held maintenance lock."""

    def __init__(self, backend: Backend, key: bytes, value: bytes) -> None:
        self.backend = backend
        self.key = key
        self.value = value
        self.released = False

    @classmethod
    def acquire(cls, backend: Backend, agent_id: str, now: int) -> LockGuard:
        """Takes the lock of ``agent_id``, or raises saying who holds it."""
        key = lock_key(agent_id)
        value = json.dumps(
            {"pid": os.getpid(), "since": now, "token": secrets.token_hex(16)}, separators=(",", ":")
        ).encode()
        if backend.commit([Condition(key=key, value=None)], [Change(key=key, value=value)], []):
            return cls(backend, key, value)
        try:
            holder = json.loads(backend.get(key) or b"")
            who = "a process under WASI" if holder.get("pid") == 0 else f"process {holder['pid']}"
            since = holder["since"]
        except (ValueError, KeyError, TypeError, AttributeError):
            raise LockError(f"the domain of {json.dumps(agent_id)} is locked for maintenance") from None
        raise LockError(
            f"the domain of {json.dumps(agent_id)} is locked for maintenance by {who} since {since} "
            "(`unlock` breaks a stale lock)"
        )

    def held(self) -> Condition:
        """The condition every commit made under this lock carries."""
        return Condition(key=self.key, value=self.value)

    def release(self) -> None:
        """Lets the lock go; a lock that was broken meanwhile stays as it is."""
        if self.released:
            return
        self.released = True
        try:
            self.backend.commit([self.held()], [Change(key=self.key, value=None)], [])
        except Exception:
            pass  # a lock that cannot be released now stays for `unlock`


def lock_refusal(backend: Backend, key: bytes, ours: bytes | None) -> str | None:
    """Why a commit did not go through, when the lock is the reason."""
    try:
        held = backend.get(key)
    except Exception:
        return None
    if ours is None:
        return "the domain is locked for maintenance (IO-W7)" if held is not None else None
    return None if held == ours else "the maintenance lock of the domain was broken"


def break_lock(backend: Backend, agent_id: str) -> bool:
    """Breaks the maintenance lock of ``agent_id``, whoever holds it; True
    when there was one. For a lock left behind by a process that died."""
    key = lock_key(agent_id)
    held = backend.get(key)
    if held is None:
        return False
    if not backend.commit([Condition(key=key, value=held)], [Change(key=key, value=None)], []):
        raise LockError("the lock changed while it was being broken; try again")
    return True


def forget(backend: Backend, agent_id: str, now: int, lock: LockGuard | None = None) -> int:
    """Removes every key of the domain under its maintenance lock (``lock``,
    or one taken for the purpose), then records in the audit trail that it
    happened and how many entries went. A forget cut short can be run again."""
    guard = lock if lock is not None else LockGuard.acquire(backend, agent_id, now)
    try:
        prefix = domain_prefix(agent_id)
        end = successor(prefix)
        removed = 0
        while True:
            page = backend.scan(prefix, end, FORGET_PAGE, False)
            if not page:
                break
            if not backend.commit([guard.held()], [Change(key=k, value=None) for k, _ in page], []):
                raise LockError(f"the maintenance lock of {json.dumps(agent_id)} was broken during the forget")
            removed += len(page)
        backend.append_audit(
            [
                AuditRow(
                    at=now,
                    agent_id=agent_id,
                    request_id="maintenance-forget",
                    operation="FORGET",
                    source=json.dumps(
                        {"agent_id": agent_id, "component": "MAINTENANCE", "actor": "SYSTEM"},
                        separators=(",", ":"),
                        ensure_ascii=False,
                    ),
                    record_type=None,
                    outcome="APPLIED",
                    stored_id=None,
                    count=min(removed, 0xFFFFFFFF),
                    reason=None,
                )
            ]
        )
        return removed
    finally:
        if lock is None:
            guard.release()
