"""What the runner runs: solver configurations (team ones compose with bus plug-ins, see
`ConfigRegistry`), and the single-call `direct` baseline."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from overseer.bench._compose import GRAMMAR, split_config
from overseer.models import Message, Model, StructuredOutputError, Usage, ask_structured
from overseer.runtime import Supervisor, Tool
from overseer.runtime.steps import Verifier
from overseer.tasks import Task, answer_schema, closed_instructions


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


PluginFactory = Callable[[Model], Sequence[Supervisor]]
#: make(model, plug-ins of each run or None, top-k logprobs the agents ask for) -> solver
TeamMaker = Callable[[Model, "PluginFactory | None", int], Solver]
#: The bus's verifier made from a run's tools (the SupervisorAgent's tool verifier).
VerifierFactory = Callable[[Mapping[str, Tool]], Verifier]


@dataclass(frozen=True)
class BusPlugin:
    """A plug-in factory that may also bring the bus's verifier, made from each run's tools.

    Any `PluginFactory` composes; this one adds `verifier(tools)`, used where the team has
    tools (elsewhere the bus asks the model plainly, booked as "verifier" too).
    """

    make: PluginFactory
    verifier: VerifierFactory | None = None

    def __call__(self, model: Model) -> Sequence[Supervisor]:
        return self.make(model)


def chain_plugins(factories: Sequence[PluginFactory]) -> PluginFactory | None:
    """One factory giving the plug-ins of every factory, in order (None for none); it brings
    the first verifier any of them brings."""
    if not factories:
        return None
    verifier = next((v for f in factories if (v := getattr(f, "verifier", None))), None)
    return BusPlugin(lambda model: [s for f in factories for s in f(model)], verifier)


def plugin_verifier(plugins: PluginFactory | None, tools: Mapping[str, Tool]) -> Verifier | None:
    """The verifier the plug-ins bring for a team holding `tools` (None without tools)."""
    make: VerifierFactory | None = getattr(plugins, "verifier", None)
    return make(tools) if make is not None and tools else None


@dataclass(frozen=True)
class TeamConfig(SolverConfig):
    """A configuration of a team on the Executor: bus plug-ins can be added to it, which is
    how `SOURCE+PLUGIN...` composes (see `ConfigRegistry`). `kinds` names the plug-in kinds
    already on its bus (its own included, like MASFly's Watcher): each composes at most once."""

    make: TeamMaker = field(kw_only=True)
    plugins: tuple[PluginFactory, ...] = field(default=(), kw_only=True)
    top_logprobs: int = field(default=0, kw_only=True)
    kinds: tuple[str, ...] = field(default=(), kw_only=True)

    @classmethod
    def of(
        cls,
        name: str,
        description: str,
        make: TeamMaker,
        plugins: Sequence[PluginFactory] = (),
        top_logprobs: int = 0,
        kinds: Sequence[str] = (),
    ) -> TeamConfig:
        """A team configuration whose runs carry `plugins` on their bus."""
        chained = chain_plugins(plugins)

        def build(model: Model) -> Solver:
            return make(model, chained, top_logprobs)

        return cls(
            name,
            description,
            build,
            make=make,
            plugins=tuple(plugins),
            top_logprobs=top_logprobs,
            kinds=tuple(kinds),
        )

    def with_plugin(
        self, name: str, plugin: PluginFactory, *, what: str, top_logprobs: int = 0, kind: str = ""
    ) -> TeamConfig:
        """This team with one more plug-in on its bus, under a new name."""
        if kind and kind in self.kinds:
            raise ValueError(f"{name}: {self.name!r} already has a {kind} plug-in on its bus")
        return TeamConfig.of(
            name,
            f"{self.description} + {what}",
            self.make,
            (*self.plugins, plugin),
            max(self.top_logprobs, top_logprobs),
            (*self.kinds, kind) if kind else self.kinds,
        )


#: A bus plug-in named in a configuration (`+KIND:ARG`, or `+KIND`: ARG is ""): ARG ->
#: (plug-in factory, what it is, top-k logprobs the agents must ask for). A bad ARG raises
#: ValueError naming it.
PluginMaker = Callable[[str], tuple[PluginFactory, str, int]]
#: A team source named `PREFIX:ARG` (like `pruned:SPEC`): ARG -> its team configuration,
#: named `PREFIX:ARG`.
SourceMaker = Callable[[str], TeamConfig]


class ConfigRegistry:
    """The configurations `overseer bench --configs` can name; plug-ins add theirs.

    Besides registered names, a name composes a team source with bus plug-ins in order
    (`overseer.bench._compose` has the grammar): `complete+supervise:llm+monitor:m.json`.
    Plug-in kinds are added with `add_plugin`, source prefixes (`pruned:`) with `add_source`.
    """

    def __init__(self, configs: Iterable[SolverConfig] = ()) -> None:
        self._configs: dict[str, SolverConfig] = {}
        self._plugins: dict[str, PluginMaker] = {}
        self._sources: dict[str, SourceMaker] = {}
        for c in configs:
            self.add(c)

    def add(self, config: SolverConfig) -> None:
        if config.name in self._configs:
            raise ValueError(f"configuration {config.name!r} is already registered")
        self._configs[config.name] = config

    def replace(self, config: SolverConfig) -> None:
        """Register `config`, replacing any configuration of the same name."""
        self._configs[config.name] = config

    def add_plugin(self, kind: str, maker: PluginMaker) -> None:
        """Let names compose `+KIND:ARG` (or `+KIND`) onto team configurations."""
        self._plugins[kind] = maker

    def add_source(self, prefix: str, maker: SourceMaker) -> None:
        """Let names start with the team source `PREFIX:ARG`."""
        self._sources[prefix] = maker

    def names(self) -> list[str]:
        return list(self._configs)

    def plugin_kinds(self) -> list[str]:
        return list(self._plugins)

    def get(self, name: str) -> SolverConfig:
        if name in self._configs:
            return self._configs[name]
        terms = split_config(name, self._starts_term)
        head = terms[0].partition(":")
        if head[0] in self._sources and head[1]:
            source: SolverConfig = self._source(name, head[0], head[2])
        elif terms[0] in self._configs and len(terms) > 1:
            source = self._configs[terms[0]]
        else:
            raise ValueError(
                f"unknown configuration {name!r}; expected one of: {', '.join(self._configs)}, "
                f"or a composed name ({GRAMMAR})"
            )
        for term in terms[1:]:
            source = self._add_plugin(name, source, term)
        return source

    def _starts_term(self, piece: str) -> bool:
        head = piece.partition(":")[0]
        return head in self._plugins or head in self._sources or piece in self._configs

    def _source(self, name: str, prefix: str, arg: str) -> TeamConfig:
        try:
            return self._sources[prefix](arg)
        except ValueError as exc:
            raise ValueError(f"{name}: {exc}") from None

    def _add_plugin(self, name: str, base: SolverConfig, term: str) -> TeamConfig:
        kind, _, arg = term.partition(":")
        if kind not in self._plugins:
            raise ValueError(
                f"{name}: {term!r} is a team source, expected a plug-in "
                f"({', '.join(self._plugins)}); a configuration has one source, first"
            )
        if not isinstance(base, TeamConfig):
            raise ValueError(f"{name}: {base.name!r} is not a team configuration")
        try:
            factory, what, top_logprobs = self._plugins[kind](arg)
        except ValueError as exc:
            raise ValueError(f"{name}: {exc}") from None
        return base.with_plugin(
            f"{base.name}+{term}", factory, what=what, top_logprobs=top_logprobs, kind=kind
        )

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


def team_query(task: Task) -> str:
    """What a team is asked: the task's answer-format instructions, then the task."""
    return f"{task_instructions(task)}\n\n{task.prompt}"


def task_messages(task: Task) -> list[Message]:
    """The plain prompt of a task: instructions for its kind, then the task itself."""
    return [
        {"role": "system", "content": task_instructions(task)},
        {"role": "user", "content": task.prompt},
    ]


def _is_answer(data: object) -> dict[str, object]:
    if not isinstance(data, dict) or "answer" not in data:
        raise ValueError('expected a JSON object with an "answer"')
    return data


async def closed_answer(
    model: Model, task: Task, messages: list[Message], *, seed: int, max_tokens: int
) -> SolverOutput | None:
    """One call answered under the task's closed-answer schema (reasoning, then the answer),
    re-asked once if the reply does not parse; None when the task declares no closed format.
    A reply that never parses is returned as it is (scored unparsed), its tokens booked."""
    schema = answer_schema(task)
    if schema is None:
        return None
    try:
        got = await ask_structured(
            model,
            messages,
            parse=_is_answer,
            schema=schema,
            max_reasks=1,
            max_tokens=max_tokens,
            seed=seed,
        )
    except StructuredOutputError as exc:
        extra = {"finish": exc.completion.finish_reason, "attempts": exc.attempts}
        return SolverOutput(exc.last_text, {"agent:solver": exc.usage}, extra=extra)
    extra = {"finish": got.completion.finish_reason, "attempts": got.attempts}
    return SolverOutput(got.completion.text, {"agent:solver": got.usage}, extra=extra)


def direct_solver(model: Model) -> Solver:
    """One model call per task: the baseline every other configuration is compared with.
    Closed answers (multiple choice, numbers) come through the constrained schema of
    `answer_schema`, so a correct answer is never lost to its format."""

    async def solve(task: Task, seed: int) -> SolverOutput:
        messages = task_messages(task)
        if answer_schema(task) is not None:
            messages[0] = {"role": "system", "content": closed_instructions(task)}
        closed = await closed_answer(
            model, task, messages, seed=seed, max_tokens=_MAX_TOKENS[task.kind]
        )
        if closed is not None:
            return closed
        c = await model.acomplete(
            messages, max_tokens=_MAX_TOKENS[task.kind], temperature=0.0, seed=seed
        )
        return SolverOutput(c.text, {"agent:solver": c.usage}, extra={"finish": c.finish_reason})

    return solve


DIRECT = SolverConfig("direct", "one model call per task (baseline)", direct_solver)
