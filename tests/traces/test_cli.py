"""`overseer replay` and `overseer attribute` end to end on the real embedded model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from overseer.cli import main
from overseer.traces import load_whowhen


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _small_log(tmp_path: Path) -> tuple[Path, int]:
    """The shortest algorithm-generated log, written out as its source JSON file would be."""
    alg = load_whowhen("alg")
    t = min(alg, key=lambda x: sum(len(s.text) for s in x.steps))
    history = [{"content": s.content, "role": s.role, "name": s.agent} for s in t.steps]
    assert t.annotation is not None
    doc = {
        "history": history,
        "question": t.question,
        "ground_truth": t.ground_truth,
        "system_prompt": dict(t.system_prompts),
        "mistake_agent": t.annotation.agent,
        "mistake_step": str(t.annotation.step),
        "mistake_reason": t.annotation.reason,
    }
    f = tmp_path / "small.json"
    f.write_text(json.dumps(doc))
    return f, len(t.steps)


@pytest.mark.e2e
def test_replay_cli_on_one_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f, n = _small_log(tmp_path)
    code, out, _ = run_cli(capsys, "replay", str(f), "--tokenizer", "smollm2-135m", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["tokenizer"] == "smollm2-135m" and doc["totals"]["logs"] == 1
    (log,) = doc["logs"]
    assert log["n_steps"] == n and log["context_logged"] > 0
    assert log["position"] in ("before", "at", "after", "none")
    code, out, _ = run_cli(capsys, "replay", str(f), "--tokenizer", "smollm2-135m")
    assert code == 0 and "rule tier replayed offline" in out and "1 logs replayed" in out


@pytest.mark.e2e
def test_attribute_cli_on_one_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f, n = _small_log(tmp_path)
    store = tmp_path / "attr.sqlite"
    argv = ["attribute", str(f), "--method", "all-at-once,binary-search,learned,last-agent",
            "--model", "smollm2-135m", "--window", "4096", "--truth", "both",
            "--store", str(store), "--json"]  # fmt: skip
    code, out, err = run_cli(capsys, *argv)
    assert code == 0, err
    doc = json.loads(out)
    rows = doc["attributions"]
    assert len(rows) == 8  # 4 methods x with / without the correct answer
    agents = {s["name"] for s in json.loads(f.read_text())["history"]}
    for r in rows:
        if r["outcome"] not in ("unparsed", "over_window"):
            assert r["agent"] in agents and 0 <= r["step"] < n
    judged = [r for r in rows if r["method"] in ("all-at-once", "binary-search")]
    assert all(r["calls"] >= 1 and r["prompt_tokens"] > 0 for r in judged)
    assert {a["method"] for a in doc["accuracy"]} == {
        "all-at-once",
        "binary-search",
        "learned",
        "last-agent",
    }
    code, out, err = run_cli(capsys, *argv)  # resumed: everything is in the store
    assert code == 0 and err == "" and len(json.loads(out)["attributions"]) == 8


def test_attribute_cli_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "attribute", str(tmp_path / "nope.json"))
    assert code == 2 and "expected a file, a directory" in err
    code, _, err = run_cli(capsys, "attribute", "whowhen-alg", "--method", "guess")
    assert code == 2 and "--method 'guess'" in err
    # (with no --model a judge runs on the benchmark model: a model name it cannot load is the
    # bad input here)
    code, _, err = run_cli(
        capsys, "attribute", "whowhen-alg", "--method", "all-at-once", "--model", "gpt-17"
    )
    assert code == 2 and "--model" in err and "openai:gpt-17" in err
    code, _, err = run_cli(capsys, "replay", str(tmp_path))
    assert code == 2 and "no .json or .jsonl files" in err


def test_attribute_cli_on_a_chat_transcript(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An unannotated OpenAI chat transcript: the learned scorer (trained on Who&When) blames
    one of its speakers at one of its steps; no model is loaded."""
    msgs = [
        {"role": "user", "content": "What is 17*23?"},
        {"role": "assistant", "name": "planner", "content": "Let the coder compute 17*23."},
        {"role": "assistant", "name": "coder", "content": "```python\nprint(17*24)\n```"},
        {"role": "tool", "name": "python", "content": "408"},
        {"role": "assistant", "name": "critic", "content": "Looks right. FINAL ANSWER: 408"},
    ]
    f = tmp_path / "chat.json"
    f.write_text(json.dumps({"messages": msgs, "outcome": "failed"}))
    code, out, _ = run_cli(capsys, "attribute", str(f), "--json")
    assert code == 0
    (row,) = json.loads(out)["attributions"]
    assert row["agent"] in ("planner", "coder", "critic", "tool:python") and 0 <= row["step"] < 5
    assert row["reason"] and row["calls"] == 0
    code, out, _ = run_cli(capsys, "attribute", str(f))
    assert code == 0 and out.startswith("chat: ") and " at step " in out
