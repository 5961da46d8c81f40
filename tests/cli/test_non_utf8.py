"""Bytes that are not UTF-8 on the command line (issue 51): Python keeps them as lone
surrogates (surrogateescape). A result store whose file name has one is read like any other;
a query with one is refused up front (exit 2, one line naming the byte), before a model loads
or a trace is written."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from overseer.bench import ResultRecord, ResultStore
from overseer.bench._store import ResultKey
from overseer.cli import main
from overseer.models import Usage


def _store(path: str) -> str:
    with ResultStore(path) as rs:
        for i in range(3):
            usage = {"agent:x": Usage(10, 0, 2)}
            key = ResultKey("direct", "m", "s", f"t/{i}", 0)
            rs.add(ResultRecord(key, "A", "A", i % 2 == 0, float(i % 2 == 0), usage, 0.1))
    return path


@pytest.mark.skipif(sys.getfilesystemencoding() != "utf-8", reason="needs a UTF-8 file system")
def test_report_reads_a_store_whose_file_name_is_not_utf8(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = _store(os.fsdecode(os.fsencode(tmp_path) + b"/r\xff.sqlite"))
    assert main(["report", "--store", store, "--json"]) == 0
    assert '"results": 3' in capsys.readouterr().out
    out = os.fsdecode(os.fsencode(tmp_path) + b"/out\xfe")
    argv = ["report", "--store", store, "--csv", out + ".csv", "--jsonl", out + ".jsonl"]
    assert main([*argv, "--out", out]) == 0
    assert len(Path(out + ".csv").read_text().splitlines()) == 4
    assert "rows in " in capsys.readouterr().err and (Path(out) / "index.html").is_file()


@pytest.mark.parametrize(
    ("query", "where"),
    [("\udcff", "byte 0xff at character 0"), ("what is 1\udcc3?", "byte 0xc3 at character 9")],
)
def test_a_query_with_a_byte_that_is_not_utf8_is_refused_before_the_run(
    query: str,
    where: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_model(*a: object, **kw: object) -> None:
        raise AssertionError("a model was loaded for a query that is not UTF-8")

    monkeypatch.setattr("overseer.models.load_model", no_model)
    runs = tmp_path / "runs"
    capsys.readouterr()
    assert main(["run", query, "--trace-dir", str(runs)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"overseer: error: the query: not UTF-8 text ({where}); expected UTF-8"]
    assert not runs.exists()
