"""`overseer serve` on uvicorn + starlette, faulted over real HTTP (issue 40, item 1): the real
embedded SmolLM2 model served on 127.0.0.1 by the test, asked by the OpenAI SDK or raw sockets.

Each fault of the old hand-written front has its test: a burst of 200 connections, a body cap,
a bad or chunked body, errors in a stream, unknown models, empty or malformed messages, the
served name, and a drain on SIGTERM / Ctrl-C with requests in flight."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from overseer.models import LlamaCppModel
from overseer.models.serve import model_path, serve_model

pytestmark = pytest.mark.e2e

MODEL = "smollm2-135m"
CAP = 64 * 1024  # the body cap of the module's server (small, so a chunked body passes it)
HI = [{"role": "user", "content": "Say hi."}]


@pytest.fixture(scope="module")
def served() -> Iterator[LlamaCppModel]:
    llm = serve_model(MODEL, n_ctx=1024, n_threads=1, max_body_bytes=CAP)
    yield llm
    llm.close()


def _client(llm: LlamaCppModel | str) -> openai.OpenAI:
    url = llm if isinstance(llm, str) else llm.base_url
    return openai.OpenAI(base_url=url, api_key="none", max_retries=0)


def _port(llm: LlamaCppModel) -> int:
    return int(llm.base_url.rsplit(":", 1)[1].split("/")[0])


def _raw(port: int, data: bytes) -> tuple[int, dict[str, Any], bytes]:
    """Send `data` as is; (status, JSON body or {}, raw reply) of the one response."""
    with socket.create_connection(("127.0.0.1", port), timeout=120) as s:
        s.sendall(data)
        reply = b""
        while b"\r\n\r\n" not in reply:
            reply += s.recv(65536)
        head, _, rest = reply.partition(b"\r\n\r\n")
        headers = dict(
            line.lower().split(b": ", 1) for line in head.split(b"\r\n")[1:] if b": " in line
        )
        if b"content-length" in headers:
            while len(rest) < int(headers[b"content-length"]):
                rest += s.recv(65536)
        else:  # closed after the body (`Connection: close`)
            while block := s.recv(65536):
                rest += block
        status = int(head.split(b" ")[1])
    try:
        body = json.loads(rest)
    except ValueError:
        body = {}
    return status, body, reply


def _post(path: str, body: bytes, *headers: str) -> bytes:
    lines = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", "Connection: close", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def test_200_simultaneous_connections_are_all_served(served: LlamaCppModel) -> None:
    # the old front's listen backlog was 5: of 50 connections at once, 28 were reset
    n, port = 200, _port(served)
    body = json.dumps({"model": MODEL, "messages": HI, "max_tokens": 1}).encode()
    request = _post("/v1/chat/completions", body, f"Content-Length: {len(body)}")
    start = threading.Barrier(n)
    got: list[Any] = []

    def one() -> None:
        start.wait()
        try:
            got.append(_raw(port, request)[0])
        except OSError as exc:
            got.append(repr(exc))

    threads = [threading.Thread(target=one) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == [200] * n


@pytest.mark.parametrize("length", ["abc", "-1", "1x"])
def test_a_bad_content_length_is_a_400_naming_it(served: LlamaCppModel, length: str) -> None:
    status, body, _ = _raw(
        _port(served), _post("/v1/chat/completions", b"{}", f"Content-Length: {length}")
    )
    assert status == 400
    assert "Content-Length" in body["error"]["message"]


def test_a_body_over_the_cap_is_refused_before_it_is_sent(served: LlamaCppModel) -> None:
    # only the headers go out: the 413 comes back without the server waiting for 60 MB
    head = _post("/v1/chat/completions", b"", f"Content-Length: {60 * 2**20}")
    status, body, _ = _raw(_port(served), head)
    assert status == 413
    assert body["error"]["message"] == f"request body: {60 * 2**20} bytes; expected at most {CAP}"


def _chunked(data: bytes, piece: int = 1000) -> bytes:
    parts = [data[i : i + piece] for i in range(0, len(data), piece)]
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"


def test_a_chunked_body_is_served_once(served: LlamaCppModel) -> None:
    body = json.dumps({"model": MODEL, "messages": HI, "max_tokens": 2}).encode()
    request = _post("/v1/chat/completions", _chunked(body, 7), "Transfer-Encoding: chunked")
    status, reply, raw = _raw(_port(served), request)
    assert status == 200 and reply["object"] == "chat.completion"
    assert raw.count(b"HTTP/1.1 ") == 1  # one response, not a second unrequested one


def test_a_chunked_body_over_the_cap_is_a_413(served: LlamaCppModel) -> None:
    big = json.dumps({"model": MODEL, "messages": [{"role": "user", "content": "x" * CAP}]})
    request = _post("/v1/chat/completions", _chunked(big.encode()), "Transfer-Encoding: chunked")
    status, reply, _ = _raw(_port(served), request)
    assert status == 413 and f"expected at most {CAP}" in reply["error"]["message"]


def test_an_unknown_model_is_a_404(served: LlamaCppModel) -> None:
    with pytest.raises(openai.NotFoundError, match="model 'gpt-4o': not served here"):
        _client(served).chat.completions.create(model="gpt-4o", messages=HI, max_tokens=2)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("messages", "says"),
    [
        ([], "messages: expected a non-empty list of messages, got []"),
        ([{"role": "wizard", "content": "hi"}], "messages[0]: expected a role in system"),
        ([{"content": "hi"}], "got role None"),
        (["hi"], "messages[0]: expected a role in"),
    ],
)
def test_empty_or_malformed_messages_are_a_400(
    served: LlamaCppModel, messages: list[Any], says: str
) -> None:
    with pytest.raises(openai.BadRequestError) as err:
        _client(served).chat.completions.create(model=MODEL, messages=messages, max_tokens=2)
    assert says in err.value.message


def test_a_body_that_is_not_an_object_is_a_400(served: LlamaCppModel) -> None:
    for data, says in [(b"{not json", "request body is not JSON"), (b"[1]", "got list")]:
        request = _post("/v1/chat/completions", data, f"Content-Length: {len(data)}")
        status, body, _ = _raw(_port(served), request)
        assert status == 400 and says in body["error"]["message"]


def test_the_model_is_named_as_served(served: LlamaCppModel) -> None:
    with urllib.request.urlopen(served.base_url + "/models", timeout=30) as resp:
        text = resp.read().decode()
    assert [m["id"] for m in json.loads(text)["data"]] == [MODEL]
    assert str(model_path(MODEL)) not in text and "gguf" not in text
    r = _client(served).chat.completions.create(model=MODEL, messages=HI, max_tokens=2)
    chunks = _client(served).chat.completions.create(
        model=MODEL, messages=HI, max_tokens=2, stream=True
    )
    assert r.model == MODEL and {c.model for c in chunks} == {MODEL}


def test_an_error_in_a_stream_is_raised_by_the_sdk(served: LlamaCppModel) -> None:
    # a prompt over the context window, streamed: the old front sent HTTP 200 and a line the
    # SDK ignored (an empty stream); now an HTTP error before the first chunk
    long = [{"role": "user", "content": "word " * 1500}]
    with pytest.raises(openai.APIStatusError, match="context"):
        stream = _client(served).chat.completions.create(
            model=MODEL, messages=long, max_tokens=2, stream=True
        )
        list(stream)


def test_other_paths_pass_through_to_llama_cpp(served: LlamaCppModel) -> None:
    assert served.count_tokens("hello world") >= 2  # /tokenize, through the front
    with urllib.request.urlopen(served.base_url.removesuffix("/v1") + "/health") as resp:
        assert json.loads(resp.read()) == {"status": "ok", "in_flight": 0}


# --- drain on SIGTERM / Ctrl-C ----------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _in_flight(url: str) -> int:
    with urllib.request.urlopen(url.removesuffix("/v1") + "/health", timeout=30) as resp:
        return int(json.loads(resp.read())["in_flight"])


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["sigterm", "ctrl-c"])
def test_a_stop_drains_requests_in_flight_then_exits_0(stop: signal.Signals) -> None:
    """A stream in flight ends with an error event the SDK raises; a plain request queued
    behind it is answered in full; the process exits 0 with nothing on stderr (the old front:
    SIGABRT while streaming, SIGSEGV inside llama.cpp otherwise)."""
    port = _free_port()
    exe = Path(sys.executable).with_name("overseer")
    proc = subprocess.Popen(
        [str(exe), "serve", MODEL, "--port", str(port), "--n-ctx", "1024", "--threads", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        preexec_fn=_default_sigint,
    )
    try:
        assert proc.stdout is not None
        url = f"http://127.0.0.1:{port}/v1"
        assert (
            proc.stdout.readline().strip() == f"overseer: serving {MODEL} at {url} (Ctrl-C stops)"
        )
        stream = _client(url).chat.completions.create(
            model=MODEL,
            messages=[{"role": "user", "content": "Write a very long story."}],
            max_tokens=900,
            stream=True,
            extra_body={"ignore_eos": True},
        )
        first = next(iter(stream))
        plain: list[Any] = []
        asked = threading.Thread(
            target=lambda: plain.append(
                _client(url).chat.completions.create(model=MODEL, messages=HI, max_tokens=6)
            )
        )
        asked.start()
        while _in_flight(url) < 2:  # the plain request is queued behind the stream
            time.sleep(0.05)
        proc.send_signal(stop)
        with pytest.raises(openai.APIError, match="server shutting down"):
            for _ in stream:
                pass
        asked.join()
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert first.model == MODEL
    assert plain and plain[0].choices[0].message.content is not None
    assert plain[0].usage.completion_tokens > 0
    assert "overseer: stopping; draining 2 requests in flight" in out
    assert proc.returncode == 0 and err == "", err


def test_the_cli_default_body_cap_is_the_servers() -> None:
    from overseer.cli._serve import MAX_BODY_MB
    from overseer.models.serve import MAX_BODY_BYTES

    assert MAX_BODY_MB * 2**20 == MAX_BODY_BYTES
