"""The five rules run together on `Step`s, outside any bus: what the offline replay of
imported trajectories (`overseer.traces`) and the retention benchmark use. On a run, each rule
is a bus plug-in of its own (`overseer.supervise.rules.plugins`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from overseer.runtime.steps import ToolRecord
from overseer.supervise._extract import Embed
from overseer.supervise.filters import Step
from overseer.supervise.rules import _logic as rules
from overseer.supervise.rules._base import Blocked, Book, RuleFiring, RuleSettings


class RuleTier:
    """The five rules' state for one run, in the order a run's chain asks them.

    `counts` (rule name -> firings) and `firings` (in order) are what results and traces read.
    """

    def __init__(self, settings: RuleSettings | None = None, *, embed: Embed | None = None) -> None:
        self.settings = settings or RuleSettings()
        self.embed = embed
        self.book = Book()
        self.reset()

    @property
    def counts(self) -> Counter[str]:
        return self.book.counts

    @property
    def firings(self) -> list[RuleFiring]:
        return self.book.firings

    def reset(self) -> None:
        """Forget everything (a new run)."""
        s, book = self.settings, self.book
        book.clear()
        self.loop, self.budget = rules.LoopRule(s, book), rules.BudgetRule(s, book)
        self.purifier = rules.PurifyRule(s, book, self.embed)
        self.grounder, self.masker = rules.GroundRule(s, book), rules.MaskRule(s, book)

    def before_action(self, step: Step) -> Blocked | None:
        """Call before a tool runs: the refusal when the action repeats, a budget is spent, or
        the tool makes no progress (each refused attempt counts as a firing)."""
        key = (step.agent, step.subtask)
        self.budget.step(key)
        self.grounder.thought(key, step.thought)
        blocked = self.loop.repeated(step) or self.budget.check(key) or self.loop.no_progress(step)
        if blocked is None:
            self.loop.let_run(step)
        return blocked

    def charge(self, agent: str, subtask: str, tokens: int) -> Blocked | None:
        """Book an agent's model tokens; Blocked once its token budget is spent."""
        return self.budget.charge(agent, subtask, tokens)

    def after_observation(self, step: Step, *, local_task: str) -> tuple[str, RuleFiring | None]:
        """After a tool ran: the observation to show (purified when too long) and the firing."""
        out, firing = self.purifier.purify(step, local_task)
        self.grounder.observed((step.agent, step.subtask), step.error or out)
        self.loop.ran(step, step.observation, out)
        return out, firing

    def ground(self, step: Step) -> tuple[str, RuleFiring] | None:
        """An answer that is the agent's guess from before it read (see `GroundRule`)."""
        return self.grounder.ground(step)

    def mask(
        self, observations: Sequence[ToolRecord], *, agent: str = "", subtask: str = ""
    ) -> list[str]:
        """Texts to show for one agent's observations (oldest first; see `MaskRule`)."""
        kept = rules.latest_of(observations, self.loop.pinned.get(agent))
        return self.masker.mask(
            observations, agent, subtask, kept=kept, is_extract=self.purifier.is_extract
        )
