"""The five rules as bus plug-ins, one per rule, each with its own per-run state, verdicts
and notes: a chain of them is the rule tier on any host (a team, a game, each framework
adapter, the proxy). `rule_plugins(settings)` gives them in the order a chain asks them:

- `purification` first: it rewrites a long tool output (a `Replace` with `rewrite=True`), and
  every plug-in after it reads the extract (the raw output stays in the interaction's
  `meta["raw_observation"]`);
- `grounding`: the agent's thoughts before each call and what it was shown; an answer that
  was its guess from before it read is rewritten to the value its notes took from a page;
- `budget`: tokens and tool steps per (agent, subtask), a spent budget refuses calls;
- `loop_breaker`: identical calls past `loop_limit`, and calls of a tool that makes no
  progress, are refused before they run;
- `masking`: older tool outputs shown as one-line stubs (it reads only the records it is
  given: a refusal that points to an earlier output, and an extract, keep theirs whole).

No plug-in reads another's state; a user's plug-in added after them sees what they did
through the interactions and verdicts, as a host does.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Generic, TypeVar, cast

from overseer.runtime import BaseSupervisor, Interaction, Run, Verdict
from overseer.runtime.steps import ALL_KINDS, ToolRecord
from overseer.runtime.verdicts import Replace
from overseer.supervise._extract import Embed
from overseer.supervise._steps import step_of
from overseer.supervise.rules._base import (
    NOTE_MARK,
    PURIFIED,
    SHOWN_ABOVE,
    Blocked,
    Book,
    RuleFiring,
    RuleSettings,
    action_of,
)
from overseer.supervise.rules._logic import (
    BudgetRule,
    GroundRule,
    LoopRule,
    MaskRule,
    PurifyRule,
    latest_of,
)

__all__ = [
    "GROUNDED",
    "Budget",
    "Grounding",
    "LoopBreaker",
    "Masking",
    "Purification",
    "RulePlugin",
    "fired",
    "rule_plugins",
]

#: the visible note of a grounded answer; no number of its own (a reader of the corrected
#: answer takes the first number it sees)
GROUNDED = (
    "the answer was the agent's guess from before it read, which nothing it read shows; "
    "this is the value its own notes took from the page"
)
R = TypeVar("R")
#: the steps that return an output (every kind but an agent's message)
NOT_MESSAGES = ALL_KINDS - {"message"}


class RulePlugin(BaseSupervisor, Generic[R]):
    """One rule on the bus: its rule object per run (`_rule`), a `rule` trace event per
    firing, and its firings as stats (`{"rules": {name: n}}`, what every host sums)."""

    rule_name: ClassVar[str]
    #: the rule's class, made once per run from the settings and the run's book
    rule_type: ClassVar[type[Any]]
    actions = frozenset({"approve", "replace"})

    def __init__(self, settings: RuleSettings | None = None) -> None:
        self.settings = settings or RuleSettings()
        self.name = self.rule_name

    def _make(self, book: Book) -> R:
        """This rule's object for one run, writing its firings to `book`."""
        return cast(R, self.rule_type(self.settings, book))

    def _state(self, run: Run) -> tuple[R, Book]:
        def make() -> tuple[R, Book]:
            book = Book()
            return self._make(book), book

        return run.state(self, make)

    def _rule(self, run: Run) -> R:
        return self._state(run)[0]

    def _traced(self, run: Run, firing: RuleFiring) -> None:
        run.trace.event("rule", by=self.name, **vars(firing))  # the fields of RuleFiring (flat)

    def _refusal(self, run: Run, blocked: Blocked | None) -> Verdict | None:
        if blocked is None:
            return None
        f = blocked.firing
        self._traced(run, f)
        return Replace(blocked.note, f.rule, by=self.name, reason=f.detail)

    def stats(self, run: Run) -> dict[str, object]:
        """This rule's firings in `run` so far."""
        if not run.has_state(self):
            return {"rules": {}}
        return {"rules": dict(self._state(run)[1].counts)}

    async def on_run_end(self, run: Run, result: Any) -> None:
        run.plugin_stats[self.name] = self.stats(run)


class Purification(RulePlugin[PurifyRule]):
    """A tool output read as its text when it is HTML, and cut to the passages most relevant
    to the task when still too long (a rewrite: the chain goes on with the extract)."""

    rule_name = "purification"
    kinds = NOT_MESSAGES

    def __init__(
        self,
        settings: RuleSettings | None = None,
        *,
        embed: Embed | None = None,
    ) -> None:
        super().__init__(settings)
        self.embed = embed

    def _make(self, book: Book) -> PurifyRule:
        return PurifyRule(self.settings, book, self.embed)

    async def on_interaction(self, interaction: Interaction, run: Run) -> Verdict:
        step = step_of(interaction, run)
        task = interaction.local_task or interaction.global_task
        out, firing = self._rule(run).purify(step, task)
        if firing is None:
            return self._approval()
        self._traced(run, firing)
        return Replace(out, PURIFIED, by=self.name, reason="rules: purification", rewrite=True)


