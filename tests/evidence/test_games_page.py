"""The monitor page's *acted on* column: a monitor acted on a game when it reset it (issue 27:
"acted on" defined per mechanism)."""

from __future__ import annotations

from overseer.bench import ResultRecord
from overseer.bench.reports import ResultKey
from overseer.evidence.games import reset


def _game(extra: dict[str, object]) -> ResultRecord:
    key = ResultKey("monitor-cap1@x", "m", "whodunit-asym", "g1", 0)
    return ResultRecord(key, "", None, False, 0.0, {}, 1.0, extra=extra)


def test_a_game_counts_as_acted_on_when_the_monitor_reset_it() -> None:
    assert reset(_game({"turns": 8, "resets": 2})) is True
    assert reset(_game({"turns": 3, "resets": 0})) is False
    assert reset(_game({})) is None  # a record without the count: not known
