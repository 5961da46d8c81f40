"""The HTTP faces under fuzzing: `overseer serve` (SmolLM2) and `overseer proxy` in front of it,
each a real process on 127.0.0.1, asked over one kept-alive connection per face."""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

MODEL = "smollm2-135m"
#: the token limits a fuzzed request may set, capped so a case costs a few tokens at most
LIMITS = ("max_tokens", "max_completion_tokens", "n_predict")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Face:
    """One HTTP face in a child process: its port, its stderr, a kept-alive connection."""

    def __init__(self, cmd: list[str], port: int, err: Path) -> None:
        self.port, self.err = port, err
        with err.open("wb") as sink:
            self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=sink)
        self.conn: http.client.HTTPConnection | None = None
        self.reopened = 0
        deadline = time.monotonic() + 180
        while not self._up():
            assert self.proc.poll() is None, self.stderr()
            assert time.monotonic() < deadline, f"{cmd[3]} did not start: {self.stderr()}"
            time.sleep(0.2)

    @classmethod
    def overseer(cls, args: list[str], err: Path) -> Face:
        port = free_port()
        return cls([sys.executable, "-m", "overseer.cli", *args, "--port", str(port)], port, err)

    def _up(self) -> bool:
        try:
            c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
            c.request("GET", "/health")
            return c.getresponse().status == 200
        except OSError:
            return False

    def stderr(self) -> str:
        return self.err.read_text(errors="replace")

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(60)

    def _connection(self) -> http.client.HTTPConnection:
        if self.conn is None:
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        return self.conn

    def exchange(self, method: str, path: str, data: bytes | None) -> tuple[int, str, bytes]:
        """(status, content type, body) on the kept-alive connection; a connection the face
        closed (it said `Connection: close`) is opened again, and counted."""
        conn = self._connection()
        headers = {"Content-Type": "application/json"} if data is not None else {}
        try:
            conn.request(method, path, data, headers)
            resp = conn.getresponse()
            body = resp.read()
        except (OSError, http.client.HTTPException):
            conn.close()  # the next exchange starts on a new connection
            self.conn = None
            raise
        if resp.will_close:
            conn.close()
            self.conn = None
            self.reopened += 1
        return resp.status, resp.getheader("content-type") or "", body


def capped(body: Any) -> Any:
    """A fuzzed body with its valid token limits lowered to 2 (invalid ones kept, to be
    refused), and max_tokens 2 when it sets none: a case then costs at most 2 tokens."""
    if not isinstance(body, dict):
        return body
    out = dict(body)
    for key in LIMITS:
        value = out.get(key)
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if number and value >= 1 and float(value).is_integer():  # 256.0 is an integer too
            out[key] = min(int(value), 2)
    if not any(k in out for k in LIMITS):
        out["max_tokens"] = 2
    return out


def encoded(body: Any) -> bytes:
    return body if isinstance(body, bytes) else json.dumps(body).encode()


def check_reply(status: int, kind: str, data: bytes) -> str | None:
    """What is wrong with one reply to a fuzzed request, or None: a 5xx, or a body that is
    not JSON (an event stream: every event JSON or [DONE])."""
    if status >= 500:
        return f"HTTP {status}: {data[:300]!r}"
    if kind.startswith("text/event-stream"):
        for line in data.decode().splitlines():
            if line.startswith("data: ") and line != "data: [DONE]":
                json.loads(line[6:])
        return None
    try:
        json.loads(data)
    except ValueError:
        return f"HTTP {status} {kind}: not JSON: {data[:300]!r}"
    return None
