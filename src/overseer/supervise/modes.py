"""The supervision modes: which tiers of the SupervisorAgent run, by name.

`llm` (the seed: the LLM-free filter, then the LLM supervisor), `rules` (the rule tier alone,
no LLM), `rules+llm` (rules first, the LLM on what they cannot settle), `learned` (rules, then
the learned trigger of `overseer.supervise.learned`, then the LLM). New modes are rows of
`MODES`; `mode_settings` turns a mode into the SupervisorSettings every host uses (the bench's
plug-in, the framework integrations).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from overseer.supervise._core import SupervisorSettings
from overseer.supervise.learned import DEFAULT_TRIGGER, load_trigger
from overseer.supervise.rules import RuleSettings

#: mode -> (settings of that mode from base settings and rule settings, what it is)
ModeFn = Callable[[SupervisorSettings, RuleSettings], SupervisorSettings]
MODES: dict[str, tuple[ModeFn, str]] = {
    "llm": (lambda s, r: s, "the seed: LLM-free filter, then the LLM supervisor"),
    "rules": (
        lambda s, r: replace(s, rules=r, llm=False),
        "rule tier only (loop breaker, masking, extractive purification, budgets), no LLM",
    ),
    "rules+llm": (
        lambda s, r: replace(s, rules=r),
        "rule tier first; the LLM supervisor only on what the rules cannot settle",
    ),
    "learned": (
        lambda s, r: replace(s, rules=r, learned=s.learned or load_trigger(DEFAULT_TRIGGER)),
        "rule tier, then the learned trigger; the LLM only where it predicts an intervention",
    ),
}
#: The modes `mode_settings` knows, in the order error messages list them.
SUPERVISE_MODES: tuple[str, ...] = tuple(MODES)


def mode_settings(
    mode: str,
    *,
    base: SupervisorSettings | None = None,
    rules: RuleSettings | None = None,
    verifier: bool = True,
) -> SupervisorSettings:
    """The SupervisorSettings of a mode; an unknown mode names the known ones."""
    try:
        make, _ = MODES[mode]
    except KeyError:
        raise ValueError(
            f"supervision mode {mode!r} is unknown; expected one of: {', '.join(MODES)}"
        ) from None
    settings = replace(base or SupervisorSettings(), verify=verifier)
    return make(settings, rules or RuleSettings())
