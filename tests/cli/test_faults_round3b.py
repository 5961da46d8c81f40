"""Issue 43, the readers the first round missed: every other file a command reads (a trace for
`trace html`, an SOP export for `adapt show --import`, a monitor or spec named in `--configs`,
an attribution or SOP store that is not SQLite) is one line naming the file, exit 2; and a
Ray address that is a URL of another kind is refused before any connection."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from overseer.bench._ray_connect import host_port
from overseer.bench.backends import RayConnectError
from overseer.cli import main
from overseer.cli._app import EXIT_CODES
from overseer.models import ScriptedModel

DEEP = "[" * 200_000
NOT_UTF8 = b'{"sop_cases": ["\xff"]}'


@pytest.fixture(autouse=True)
def _no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    reply = json.dumps({"thought": "t", "action": "answer", "answer": "1"})
    monkeypatch.setattr("overseer.models.load_model", lambda *a, **kw: ScriptedModel(reply))


def _one_line(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    capsys.readouterr()
    code = main([str(a) for a in argv])
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("overseer: error: "), err
    return lines[0]


def _file(tmp: Path, name: str, data: str | bytes) -> Path:
    f = tmp / name
    f.write_bytes(data.encode() if isinstance(data, str) else data)
    return f


@pytest.mark.parametrize("data, why", [(DEEP, "nested too deeply"), (NOT_UTF8, "not UTF-8")])
def test_trace_html_of_a_bad_file_names_it(
    data: str | bytes, why: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    f = _file(tmp_path, "t.jsonl", data)
    err = _one_line(capsys, "trace", "html", f)
    assert f"trace file {f}" in err and why in err


def test_trace_html_to_a_folder_that_is_missing_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    f = _file(tmp_path, "t.jsonl", json.dumps({"event": "run_start", "run": "r"}) + "\n")
    out = tmp_path / "missing" / "t.html"
    err = _one_line(capsys, "trace", "html", f, "--out", out)
    assert f"--out {out}: cannot write" in err


@pytest.mark.parametrize("data, why", [(DEEP, "nested too deeply"), (NOT_UTF8, "not UTF-8")])
def test_adapt_import_of_a_bad_file_names_it(
    data: str | bytes, why: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    f = _file(tmp_path, "cases.json", data)
    err = _one_line(capsys, "adapt", "show", "--store", tmp_path / "a.sqlite", "--import", f)
    assert str(f) in err and why in err


def test_adapt_export_to_a_missing_folder_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "missing" / "cases.json"
    empty = _file(tmp_path, "empty.json", json.dumps({"sop_cases": []}))
    store = tmp_path / "a.sqlite"
    err = _one_line(capsys, "adapt", "show", "--store", store, "--import", empty, "--export", out)
    assert f"--export {out}: cannot write" in err


@pytest.mark.parametrize(
    "argv",
    [
        ["adapt", "show", "--store", "{f}"],
        ["adapt", "run", "hi", "--store", "{f}", "--model", "m"],
        ["attribute", "{chat}", "--method", "last-agent", "--store", "{f}"],
    ],
    ids=["adapt-show", "adapt-run", "attribute"],
)
def test_a_store_that_is_not_sqlite_is_one_line(
    argv: list[str], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    f = _file(tmp_path, "store.sqlite", b"not a database, just text" * 40)
    chat = _file(tmp_path, "chat.json", json.dumps([{"role": "user", "content": "q"}]))
    err = _one_line(capsys, *[a.format(f=f, chat=chat) for a in argv])
    assert f"store {f}" in err
    assert f.read_bytes() == b"not a database, just text" * 40  # untouched


@pytest.mark.parametrize("term", ["pruned:{f}", "complete+monitor:{f}"])
@pytest.mark.parametrize("data, why", [(DEEP, "nested too deeply"), (NOT_UTF8, "not UTF-8")])
def test_bench_configs_naming_a_bad_file_name_it(
    term: str,
    data: str | bytes,
    why: str,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    f = _file(tmp_path, "x.json", data)
    argv = ["bench", "--model", "smollm2-135m", "--suite", "gsm8k-sample", "--limit", "1"]
    store = tmp_path / "r.sqlite"
    err = _one_line(capsys, *argv, "--configs", term.format(f=f), "--store", store)
    assert f"file {f}" in err or f"spec {f}" in err
    assert why in err


@pytest.mark.parametrize("option", ["--monitor", "--spec"])
def test_run_with_a_deeply_nested_file_names_it(
    option: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    f = _file(tmp_path, "x.json", DEEP)
    err = _one_line(capsys, "run", "hi", option, f, "--trace-dir", tmp_path)
    assert str(f) in err and "nested too deeply" in err


@pytest.mark.parametrize("address", ["http://127.0.0.1:8265", "https://head:6379", "grpc://h:1"])
def test_row8_a_url_of_another_kind_is_not_a_ray_address(address: str) -> None:
    with pytest.raises(RayConnectError, match="expected HOST:PORT or ray://HOST:PORT"):
        host_port(address)
    assert host_port("ray://head:10001") == ("head", 10001)
    assert host_port("[::1]:6379") == ("::1", 6379)


def test_the_exit_codes_say_ray_failures_are_exit_2() -> None:
    """Row 10: a head lost mid-run ends with exit 2, and the exit codes say so."""
    assert "2 bad input or a missing extra, or a Ray cluster" in EXIT_CODES
    assert "lost mid-run" in EXIT_CODES
    docs = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text()
    assert "a head that stops answering mid-run" in docs
    assert "finished results are kept` (`bench`" in docs  # not claimed for every command
