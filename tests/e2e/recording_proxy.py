"""A recording pass-through HTTP proxy on 127.0.0.1, for e2e tests on a real model server.

It forwards every request to the server unchanged and keeps each chat-completions exchange
(request body, reply), so a test can read what reached the model at each step and the
usage the server itself reported. Non-streamed replies only (what the framework runs use).

    with RecordingProxy(model.base_url) as proxy:
        ChatOpenAI(base_url=proxy.base_url, ...)
"""

from __future__ import annotations

import http.client
import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit


@dataclass(frozen=True)
class Exchange:
    """One chat completion: what the framework sent and what the server answered."""

    request: dict[str, Any]
    reply: dict[str, Any]

    @property
    def prompt_tokens(self) -> int:
        return int((self.reply.get("usage") or {}).get("prompt_tokens") or 0)

    @property
    def cached_tokens(self) -> int:
        details = (self.reply.get("usage") or {}).get("prompt_tokens_details") or {}
        return int(details.get("cached_tokens") or 0)

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        return list((self.reply["choices"][0].get("message") or {}).get("tool_calls") or [])

    def text(self) -> str:
        """Every message of the request as one text (content and tool-call arguments)."""
        out = []
        for m in self.request.get("messages", []):
            content = m.get("content")
            out.append(content if isinstance(content, str) else json.dumps(content))
            out.extend(json.dumps(c) for c in m.get("tool_calls") or [])
        return "\n".join(out)


class RecordingProxy:
    """Forwards to `target` (an OpenAI base URL ending in /v1) and records the exchanges."""

    def __init__(self, target: str) -> None:
        self.target = urlsplit(target)
        self.exchanges: list[Exchange] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}{self.target.path}"

    @property
    def prompt_tokens(self) -> int:
        return sum(e.prompt_tokens for e in self.exchanges)

    @property
    def cached_tokens(self) -> int:
        return sum(e.cached_tokens for e in self.exchanges)

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> RecordingProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _forward(self, method: str, path: str, data: bytes | None, ctype: str) -> Any:
        conn = http.client.HTTPConnection(self.target.hostname, self.target.port, timeout=900)
        prefix = self.target.path.removesuffix("/v1")
        conn.request(method, prefix + path, body=data, headers={"Content-Type": ctype})
        resp = conn.getresponse()
        body = resp.read()
        conn.close()
        if method == "POST" and path.endswith("/chat/completions") and resp.status == 200:
            with self._lock:
                self.exchanges.append(Exchange(json.loads(data or b"{}"), json.loads(body)))
        return resp.status, resp.getheader("Content-Type") or "application/json", body

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return

            def do_GET(self) -> None:
                self._answer(None)

            def do_POST(self) -> None:
                self._answer(self.rfile.read(int(self.headers.get("Content-Length") or 0)))

            def _answer(self, data: bytes | None) -> None:
                ctype = self.headers.get("Content-Type") or "application/json"
                status, rtype, body = proxy._forward(self.command, self.path, data, ctype)
                self.send_response(status)
                self.send_header("Content-Type", rtype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        return Handler
