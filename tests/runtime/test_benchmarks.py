"""The runtime's benchmarks run end to end on a tiny setting and print their tables."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

Load = Callable[[str], ModuleType]


def test_overhead_prints_steps_events_and_every_layer(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    benchmark_script: Load,
) -> None:
    mod = benchmark_script("runtime_overhead")
    argv = ["x", "--runs", "2", "--repeats", "1", "--agents", "3", "--supervisors", "0,2"]
    monkeypatch.setattr(sys, "argv", [*argv, "--trace-dir", str(tmp_path / "traces")])
    mod.main()
    out = capsys.readouterr().out
    assert "trace file creation alone" in out and list((tmp_path / "traces").iterdir()) == []
    assert "executor + bus, 0 supervisors" in out and "executor + bus, 2 supervisors" in out
    # 3 agents x 2 rounds + the decision = 7 steps a run; 2 runs
    assert "│    14 │" in out
    for layer in ("executor", "bus", "ledger", "trace", "structured ask", "scripted model"):
        assert layer in out
    assert "scripted model call alone" in out


def test_layer_shares_sum_to_one_and_library_time_goes_to_its_caller(
    benchmark_script: Load,
) -> None:
    import cProfile
    import json
    import pstats
    import time

    mod = benchmark_script("runtime_overhead")

    def dumps_many() -> None:  # this file is in no layer: "other"
        for _ in range(200):
            json.dumps({"a": list(range(50))})

    prof = cProfile.Profile(time.process_time)
    prof.enable()
    dumps_many()
    prof.disable()
    shares = mod.layer_shares(pstats.Stats(prof))
    assert abs(sum(shares.values()) - 1.0) < 1e-9
    assert shares.get("other", 0.0) > 0.9  # json's time is charged to its caller's layer


def test_makespan_critical_path_and_table(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], benchmark_script: Load
) -> None:
    mod = benchmark_script("runtime_makespan")
    from overseer.runtime import make_team

    assert mod.critical_path_calls(make_team("chain", 3, rounds=2)) == 6
    assert mod.critical_path_calls(make_team("debate", 4, rounds=2)) == 3  # + the decision
    monkeypatch.setattr(sys, "argv", ["x", "--latency", "0.01", "--agents", "3"])
    mod.main()
    out = capsys.readouterr().out
    assert "layered" in out and "star" in out and "debate" in out


def test_prefix_cache_serves_the_shared_head_on_the_real_model(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    embedded_model: object,
    benchmark_script: Load,
) -> None:
    """Every agent after the first reads the rules and the task from the cache; in the second
    run (another question) even the first agent finds the rules cached, and the decision
    reuses the last agent's head."""
    import re

    mod = benchmark_script("prefix_cache")
    monkeypatch.setattr(mod, "load_model", lambda name: embedded_model)
    monkeypatch.setattr(sys, "argv", ["x", "--agents", "3", "--rounds", "1", "--queries", "2"])
    mod.main()
    out = capsys.readouterr().out
    rows = re.findall(r"│ (\S+:\S+|net)\s*│\s*(\d+) │\s*(\d+) │\s*(\d+) │\s*(\d+)% │", out)
    runs = [rows[:5], rows[5:]]  # a1, a2, a3, the decision, net; twice
    assert len(rows) == 10 and [r[0] for r in runs[1]][-1] == "net", out
    for table in runs:
        share = {actor: int(pct) for actor, _, _, _, pct in table}
        assert (
            share["agent:a2"] >= 70 and share["agent:a3"] >= 70 and share["decision:decision"] >= 50
        )
    first_of_second = dict((a, int(c)) for a, _, _, c, _ in runs[1])["agent:a1"]
    assert first_of_second > 50  # the rules, cached by the first run
