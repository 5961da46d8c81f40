"""The fault suite through the CLI: a missing or broken server and bad model or budget options
are one line and exit code 2 before any work; a prompt over the context window stops the run."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from overseer.cli import main

from .fault_server import fault_server

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
        _, out, _ = _cli(capsys, *argv, "--trace-dir", str(tmp_path), *FAST)
    assert "answer (context_window):" in out
    assert len(fault.seen) == 1  # the first agent's call, not once more per agent


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
