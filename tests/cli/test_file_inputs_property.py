"""Issue 43, property test, second part: hostile files (JSON nested thousands deep, valid JSON
with a byte that is never UTF-8) to every command that reads a file, the readers
`test_faults_property.py` does not cover included (`trace html`, `adapt show --import`,
`--configs pruned:FILE` / `monitor:FILE`, `monitor eval --monitor`; `run --query-file` gets
the bytes that are not UTF-8), and
random bytes to every store a command opens. Each answer: exit 2, one stderr line naming the
file, no traceback, a store left as it was."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from overseer.cli import main

SETTINGS = settings(
    max_examples=10,
    deadline=None,
    derandomize=True,  # seeded: the same examples on every run
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
BENCH = ["bench", "--model", "smollm2-135m", "--suite", "gsm8k-sample", "--limit", "1"]
#: bytes that never occur in UTF-8, whatever precedes them
NEVER_UTF8 = [b"\xff", b"\xfe", b"\xc0", b"\xc1", b"\xf8"]


pytestmark = pytest.mark.usefixtures("no_model")  # conftest: no model is loaded


Argv = Callable[[Path, Path], list[str]]


def _traces(tmp: Path) -> list[str]:
    return ["--trace-dir", str(tmp / "runs")]


#: command line for the file f (tmp: a folder for what else it needs), and the file's suffix
READERS: dict[str, tuple[Argv, str]] = {
    "replay": (lambda f, t: ["replay", str(f), "--json"], ".json"),
    "replay-jsonl": (lambda f, t: ["replay", str(f), "--json"], ".jsonl"),
    "attribute": (lambda f, t: ["attribute", str(f), "--method", "last-agent"], ".json"),
    "trace-show": (lambda f, t: ["trace", "show", str(f)], ".jsonl"),
    "trace-html": (lambda f, t: ["trace", "html", str(f), "--out", str(t / "t.html")], ".jsonl"),
    "from-export": (lambda f, t: ["report", "--from-export", str(f)], ".jsonl.gz"),
    "run-monitor": (lambda f, t: ["run", "hi", "--monitor", str(f), *_traces(t)], ".json"),
    "run-spec": (lambda f, t: ["run", "hi", "--spec", str(f), *_traces(t)], ".json"),
    "adapt-import": (
        lambda f, t: ["adapt", "show", "--store", str(t / "a.sqlite"), "--import", str(f)],
        ".json",
    ),
    "bench-pruned": (
        lambda f, t: [*BENCH, "--configs", f"pruned:{f}", "--store", str(t / "r.sqlite")],
        ".json",
    ),
    "bench-monitor": (
        lambda f, t: [*BENCH, "--configs", f"complete+monitor:{f}", "--store", str(t / "r.sqlite")],
        ".json",
    ),
    "monitor-eval": (
        lambda f, t: ["monitor", "eval", "--monitor", str(f), "--store", str(t / "m.sqlite")],
        ".json",
    ),
}
#: commands whose store is the file f
STORES: dict[str, Argv] = {
    "report": lambda f, t: ["report", "--store", str(f)],
    "bench": lambda f, t: [*BENCH, "--configs", "direct", "--store", str(f), "--no-progress"],
    "adapt-show": lambda f, t: ["adapt", "show", "--store", str(f)],
    "attribute": lambda f, t: [
        "attribute",
        str(_chat(t)),
        "--method",
        "last-agent",
        "--store",
        str(f),
    ],
}


def _chat(tmp: Path) -> Path:
    f = tmp / "chat.json"
    f.write_text(json.dumps([{"role": "user", "content": "q"}]))
    return f


def _one_line_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], f: Path, *, named: bool = True
) -> None:
    capsys.readouterr()
    code = main(argv)
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert code == 2 and "Traceback" not in err, (argv, err)
    assert len(lines) == 1 and lines[0].startswith("overseer: error: "), (argv, err)
    assert not named or str(f) in lines[0], (argv, err)


def _deep() -> st.SearchStrategy[bytes]:
    """JSON nested far deeper than Python's parser recurses, closed or not."""
    return st.builds(
        lambda opener, n, closed: (opener * n + ("1" + "]" * n if closed else "")).encode(),
        st.just("["),
        st.integers(2_000, 60_000),
        st.booleans(),
    ) | st.builds(lambda n: ('{"a":' * n).encode(), st.integers(2_000, 60_000))


def _not_utf8() -> st.SearchStrategy[bytes]:
    """A JSON document (of the shapes the readers expect) with a byte UTF-8 never has."""
    docs = st.sampled_from(
        [
            {"history": [{"role": "a", "content": "x"}]},
            [{"role": "user", "content": "hello"}],
            {"event": "run_start", "run": "r"},
            {"agents": [], "name": "t"},
            {"sop_cases": []},
            {"format": 1, "roles": {}},
        ]
    )

    def spoil(doc: Any, byte: bytes, at: int) -> bytes:
        raw = json.dumps(doc).encode()
        cut = at % (len(raw) + 1)
        return raw[:cut] + byte + raw[cut:]

    return st.builds(spoil, docs, st.sampled_from(NEVER_UTF8), st.integers(0, 200))


@pytest.mark.parametrize("name", list(READERS))
@SETTINGS
@given(data=_deep() | _not_utf8())
def test_hostile_files_are_one_line_naming_the_file(
    name: str, data: bytes, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    argv, suffix = READERS[name]
    if suffix == ".jsonl.gz":
        data = gzip.compress(data)
    f = tmp_path / f"input{suffix}"
    f.write_bytes(data)
    # the export reader's own lines are another helper's (manifest validation): exit 2 + one line
    _one_line_exit_2(capsys, argv(f, tmp_path), f, named=name != "from-export")


@pytest.mark.parametrize("name", list(STORES))
@SETTINGS
@given(data=st.binary(min_size=1, max_size=2000))
def test_a_store_of_random_bytes_is_one_line_and_left_alone(
    name: str, data: bytes, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assume(not data.startswith(b"SQLite format 3"))
    f = tmp_path / "store.sqlite"
    f.write_bytes(data)
    _one_line_exit_2(capsys, STORES[name](f, tmp_path), f)
    assert f.read_bytes() == data


@SETTINGS
@given(data=_not_utf8())
def test_a_query_file_that_is_not_utf8_is_one_line_naming_it(
    data: bytes, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Any UTF-8 text is a query (deep JSON too); bytes that are not UTF-8 are refused."""
    f = tmp_path / "query.txt"
    f.write_bytes(data)
    _one_line_exit_2(capsys, ["run", "--query-file", str(f), *_traces(tmp_path)], f)
