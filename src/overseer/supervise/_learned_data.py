"""Training data of the learned trigger: labelled flagged steps read from stored traces, and
the choice of the decision threshold on a held-out split.

Two labels. `kept` (the default): the supervisor's intervention was kept. `effect`: it was kept
and it changed what happened next; a hint or a verification counts only if the agent's next
step is not the flagged step again (same tool, same normalised input), since a hint the agent
ignores is tokens for nothing. A corrected observation counts when kept (it shortens every
later prompt by itself).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from overseer.runtime import read_trace
from overseer.supervise.filters import Step, normalize_action


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


#: label kinds of `examples_from_traces`
Label = Literal["kept", "effect"]
LABELS: tuple[str, ...] = ("kept", "effect")
#: actions whose worth is in what the agent does next
STEERING = frozenset({"provide_guidance", "run_verification"})


def _action_key(ev: Mapping[str, Any]) -> str:
    """What an interaction event did, as the filter's loop check signs it."""
    step = Step(
        agent=str(ev.get("agent", "")),
        subtask="",
        kind=ev.get("kind") or "tool",
        tool=ev.get("tool"),
        args=str(ev.get("input") or ""),
    )
    return normalize_action(step)


def _changed_course(events: Sequence[Mapping[str, Any]], at: int) -> bool:
    """Whether the agent of the supervision event `events[at]` did something other than the
    flagged step next (False when it never acted again)."""
    sup = events[at]
    agent, rnd, step = sup.get("agent"), sup.get("round"), sup.get("step")
    flagged = next(
        (
            e
            for e in events[:at]
            if e.get("event") == "interaction"
            and (e.get("agent"), e.get("round"), e.get("step")) == (agent, rnd, step)
        ),
        None,
    )
    later = (e for e in events[at + 1 :] if e.get("event") == "interaction")
    after = next((e for e in later if e.get("agent") == agent), None)
    if flagged is None or after is None:
        return False
    return _action_key(after) != _action_key(flagged)


def effect_label(events: Sequence[Mapping[str, Any]], at: int) -> int | None:
    """The `effect` label of the supervision event `events[at]` (None: the LLM was not asked)."""
    kept = label_of(events[at])
    if not kept or events[at].get("action") not in STEERING:
        return kept
    return int(_changed_course(events, at))


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


def examples_from_traces(paths: Iterable[str | Path], *, label: Label = "kept") -> list[Example]:
    """Every labelled flagged step of the traces under `paths` (files or directories, searched
    for *.jsonl), in file order, labelled `kept` or `effect` (module docstring). A path with no
    trace at all is refused (one line naming it)."""
    if label not in LABELS:
        raise ValueError(f"trigger label {label!r}: expected one of {', '.join(LABELS)}")
    paths = list(paths)
    files = _trace_files(paths)
    if not files:
        raise ValueError(f"traces {', '.join(map(str, paths))}: no trace files (*.jsonl) found")
    out: list[Example] = []
    for f in files:
        events = list(read_trace(f))
        for i, ev in enumerate(events):
            y = label_of(ev) if label == "kept" else effect_label(events, i)
            if y is not None:
                out.append(Example(dict(ev["features"]), y, str(ev.get("run", f.stem))))
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
