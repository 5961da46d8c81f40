"""Episode claims (issue 28): two benches on one store share the work instead of both solving
every task; a dead process's claims are taken over."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

from overseer.bench import ResultRecord, ResultStore
from overseer.bench._claims import Claims
from overseer.bench._store import ResultKey
from overseer.models import Usage

KEY = ResultKey("direct", "m", "s", "t/1", 0)


def _store(path: Path) -> Path:
    ResultStore(path).close()
    return path


def _claim_as(path: Path, key: ResultKey, host: str, pid: int, beat: float) -> None:
    with sqlite3.connect(path) as db:
        row = (key.config, key.model, key.suite, key.task_id, key.seed, host, pid, beat)
        db.execute("INSERT OR REPLACE INTO claims VALUES (?,?,?,?,?,?,?,?)", row)


def test_a_claim_is_taken_once_and_released(tmp_path: Path) -> None:
    path = _store(tmp_path / "r.sqlite")
    claims = Claims(path)
    assert claims.take(KEY)
    assert not claims.take(KEY)  # already ours, under way
    claims.release(KEY)
    with ResultStore(path) as rs:
        rs.add(ResultRecord(KEY, "A", "A", True, 1.0, {"agent:x": Usage(1, 0, 1)}, 0.1))
    assert not claims.take(KEY)  # stored without error: nothing to do
    claims.close()


def test_a_live_process_keeps_its_claim_and_a_dead_ones_is_taken(tmp_path: Path) -> None:
    path = _store(tmp_path / "r.sqlite")
    claims = Claims(path)
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        _claim_as(path, KEY, claims.host, other.pid, time.time())
        assert not claims.take(KEY)
    finally:
        other.kill()
        other.wait()
    assert claims.take(KEY)  # its owner is gone
    claims.close()


def test_a_claim_without_heartbeat_expires(tmp_path: Path) -> None:
    path = _store(tmp_path / "r.sqlite")
    claims = Claims(path, ttl_s=60)
    _claim_as(path, KEY, "another-host", 1, time.time())
    assert not claims.take(KEY)  # another machine, fresh heartbeat
    _claim_as(path, KEY, "another-host", 1, time.time() - 61)
    assert claims.take(KEY)
    claims.close()


def test_two_benches_on_one_store_share_the_tasks(tmp_path: Path) -> None:
    store = tmp_path / "r.sqlite"
    argv = [sys.executable, "-m", "overseer.cli", "bench", "--suite", "gsm8k-sample", "--limit",
            "4", "--model", "smollm2-135m", "--store", str(store), "--no-progress"]  # fmt: skip
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    cpus = sorted(os.sched_getaffinity(0))
    # each bench on a core of its own (its model then runs 1 thread): two llama.cpp processes
    # spinning 2 threads each on 2 cores slow each other down by orders of magnitude
    pins = [partial(os.sched_setaffinity, 0, {cpus[i % len(cpus)]}) for i in range(2)]
    procs = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=env, preexec_fn=pin) for pin in pins]  # fmt: skip
    outs = [p.communicate(timeout=900) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    ran = [int(re.search(r"(\d+) ran", out).group(1)) for out, _ in outs]  # type: ignore[union-attr]
    assert sum(ran) == 4, outs  # each task solved once, by one of the two
    with sqlite3.connect(store) as db:
        assert db.execute("SELECT count(*) FROM results").fetchone()[0] == 4
        assert db.execute("SELECT count(*) FROM claims").fetchone()[0] == 0
