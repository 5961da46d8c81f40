"""Every CLI file reader fed mutated valid files and random bytes (issue 51), seeded and
time-boxed: replay, attribute, trace html, report --from-export, adapt --import, run --spec /
--monitor, bench --configs FILE. The answer is exit 0 (the mutation left a valid file) or exit
2 with one stderr line, never a traceback; no model is loaded (a scripted one answers)."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from overseer.cli import main
from overseer.models import ModelError, ScriptedModel
from overseer.runtime import make_team

from ..cli.conftest import WordTokenizer

pytestmark = pytest.mark.fuzz

#: examples per reader and kind of input (mutated, random bytes): ~1 minute for all readers
SETTINGS = settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
BENCH = ["bench", "--model", "smollm2-135m", "--suite", "gsm8k-sample", "--limit", "1"]
Argv = Callable[[Path, Path], list[str]]


def _traces(t: Path) -> list[str]:
    return ["--trace-dir", str(t / "runs")]


#: reader: (command line for the file f, t a folder of its own; the seed file it is fed)
READERS: dict[str, tuple[Argv, str]] = {
    "replay": (lambda f, t: ["replay", str(f), "--json"], "chat"),
    "attribute": (lambda f, t: ["attribute", str(f), "--method", "last-agent"], "chat"),
    "attribute-trace": (lambda f, t: ["attribute", str(f), "--method", "last-agent"], "failed"),
    "trace-html": (lambda f, t: ["trace", "html", str(f), "--out", str(t / "t.html")], "trace"),
    "from-export": (lambda f, t: ["report", "--from-export", str(f)], "export"),
    "adapt-import": (
        lambda f, t: ["adapt", "show", "--store", str(t / "a.sqlite"), "--import", str(f)],
        "sops",
    ),
    "run-spec": (lambda f, t: ["run", "hi", "--spec", str(f), *_traces(t)], "spec"),
    "run-monitor": (lambda f, t: ["run", "hi", "--monitor", str(f), *_traces(t)], "monitor"),
    "bench-configs": (
        lambda f, t: [*BENCH, "--configs", f"pruned:{f}", "--store", str(t / "r.sqlite")],
        "spec",
    ),
}


DOCS = Path(__file__).resolve().parents[2] / "docs" / "evidence"


def _script(monkeypatch: pytest.MonkeyPatch, fail: bool = False) -> None:
    reply = json.dumps({"thought": "t", "action": "answer", "answer": "1"})

    def answer(messages: Any) -> str:
        if fail:
            raise ModelError("scripted: the model is down")
        return reply

    monkeypatch.setattr("overseer.traces.replay.ModelTokenizer", WordTokenizer)
    monkeypatch.setattr("overseer.models.load_model", lambda *a, **kw: ScriptedModel(answer))


def _a_trace(tmp: Path, monkeypatch: pytest.MonkeyPatch, fail: bool) -> bytes:
    _script(monkeypatch, fail)
    main(["run", "What is 1?", "--trace-dir", str(tmp / "seed"), "--allow-errors"])
    (trace,) = sorted((tmp / "seed").rglob("*.jsonl"))[-1:]
    return trace.read_bytes()


@pytest.fixture(scope="module")
def seeds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """One valid file per kind of input: what the readers are fed, mutated."""
    tmp = tmp_path_factory.mktemp("seeds")
    with pytest.MonkeyPatch.context() as mp:
        trace, failed = _a_trace(tmp / "ok", mp, False), _a_trace(tmp / "bad", mp, True)
    export = min((DOCS / "data").glob("*.jsonl.gz"), key=lambda p: p.stat().st_size)
    chat = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "1"}]
    sops = {"sop_cases": [{"query": "q", "sop": "s", "roles": ["a"]}]}
    monitor = {"format": 1, "roles": {}, "features": ["mean_logprob"], "threshold": 0.5}
    return {
        "chat": json.dumps(chat).encode(),
        "trace": trace,
        "failed": failed,
        "export": gzip.decompress(export.read_bytes()),
        "spec": make_team("chain", 2).model_dump_json().encode(),
        "sops": json.dumps(sops).encode(),
        "monitor": json.dumps(monitor).encode(),
    }


def _mutated(seed: bytes) -> st.SearchStrategy[bytes]:
    """`seed` with bytes flipped, cut, repeated or inserted, or a JSON value replaced."""
    n = max(len(seed), 1)
    flip = st.builds(lambda i, b: seed[: i % n] + bytes([b]) + seed[i % n + 1 :],
                     st.integers(0, n), st.integers(0, 255))  # fmt: skip
    cut = st.builds(lambda i: seed[: i % n], st.integers(0, n))
    splice = st.builds(lambda i, j, ins: seed[: i % n] + ins + seed[j % n :],
                       st.integers(0, n), st.integers(0, n), st.binary(max_size=40))  # fmt: skip
    values = st.sampled_from([b"null", b"-1", b"1e999", b'""', b"[]", b"{}", b"true", b"2e19"])
    swap = st.builds(_swap_value, st.just(seed), st.integers(0, n), values)
    return st.one_of(flip, cut, splice, swap)


def _swap_value(seed: bytes, at: int, value: bytes) -> bytes:
    """The JSON value after the `at`-th colon replaced by `value` (a well-formed mutation)."""
    colons = [i for i, c in enumerate(seed) if c == ord(":")] or [0]
    start = colons[at % len(colons)] + 1
    end = start
    while end < len(seed) and seed[end] not in b",}]\n":
        end += 1
    return seed[:start] + value + seed[end:]


def _exit_0_or_one_line_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    code = main(argv)  # a traceback is an exception out of main: the test fails on it
    err = capsys.readouterr().err
    if code == 0:
        return
    lines = err.strip().splitlines()
    assert code == 2, (argv, code, err[-2000:])
    assert len(lines) == 1 and lines[0].startswith("overseer: error: "), (argv, err[-2000:])


def _feed(name: str, data: bytes, tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv, kind = READERS[name]
    suffix = (
        ".jsonl.gz" if kind == "export" else ".jsonl" if kind in ("trace", "failed") else ".json"
    )
    if kind == "export":
        data = gzip.compress(data, mtime=0)
    f = tmp / f"input{suffix}"
    f.write_bytes(data)
    _exit_0_or_one_line_2(argv(f, tmp), capsys)


@pytest.mark.parametrize("name", list(READERS))
def test_mutated_valid_files_are_read_or_refused_in_one_line(
    name: str,
    seeds: dict[str, bytes],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _script(monkeypatch)

    @SETTINGS
    @given(data=_mutated(seeds[READERS[name][1]]))
    def one(data: bytes) -> None:
        _feed(name, data, tmp_path, capsys)

    one()


@pytest.mark.parametrize("name", list(READERS))
def test_random_bytes_are_refused_in_one_line(
    name: str, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _script(monkeypatch)

    @SETTINGS
    @given(data=st.binary(max_size=3000))
    def one(data: bytes) -> None:
        _feed(name, data, tmp_path, capsys)

    one()
