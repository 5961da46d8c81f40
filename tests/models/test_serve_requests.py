"""`overseer serve` checks each chat-completions request against the models it documents
(issue 51): a real `overseer serve` of SmolLM2 on 127.0.0.1, asked over raw HTTP.

Valid JSON of a bad shape is a JSON 400 naming the field (it was a plain-text 500 and a server
traceback); `max_tokens: -1` is refused; a client that leaves frees its slot, streamed or not;
a client that leaves mid-upload prints nothing; `/props` does not show the GGUF file's path.
"""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from overseer.models.serve import model_path

pytestmark = pytest.mark.e2e

MODEL = "smollm2-135m"
HI = [{"role": "user", "content": "Say hi."}]
LONG = [{"role": "user", "content": "Write a very long story about a cat, in many chapters."}]


class Served:
    """An `overseer serve` process: its port and its stderr so far."""

    def __init__(self, proc: subprocess.Popen[bytes], port: int, err: Path) -> None:
        self.proc, self.port, self.err = proc, port, err

    def stderr(self) -> str:
        return self.err.read_text(errors="replace")

    def post(self, body: Any, conn: http.client.HTTPConnection | None = None) -> Any:
        """(status, content type, JSON reply) of one chat completion."""
        c = conn or http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        c.request("POST", "/v1/chat/completions", data, {"Content-Type": "application/json"})
        r = c.getresponse()
        return r.status, r.getheader("content-type"), json.loads(r.read())

    def get(self, path: str) -> tuple[int, bytes]:
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        c.request("GET", path)
        r = c.getresponse()
        return r.status, r.read()

    def in_flight(self) -> int:
        return int(json.loads(self.get("/health")[1])["in_flight"])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    port = _free_port()
    err = tmp_path_factory.mktemp("serve") / "stderr"
    cmd = [sys.executable, "-m", "overseer.cli", "serve", MODEL, "--port", str(port)]
    cmd += ["--n-ctx", "1024", "--threads", "1"]
    with err.open("wb") as sink:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=sink)
    s = Served(proc, port, err)
    deadline = time.monotonic() + 120
    while True:
        try:
            s.in_flight()
            break
        except OSError:
            assert proc.poll() is None, s.stderr()
            assert time.monotonic() < deadline, "serve did not start"
            time.sleep(0.2)
    yield s
    proc.terminate()
    proc.wait(60)


CALL = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
BAD = [
    ({"tools": "calc"}, "tools"),
    ({"tools": [None]}, "tools[0]"),
    ({"tools": [{"type": "function"}]}, "tools[0].function"),
    ({"seed": 2**70}, "seed"),
    (
        {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]},
        "messages[0].content[0]",
    ),
    (
        {"messages": [*HI, {"role": "assistant", "tool_calls": "garbage"}, *HI]},
        "messages[1].tool_calls",
    ),
    (
        {"messages": [*HI, {"role": "assistant", "tool_calls": [{"type": "function"}]}, *HI]},
        "messages[1].tool_calls[0].function",
    ),
    ({"messages": [*HI, {"role": "assistant", "tool_calls": [dict(CALL, type=7)]}, *HI]},
     "messages[1].tool_calls[0].type"),
    ({"max_tokens": -1}, "max_tokens"),
    ({"max_completion_tokens": -1}, "max_completion_tokens"),
    ({"stream": "yes"}, "stream"),
]  # fmt: skip


@pytest.mark.parametrize("bad,field", BAD, ids=[f for _, f in BAD])
def test_a_request_of_a_bad_shape_is_a_json_400_naming_the_field(
    served: Served, bad: dict[str, Any], field: str
) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=120)
    status, kind, reply = served.post({"messages": HI, "max_tokens": 2, **bad}, conn)
    assert (status, kind) == (400, "application/json")
    assert reply["error"]["message"].startswith(f"{field}: ")
    status, _, reply = served.post({"messages": HI, "max_tokens": 2}, conn)  # same connection
    assert status == 200 and reply["choices"][0]["message"]["role"] == "assistant"
    assert "Traceback" not in served.stderr()


def test_a_lone_surrogate_is_a_json_400_naming_where(served: Served) -> None:
    data = b'{"messages": [{"role": "user", "content": "hi \\ud800"}], "max_tokens": 2}'
    status, _, reply = served.post(data)
    assert status == 400 and reply["error"]["message"].startswith("messages[0].content: ")
    status, _, reply = served.post(b'{"messages": [{"role": "user", "content": NaN}]}')
    assert status == 400 and "NaN is not a JSON number" in reply["error"]["message"]


def _wait_in_flight(served: Served, n: int, within: float) -> float:
    start = time.monotonic()
    while served.in_flight() != n:
        assert time.monotonic() - start < within, f"in flight: not {n} after {within} s"
        time.sleep(0.05)
    return time.monotonic() - start


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_a_client_that_leaves_frees_its_slot(served: Served, stream: bool) -> None:
    body = {"messages": LONG, "max_tokens": 4000, "ignore_eos": True, "stream": stream}
    sock = socket.create_connection(("127.0.0.1", served.port))
    data = json.dumps(body).encode()
    head = f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {len(data)}\r\n"
    sock.sendall(head.encode() + b"Content-Type: application/json\r\n\r\n" + data)
    _wait_in_flight(served, 1, 60)
    time.sleep(0.5)
    sock.close()
    # 4000 tokens take minutes on one core: the slot is free within seconds only if stopped
    _wait_in_flight(served, 0, 20)
    status, _, _ = served.post({"messages": HI, "max_tokens": 2})
    assert status == 200


def test_a_client_that_leaves_mid_upload_costs_no_traceback(served: Served) -> None:
    for _ in range(3):
        with socket.create_connection(("127.0.0.1", served.port)) as sock:
            head = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n"
            sock.sendall(head.encode() + b'{"messages": [')
            time.sleep(0.2)
    time.sleep(0.5)
    assert served.post({"messages": HI, "max_tokens": 2})[0] == 200
    assert "Traceback" not in served.stderr() and "Error" not in served.stderr()


def test_props_and_other_llama_cpp_paths_do_not_show_the_model_file(served: Served) -> None:
    path = str(model_path(MODEL))
    for where in ("/props", "/slots", "/v1/models", "/models"):
        status, data = served.get(where)
        assert status == 200, where
        assert path.encode() not in data and b".gguf" not in data, where
    status, data = served.get("/openapi.json")
    assert status == 200 and "/v1/chat/completions" in json.loads(data)["paths"]
