"""The run's trace: JSON Lines, one event per line, flushed at once, typed events.

Every line is validated against the event schema (`runtime._events`) before it is written
and carries the schema version `v`. Model calls use OpenTelemetry GenAI attribute names
(`gen_ai.usage.input_tokens`, ...), so the file can be mapped onto spans. Sinks (`trace_sinks`)
receive the same validated events as they are written, e.g. to export them as spans; the file
stays the record.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import IO, Any, Protocol

from overseer.errors import ensure_dir, path_error
from overseer.models import Completion, Usage
from overseer.runtime._events import TRACE_VERSION, validate_event


def _plain(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    if hasattr(value, "model_dump"):
        return value.model_dump()
    return str(value)


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
    """Appends events to a JSONL file; every event is written and flushed before returning."""

    def __init__(
        self, path: str | Path, run: str, *, sinks: Sequence[SinkOpener] | None = None
    ) -> None:
        """Open (append) the trace file; an unusable directory is a PathError naming it.
        `sinks` (default: those of the enclosing `trace_sinks` blocks) also get every event."""
        self.path = Path(path)
        ensure_dir(self.path.parent, "trace directory")
        self.run = run
        self._lock = threading.Lock()
        try:
            self._fh: IO[str] | None = self.path.open("a", encoding="utf-8")
        except OSError as exc:
            raise path_error("trace directory", self.path.parent, exc) from exc
        self._sinks = [o(run) for o in (_OPENERS.get() if sinks is None else sinks)]

    def event(self, event: str, **fields: Any) -> None:
        record = {
            "v": TRACE_VERSION,
            "ts": round(time.time(), 6),
            "run": self.run,
            "event": event,
            **fields,
        }
        line = json.dumps(record, default=_plain, ensure_ascii=False)
        plain = json.loads(line)
        validate_event(plain)
        with self._lock:
            if self._fh is None:
                raise ValueError(f"trace {self.path}: written after close")
            self._fh.write(line + "\n")
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
    ) -> None:
        self.event(
            "model_call",
            **{
                "gen_ai.operation.name": "chat",
                "gen_ai.agent.name": actor,
                "overseer.actor.kind": kind,
                "gen_ai.request.model": model,
                "gen_ai.usage.input_tokens": c.usage.prompt_tokens,
                "gen_ai.usage.output_tokens": c.usage.completion_tokens,
                "gen_ai.usage.cache_read_input_tokens": c.usage.cached_prompt_tokens,
                "gen_ai.response.finish_reasons": [c.finish_reason],
                "latency_s": round(c.latency_s, 4),
                "input": [dict(m) for m in messages],
                "output": c.text,
                # the backend reported no usage: the tokens above are an estimate
                **({"overseer.usage.estimated": True} if c.usage.estimated else {}),
            },
        )

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
