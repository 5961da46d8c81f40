"""One line per run trace in a directory: id, start, model, stop reason, tokens.

Read from each file's first and last events only, so listing a directory of long traces is
cheap; a file that is not a trace gets its error instead of a summary.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class TraceSummary:
    """A trace file's run as its first and last events tell it; `error` says why not."""

    path: Path
    run: str = ""
    started: float | None = None
    model: str = ""
    stop_reason: str = ""
    tokens: int | None = None
    error: str | None = None


def _event(line: bytes, which: str) -> dict[str, Any]:
    try:
        e = json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{which} line is not JSON ({exc})") from None
    if not isinstance(e, dict) or "event" not in e or "run" not in e:
        raise ValueError(f"{which} line is not a trace event")
    return e


def _ends(path: Path) -> tuple[bytes, bytes]:
    """The first and the last non-empty lines of a file."""
    with path.open("rb") as fh:
        first = fh.readline()
        fh.seek(0, 2)
        size = fh.tell()
        fh.seek(max(0, size - 65536))
        tail = [ln for ln in fh.read().splitlines() if ln.strip()]
    if not first.strip() or not tail:
        raise ValueError("empty file")
    return first, tail[-1]


def summarize_trace(path: Path) -> TraceSummary:
    """The summary of one trace file (never raises for a bad file: its error is kept)."""
    try:
        first, final = _ends(path)
        head, last = _event(first, "first"), _event(final, "last")
    except (OSError, ValueError) as exc:
        return TraceSummary(path, error=str(exc))
    usage = last.get("usage") if last.get("event") == "run_end" else None
    tokens = None
    if isinstance(usage, dict):
        tokens = int(usage.get("input_tokens", 0)) + int(usage.get("output_tokens", 0))
    return TraceSummary(
        path,
        run=str(head.get("run", "")),
        started=head.get("ts") if isinstance(head.get("ts"), (int, float)) else None,
        model=str(head.get("model", "")),
        stop_reason=str(last.get("stop_reason", "")) if usage is not None else "(unfinished)",
        tokens=tokens,
    )


def list_traces(directory: Path) -> list[TraceSummary]:
    """Summaries of the *.jsonl files of `directory`, oldest first (by file name)."""
    return [summarize_trace(p) for p in sorted(directory.glob("*.jsonl"))]
