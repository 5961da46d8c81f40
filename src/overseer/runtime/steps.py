"""The agent step and what is recorded of it, for plug-ins and hosts that look closer than
`Interaction`: the ReAct agent and its context, tool records, the interaction kinds, step
observers (live progress), the bus's verifier type and the default answer extractor."""

from overseer.runtime._agent import Agent, AgentContext, AgentStepError
from overseer.runtime._bus import Verifier
from overseer.runtime._executor import last_line
from overseer.runtime._interaction import ALL_KINDS, InteractionKind, ToolRecord
from overseer.runtime._observer import StepObserver, StepReport
from overseer.runtime._turns import (
    CLOSED_NOTE,
    CLOSED_WORDINGS,
    COPIED_NOTE,
    LAST_NOTE,
    NOT_FOUND_ANSWER,
    REPEATED_NOTE,
    TurnPolicy,
    closed_turn,
    closing_turn,
    copies_note,
    repeats_output,
)
from overseer.runtime._values import (
    NUMBER,
    fact_numbers,
    numbers_in,
    question_names,
    supported_numbers,
)

__all__ = [
    "ALL_KINDS",
    "CLOSED_NOTE",
    "CLOSED_WORDINGS",
    "COPIED_NOTE",
    "LAST_NOTE",
    "NOT_FOUND_ANSWER",
    "NUMBER",
    "REPEATED_NOTE",
    "Agent",
    "AgentContext",
    "AgentStepError",
    "InteractionKind",
    "StepObserver",
    "StepReport",
    "ToolRecord",
    "TurnPolicy",
    "Verifier",
    "closed_turn",
    "closing_turn",
    "copies_note",
    "fact_numbers",
    "last_line",
    "numbers_in",
    "question_names",
    "repeats_output",
    "supported_numbers",
]
