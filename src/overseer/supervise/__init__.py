"""SupervisorAgent (seed "Stop Wasting Your Tokens"): an LLM-free filter flags risky steps,
an LLM supervisor approves, guides, corrects the observation or runs a verifier.

Exported is what a user needs to attach the supervisor (`SupervisorAgent`, `SupervisorSettings`,
`tool_verifier`), drive it from another framework (`SupervisorCore`, `Step`, `Review`,
`SupervisorStats`) and tune its filter (`FilterConfig`, `FILTER_PRESETS`, `preset`, `classify`,
`StepHistory`, `Trigger`, `Context`, `STRATEGIES`). Prompts, the decision call and the context
window are internals of the private modules; ready-made configurations are in
`overseer.supervise.configs`.
"""

from overseer.supervise._core import (
    STRATEGIES,
    Review,
    SupervisorCore,
    SupervisorSettings,
    SupervisorStats,
)
from overseer.supervise._filter import (
    FILTER_PRESETS,
    Context,
    FilterConfig,
    Step,
    StepHistory,
    Trigger,
    classify,
    preset,
)
from overseer.supervise._supervisor import SupervisorAgent, tool_verifier

__all__ = [
    "FILTER_PRESETS",
    "STRATEGIES",
    "Context",
    "FilterConfig",
    "Review",
    "Step",
    "StepHistory",
    "SupervisorAgent",
    "SupervisorCore",
    "SupervisorSettings",
    "SupervisorStats",
    "Trigger",
    "classify",
    "preset",
    "tool_verifier",
]
