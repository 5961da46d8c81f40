"""The options of `overseer prune`: the team it trains on (TeamOpts) and how the masks are
learnt (TrainOpts), each declared once and received as one value; bad values are one line."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from overseer.cli._app import InputError
from overseer.cli._names import PRESETS
from overseer.cli._options import option_group

if TYPE_CHECKING:
    from overseer.prune import TrainConfig
    from overseer.runtime import TeamSpec

#: the presets and AgentPrune's -C/-L/-R variants (`overseer.experiments.prune_runs.VARIANTS`)
TEAMS = (*(p for p in PRESETS if p != "debate"), "agentprune-c", "agentprune-l", "agentprune-r")


def check(cond: bool, msg: str) -> None:
    """InputError `msg` unless `cond`."""
    if not cond:
        raise InputError(msg)


@dataclass(frozen=True)
class TeamOpts:
    """The team `overseer prune` trains on: preset, size, rounds, temporal edges, payload."""

    team: str = "complete"
    agents: int = 5
    rounds: int = 2
    temporal: str = "all"
    share_thoughts: bool = False

    def __post_init__(self) -> None:
        check(self.team in TEAMS, f"--team: expected one of {', '.join(TEAMS)}, got {self.team!r}")
        check(1 <= self.agents <= 16, f"--agents: expected 1..16, got {self.agents}")
        check(1 <= self.rounds <= 10, f"--rounds: expected 1..10, got {self.rounds}")
        ok = self.temporal in ("all", "self", "none")
        check(ok, f"--temporal: expected all|self|none, got {self.temporal!r}")

    def build(self, kind: str, seed: int) -> TeamSpec:
        """The team for tasks of `kind` (a bad size is one line, InputError)."""
        from overseer.experiments.prune_runs import build_team

        try:
            base = build_team(
                self.team,
                self.agents,
                rounds=self.rounds,
                kind=kind,
                temporal=self.temporal,
                seed=seed,
            )
        except ValueError as exc:
            raise InputError(str(exc)) from None
        return base.sharing_thoughts() if self.share_thoughts else base


@dataclass(frozen=True)
class TrainOpts:
    """How the masks are learnt and the team pruned (the seed's section 3 knobs)."""

    ratio: float = 0.3
    samples: int = 1
    lr: float = 0.1
    rank_weight: float = 0.05
    anchor_weight: float = 0.5
    candidates: Literal["existing", "all"] = "existing"

    def __post_init__(self) -> None:
        check(0.0 <= self.ratio <= 1.0, f"--ratio: expected 0 <= p <= 1, got {self.ratio}")
        ok = self.candidates in ("existing", "all")
        check(ok, f"--candidates: expected existing|all, got {self.candidates!r}")

    def config(self, seed: int) -> TrainConfig:
        """The trainer's settings (a bad value is one line, InputError)."""
        from overseer.prune import TrainConfig

        try:
            return TrainConfig(
                lr=self.lr,
                samples=self.samples,
                rank_weight=self.rank_weight,
                anchor_weight=self.anchor_weight,
                seed=seed,
            )
        except ValueError as exc:
            raise InputError(str(exc)) from None


def _opt(help_text: str) -> Any:
    return typer.Option(help=help_text)


team_options = option_group(
    "shape",
    TeamOpts,
    {
        "team": Annotated[str, _opt(f"Team: {', '.join(TEAMS)}.")],
        "agents": Annotated[int, _opt("Number of agents.")],
        "rounds": Annotated[int, _opt("Dialogue rounds K per query.")],
        "temporal": Annotated[str, _opt("Temporal edges: all, self or none.")],
        "share_thoughts": Annotated[
            bool,
            _opt(
                "Agents send their reasoning with their answers (the seed's setting: whole "
                "responses travel on edges); default: answers only."
            ),
        ],
    },
    (),
    ("team", "agents", "rounds", "temporal", "share_thoughts"),
)
train_options = option_group(
    "learn",
    TrainOpts,
    {
        "ratio": Annotated[float, _opt("Pruning ratio p (0..1).")],
        "samples": Annotated[int, _opt("Sampled structures M per training query.")],
        "lr": Annotated[float, _opt("Adam learning rate of the mask logits.")],
        "rank_weight": Annotated[float, _opt("Weight of the nuclear norm.")],
        "anchor_weight": Annotated[float, _opt("Weight of the anchor term.")],
        "candidates": Annotated[str, _opt("Mask candidates: existing or all.")],
    },
    (),
    ("ratio", "samples", "lr", "rank_weight", "anchor_weight", "candidates"),
)
DEFAULT_TEAM, DEFAULT_TRAINING = TeamOpts(), TrainOpts()
