"""Training data of the learned trigger: labelled flagged steps read from stored traces, and
the choice of the decision threshold on a held-out split."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from overseer.runtime import read_trace


@dataclass(frozen=True)
class Example:
    """One flagged step on which the LLM supervisor was asked: its features and the label
    (1: the supervisor's intervention was kept; 0: approve, or a reply not applied)."""

    features: Mapping[str, float | str]
    label: int
    run: str = ""


def label_of(event: Mapping[str, Any]) -> int | None:
    """The label of a `supervision` event, None when the LLM was not asked (the step was
    settled by the rules, skipped, or carries no features)."""
    if event.get("event") != "supervision" or not isinstance(event.get("features"), dict):
        return None
    action = event.get("action")
    if action is None:
        return None
    return int(action != "approve" and not event.get("note"))


def _trace_files(paths: Iterable[str | Path]) -> list[Path]:
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out.extend(sorted(p.rglob("*.jsonl")))
        elif p.is_file():
            out.append(p)
        else:
            raise ValueError(f"traces {p}: no such file or directory")
    return out


def examples_from_traces(paths: Iterable[str | Path]) -> list[Example]:
    """Every labelled flagged step of the traces under `paths` (files or directories, searched
    for *.jsonl), in file order. A path with no trace at all is refused (one line naming it)."""
    paths = list(paths)
    files = _trace_files(paths)
    if not files:
        raise ValueError(f"traces {', '.join(map(str, paths))}: no trace files (*.jsonl) found")
    out: list[Example] = []
    for f in files:
        for ev in read_trace(f):
            label = label_of(ev)
            if label is not None:
                out.append(Example(dict(ev["features"]), label, str(ev.get("run", f.stem))))
    return out


def choose_threshold(probs: Sequence[float], labels: Sequence[int], min_recall: float) -> float:
    """The highest threshold t such that asking the LLM only where p >= t keeps at least
    `min_recall` of the positives (ties: all steps at one probability go together); 0.0 (ask
    always) when there are no positives to keep."""
    if len(probs) != len(labels):
        raise ValueError(f"choose_threshold: {len(probs)} probabilities for {len(labels)} labels")
    if not 0.0 < min_recall <= 1.0:
        raise ValueError(f"min_recall: expected a number in (0, 1], got {min_recall}")
    positives = sorted(p for p, y in zip(probs, labels, strict=True) if y)
    if not positives:
        return 0.0
    # Keeping positives with p >= t: the most that may be dropped is floor((1-r) * n).
    may_drop = int((1.0 - min_recall) * len(positives) + 1e-9)
    t = positives[may_drop]
    return float(min(1.0, max(0.0, t)))
