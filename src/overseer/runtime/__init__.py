"""The agent runtime: teams on a spatial-temporal graph, the Executor, the bus, ledger and trace.

Exported is what a user needs to build a team (`TeamSpec`, `AgentSpec`, `make_team`, `PRESETS`),
run it (`Executor`, `Budget`, `Run`, `RunResult`, `Ledger`), write a plug-in (`Supervisor`,
`BaseSupervisor`, `Interaction`, `Verdict`), give agents tools (`Tool`, `ToolResult`,
`PythonTool`, `MemoryTool`) and read what happened (`read_trace`). Internals (the bus, the agent
step, channel, game session, trace events) stay in the private `_x` modules, where other overseer
packages and the tests import them from.
"""

from overseer.runtime._bus import UnsupportedVerdictError
from overseer.runtime._executor import Executor
from overseer.runtime._interaction import BaseSupervisor, Interaction, Supervisor, Verdict
from overseer.runtime._ledger import Budget, Ledger
from overseer.runtime._presets import PRESETS, make_team
from overseer.runtime._run import Run, RunResult
from overseer.runtime._spec import AgentSpec, TeamSpec, TeamSpecError
from overseer.runtime._tools import MemoryTool, PythonTool, Tool, ToolResult
from overseer.runtime._trace import read_trace

__all__ = [
    "PRESETS",
    "AgentSpec",
    "BaseSupervisor",
    "Budget",
    "Executor",
    "Interaction",
    "Ledger",
    "MemoryTool",
    "PythonTool",
    "Run",
    "RunResult",
    "Supervisor",
    "TeamSpec",
    "TeamSpecError",
    "Tool",
    "ToolResult",
    "UnsupportedVerdictError",
    "Verdict",
    "make_team",
    "read_trace",
]
