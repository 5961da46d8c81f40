"""Exit codes a script can trust, --version, --json, progress lines, input caps (scripted model)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from overseer.models import ScriptedModel
from overseer.models.errors import ModelConnectionError

from .conftest import run_cli

ANSWER = {"thought": "easy", "action": "answer", "answer": "391"}


def raising(exc: BaseException) -> ScriptedModel:
    """A model whose every call raises `exc`."""

    def reply(messages: Any) -> Any:
        raise exc

    return ScriptedModel(reply)


def use_model(monkeypatch: pytest.MonkeyPatch, model: Any) -> Any:
    """Every command loads `model` instead of a real one."""
    monkeypatch.setattr("overseer.models.load_model", lambda *a, **kw: model)
    return model


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("overseer:"), err
    return lines[0]


def run_args(tmp_path: Path, *extra: str) -> list[str]:
    return ["run", *extra, "--agents", "2", "--rounds", "1", "--trace-dir", str(tmp_path)]


def test_version_and_the_exit_codes_in_help(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "--version")
    assert code == 0 and out.startswith("overseer ") and out.split()[1][0].isdigit()
    code, out, _ = run_cli(capsys, "--help")
    words = " ".join(out.split())  # the epilog is wrapped at the terminal's width
    assert code == 0 and "Exit codes" in words and "130 interrupted" in words
    assert "2 bad input or a missing extra" in words


def test_exit_130_returned_by_typer_is_kept(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("overseer.cli.app", lambda **kw: 130)
    code, _, err = run_cli(capsys, "run", "hi")
    assert code == 130 and one_line(err) == "overseer: interrupted"


def test_ctrl_c_during_a_run_exits_130(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    use_model(monkeypatch, raising(KeyboardInterrupt()))
    code, _, err = run_cli(capsys, *run_args(tmp_path, "hi", "--no-progress"))
    assert code == 130 and f"interrupted; no answer; the trace so far is in {tmp_path}" in err


def test_a_run_whose_every_call_failed_exits_1(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    use_model(monkeypatch, raising(ModelConnectionError("gone")))
    code, _, err = run_cli(capsys, *run_args(tmp_path, "hi", "--no-progress"))
    assert code == 1
    assert "every model call failed" in one_line(err) and "gone" in err
    code, out, err = run_cli(capsys, *run_args(tmp_path, "hi", "--no-progress", "--allow-errors"))
    assert code == 0 and "answer" in out


def test_run_prints_a_line_per_step_and_json(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    use_model(monkeypatch, ScriptedModel(lambda m: ANSWER))
    code, out, err = run_cli(capsys, *run_args(tmp_path, "What is 17*23?", "--json"))
    assert code == 0, err
    doc = json.loads(out)  # nothing else on stdout
    assert doc["stop_reason"] == "done" and doc["usage"]["prompt_tokens"] > 0
    assert Path(doc["trace"]).is_file() and "agent:a1" in doc["by_actor"]
    steps = [ln for ln in err.splitlines() if ln.startswith("agent ")]
    assert len(steps) >= 2 and "round 0 step" in steps[0] and "tokens so far" in steps[-1]
    code, out, err = run_cli(capsys, *run_args(tmp_path, "hi", "--no-progress"))
    assert code == 0 and "tokens so far" not in err


def test_query_from_a_file_and_from_stdin(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    model = use_model(monkeypatch, ScriptedModel(lambda m: ANSWER))
    q = tmp_path / "q.txt"
    q.write_text("QUERY-FROM-FILE " + "x" * 200_000)
    code, _, err = run_cli(capsys, *run_args(tmp_path, "--query-file", str(q), "--no-progress",
                                             "--max-query-chars", "300000"))  # fmt: skip
    assert code == 0, err
    assert "QUERY-FROM-FILE" in json.dumps(model.calls[0])
    monkeypatch.setattr("sys.stdin", io.StringIO("QUERY-FROM-STDIN"))
    code, _, err = run_cli(capsys, *run_args(tmp_path, "-", "--no-progress"))
    assert code == 0, err
    assert "QUERY-FROM-STDIN" in json.dumps(model.calls[-1])


def big_spec(tmp_path: Path, n: int) -> str:
    spec = tmp_path / "big.json"
    spec.write_text(json.dumps({"agents": [{"name": f"a{i}"} for i in range(n)]}))
    return str(spec)


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["run", "hi", "--agents", "65"], "65 agents, more than --max-agents 64"),
        (["run", "hi", "--rounds", "21"], "21 rounds, more than --max-rounds 20"),
        (["run", "hi", "--agents", "5", "--max-agents", "4"], "more than --max-agents 4"),
        (["run", "x" * 101, "--max-query-chars", "100"], "101 characters, more than --max"),
        (["run", "--query-file", "/nonexistent/q.txt"], "--query-file /nonexistent/q.txt"),
        (["run", "hi", "--query-file", "/nonexistent/q.txt"], "and not both"),
        (["run", "   "], "the query is empty"),
        (["monitor", "collect", "--games", "0"], "--games: expected >= 1"),
        (["monitor", "collect", "--val-games", "0"], "--val-games: expected >= 1"),
        (["trace", "list", "/nonexistent/runs"], "not found"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], needle: str
) -> None:
    code, _, err = run_cli(capsys, *argv)
    assert code == 2 and needle in one_line(err)


def test_a_10000_agent_spec_gets_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = run_cli(capsys, "run", "hi", "--spec", big_spec(tmp_path, 10_000))
    line = one_line(err)
    assert code == 2 and "big.json: the team has 10000 agents, more than --max-agents 64" in line


def test_trace_show_strips_control_characters(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    nasty = "\x1b]0;pwned\x07\x1b[31mred\r\x9b\x00 ok"
    use_model(monkeypatch, ScriptedModel(lambda m: {**ANSWER, "thought": nasty, "answer": nasty}))
    code, out, err = run_cli(capsys, *run_args(tmp_path, f"hi {nasty}", "--json", "--no-progress"))
    assert code == 0, err
    trace = json.loads(out)["trace"]
    assert "\x1b" in Path(trace).read_text(encoding="utf-8") or "\\u001b" in Path(trace).read_text()
    code, shown, _ = run_cli(capsys, "trace", "show", trace)
    msg = next(ln for ln in shown.splitlines() if " message " in ln)
    assert code == 0 and msg.endswith(": red  ok") and "pwned" not in msg
    code, full, _ = run_cli(capsys, "trace", "show", "--full", trace)
    assert code == 0 and len(full) > len(shown)
    assert not any(c in shown + full for c in "\x1b\x07\r\x9b\x00")


def test_trace_list_shows_runs_and_bad_files(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    use_model(monkeypatch, ScriptedModel(lambda m: ANSWER))
    code, out, _ = run_cli(capsys, *run_args(tmp_path, "hi", "--json", "--no-progress"))
    run_id = json.loads(out)["run_id"]
    (tmp_path / "garbage.jsonl").write_text("not json\n")
    (tmp_path / "empty.jsonl").write_text("")
    code, out, err = run_cli(capsys, "trace", "list", str(tmp_path))
    assert code == 0, err
    row = next(ln for ln in out.splitlines() if run_id[:12] in ln)
    assert "done" in row and "scripted" in row
    assert "garbage.jsonl" in out and "not JSON" in out and "empty file" in out


def bench_args(tmp_path: Path, *extra: str) -> list[str]:
    store = str(tmp_path / "r.sqlite")
    return [
        "bench",
        "--model",
        "smollm2-135m",
        "--suite",
        "gsm8k-sample",
        "--limit",
        "3",
        "--store",
        store,
        *extra,
    ]


def test_bench_with_errored_results_exits_1_unless_allowed(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    use_model(monkeypatch, raising(ModelConnectionError("server gone")))
    code, out, err = run_cli(capsys, *bench_args(tmp_path, "--no-progress"))
    assert code == 1 and "3 planned: 0 already done, 3 ran, 3 errors" in out
    assert one_line(err).startswith("overseer: error: 3 of 3 results ended in error")
    code, out, err = run_cli(capsys, *bench_args(tmp_path, "--no-progress", "--allow-errors"))
    assert code == 0 and "3 errors" in out and err == ""


def test_bench_and_report_json_progress_lines_and_resume_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    use_model(monkeypatch, ScriptedModel(lambda m: "The answer is 42"))
    code, out, err = run_cli(capsys, *bench_args(tmp_path, "--json"))
    assert code == 0, err
    doc = json.loads(out)
    assert (doc["planned"], doc["ran"], doc["errors"]) == (3, 3, 0)
    assert doc["rows"][0]["config"] == "direct" and doc["rows"][0]["n"] == 3
    assert "smollm2-135m: 3/3 done, 0 errors" in err  # plain lines: stderr is not a terminal
    assert "resuming" not in err
    code, out, err = run_cli(capsys, *bench_args(tmp_path))
    assert code == 0 and err.splitlines()[0] == "resuming: 3 of 3 already done"
    code, out, _ = run_cli(capsys, "report", "--json", "--store", str(tmp_path / "r.sqlite"))
    (row,) = json.loads(out)["rows"]
    assert code == 0 and (row["config"], row["n"], row["errors"]) == ("direct", 3, 0)
