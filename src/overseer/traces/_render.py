"""How a log is shown to a judge model, and how it is fitted to a small window.

Nothing is cut silently: a step longer than its share is shortened with a note inside the
text saying how many characters are not shown; a log longer than the window is split into
chunks, or its early steps are replaced by a one-line summary saying which agents spoke how
often. Every such case is counted in the attribution's notes.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from overseer.traces._types import TraceStep, Trajectory

Count = Callable[[str], int]
MIN_CHARS = 60  # the shortest a squeezed step gets: its header and first words


def approx_tokens(text: str) -> int:
    """A conservative token estimate for models whose tokenizer we cannot call (3 chars/token)."""
    return math.ceil(len(text) / 3)


def clip(text: str, max_chars: int) -> tuple[str, bool]:
    """`text` cut to about `max_chars` (head and tail kept) with a visible note, and whether cut."""
    if len(text) <= max_chars:
        return text, False
    head, tail = max_chars * 2 // 3, max_chars // 3
    cut = len(text) - head - tail
    return (
        f"{text[:head]}\n[... {cut:,} characters of this step not shown ...]\n{text[-tail:]}",
        True,
    )


def render_step(s: TraceStep, max_chars: int) -> tuple[str, bool]:
    """One step as the judge reads it: a header with its number and speaker, then its text."""
    to = f" (to {s.to})" if s.to else ""
    body, cut = clip(s.text.strip(), max_chars)
    return f"[step {s.index}] {s.agent}{to}:\n{body}\n", cut


def summary(steps: Sequence[TraceStep]) -> str:
    """One line standing for steps that are not shown: their range and who spoke how often."""
    if not steps:
        return ""
    who = Counter(s.agent for s in steps)
    parts = ", ".join(f"{a} {n}" for a, n in who.most_common())
    return (
        f"[steps {steps[0].index}-{steps[-1].index} are not shown here; steps per agent: {parts}]\n"
    )


@dataclass
class Fitter:
    """Renders steps within a token budget: `budget` tokens for the log part of a prompt."""

    count: Count
    budget: int
    step_chars: int = 2000

    def rendered(self, steps: Sequence[TraceStep], notes: Counter[str]) -> list[str]:
        """Each step rendered with the per-step cap (clipped steps counted in `notes`)."""
        out = []
        for s in steps:
            text, cut = render_step(s, self.step_chars)
            notes["clipped_steps"] += int(cut)
            out.append(text)
        return out

    def chunks(self, traj: Trajectory, notes: Counter[str]) -> list[tuple[int, int]]:
        """Split the log into consecutive (first, last) step ranges that each fit the budget."""
        texts = self.rendered(traj.steps, notes)
        out: list[tuple[int, int]] = []
        start, used = 0, 0
        for i, t in enumerate(texts):
            n = self.count(t)
            if i > start and used + n > self.budget:
                out.append((start, i - 1))
                start, used = i, 0
            used += n
        if texts:
            out.append((start, len(texts) - 1))
        return out

    def window(self, traj: Trajectory, last: int, notes: Counter[str]) -> str:
        """Steps 0..last; when they do not fit, the earliest are summarised in one line."""
        texts = self.rendered(traj.steps[: last + 1], notes)
        used, first = 0, last + 1
        for i in range(last, -1, -1):
            n = self.count(texts[i])
            if first <= last and used + n > self.budget:
                break
            used += n
            first = i
        if first > 0:
            notes["windowed_calls"] += 1
        return summary(traj.steps[:first]) + "".join(texts[first:])

    def squeeze(self, traj: Trajectory, lo: int, hi: int, notes: Counter[str]) -> str:
        """Steps lo..hi, each shortened (with notes) until all of them fit the budget."""
        steps = traj.steps[lo : hi + 1]
        cap = self.step_chars
        while True:
            texts = [render_step(s, cap)[0] for s in steps]
            if sum(self.count(t) for t in texts) <= self.budget or cap <= MIN_CHARS:
                clipped = sum(1 for s in steps if len(s.text.strip()) > cap)
                notes["clipped_steps"] += clipped
                return "".join(texts)
            cap = max(MIN_CHARS, cap * 2 // 3)
