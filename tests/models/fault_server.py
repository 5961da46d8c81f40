"""A real OpenAI-shaped HTTP server on 127.0.0.1 that answers with one scripted fault.

Used by the fault suite (tests/models/test_faults.py) and the CLI's fault tests. The server
runs in a daemon thread, holds a hung request for at most `HANG_S` seconds, and is shut down
by the context manager.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HANG_S = 5.0  # a hung request is answered (too late) after this, so no thread outlives a test
SLOW_S = 20.0  # "slow": every chat reply comes after this (a long generation)
TRICKLE_S = 1.0  # "trickle": one byte of the reply (status line and headers too) per this

OK_BODY = {
    "id": "x",
    "object": "chat.completion",
    "created": 0,
    "model": "m",
    "choices": [
        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "fine"}}
    ],
    "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
}
MODELS_BODY = {"object": "list", "data": [{"id": "m", "object": "model"}]}
CTX_ERROR = {
    "error": {
        "code": 400,
        "type": "exceed_context_size_error",
        "message": "request (9000 tokens) exceeds the available context size (4096 tokens), "
        "try increasing it",
    }
}


@dataclass
class Fault:
    """What the server answers: `kind` names the fault; `seen` records chat request times,
    `paths` every request's path."""

    kind: str
    seen: list[float] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    cut: list[str] = field(default_factory=list)  # trickled replies the client hung up on


def _reply(kind: str, n: int) -> tuple[int, dict[str, str], bytes] | None:
    """(status, headers, body) for the n-th chat request under `kind`; None: close abruptly."""
    js = {"Content-Type": "application/json"}
    if kind in ("ok", "slow"):
        return 200, js, json.dumps(OK_BODY).encode()
    if kind == "500":
        return 500, js, b'{"error": {"message": "internal error"}}'
    if kind == "429":
        return 429, {**js, "Retry-After": "1"}, b'{"error": {"message": "slow down"}}'
    if kind == "429-then-ok":
        if n == 1:
            return 429, {**js, "Retry-After": "1"}, b'{"error": {"message": "slow down"}}'
        return 200, js, json.dumps(OK_BODY).encode()
    if kind == "truncated":
        return 200, js, json.dumps(OK_BODY).encode()[:40]
    if kind == "html":
        return 200, {"Content-Type": "text/html"}, b"<html><body>Login required</body></html>"
    if kind == "no-usage":
        return 200, js, json.dumps({k: v for k, v in OK_BODY.items() if k != "usage"}).encode()
    if kind == "empty-text":  # a well-formed reply whose text is empty
        choice = {**OK_BODY["choices"][0], "message": {"role": "assistant", "content": ""}}  # type: ignore[index]
        return 200, js, json.dumps({**OK_BODY, "choices": [choice]}).encode()
    if kind == "empty-choices":
        return 200, js, json.dumps({**OK_BODY, "choices": []}).encode()
    if kind.startswith("500-after-"):  # the first N chat requests answer, the rest fail
        if n > int(kind.removeprefix("500-after-")):
            return 500, js, b'{"error": {"message": "internal error"}}'
        return 200, js, json.dumps(OK_BODY).encode()
    if kind == "500-then-ok":
        if n == 1:
            return 500, js, b'{"error": {"message": "internal error"}}'
        return 200, js, json.dumps(OK_BODY).encode()
    if kind == "429-long":
        return 429, {**js, "Retry-After": "3600"}, b'{"error": {"message": "come back later"}}'
    if kind == "no-choices":
        return 200, js, b'{"id": "x", "object": "chat.completion", "usage": {}}'
    if kind == "not-json-text":
        body = {
            **OK_BODY,
            "choices": [
                {
                    **OK_BODY["choices"][0],
                    "message": {  # type: ignore[dict-item]
                        "role": "assistant",
                        "content": "Sure! The answer is 5.",
                    },
                }
            ],
        }
        return 200, js, json.dumps(body).encode()
    if kind == "context":
        return 400, js, json.dumps(CTX_ERROR).encode()
    if kind == "close":
        return None
    raise ValueError(f"unknown fault {kind!r}")


def _handler(fault: Fault) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _send(self, status: int, headers: dict[str, str], body: bytes) -> None:
            try:
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass

        def _trickle(self, body: bytes) -> None:
            head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            head += f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
            try:
                for i, byte in enumerate(head.encode() + body):
                    if i:
                        time.sleep(TRICKLE_S)
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                fault.cut.append(self.path)
            self.close_connection = True

        def do_GET(self) -> None:
            fault.paths.append(self.path)
            if fault.kind == "trickle":
                self._trickle(json.dumps(MODELS_BODY).encode())
                return
            if fault.kind == "500-then-ok" and fault.paths.count(self.path) == 1:
                self._send(500, {}, b"oops")
                return
            if fault.kind == "close":
                self.close_connection = True
                return
            if fault.kind == "html":
                self._send(200, {"Content-Type": "text/html"}, b"<html>hello</html>")
                return
            if fault.kind == "500":
                self._send(500, {}, b"oops")
                return
            if fault.kind == "hang":
                time.sleep(HANG_S)
            self._send(200, {"Content-Type": "application/json"}, json.dumps(MODELS_BODY).encode())

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            fault.paths.append(self.path)
            fault.seen.append(time.monotonic())
            if fault.kind == "hang":
                time.sleep(HANG_S)
                return
            if fault.kind == "trickle":
                self._trickle(json.dumps(OK_BODY).encode())
                return
            if fault.kind == "slow" and len(fault.seen) > 1:  # the pre-check's ping is quick
                time.sleep(SLOW_S)
            reply = _reply(fault.kind, len(fault.seen))
            if reply is None:
                self.close_connection = True
                return
            self._send(*reply)

        def log_message(self, *args: object) -> None:
            pass

    return Handler


@contextmanager
def fault_server(kind: str) -> Iterator[tuple[str, Fault]]:
    """A loopback server answering with fault `kind`: yields (base URL ending in /v1, Fault)."""
    fault = Fault(kind)
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fault))
    srv.daemon_threads = True
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}/v1", fault
    finally:
        srv.shutdown()
        srv.server_close()
        thread.join(timeout=HANG_S + 1)
