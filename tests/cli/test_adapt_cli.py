"""`overseer adapt`: the repository round-trips through editable JSON; bad input exits 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import run_cli


def test_init_export_edit_import_round_trip(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    store, dump = tmp_path / "adapt.sqlite", tmp_path / "cases.json"
    code, out, _ = run_cli(capsys, "adapt", "init", "--store", str(store))
    n = int(out.split(": ")[1].split()[0])
    assert code == 0 and n >= 1 and store.is_file()
    code, out, _ = run_cli(capsys, "adapt", "show", "--store", str(store), "--export", str(dump))
    assert code == 0 and f"exported {n} cases" in out
    data = json.loads(dump.read_text())
    case = data["sop_cases"][0]
    case["query"] = "Plan a weekend in Lisbon on a budget."
    dump.write_text(json.dumps({"sop_cases": [case]}))
    other = tmp_path / "other.sqlite"
    code, out, _ = run_cli(capsys, "adapt", "show", "--store", str(other), "--import", str(dump))
    assert code == 0 and "imported 1 cases" in out and "Plan a weekend in Lisbon" in out


def test_an_import_with_a_bad_field_names_the_file_and_the_field(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    store, dump = tmp_path / "adapt.sqlite", tmp_path / "cases.json"
    assert run_cli(capsys, "adapt", "init", "--store", str(store))[0] == 0
    run_cli(capsys, "adapt", "show", "--store", str(store), "--export", str(dump))
    data = json.loads(dump.read_text())
    del data["sop_cases"][0]["sop"]["agents"]
    dump.write_text(json.dumps(data))
    code, _, err = run_cli(capsys, "adapt", "show", "--store", str(store), "--import", str(dump))
    assert code == 2 and "cases.json" in err and "sop_cases[0]" in err and "agents" in err


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["adapt", "show", "--store", "/nonexistent/a.sqlite"], "adapt init"),
        (["adapt", "init", "--limit", "0", "--suite", "humaneval"], "--limit"),
        (["adapt", "run", "hi", "--tools", "shell"], "shell"),
        (["bench", "--suite", "travel", "--configs", "masfly-bogus"], "masfly-bogus"),
    ],
)
def test_bad_adapt_input_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], needle: str
) -> None:
    code, _, err = run_cli(capsys, *argv)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and needle in lines[0], err
