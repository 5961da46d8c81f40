"""The guard's small parts: argument text, sync runs of coroutines, the refusal settings and
stop, the placeholder model, model labels and the per-agent step book of a run."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Coroutine, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal, TypeVar

from overseer.models import Completion, Model, ModelError, Request, TokenLogprob, Usage
from overseer.runtime.steps import CLOSED_NOTE
from overseer.runtime.steps import closed_turn as _closed_turn

__all__ = [
    "CLOSED_NOTE",
    "NO_MODEL",
    "OnRefusals",
    "RunStopped",
    "StepBook",
    "args_text",
    "closed_turn",
    "model_label",
    "run_sync",
]

T = TypeVar("T")
#: after `answer_after_refusals` refused tool calls in a row: "answer" closes the agent's tools
#: for its next model call (as the runtime's agent does), "stop" ends the run
OnRefusals = Literal["answer", "stop"]


def closed_turn(task: str) -> str:
    """The user turn that closes an agent's tools in a framework run: the runtime's wording
    (`overseer.runtime.steps.closed_turn`), `task` restated, never appended to a tool output."""
    return _closed_turn(task)


class RunStopped(RuntimeError):
    """The guard ended the run (`on_refusals="stop"`): `stop_reason` names why for the trace."""

    def __init__(self, stop_reason: str, detail: str) -> None:
        super().__init__(f"run stopped ({stop_reason}): {detail}")
        self.stop_reason = stop_reason
        self.detail = detail


class _NoModel(Model):
    """The model of a run with no LLM tier: nothing may ask it (asking it is a bug, said loudly)."""

    name = "no-model"

    def _complete(self, request: Request) -> Completion:
        raise ModelError("no supervisor model: the LLM tier must not be asked")


NO_MODEL: Model = _NoModel()


def model_label(name: str) -> str:
    """A model's name as the books and spans show it: a GGUF file path (what llama.cpp's
    server reports) becomes its file stem, any other name stays."""
    if name.lower().endswith(".gguf"):
        return Path(name).stem
    return name


def args_text(args: object) -> str:
    """Tool arguments as the rules compare them: JSON text with sorted keys (a string is kept
    as given; what JSON cannot hold, as its text). The one writer for every adapter."""
    if args is None:
        return ""
    if isinstance(args, str):
        return args
    if isinstance(args, Mapping):
        args = dict(args)
    try:
        return json.dumps(args, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return str(args)


def run_sync(coro: Coroutine[Any, Any, T], runner: asyncio.Runner | None = None) -> T:
    """Run a coroutine from sync code, also when the caller already runs an event loop.
    `runner` (its loop kept between calls) saves the ~0.5 ms of a new loop per call."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return runner.run(coro) if runner is not None else asyncio.run(coro)
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


class StepBook:
    """A run's steps per agent, for its `interaction` events: the step counter, the model
    calls since the agent's last step (their usage, the last output); refusals in a row are
    the bus's (`Bus.refused`)."""

    def __init__(self) -> None:
        self.count: Counter[str] = Counter()
        self.usage: dict[str, Usage] = {}  # agent -> usage of its calls since its last step
        self.last_output: dict[str, str] = {}
        self.logprobs: dict[str, tuple[TokenLogprob, ...]] = {}  # agent -> its last call's

    def next(self, agent: str) -> int:
        self.count[agent] += 1
        return self.count[agent] - 1

    def booked(
        self, agent: str, usage: Usage, output: str, logprobs: Sequence[TokenLogprob] = ()
    ) -> None:
        self.usage[agent] = self.usage.get(agent, Usage()) + usage
        self.last_output[agent] = output
        self.logprobs[agent] = tuple(logprobs)

    def take_usage(self, agent: str) -> Usage:
        return self.usage.pop(agent, Usage())

    def open_agents(self) -> list[str]:
        """Agents whose last model call has no step yet (their answer)."""
        return list(self.usage)
