"""A trained monitor file for composing `+monitor:FILE` onto teams."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from overseer.monitor import train_monitors


def _rows(n_games: int, seed: int, prefix: str) -> list[dict]:
    """Games fail exactly when an agent's varentropy is high (a learnable monitor)."""
    rng = np.random.default_rng(seed)
    out = []
    for g in range(n_games):
        fails = rng.random() < 0.4
        for t in range(1, 4):
            var = rng.uniform(0.8, 1.0) if fails and t == 2 else rng.uniform(0.0, 0.3)
            out.append({"game": f"{prefix}{g}", "role": "a1", "turn": t, "entropy": 1.0,
                        "varentropy": var, "kurtosis": 1.0, "success": not fails})  # fmt: skip
    return out


@pytest.fixture
def toy_monitor(tmp_path: Path) -> Path:
    ms = train_monitors(_rows(60, 0, "t"), _rows(40, 1, "v"), env="toy", model="scripted")
    return ms.save(tmp_path / "toy-monitor")
