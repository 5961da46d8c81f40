"""Two benches sharing one result store, the store new (issue 51): its schema is created in one
write transaction taken up front (BEGIN IMMEDIATE, INSERT OR IGNORE), so a bench that opens
the store while another is creating it waits for it instead of failing with "not a usable
SQLite file (UNIQUE constraint failed: meta.key)"."""

from __future__ import annotations

import multiprocessing as mp
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from overseer.bench import ResultRecord, ResultStore
from overseer.bench._store import ResultKey
from overseer.models import Usage


def _rec(config: str) -> ResultRecord:
    usage = {"agent:x": Usage(10, 0, 2)}
    return ResultRecord(ResultKey(config, "m", "s", "t/0", 0), "A", "A", True, 1.0, usage, 0.1)


def test_a_bench_creating_the_store_meanwhile_is_waited_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The other bench writes the schema version just after this one found none, before this
    one inserts it (the old check-then-insert race); this one holds the write lock from its
    check on, so the other's insert has to wait, and both end with one version row."""
    path = tmp_path / "results.sqlite"
    other: list[str] = []

    def other_bench(sql: str) -> None:
        if "INTO meta" not in sql or other:
            return
        db = sqlite3.connect(path, timeout=0)
        try:
            db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
            db.execute("INSERT INTO meta VALUES ('schema_version', '2')")
            db.commit()
            other.append("inserted")
        except sqlite3.OperationalError as exc:
            other.append(str(exc))
        finally:
            db.close()

    connect_rw = ResultStore._connect_rw

    def traced(self: ResultStore) -> sqlite3.Connection:
        db = connect_rw(self)
        db.set_trace_callback(other_bench)
        return db

    monkeypatch.setattr(ResultStore, "_connect_rw", traced)
    with ResultStore(path) as rs:
        rs.add(_rec("a"))
    assert other == ["database is locked"]
    monkeypatch.undo()
    with ResultStore(path) as rs:
        rs.add(_rec("b"))
        assert len(list(rs.records())) == 2
    versions = sqlite3.connect(path).execute("SELECT value FROM meta").fetchall()
    assert versions == [("2",)]


def _open_and_add(path: str, config: str, barrier: Any, out: Any) -> None:
    barrier.wait()
    try:
        with ResultStore(path) as rs:
            rs.add(_rec(config))
        out.put("ok")
    except Exception as exc:  # the report names what failed
        out.put(f"{type(exc).__name__}: {exc}")


def test_benches_started_at_once_on_a_new_store_all_open_it(tmp_path: Path) -> None:
    """Four processes open the same new store at the same moment, twenty times over (a race
    lost about one time in forty before the WAL switch was retried)."""
    ctx = mp.get_context("fork")
    for round_ in range(20):
        path = str(tmp_path / f"r{round_}.sqlite")
        barrier, out = ctx.Barrier(4), ctx.Queue()
        procs = [
            ctx.Process(target=_open_and_add, args=(path, f"c{i}", barrier, out)) for i in range(4)
        ]
        for p in procs:
            p.start()
        for p in procs:
            p.join(60)
        assert [out.get(timeout=5) for _ in procs] == ["ok"] * 4
        with ResultStore(path, readonly=True) as rs:
            assert sorted(r.key.config for r in rs.records()) == ["c0", "c1", "c2", "c3"]
