"""The monitor page's play statistics: how often each configuration reset a game, and how
long games ran (issue 27: the page gives the reset rate and the mean game length)."""

from __future__ import annotations

from overseer.bench import ResultRecord
from overseer.bench.reports import ResultKey
from overseer.evidence.games import play_stats_text


def _game(config: str, task: str, turns: int, resets: int) -> ResultRecord:
    key = ResultKey(config, "m", "whodunit-asym", task, 0)
    return ResultRecord(
        key, "", None, False, 0.0, {}, 1.0, extra={"turns": turns, "resets": resets}
    )


def test_play_stats_count_reset_games_resets_and_turns_per_configuration() -> None:
    recs = [
        _game("none", "g1", 4, 0),
        _game("none", "g2", 6, 0),
        _game("cap2", "g1", 8, 2),
        _game("cap2", "g2", 5, 0),
        _game("cap2", "g3", 5, 1),
    ]
    text = play_stats_text(recs, ["none", "cap2"], {"cap2": "monitor, 2 resets"})
    assert "none: reset in 0/2 games (0.00 resets a game), 5.0 turns a game" in text
    assert "monitor, 2 resets: reset in 2/3 games (1.00 resets a game), 6.0 turns a game" in text


def test_play_stats_skip_records_without_turns_such_as_direct_calls() -> None:
    direct = ResultRecord(ResultKey("direct", "m", "w", "g1", 0), "", None, True, 1.0, {}, 1.0)
    assert play_stats_text([direct], ["direct"], {}) == ""
