"""The run's trace: JSON Lines, one event per line, flushed at once, typed events.

Every line follows the event schema (`runtime._events`) and carries the schema version `v`.
The hot path writes a plain dict through orjson; the schema is checked when asked: a Trace
opened with `validate=True` (or, by default, when the environment sets
`OVERSEER_TRACE_VALIDATE=1`, as the test suite does) validates each event before writing it,
and `read_trace(validate=True)` / `overseer trace show` validate on read. Model calls use
OpenTelemetry GenAI attribute names (`gen_ai.usage.input_tokens`, ...), so the file can be
mapped onto spans. Sinks (`trace_sinks`) receive the same events as they are written, e.g. to
export them as spans; the file stays the record.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import IO, Any, Protocol

import orjson

from overseer.errors import ensure_dir, path_error
from overseer.models import Completion, Usage
from overseer.runtime._events import TRACE_VERSION, validate_event

VALIDATE_ENV = "OVERSEER_TRACE_VALIDATE"
"""Set to 1 to validate every event at the writer (a debug flag; the tests set it)."""

_OPTS = orjson.OPT_NON_STR_KEYS | orjson.OPT_APPEND_NEWLINE


def _plain(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    if hasattr(value, "model_dump"):
        return value.model_dump()
    return str(value)


def dumps_line(record: Mapping[str, Any]) -> bytes:
    """One trace line (UTF-8 JSON and a newline); values orjson cannot write (ints beyond 64
    bits, subclasses it refuses) go through the standard library instead."""
    try:  # string keys only: orjson's fast path, about half the time on a long prompt
        return orjson.dumps(record, default=_plain, option=orjson.OPT_APPEND_NEWLINE)
    except orjson.JSONEncodeError:  # a non-string key or a value orjson refuses
        return _dumps_slow(record)


def _dumps_slow(record: Mapping[str, Any]) -> bytes:
    """`dumps_line` for what the fast path refuses: int keys written as strings (the same
    bytes wherever both succeed), else the standard library."""
    try:
        return orjson.dumps(record, default=_plain, option=_OPTS)
    except orjson.JSONEncodeError:
        text = json.dumps(record, default=_plain, ensure_ascii=False)
        return (text + "\n").encode("utf-8", "surrogatepass")


def _dicts(messages: Sequence[Mapping[str, Any]]) -> Sequence[Mapping[str, Any]]:
    """The messages as JSON-ready dicts; a checked Request's already are (no copy then)."""
    for m in messages:
        if type(m) is not dict:
            return [dict(m) for m in messages]
    return messages


#: the file's buffer: a run's events between two flushes fit in it (a long prompt's
#: model_call is one write, not several), and a given size spares `open` its terminal check
_BUFFER = 1 << 16


def _open(path: Path, mode: str) -> IO[bytes]:
    """`path` opened in `mode` ("ab" or "xb"); its directory is made only when the open finds
    none (one system call for a run in an existing folder). An unusable directory is a
    PathError; an existing file under "xb" is FileExistsError."""
    for attempt in (1, 2):
        try:
            return open(path, mode, buffering=_BUFFER)
        except FileExistsError:
            raise
        except FileNotFoundError as exc:
            if attempt == 2:
                raise path_error("trace directory", path.parent, exc) from exc
        except OSError as exc:
            ensure_dir(path.parent, "trace directory")  # names a parent that is a file
            raise path_error("trace directory", path.parent, exc) from exc
        ensure_dir(path.parent, "trace directory")
    raise AssertionError("unreachable")


def validating_by_default() -> bool:
    """Whether Traces validate each event at the writer unless told (`OVERSEER_TRACE_VALIDATE`)."""
    return os.environ.get(VALIDATE_ENV, "") not in ("", "0")


class TraceSink(Protocol):
    """Receives one run's events, in the order they are written, then `close()` once."""

    def event(self, record: Mapping[str, Any]) -> None: ...

    def close(self) -> None: ...


SinkOpener = Callable[[str], TraceSink]
"""Makes the sink of one run, given the run id (called when the run's Trace opens)."""

_OPENERS: ContextVar[tuple[SinkOpener, ...]] = ContextVar("overseer_trace_sinks", default=())


@contextmanager
def trace_sinks(*openers: SinkOpener) -> Iterator[None]:
    """Within the block, every Trace opened in this context (and in the asyncio tasks and
    `to_thread` calls it starts) also hands its events to a sink per run from `openers`.

    Scoped, not global: leaving the block (or another context) sees none of them, so a
    command can export its runs without every layer between it and `open_run` passing a sink.
    """
    token = _OPENERS.set((*_OPENERS.get(), *openers))
    try:
        yield
    finally:
        _OPENERS.reset(token)


