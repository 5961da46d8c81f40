"""The HTTP face of an embedded llama.cpp model: OpenAI chat completions with tool calls.

`ChatFront` listens on a host and port of its own and answers `POST /v1/chat/completions`
through the in-process llama.cpp server (`handle_chat_completions`). A request that offers
`tools` is generated in one piece, then its text is read for a tool call the model wrote
without its template's tags (`_toolcalls`), and a forced `tool_choice` is turned into a JSON
schema; the reply is sent as JSON or, when the client streams, as server-sent events. Every
other request (a chat without tools, streamed token by token; /tokenize, /v1/models, /health,
...) is passed to llama.cpp's own loopback listener unchanged.
"""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from overseer.models._toolcalls import (
    answer_only,
    force_tool_schema,
    tool_calls_from_text,
    tool_names,
)

#: llama.cpp's in-process entry point: (request body, callback per reply or chunk)
Handle = Callable[[dict[str, Any], Callable[[Any], bool]], Any]
_CHAT_PATHS = ("/v1/chat/completions", "/chat/completions")
_PROXY_HEADERS = ("Content-Type", "Authorization", "Accept")


def _error(status: int, message: str, kind: str = "invalid_request_error") -> dict[str, Any]:
    return {"error": {"code": status, "message": message, "type": kind}}


def _status(err: Any) -> int:
    """The HTTP status of a llama.cpp error object (500 when it names none)."""
    code = err.get("code") if isinstance(err, dict) else None
    return code if isinstance(code, int) and 400 <= code < 600 else 500


def _collect(into: list[Any]) -> Callable[[Any], bool]:
    """A llama.cpp callback that keeps every reply or chunk and never stops generation."""

    def take(reply: Any) -> bool:
        into.append(reply)
        return False

    return take


def sse_chunks(reply: dict[str, Any], include_usage: bool) -> list[dict[str, Any]]:
    """A complete chat completion as the chunks of a stream: the message, the finish reason,
    and (when asked) the usage."""
    (choice,) = reply["choices"]
    message = choice.get("message") or {}
    delta: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
    if message.get("tool_calls"):
        delta["tool_calls"] = [dict(c, index=i) for i, c in enumerate(message["tool_calls"])]
    head: dict[str, Any] = {k: reply[k] for k in ("id", "created", "model") if k in reply}
    head["object"] = "chat.completion.chunk"
    out = [
        dict(head, choices=[{"index": 0, "delta": delta, "finish_reason": None}]),
        dict(head, choices=[{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]),
    ]
    if include_usage and reply.get("usage"):
        out.append(dict(head, choices=[], usage=reply["usage"]))
    return out


class ChatFront:
    """An OpenAI-compatible HTTP server in front of one in-process llama.cpp server."""

    def __init__(self, handle: Handle, native_url: str, host: str, port: int) -> None:
        self.handle = handle
        self.native = urlsplit(native_url)
        self._httpd = ThreadingHTTPServer((host, port), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        """http://HOST:PORT of this front (no trailing slash)."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def close(self) -> None:
        """Stop listening (requests in progress finish on their own threads)."""
        self._httpd.shutdown()
        self._httpd.server_close()

    def complete(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """(HTTP status, reply) of one chat request with tools, generated in one piece."""
        sent = force_tool_schema(body)
        sent["stream"] = False
        sent.pop("stream_options", None)
        got: list[Any] = []
        try:
            self.handle(sent, _collect(got))
        except ValueError as exc:
            return 400, _error(400, f"llama.cpp rejected the request: {exc}")
        reply = got[-1] if got else _error(500, "llama.cpp gave no reply", "server_error")
        if not isinstance(reply, dict) or "error" in reply:
            err = reply.get("error", reply) if isinstance(reply, dict) else reply
            return _status(err), {"error": err}
        return 200, tool_calls_from_text(body, reply)

    def generate(self, body: dict[str, Any], write: Callable[[Any], bool]) -> None:
        """Generate a chat without tools as llama.cpp does (streamed token by token when the
        body asks); `write` takes the reply or each chunk and says whether to stop."""
        try:
            self.handle(body, write)
        except ValueError as exc:
            write(_error(400, f"llama.cpp rejected the request: {exc}"))

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        front = self

        class Handler(_FrontHandler):
            pass

        Handler.front = front
        return Handler


class _FrontHandler(BaseHTTPRequestHandler):
    """One HTTP exchange with the front (a class per front: `front` is set on a subclass)."""

    front: ChatFront
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet, like llama.cpp's own
        return

    def do_GET(self) -> None:
        self._proxy(None)

    def do_POST(self) -> None:
        data = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path.split("?")[0] not in _CHAT_PATHS:
            self._proxy(data)
            return
        try:
            body = json.loads(data)
        except ValueError as exc:
            self._json(400, _error(400, f"request body is not JSON: {exc}"))
            return
        if not isinstance(body, dict):
            self._json(400, _error(400, "request body: expected a JSON object"))
            return
        if tool_names(body):
            self._tools(body)
            return
        body = answer_only(body)
        if body.get("stream"):
            self._events_live(body)
        else:
            self._one(body)

    def _tools(self, body: dict[str, Any]) -> None:
        status, reply = self.front.complete(body)
        if status != 200 or not body.get("stream"):
            self._json(status, reply)
            return
        usage = bool((body.get("stream_options") or {}).get("include_usage"))
        self._events(sse_chunks(reply, usage))

    def _one(self, body: dict[str, Any]) -> None:
        got: list[Any] = []
        self.front.generate(body, _collect(got))
        reply = got[-1] if got else _error(500, "llama.cpp gave no reply", "server_error")
        if isinstance(reply, dict) and "error" in reply:
            self._json(_status(reply["error"]), reply)
            return
        self._json(200, reply)

    def _json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _start_events(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def _events(self, chunks: Iterable[Any]) -> None:
        self._start_events()
        for chunk in chunks:
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()

    def _events_live(self, body: dict[str, Any]) -> None:
        self._start_events()

        def write(chunk: Any) -> bool:
            try:
                if isinstance(chunk, dict) and "error" in chunk:
                    self.wfile.write(f"error: {json.dumps(chunk)}\n\n".encode())
                    return True
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()
                return False
            except OSError:  # the client has gone: stop generating
                return True

        self.front.generate(body, write)
        try:
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
        except OSError:
            pass

    def _proxy(self, data: bytes | None) -> None:
        """Pass the request to llama.cpp's own listener and its reply back, as it comes."""
        native = self.front.native
        conn = http.client.HTTPConnection(native.hostname or "127.0.0.1", native.port, timeout=600)
        headers = {h: self.headers[h] for h in _PROXY_HEADERS if self.headers.get(h)}
        try:
            conn.request(self.command, self.path, body=data, headers=headers)
            resp = conn.getresponse()
        except OSError as exc:
            conn.close()
            self._json(502, _error(502, f"llama.cpp listener: {exc}", "server_error"))
            return
        try:
            self.send_response(resp.status)
            self.send_header("Content-Type", resp.getheader("Content-Type") or "text/plain")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            while block := resp.read1(65536):
                self.wfile.write(block)
            self.wfile.flush()
        except OSError:  # the client has gone
            pass
        finally:
            conn.close()
