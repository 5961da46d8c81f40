"""The rogue-agent monitor on the real embedded model: a short game with logprob features, CLI."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from overseer.cli import main
from overseer.envs import WhoDunitConfig, generate_games, play_whodunit
from overseer.models import LlamaCppModel
from overseer.monitor import UncertaintyMonitor

pytestmark = pytest.mark.e2e

TINY = WhoDunitConfig(n_suspects=4, n_attributes=4, max_turns=4, thoughts_chars=0, max_tokens=60)


async def test_short_whodunit_game_collects_feature_rows(embedded_model: LlamaCppModel) -> None:
    game = generate_games(TINY)["test"][0]
    rec = UncertaintyMonitor()
    r = await play_whodunit(game, embedded_model, TINY, supervisors=[rec], seed=0)
    assert 1 <= r.turns <= 4 and r.resets == 0 and rec.missing == 0
    assert len(rec.rows) == r.turns
    assert [row["role"] for row in rec.rows][:2] == ["accuser", "intel"][: len(rec.rows)]
    for row in rec.rows:
        # the grammar makes every answer JSON with an "action" digit: a real decision position
        assert row["positions"] >= 1 and not row["fallback"]
        assert 0.0 <= row["entropy"] <= math.log(10) + 1e-9
        assert row["varentropy"] >= 0.0 and math.isfinite(row["kurtosis"])
    assert set(r.usage_by_actor) <= {"agent:Beth", "agent:Alex"}


def test_cli_collect_train_eval(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    common = [
        "--env",
        "whodunit-asym",
        "--model",
        "smollm2-135m",
        "--suspects",
        "4",
        "--attributes",
        "4",
        "--turns",
        "2",
        "--thoughts",
        "0",
        "--max-tokens",
        "40",
        "--store",
        str(tmp_path / "r.sqlite"),
    ]
    assert (
        main(["monitor", "collect", *common, "--games", "1", "--val-games", "1", "--no-progress"])
        == 0
    )
    assert "2 games planned" in capsys.readouterr().out
    mon = str(tmp_path / "m.json")
    assert main(["monitor", "train", *common, "--out", mon]) == 0
    out = capsys.readouterr().out
    assert "trained on 1 games (2 turns)" in out and "random p=" in out
    assert (
        main(
            [
                "monitor",
                "eval",
                *common,
                "--monitor",
                mon,
                "--games",
                "1",
                "--caps",
                "1",
                "--no-progress",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "none" in out and "monitor-cap1@" in out and "random-cap1@" in out


async def test_one_govsim_month_with_features(embedded_model: LlamaCppModel) -> None:
    from overseer.envs.govsim import GovSimConfig, play_govsim

    cfg = GovSimConfig(months=1, reflect=False, max_tokens=40, message_chars=60)
    rec = UncertaintyMonitor()
    r = await play_govsim(100, embedded_model, cfg, supervisors=[rec])
    assert len(r.catches) == 1 and all(0 <= x <= 100 for x in r.catches[0])
    harvest = [row for row in rec.rows if row["role"] == "harvest"]
    assert len(harvest) == 5 and all(not row["fallback"] for row in harvest)


async def test_one_codegen_round_with_judge_features(embedded_model: LlamaCppModel) -> None:
    from overseer.envs.codegen import CodeGenConfig, play_codegen
    from overseer.tasks import load_suite

    task = next(t for t in load_suite("humaneval", split="all") if t.id == "HumanEval/53")
    cfg = CodeGenConfig(  # one coder, one round, short answers: 3 model calls in all
        n_coders=1,
        rounds=1,
        max_tokens=48,
        review_tokens=48,
        feedback_chars=30,
        max_tests=1,
        test_chars=40,
        test_timeout_s=2.0,
        max_retries=0,
    )
    rec = UncertaintyMonitor()
    r = await play_codegen(task, embedded_model, cfg, supervisors=[rec])
    # every answer is handled: code or a recorded error, pass@1 by the real tests
    assert r.turns == 1 and r.resets == 0 and len(r.solved_by) == 1
    assert r.invalid_actions == len(r.errors) <= 3
    assert r.success == (r.chosen is not None and r.solved_by[r.chosen - 1])
    (row,) = rec.rows
    assert row["role"] == "judge" and rec.missing == 0 and math.isfinite(row["kurtosis"])
    if r.scores[0] is not None:  # the grammar-bound review finished: its scores are positions
        assert row["positions"] >= 1 and not row["fallback"]
