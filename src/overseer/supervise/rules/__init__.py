"""The rule tier (issue 18): cheap, LLM-free rules that act first, one bus plug-in per rule.

- `loop_breaker`: an identical action (tool + normalised arguments, or the same code) of one
  agent in one sub-task runs at most `loop_limit` times, and a tool whose last
  `progress_limit` calls returned the same output with changing arguments (a progress-free
  loop, such as a pager that always answers "not here") is not run again; the refusal says
  what is true (where the earlier output is, or what it was);
- `masking`: an output repeated later is hidden at once (the later copy stays); other tool
  observations older than an agent's last `mask_keep` become one-line stubs, except a
  purified extract (the only copy of what purification kept for the task);
- `purification`: an HTML observation is read as its text (`strip_markup`), a page still
  longer than `page_over` chars or any observation longer than `purify_over` is cut
  extractively (`extract`: verbatim passages most relevant to the task, one closing note);
- `budget`: tokens and tool steps per (agent, sub-task);
- `grounding`: an answer that is the agent's guess from before it read anything, which no
  observation it was shown holds, is given the value its notes since reading took from a
  page (`_grounding`: the one pattern it acts on).

On a run: `rule_plugins(RuleSettings(...))`, the chain every host takes (`plugins`). Offline,
on `Step`s: `RuleTier` (the replay of imported trajectories).
"""

from overseer.runtime.steps import ToolRecord
from overseer.supervise._extract import extract
from overseer.supervise.rules._base import (
    RULES,
    Blocked,
    RuleFiring,
    RuleName,
    RuleSettings,
    mask_stub,
)
from overseer.supervise.rules._tier import RuleTier
from overseer.supervise.rules.plugins import (
    Budget,
    Grounding,
    LoopBreaker,
    Masking,
    Purification,
    RulePlugin,
    fired,
    rule_plugins,
)

__all__ = [
    "RULES",
    "Blocked",
    "Budget",
    "Grounding",
    "LoopBreaker",
    "Masking",
    "Purification",
    "RuleFiring",
    "RuleName",
    "RulePlugin",
    "RuleSettings",
    "RuleTier",
    "ToolRecord",
    "extract",
    "fired",
    "mask_stub",
    "rule_plugins",
]
