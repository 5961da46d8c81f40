"""The WhoDunitEnv game: turns in order, moves checked and applied, played on the runtime's bus.

Each turn is played through `runtime.GameSession`: the runtime asks the player (with its
token logprobs), re-asks an invalid move, and shows the proposed move to the plug-ins
*before* it takes effect. A rollback resets the channel to its last irreversible mark (in
WhoDunitEnv the whole conversation); the game then restarts its turn count and plays again.
Every turn taken, the discarded ones included, counts in the game length.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass, field
from typing import Any, Unpack

from overseer.envs._attributes import attribute_table
from overseer.envs.whodunit import (
    Game,
    WhoDunitConfig,
    move_schema,
    player_system_prompt,
    user_prompt,
)
from overseer.models import Model, Usage
from overseer.runtime.games import GameSession, SessionOptions, Turn


@dataclass
class GameResult:
    """How a game ended: success, award, length (interventions included), resets, books."""

    game_id: str
    success: bool
    awarded: int | None
    ended: str  # award | turn_limit
    turns: int
    resets: int
    invalid_actions: int
    false_claims: int
    usage_by_actor: dict[str, Usage]
    transcript: list[str]
    interventions: list[dict[str, Any]] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """The JSON-safe part kept with a stored result."""
        return {
            "success": self.success,
            "awarded": self.awarded,
            "ended": self.ended,
            "turns": self.turns,
            "resets": self.resets,
            "invalid_actions": self.invalid_actions,
            "false_claims": self.false_claims,
            "interventions": self.interventions,
        }


@dataclass
class _State:
    pending: tuple[int, str, str] | str | None = None  # asym: the open question
    false_claims: int = 0


@dataclass(frozen=True)
class _Move:
    message: str | None = None
    award: int | None = None
    question: tuple[int, str, str] | str | None = None
    false_claim: bool = False


def call_seed(*parts: object) -> int:
    """A stable 31-bit sampling seed from the parts (game, seed, attempt, turn, retry)."""
    digest = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:4], "little") & 0x7FFFFFFF


def _int(d: dict[str, Any], key: str) -> int:
    v = d.get(key)
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f'"{key}" must be an integer, got {v!r}')
    return v


def _character(d: dict[str, Any], game: Game) -> int:
    c = _int(d, "character")
    if not 1 <= c <= game.n:
        raise ValueError(f'"character" must be 1..{game.n}, got {c}')
    return c


def _property(d: dict[str, Any], game: Game) -> tuple[str, str]:
    p, v = d.get("property"), d.get("value")
    if p not in game.attributes:
        raise ValueError(f'"property" must be one of {list(game.attributes)}, got {p!r}')
    allowed = list(dict(attribute_table(len(game.attributes)))[p])
    if v not in allowed:
        raise ValueError(f'"value" of {p} must be one of {allowed}, got {v!r}')
    return p, v


def _accuser_move(
    game: Game, cfg: WhoDunitConfig, name: str, action: int, d: dict[str, Any]
) -> _Move | None:
    partner = cfg.agents()[1][0]
    if action == 1:
        c = _character(d, game)
        p, v = _property(d, game)
        return _Move(f"{name} asks: does character {c} have {p} = {v}?", question=(c, p, v))
    if action == 2:
        return _Move(f"{name} asks {partner} for general information.", question="broad")
    if action == 3:
        c = _character(d, game)
        return _Move(f"{name} gives the award to character {c}.", award=c)
    return None


def _intel_move(
    game: Game, name: str, action: int, d: dict[str, Any], state: _State
) -> _Move | None:
    if action == 1:
        if not isinstance(state.pending, tuple):
            raise ValueError("there is no yes/no question to answer; use action 2")
        ans = d.get("answer")
        if not isinstance(ans, bool):
            raise ValueError(f'"answer" must be true or false, got {ans!r}')
        c, p, v = state.pending
        verb = "has" if ans else "does not have"
        truth = game.value(c, p) == v
        return _Move(f"{name} answers: character {c} {verb} {p} = {v}.", false_claim=ans != truth)
    if action == 2:
        p, v = _property(d, game)
        chars = d.get("character")
        if not isinstance(chars, list) or not all(
            isinstance(x, int) and not isinstance(x, bool) and 1 <= x <= game.n for x in chars
        ):
            raise ValueError(f'"character" must be a list of numbers 1..{game.n}')
        listed = sorted(set(chars))
        return _Move(
            f"{name} shares: characters {listed} have {p} = {v}.",
            false_claim=listed != game.matching(p, v),
        )
    return None


def _player_move(
    game: Game, cfg: WhoDunitConfig, name: str, action: int, d: dict[str, Any]
) -> _Move | None:
    if action == 1:
        k = _int(d, "fact")
        mine = game.facts[[a for a, _ in cfg.agents()].index(name)]
        if not 1 <= k <= len(mine):
            raise ValueError(f'"fact" must be 1..{len(mine)}, got {k}')
        a, v = game.fact(mine[k - 1])
        return _Move(f"{name} shares a fact about the Winner: {a} is {v}.")
    if action == 2:
        c = _character(d, game)
        return _Move(f"{name} gives the award to character {c}.", award=c)
    if action == 3:
        return _Move(f"{name} skips.")
    return None


def check_move(
    game: Game, cfg: WhoDunitConfig, name: str, role: str, d: Any, state: _State
) -> _Move:
    """Check one parsed answer against the rules; raises ValueError saying what is wrong."""
    if not isinstance(d, dict):
        raise ValueError(f"expected a JSON object, got {type(d).__name__}")
    action = _int(d, "action")
    if role == "accuser":
        move = _accuser_move(game, cfg, name, action, d)
    elif role == "intel":
        move = _intel_move(game, name, action, d, state)
    else:
        move = _player_move(game, cfg, name, action, d)
    if move is not None:
        return move
    allowed = {"accuser": "1, 2 or 3", "intel": "1 or 2", "player": "1, 2 or 3"}[role]
    raise ValueError(f'"action" must be {allowed}, got {action}')


class _Play:
    """One WhoDunitEnv game while it is played: the session, the rules' state, the award."""

    def __init__(self, game: Game, cfg: WhoDunitConfig, session: GameSession, seed: int) -> None:
        self.game, self.cfg, self.s, self.seed = game, cfg, session, seed
        self.agents = cfg.agents()
        self.state = _State()
        self.awarded: int | None = None

    def _turn(self, turn: int) -> Turn[_Move]:
        cfg, game = self.cfg, self.game
        name, role = self.agents[(turn - 1) % len(self.agents)]
        facts = None
        if cfg.variant == "sym":
            mine = game.facts[[n for n, _ in self.agents].index(name)]
            facts = [f"{a}: {v}" for a, v in map(game.fact, mine)]
        state = self.state
        return Turn(
            agent=name,
            role=role,
            round=turn,
            messages=[
                {"role": "system", "content": player_system_prompt(cfg, game, name, role)},
                {
                    "role": "user",
                    "content": user_prompt(game, self.s.texts(), turn, cfg.max_turns, facts),
                },
            ],
            parse=lambda d: check_move(game, cfg, name, role, d, state),
            describe=lambda mv: (mv.message or "") if mv else "",
            schema=move_schema(cfg, game, role),
            max_tokens=cfg.max_tokens,
            temperature=cfg.temperature_at(self.s.resets),
            seed=call_seed(game.id, self.seed, self.s.resets, turn),
            max_reasks=cfg.max_retries,
            top_logprobs=10,
            decision_keys=cfg.decision_keys,
        )

    def _apply(self, name: str, role: str, move: _Move, message: str, turn: int) -> None:
        state = self.state
        state.false_claims += move.false_claim
        if move.question is not None:
            state.pending = move.question
        elif role == "intel":
            state.pending = None
        if message:
            self.s.post(name, message, round=turn)
        if move.award is not None:
            self.s.mark_irreversible()
            self.awarded = move.award

    async def play(self) -> None:
        """Turns until an award or the turn limit; a rollback restarts the conversation."""
        turn = 0
        while turn < self.cfg.max_turns:
            turn += 1
            t = self._turn(turn)
            played = await self.s.turn(t)
            if not played.rolled_back and await self.s.round_end(turn):
                played = dataclasses.replace(played, rolled_back=True)
            if played.rolled_back:
                self.state = _State(false_claims=self.state.false_claims)
                turn = 0
                continue
            if played.move is None:
                continue
            self._apply(t.agent, t.role, played.move, played.observation, turn)
            if self.awarded is not None:
                return


async def play_whodunit(
    game: Game,
    model: Model,
    cfg: WhoDunitConfig,
    *,
    seed: int = 0,
    **options: Unpack[SessionOptions],
) -> GameResult:
    """Play one game to an award or the turn limit, every turn on the runtime's bus."""
    if game.variant != cfg.variant:
        raise ValueError(f"game {game.id}: variant {game.variant}, config is {cfg.variant}")
    rid = f"{game.id}-s{seed}"
    session = GameSession(model, f"whodunit {game.id}", cfg.agents(), rid, **options)
    p = _Play(game, cfg, session, seed)

    async def play() -> str:
        await p.play()
        return str(p.awarded or "")

    await session.play(play)
    return GameResult(
        game_id=game.id,
        success=p.awarded == game.culprit,
        awarded=p.awarded,
        ended="award" if p.awarded is not None else "turn_limit",
        false_claims=p.state.false_claims,
        transcript=session.texts(),
        **session.stats(),
    )
