"""Result store faults: one line naming the path and the problem, and nothing stored changes."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from overseer.bench import ResultRecord, ResultStore
from overseer.bench._store import ResultKey, StoreError
from overseer.cli import main
from overseer.errors import PathError
from overseer.models import Usage


def rec(i: int, *, correct: bool = True, error: str | None = None) -> ResultRecord:
    return ResultRecord(
        key=ResultKey("direct", "m", "s", f"t/{i}", 0),
        answer="" if error else "A",
        parsed=None if error else "A",
        correct=correct,
        score=float(correct),
        usage_by_actor={"agent:x": Usage(10, 0, 2)},
        latency_s=0.1,
        error=error,
    )


def make_store(path: Path, n: int = 50) -> Path:
    with ResultStore(path) as rs:
        for i in range(n):
            rs.add(rec(i, correct=i % 2 == 0, error="model error: boom" if i == 3 else None))
    return path


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def one_line_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 2
    _, err = capsys.readouterr()
    assert err.count("\n") == 1 and err.startswith("overseer: error: ")
    return err


def test_truncated_store_is_refused_untouched(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = make_store(tmp_path / "good.sqlite", 300)
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    before = digest(bad)
    for readonly in (False, True):
        with pytest.raises(StoreError, match=r"bad\.sqlite: not a usable SQLite file"):
            ResultStore(bad, readonly=readonly)
    err = one_line_error(capsys, "report", "--store", str(bad))
    assert "bad.sqlite: not a usable SQLite file" in err
    assert digest(bad) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.sqlite", "good.sqlite"]


def test_non_sqlite_store_is_refused_untouched(tmp_path: Path) -> None:
    bad = tmp_path / "notes.sqlite"
    bad.write_text("not a database\n" * 10)
    with pytest.raises(StoreError, match="no SQLite header"):
        ResultStore(bad)
    assert bad.read_text() == "not a database\n" * 10
    assert [p.name for p in tmp_path.iterdir()] == ["notes.sqlite"]


def test_store_under_a_file_and_store_that_is_a_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "afile").write_text("x")
    with pytest.raises(StoreError, match=r"afile: exists and is not a directory"):
        ResultStore(tmp_path / "afile" / "r.sqlite")
    with pytest.raises(StoreError, match="exists and is not a file"):
        ResultStore(tmp_path)
    assert isinstance(StoreError("x"), PathError) and isinstance(StoreError("x"), OSError)
    err = one_line_error(
        capsys, "bench", "--model", "smollm2-135m", "--suite", "gsm8k-sample", "--configs",
        "direct", "--limit", "1", "--store", str(tmp_path / "afile" / "r.sqlite"), "--no-progress",
    )  # fmt: skip
    assert "afile: exists and is not a directory" in err


def test_readonly_open_reads_without_writing(tmp_path: Path) -> None:
    path = make_store(tmp_path / "r.sqlite")
    before, mtime = digest(path), path.stat().st_mtime_ns
    with ResultStore(path, readonly=True) as rs:
        assert len(list(rs.records())) == 50
        assert not path.with_name("r.sqlite-wal").exists()
        with pytest.raises(StoreError, match=r"r\.sqlite: read-only"):
            rs.add(rec(99))
    assert digest(path) == before and path.stat().st_mtime_ns == mtime
    with pytest.raises(StoreError, match="no such file"):
        ResultStore(tmp_path / "none.sqlite", readonly=True)


def test_readonly_open_sees_a_live_writer(tmp_path: Path) -> None:
    path = make_store(tmp_path / "r.sqlite", 5)
    with ResultStore(path) as writer:
        writer.add(rec(7))
        with ResultStore(path, readonly=True) as reader:
            assert len(list(reader.records())) == 6


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root")
def test_really_readonly_store_can_be_reported_but_not_written(readonly_dir: Path) -> None:
    path = make_store(readonly_dir / "r.sqlite")
    path.chmod(0o444)
    readonly_dir.chmod(0o555)
    before = digest(path)
    src = str(Path(__file__).resolve().parents[2] / "src")
    as_nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable]
    env = {**os.environ, "PYTHONPATH": src, "HOME": str(readonly_dir)}
    code = "import sys; from overseer.cli import main; sys.exit(main(sys.argv[1:]))"
    report = subprocess.run(
        [*as_nobody, "-c", code, "report", "--store", str(path), "--errors"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert report.returncode == 0, report.stderr
    assert "model error: boom" in report.stdout and "direct" in report.stdout
    bench = subprocess.run(
        [*as_nobody, "-c", code, "bench", "--model", "smollm2-135m", "--suite", "gsm8k-sample",
         "--configs", "direct", "--limit", "1", "--store", str(path), "--no-progress"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert bench.returncode == 2
    assert bench.stderr.strip().count("\n") == 0
    assert "r.sqlite: read-only" in bench.stderr
    assert digest(path) == before
