"""The grounding rule of the rule tier: an answer that is the agent's guess from before it read.

On browse pages the 0.5B researcher often guesses a number in its first thought, reads the
page (its next thoughts name the page's value), then answers with the first guess (the BACK
losses of issue 39). The rule acts only on that exact pattern, with numbers compared as
tokens: the answer holds one number, which the agent wrote before its first observation,
which no observation it was shown holds, and which none of its thoughts since reading
repeats; and its latest thought since reading names one number that an observation states
as a labelled fact (`Height: 55 m`, a table row), never one from prose (issue 48: filler such as
"mentioned 592 times in older accounts" became an answer). Then the answer's number is
replaced by that one. Anything else (no guess, a derived value, two candidates) is left alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from overseer.runtime.steps import NUMBER, fact_numbers
from overseer.runtime.steps import numbers_in as numbers

__all__ = ["Reading", "fact_numbers", "numbers", "regrounded", "swap_number"]


@dataclass
class Reading:
    """What one agent wrote and was shown in one sub-task, as numbers."""

    observations: int = 0
    guessed: set[str] = field(default_factory=set)  # in thoughts before any observation
    shown: set[str] = field(default_factory=set)  # in the observations as shown to it
    facts: set[str] = field(default_factory=set)  # stated there as labelled facts
    since: list[set[str]] = field(default_factory=list)  # each later thought's numbers

    def thought(self, text: str) -> None:
        """A thought written before a tool call (before that call's observation)."""
        if self.observations:
            self.since.append(numbers(text))
        else:
            self.guessed |= numbers(text)

    def observed(self, text: str) -> None:
        """An observation as the agent was shown it."""
        self.observations += 1
        self.shown |= numbers(text)
        self.facts |= fact_numbers(text)


def regrounded(answer: str, reading: Reading) -> tuple[str, str] | None:
    """(guess, read value) when `answer` is the agent's pre-reading guess that nothing it
    read supports while its latest thought since reading names one value a page states as a
    labelled fact; None otherwise."""
    got = numbers(answer)
    if not reading.observations or len(got) != 1:
        return None
    guess = next(iter(got))
    if guess not in reading.guessed or guess in reading.shown:
        return None
    if any(guess in t for t in reading.since):
        return None
    for t in reversed(reading.since):
        read = t & reading.shown
        if read:  # one value, and a labelled fact where it was shown: never filler prose
            ok = len(read) == 1 and read <= reading.facts
            return (guess, next(iter(read))) if ok else None
    return None


def swap_number(text: str, old: str, new: str) -> str:
    """`text` with each number token equal to `old` written as `new`."""
    return NUMBER.sub(lambda m: new if m.group().replace(",", "") == old else m.group(), text)
