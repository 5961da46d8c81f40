"""How the three games sample their players: the same temperatures and re-asks in each."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class Sampling:
    """The sampling knobs every game configuration has: `temperature` of a first play,
    `reset_temperature` after a reset (so the replay can differ from the original), and
    `max_retries` re-asks after an unusable answer before the turn is lost."""

    temperature: float = 0.0
    reset_temperature: float = 0.7
    max_retries: int = 1

    def temperature_at(self, resets: int) -> float:
        """The temperature of a turn played after `resets` resets of the game."""
        return self.temperature if resets == 0 else self.reset_temperature
