"""Ctrl-C during a bench on the embedded model (issue 28): the process exits 130 within 10 s of
SIGINT, prints the "interrupted" line and keeps the results it had finished."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

GRACE_S = 10.0


def _wait_for(proc: subprocess.Popen[str], log: Path, words: str, limit_s: float) -> None:
    """Wait until stderr holds `words` (the process must still run)."""
    start = time.monotonic()
    while words not in log.read_text():
        assert proc.poll() is None, log.read_text()
        assert time.monotonic() - start < limit_s, f"no {words!r} in {limit_s} s: {log.read_text()}"
        time.sleep(0.2)


def _default_sigint() -> None:
    """A test run started in the background gives its children SIGINT ignored (the shell's
    rule for background jobs), and Python then never raises KeyboardInterrupt: restore it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_sigint_stops_an_embedded_bench_keeping_finished_results(tmp_path: Path) -> None:
    store, log = tmp_path / "r.sqlite", tmp_path / "err.txt"
    argv = [sys.executable, "-m", "overseer.cli", "bench", "--suite", "gsm8k-sample",
            "--limit", "6", "--model", "smollm2-135m", "--store", str(store)]  # fmt: skip
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with log.open("w") as err:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, text=True, env=env,
                                preexec_fn=_default_sigint)  # fmt: skip
    try:
        _wait_for(proc, log, "1/6 done", 600)
        proc.send_signal(signal.SIGINT)
        sent = time.monotonic()
        code = proc.wait(timeout=120)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
    text = log.read_text()
    assert code == 130, text
    assert took < GRACE_S, f"exited {took:.1f} s after SIGINT"
    kept = sqlite3.connect(store).execute("SELECT count(*) FROM results").fetchone()[0]
    assert kept >= 1
    assert f"overseer: interrupted; {kept} finished results are kept" in text
    assert "Traceback" not in text
    assert text.index("smollm2-135m: started, 0 of 6") < text.index("1/6 done")  # progress
