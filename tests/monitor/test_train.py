"""Monitor selection on synthetic games where the right answer is known; save/load; gains."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from overseer.monitor.train import (
    MonitorSet,
    gains,
    random_gain_curve,
    report_lines,
    train_monitors,
)


def synthetic(n_games: int, seed: int, prefix: str) -> list[dict]:
    """Games fail exactly when the accuser's varentropy spikes at some turn; the rest is noise."""
    rng = np.random.default_rng(seed)
    rows = []
    for g in range(n_games):
        fails = rng.random() < 0.4
        turns = int(rng.integers(3, 9))
        spike = int(rng.integers(1, turns + 1)) if fails else -1
        for t in range(1, turns + 1):
            for role in ("accuser", "intel"):
                var = rng.uniform(0.0, 0.3)
                if role == "accuser" and t == spike:
                    var = rng.uniform(0.8, 1.0)
                rows.append(
                    {
                        "game": f"{prefix}{g}",
                        "role": role,
                        "turn": t,
                        "entropy": rng.uniform(0, 2),
                        "varentropy": var,
                        "kurtosis": rng.uniform(0, 5),
                        "success": not fails,
                    }
                )
    return rows


def test_selection_finds_the_informative_feature_and_beats_random() -> None:
    train, val = synthetic(150, 0, "t"), synthetic(80, 1, "v")
    ms = train_monitors(train, val, env="synthetic", model="none")
    acc = ms.monitors["accuser"]
    assert "varentropy" in acc.inputs and acc.inputs[0] == "turn"
    fails = len({r["game"] for r in val if not r["success"]})
    c = next(c for c in ms.candidates if c.role == "accuser" and c.gain == acc.gain)
    assert c.tp >= 0.9 * fails and c.fp <= 2
    assert acc.gain > ms.random_gain["accuser"] + 10
    # the intel's rows carry no signal: its best gain is far below the accuser's
    assert ms.monitors["intel"].gain < acc.gain / 2
    assert ms.meta["train_games"] == 150 and ms.meta["validation_games"] == 80
    lines = report_lines(ms)
    assert any(line[0] == "accuser" and line[-1] == "*" for line in lines)
    assert any(line[1].startswith("random p=") for line in lines)


def test_spiking_rows_get_low_estimates() -> None:
    ms = train_monitors(synthetic(150, 0, "t"), synthetic(80, 1, "v"), env="s", model="m")
    acc = ms.monitors["accuser"]
    row = {"turn": 4, "entropy": 1.0, "varentropy": 0.9, "kurtosis": 2.0}
    calm = {**row, "varentropy": 0.1}
    assert acc.estimate_row(row) < acc.tau <= acc.estimate_row(calm)


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    ms = train_monitors(synthetic(60, 2, "t"), synthetic(30, 3, "v"), env="e", model="m")
    path = ms.save(tmp_path / "mon")
    assert path.suffix == ".json" and (tmp_path / "mon.npz").is_file()
    back = MonitorSet.load(tmp_path / "mon.json")
    x = np.random.default_rng(0).uniform(0, 3, size=(20, 4))
    for role, m in ms.monitors.items():
        b = back.monitors[role]
        assert (b.inputs, b.degree, b.tau) == (m.inputs, m.degree, m.tau)
        cols = x[:, : len(m.inputs)]
        assert np.array_equal(b.estimate(cols), m.estimate(cols))
    assert back.random_p == ms.random_p and back.meta == ms.meta
    assert len(back.candidates) == len(ms.candidates) == 2 * 7 * 5


def test_dotted_model_names_keep_their_dots(tmp_path: Path) -> None:
    ms = train_monitors(synthetic(60, 2, "t"), synthetic(30, 3, "v"), env="e", model="m")
    path = ms.save(tmp_path / "monitor-whodunit-qwen2.5-coder-0.5b.json")
    assert path.name == "monitor-whodunit-qwen2.5-coder-0.5b.json"
    assert (tmp_path / "monitor-whodunit-qwen2.5-coder-0.5b.npz").is_file()
    assert MonitorSet.load(path).monitors.keys() == ms.monitors.keys()
    assert MonitorSet.load(tmp_path / "monitor-whodunit-qwen2.5-coder-0.5b").random_p


def test_bad_inputs_are_named(tmp_path: Path) -> None:
    rows = synthetic(5, 0, "t")
    with pytest.raises(ValueError, match="train row 0: missing 'kurtosis'"):
        train_monitors(
            [{k: v for k, v in rows[0].items() if k != "kurtosis"}], rows, env="e", model="m"
        )
    with pytest.raises(ValueError, match="'entropy' must be a finite number"):
        train_monitors([{**rows[0], "entropy": float("nan")}], rows, env="e", model="m")
    with pytest.raises(ValueError, match="cannot read"):
        MonitorSet.load(tmp_path / "none.json")
    (tmp_path / "x.json").write_text('{"format": 99}')
    np.savez(tmp_path / "x.npz", a=np.zeros(1))
    with pytest.raises(ValueError, match="expected format 1"):
        MonitorSet.load(tmp_path / "x.json")


def test_gain_by_hand() -> None:
    # 4 games: two failed (lowest estimates .1, .6), two succeeded (.3, .9); s = 0.5
    lowest = np.array([0.1, 0.6, 0.3, 0.9])
    success = np.array([False, False, True, True])
    g, tp, fp = gains(lowest, success, np.array([0.2, 0.5, 0.7]), 4, 0.5)
    assert tp.tolist() == [1, 1, 2] and fp.tolist() == [0, 1, 1]
    assert g.tolist() == pytest.approx([12.5, 0.0, 12.5])
    # random: a 2-turn failed game and a 1-turn successful game, p = 0.5, s = 0.5
    r = random_gain_curve(np.array([2.0, 1.0]), np.array([False, True]), np.array([0.5]), 2, 0.5)
    assert r.tolist() == pytest.approx([100 * (0.75 * 0.5 - 0.5 * 0.5) / 2])
