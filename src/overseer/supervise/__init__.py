"""SupervisorAgent (seed "Stop Wasting Your Tokens"): an LLM-free filter flags risky steps,
an LLM supervisor approves, guides, corrects the observation or runs a verifier.

Exported is what a user needs to attach the supervisor (`SupervisorAgent`, `SupervisorSettings`,
`tool_verifier`), drive it from another framework (`SupervisorCore`, `Step`, `Review`,
`SupervisorStats`, and `verdict_of`, which turns a review into the bus's verdict), tune its
filter (`FilterConfig`, `FILTER_PRESETS`, `preset`, `STRATEGIES`) and script its decisions in
tests and examples (`reply_template`, a well-formed decision reply). The LLM-free filter is
usable alone from its own module, `overseer.supervise.filters` (`classify`, `StepHistory`,
`Trigger`, `Context`); the LLM-free rule tier (loop breaker, masking, extractive
purification, budgets, grounding), one bus plug-in per rule, from `overseer.supervise.rules`
(`rule_plugins`, `RuleSettings`, `extract`). Prompts, the decision call and the context
window are internals of the private modules; the modes (`supervision_plugins`, a mode's
chain: the rules, then this LLM tier) are in `overseer.supervise.modes`; bench
configurations in `overseer.experiments.supervise`.
"""

from overseer.supervise._core import (
    STRATEGIES,
    Review,
    SupervisorCore,
    SupervisorSettings,
    SupervisorStats,
)
from overseer.supervise._decide import reply_template
from overseer.supervise._supervisor import SupervisorAgent, tool_verifier, verdict_of
from overseer.supervise.filters import FILTER_PRESETS, FilterConfig, Step, preset

__all__ = [
    "FILTER_PRESETS",
    "STRATEGIES",
    "FilterConfig",
    "Review",
    "Step",
    "SupervisorAgent",
    "SupervisorCore",
    "SupervisorSettings",
    "SupervisorStats",
    "preset",
    "reply_template",
    "tool_verifier",
    "verdict_of",
]
