"""What the smolagents callback costs: tokens and time, with no rule firing and with them.

A smolagents ToolCallingAgent runs each scenario twice on a scripted smolagents model (no
model is loaded; its prompt tokens are the characters of the messages it is sent / 4), without
and with `OverseerSupervisor(mode="rules")` attached:

- `clean`: six different lookups with short, different answers, then the final answer: no
  rule can fire, so the callback must cost no token and only its own run time;
- `text-calls`: the model writes its tool call as text smolagents cannot parse, every step
  (the small-model case of issue 31): the loop breaker counts the same unparsable reply, and
  two refusals in a row send the agent to its final answer;
- `loop`: the same lookup again and again: refused repeats, then the final answer.

    python benchmarks/smolagents_callback.py [--repeats 20] [--max-steps 12]

Times are medians over `--repeats` runs (one core, no model time): `ms / run` of the whole
`agent.run` (noisy: smolagents renders its prompts), and `callback / step`, the time spent in
overseer's hooks (the step callback, the gate before each tool call, the run hooks) divided by
the steps, timed inside them.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.table import Table
from smolagents import ToolCallingAgent, tool
from smolagents.models import ChatMessage, ChatMessageToolCall, ChatMessageToolCallFunction
from smolagents.models import Model as SmolModel
from smolagents.monitoring import TokenUsage

from overseer.integrations.smolagents import OverseerSupervisor

TASK = "What do the six sensors of hall 4 read?"


@tool
def lookup(q: str) -> str:
    """Read one sensor.

    Args:
        q: the sensor's number
    """
    return f"sensor {q}: {17 + len(q) * 3} C"


Reply = Callable[[int], Any]  # request number (from 0) -> (tool, args) or text


def clean(n: int) -> Any:
    return ("lookup", {"q": str(n + 1)}) if n < 6 else ("final_answer", {"answer": "17-20 C"})


def text_calls(n: int) -> Any:
    return 'I will now call lookup with {"q": "1"} to read the sensor.'


def loop(n: int) -> Any:
    return ("lookup", {"q": "1"})


SCENARIOS: dict[str, Reply] = {"clean": clean, "text-calls": text_calls, "loop": loop}


class Scripted(SmolModel):
    """Replies from a script; prompt tokens = characters of the messages / 4."""

    def __init__(self, reply: Reply) -> None:
        super().__init__(model_id="scripted")
        self.reply = reply
        self.prompt_tokens = 0
        self.calls = 0

    def generate(self, messages: list[Any], **kwargs: Any) -> ChatMessage:
        text = json.dumps([m.dict() if hasattr(m, "dict") else str(m) for m in messages])
        tokens = -(-len(text) // 4)
        self.prompt_tokens += tokens
        usage = TokenUsage(input_tokens=tokens, output_tokens=5)
        got = self.reply(self.calls) if kwargs.get("tools_to_call_from") else "17-20 C"
        self.calls += 1
        if isinstance(got, str):
            return ChatMessage(role="assistant", content=got, token_usage=usage)
        fn = ChatMessageToolCallFunction(name=got[0], arguments=got[1])
        call = ChatMessageToolCall(id=f"c{self.calls}", type="function", function=fn)
        return ChatMessage(role="assistant", content="", tool_calls=[call], token_usage=usage)


class Timed(OverseerSupervisor):
    """The supervisor with the time spent in its hooks added up (`spent`, seconds)."""

    spent = 0.0

    def __call__(self, memory_step: Any, agent: Any = None) -> None:
        start = time.perf_counter()
        try:
            super().__call__(memory_step, agent)
        finally:
            self.spent += time.perf_counter() - start

    def gate(self, agent: Any, tool: str, args: str, code: str) -> str | None:
        start = time.perf_counter()
        try:
            return super().gate(agent, tool, args, code)
        finally:
            self.spent += time.perf_counter() - start

    def run_started(self, agent: Any, max_steps: int | None, task: str = "") -> None:
        start = time.perf_counter()
        super().run_started(agent, max_steps, task)
        self.spent += time.perf_counter() - start

    def run_ended(
        self, agent: Any, error: BaseException | None = None, answer: object = None
    ) -> None:
        start = time.perf_counter()
        super().run_ended(agent, error, answer)
        self.spent += time.perf_counter() - start


@dataclass(frozen=True)
class Run:
    """One configuration of one scenario: what the model was sent, what fired, how long."""

    calls: int
    steps: int
    prompt_tokens: int
    firings: int
    seconds: float  # wall time of one agent.run (median in `measure`)
    hooks: float  # of it, the time in overseer's hooks


#: configurations: without the callback, with it, with it but no escalation after refusals
CONFIGS = {"without": None, "with": 2, "with, no escalation": 0}


def _once(reply: Reply, escalate: int | None, max_steps: int) -> Run:
    model = Scripted(reply)
    agent = ToolCallingAgent(tools=[lookup], model=model, max_steps=max_steps, verbosity_level=-1)
    sup = None if escalate is None else Timed(mode="rules", answer_after_refusals=escalate)
    if sup is not None:
        sup.attach(agent)
    start = time.perf_counter()
    agent.run(TASK)
    took = time.perf_counter() - start
    fired = 0
    if sup is not None:
        fired = sum(dict(sup.stats.get("rules") or {}).values()) + sup.escalations
    steps = sum(1 for s in agent.memory.steps if type(s).__name__ == "ActionStep")
    spent = sup.spent if sup is not None else 0.0
    return Run(model.calls, steps, model.prompt_tokens, fired, took, spent)


def measure(reply: Reply, escalate: int | None, repeats: int, max_steps: int) -> Run:
    """The run's counts (the same every time: the script is deterministic), median times."""
    first = _once(reply, escalate, max_steps)  # warm-up (imports, first prompt render)
    runs = [_once(reply, escalate, max_steps) for _ in range(repeats)]
    secs = statistics.median(r.seconds for r in runs)
    hooks = statistics.median(r.hooks for r in runs)
    return Run(first.calls, first.steps, first.prompt_tokens, first.firings, secs, hooks)


def table(repeats: int, max_steps: int) -> Table:
    t = Table(title=f"smolagents callback (mode rules), median of {repeats} runs, one core")
    for col in ("scenario", "callback", "rule firings", "model calls", "steps"):
        t.add_column(col)
    for col in ("prompt tokens", "vs without", "ms / run", "callback / step"):
        t.add_column(col, justify="right")
    for name, reply in SCENARIOS.items():
        runs = {label: measure(reply, n, repeats, max_steps) for label, n in CONFIGS.items()}
        plain = runs["without"]
        for label, r in runs.items():
            ratio = r.prompt_tokens / plain.prompt_tokens if plain.prompt_tokens else 0.0
            t.add_row(
                name, label, str(r.firings), str(r.calls), str(r.steps), f"{r.prompt_tokens:,}",
                "" if r is plain else f"{ratio:.3f}x", f"{r.seconds * 1e3:.2f}",
                "" if r is plain else f"{r.hooks / max(r.steps, 1) * 1e6:.0f} us",
            )  # fmt: skip
    return t


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=20, help="timed runs per configuration")
    ap.add_argument("--max-steps", type=int, default=12, help="the agent's step limit")
    args = ap.parse_args(argv)
    if args.repeats < 1 or args.max_steps < 2:
        ap.error("--repeats: expected >= 1; --max-steps: expected >= 2")
    Console(width=160).print(table(args.repeats, args.max_steps))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
