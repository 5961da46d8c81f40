"""Games on the bus: the runtime asks, re-asks, judges, rolls back and traces each turn.

A game (WhoDunitEnv, GovSim, CodeGen) defines whose turn it is, the prompt, the legal
moves (`parse`), what a move says to the others (`describe`), what is irreversible
(`mark_irreversible`) and how a move is applied (its own state); it plays every turn through
`GameSession.turn`. A rollback rolls the channel back to the last irreversible mark and
tells the game, which resets its own state. A game honours guide, replace, verify and
rollback; a plug-in that may return anything else is refused when the session starts.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypedDict, TypeVar, Unpack

from overseer.models import Completion, Message, Model, StructuredOutputError, ask_structured
from overseer.models.positions import decision_positions
from overseer.runtime._bus import Bus, UnsupportedVerdictError, Verifier
from overseer.runtime._interaction import (
    Interaction,
    ReplaceAgent,
    ReplaceTeam,
    Rollback,
    Supervisor,
)
from overseer.runtime._ledger import Budget
from overseer.runtime._run import Run, RunResult, open_run
from overseer.runtime._spec import AgentSpec, TeamSpec

T = TypeVar("T")

_ASK_FIELDS = (
    "schema",
    "max_reasks",
    "max_tokens",
    "temperature",
    "seed",
    "top_logprobs",
    "as_json",
)
GAME_HONOURS: frozenset[str] = frozenset({"guide", "replace", "verify", "rollback"})


class SessionOptions(TypedDict, total=False):
    """How a game is overseen and recorded, the same for every game: the plug-ins on its bus,
    where its trace goes (none: nowhere), how many rollbacks it takes (4), the verifier, the
    budget of each game (none: unlimited)."""

    supervisors: Sequence[Supervisor]
    trace_dir: str | Path | None
    max_resets: int
    verifier: Verifier | None
    budget: Budget | None


@dataclass(frozen=True)
class Turn(Generic[T]):
    """What a game asks of one player: the prompt, the legal-move check, the sampling."""

    agent: str
    role: str
    round: int
    messages: Sequence[Message]
    parse: Callable[[Any], T]  # a parsed reply -> a legal move; raises ValueError
    describe: Callable[[T | None], str]  # the move as the others read it ("" for none)
    schema: dict[str, Any] | None = None
    max_tokens: int = 160
    temperature: float = 0.0
    seed: int | None = None
    max_reasks: int = 2
    top_logprobs: int = 0
    decision_keys: tuple[str, ...] = ()
    judged: bool = True  # asked of the plug-ins (False: recorded and traced only)
    as_json: bool = True  # parse the reply as JSON before `parse` (False: the raw text)
    reask: str = "That move is not valid ({error}). Reply again with JSON only."
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Played(Generic[T]):
    """A turn played: the move (None if every try was invalid), the observation the others
    read after any verdict, the last completion, the error, and whether it was rolled back."""

    move: T | None
    observation: str
    completion: Completion
    error: str | None
    rolled_back: bool


class GameSession:
    """One game as one run: its ledger, trace, channel and bus, whose host it is."""

    label = "game"
    honours = GAME_HONOURS

    def __init__(
        self,
        model: Model,
        query: str,
        players: Sequence[tuple[str, str]],
        run_id: str,
        **options: Unpack[SessionOptions],
    ) -> None:
        team = TeamSpec(
            agents=tuple(AgentSpec(name=n, role=r) for n, r in players), decision="last"
        )
        trace_dir = options.get("trace_dir")
        self.run: Run = open_run(
            query, team, model, run_id=run_id, trace_dir=trace_dir, budget=options.get("budget")
        )
        self.bus = Bus(
            self.run,
            options.get("supervisors", ()),
            host=self,
            verifier=options.get("verifier"),
            max_rollbacks=options.get("max_resets", 4),
        )
        self.turns = self.invalid = 0
        self.bus.start()

    def stats(self) -> dict[str, Any]:
        """What every game result reports: turns seen by the plug-ins, resets, invalid moves,
        the books by actor and the interventions."""
        return {
            "turns": self.turns,
            "resets": self.resets,
            "invalid_actions": self.invalid,
            "usage_by_actor": self.run.ledger.by_actor(),
            "interventions": self.interventions,
        }

    @property
    def resets(self) -> int:
        return self.bus.rollbacks

    @property
    def interventions(self) -> list[dict[str, Any]]:
        """The rollbacks applied (round, agent, by, reason, messages removed): the bus's record."""
        return [dict(r) for r in self.bus.rolled_back]

    # -- the bus's host: a game honours guide, replace, verify and rollback ------------------
    def roll_back(self, v: Rollback) -> None:
        """Nothing to stop: the turn in play ends (`Played.rolled_back`, `round_end()`), and
        the game resets its own state when it reads that."""

    def replace_agent(self, v: ReplaceAgent) -> None:
        raise UnsupportedVerdictError(f"{v.by}: a game cannot replace a player")

    def replace_team(self, v: ReplaceTeam) -> None:
        raise UnsupportedVerdictError(f"{v.by}: a game cannot replace its team")

    def texts(self) -> list[str]:
        """The channel's messages as the players read them."""
        return [m.content for m in self.run.channel.messages]

    async def turn(self, t: Turn[T]) -> Played[T]:
        """Ask one player (re-asking invalid moves), then judge the move on the bus."""
        self.turns += t.judged  # turns the plug-ins saw, discarded ones included
        asked = await self._ask(t)
        move, c, error = asked
        text = t.describe(move)
        i = Interaction(
            kind="move",
            agent=t.agent,
            global_task=self.run.query,
            local_task=t.role,
            round=t.round,
            step=self.resets,
            input=c.text,
            observation=text,
            error=error,
            usage=c.usage,
            role=t.role,
            logprobs=c.logprobs,
            decision_positions=_positions(c, t.decision_keys),
            meta={
                "decision_keys": t.decision_keys,
                "attempt": self.resets,
                "move": move,
                **t.meta,
            },
        )
        self.run.trace.event("turn", **_turn_fields(i))
        out = await self.bus.judge(i, ask=t.judged)
        if out.stop:
            return Played(move, text, c, error, True)
        return Played(move, out.observation, c, error, False)

    async def _ask(self, t: Turn[T]) -> tuple[T | None, Completion, str | None]:
        model = self.run.metered(t.agent, "agent")
        try:
            got = await ask_structured(
                model,
                list(t.messages),
                parse=t.parse,
                reask=lambda _text, err: t.reask.format(error=err),
                **{k: getattr(t, k) for k in _ASK_FIELDS},
            )
        except StructuredOutputError as exc:
            self.invalid += 1
            error = f"invalid move: {exc.errors[-1] if exc.errors else exc}"
            self.run.trace.event("invalid_move", agent=t.agent, role=t.role, error=error)
            return None, exc.completion, error
        return got.value, got.completion, None

    async def round_end(self, round: int) -> bool:
        """The plug-ins' round-end hook; True when it rolled the game back (cap permitting)."""
        return await self.bus.round_end(round)

    def post(self, sender: str, text: str, round: int, **meta: Any) -> None:
        """Put a move's text on the channel, where every player reads it."""
        self.run.channel.post(sender, text, round=round, **meta)

    def mark_irreversible(self) -> None:
        """What is on the channel now stays: a rollback goes back to here, not before."""
        self.run.channel.mark_irreversible()

    async def play(self, game: Callable[[], Awaitable[str]]) -> RunResult:
        """Play `game` (which returns the answer) as this run: the run-end hooks are called and
        the trace closed whether it ends or fails; a failure is recorded, then re-raised."""
        try:
            answer = await game()
        except Exception as exc:
            await self.bus.finish("error", "", f"{type(exc).__name__}: {exc}")
            raise
        return await self.bus.finish("done", answer, None)


def _positions(c: Completion, keys: tuple[str, ...]) -> tuple[int, ...]:
    if not c.logprobs or not keys:
        return ()
    return tuple(decision_positions(c.logprobs, keys))


def _turn_fields(i: Interaction) -> dict[str, object]:
    """The `turn` trace event (`GameTurn`) of a move: the player's output, the text the
    others read (`observation`) and the attempt (`step`: rollbacks so far)."""
    return {
        "agent": i.agent,
        "role": i.role,
        "round": i.round,
        "attempt": i.step,
        "output": i.input,
        "message": i.observation,
        "error": i.error,
    }
