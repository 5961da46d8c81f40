"""Multi-agent environments where one rogue agent can sink the team: WhoDunitEnv, GovSim,
CodeGen.

Exported is, for each game, its configuration, how to make or split its instances, how to play
one and what a play returns, and the stable seed of a model call in a game (`call_seed`).
Prompts, move schemas and the attribute tables stay in `overseer.envs.whodunit`, `.govsim`,
`.codegen` and the private modules.
"""

from overseer.envs._loop import GameResult, call_seed, play_whodunit
from overseer.envs.codegen import CodeGenConfig, CodeGenResult, codegen_splits, play_codegen
from overseer.envs.govsim import GovSimConfig, GovSimResult, govsim_splits, play_govsim
from overseer.envs.whodunit import Game, WhoDunitConfig, generate_games

__all__ = [
    "CodeGenConfig",
    "CodeGenResult",
    "Game",
    "GameResult",
    "GovSimConfig",
    "GovSimResult",
    "WhoDunitConfig",
    "call_seed",
    "codegen_splits",
    "generate_games",
    "govsim_splits",
    "play_codegen",
    "play_govsim",
    "play_whodunit",
]
