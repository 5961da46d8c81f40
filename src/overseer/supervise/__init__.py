"""SupervisorAgent (seed "Stop Wasting Your Tokens"): an LLM-free filter flags risky steps,
an LLM supervisor approves, guides, corrects the observation or runs a verifier."""

from overseer.supervise._context import ContextWindow, WindowBounds, build_window, clip
from overseer.supervise._core import (
    STRATEGIES,
    Review,
    SupervisorCore,
    SupervisorSettings,
    SupervisorStats,
)
from overseer.supervise._decide import Decision, check_reply, decide, reply_template
from overseer.supervise._filter import (
    CONTEXTS,
    PRESETS,
    Context,
    FilterConfig,
    Step,
    StepHistory,
    Trigger,
    classify,
    normalize_action,
    preset,
)
from overseer.supervise._prompts import ALLOWED, Action, decision_schema, system_prompt
from overseer.supervise._supervisor import SupervisorAgent, step_of, tool_verifier

__all__ = [
    "ALLOWED",
    "CONTEXTS",
    "PRESETS",
    "STRATEGIES",
    "Action",
    "Context",
    "ContextWindow",
    "Decision",
    "FilterConfig",
    "Review",
    "Step",
    "StepHistory",
    "SupervisorAgent",
    "SupervisorCore",
    "SupervisorSettings",
    "SupervisorStats",
    "Trigger",
    "WindowBounds",
    "build_window",
    "check_reply",
    "classify",
    "clip",
    "decide",
    "decision_schema",
    "normalize_action",
    "preset",
    "reply_template",
    "step_of",
    "system_prompt",
    "tool_verifier",
]
