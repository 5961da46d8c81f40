"""The `overseer` command: one-line errors with exit code 2, and real runs on the embedded model."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from overseer.models._registry import ModelStatus

from .conftest import run_cli


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["bench"], "Missing option '--suite'"),
        (["bench", "--suite", "nope"], "unknown suite"),
        (["bench", "--suite", "gsm8k-sample", "--configs", "direct,bogus"], "bogus"),
        (["bench", "--suite", "gsm8k-sample", "--model", "gpt-17"], "gpt-17"),
        (["bench", "--suite", "gsm8k-sample", "--limit", "0"], "--limit"),
        (["bench", "--suite", "gsm8k-sample", "--seeds", "a,b"], "--seeds"),
        (["bench", "--suite", "gsm8k-sample", "--split", "dev"], "--split"),
        (["bench", "--suite", "gsm8k-sample", "--baseline", "chain"], "--baseline"),
        (["bench", "--suite", "gsm8k-sample", "--wat"], "No such option"),
        (["run"], "QUESTION"),
        (["run", "hi", "--team", "ring"], "ring"),
        (["run", "hi", "--team", "debate", "--rounds", "1"], "rounds"),
        (["run", "--task", "gsm8k-sample"], "SUITE:INDEX"),
        (["run", "--task", "gsm8k-sample:100000"], "out"),
        (["trace", "show", "/nonexistent/trace.jsonl"], "not found"),
        (["report", "--store", "/nonexistent/r.sqlite"], "no result store"),
        (["run", "hi", "--monitor", "/nonexistent/m.json"], "/nonexistent/m.json"),
        (
            ["bench", "--suite", "gsm8k-sample", "--configs", "complete+monitor:/nonexistent/m"],
            "/nonexistent/m.json",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], needle: str
) -> None:
    code, _, err = run_cli(capsys, *argv)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("overseer: error:"), err
    assert needle in lines[0]


def test_bad_team_spec_file_names_the_field(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    spec = tmp_path / "team.json"
    spec.write_text(json.dumps({"agents": [{"name": "a"}], "spatial_edges": [["a", "zz"]]}))
    code, _, err = run_cli(capsys, "run", "hi", "--spec", str(spec))
    assert code == 2 and "team.json" in err and "zz" in err


def test_models_lists_the_embedded_model_installed(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "models")
    assert code == 0
    row = next(line for line in out.splitlines() if "smollm2-135m" in line)
    assert "yes" in row


def test_models_shows_the_extra_to_install(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The install hint keeps its '[extra]' (the table's markup must not eat it)."""
    missing = ModelStatus("big-model", "a big one", 10**9, False, False, "pip install 'x[big7]'")
    monkeypatch.setattr("overseer.models.list_models", lambda: [missing])
    code, out, _ = run_cli(capsys, "models")
    assert code == 0 and "x[big7]" in out, out


@pytest.mark.e2e
def test_run_and_trace_show_on_the_embedded_model(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = run_cli(
        capsys,
        "run",
        "What is 17*23?",
        "--model",
        "smollm2-135m",
        "--team",
        "complete",
        "--agents",
        "3",
        "--rounds",
        "2",
        "--trace-dir",
        str(tmp_path),
    )
    assert code == 0, err
    assert "answer" in out and "agent:a1" in out and "decision:decision" in out
    net = next(line for line in out.splitlines() if line.strip("│ ").startswith("net"))
    assert int(re.findall(r"\d+", net)[-1]) > 100
    trace = Path(re.search(r"trace: (\S+\.jsonl)", out.replace("\n", "")).group(1))  # type: ignore[union-attr]
    assert trace.is_file()
    code, shown, _ = run_cli(capsys, "trace", "show", str(trace))
    assert code == 0
    assert "round start 0" in shown and "round start 1" in shown
    assert shown.count(" message ") >= 1 and "end done" in shown


@pytest.mark.e2e
def test_bench_twice_resumes_with_no_model_call(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    store = str(tmp_path / "r.sqlite")
    args = [
        "bench",
        "--suite",
        "gsm8k-sample",
        "--configs",
        "direct",
        "--limit",
        "2",
        "--store",
        store,
        "--no-progress",
    ]
    code, out, err = run_cli(capsys, *args)
    assert code == 0, err
    assert "2 planned: 0 already done, 2 ran" in out
    assert "gsm8k-sample" in out and "direct" in out
    code, out, _ = run_cli(capsys, *args)
    assert code == 0 and "2 planned: 2 already done, 0 ran" in out
