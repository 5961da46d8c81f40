"""The HTTP backend against real servers on 127.0.0.1: the llama.cpp server, and failing ones."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from overseer.models import LlamaCppModel, OpenAIModel
from overseer.models.errors import (
    ModelConnectionError,
    ModelRequestError,
    ModelTimeoutError,
    ModelUnavailableError,
)

pytestmark = pytest.mark.e2e

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

Behaviour = Callable[[int], tuple[int, dict, float]]  # request number -> status, body, delay


@pytest.fixture
def fake_server() -> Iterator[Callable[[Behaviour], tuple[str, list[float]]]]:
    """A real HTTP server on loopback whose answers a test scripts by request number."""
    servers: list[ThreadingHTTPServer] = []

    def start(behaviour: Behaviour) -> tuple[str, list[float]]:
        seen: list[float] = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                seen.append(time.monotonic())
                status, body, delay = behaviour(len(seen))
                time.sleep(delay)
                payload = json.dumps(body).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, *args: object) -> None:
                pass

        srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        srv.daemon_threads = True
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        servers.append(srv)
        return f"http://127.0.0.1:{srv.server_address[1]}/v1", seen

    yield start
    for srv in servers:
        srv.shutdown()
        srv.server_close()


def test_real_llamacpp_server_over_http(embedded_model: LlamaCppModel) -> None:
    client = OpenAIModel("smollm2-135m", base_url=embedded_model.base_url, timeout_s=60)
    c = client.complete(
        [{"role": "user", "content": "What is 2+3? Reply in JSON."}],
        max_tokens=30,
        top_logprobs=5,
        schema={
            "type": "object",
            "properties": {"answer": {"type": "integer"}},
            "required": ["answer"],
        },
    )
    assert isinstance(json.loads(c.text)["answer"], int)
    assert c.usage.prompt_tokens > 5 and c.usage.completion_tokens > 0
    assert c.logprobs is not None and len(c.logprobs[0].top) == 5
    # Same request in process gives the same greedy text: the HTTP path changes nothing.
    local = embedded_model.complete(
        [{"role": "user", "content": "What is 2+3? Reply in JSON."}],
        max_tokens=30,
        schema={
            "type": "object",
            "properties": {"answer": {"type": "integer"}},
            "required": ["answer"],
        },
    )
    assert local.text == c.text


async def test_real_server_async(embedded_model: LlamaCppModel) -> None:
    client = OpenAIModel("smollm2-135m", base_url=embedded_model.base_url, timeout_s=60)
    c = await client.acomplete([{"role": "user", "content": "Hi"}], max_tokens=4)
    assert c.text and c.usage.completion_tokens <= 4


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_server_down_is_a_connection_error() -> None:
    client = OpenAIModel("m", base_url=f"http://127.0.0.1:{_free_port()}/v1", max_retries=1)
    with pytest.raises(ModelConnectionError, match="cannot connect after retries"):
        client.complete([{"role": "user", "content": "x"}])


def test_slow_server_times_out_after_retries(fake_server) -> None:
    url, seen = fake_server(lambda n: (200, OK_BODY, 2.0))
    client = OpenAIModel("m", base_url=url, timeout_s=0.3, max_retries=1)
    with pytest.raises(ModelTimeoutError):
        client.complete([{"role": "user", "content": "x"}])
    assert len(seen) == 2  # the first try and one retry


def test_5xx_then_success_is_retried_with_backoff(fake_server) -> None:
    url, seen = fake_server(lambda n: (503, {"error": "busy"}, 0) if n < 3 else (200, OK_BODY, 0))
    client = OpenAIModel("m", base_url=url, max_retries=3)
    c = client.complete([{"role": "user", "content": "x"}])
    assert c.text == "fine" and c.usage.prompt_tokens == 3
    assert len(seen) == 3 and seen[2] - seen[1] > 0.1  # backed off before retrying


def test_429_forever_is_unavailable(fake_server) -> None:
    url, seen = fake_server(lambda n: (429, {"error": "slow down"}, 0))
    client = OpenAIModel("m", base_url=url, max_retries=2)
    with pytest.raises(ModelUnavailableError, match="HTTP 429"):
        client.complete([{"role": "user", "content": "x"}])
    assert len(seen) == 3


def test_400_is_not_retried(fake_server) -> None:
    url, seen = fake_server(lambda n: (400, {"error": {"message": "bad field"}}, 0))
    client = OpenAIModel("m", base_url=url, max_retries=3)
    with pytest.raises(ModelRequestError, match="HTTP 400"):
        client.complete([{"role": "user", "content": "x"}])
    assert len(seen) == 1
