"""A watch on the Ray head a run joined: when the head is gone mid-run, say so in one line
and end the command with exit 2 in seconds, before Ray's own fatal line a minute later.

Ray's driver cannot be asked to fail softly when its GCS disappears (its core worker ends the
process from C++ after `gcs_rpc_server_reconnect_timeout_s`), so the watch probes the head's
port from a daemon thread. The result store commits every result as it arrives, so what is
stored stays stored; the same command resumes.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
from collections.abc import Callable

from overseer.bench._ray_connect import Target, host_port


def _end_now(line: str) -> None:
    """Print `line` on stderr and end the process with exit 2 (bad input / Ray-side failure);
    finally-blocks are skipped, as Ray itself would skip them."""
    sys.stderr.write(line + "\n")
    sys.stderr.flush()
    os._exit(2)


class HeadWatch:
    """Probes `target`'s port every `every_s` seconds from a daemon thread; after `misses`
    refused probes in a row it calls `on_lost` with one line saying what happened."""

    def __init__(
        self,
        target: Target,
        *,
        every_s: float = 2.0,
        misses: int = 3,
        on_lost: Callable[[str], None] = _end_now,
    ) -> None:
        assert target.address is not None
        self.target = target
        self.host, self.port = host_port(target.address)
        self.every_s, self.misses, self.on_lost = every_s, misses, on_lost
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="ray-head-watch", daemon=True)

    def start(self) -> HeadWatch:
        """Start watching; returns self."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop watching (the run ended)."""
        self._stop.set()

    def _alive(self) -> bool:
        try:
            socket.create_connection((self.host, self.port), timeout=self.every_s).close()
        except OSError:
            return False
        return True

    def _watch(self) -> None:
        missed = 0
        while not self._stop.wait(self.every_s):
            missed = 0 if self._alive() else missed + 1
            if missed >= self.misses and not self._stop.is_set():
                self.on_lost(
                    f"overseer: error: the Ray cluster at {self.target.address} (from "
                    f"{self.target.source}) stopped answering mid-run ({missed} probes "
                    "refused; its head is gone); the results stored so far are kept, rerun "
                    "the same command to resume"
                )
                return
