"""`overseer run --rules` (issue 38, item 3): the rule tier on the bus of any run, alone or
with --supervise (mode rules+llm) or --monitor; the result says what oversaw the run and what
acted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from overseer.cli import main
from overseer.models import ScriptedModel
from overseer.supervise.rules import fired

# the same call until the agent's steps run out: the rule tier masks the older copies of its
# unchanged output (with `loop_limit` 3 and the runtime's 4 steps a turn never reaches a refusal)
LOOP = {"thought": "again", "action": "python", "args": {"code": "print('noise ' * 100)"}}


def _run(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    *flags: str,
) -> tuple[int, str]:
    """`overseer run` on a scripted model that repeats one tool call until it is stopped."""
    model = ScriptedModel(lambda messages: LOOP)
    monkeypatch.setattr("overseer.models.load_model", lambda *a, **kw: model)
    argv = ["run", "Loop.", "--agents", "1", "--rounds", "1", "--tools", "python"]
    code = main([*argv, *flags, "--no-progress", "--trace-dir", str(tmp_path), "--allow-errors"])
    return code, capsys.readouterr().out


def test_rules_alone_act_on_the_run_and_say_so(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    code, out = _run(capsys, monkeypatch, tmp_path, "--rules", "--json")
    doc = json.loads(out)["oversight"]
    assert code == 0 and doc["overseers"] == ["supervision (rules)"]
    assert fired(doc["stats"]).get("masking", 0) >= 1  # the rule plug-ins' firings


def test_without_flags_nothing_oversees_the_run(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    code, out = _run(capsys, monkeypatch, tmp_path)
    assert code == 0
    assert "oversaw the run: nothing (no plug-in on the bus)" in out
    assert "acted:" not in out


def test_rules_text_output_names_the_firings(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    code, out = _run(capsys, monkeypatch, tmp_path, "--rules")
    assert code == 0 and "oversaw the run: supervision (rules)" in out
    assert "rule firings: masking 2" in out


def test_rules_with_supervise_is_mode_rules_llm(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from overseer.cli import _run_plugins

    asked: list[tuple[Any, ...]] = []
    real = _run_plugins.supervise_plugin

    def spy(*args: Any, **kw: Any) -> Any:
        asked.append(args)
        return real(*args, **kw)

    monkeypatch.setattr(_run_plugins, "supervise_plugin", spy)
    code, out = _run(capsys, monkeypatch, tmp_path, "--rules", "--supervise", "--json")
    assert code == 0 and [a[0] for a in asked] == ["rules+llm"]
    assert json.loads(out)["oversight"]["overseers"] == ["supervision (rules+llm)"]


def test_filter_preset_needs_a_supervisor_and_supervisor_model_needs_the_llm(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code = main(["run", "hi", "--filter-preset", "gaia", "--trace-dir", str(tmp_path)])
    assert code == 2 and "--filter-preset: needs --supervise or --rules" in capsys.readouterr().err
    code = main(["run", "hi", "--rules", "--supervisor-model", "x", "--trace-dir", str(tmp_path)])
    assert code == 2 and "needs --supervise" in capsys.readouterr().err


@pytest.mark.e2e
def test_rules_on_the_embedded_model(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Plumbing on the real SmolLM2: the run ends and its output names the rule tier."""
    argv = ["run", "What is 2+2?", "--model", "smollm2-135m", "--agents", "1", "--rounds", "1"]
    code = main([*argv, "--rules", "--no-progress", "--trace-dir", str(tmp_path), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code in (0, 1)
    assert doc["oversight"]["overseers"] == ["supervision (rules)"]
    rules = {"purification", "grounding", "loop_breaker", "masking"}
    assert set(doc["oversight"]["stats"]) <= rules
