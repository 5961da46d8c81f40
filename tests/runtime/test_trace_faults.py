"""An unusable trace directory is one typed OSError naming it, before any model call."""

from __future__ import annotations

from pathlib import Path

import pytest

from overseer.errors import PathError
from overseer.models import ScriptedModel
from overseer.runtime import TeamSpec
from overseer.runtime._run import open_run
from overseer.runtime._trace import Trace


def test_trace_under_a_file_names_the_directory(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x")
    with pytest.raises(PathError, match=r"trace directory .*afile.*not a directory"):
        Trace(tmp_path / "afile" / "run.jsonl", "r1")
    with pytest.raises(OSError, match=r"trace directory .*afile"):
        Trace(tmp_path / "afile" / "sub" / "run.jsonl", "r1")
    assert (tmp_path / "afile").read_text() == "x"


def test_open_run_with_an_unusable_trace_dir(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x")
    team = TeamSpec.model_validate(
        {"agents": [{"name": "a", "role": "solver"}], "decision": "last", "rounds": 1}
    )
    with pytest.raises(PathError, match="trace directory"):
        open_run("q", team, ScriptedModel(["x"]), trace_dir=tmp_path / "afile")
    run = open_run("q", team, ScriptedModel(["x"]), trace_dir=tmp_path / "runs")
    assert run.trace.path.parent == tmp_path / "runs"
    run.trace.close()
