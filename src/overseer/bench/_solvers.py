"""What the runner runs: solver configurations, and the single-call `direct` baseline."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field

from overseer.models import Message, Model, Usage
from overseer.tasks import Task


@dataclass(frozen=True)
class SolverOutput:
    """A solver's answer with the tokens each actor spent (keys like `agent:solver`).

    A solver that fails part-way returns what it spent with `error` set, rather than raising,
    so the tokens are not lost from the books.
    """

    answer: str
    usage_by_actor: Mapping[str, Usage]
    error: str | None = None
    extra: Mapping[str, object] = field(default_factory=dict)


Solver = Callable[[Task, int], Awaitable[SolverOutput]]


@dataclass(frozen=True)
class SolverConfig:
    """A named way of solving tasks with a model: `build(model)` gives the solver."""

    name: str
    description: str
    build: Callable[[Model], Solver]


class ConfigRegistry:
    """The configurations `overseer bench --configs` can name; plug-ins add theirs."""

    def __init__(self, configs: Iterable[SolverConfig] = ()) -> None:
        self._configs: dict[str, SolverConfig] = {}
        for c in configs:
            self.add(c)

    def add(self, config: SolverConfig) -> None:
        if config.name in self._configs:
            raise ValueError(f"configuration {config.name!r} is already registered")
        self._configs[config.name] = config

    def names(self) -> list[str]:
        return list(self._configs)

    def get(self, name: str) -> SolverConfig:
        try:
            return self._configs[name]
        except KeyError:
            raise ValueError(
                f"unknown configuration {name!r}; expected one of: {', '.join(self._configs)}"
            ) from None

    def resolve(self, names: Iterable[str]) -> list[SolverConfig]:
        """The configurations for a list of names, unknown or repeated names rejected."""
        out, seen = [], set()
        for n in names:
            if n in seen:
                raise ValueError(f"configuration {n!r} is named twice")
            seen.add(n)
            out.append(self.get(n))
        if not out:
            raise ValueError("no configuration named; expected at least one")
        return out


_INSTRUCTIONS = {
    "mc": (
        "Answer the multiple-choice question. Think briefly, then finish with a line "
        "'Answer: X' where X is the letter of your choice."
    ),
    "numeric": (
        "Solve the problem step by step. Finish with a line 'The answer is N' where N is "
        "the final number."
    ),
    "code": (
        "Complete the Python function below. Reply with the whole function in one "
        "```python code block, and nothing after it."
    ),
    "text": "Answer the question. Finish with a line 'Answer: ...'.",
}

_MAX_TOKENS = {"mc": 384, "numeric": 512, "code": 512, "text": 384}


def task_instructions(task: Task) -> str:
    """How an answer to this kind of task must end, so that its scorer can read it."""
    return _INSTRUCTIONS[task.kind]


def task_messages(task: Task) -> list[Message]:
    """The plain prompt of a task: instructions for its kind, then the task itself."""
    return [
        {"role": "system", "content": task_instructions(task)},
        {"role": "user", "content": task.prompt},
    ]


def direct_solver(model: Model) -> Solver:
    """One model call per task: the baseline every other configuration is compared with."""

    async def solve(task: Task, seed: int) -> SolverOutput:
        c = await model.acomplete(
            task_messages(task), max_tokens=_MAX_TOKENS[task.kind], temperature=0.0, seed=seed
        )
        return SolverOutput(c.text, {"agent:solver": c.usage}, extra={"finish": c.finish_reason})

    return solve


DIRECT = SolverConfig("direct", "one model call per task (baseline)", direct_solver)


def default_configs(*, agents: int = 3, rounds: int = 2) -> ConfigRegistry:
    """A fresh registry: the direct baseline and one team per topology preset."""
    from overseer.bench._teams import team_configs

    return ConfigRegistry([DIRECT, *team_configs(agents, rounds)])
