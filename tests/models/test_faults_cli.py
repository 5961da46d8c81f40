"""The fault suite through the CLI: a missing or broken server and bad model or budget options
are one line and exit code 2 before any work; a prompt over the context window stops the run."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest

from overseer.cli import main

from .fault_server import SLOW_S, fault_server

FAST = ["--timeout", "0.5", "--retries", "0"]


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_unreachable_server_is_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    url = f"http://127.0.0.1:{_free_port()}/v1"
    argv = ["run", "hi", "--model", "openai:x", "--base-url", url, "--trace-dir", str(tmp_path)]
    code, out, err = _cli(capsys, *argv, *FAST)
    assert code == 2 and err.count("\n") == 1 and not out
    assert f"model server {url} (GET /models): connection refused" in err
    assert not list(tmp_path.iterdir())  # nothing ran, no trace


@pytest.mark.parametrize(
    ("kind", "words"),
    [
        ("hang", "timed out after 0.5 s"),
        ("500", "HTTP 500"),
        ("close", "connection closed without a reply"),
        ("html", "not an OpenAI-compatible /models reply"),
    ],
)
@pytest.mark.parametrize("command", ["run", "bench"])
def test_broken_server_is_one_line_exit_2(
    kind: str, words: str, command: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    with fault_server(kind) as (url, fault):
        if command == "run":
            argv = ["run", "hi", "--trace-dir", str(tmp_path)]
        else:
            argv = ["bench", "--suite", "gsm8k-sample", "--limit", "1",
                    "--store", str(tmp_path / "r.sqlite"), "--no-progress"]  # fmt: skip
        code, _, err = _cli(capsys, *argv, "--model", "openai:x", "--base-url", url, *FAST)
    assert code == 2 and err.count("\n") == 1, err
    assert f"model server {url}" in err and words in err
    assert not fault.seen  # no chat call was made


def test_context_window_stops_the_run_with_its_reason(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    with fault_server("context") as (url, fault):
        argv = ["run", "hi", "--agents", "3", "--model", "openai:x", "--base-url", url]
        code, out, err = _cli(capsys, *argv, "--trace-dir", str(tmp_path), *FAST)
    assert "answer (context_window):" in out
    assert len(fault.seen) == 2  # the pre-check's ping, the first agent's call; no more
    # no call succeeded: exit 1, one line naming the backend
    assert code == 1 and err.count("\n") == 1, err
    assert f"every model call failed (backend openai:x at {url}): " in err


@pytest.mark.parametrize(
    ("option", "value", "words"),
    [
        ("--budget-tokens", "0", "--budget-tokens: expected > 0, got 0"),
        ("--budget-calls", "-3", "--budget-calls: expected > 0, got -3"),
        ("--budget-seconds", "0", "--budget-seconds: expected > 0, got 0.0"),
        ("--timeout", "0", "--timeout: expected > 0, got 0.0"),
        ("--retries", "-1", "--retries: expected >= 0, got -1"),
        ("--n-ctx", "100", "--n-ctx: expected >= 256, got 100"),
        ("--temperature", "3", "--temperature: expected 0..2, got 3.0"),
    ],
)
@pytest.mark.parametrize(
    "command",
    [
        ["run", "hi"],
        ["bench", "--suite", "gsm8k-sample"],
        ["prune", "--suite", "gsm8k-sample"],
        ["monitor", "collect"],
        ["monitor", "eval"],
        ["adapt", "init"],
        ["adapt", "distill", "--suite", "gsm8k-sample"],
        ["adapt", "run", "q"],
    ],
    ids=lambda c: "-".join(c[:2]),
)
def test_bad_model_or_budget_option_is_one_line_exit_2(
    command: list[str], option: str, value: str, words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _cli(capsys, *command, option, value)
    assert code == 2 and err == f"overseer: error: {words}\n" and not out


# Issue 28: budgets hold against a server that omits usage and against a call in progress.


def test_budget_tokens_hold_when_the_server_omits_usage(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    with fault_server("no-usage") as (url, fault):
        argv = ["run", "hi", "--agents", "3", "--model", "openai:x", "--base-url", url,
                "--budget-tokens", "10", "--json", "--trace-dir", str(tmp_path)]  # fmt: skip
        _, out, _ = _cli(capsys, *argv, *FAST)
    doc = json.loads(out)
    assert doc["stop_reason"] == "budget_tokens", doc
    assert len(fault.seen) <= 3  # probe + at most two calls: the estimate counts
    trace = [json.loads(line) for line in Path(doc["trace"]).read_text().splitlines()]
    calls = [e for e in trace if e["event"] == "model_call"]
    assert calls and all(e["overseer.usage.estimated"] for e in calls)
    assert all(e["gen_ai.usage.input_tokens"] > 0 for e in calls)


def test_budget_seconds_cut_a_call_in_progress(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    with fault_server("slow") as (url, fault):
        argv = ["run", "hi", "--agents", "2", "--model", "openai:x", "--base-url", url,
                "--budget-seconds", "2", "--timeout", "60", "--retries", "0", "--json",
                "--trace-dir", str(tmp_path)]  # fmt: skip
        start = time.monotonic()
        _, out, _ = _cli(capsys, *argv)
        took = time.monotonic() - start
    doc = json.loads(out)
    assert doc["stop_reason"] == "budget_time", doc
    assert took < SLOW_S  # the 20 s call was cancelled at the 2 s budget
    assert len(fault.seen) == 2  # the probe and the one call that was cut


def test_a_failing_bench_creates_no_store(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    store = tmp_path / "new" / "r.sqlite"
    with fault_server("empty-choices") as (url, _):
        argv = ["bench", "--suite", "gsm8k-sample", "--limit", "1", "--store", str(store),
                "--no-progress", "--model", "openai:x", "--base-url", url]  # fmt: skip
        code, _, err = _cli(capsys, *argv, *FAST)
    assert code == 2 and err.count("\n") == 1 and "no choices" in err and url in err
    assert not store.exists()


def test_an_empty_answer_has_its_own_stop_reason_and_exit_1(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    with fault_server("empty-text") as (url, _):
        argv = ["run", "hi", "--agents", "2", "--rounds", "1", "--model", "openai:x",
                "--base-url", url, "--json", "--trace-dir", str(tmp_path)]  # fmt: skip
        code, out, err = _cli(capsys, *argv, *FAST)
    assert json.loads(out)["stop_reason"] == "empty_answer"
    assert code == 1 and err.count("\n") == 1
    assert "the answer is empty (stop reason empty_answer" in err


def test_prune_with_an_http_model_has_no_loop_errors(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import sqlite3

    with fault_server("ok") as (url, _):
        argv = ["prune", "--suite", "gsm8k-sample", "--train", "2", "--test", "2",
                "--model", "openai:x", "--base-url", url, "--out", str(tmp_path / "p.json"),
                "--store", str(tmp_path / "p.sqlite"), "--no-progress"]  # fmt: skip
        code, out, err = _cli(capsys, *argv, *FAST)
    assert code == 0, err
    assert "4 ran, 0 errors" in out and "Event loop is closed" not in out + err
    with sqlite3.connect(tmp_path / "p.sqlite") as db:
        assert db.execute("SELECT count(*) FROM results WHERE error IS NULL").fetchone()[0] == 4


def test_prune_with_errored_evaluation_runs_exits_1(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Training succeeds, the server then fails: the errored rows are kept and the exit is 1
    (0 with --allow-errors)."""
    import sqlite3

    def prune(name: str, *extra: str) -> tuple[int, str]:
        with fault_server("500-after-150") as (url, _):
            out, store = tmp_path / f"{name}.json", tmp_path / f"{name}.sqlite"
            argv = ["prune", "--suite", "gsm8k-sample", "--train", "2", "--test", "2",
                    "--model", "openai:x", "--base-url", url, "--out", str(out),
                    "--store", str(store), "--no-progress"]  # fmt: skip
            code, _out, err = _cli(capsys, *argv, *extra, *FAST)
        return code, err

    code, err = prune("p")
    assert code == 1, err
    assert "evaluation runs ended in error" in err and "--allow-errors" in err
    with sqlite3.connect(tmp_path / "p.sqlite") as db:
        errors = db.execute("SELECT count(*) FROM results WHERE error IS NOT NULL").fetchone()[0]
    assert errors >= 1
    assert prune("q", "--allow-errors")[0] == 0
