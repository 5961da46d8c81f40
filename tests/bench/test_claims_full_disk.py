"""Issue 43, row 4: a bench whose store cannot grow (a full disk) ends in one line naming the
store, exit 2, and the results stored before are untouched. SQLite's own "database or disk is
full" is produced with `PRAGMA max_page_count` on the claims' connection: no mount needed."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from overseer.bench import ResultRecord, ResultStore
from overseer.bench._claims import Claims
from overseer.bench._store import ResultKey, StoreError
from overseer.cli import main
from overseer.models import ScriptedModel, Usage

KEY = ResultKey("direct", "m", "s", "t/1", 0)


def _full_store(path: Path) -> None:
    """A store with one result whose claims page is full (stale claims of another host), so
    the next claim needs a page the capped connection cannot add."""
    with ResultStore(path) as rs:
        rs.add(ResultRecord(KEY, "A", "A", True, 1.0, {"agent:x": Usage(1, 0, 1)}, 0.1))
    Claims(path).close()  # the claims table
    db = sqlite3.connect(path, isolation_level=None)
    pages = db.execute("PRAGMA page_count").fetchone()[0]
    db.execute(f"PRAGMA max_page_count = {pages}")
    with pytest.raises(sqlite3.OperationalError, match="full"):
        for i in range(1000):  # until the page holds no more
            row = ("old", "m", "s", f"t/{i}", 0, "host", 1, 0.0)
            db.execute("INSERT INTO claims VALUES (?,?,?,?,?,?,?,?)", row)
    db.close()


def _capped(path: Path) -> Claims:
    claims = Claims(path)
    pages = claims._db.execute("PRAGMA page_count").fetchone()[0]
    claims._db.execute(f"PRAGMA max_page_count = {pages}")
    return claims


def test_a_claim_on_a_full_store_is_one_store_error(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite"
    _full_store(path)
    claims = _capped(path)
    with pytest.raises(StoreError) as err:
        for i in range(50):
            claims.take(ResultKey("direct", "m", "s", f"new/{i}", 0))
    assert str(path) in str(err.value) and "full" in str(err.value)
    assert "\n" not in str(err.value)
    claims.close()  # claims that cannot be deleted stay behind; closing does not raise
    with ResultStore(path, readonly=True) as rs:
        assert [r.key for r in rs.records()] == [KEY]


def test_bench_on_a_full_store_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import overseer.bench._runner as runner

    path = tmp_path / "r.sqlite"
    _full_store(path)
    reply = json.dumps({"thought": "t", "action": "answer", "answer": "1"})
    monkeypatch.setattr("overseer.models.load_model", lambda *a, **k: ScriptedModel(reply))
    monkeypatch.setattr(runner, "Claims", _capped)
    argv = [
        "bench",
        "--model",
        "smollm2-135m",
        "--suite",
        "gsm8k-sample",
        "--configs",
        "direct",
        "--limit",
        "3",
    ]
    code = main([*argv, "--model", "smollm2-135m", "--store", str(path), "--no-progress"])
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith("overseer:")]
    assert code == 2 and "Traceback" not in err, err
    assert len(lines) == 1 and str(path) in lines[0] and "disk is full" in lines[0]
    with ResultStore(path, readonly=True) as rs:
        assert KEY in {r.key for r in rs.records()}