class Trace:
    """Appends events to a JSONL file. The file is flushed before every model call of a run
    (`flush`, called by the metered model), after a model call booked from elsewhere (a
    framework guard), after an error event and when it closes, so a crash, even inside a
    native model, leaves every event up to it on disk; sinks get each event as it is written."""

    def __init__(
        self,
        path: str | Path,
        run: str,
        *,
        sinks: Sequence[SinkOpener] | None = None,
        validate: bool | None = None,
        new: bool = False,
    ) -> None:
        """Open (append) the trace file; an unusable directory is a PathError naming it;
        with `new`, a file that exists already is a FileExistsError (nothing is opened).
        `sinks` (default: those of the enclosing `trace_sinks` blocks) also get every event;
        `validate` checks each event against the schema before writing it (default: the
        `OVERSEER_TRACE_VALIDATE` flag), so a field typo fails at the writer."""
        self.path = path if isinstance(path, Path) else Path(path)
        self.run = run
        self.validate = validating_by_default() if validate is None else validate
        self._lock = threading.Lock()
        self._fh: IO[bytes] | None = _open(self.path, "xb" if new else "ab")
        self._sinks = [o(run) for o in (_OPENERS.get() if sinks is None else sinks)]

    def add_sink(self, sink: TraceSink) -> None:
        """Hand every later event to `sink` too (a host that reports what the plug-ins wrote,
        e.g. their rule firings, reads them here rather than from the plug-ins)."""
        with self._lock:
            self._sinks.append(sink)

    def event(self, event: str, **fields: Any) -> None:
        """Write one event (and hand it to the sinks); see the class for when it is flushed."""
        self.record(event, fields)

    def record(self, event: str, fields: Mapping[str, Any]) -> None:
        """`event` with its fields given as a mapping (keys that are not identifiers, such as
        the GenAI attribute names, need no keyword unpacking)."""
        # the clock in whole microseconds: a float of at most 6 decimals, as round(t, 6)
        # wrote it, at a fifth of the cost (rounding a float to digits goes through text)
        ts = time.time_ns() // 1000 / 1e6
        head = {"v": TRACE_VERSION, "ts": ts, "run": self.run, "event": event, **fields}
        self._write(event, head)

    def _write(self, event: str, head: dict[str, Any]) -> None:
        """Write one event (`head`: the full record, version and clock included)."""
        try:  # string keys only: orjson's fast path (`dumps_line` for anything else)
            line = orjson.dumps(head, default=_plain, option=orjson.OPT_APPEND_NEWLINE)
        except orjson.JSONEncodeError:
            line = dumps_line(head)
        if self.validate or self._sinks:
            plain = orjson.loads(line)
            if self.validate:
                validate_event(plain)
        with self._lock:
            if self._fh is None:
                raise ValueError(f"trace {self.path}: written after close")
            self._fh.write(line)
            if event == "error":
                self._fh.flush()
            for sink in self._sinks:  # under the lock: sinks see the file's order
                sink.event(plain)

    def model_call(
        self,
        actor: str,
        kind: str,
        model: str,
        messages: Sequence[Mapping[str, Any]],
        c: Completion,
        *,
        flush: bool = True,
    ) -> None:
        """The `model_call` event of one booked call; flushed unless the caller flushes before
        its next call anyway (the run's metered model does)."""
        u = c.usage
        head = {
            "v": TRACE_VERSION,
            "ts": time.time_ns() // 1000 / 1e6,  # as `record` writes it
            "run": self.run,
            "event": "model_call",
            "gen_ai.operation.name": "chat",
            "gen_ai.agent.name": actor,
            "overseer.actor.kind": kind,
            "gen_ai.request.model": model,
            "gen_ai.usage.input_tokens": u.prompt_tokens,
            "gen_ai.usage.output_tokens": u.completion_tokens,
            "gen_ai.usage.cache_read_input_tokens": u.cached_prompt_tokens,
            "gen_ai.response.finish_reasons": [c.finish_reason],
            "latency_s": int(c.latency_s * 1e4 + 0.5) / 1e4,  # as round(x, 4), for x >= 0
            "input": _dicts(messages),
            "output": c.text,
        }
        if u.estimated:  # the backend reported no usage: the tokens above are an estimate
            head["overseer.usage.estimated"] = True
        self._write("model_call", head)
        if flush:
            self.flush()

    def run_end(
        self,
        answer: str,
        stop_reason: str,
        error: str | None,
        total: Usage,
        by_actor: Mapping[str, Usage],
    ) -> None:
        """The `run_end` event: the run's usage, and per actor its prompt, cached and
        completion tokens."""
        self.event(
            "run_end",
            answer=answer,
            stop_reason=stop_reason,
            error=error,
            usage={
                "input_tokens": total.prompt_tokens,
                "output_tokens": total.completion_tokens,
                "cached_input_tokens": total.cached_prompt_tokens,
            },
            by_actor={
                k: [u.prompt_tokens, u.cached_prompt_tokens, u.completion_tokens]
                for k, u in by_actor.items()
            },
        )

    def flush(self) -> None:
        """Put the events written so far on disk (before a model call, which may not return)."""
        with self._lock:
            if self._fh is not None:
                self._fh.flush()

    def close(self) -> None:
        with self._lock:
            if self._fh is not None:
                self._fh.close()
                self._fh = None
                for sink in self._sinks:
                    sink.close()


def read_trace(path: str | Path, *, validate: bool = False) -> Iterator[dict[str, Any]]:
    """Events of a trace file; a line that is not JSON (or, with `validate`, not a valid
    event of the schema) raises ValueError naming the line."""
    path = Path(path)
    with path.open(encoding="utf-8") as fh:
        for no, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"trace {path}, line {no}: not JSON ({exc.msg})") from None
            if not isinstance(rec, dict) or "event" not in rec:
                raise ValueError(f"trace {path}, line {no}: expected an object with 'event'")
            if validate:
                try:
                    validate_event(rec)
                except ValueError as exc:
                    raise ValueError(f"trace {path}, line {no}: {exc}") from None
            yield rec
