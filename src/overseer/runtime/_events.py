"""The trace's event schema: one typed model per event, the same for teams and games.

Every line a `Trace` writes is validated against the model of its event name, so a field
typo fails at the writer, and readers (the report, `overseer trace show`, people) can rely
on the fields. `TRACE_VERSION` is in every line; `trace_schema()` gives the JSON Schema.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from overseer.runtime._interaction import InteractionKind

TRACE_VERSION = 2


class Event(BaseModel):
    """Fields every event carries; plug-in events may add their own."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    v: Literal[2]
    ts: float
    run: str
    event: str


class _Strict(Event):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class RunStart(_Strict):
    event: Literal["run_start"]
    query: str
    team: dict[str, Any]
    model: str
    supervisors: list[str]


class RunEnd(_Strict):
    event: Literal["run_end"]
    answer: str
    stop_reason: str
    error: str | None
    usage: dict[str, int]
    by_actor: dict[str, list[int]]


class Round(_Strict):
    event: Literal["round_start", "round_end"]
    round: int


class InteractionEvent(_Strict):
    event: Literal["interaction"]
    kind: InteractionKind
    agent: str
    role: str
    round: int
    step: int
    tool: str | None
    thought: str
    input: str
    observation: str
    error: str | None
    local_task: str
    logprob_tokens: int
    decision_positions: list[int]
    input_tokens: int = Field(alias="gen_ai.usage.input_tokens")
    output_tokens: int = Field(alias="gen_ai.usage.output_tokens")


class VerdictEvent(_Strict):
    event: Literal["verdict"]
    action: str
    by: str
    reason: str
    text: str
    note: str
    task: str
    agent: str | None = None
    round: int | None = None
    step: int | None = None


class Verification(_Strict):
    event: Literal["verification"]
    agent: str
    by: str
    task: str
    finding: str


class VerdictIgnored(Event):
    event: Literal["verdict_ignored"]
    by: str
    reason: str


class Rollback(_Strict):
    event: Literal["rollback"]
    round: int
    agent: str
    by: str
    reason: str
    removed: int
    count: int


class TeamEvent(_Strict):
    event: Literal["team"]
    team: dict[str, Any]


class TeamReplaced(_Strict):
    event: Literal["team_replaced"]
    round: int
    by: str
    reason: str
    team: dict[str, Any]


class AgentReplaced(_Strict):
    event: Literal["agent_replaced"]
    agent: str
    by: str
    reason: str
    purged: int
    spec: dict[str, Any]


class AgentFailure(_Strict):
    event: Literal["agent_failure"]
    agent: str
    round: int
    reason: str
    detail: str


class Message(_Strict):
    event: Literal["message"]
    sender: str
    round: int
    seq: int
    content: str


class Vote(_Strict):
    event: Literal["vote"]
    counts: dict[str, int]
    winner: str


class Error(_Strict):
    event: Literal["error"]
    error: str
    traceback: str


class ModelCall(_Strict):
    event: Literal["model_call"]
    operation: str = Field(alias="gen_ai.operation.name")
    actor: str = Field(alias="gen_ai.agent.name")
    actor_kind: str = Field(alias="overseer.actor.kind")
    model: str = Field(alias="gen_ai.request.model")
    input_tokens: int = Field(alias="gen_ai.usage.input_tokens")
    output_tokens: int = Field(alias="gen_ai.usage.output_tokens")
    cached_tokens: int = Field(alias="gen_ai.usage.cache_read_input_tokens")
    finish_reasons: list[str] = Field(alias="gen_ai.response.finish_reasons")
    latency_s: float
    input: list[dict[str, Any]]
    output: str
    usage_estimated: bool = Field(default=False, alias="overseer.usage.estimated")


class GameTurn(_Strict):
    event: Literal["turn"]
    agent: str
    role: str
    round: int
    attempt: int
    output: str
    message: str
    error: str | None


class InvalidMove(_Strict):
    event: Literal["invalid_move"]
    agent: str
    role: str
    error: str


class MonitorFeatures(_Strict):
    event: Literal["monitor_features"]
    by: str
    role: str
    agent: str
    turn: int
    attempt: int
    entropy: float
    varentropy: float
    kurtosis: float
    positions: int
    fallback: bool
    estimate: float | None
    tau: float | None


class RuleEvent(_Strict):
    """A rule of a plug-in's rule tier acted (loop breaker, masking, purification, budget)."""

    event: Literal["rule"]
    by: str
    rule: str
    agent: str
    subtask: str
    detail: str
    before_chars: int = 0
    after_chars: int = 0


