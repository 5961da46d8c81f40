"""`overseer.stats` without scipy: the exact McNemar test and the Wilson interval equal scipy's
`binomtest` (where scipy is installed, as with the `bench` extra), and importing them loads no
scipy."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest

from overseer.stats import mcnemar_exact, wilson


def test_mcnemar_by_hand() -> None:
    assert mcnemar_exact(8, 2) == pytest.approx(0.109375, rel=1e-12)
    assert mcnemar_exact(5, 0) == pytest.approx(2 / 32, rel=1e-12)
    assert mcnemar_exact(3, 3) == 1.0
    assert mcnemar_exact(3, 4) == 1.0
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(0, 200) == pytest.approx(2.0**-199, rel=1e-12)
    with pytest.raises(ValueError, match="counts >= 0"):
        mcnemar_exact(-1, 2)


def test_wilson_by_hand() -> None:
    lo, hi = wilson(5, 10)
    assert (lo, hi) == pytest.approx((0.2365930, 0.7634070), abs=1e-6)
    assert wilson(0, 10)[0] == pytest.approx(0.0, abs=1e-15)
    assert all(math.isnan(v) for v in wilson(0, 0))
    with pytest.raises(ValueError, match="0 <= k <= n"):
        wilson(11, 10)


def test_they_equal_scipys_binomtest() -> None:
    stats = pytest.importorskip("scipy.stats")
    for n in range(1, 61):
        for k in range(n + 1):
            ref = float(stats.binomtest(k, n, 0.5).pvalue)
            assert mcnemar_exact(k, n - k) == pytest.approx(ref, rel=1e-12, abs=0)
            for level in (0.9, 0.95, 0.99):
                ci = stats.binomtest(k, n).proportion_ci(confidence_level=level, method="wilson")
                assert wilson(k, n, level=level) == pytest.approx((ci.low, ci.high), abs=1e-12)


def test_importing_them_loads_no_scipy() -> None:
    code = "import sys, overseer.stats; print('scipy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
