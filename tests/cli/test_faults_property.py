"""Issue 43, property test: every command that reads a file (`replay`, `attribute`,
`trace show`, `report --from-export`, a monitor file, `--spec`) answers random bytes, random
JSON and truncated real files with one stderr line and exit 2 (or, for an input that happens
to be valid, exit 0), never a traceback."""

from __future__ import annotations

import gzip
import json
import lzma
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from overseer.cli import main

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = settings(
    max_examples=25,
    deadline=None,
    derandomize=True,  # seeded: the same examples on every run
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


pytestmark = pytest.mark.usefixtures("no_model")  # conftest: no model is loaded


#: command line for a file, and the suffix the file gets
COMMANDS: dict[str, tuple[Callable[[Path], list[str]], str]] = {
    "replay": (lambda f: ["replay", str(f), "--json"], ".json"),
    "replay-jsonl": (lambda f: ["replay", str(f), "--json"], ".jsonl"),
    "attribute": (lambda f: ["attribute", str(f), "--method", "last-agent", "--json"], ".json"),
    "trace-show": (lambda f: ["trace", "show", str(f)], ".jsonl"),
    "from-export": (lambda f: ["report", "--from-export", str(f)], ".jsonl.gz"),
    "monitor": (lambda f: ["run", "hi", "--monitor", str(f), "--no-progress"], ".json"),
    "spec": (lambda f: ["run", "hi", "--spec", str(f), "--no-progress"], ".json"),
}


def _check(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str, data: bytes, *, bad: bool
) -> None:
    argv, suffix = COMMANDS[name]
    f = tmp_path / f"input{suffix}"
    f.write_bytes(data)
    capsys.readouterr()
    code = main([*argv(f), "--trace-dir", str(tmp_path)] if argv(f)[0] == "run" else argv(f))
    err = capsys.readouterr().err
    allowed = (2,) if bad else (0, 1, 2)
    assert code in allowed, (name, data[:200], err)
    if code == 2:
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("overseer: error: "), (name, err)
    assert "Traceback" not in err


def _json_values() -> st.SearchStrategy[Any]:
    scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12)
    return st.recursive(
        scalars,
        lambda inner: (
            st.lists(inner, max_size=4)
            | st.dictionaries(
                st.sampled_from(["history", "messages", "role", "content", "event", "agents", "x"])
                | st.text(max_size=6),
                inner,
                max_size=4,
            )
        ),
        max_leaves=12,
    )


def _not_json(data: bytes) -> bool:
    try:
        json.loads(data)
    except (ValueError, RecursionError):
        return True
    return False


@pytest.mark.parametrize("name", list(COMMANDS))
@SETTINGS
@given(data=st.binary(max_size=300))
def test_random_bytes_are_one_line_exit_2(
    name: str, data: bytes, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assume(_not_json(data) and data.strip())
    _check(capsys, tmp_path, name, data, bad=True)


@pytest.mark.parametrize("name", list(COMMANDS))
@SETTINGS
@given(value=_json_values())
def test_random_json_is_one_line_or_accepted(
    name: str, value: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    data = json.dumps(value).encode()
    if COMMANDS[name][1] == ".jsonl.gz":
        data = gzip.compress(data)
    _check(capsys, tmp_path, name, data, bad=False)


def _real_whowhen() -> bytes:
    with lzma.open(ROOT / "src/overseer/traces/data/whowhen.jsonl.xz", "rt") as fh:
        row = json.loads(fh.readline())
    return json.dumps(row.get("log", row)).encode()


def _real_spec() -> bytes:
    from overseer.runtime import make_team

    return make_team("complete", 2, rounds=1).model_dump_json().encode()


def _real_monitor() -> bytes:
    from overseer.monitor.train import FORMAT_VERSION

    doc = {"format": FORMAT_VERSION, "env": "whodunit-asym", "model": "m", "roles": {},
           "random_p": {}, "random_gain": {}, "candidates": []}  # fmt: skip
    return json.dumps(doc).encode()


def _real_trace(tmp: Path) -> bytes:
    runs = tmp / "runs"
    assert main(["run", "hi", "--agents", "2", "--rounds", "1", "--trace-dir", str(runs)]) == 0
    return next(runs.glob("*.jsonl")).read_bytes()


def _real_file(name: str, tmp: Path) -> bytes:
    if name in ("replay", "attribute"):
        return _real_whowhen()
    if name in ("replay-jsonl", "trace-show"):
        return _real_trace(tmp)
    if name == "from-export":
        return (ROOT / "docs/evidence/data/masfly.jsonl.gz").read_bytes()
    return _real_monitor() if name == "monitor" else _real_spec()


@pytest.mark.parametrize("name", list(COMMANDS))
def test_truncated_real_files_are_one_line_or_accepted(
    name: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    whole = _real_file(name, tmp_path)
    capsys.readouterr()
    step = max(1, len(whole) // 23)
    lines = COMMANDS[name][1] == ".jsonl"  # a JSON Lines file cut at a line end is still valid
    for cut in range(1, len(whole), step):  # cuts through the middle of values and lines
        _check(capsys, tmp_path, name, whole[:cut], bad=not lines)