class PluginEvent(Event):
    """Events a plug-in or a game writes about its own work (free fields)."""

    event: Literal[
        "supervision",
        "supervisor_stats",
        "watcher_review",
        "watcher_deferred",
        "agentprune_update",
        "harvest",
        "codegen_result",
        "trainer_start",
        "trainer_end",
    ]


AnyEvent = (
    RunStart
    | RunEnd
    | Round
    | InteractionEvent
    | VerdictEvent
    | Verification
    | VerdictIgnored
    | Rollback
    | TeamEvent
    | TeamReplaced
    | AgentReplaced
    | AgentFailure
    | Message
    | Vote
    | Error
    | ModelCall
    | GameTurn
    | InvalidMove
    | MonitorFeatures
    | RuleEvent
    | PluginEvent
)
_MODELS: dict[str, type[Event]] = {
    name: cls for cls in AnyEvent.__args__ for name in cls.model_fields["event"].annotation.__args__
}
EVENT_NAMES: frozenset[str] = frozenset(_MODELS)


def validate_event(record: dict[str, Any]) -> Event:
    """The typed event of one trace line; ValueError naming the event and the bad field."""
    name = record.get("event")
    cls = _MODELS.get(name) if isinstance(name, str) else None
    if cls is None:
        raise ValueError(f"trace event {name!r}: unknown; known: {sorted(EVENT_NAMES)}")
    try:
        return cls.model_validate(record)
    except ValidationError as exc:
        e = exc.errors()[0]
        where = ".".join(str(x) for x in e["loc"])
        raise ValueError(f"trace event {name!r}: {where}: {e['msg']}") from None


def trace_schema() -> dict[str, Any]:
    """The JSON Schema of a trace line (any event)."""
    return TypeAdapter(AnyEvent).json_schema(by_alias=True)


def _short(text: Any, n: int = 160) -> str:
    s = " ".join(str(text).split())
    return s if len(s) <= n else s[: n - 1] + "…"


_LINES: dict[str, Any] = {
    "run_start": lambda e: (
        f"run {e['run']} model={e['model']} "
        f"agents={[a['name'] for a in e['team']['agents']]} query: {_short(e['query'])}"
    ),
    "round_start": lambda e: f"-- round start {e['round']}",
    "round_end": lambda e: f"-- round end {e['round']}",
    "model_call": lambda e: (
        f"   call {e['overseer.actor.kind']}:{e['gen_ai.agent.name']} "
        f"in={e['gen_ai.usage.input_tokens']} cached={e['gen_ai.usage.cache_read_input_tokens']} "
        f"out={e['gen_ai.usage.output_tokens']} {e['latency_s']}s"
    ),
    "interaction": lambda e: (
        f"   {e['agent']} {e['kind']}"
        + (f"({e['tool']})" if e.get("tool") else "")
        + f" r{e['round']}s{e['step']}: {_short(e['observation'])}"
        + (f" ERROR {e['error']}" if e.get("error") else "")
    ),
    "message": lambda e: f"   message {e['sender']} -> channel: {_short(e['content'])}",
    "turn": lambda e: (
        f"   turn {e['agent']} ({e['role']}) r{e['round']} attempt {e['attempt']}: "
        f"{_short(e['message'] or e['output'])}" + (f" ERROR {e['error']}" if e["error"] else "")
    ),
    "verdict": lambda e: (
        f"   VERDICT {e['action']} by {e['by']} on {e.get('agent')}: {_short(e['reason'])}"
    ),
    "rollback": lambda e: (
        f"   ROLLBACK by {e['by']} in round {e['round']}: {_short(e['reason'])}"
        f" ({e['removed']} messages removed, rollback {e['count']})"
    ),
    "monitor_features": lambda e: (
        f"   monitor {e['agent']} ({e['role']}) turn {e['turn']}: "
        f"entropy={e['entropy']:.3f} varentropy={e['varentropy']:.3f} "
        f"kurtosis={e['kurtosis']:.3f} estimate={e['estimate']} tau={e['tau']}"
    ),
    "rule": lambda e: f"   RULE {e['rule']} by {e['by']} on {e['agent']}: {_short(e['detail'])}",
    "run_end": lambda e: (
        f"end {e['stop_reason']}: answer {_short(e['answer'])!r} tokens in="
        f"{e['usage']['input_tokens']} out={e['usage']['output_tokens']}"
    ),
}


def describe_event(e: dict[str, Any]) -> str:
    """One readable line for a trace event (any kind: unknown fields are listed)."""
    line = _LINES.get(e["event"])
    if line is not None:
        return str(line(e))
    keys = {k: v for k, v in e.items() if k not in ("v", "ts", "run", "event")}
    return f"   {e['event']}: {_short(keys)}"
