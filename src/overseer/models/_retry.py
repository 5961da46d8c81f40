"""What an HTTP model call may retry, how long it waits, its whole-request deadline, and a
private event loop for the synchronous API; shared by `OpenAIModel` and the server pre-check.

One policy for both, so the pre-check retries exactly what a run would retry: refused or closed
connections, time-outs, 408, 409, 429 and 5xx. A server's Retry-After is honoured up to
`RETRY_AFTER_CAP_S`; one asking for longer fails at once with a message that says so.
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import Any, TypeVar

import httpx2 as httpx  # the HTTP library of the openai SDK (3.x)

from overseer.models._types import ModelUnavailableError

T = TypeVar("T")

RETRY_AFTER_CAP_S = 60.0
RETRY_STATUS = frozenset({408, 409, 429})
BACKOFF_BASE_S, BACKOFF_MAX_S = 0.5, 8.0


def retryable_status(status: int) -> bool:
    """Whether an HTTP status is worth another attempt (the same set as the openai SDK)."""
    return status in RETRY_STATUS or status >= 500


def retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds the server asks us to wait (`retry-after-ms`, `Retry-After` as seconds or an
    HTTP date), or None when it does not say."""
    if not headers:
        return None
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        when = email.utils.parsedate_tz(value)
        return None if when is None else max(0.0, email.utils.mktime_tz(when) - time.time())


def retry_delay(
    where: str,
    status: int | None,
    headers: Mapping[str, str] | None,
    attempt: int,
    rng: random.Random,
) -> float:
    """The wait before attempt `attempt + 1`: the server's Retry-After, else an exponential
    backoff with jitter. A Retry-After above the cap raises ModelUnavailableError at once."""
    asked = retry_after(headers)
    if asked is not None and asked > RETRY_AFTER_CAP_S:
        raise ModelUnavailableError(
            f"{where}: HTTP {status}: the server asks to retry after {asked:g} s, more than the "
            f"{RETRY_AFTER_CAP_S:g} s overseer waits; not retried"
        )
    if asked is not None:
        return asked
    return min(BACKOFF_MAX_S, BACKOFF_BASE_S * 2**attempt) * rng.uniform(0.75, 1.0)


def attempts_text(n: int) -> str:
    """'after retries (3 attempts)', or '(1 attempt, no retries)'."""
    return "(1 attempt, no retries)" if n == 1 else f"after retries ({n} attempts)"


class DeadlineTransport(httpx.AsyncBaseTransport):
    """An httpx transport whose every request, connect and all reads, ends within `seconds`.

    httpx's own time-outs bound each socket operation, so a server trickling its reply a byte
    at a time is never cut; here the whole exchange runs under one deadline and a late one
    raises httpx.ReadTimeout (retried like any time-out). The body is read here, so streamed
    replies arrive whole.
    """

    def __init__(self, inner: httpx.AsyncBaseTransport, seconds: float) -> None:
        self.inner = inner
        self.seconds = seconds

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        try:
            async with asyncio.timeout(self.seconds):
                resp = await self.inner.handle_async_request(request)
                try:
                    raw = b"".join([chunk async for chunk in resp.stream])  # type: ignore[union-attr]
                finally:
                    await resp.aclose()
        except TimeoutError:
            msg = f"no complete reply within {self.seconds:g} s"
            raise httpx.ReadTimeout(msg, request=request) from None
        return httpx.Response(
            resp.status_code,
            headers=resp.headers,
            stream=httpx.ByteStream(raw),
            extensions=resp.extensions,
        )

    async def aclose(self) -> None:
        await self.inner.aclose()


def deadline_client(seconds: float) -> httpx.AsyncClient:
    """An httpx client (the openai SDK's defaults) with a whole-request deadline."""
    import openai

    transport = DeadlineTransport(httpx.AsyncHTTPTransport(), seconds)
    return openai.DefaultAsyncHttpxClient(transport=transport, timeout=seconds)


class LoopThread:
    """A private event loop in a daemon thread: synchronous callers run coroutines on it, so the
    sync API shares the async one's deadlines and retries; Ctrl-C while waiting cancels the
    coroutine (its HTTP request is closed) and is raised in the caller."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, make: Callable[[], Coroutine[Any, Any, T]]) -> T:
        fut = asyncio.run_coroutine_threadsafe(make(), self.loop)
        try:
            return fut.result()
        except BaseException:
            fut.cancel()
            raise

    def close(self) -> None:
        if self.loop.is_running():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout=5)
        if not self.loop.is_running():
            self.loop.close()


async def with_deadline(seconds: float, make: Callable[[], Awaitable[T]]) -> T:
    """`await make()` cut at `seconds` (TimeoutError)."""
    async with asyncio.timeout(seconds):
        return await make()
