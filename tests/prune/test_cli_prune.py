"""`overseer prune`: input errors, the whole flow on a scripted model (resumable), and the
acceptance run on the real embedded model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import overseer.models
from overseer.cli import main
from overseer.models import ScriptedModel
from overseer.runtime import TeamSpec


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--team", "ring"], "--team"),
        (["--ratio", "1.5"], "--ratio"),
        (["--attack", "poison"], "--attack"),
        (["--train", "0"], "--train"),
        (["--temporal", "some"], "--temporal"),
        (["--candidates", "few"], "--candidates"),
        (["--samples", "0"], "samples"),
        (["--model", "gpt-17"], "gpt-17"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], needle: str
) -> None:
    code, _, err = run_cli(capsys, "prune", "--suite", "mmlu-sample", *argv)
    assert code == 2 and needle in err and len(err.strip().splitlines()) == 1


def test_unknown_suite(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "prune", "--suite", "nope")
    assert code == 2 and "unknown suite" in err


def scripted() -> ScriptedModel:
    """Agents think B; the decision node (actor "decision") answers B."""
    return ScriptedModel(
        lambda m: {"thought": "t", "action": "answer", "answer": "I think B. Answer: B"},
        by_actor={"decision": lambda m: "Answer: B"},
    )


def test_prune_flow_on_a_scripted_model_resumes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    loads: list[str] = []

    def fake_load(name: str, **kw: object) -> ScriptedModel:
        loads.append(name)
        return scripted()

    monkeypatch.setattr(overseer.models, "load_model", fake_load)
    argv = ["prune", "--suite", "mmlu-sample", "--team", "agentprune-c", "--agents", "4",
            "--train", "3", "--test", "3", "--ratio", "0.5", "--attack", "replace",
            "--out", "out/p.json", "--store", "out/r.sqlite", "--no-progress"]  # fmt: skip
    code, out, err = run_cli(capsys, *argv)
    assert code == 0, err
    spec = TeamSpec.load(tmp_path / "out/p.json")
    assert len(spec.spatial_edges) == 3 and len(spec.temporal_edges) == 8  # 6 and 16, halved
    assert all(a.model is None for a in spec.agents)  # saved without the attacker
    record = json.loads((tmp_path / "out/p.train.json").read_text())
    assert record["report"]["runs"] == 3 and record["report"]["usage"]["prompt_tokens"] > 0
    assert "full vs AgentPrune" in out and "6 ran" in out
    assert "eq. 17" in out and "c_q" in out
    assert err.count("training step ") == 3 and "training step 3: utility" in err  # progress
    rows = [ln for ln in out.splitlines() if "(complete-4" in ln]
    assert len(rows) == 2 and rows[0].count("1.00x") == 2  # full is its own reference
    # a rerun reuses the pruned spec and every stored result: no model load at all
    loads.clear()
    code, out, err = run_cli(capsys, *argv)
    assert code == 0, err
    assert "reusing the pruned spec" in out and "6 already done, 0 ran" in out
    assert loads == []


def test_share_thoughts_is_kept_in_the_pruned_spec(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    model = scripted()
    monkeypatch.setattr(overseer.models, "load_model", lambda name, **kw: model)
    argv = ["prune", "--suite", "mmlu-sample", "--agents", "3", "--train", "1", "--test", "1",
            "--share-thoughts", "--out", "p.json", "--store", "r.sqlite"]  # fmt: skip
    code, _, err = run_cli(capsys, *argv)
    assert code == 0, err
    assert all(a.share_thought for a in TeamSpec.load(tmp_path / "p.json").agents)
    # the thought "t" now travels with each answer to the downstream agents
    assert any("] t\nI think B" in c["messages"][1]["content"] for c in model.calls)


@pytest.mark.e2e
def test_prune_on_the_embedded_model_writes_spec_and_table(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(
        capsys, "prune", "--model", "smollm2-135m", "--suite", "mmlu-sample", "--team",
        "complete", "--agents", "3", "--rounds", "1", "--train", "1", "--test", "1",
        "--ratio", "0.34", "--max-tokens", "48", "--out", "p.json", "--store", "r.sqlite",
        "--no-progress",
    )  # fmt: skip
    assert code == 0, err
    spec = TeamSpec.load(tmp_path / "p.json")
    assert len(spec.spatial_edges) == 2  # 3 edges, one cut
    assert "full vs AgentPrune" in out and "2 ran" in out
    record = json.loads((tmp_path / "p.train.json").read_text())
    assert record["report"]["usage"]["prompt_tokens"] > 100  # real tokens were booked
