"""How the smolagents callback reads an ActionStep: the action it tried (also when it failed
before smolagents recorded it), its observation, and where smolagents' monitor counts tokens.

smolagents sets `step.tool_calls` only after every call of the step ran without an error, so
an unknown tool or a tool that raised leaves it unset; the call is still in the model's reply
(`model_output_message.tool_calls`). A reply with no parsable call has only its text.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from smolagents.memory import ActionStep
from smolagents.models import ChatMessage
from smolagents.monitoring import TokenUsage
from smolagents.utils import AgentParsingError

from overseer.integrations._parts import args_text
from overseer.models import Usage
from overseer.supervise import Step
from overseer.supervise.rules import ToolRecord

#: the tool name given to a reply that held no parsable call (its text is the arguments)
UNPARSED = "unparsed_reply"
#: smolagents' tool name for a CodeAgent's code action
CODE_TOOL = "python_interpreter"


def _reply_call(message: ChatMessage | None) -> tuple[str, Any] | None:
    """The first tool call of the model's reply, when it named one."""
    calls = message.tool_calls if message is not None else None
    if not calls:
        return None
    return calls[0].function.name, calls[0].function.arguments


def attempted_call(memory_step: ActionStep) -> tuple[str | None, str, str]:
    """(tool, args, code) the step tried: the recorded call, else the one in the model's
    reply, else for a reply smolagents could not parse its text under `UNPARSED`."""
    code = memory_step.code_action or ""
    if memory_step.tool_calls:
        first = memory_step.tool_calls[0]
        args = "" if first.name == CODE_TOOL and code else args_text(first.arguments)
        return first.name, args, code
    call = _reply_call(memory_step.model_output_message)
    if call is not None:
        return call[0], args_text(call[1]), code
    if isinstance(memory_step.error, AgentParsingError):
        return UNPARSED, " ".join(args_text(memory_step.model_output).split())[:2000], ""
    return None, "", code


def unexecuted(memory_step: ActionStep) -> bool:
    """Whether the step's action never reached a tool (smolagents could not parse it)."""
    return isinstance(memory_step.error, AgentParsingError)


def step_from_smolagents(memory_step: ActionStep, agent_name: str, subtask: str) -> Step:
    """The overseer view of one smolagents ActionStep (the call it tried, code, output, error)."""
    tool, args, code = attempted_call(memory_step)
    error = str(memory_step.error) if memory_step.error is not None else None
    return Step(
        agent=agent_name,
        subtask=subtask,
        kind="tool" if tool is not None else "message",
        tool=tool,
        args=args,
        code=code,
        observation=memory_step.observations or "",
        error=error,
        thought=args_text(memory_step.model_output),
    )


def monitor_counts_after(agent: Any, callback: object) -> bool:
    """Whether the agent's monitor reads a step after `callback` edits it (registered later:
    `step_callbacks=[sup]` puts `sup` first, `attach()` on a built agent after the monitor)."""
    metrics = getattr(getattr(agent, "monitor", None), "update_metrics", None)
    order = getattr(getattr(agent, "step_callbacks", None), "_callbacks", {}).get(ActionStep, [])
    mine = next((i for i, cb in enumerate(order) if cb is callback), None)
    theirs = next((i for i, cb in enumerate(order) if metrics and cb == metrics), None)
    return mine is not None and theirs is not None and mine < theirs


def book_tokens(memory_step: ActionStep, used: Usage, agent: Any, callback: object) -> None:
    """Add the supervisor's tokens to the step, and once to smolagents' totals."""
    if not used.prompt_tokens and not used.completion_tokens:
        return
    before = memory_step.token_usage
    memory_step.token_usage = TokenUsage(
        input_tokens=(before.input_tokens if before else 0) + used.prompt_tokens,
        output_tokens=(before.output_tokens if before else 0) + used.completion_tokens,
    )
    monitor = getattr(agent, "monitor", None)
    if monitor is not None and not monitor_counts_after(agent, callback):
        monitor.total_input_token_count += used.prompt_tokens
        monitor.total_output_token_count += used.completion_tokens


def mask_memory(
    view: Callable[[str, Sequence[ToolRecord]], list[str]],
    agent: Any,
    current: ActionStep,
    name: str,
    originals: dict[int, ToolRecord],
) -> None:
    """One agent's memory as the bus shows it (`view`: the run's `model_input`, where the
    plug-ins mask older observations as one-line stubs; the current step is not yet in
    `agent.memory`). `originals` keeps each step's unmasked record, so a step is recorded,
    and a masking counted, once."""
    steps = [
        s for s in getattr(getattr(agent, "memory", None), "steps", []) if isinstance(s, ActionStep)
    ]
    if not any(s is current for s in steps):
        steps.append(current)
    owners, records = [], []
    for s in steps:
        if s.observations is None or s.is_final_answer:
            continue
        if id(s) not in originals:
            tool, args, code = attempted_call(s)
            originals[id(s)] = ToolRecord(tool or "step", args or code, s.observations)
        owners.append(s)
        records.append(originals[id(s)])
    for s, text in zip(owners, view(name, records), strict=True):
        if s.observations != text:
            s.observations = text