class Grounding(RulePlugin[GroundRule]):
    """An answer that is the agent's guess from before it read gets the value read."""

    rule_name = "grounding"
    rule_type = GroundRule

    async def before_tool(self, interaction: Interaction, run: Run) -> Verdict | None:
        step = step_of(interaction, run)
        self._rule(run).thought((step.agent, step.subtask), step.thought)
        return None

    async def on_interaction(self, interaction: Interaction, run: Run) -> Verdict:
        step = step_of(interaction, run)
        rule = self._rule(run)
        if interaction.kind != "message":
            rule.observed((step.agent, step.subtask), step.error or step.observation)
            return self._approval()
        got = rule.ground(step)
        if got is None:
            return self._approval()
        self._traced(run, got[1])
        why = "grounding (rules): the value the agent's notes took from what it read"
        return Replace(got[0], GROUNDED, by=self.name, reason=why, rewrite=True)


class Budget(RulePlugin[BudgetRule]):
    """Tokens and tool steps per (agent, subtask): a spent budget refuses the next call, and
    a booked model call past the token budget ends the agent's calls."""

    rule_name = "budget"
    rule_type = BudgetRule

    async def before_tool(self, interaction: Interaction, run: Run) -> Verdict | None:
        step, rule = step_of(interaction, run), self._rule(run)
        key = (step.agent, step.subtask)
        rule.charge(*key, interaction.usage.total_tokens)  # a spent budget refuses below
        rule.step(key)
        return self._refusal(run, rule.check(key))

    async def on_interaction(self, interaction: Interaction, run: Run) -> Verdict:
        if interaction.kind == "message":
            subtask = step_of(interaction, run).subtask
            self._rule(run).charge(interaction.agent, subtask, interaction.usage.total_tokens)
        return self._approval()

    async def on_model_call(self, agent: str, usage: Any, run: Run) -> Verdict | None:
        """A host's booked model call (a framework run's), charged to the agent's budget."""
        return self._refusal(run, self._rule(run).charge(agent, run.query, usage.total_tokens))


class LoopBreaker(RulePlugin[LoopRule]):
    """Identical calls past `loop_limit`, and calls of a tool whose recent outputs were one
    whatever the arguments, are refused before they run; the note says where the output is."""

    rule_name = "loop_breaker"
    rule_type = LoopRule

    async def before_tool(self, interaction: Interaction, run: Run) -> Verdict | None:
        step, rule = step_of(interaction, run), self._rule(run)
        blocked = rule.repeated(step) or rule.no_progress(step)
        if blocked is None:
            rule.let_run(step)
        return self._refusal(run, blocked)

    async def on_interaction(self, interaction: Interaction, run: Run) -> Verdict:
        if interaction.kind == "message":  # an answer; an unreadable reply was counted before
            return self._approval()
        raw = interaction.meta.get("raw_observation", interaction.observation)
        self._rule(run).ran(step_of(interaction, run), str(raw), interaction.observation)
        return self._approval()


class Masking(RulePlugin[MaskRule]):
    """Older tool outputs of an agent shown as one-line stubs; it keeps whole the extracts
    and the latest output of a call a refusal said is shown above."""

    rule_name = "masking"
    rule_type = MaskRule
    actions = frozenset({"approve"})

    def view_observations(
        self, agent: str, records: Sequence[ToolRecord], run: Run
    ) -> list[str] | None:
        if not self.settings.masking:
            return None
        pinned = {
            action_of(r) for r in records if r.text.startswith(NOTE_MARK) and SHOWN_ABOVE in r.text
        }
        kept = latest_of(records, pinned)
        rule, book = self._state(run)
        before = len(book.firings)
        texts = rule.mask(records, agent, f"round {run.round}", kept=kept, is_extract=_extract)
        for firing in book.firings[before:]:
            self._traced(run, firing)
        return texts


def _extract(text: str) -> bool:
    """Whether an agent was shown `text` as a purified extract (the bus's note after it)."""
    return f": {PURIFIED}]" in text


def rule_plugins(
    settings: RuleSettings | None = None,
    *,
    embed: Embed | None = None,
) -> list[RulePlugin[Any]]:
    """The rule tier as a chain: the plug-ins of the rules `settings` switch on, in the order
    a run asks them (purification, grounding, budget, loop breaker, masking)."""
    s = settings or RuleSettings()
    on = s.enabled()
    chain: list[RulePlugin[Any]] = []
    if "purification" in on:
        chain.append(Purification(s, embed=embed))
    if "grounding" in on:
        chain.append(Grounding(s))
    if "budget" in on:
        chain.append(Budget(s))
    if "loop_breaker" in on:
        chain.append(LoopBreaker(s))
    if "masking" in on:
        chain.append(Masking(s))
    return chain


def fired(plugin_stats: Mapping[str, Mapping[str, object]]) -> dict[str, int]:
    """Rule firings by rule, summed over the plug-ins' stats of a run (`RunResult.plugin_stats`,
    a framework run's `stats["plugins"]`): each rule plug-in reports its own."""
    out: Counter[str] = Counter()
    for got in plugin_stats.values():
        out.update(cast("Mapping[str, int]", got.get("rules") or {}))
    return dict(out)
