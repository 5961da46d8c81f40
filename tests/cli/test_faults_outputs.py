"""Faults in what a command reads or writes besides its store (issue 28): report outputs into a
read-only directory, an empty trace file, a monitor file of the wrong shape, the team-size caps
checked before a team is built, and a pydantic message that must stay one line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from overseer.bench import ResultRecord, ResultStore
from overseer.bench.reports import ResultKey
from overseer.cli import main
from overseer.models import Usage


def _one_line(capsys: pytest.CaptureFixture[str], *argv: str, code: int = 2) -> str:
    assert main(list(argv)) == code
    _, err = capsys.readouterr()
    assert err.count("\n") == 1 and err.startswith("overseer: error: "), err
    return err


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root")
@pytest.mark.parametrize("option", ["--out", "--csv", "--jsonl"])
def test_report_outputs_into_a_readonly_directory_are_one_line(
    readonly_dir: Path, option: str
) -> None:
    store = readonly_dir / "r.sqlite"
    with ResultStore(store) as rs:
        rs.add(ResultRecord(ResultKey("direct", "m", "s", "t/1", 0), "A", "A", True, 1.0,
                            {"agent:x": Usage(10, 0, 2)}, 0.1))  # fmt: skip
    store.chmod(0o444)
    readonly_dir.chmod(0o555)
    target = readonly_dir / {"--out": "report", "--csv": "r.csv", "--jsonl": "r.jsonl"}[option]
    src = str(Path(__file__).resolve().parents[2] / "src")
    as_nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable]
    env = {**os.environ, "PYTHONPATH": src, "HOME": str(readonly_dir), "MPLCONFIGDIR": "/tmp"}
    code = "import sys; from overseer.cli import main; sys.exit(main(sys.argv[1:]))"
    done = subprocess.run(
        [*as_nobody, "-c", code, "report", "--store", str(store), option, str(target)],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("overseer: error: report output ")
    assert "not writable" in done.stderr and str(readonly_dir) in done.stderr


def test_trace_show_of_an_empty_file_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "run.jsonl"
    empty.write_text("")
    err = _one_line(capsys, "trace", "show", str(empty))
    assert f"trace file {empty}: empty; expected a JSON Lines run trace" in err


def test_agents_over_the_cap_is_refused_before_a_team_is_built(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    err = _one_line(capsys, "run", "hi", "--agents", "10000", "--trace-dir", str(tmp_path))
    assert "--agents: 10000 agents, more than --max-agents 64" in err
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--team", "complete", "--rounds", "0"], "--rounds: expected >= 1, got 0"),
        (["--agents", "0"], "--agents: expected >= 1, got 0"),
        (["--rounds", "21"], "--rounds: 21 rounds, more than --max-rounds 20"),
    ],
)
def test_team_sizes_are_one_line(
    argv: list[str], words: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    err = _one_line(capsys, "run", "hi", *argv, "--trace-dir", str(tmp_path))
    assert words in err


def test_one_line_flattens_a_pydantic_error() -> None:
    from overseer.cli._io import one_line
    from overseer.runtime import make_team

    with pytest.raises(ValueError) as info:
        make_team("complete", 3, rounds=0)
    text = one_line(info.value)
    assert "\n" not in text and "rounds" in text and "(got 0)" in text


def _monitor_doc() -> dict[str, object]:
    from overseer.monitor.train import FORMAT_VERSION

    return {"format": FORMAT_VERSION, "env": "whodunit-asym", "model": "m", "roles": ["a", "b"],
            "random_p": {}, "random_gain": {}, "candidates": []}  # fmt: skip


@pytest.mark.parametrize("command", [["run", "hi"], ["monitor", "eval"]], ids=["run", "eval"])
def test_monitor_file_with_roles_as_a_list_is_one_line(
    command: list[str], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import numpy as np

    bad = tmp_path / "m.json"
    bad.write_text(json.dumps(_monitor_doc()))
    np.savez(tmp_path / "m.npz", x=np.zeros(1))
    err = _one_line(capsys, *command, "--monitor", str(bad), "--trace-dir", str(tmp_path))
    assert str(bad) in err and "'roles': expected an object keyed by role, got list" in err


def test_monitor_file_without_its_arrays_says_what_is_missing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    lone = tmp_path / "m.json"
    lone.write_text(json.dumps({**_monitor_doc(), "roles": {}}))
    err = _one_line(capsys, "run", "hi", "--monitor", str(lone), "--trace-dir", str(tmp_path))
    assert f"its arrays file {tmp_path / 'm.npz'} is missing" in err
    assert "NAME.json + NAME.npz" in err


def test_tools_python_adds_no_serializer_warning() -> None:
    import warnings

    from overseer.cli._run_options import tools_of, with_tools
    from overseer.runtime import make_team

    team = with_tools(make_team("complete", 2, rounds=1), tools_of("python"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # pydantic's serializer warning would raise here
        dumped = team.model_dump()
    assert all(a["tools"] == ("python",) for a in dumped["agents"])
