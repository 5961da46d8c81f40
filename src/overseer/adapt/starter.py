"""Hand-written starter cases (our own words), one per domain, for an empty repository.

They let MASFly run before any distillation; `overseer adapt init` can add them and then
distil training tasks on top. They are data, kept in `data/starter_cases.json` in the same
format as `overseer adapt show --export` (so they are read and validated by the same code);
travel tool names are those of the AgentDojo travel suite.
"""

from __future__ import annotations

from pathlib import Path

from overseer.adapt.repository import Case, load_cases

STARTER_FILE = Path(__file__).parent / "data" / "starter_cases.json"
DOMAINS = ("code", "numeric", "mc", "travel")


def starter_cases() -> list[Case]:
    """One hand-written case each for code, numeric, multiple-choice and travel tasks."""
    cases = load_cases(STARTER_FILE)
    got = tuple(c.domain for c in cases)
    if got != DOMAINS:
        raise ValueError(f"{STARTER_FILE}: expected cases for {DOMAINS}, got {got}")
    return cases
