"""`UsageMeter` between an OpenAI client and a real OpenAI-compatible server on 127.0.0.1 (the
scripted loopback server of the framework tests): plain and streamed completions relayed
intact and recorded with the server's own usage, the request hook's value kept, other paths
passed through, and the server's errors (or its absence) surfacing as a status and one line."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import openai
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from overseer.models.serve import HttpServer
from overseer.proxy import UsageMeter, read_usage

ROOT = Path(__file__).resolve().parents[2]
ASK = [{"role": "user", "content": "What is the aperture of the Tinbel telescope?"}]


def _loopback() -> ModuleType:
    """tests/integrations/loopback.py, loaded from its file (tests is no package)."""
    path = ROOT / "tests" / "integrations" / "loopback.py"
    spec = importlib.util.spec_from_file_location("meter_loopback", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


lb = _loopback()


def _answer(body: Mapping[str, Any], n: int) -> Any:
    if "explode" in json.dumps(body.get("messages")):
        raise RuntimeError("the scripted server fails on this request")
    return lb.Reply(text=f"240 cm (answer {n})")


@pytest.fixture
def server() -> Iterator[Any]:
    with lb.LoopbackServer(_answer) as srv:
        yield srv


def _client(meter: UsageMeter) -> openai.OpenAI:
    return openai.OpenAI(base_url=meter.base_url, api_key="none", max_retries=0, timeout=30)


def test_a_plain_completion_is_relayed_and_recorded_with_the_servers_usage(server: Any) -> None:
    seen: list[dict[str, Any]] = []

    def hook(body: dict[str, Any]) -> int:
        seen.append(body)
        return len(seen) * 10

    with UsageMeter(server.base_url, on_request=hook) as meter:
        assert meter.base_url.endswith("/v1") and meter.base_url != server.base_url
        client = _client(meter)
        first = client.chat.completions.create(model="scripted", messages=ASK)
        again = [*ASK, {"role": "assistant", "content": "?"}, {"role": "user", "content": "sure?"}]
        second = client.chat.completions.create(model="scripted", messages=again)
        assert [m.id for m in client.models.list()] == ["scripted"]  # relayed, not recorded
        done = meter.completions
    assert first.choices[0].message.content == "240 cm (answer 1)"
    assert second.choices[0].message.content == "240 cm (answer 2)"
    assert [c.request["messages"] for c in done] == [ASK, again] == [b["messages"] for b in seen]
    assert [c.tag for c in done] == [10, 20] and not any(c.streamed for c in done)
    assert done[0].reply["choices"][0]["message"]["content"] == "240 cm (answer 1)"
    usages = server.usages
    assert [c.prompt_tokens for c in done] == [u["prompt_tokens"] for u in usages]
    assert [c.completion_tokens for c in done] == [u["completion_tokens"] for u in usages]
    cached = [u["prompt_tokens_details"]["cached_tokens"] for u in usages]
    assert cached[1] > 0 and [c.cached_tokens for c in done] == cached
    assert [c.evaluated_tokens for c in done] == [
        u["prompt_tokens"] - k for u, k in zip(usages, cached, strict=True)
    ]
    assert {c.evaluated_from for c in done} == {"cached"}
    assert (meter.calls, meter.prompt_tokens, meter.completion_tokens) == (
        2,
        server.prompt_tokens,
        server.completion_tokens,
    )
    assert meter.tokens == server.prompt_tokens + server.completion_tokens
    assert meter.cached_tokens == server.cached_tokens


def test_a_streamed_completion_passes_through_and_is_recorded_by_its_end(server: Any) -> None:
    with UsageMeter(server.base_url) as meter:
        stream = _client(meter).chat.completions.create(
            model="scripted", messages=ASK, stream=True, stream_options={"include_usage": True}
        )
        chunks = list(stream)
        recorded = meter.completions  # as soon as the client has read the stream
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "240 cm (answer 1)"
    assert chunks[-1].usage is not None and chunks[-1].usage.prompt_tokens > 0
    (c,) = recorded
    assert c.streamed and c.request["stream"] is True and c.tag is None
    usage = server.usages[0]
    assert (c.prompt_tokens, c.completion_tokens) == (
        usage["prompt_tokens"],
        usage["completion_tokens"],
    )
    assert (c.evaluated_tokens, c.evaluated_from) == (usage["prompt_tokens"], "cached")


def test_the_servers_errors_keep_their_status_and_are_not_recorded(server: Any) -> None:
    with UsageMeter(server.base_url) as meter:
        missing = httpx.post(meter.base_url + "/nowhere", json={"x": 1}, timeout=30)
        broken = httpx.post(
            meter.base_url + "/chat/completions",
            json={"model": "scripted", "messages": [{"role": "user", "content": "explode"}]},
            timeout=30,
        )
        assert meter.completions == []
    assert missing.status_code == 404 and "no route /v1/nowhere" in missing.text
    # the server dropped the connection without a reply: a 502 naming it, one line
    assert broken.status_code == 502
    msg = broken.json()["error"]["message"]
    assert msg.startswith(f"upstream {server.base_url}: ") and "\n" not in msg


def test_no_server_is_a_502_with_one_line() -> None:
    with UsageMeter("http://127.0.0.1:9/v1") as meter:
        resp = httpx.post(meter.base_url + "/chat/completions", json={"messages": ASK}, timeout=30)
    assert resp.status_code == 502
    msg = resp.json()["error"]["message"]
    assert msg.startswith("upstream http://127.0.0.1:9/v1: ConnectError") and "\n" not in msg


class _LlamaLike:
    """A server answering chat completions with llama.cpp's `timings`, an error status, or a
    body that is no JSON, as the request's last message asks."""

    def __init__(self) -> None:
        app = Starlette(routes=[Route("/v1/chat/completions", self._chat, methods=["POST"])])
        self._http = HttpServer(app, "127.0.0.1", 0)
        self.base_url = self._http.url + "/v1"

    async def _chat(self, request: Request) -> Response:
        said = (await request.json())["messages"][-1]["content"]
        if said == "overloaded":
            return JSONResponse({"error": {"code": 503, "message": "busy"}}, 503)
        if said == "garbled":
            return Response(b"<html>oops</html>", 200, media_type="text/html")
        if said == "garbled stream":
            return Response(b"data: <html>\n\ndata: [DONE]\n\n", media_type="text/event-stream")
        usage = {"prompt_tokens": 900, "completion_tokens": 7}
        return JSONResponse({"choices": [], "usage": usage, "timings": {"prompt_n": 40}})

    def close(self) -> None:
        self._http.stop()


