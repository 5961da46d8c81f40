"""The agent runtime: teams on a spatial-temporal graph, the Executor, the bus, ledger and trace."""

from overseer.runtime._agent import Agent, AgentContext, AgentStepError, action_schema
from overseer.runtime._bus import Bus, Outcome, SupervisorChain, UnsupportedVerdictError
from overseer.runtime._channel import Channel, ChannelMessage
from overseer.runtime._events import describe_event
from overseer.runtime._executor import Executor, TeamBuilder, last_line
from overseer.runtime._game import GAME_HONOURS, GameSession, Played, Turn
from overseer.runtime._interaction import (
    ALL_ACTIONS,
    ALL_KINDS,
    BaseSupervisor,
    Interaction,
    Supervisor,
    Verdict,
)
from overseer.runtime._ledger import Budget, BudgetExceeded, Ledger, LedgerEntry, MeteredModel
from overseer.runtime._presets import PRESETS, ROLE_POOLS, make_team, spatial_edges
from overseer.runtime._run import AgentFailure, Run, RunResult, open_run
from overseer.runtime._spec import AgentSpec, TeamSpec, TeamSpecError, topological_order
from overseer.runtime._tools import (
    KeywordMemory,
    Memory,
    MemoryTool,
    PythonTool,
    Tool,
    ToolResult,
)
from overseer.runtime._trace import TRACE_VERSION, Trace, read_trace

__all__ = [
    "ALL_ACTIONS",
    "ALL_KINDS",
    "GAME_HONOURS",
    "PRESETS",
    "ROLE_POOLS",
    "TRACE_VERSION",
    "Agent",
    "AgentContext",
    "AgentFailure",
    "AgentSpec",
    "AgentStepError",
    "BaseSupervisor",
    "Budget",
    "BudgetExceeded",
    "Bus",
    "Channel",
    "ChannelMessage",
    "Executor",
    "GameSession",
    "Interaction",
    "KeywordMemory",
    "Ledger",
    "LedgerEntry",
    "Memory",
    "MemoryTool",
    "MeteredModel",
    "Outcome",
    "Played",
    "PythonTool",
    "Run",
    "RunResult",
    "Supervisor",
    "SupervisorChain",
    "TeamBuilder",
    "TeamSpec",
    "TeamSpecError",
    "Tool",
    "ToolResult",
    "Trace",
    "Turn",
    "UnsupportedVerdictError",
    "Verdict",
    "action_schema",
    "describe_event",
    "last_line",
    "make_team",
    "open_run",
    "read_trace",
    "spatial_edges",
    "topological_order",
]
