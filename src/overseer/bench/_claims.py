"""Episode claims in the result store's file, so two benches on one store share the work.

Before an episode runs, the process claims its key in a `claims` table of the same SQLite file
(one IMMEDIATE transaction: skip it when it is stored without error or claimed by a live
process). A claim names its owner (host and pid) and is kept fresh by a heartbeat; one whose
owner is gone (a dead pid on this host, or no heartbeat for `ttl_s`) is taken over, so a killed
bench's episodes are not lost. A finished episode's claim is dropped once its result is stored.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import sqlite3
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from overseer.bench._store import ResultKey, StoreError

T = TypeVar("T")
CLAIM_TTL_S = 120.0
HEARTBEAT_S = 15.0

_DDL = """
CREATE TABLE IF NOT EXISTS claims (
    config TEXT NOT NULL, model TEXT NOT NULL, suite TEXT NOT NULL, task_id TEXT NOT NULL,
    seed INTEGER NOT NULL, host TEXT NOT NULL, pid INTEGER NOT NULL, heartbeat REAL NOT NULL,
    PRIMARY KEY (config, model, suite, task_id, seed)
)
"""
_KEY = "config=? AND model=? AND suite=? AND task_id=? AND seed=?"


def _key(k: ResultKey) -> tuple[str, str, str, str, int]:
    return (k.config, k.model, k.suite, k.task_id, k.seed)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


class Claims:
    """This process's claims on the episodes of the store at `path` (its own connection).
    A store SQLite cannot write (a full disk, a read-only file) is one StoreError naming it;
    the results stored before are untouched."""

    def __init__(self, path: Path, *, ttl_s: float = CLAIM_TTL_S) -> None:
        self.path = path
        self.ttl_s = ttl_s
        self.host, self.pid = socket.gethostname(), os.getpid()
        self._lock = threading.Lock()
        with self._guard("open its claims table"):
            self._db = sqlite3.connect(
                path, timeout=30, isolation_level=None, check_same_thread=False
            )
            self._db.execute(_DDL)

    @contextmanager
    def _guard(self, action: str) -> Iterator[None]:
        """SQLite's errors as one StoreError naming the store and what failed."""
        try:
            yield
        except sqlite3.DatabaseError as exc:
            raise StoreError(
                f"result store {self.path}: cannot {action} ({exc}); the results stored so "
                "far are kept, rerun to resume"
            ) from None

    def _owner_alive(self, host: str, pid: int, beat: float) -> bool:
        if (host, pid) == (self.host, self.pid):
            return True
        if time.time() - beat > self.ttl_s:
            return False
        return host != self.host or _pid_alive(pid)

    def take(self, key: ResultKey) -> bool:
        """Claim `key`; False when it is stored without error or a live process holds it."""
        k = _key(key)
        with self._lock, self._guard("claim an episode"):
            self._db.execute("BEGIN IMMEDIATE")
            try:
                done = self._db.execute(
                    f"SELECT 1 FROM results WHERE {_KEY} AND error IS NULL", k
                ).fetchone()
                row = self._db.execute(
                    f"SELECT host, pid, heartbeat FROM claims WHERE {_KEY}", k
                ).fetchone()
                if done or (row is not None and self._owner_alive(*row)):
                    self._db.execute("ROLLBACK")
                    return False
                self._db.execute(
                    "INSERT OR REPLACE INTO claims VALUES (?,?,?,?,?,?,?,?)",
                    (*k, self.host, self.pid, time.time()),
                )
                self._db.execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:  # a failed COMMIT has already rolled back
                    self._db.execute("ROLLBACK")
                raise
        return True

    def release(self, key: ResultKey) -> None:
        """Drop this process's claim on `key` (its result is stored)."""
        with self._lock, self._guard("release a claim"):
            self._db.execute(
                f"DELETE FROM claims WHERE {_KEY} AND host=? AND pid=?",
                (*_key(key), self.host, self.pid),
            )

    def beat(self) -> None:
        """Refresh every claim of this process; a refresh that cannot be written is skipped
        (the claims then look stale after `ttl_s` and may be taken over, never lost)."""
        with self._lock, contextlib.suppress(sqlite3.DatabaseError):
            self._db.execute(
                "UPDATE claims SET heartbeat=? WHERE host=? AND pid=?",
                (time.time(), self.host, self.pid),
            )

    def close(self) -> None:
        """Drop this process's claims (finished or not) and the connection. Claims that
        cannot be deleted (a full disk) stay behind: their owner is gone, so the next bench
        takes them over."""
        with self._lock:
            try:
                with contextlib.suppress(sqlite3.DatabaseError):
                    self._db.execute(
                        "DELETE FROM claims WHERE host=? AND pid=?", (self.host, self.pid)
                    )
            finally:
                self._db.close()


async def run_claimed(
    todo: Sequence[tuple[Any, Any, ResultKey]],
    run: Callable[[Any, Any, ResultKey], Awaitable[None]],
    slots: int,
    claims: Claims,
) -> int:
    """Run the items of `todo` that this process claims, `slots` at a time (an item is claimed
    only when a slot is free, so a second process takes what is left); returns how many ran."""
    queue = list(reversed(todo))
    ran = 0

    async def slot() -> None:
        nonlocal ran
        while queue:
            item = queue.pop()
            if not claims.take(item[2]):
                continue
            await run(*item)
            claims.release(item[2])
            ran += 1

    async def heartbeat() -> None:
        while True:
            await asyncio.sleep(HEARTBEAT_S)
            claims.beat()

    beating = asyncio.create_task(heartbeat())
    try:
        await asyncio.gather(*(slot() for _ in range(max(1, slots))))
    finally:
        beating.cancel()
    return ran
