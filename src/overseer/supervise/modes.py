"""The supervision modes, by name: which plug-ins a run's chain gets.

`llm` (the seed: the LLM-free filter, then the LLM supervisor), `rules` (the rule tier's
plug-ins alone, no LLM), `rules+llm` (the rules first, then the LLM tier on what they leave),
`learned` (the rules, then the LLM tier behind the learned trigger of
`overseer.supervise.learned`). `supervision_plugins` builds a mode's chain, the one every
host takes (the bench, the CLI, the framework adapters, the proxy); `mode_settings` gives its
LLM tier's settings.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from overseer.runtime import Supervisor
from overseer.supervise._core import SupervisorSettings
from overseer.supervise._extract import Embed
from overseer.supervise._supervisor import SupervisorAgent
from overseer.supervise.learned import DEFAULT_TRIGGER, load_trigger
from overseer.supervise.rules import RuleSettings, rule_plugins


@dataclass(frozen=True)
class Mode:
    """What a mode runs: the rule tier's plug-ins, the LLM tier, the learned trigger."""

    rule_tier: bool
    llm: bool
    learned: bool
    what: str


MODES: dict[str, Mode] = {
    "llm": Mode(False, True, False, "the seed: LLM-free filter, then the LLM supervisor"),
    "rules": Mode(
        True,
        False,
        False,
        "rule tier only (loop breaker, masking, extractive purification, budgets), no LLM",
    ),
    "rules+llm": Mode(
        True, True, False, "rule tier first; the LLM supervisor only on what the rules leave"
    ),
    "learned": Mode(
        True,
        True,
        True,
        "rule tier, then the learned trigger; the LLM only where it predicts an intervention",
    ),
}
#: The modes `mode_settings` knows, in the order error messages list them.
SUPERVISE_MODES: tuple[str, ...] = tuple(MODES)


def mode_of(mode: str) -> Mode:
    """The mode named `mode`; an unknown one names the known ones."""
    if mode not in MODES:
        known = ", ".join(MODES)
        raise ValueError(f"supervision mode {mode!r} is unknown; expected one of: {known}")
    return MODES[mode]


def mode_settings(
    mode: str,
    *,
    base: SupervisorSettings | None = None,
    rules: RuleSettings | None = None,
    verifier: bool = True,
) -> SupervisorSettings | None:
    """The LLM tier's settings in `mode` (None: the mode has no LLM tier); with the rules
    before it, it knows them (it leaves loops to the loop breaker)."""
    m = mode_of(mode)
    if not m.llm:
        return None
    s = replace(base or SupervisorSettings(), verify=verifier)
    if m.rule_tier:
        s = replace(s, rules=rules or RuleSettings())
    if m.learned:
        s = replace(s, learned=s.learned or load_trigger(DEFAULT_TRIGGER))
    return s


def supervision_plugins(
    mode: str,
    *,
    supervisor_model: object | None = None,
    base: SupervisorSettings | None = None,
    rules: RuleSettings | None = None,
    verifier: bool = True,
    embed: Embed | None = None,
    name: str = "supervisor",
) -> list[Supervisor]:
    """The chain of `mode` for one run, in the order it is asked: the rule tier's plug-ins
    (`rule_plugins`), then the SupervisorAgent named `name` (the LLM tier, on
    `supervisor_model`, None: the run's model)."""
    m = mode_of(mode)
    chain: list[Supervisor] = list(rule_plugins(rules, embed=embed)) if m.rule_tier else []
    settings = mode_settings(mode, base=base, rules=rules, verifier=verifier)
    if settings is not None:
        agent = SupervisorAgent(supervisor_model, settings, name=name, embed=embed)  # type: ignore[arg-type]
        chain.append(agent)
    return chain
