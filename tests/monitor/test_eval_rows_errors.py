"""The monitor's comparison table counts errored games in their own column, not as failures."""

from __future__ import annotations

from overseer.bench import ResultRecord
from overseer.bench.reports import ResultKey
from overseer.experiments.monitor import eval_columns, eval_rows
from overseer.models import Usage


def game(config: str, i: int, success: bool, error: str | None = None) -> ResultRecord:
    return ResultRecord(ResultKey(config, "m", "whodunit", f"g{i}", 0), "", None, success,
                        float(success), {"agent:a": Usage(10, 1)}, 0.0, error,
                        {"turns": 2, "resets": 0, "ended": "award"})  # fmt: skip


def test_errored_games_are_apart_and_an_all_error_config_still_shows() -> None:
    recs = [game("none", 0, True), game("none", 1, False), game("none", 2, False, "server gone")]
    recs += [game("monitor", 0, False, "boom")]
    cols = eval_columns("whodunit-asym")
    assert cols[:3] == ("config", "games", "success %") and cols[-1] == "errors"
    none, mon = eval_rows("whodunit-asym", recs, ["none", "monitor"])
    assert none[:3] == ["none", "2", "50.0"] and none[-1] == "1"
    assert mon[:3] == ["monitor", "0", "-"] and mon[-1] == "1" and len(mon) == len(cols)
