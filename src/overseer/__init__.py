"""overseer: cut what LLM agents waste at run time (noisy tool output, loops, budgets).

Exported is the face a user needs, importable from `overseer` itself: run a team
(`Executor`, `TeamSpec`, `AgentSpec`, `make_team`, `Budget`, `RunResult`, `read_trace`), give
it tools (`Tool`, `ToolResult`), get a model (`load_model`, `Model`, `ScriptedModel`,
`Usage`), configure overseer once for every host (`GuardSettings`, `RuleSettings`,
`SupervisorSettings`), write a plug-in or a rule of your own (`BaseSupervisor`, `Supervisor`,
`Interaction`, `Verdict`, `Approve`, `Guide`, `Replace`), and put the SupervisorAgent or the
proxy in front of your agents (`SupervisorAgent`, `Proxy`, `ProxySettings`). The framework
adapters live in `overseer.integrations.<framework>` (each needs its extra).

Names load on first use, so `import overseer` (and the CLI's `--help`) stays fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from overseer._lazy import lazy_exports

#: each exported name -> the module that defines it
_HOME = {
    "AgentSpec": "overseer.runtime",
    "Approve": "overseer.runtime.verdicts",
    "BaseSupervisor": "overseer.runtime",
    "Budget": "overseer.runtime",
    "Executor": "overseer.runtime",
    "Guide": "overseer.runtime.verdicts",
    "GuardSettings": "overseer.integrations.guard",
    "Interaction": "overseer.runtime",
    "Model": "overseer.models",
    "Proxy": "overseer.proxy",
    "ProxySettings": "overseer.proxy",
    "Replace": "overseer.runtime.verdicts",
    "RuleSettings": "overseer.supervise.rules",
    "RunResult": "overseer.runtime",
    "ScriptedModel": "overseer.models",
    "Supervisor": "overseer.runtime",
    "SupervisorAgent": "overseer.supervise",
    "SupervisorSettings": "overseer.supervise",
    "TeamSpec": "overseer.runtime",
    "Tool": "overseer.runtime",
    "ToolResult": "overseer.runtime",
    "Usage": "overseer.models",
    "Verdict": "overseer.runtime",
    "load_model": "overseer.models",
    "make_team": "overseer.runtime",
    "read_trace": "overseer.runtime",
}
__all__ = [
    "AgentSpec",
    "Approve",
    "BaseSupervisor",
    "Budget",
    "Executor",
    "GuardSettings",
    "Guide",
    "Interaction",
    "Model",
    "Proxy",
    "ProxySettings",
    "Replace",
    "RuleSettings",
    "RunResult",
    "ScriptedModel",
    "Supervisor",
    "SupervisorAgent",
    "SupervisorSettings",
    "TeamSpec",
    "Tool",
    "ToolResult",
    "Usage",
    "Verdict",
    "load_model",
    "make_team",
    "read_trace",
]


__getattr__, __dir__ = lazy_exports(__name__, _HOME)  # each name loaded on first use


if TYPE_CHECKING:
    from overseer.integrations.guard import GuardSettings
    from overseer.models import Model, ScriptedModel, Usage, load_model
    from overseer.proxy import Proxy, ProxySettings
    from overseer.runtime import (
        AgentSpec,
        BaseSupervisor,
        Budget,
        Executor,
        Interaction,
        RunResult,
        Supervisor,
        TeamSpec,
        Tool,
        ToolResult,
        Verdict,
        make_team,
        read_trace,
    )
    from overseer.runtime.verdicts import Approve, Guide, Replace
    from overseer.supervise import SupervisorAgent, SupervisorSettings
    from overseer.supervise.rules import RuleSettings
