"""Run state in Redis, shared by the proxy's workers (and by replicas behind a load balancer).

Per run, under `overseer:proxy:RUN:`: `lock` (the run's lock: one worker at a time applies
operations to it), `ops` (a list: the run's operations in the order they were applied, as
JSON), `owner` (the worker that writes the run's trace) and `last` (the time of its last
operation). A worker keeps a replica of each run it serves and replays the operations it has
not seen before applying its own, so every worker decides with the run's whole history. Keys
expire after the run's idle time (twice over), so a crashed worker leaves nothing behind.

    redis-server --port 6379 --save '' --appendonly no   # then: overseer proxy --redis ...
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import socket
import time
import uuid
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

import redis.asyncio as redis
from redis.exceptions import RedisError

from overseer.models import serve as front

P = ParamSpec("P")
T = TypeVar("T")


def _answers(fn: Callable[P, Coroutine[Any, Any, T]]) -> Callable[P, Coroutine[Any, Any, T]]:
    """A store operation whose Redis errors are a 503 naming the store (a JSON error the
    SDKs raise, never a plain-text 500)."""

    @functools.wraps(fn)
    async def op(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return await fn(*args, **kwargs)
        except RedisError as exc:
            store = args[0]
            assert isinstance(store, RedisStore)
            raise store.down(exc) from None

    return op


class RedisStore:
    """A `RunStore` in Redis (see the module docstring)."""

    def __init__(self, url: str, *, idle_s: float = 300.0, prefix: str = "overseer:proxy:") -> None:
        # a store that does not answer fails the request in seconds, not at the OS's time-out
        self.client = redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=10)
        self.url = url
        self.prefix = prefix
        self.ttl = max(60, int(idle_s * 2))
        self.worker = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"

    def _key(self, run: str, part: str) -> str:
        return f"{self.prefix}{run}:{part}"

    def down(self, exc: BaseException) -> front.Fault:
        """The 503 naming the store and what went wrong with it."""
        why = f"{type(exc).__name__}: {exc}"
        return front.Fault(503, f"run store {self.url}: unavailable ({why})", "server_error")

    @contextlib.asynccontextmanager
    async def lock(self, run: str) -> AsyncIterator[None]:
        """The run's lock (released after 60 s if its holder died holding it)."""
        held = self.client.lock(self._key(run, "lock"), timeout=60, blocking_timeout=600)
        try:
            got = await held.acquire()
        except RedisError as exc:
            raise self.down(exc) from None
        if not got:
            raise self.down(TimeoutError(f"the lock of run {run} was not free in 600 s"))
        try:
            yield
        finally:
            with contextlib.suppress(RedisError):  # expired, or the store went away
                await held.release()

    async def ping(self) -> str:
        """The store's URL when it answers; a 503 Fault naming it when it does not."""
        try:
            await self.client.ping()
        except RedisError as exc:
            raise self.down(exc) from None
        return self.url

    @_answers
    async def claim(self, run: str) -> bool:
        """Whether this worker writes the run's trace (the first to claim it does)."""
        key = self._key(run, "owner")
        if await self.client.set(key, self.worker, nx=True, ex=self.ttl):
            return True
        owner: Any = await self.client.get(key)
        return owner is not None and owner == self.worker.encode()

    @_answers
    async def since(self, run: str, n: int) -> list[dict[str, Any]]:
        """The run's operations from the `n`-th on."""
        return [json.loads(x) for x in await self.client.lrange(self._key(run, "ops"), n, -1)]

    @_answers
    async def append(self, run: str, ops: list[dict[str, Any]]) -> None:
        """Log operations applied by this worker, and when."""
        keys = [self._key(run, p) for p in ("ops", "last", "owner")]
        async with self.client.pipeline(transaction=True) as pipe:
            pipe.rpush(keys[0], *(json.dumps(op) for op in ops))
            pipe.set(keys[1], repr(time.time()))
            for key in keys:
                pipe.expire(key, self.ttl)
            await pipe.execute()

    @_answers
    async def last(self, run: str) -> float | None:
        """When the run's last operation was logged (by any worker), None if never."""
        raw = await self.client.get(self._key(run, "last"))
        return float(raw) if raw is not None else None

    @_answers
    async def forget(self, run: str) -> None:
        """Drop an ended run's keys."""
        await self.client.delete(*(self._key(run, p) for p in ("ops", "last", "owner")))

    async def close(self) -> None:
        await self.client.aclose()
