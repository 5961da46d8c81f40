"""The proxy as a gateway under faults (issue 50, item 3): what a run holds while idle, what a
client reads when the upstream dies mid-stream, and how much of a request is overseer's.

- A run's trace file is not held open: `park` hands the trace a file that keeps the events
  written since the last flush in memory and appends them on each flush (open, write, close),
  so a live run holds no descriptor between requests; the trace is flushed after every
  booked call and at the end of every request that judged something.
- An upstream that dies mid-stream ends the client's stream with an OpenAI-shaped error event
  (`sse_error`), which the SDKs raise, instead of a stream cut short.
- `Clock` measures overseer's share of a request: wall time in the proxy minus the time spent
  waiting for the upstream, booking and tracing included (`x-overseer-overhead-ms`).
- `server_gc` sets garbage collection for a process that does nothing but serve the proxy.
"""

from __future__ import annotations

import gc
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

from overseer.models import serve as front
from overseer.runtime.books import Trace


class TraceFile:
    """A file-like for a run's trace: writes kept in memory, appended to `path` on `flush`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._buf: list[bytes] = []
        self._lock = threading.Lock()

    def write(self, data: bytes) -> int:
        with self._lock:
            self._buf.append(bytes(data))
        return len(data)

    def flush(self) -> None:
        with self._lock:
            if not self._buf:
                return
            data, self._buf = b"".join(self._buf), []
        if str(self.path) == os.devnull:
            return
        with open(self.path, "ab") as fh:
            fh.write(data)

    def close(self) -> None:
        self.flush()


def park(trace: Trace) -> None:
    """Close `trace`'s file now; later events are appended per flush (see `TraceFile`).
    The runtime's `Trace` writes through one open file for a run's whole life; a gateway
    holding thousands of idle runs cannot keep one descriptor each."""
    held = trace._fh  # the Trace's own handle (no public way to swap it yet)
    if held is None or isinstance(held, TraceFile):
        return
    held.flush()
    trace._fh = TraceFile(trace.path)  # type: ignore[assignment]
    held.close()


def sse_error(upstream: str, exc: BaseException) -> bytes:
    """The SSE event ending a stream the upstream broke off: an OpenAI error object, which
    the SDKs raise (`openai.APIError`) when they read it."""
    why = str(exc) or type(exc).__name__
    body = front.error_body(502, f"upstream {upstream}: stream broken off: {why}", "server_error")
    return b"data: " + json.dumps(body).encode() + b"\n\n"


def last_event_end(data: bytes) -> int:
    """Where the last complete SSE event of `data` ends (0: none is complete)."""
    lf, crlf = data.rfind(b"\n\n"), data.rfind(b"\r\n\r\n")
    return max(lf + 2 if lf >= 0 else 0, crlf + 4 if crlf >= 0 else 0)


class Clock:
    """Overseer's share of one request: the time since `start` minus the upstream's."""

    def __init__(self) -> None:
        self.start = time.perf_counter()
        self.upstream = 0.0
        self._since: float | None = None

    def away(self) -> None:
        """The upstream has the request now."""
        self._since = time.perf_counter()

    def back(self) -> None:
        """The upstream's reply (or its next block) is in."""
        if self._since is not None:
            self.upstream += time.perf_counter() - self._since
            self._since = None

    def ms(self) -> str:
        return f"{(time.perf_counter() - self.start - self.upstream) * 1000:.3f}"


def comment(name: str, value: Any) -> bytes:
    """An SSE comment line (clients skip it): `: name: value`."""
    return f": {name}: {value}\n\n".encode()


#: the young generation's threshold in a serving process (CPython's default: 700 objects)
SERVER_GC_YOUNG = 10_000


def server_gc() -> None:
    """Garbage collection for a process that only serves the proxy (`overseer proxy` and its
    workers; never a `Proxy` inside a user's process): what is alive once it serves (modules,
    the app) is frozen out of every later collection, and the young generation is collected
    after 10,000 new objects instead of 700. Why (issue 50): at 200 requests in flight the
    collector took about 15% of the proxy's core, mostly re-scanning long-lived objects, and
    a full collection paused every request for about 0.1 s; most objects a request makes die
    with it, before a young collection sees them."""
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(SERVER_GC_YOUNG, middle, old)
