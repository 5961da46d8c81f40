"""`overseer report`: the paired table against the baseline, as text and as JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from overseer.bench import ResultRecord, ResultStore
from overseer.bench._report import default_baseline, paired_groups
from overseer.bench._store import ResultKey
from overseer.cli import main
from overseer.models import Usage


def rec(config: str, task: int, correct: bool, tokens: int, **kw: object) -> ResultRecord:
    return ResultRecord(
        key=ResultKey(config, "m", str(kw.get("suite", "s")), f"t/{task}", 0),
        answer="",
        parsed=None,
        correct=correct,
        score=float(correct),
        usage_by_actor={"agent:a": Usage(tokens, 0), "supervisor:supervisor": Usage(0, 10)},
        latency_s=0.0,
        error=kw.get("error"),  # type: ignore[arg-type]
        finished_at=float(kw.get("at", 0.0)),  # type: ignore[arg-type]
    )


def store_8_2(path: Path) -> Path:
    """14 pairs: the composed config wins 8, loses 2, ties 3, errors once; half the tokens."""
    with ResultStore(path) as rs:
        for t in range(14):
            base_ok = t >= 8 and t != 12
            conf_ok = t < 8 or t in (10, 11)
            rs.add(rec("complete", t, base_ok, 190, at=t))
            err = "budget exceeded" if t == 13 else None
            rs.add(rec("complete+x", t, conf_ok and err is None, 90, error=err, at=100 + t))
    return path


def test_report_prints_the_paired_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = store_8_2(tmp_path / "r.sqlite")
    assert main(["report", "--store", str(path)]) == 0  # baseline: the config run first
    out = capsys.readouterr().out
    assert "paired vs complete" in out
    line = next(x for x in out.splitlines() if "complete+x" in x and "8/2/3" in x)
    cells = [c.strip() for c in line.split("\u2502") if c.strip()]
    # n, err base, err conf, acc base, acc conf, diff, McNemar p, W/L/T, ratio, CI
    assert cells[3:12] == ["13", "0", "1", "0.308", "0.769", "+0.462", "0.109", "8/2/3", "0.50x"]
    assert cells[12] == "0.50-0.50"


def test_report_json_has_the_paired_fields(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = store_8_2(tmp_path / "r.sqlite")
    args = ["report", "--json", "--store", str(path), "--configs", "complete+x,complete"]
    assert main([*args, "--baseline", "complete"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["baseline"] == "complete" and [r["config"] for r in doc["rows"]] == [
        "complete+x",
        "complete",
    ]
    (p,) = doc["paired"]
    assert (p["suite"], p["config"], p["n"], p["errors_config"]) == ("s", "complete+x", 13, 1)
    assert (p["wins"], p["losses"], p["ties"]) == (8, 2, 3)
    assert p["mcnemar_p"] == pytest.approx(0.109375) and p["token_ratio"] == pytest.approx(0.5)
    # without --baseline, the first of --configs is the baseline
    assert main(args) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["baseline"] == "complete+x" and doc["paired"][0]["config"] == "complete"


def test_pairs_are_per_suite_and_skip_suites_without_the_baseline() -> None:
    recs = [rec("b", 0, True, 10), rec("c", 0, False, 10), rec("c", 0, True, 5, suite="other")]
    groups = paired_groups(recs, "b")
    assert [(s, p.config, p.losses) for s, _, p in groups] == [("s", "c", 1)]
    assert default_baseline(recs) == "b" and default_baseline([]) is None