def test_timings_errors_and_a_failing_hook() -> None:
    llama = _LlamaLike()

    def hook(body: dict[str, Any]) -> None:
        if body["messages"][-1]["content"] == "hook fails":
            raise KeyError("no such page")

    try:
        with UsageMeter(llama.base_url, on_request=hook) as meter:
            url = meter.base_url + "/chat/completions"

            def post(text: str) -> httpx.Response:
                body = {"messages": [{"role": "user", "content": text}]}
                return httpx.post(url, json=body, timeout=30)

            asked = ["hi", "overloaded", "garbled", "hook fails", "garbled stream"]
            ok, busy, garbled, failed, cut = map(post, asked)
            (c,) = meter.completions
    finally:
        llama.close()
    assert ok.status_code == 200 and ok.json()["timings"] == {"prompt_n": 40}
    assert (c.prompt_tokens, c.evaluated_tokens, c.evaluated_from) == (900, 40, "timings")
    assert busy.status_code == 503 and busy.json()["error"]["message"] == "busy"
    assert garbled.status_code == 502
    assert "chat completion reply is not a JSON object: '<html>oops</html>'" in garbled.text
    assert failed.status_code == 502
    assert "KeyError: 'no such page'" in failed.json()["error"]["message"]
    # a stream event the meter cannot read: the stream ends with an error event, unrecorded
    assert cut.status_code == 200 and cut.text.startswith("data: {")
    error = json.loads(cut.text.removeprefix("data: "))["error"]
    assert error["code"] == 502 and error["message"].endswith("unreadable stream event: '<html>'")


def test_usage_is_read_from_timings_first_then_cached_tokens() -> None:
    usage = {"prompt_tokens": 900, "completion_tokens": 7}
    assert read_usage({"usage": usage, "timings": {"prompt_n": 40}}) == (900, 7, 40, "timings")
    details = usage | {"prompt_tokens_details": {"cached_tokens": 850}}
    assert read_usage({"usage": details}) == (900, 7, 50, "cached")
    assert read_usage({"usage": usage}) == (900, 7, 900, "none")


def test_a_target_that_is_no_url_is_refused() -> None:
    said = re.escape("expected an http(s) base URL, got '127.0.0.1:8080'")
    with pytest.raises(ValueError, match=said):
        UsageMeter("127.0.0.1:8080")
